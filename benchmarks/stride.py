"""STRIDE benchmark: edit-script construction and execution against the levenshtein package's distance, and
sampling tokens/s with and without the KV cache, in one run.

Usage: python benchmarks/stride.py [--quick]
Prints two tables; writes nothing.
"""

from __future__ import annotations

import argparse
import time

import Levenshtein
import numpy as np
import torch

from icml2026.papers.stride import (
    AMINO_ACIDS,
    EditVocab,
    PolicyConfig,
    apply_script,
    build_policy,
    edit_distance,
    sample,
    shortest_edit_script,
)


def _pairs(n: int, length: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        a = "".join(rng.choice(list(AMINO_ACIDS), size=length))
        b = list(a)
        for p in rng.choice(length, size=3, replace=False):
            b[p] = AMINO_ACIDS[int(rng.integers(20))]
        out.append((a, "".join(b)))
    return out


def _rate(fn, items, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for it in items:
            fn(*it)
        best = min(best, time.perf_counter() - t0)
    return len(items) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer pairs, shorter sampling")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    n_pairs, reps = (200, 2) if args.quick else (1000, 3)
    print(f"{'length':>6} {'operation':>28} {'pairs/s':>10} {'levenshtein / ours':>19}")
    for length in (32, 238):  # the CPU task's length and GFP's
        pairs = _pairs(n_pairs if length == 32 else n_pairs // 10, length, rng)
        scripts = [(a, shortest_edit_script(a, b)) for a, b in pairs]
        rates = {
            "levenshtein.distance (C)": _rate(Levenshtein.distance, pairs, reps),
            "our DP distance": _rate(edit_distance, pairs, reps),
            "shortest_edit_script": _rate(shortest_edit_script, pairs, reps),
            "apply_script": _rate(apply_script, scripts, reps),
        }
        ref = rates["levenshtein.distance (C)"]
        for name, r in rates.items():
            print(f"{length:6d} {name:>28} {r:10.0f} {ref / r:19.1f}")

    vocab = EditVocab(AMINO_ACIDS)
    model = build_policy(vocab, PolicyConfig("gpt2", 128, 4, 4, 128), torch.Generator().manual_seed(0))
    prompts = [vocab.prompt(a) for a, _ in _pairs(4 if args.quick else 16, 32, rng)]
    n, new = (4, 32) if args.quick else (8, 64)
    print(f"\n{'sampler':>14} {'tokens/s':>10} {'cache speed-up':>15}   (GPT-2 class, d=128, 4 layers; "
          f"{len(prompts)} prompts x {n} samples x {new} new tokens)")
    speeds = {}
    for use_cache in (True, False):
        t0 = time.perf_counter()
        out = sample(model, prompts, n=n, max_new_tokens=new, eos_id=-1, pad_id=vocab.pad_id,
                     generator=torch.Generator().manual_seed(0), use_cache=use_cache)
        speeds[use_cache] = sum(len(o) for o in out) / (time.perf_counter() - t0)
    for use_cache in (True, False):
        print(f"{'KV cache' if use_cache else 'no cache':>14} {speeds[use_cache]:10.0f} "
              f"{speeds[use_cache] / speeds[False]:15.2f}")


if __name__ == "__main__":
    main()
