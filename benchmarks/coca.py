"""Eraser fit time: LEACE (concept_erasure) vs QLEACE vs the trained adversarial eraser.

Usage: python benchmarks/coca.py [--quick]. Prints a table with each eraser's fit time and its ratio to
LEACE's. Writes nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml2026.papers.coca import (
    AdversarialEraser,
    AdversarialEraserConfig,
    LeaceConceptEraser,
    QuadraticConceptEraser,
    linear_world,
)


def _time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    sizes = [(8, 2000), (32, 8000)] if args.quick else [(16, 8000), (64, 20000)]
    epochs = 2 if args.quick else 10
    print(f"{'d':>4} {'n':>6} {'eraser':>12} {'fit_s':>9} {'x LEACE':>9}")
    for d, n in sizes:
        w = linear_world(d, n, 0)
        rng = np.random.default_rng(0)
        t_leace = _time(lambda w=w: LeaceConceptEraser().fit(w.X, w.concept), 3)
        t_q = _time(lambda w=w: QuadraticConceptEraser().fit(w.X, w.concept), 3)
        cfg = AdversarialEraserConfig(strength=1.0, n_epochs=epochs)
        t_adv = _time(lambda w=w, cfg=cfg, rng=rng: AdversarialEraser(cfg).fit(w.X, w.concept, rng=rng), 1)
        for name, t in (("leace", t_leace), ("qleace", t_q), (f"adv({epochs}ep)", t_adv)):
            print(f"{d:>4} {n:>6} {name:>12} {t:>9.4f} {t / t_leace:>9.1f}")


if __name__ == "__main__":
    main()
