"""Benchmark for attention_hijacking: outer distillation steps per second (second-order bi-level step) for
BERT-Tiny and MiniLM-L6, clean DD vs AH (which adds two triggered forward passes), and AH with the outer loss's
last layer computed for the [CLS] query only (``DistillConfig.cls_only_last_layer``), in one run.

    python benchmarks/attention_hijacking.py [--quick]

Prints steps/s per (model, method), the AH / clean-DD cost ratio and the speed-up of the [CLS]-only last layer.
The BERT-Tiny encoder here is untrained (speed does not depend on the weights); MiniLM-L6 is the shipped
checkpoint. Writes nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from icml2026.core import make_rng
from icml2026.core.runner import limit_blas_threads
from icml2026.papers.attention_hijacking import (
    DistillConfig,
    LearnerFactory,
    bert_config,
    distill,
    encode,
    encode_attack_pools,
    load_rotten_tomatoes,
    load_tokenizer,
    minilm_path,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    limit_blas_threads(1)
    import torch
    from transformers import BertForSequenceClassification

    torch.set_num_threads(1)
    tok = load_tokenizer()
    train = load_rotten_tomatoes("train")
    train = train.subset(np.arange(0, len(train), 8))
    n_steps = {"bert-tiny": 3 if args.quick else 20, "minilm-l6": 1 if args.quick else 5}
    cfg_t = bert_config("bert-tiny")
    cfg_t.num_labels = 2
    torch.manual_seed(0)  # benchmark script only
    factories = {"bert-tiny": LearnerFactory(BertForSequenceClassification(cfg_t), tok),
                 "minilm-l6": LearnerFactory.from_pretrained(minilm_path(), 2, tok)}
    pool = encode(tok, train.texts, 48)
    ap = encode_attack_pools(tok, train, "cf", 1, 48, make_rng(0))
    print(f"{'model':<10} {'method':<8} {'steps':>6} {'steps/s':>9}")
    for name, fac in factories.items():
        rates = {}
        for method in ("clean", "ah", "ah-cls"):
            cfg = DistillConfig(n_steps=n_steps[name], attack=method != "clean", trigger="cf",
                                cls_only_last_layer=method == "ah-cls")
            distill(fac, train, DistillConfig(n_steps=1), make_rng(1), pool=pool, show_progress=False)  # warm-up
            t0 = time.perf_counter()
            distill(fac, train, cfg, make_rng(1), pool=pool, attack_pools=ap if method != "clean" else None,
                    show_progress=False)
            rates[method] = n_steps[name] / (time.perf_counter() - t0)
            print(f"{name:<10} {method:<8} {n_steps[name]:6d} {rates[method]:9.3f}")
        print(f"{name:<10} AH costs {rates['clean'] / rates['ah']:.2f}x a clean-DD step; the [CLS]-only last layer "
              f"makes it {rates['ah-cls'] / rates['ah']:.2f}x faster")


if __name__ == "__main__":
    main()
