"""Method 4: multi-head attention is not identifiable from queries."""

from __future__ import annotations

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.config import config, param
from icml2026.core.plotting import new_figure

from ..data import random_sequences
from ..multihead import nonidentifiable_pair


@config
class MultiHeadConfig:
    d: int = param(8, 1, 128, help="token dimension")
    n_heads: int = param(3, 2, 32, help="heads (the construction needs two)")
    n_sequences: int = param(1000, 1, 100_000, help="brief acceptance 6: 1000 random sequences")
    max_len: int = param(10, 1, 100, help="longest sequence; brief acceptance 6: n up to 10")


def multihead_nonidentifiable(cfg: MultiHeadConfig, rng: np.random.Generator) -> Outcome:
    rng_pair, rng_seq = spawn(rng, 2)
    first, second = nonidentifiable_pair(cfg.d, cfg.n_heads, rng_pair)
    seqs = random_sequences(cfg.d, cfg.n_sequences, cfg.max_len, rng_seq)
    out1 = np.array([first(x) for x in seqs])
    out2 = np.array([second(x) for x in seqs])
    diff = float(np.max(np.abs(out1 - out2)))
    # Per-head distance after the best matching of heads (both orders tried through the A's).
    gap = min(
        float(np.linalg.norm(first.vs[h] - second.vs[k])) + float(np.linalg.norm(first.As[h] - second.As[k]))
        for h in (0, 1)
        for k in range(cfg.n_heads)
        if np.allclose(first.As[h], second.As[k])
    )
    fig, ax = new_figure("Two parameterisations, one function", "model 1 output", "model 2 output")
    ax.plot(out1, out2, ".", ms=2)
    return Outcome(
        metrics={
            "max_output_difference": diff,
            "min_head_parameter_gap": gap,
            "max_abs_output": float(np.max(np.abs(out1))),
        },
        checks=[
            # Precondition (sampled pair and sequences): the functions compared are not ~0, whose agreement would
            # be trivial. Their answers are O(1) (v ~ N(0, I), unit tokens); >= 1e-3 makes the 1e-12 agreement a
            # relative one of 1e-9 or better.
            Check("max_abs_output", float(np.max(np.abs(out1))), ">= 1e-3", paper="non-zero heads",
                  role="precondition"),
            Check("max_output_difference", diff, "< 1e-12", paper="equal functions"),
            Check("min_head_parameter_gap", gap, "> 0.1", paper="different heads"),
        ],
        figures={"outputs": fig},
    )
