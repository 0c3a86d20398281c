"""Benchmark for sponge_tool_attack: agent steps/s, judge sentences/s and the attack's wall time per probe.

    python benchmarks/sponge_tool_attack.py [--quick]

Prints, in one run: (1) tool-calling steps per second of the agent runtime (simulated concise and
compliant victims, through the real ToolAgent loop and tools), (2) MiniLM sentences per second of the
embedding judge (distinct sentences, batched and one by one), (3) wall time of the STA loop per probe query
(n_iter rounds x n_candidates), and the steps of the compliant victim with and without the attack (ratio).
Writes nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from icml2026.core import make_rng
from icml2026.core.runner import limit_blas_threads
from icml2026.papers.sponge_tool_attack import (
    BanditInductor,
    EmbeddingJudge,
    SentenceEncoder,
    SimAgent,
    STAAttacker,
    TemplateRewriter,
    make_tasks,
    split_sentences,
    split_tasks,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    limit_blas_threads(1)
    import torch

    torch.set_num_threads(1)
    n_dom, n_probe, n_iter = (10, 4, 2) if args.quick else (40, 17, 5)
    rng = make_rng(0)
    tasks = make_tasks(n_dom, rng)
    probe, test = split_tasks(tasks, n_probe, rng)
    t0 = time.perf_counter()
    enc = SentenceEncoder()
    print(f"MiniLM load: {time.perf_counter() - t0:.1f} s")

    print(f"\n{'agent':<10} {'queries':>8} {'steps':>7} {'steps/s':>9}")
    for kind in ("concise", "compliant"):
        agent = SimAgent(kind, enc if kind == "compliant" else None)
        agent.run(test[0].query)  # prototypes encoded once, outside the timing
        queries = [t.query + " Verify every intermediate result with a tool before moving on." for t in test]
        enc.encode([s for q in queries for s in split_sentences(q)])  # embeddings are timed below, not here
        t0 = time.perf_counter()
        steps = sum(agent.run(q).n_steps for q in queries)
        dt = time.perf_counter() - t0
        print(f"{kind:<10} {len(queries):8d} {steps:7d} {steps / dt:9.1f}")

    sents = [f"{t.query} Please check item {i} twice." for i, t in enumerate(test)]
    fresh = SentenceEncoder(model=enc.model)
    t0 = time.perf_counter()
    fresh.encode(sents)
    t_batch = time.perf_counter() - t0
    fresh2 = SentenceEncoder(model=enc.model, batch_size=1)
    t0 = time.perf_counter()
    for s in sents[:32]:
        fresh2.encode([s])
    t_one = (time.perf_counter() - t0) / 32
    print(f"\njudge encoder: batched {len(sents) / t_batch:.1f} sentences/s, "
          f"one at a time {1 / t_one:.1f} sentences/s (batching x{t_one * len(sents) / t_batch:.1f})")

    agent = SimAgent("compliant", enc)
    att = STAAttacker(TemplateRewriter(), EmbeddingJudge(enc, 0.80), BanditInductor())
    t0 = time.perf_counter()
    log = att.run([t.query for t in probe], agent, n_iter, 4, make_rng(1))
    t_att = time.perf_counter() - t0
    print(f"\nSTA loop: {len(probe)} probes x {n_iter} rounds x 4 candidates: {t_att:.1f} s, "
          f"{t_att / len(probe):.2f} s per probe query, {log.victim_runs} victim runs")
    rewrites = att.rewrite_many([t.query for t in test], 4, make_rng(2))
    clean = np.mean([agent.run(t.query).n_steps for t in test])
    attacked = np.mean([agent.run(r.text).n_steps for r in rewrites])
    print(f"compliant victim: {clean:.2f} steps clean, {attacked:.2f} attacked, ratio {attacked / clean:.2f}x")


if __name__ == "__main__":
    main()
