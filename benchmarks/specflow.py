"""SpecFlow against MVoT: KV bytes, FLOPs (torch FlopCounterMode) and wall time per hop at depth 1..14.

Usage: python benchmarks/specflow.py [--quick] [--plot PATH]
Measures SpecFlow (16 block-DCT workspace tokens) and MVoT with 16 and 64 pixel-patch tokens per thought,
all with the brief's policy size (a Llama built from a config, 4 layers, d = 192) and the same velocity net
at T = 5, w = 4. Prints one table per hop and the MVoT / SpecFlow ratios at depth 8 and 14; writes one PNG (default
runs/benchmarks/specflow_costs.png).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from icml2026.core.plotting import new_figure, save_figure
from icml2026.papers.specflow.costs import measure_costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one timed repetition and a 1-layer, d = 64 policy")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--depth", type=int, default=14)
    parser.add_argument("--plot", type=Path, default=Path("runs/benchmarks/specflow_costs.png"))
    args = parser.parse_args()
    if not 8 <= args.depth <= 40:
        parser.error("--depth must be in [8, 40]")
    torch.set_num_threads(args.threads)
    kw = dict(depth=args.depth, reps=1 if args.quick else 5)
    if args.quick:
        kw.update(n_layers=1, d_model=64, n_heads=2)
    rng = np.random.default_rng(0)
    curves = {"SpecFlow": measure_costs("specflow", rng, **kw)}  # type: ignore[arg-type]
    for t in (16, 64):
        curves[f"MVoT-{t}"] = measure_costs("mvot", rng, tokens_per_thought=t, **kw)  # type: ignore[arg-type]
    spec = curves["SpecFlow"]
    print(f"{'depth':>5} " + " ".join(f"{n + ' KV MiB':>14} {n + ' GFLOPs':>15} {n + ' ms/hop':>14}" for n in curves))
    for d in range(1, args.depth + 1):
        cells = []
        for c in curves.values():
            cells.append(f"{c.kv_bytes[d] / 2**20:14.3f} {c.total_flops(d) / 1e9:15.3f} {1e3 * c.seconds[d]:14.1f}")
        print(f"{d:5d} " + " ".join(cells))
    print()
    for d in sorted({8, min(14, args.depth)}):
        for name, c in curves.items():
            if name == "SpecFlow":
                continue
            print(f"depth {d:2d}  {name} / SpecFlow:  KV {c.kv_bytes[d] / spec.kv_bytes[d]:5.2f}x  "
                  f"FLOPs {c.total_flops(d) / spec.total_flops(d):5.2f}x (policy only "
                  f"{c.policy_flops(d) / spec.policy_flops(d):5.2f}x)  "
                  f"wall time {sum(c.seconds[1:d + 1]) / sum(spec.seconds[1:d + 1]):5.2f}x")
    fig, ax = new_figure("MVoT / SpecFlow cost ratio against reasoning depth", "reasoning depth", "ratio")
    depths = np.arange(1, args.depth + 1)
    for name, c in curves.items():
        if name == "SpecFlow":
            continue
        ax.plot(depths, [c.kv_bytes[d] / spec.kv_bytes[d] for d in depths], "o-", label=f"{name}: KV bytes")
        ax.plot(depths, [c.total_flops(d) / spec.total_flops(d) for d in depths], "s--", label=f"{name}: FLOPs")
        ax.plot(depths, [sum(c.seconds[1:d + 1]) / sum(spec.seconds[1:d + 1]) for d in depths], ":",
                label=f"{name}: wall time")
    for d in sorted({8, min(14, args.depth)}):
        ax.axvline(d, color="k", lw=0.5)
    ax.legend(fontsize=7)
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, args.plot)
    print(f"\nplot: {args.plot}")


if __name__ == "__main__":
    main()
