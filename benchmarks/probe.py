"""Benchmark for probe: images/s of DDIM sampling with and without the LoRA, and Stage-1 updates/s.

    python benchmarks/probe.py [--quick]

One run prints (1) images per second of the seen DDPM's DDIM sampler (UNet2DModel, 10 steps) with the base
UNet and with the peft-LoRA copy (the adapters' overhead as a ratio), and (2) Stage-1 updates per second
(base chain + LoRA chain with backprop through the last K steps + frozen detector) and the cost of one
update relative to sampling its batch. The models are untrained (speed does not depend on the weights).
Writes nothing.
"""

from __future__ import annotations

import argparse
import time

from icml2026.core import make_rng
from icml2026.core.runner import limit_blas_threads
from icml2026.papers.probe import Detector, DiffusionGenerator, ProbeConfig, add_lora, probe_generator, seen_unet


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", type=int, default=16)
    args = parser.parse_args()
    limit_blas_threads(1)
    import numpy as np
    import torch

    torch.set_num_threads(1)
    n, reps, updates = (64, 1, 3) if args.quick else (256, 3, 10)
    gen = DiffusionGenerator(seen_unet(args.size, 3), "ddim", 10)
    gen.unet.eval()
    lora = add_lora(gen.unet, 4, make_rng(0))
    x = gen.noise(n, make_rng(1))
    gen.sample_from(x[:8])  # warm-up
    rates = {}
    for name, net in (("base", gen.unet), ("lora", lora)):
        t0 = time.perf_counter()
        for _ in range(reps):
            gen.sample_from(x, net)
        rates[name] = n * reps / (time.perf_counter() - t0)
    print(f"DDIM sampling, {args.size}x{args.size} RGB, 10 steps, batch {n} (1 thread)")
    print(f"{'unet':<6} {'images/s':>10}")
    for k, v in rates.items():
        print(f"{k:<6} {v:10.1f}")
    print(f"LoRA / base time ratio: {rates['base'] / rates['lora']:.2f}")

    rng = np.random.default_rng(0)
    real = np.clip(rng.normal(0, 0.5, (64, 3, args.size, args.size)), -1, 1).astype(np.float32)
    det = Detector(width=16, epochs=1).fit(real, gen.sample_from(gen.noise(64, make_rng(2))), make_rng(3))
    cfg = ProbeConfig(n_restarts=1, n_updates=updates, dump_every=updates, n_dump=16, batch_size=16)
    t0 = time.perf_counter()
    probe_generator(gen, det, cfg, make_rng(4))
    dt = time.perf_counter() - t0
    per_update = (dt - 16 * 2 / rates["base"]) / updates  # the dump samples 16 images twice
    print(
        f"\nStage 1 (batch {cfg.batch_size}, K = {cfg.grad_steps}): {1 / per_update:.2f} updates/s, "
        f"{per_update:.2f} s per update = {per_update * rates['base'] / cfg.batch_size:.1f}x the time of "
        f"sampling its batch with the base UNet"
    )


if __name__ == "__main__":
    main()
