"""Benchmark for fedtreelora: simulator rounds per second (20 clients) and the server's clustering cost.

1. Rounds per second of FedTreeLoRA against FedIT (same engine, 20 clients, the quick preset's model and
   local schedule); the ratio is the per-round overhead of per-layer, per-block aggregation with externals.
2. Wall time of the server-side structure (distances, tree, layer-wise cuts) for N = 20, 100, 1000 clients
   (L = 4 layers, B of 256 floats per layer), and how it grows with N.

    OMP_NUM_THREADS=1 python benchmarks/fedtreelora.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml2026.papers.fedtreelora import (
    TASKS,
    BackboneConfig,
    FedIT,
    FedTreeLoRA,
    TrainConfig,
    build_client_tree,
    layer_distances,
    make_clients,
    make_corpus,
    pretrain_backbone,
    select_layer_cuts,
    simulate,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, N up to 100")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    bc = BackboneConfig(n_layers=4, d_model=32, n_heads=2, seq_len=12)
    backbone = pretrain_backbone(make_corpus(200, bc.seq_len, rng), bc, steps=5, batch_size=32, lr=1e-3, rng=rng)
    clients = make_clients([t for t in TASKS for _ in range(5)], 160, 100, bc.seq_len, 0.5, rng)
    rounds = 4 if args.quick else 8
    tc = TrainConfig(local_steps=6, batch_size=16, eval_every=rounds)
    rate = {}
    for strat in (FedIT(), FedTreeLoRA(warmup_rounds=1)):
        t0 = time.perf_counter()
        simulate(strat, clients, rounds, np.random.default_rng(1), backbone=backbone, train=tc)
        rate[strat.name] = rounds / (time.perf_counter() - t0)
        print(
            f"{strat.name:<12} 20 clients, {tc.local_steps} local steps x batch {tc.batch_size}: "
            f"{rate[strat.name]:.3f} rounds/s"
        )
    print(f"FedTreeLoRA / FedIT speed: x{rate['FedTreeLoRA'] / rate['FedIT']:.2f}")

    print(f"\n{'N':>6}{'distances s':>13}{'tree s':>10}{'cuts s':>10}{'total s':>10}{'growth':>9}  cuts")
    prev = None
    for n in (20, 100) if args.quick else (20, 100, 1000):
        groups = np.arange(n) % 4
        centres = rng.normal(0, 1, (4, 4, 256))
        B = [centres[groups, layer] + rng.normal(0, 0.3, (n, 256)) for layer in range(4)]
        t0 = time.perf_counter()
        D = layer_distances(B)
        t1 = time.perf_counter()
        tree = build_client_tree(D)
        t2 = time.perf_counter()
        lc = select_layer_cuts(tree, D, K=2, tau=0.25)
        t3 = time.perf_counter()
        total = t3 - t0
        growth = f"x{total / prev:.1f}" if prev else "-"
        print(f"{n:>6}{t1 - t0:>13.4f}{t2 - t1:>10.4f}{t3 - t2:>10.4f}{total:>10.4f}{growth:>9}  {lc.cuts}")
        prev = total


if __name__ == "__main__":
    main()
