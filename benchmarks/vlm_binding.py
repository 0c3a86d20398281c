"""Benchmark: training tokens/s and evaluation samples/s of the binding LM (text vs image vs noise-text prompts).

One run, untrained weights (speed does not depend on training). Prints tokens/s for each prompt format and
the ratio image/text, and evaluation samples/s. Usage: ``python benchmarks/vlm_binding.py [--quick]``
(run with ``OMP_NUM_THREADS=1`` for the single-thread numbers of the card).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml2026.papers.vlm_binding import (
    BindingLM,
    CellEncoder,
    Trainer,
    Vocab,
    accuracy,
    make_batch,
    pretrain_encoder,
    sample_batch,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer steps")
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--n-layer", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    steps = 5 if args.quick else 30
    vocab = Vocab(16, 16, 16, 16)
    rng = np.random.default_rng(0)
    enc = CellEncoder(32, 16)
    pretrain_encoder(enc, vocab, 1, rng)
    model = BindingLM(vocab, enc, torch.Generator().manual_seed(0), n_layer=args.n_layer, d_model=args.d_model)
    tr = Trainer(model)
    rates = {}
    for mode in ("text", "noise", "image"):
        batches = [
            make_batch(sample_batch(args.batch_size, (2, 5), vocab, rng), mode, rng)  # type: ignore[arg-type]
            for _ in range(steps + 1)
        ]
        tr.step(batches[0])  # warm-up
        t0 = time.perf_counter()
        for b in batches[1:]:
            tr.step(b)
        dt = time.perf_counter() - t0
        n_tok = sum(int(b.key_mask.sum()) + int((~b.key_mask & (b.ids != vocab.pad)).sum()) for b in batches[1:])
        rates[mode] = n_tok / dt
        print(f"train {mode:5s}: {n_tok / dt:10.0f} tokens/s  {steps * args.batch_size / dt:8.1f} samples/s")
    print(f"ratio image/text tokens/s: {rates['image'] / rates['text']:.2f}")
    samples = sample_batch(256 if args.quick else 1024, (2, 10), vocab, rng)
    t0 = time.perf_counter()
    accuracy(model, samples, "text", rng)
    print(f"eval text: {len(samples) / (time.perf_counter() - t0):.0f} samples/s")


if __name__ == "__main__":
    main()
