"""Benchmark for P19 (gibbs_bounds): SGLD steps per second for the brief's MLP against plain SGD steps,
and the cost of one bound curve (chains + bound computation + calibration).

    python benchmarks/gibbs_bounds.py [--quick]

Prints a table; writes nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml2026.core import torch_generator
from icml2026.papers.gibbs_bounds import (
    bound_curve,
    bounded_bce,
    calibrate_lambda,
    make_mlp,
    mnist1d_binary_task,
    sgld_step,
)
from icml2026.papers.gibbs_bounds.baselines import sgd_step


def _steps_per_second(width: int, n_steps: int, noisy: bool, x: torch.Tensor, y: torch.Tensor) -> float:
    gen = torch_generator(np.random.default_rng(0))
    model = make_mlp(x.shape[1], width, 2, gen)
    params = list(model.parameters())
    n = x.shape[0]
    t0 = time.perf_counter()
    for _ in range(n_steps):
        idx = torch.randint(0, n, (100,), generator=gen)
        for p in params:
            p.grad = None
        bounded_bce(model(x[idx]).squeeze(-1), y[idx]).mean().backward()
        if noisy:
            sgld_step(params, lr=0.01, beta=32000.0, prior_std=5.0, generator=gen)
        else:
            sgd_step(params, lr=0.01)
    return n_steps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps, width 256")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    width = 256 if args.quick else 512  # brief's CPU MLP: 40 -> 512 -> 512 -> 1
    n_steps = 50 if args.quick else 300
    task = mnist1d_binary_task(4000, 200, np.random.default_rng(0))
    x = torch.as_tensor(task.x_train)
    y = torch.as_tensor(task.y_train, dtype=torch.float32)
    sgld = _steps_per_second(width, n_steps, True, x, y)
    sgd = _steps_per_second(width, n_steps, False, x, y)

    # one bound curve: K = 10 betas (+ beta = 0), ~2 x 2000 steps each in the full preset, for each of
    # the true- and random-label runs; the bound computation itself on synthetic ergodic averages
    betas = np.concatenate([[0.0], 250.0 * 2.0 ** np.arange(10)]) * 4.0
    lbar = np.concatenate([[0.5], np.linspace(0.45, 0.02, 10)])
    t01 = np.concatenate([[0.5], np.linspace(0.45, 0.01, 10)])
    t0 = time.perf_counter()
    reps = 20
    for _ in range(reps):
        lam = calibrate_lambda(betas, lbar, t01, 4000, 0.01)
        bound_curve(betas, lbar, t01, 4000, 0.01, lam=lam)
    bound_s = (time.perf_counter() - t0) / reps
    steps_per_curve = 2 * 10 * 4000
    print(f"gibbs_bounds benchmark: MLP 40-{width}-{width}-1, batch 100, {args.threads} threads, {n_steps} steps")
    print(f"{'quantity':<42}{'SGLD (method)':>16}{'SGD (baseline)':>16}{'ratio':>8}")
    print(f"{'steps per second':<42}{sgld:>16.1f}{sgd:>16.1f}{sgld / sgd:>8.2f}")
    print(f"{'one bound curve, chains (s, est.)':<42}{steps_per_curve / sgld:>16.1f}"
          f"{steps_per_curve / sgd:>16.1f}{sgd / sgld:>8.2f}")
    print(f"{'one bound curve, bounds + calibration (s)':<42}{bound_s:>16.4f}{'-':>16}{'-':>8}")


if __name__ == "__main__":
    main()
