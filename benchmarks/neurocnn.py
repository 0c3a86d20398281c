"""NeurOCNN inference throughput (windows per second) against the fixed CNN and FNO at 100 and 500 Hz.

Usage: python benchmarks/neurocnn.py [--quick]
Prints one table; writes nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml2026.papers.neurocnn import FixedCNN, FNOClassifier, NeurOCNN, make_sleep_bank


def throughput(model: torch.nn.Module, x: torch.Tensor, fs: float, reps: int) -> float:
    """Windows per second of ``model(x, fs)`` in eval mode (best of ``reps`` timed runs after a warm-up)."""
    model.eval()
    with torch.no_grad():
        model(x, fs)
        best = float("inf")
        for _ in range(reps):
            start = time.perf_counter()
            model(x, fs)
            best = min(best, time.perf_counter() - start)
    return x.shape[0] / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer windows and repetitions")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    n_windows, reps = (8, 2) if args.quick else (32, 3)
    bank = make_sleep_bank(n_windows, np.random.default_rng(0))
    gen = torch.Generator().manual_seed(0)
    # the CPU-scale settings of the sleep_zero_shot experiment's full preset
    models = {
        "NeurOCNN": NeurOCNN(1, 5, (8, 16, 16, 8), 12, 0.25, 16, 2.0, 10.0, generator=gen),
        "FixedCNN": FixedCNN(1, 5, (8, 16, 16, 8), 9, generator=gen),
        "FNO+head": FNOClassifier(
            1, 5, n_modes=128, hidden=16, d=8, pool_modes=16, segment_s=2.0, generator=gen
        ),
    }
    print(f"{'fs (Hz)':>8} {'model':>10} {'windows/s':>11} {'NeurOCNN / model':>17}")
    for fs in (100.0, 500.0):
        x = torch.as_tensor(bank.sample(fs))
        rates = {name: throughput(m, x, fs, reps) for name, m in models.items()}
        for name, r in rates.items():
            print(f"{fs:8.0f} {name:>10} {r:11.1f} {rates['NeurOCNN'] / r:17.2f}")


if __name__ == "__main__":
    main()
