"""Method 1: exact recovery of a single head with d^2 + d queries, and its retry accounting."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.config import config, param
from icml2026.core.plotting import new_figure

from ..data import random_single_head, relative_error
from ..exact import recover_exact
from ..model import SingleHeadAttention
from ..oracle import CountingOracle
from ..queries import choose_directions
from ._grid import check_pow2_range, over_bar, powers_of_two
from ._preconditions import unsaturated_logit_check, value_norm_check


@config
class ExactConfig:
    # Upper bounds: d = 256 costs 65,792 queries and a few seconds; larger d is fine for the method but
    # not for a CPU run of this experiment.
    d_min: int = param(8, 1, 256, help="smallest dimension (power of two); grid d_min, 2 d_min, ..., d_max")
    d_max: int = param(32, 1, 256, help="largest dimension (power of two); paper: any d; brief: up to 64")
    scale: float = param(1.0, 1e-6, 100.0, help="standard deviation of the entries of A")
    batch: bool = True  # batch the non-adaptive queries
    # Retry accounting (issue 28): entries of A of these sizes force rescaled (counted) queries.
    retry_d: int = param(24, 2, 64, help="dimension of the retry-accounting sweep")
    retry_scale_max: float = param(1000.0, 1.0, 1e6, help="largest entry scale of the retry sweep (log grid from 1)")
    n_retry_scales: int = param(4, 1, 12, help="entry scales on the log grid 1 .. retry_scale_max")

    def __post_init__(self) -> None:
        check_pow2_range(self.d_min, self.d_max, "d_min", "d_max")


def exact_recovery(cfg: ExactConfig, rng: np.random.Generator) -> Outcome:
    ds = powers_of_two(cfg.d_min, cfg.d_max)
    rows: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    heads: list[SingleHeadAttention] = []  # the sweep's planted heads, for the preconditions
    retry_heads: list[SingleHeadAttention] = []
    for d, child in zip(ds, spawn(rng, len(ds)), strict=True):
        head = random_single_head(d, d, child, scale=cfg.scale)
        heads.append(head)
        oracle = CountingOracle(head)
        t0 = time.perf_counter()
        est = recover_exact(oracle, d, batch=cfg.batch)
        timings[f"recover_d{d}_s"] = time.perf_counter() - t0
        rows.append(
            {
                "d": d,
                "queries": est.n_queries,
                "rescale_queries": est.n_rescale_queries,
                "theory_d2_plus_d": d * d + d,
                "rel_err_A": relative_error(est.A, head.A),
                "max_abs_err_v": float(np.max(np.abs(est.v - head.v))),
            }
        )
    # Every call counts, retries included (issue 28: subtracting the retries made this 0 by construction).
    excess = max(r["queries"] - r["theory_d2_plus_d"] for r in rows)
    err_A = max(r["rel_err_A"] for r in rows)
    err_v = max(r["max_abs_err_v"] for r in rows)
    # Retry accounting: entries of size `scale` saturate the softmax at s = 1. Theory for our schedule: the
    # pilot row (b = e_1) needs k = ceil(log_16(max_j |e_1^T A c_j| / log(1e9))) shrinks of s by 4, i.e. at
    # most d k retries; the other d^2 - d pairs start at the pilot's scale, so a retry there needs an entry
    # 1 / PILOT_LOGIT_FRACTION = 6.7 times the pilot row's largest. Bound used: d^2 + d + d (k + 1).
    retry_rows: list[dict[str, Any]] = []
    dr = cfg.retry_d
    for sc, child in zip(
        np.logspace(0.0, math.log10(cfg.retry_scale_max), cfg.n_retry_scales),
        spawn(spawn(rng, 1)[0], cfg.n_retry_scales),
        strict=True,
    ):
        head = random_single_head(dr, dr, child, scale=float(sc))
        retry_heads.append(head)
        est = recover_exact(CountingOracle(head), dr, batch=cfg.batch)
        C = choose_directions(head.v)
        y_pilot = float(np.max(np.abs(head.A[0] @ C)))
        k = max(0, math.ceil(math.log(y_pilot / math.log(1e9), 16))) if y_pilot > 0 else 0
        retry_rows.append(
            {
                "scale": float(sc),
                "queries": est.n_queries,
                "rescale_queries": est.n_rescale_queries,
                "excess_fraction": est.n_queries / (dr * dr + dr) - 1.0,
                "theory_bound": dr * dr + dr + dr * (k + 1),
                "rel_err_A": relative_error(est.A, head.A),
                "err_over_error_bar": over_bar(float(np.linalg.norm(est.A - head.A)), est.error_bound_A),
            }
        )
    retry_over_theory = max(r["queries"] / r["theory_bound"] for r in retry_rows)
    retry_excess = max(r["excess_fraction"] for r in retry_rows)
    retry_err = max(r["rel_err_A"] for r in retry_rows)
    retry_over_bar = max(r["err_over_error_bar"] for r in retry_rows)
    fig, ax = new_figure("Method 1: queries used", "dimension d", "oracle queries", logx=True, logy=True)
    ax.plot(ds, [r["queries"] for r in rows], "o", label="queries used")
    ax.plot(ds, [d * d + d for d in ds], "-", label="d^2 + d")
    ax.legend()
    fig2, ax2 = new_figure(
        "Method 1: recovery error", "dimension d", "relative Frobenius error of A", logx=True, logy=True
    )
    ax2.plot(ds, [max(r["rel_err_A"], 1e-17) for r in rows], "o-")
    # Preconditions (sampled heads): identifiable (v far from 0), and, for the exact count d^2 + d, logits
    # below the acceptance limit at s = 1 (the retry sweep leaves that regime on purpose; its claims are the
    # schedule's bound and the error bar, which need only v != 0).
    pre_value = value_norm_check([*heads, *retry_heads])
    pre_logit = unsaturated_logit_check(heads)
    return Outcome(
        metrics={
            "heads_min_value_norm": pre_value.value,
            "heads_max_logit_over_saturation": pre_logit.value,
            "max_rel_err_A": err_A,
            "max_abs_err_v": err_v,
            "query_excess_over_d2_plus_d": excess,
            "total_rescale_queries": sum(r["rescale_queries"] for r in rows),
            **{f"queries_d{r['d']}": r["queries"] for r in rows},
            "retry_max_total_over_theory": retry_over_theory,
            "retry_max_excess_fraction": retry_excess,
            "retry_max_rel_err_A": retry_err,
            "retry_max_err_over_error_bar": retry_over_bar,
        },
        checks=[
            pre_value,
            pre_logit,
            # total calls incl. retries; fails on any retry at O(1) entries or any uncounted call
            Check("query_excess_over_d2_plus_d", excess, "== 0", paper="d^2 + d queries"),
            Check("max_rel_err_A", err_A, "< 1e-10", paper="exact"),
            Check("max_abs_err_v", err_v, "< 1e-12", paper="exact"),
            # retries at large entries against the schedule's bound (fails if the retries of issue 28,
            # +68% at entries ~50 and +167% at ~1000, came back)
            Check("retry_max_total_over_theory", retry_over_theory, "<= 1", paper="O(d^2) queries"),
            # Large entries are recovered to the oracle's precision, not exactly: the relative error ranged
            # 2.5e-12 to 1.0e-7 over run seeds, so a fixed "< 1e-8" followed the seed. Checked instead: the
            # Frobenius error within the estimate's own error bar on it (measured a few % of it); fails for a bar
            # that is not a bound (e.g. one computed without the retries' scale).
            Check("retry_max_err_over_error_bar", retry_over_bar, "<= 1", paper="exact"),
        ],
        figures={"queries_vs_d": fig, "error_vs_d": fig2},
        tables={"per_d": rows, "retries": retry_rows},
        timings=timings,
    )
