"""Method 2: a rank-r head with O(rd) queries (adaptive (2r+2)d, compressed sensing ~kappa r d)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.config import config, param
from icml2026.core.plotting import new_figure

from .._threads import single_blas_thread
from ..baselines import least_squares_recovery
from ..data import random_single_head, relative_error
from ..low_rank import recover_low_rank
from ..model import SingleHeadAttention
from ..oracle import CountingOracle
from ._grid import check_pow2_range, powers_of_two
from ._preconditions import rank_gap_check, value_norm_check

_MAX_KAPPA_POINTS = 200  # bounds the compressed-sensing sweep (each point solves cs_n_seeds problems)


@config
class LowRankConfig:
    # d >= 4: the adaptive sweep uses the ranks r <= d / 4, so a smaller d has no (d, r) pair at all.
    d_min: int = param(16, 4, 256, help="smallest dimension (power of two)")
    d_max: int = param(64, 4, 256, help="largest dimension (power of two); brief: 64, full preset 256")
    r_max: int = param(4, 1, 64, help="ranks 1, 2, 4, ..., r_max (power of two; pairs keep r <= d / 4)")
    cs_d: int = param(32, 2, 64, help="compressed sensing instance (brief acceptance: d = 32, r = 2)")
    # cs_rank <= 4: the ALS fits at m = 6 r d cost O(m (r d)^2) per iteration; rank 16 at d = 64 takes minutes.
    cs_rank: int = param(2, 1, 4, help="rank of the compressed sensing instance, <= cs_d / 2")
    cs_n_seeds: int = param(3, 1, 20, help="seeds per kappa (brief acceptance: 10)")
    cs_kappa_min: float = param(2.0, 0.1, 20.0, help="kappa grid start (m = kappa r d; brief: expect 3-6)")
    cs_kappa_max: float = param(6.0, 0.1, 20.0, help="kappa grid end")
    cs_kappa_step: float = param(0.5, 0.01, 20.0, help="kappa grid step")
    fb_d: int = param(30, 2, 64, help="dimension of the large-rank fallback instances (ranks d/2 and d - 1)")

    def __post_init__(self) -> None:
        check_pow2_range(self.d_min, self.d_max, "d_min", "d_max")
        check_pow2_range(1, self.r_max, "r_max", "r_max")
        if self.r_max > self.d_min:
            raise ValueError(f"r_max = {self.r_max}: must be <= d_min ({self.d_min})")
        if self.cs_rank > self.cs_d // 2:
            raise ValueError(f"cs_rank = {self.cs_rank}: must be <= cs_d / 2 ({self.cs_d // 2})")
        if self.cs_kappa_min > self.cs_kappa_max:
            raise ValueError(f"cs_kappa_min = {self.cs_kappa_min}: must be <= cs_kappa_max ({self.cs_kappa_max})")
        n_points = math.floor((self.cs_kappa_max - self.cs_kappa_min) / self.cs_kappa_step + 1e-9) + 1
        if n_points > _MAX_KAPPA_POINTS:
            raise ValueError(
                f"cs_kappa_step = {self.cs_kappa_step}: gives {n_points} kappa points, at most "
                f"{_MAX_KAPPA_POINTS} allowed"
            )


_CS_TOL = 1e-8  # brief acceptance 3: relative error < 1e-8 counts as recovery


def low_rank_recovery(cfg: LowRankConfig, rng: np.random.Generator) -> Outcome:
    with single_blas_thread():
        return _low_rank_recovery(cfg, rng)


def _low_rank_recovery(cfg: LowRankConfig, rng: np.random.Generator) -> Outcome:
    rng_ad, rng_cs = spawn(rng, 2)
    ds = powers_of_two(cfg.d_min, cfg.d_max)
    ranks = powers_of_two(1, cfg.r_max)
    rows: list[dict[str, Any]] = []
    planted: list[tuple[SingleHeadAttention, int]] = []  # every planted (head, rank), for the preconditions
    t0 = time.perf_counter()
    pairs = [(d, r) for d in ds for r in ranks if r <= d // 4]
    for (d, r), child in zip(pairs, spawn(rng_ad, len(pairs)), strict=True):
        head = random_single_head(d, r, child)
        planted.append((head, r))
        est = recover_low_rank(CountingOracle(head), d, rank=None, method="adaptive", rng=child)
        rows.append(
            {
                "d": d,
                "r": r,
                "queries": est.n_queries,
                "rescale_queries": est.n_rescale_queries,
                "theory_2r_plus_2_d": (2 * r + 2) * d,
                "exact_d2_plus_d": d * d + d,
                "rank_estimated": est.rank,
                "rel_err_A": relative_error(est.A, head.A),
            }
        )
    # Fallback to the exact method at large rank, rank unknown and given (d = fb_d, r = d/2 .. d - 1).
    fb_rows: list[dict[str, Any]] = []
    fb_ranks = sorted({cfg.fb_d // 2, cfg.fb_d - 1})
    for r_fb, child in zip(fb_ranks, spawn(rng_ad, len(fb_ranks)), strict=True):
        head = random_single_head(cfg.fb_d, r_fb, child)
        planted.append((head, r_fb))
        for given in (None, r_fb):
            est = recover_low_rank(CountingOracle(head), cfg.fb_d, rank=given, method="adaptive", rng=child)
            fb_rows.append(
                {
                    "r": r_fb,
                    "rank_given": given is not None,
                    "queries": est.n_queries,
                    "exact_d2_plus_d": cfg.fb_d**2 + cfg.fb_d,
                    "fallback": est.fallback,
                    "rel_err_A": relative_error(est.A, head.A),
                }
            )
    fb_ratio = max(row["queries"] / row["exact_d2_plus_d"] for row in fb_rows)
    fb_err = max(row["rel_err_A"] for row in fb_rows)
    t_adaptive = time.perf_counter() - t0
    # Total calls (retries included) against the (2r + 2) d budget; issue 28: subtracting the retries
    # first made the excess 0 by construction. Only the first round of the first row (_FIRST_ROUND pairs)
    # is asked without any scale information; every later round uses the adapted scale.
    # Allowance: each of those blind pairs and of the 8 r blind pairs of step (ii) retried twice, 16 (r + 1).
    total_excess = max(row["queries"] - row["theory_2r_plus_2_d"] - 16 * (row["r"] + 1) for row in rows)
    rescale_fraction = sum(row["rescale_queries"] for row in rows) / sum(row["queries"] for row in rows)
    rank_errors = sum(row["rank_estimated"] != row["r"] for row in rows)
    err_ad = max(row["rel_err_A"] for row in rows)

    # 2a: compressed sensing, smallest kappa on the grid at which every seed recovers.
    d, r = cfg.cs_d, cfg.cs_rank
    t0 = time.perf_counter()
    kappas = np.arange(cfg.cs_kappa_min, cfg.cs_kappa_max + 1e-9, cfg.cs_kappa_step)
    seeds = spawn(rng_cs, cfg.cs_n_seeds + 1)
    heads = [random_single_head(d, r, s) for s in seeds[:-1]]
    planted += [(head, r) for head in heads]
    cs_rows: list[dict[str, Any]] = []
    kappa_min = math.inf
    for kappa in kappas:
        errs = []
        for head, s in zip(heads, spawn(seeds[-1], len(heads)), strict=True):
            est = recover_low_rank(
                CountingOracle(head), d, rank=r, method="compressed_sensing", rng=s, kappa=float(kappa)
            )
            errs.append(relative_error(est.A, head.A))
        frac = float(np.mean(np.array(errs) < _CS_TOL))
        cs_rows.append(
            {
                "kappa": float(kappa),
                "m": math.ceil(kappa * r * d),
                "frac_recovered": frac,
                "max_err": max(errs),
            }
        )
        if frac == 1.0 and kappa_min == math.inf:
            kappa_min = float(kappa)
            break
    # Brief acceptance 3 at m = 6 r d, against the naive least-squares baseline at the same m.
    m6 = 6 * r * d
    cs_err6, ls_err6 = [], []
    for head, s in zip(heads, spawn(seeds[-1], len(heads)), strict=True):
        s_cs, s_ls = spawn(s, 2)
        cs_err6.append(
            relative_error(recover_low_rank(head, d, r, "compressed_sensing", s_cs, n_measurements=m6).A, head.A)
        )
        ls_err6.append(relative_error(least_squares_recovery(head, d, m6, s_ls).A, head.A))
    frac6 = float(np.mean(np.array(cs_err6) < _CS_TOL))
    # Below the degrees of freedom r (2d - r) no method can recover: the fit must fail.
    m_below = r * (2 * d - r) - 1
    err_below = relative_error(
        recover_low_rank(heads[0], d, r, "compressed_sensing", spawn(seeds[-1], 1)[0], n_measurements=m_below).A,
        heads[0].A,
    )
    t_cs = time.perf_counter() - t0

    fig, ax = new_figure(
        "Method 2: queries used (adaptive, rank estimated)",
        "dimension d",
        "oracle queries",
        logx=True,
        logy=True,
    )
    ax.plot(ds, [dd * dd + dd for dd in ds], "k-", label="exact: d^2 + d")
    for rr in ranks:
        pts = [row for row in rows if row["r"] == rr]
        if pts:
            line = ax.plot([p["d"] for p in pts], [p["queries"] for p in pts], "o", label=f"adaptive r={rr}")
            ax.plot([p["d"] for p in pts], [p["theory_2r_plus_2_d"] for p in pts], "--", color=line[0].get_color())
    if math.isfinite(kappa_min):  # no point when no kappa on the grid recovered every seed
        ax.plot([d], [d + math.ceil(kappa_min * r * d)], "s", label=f"CS r={r}, smallest kappa")
    ax.legend(fontsize=7)
    fig2, ax2 = new_figure(
        f"Method 2a: compressed sensing, d={d}, r={r}", "kappa (m = kappa r d)", "fraction of seeds recovered"
    )
    ax2.plot([c["kappa"] for c in cs_rows], [c["frac_recovered"] for c in cs_rows], "o-")
    ax2.axvline((2 * d - r) / d, color="k", ls=":", label="degrees of freedom r(2d - r)")
    ax2.legend(fontsize=7)
    # Preconditions (sampled heads): identifiable (v far from 0) and of the planted rank (a gap that the rank
    # estimate and the low-rank fits can see); the adaptive, fallback and compressed-sensing heads alike.
    pre_value = value_norm_check(head for head, _ in planted)
    pre_rank = rank_gap_check(planted)
    return Outcome(
        metrics={
            "heads_min_value_norm": pre_value.value,
            "heads_min_rank_gap": pre_rank.value,
            "adaptive_max_excess_over_2r_plus_2_d": total_excess,
            "fallback_max_total_over_d2_plus_d": fb_ratio,
            "fallback_max_rel_err_A": fb_err,
            "adaptive_rank_errors": rank_errors,
            "adaptive_max_rel_err_A": err_ad,
            "adaptive_rescale_fraction": rescale_fraction,
            "cs_kappa_min": kappa_min,
            "cs_frac_recovered_m6rd": frac6,
            "cs_max_err_m6rd": max(cs_err6),
            "least_squares_min_err_m6rd": min(ls_err6),
            "cs_err_below_dof": err_below,
        },
        checks=[
            pre_value,
            pre_rank,
            # retries included, minus the allowance 16 (r + 1) for the blind pilot pairs (fails on runaway
            # retries such as issue 28's +68% of the budget, or the 15% this check found at d = 256, r = 1)
            Check("adaptive_max_excess_over_2r_plus_2_d", total_excess, "<= 0", paper="(2r+2)d queries"),
            # r >= (d - 1) / 2: the adaptive method must not cost more than the exact one (issue 28: 1800 vs
            # 930 queries at d = 30, r = 29 before the fallback)
            Check("fallback_max_total_over_d2_plus_d", fb_ratio, "<= 1.05", paper="O(d^2) queries"),
            Check("fallback_max_rel_err_A", fb_err, "< 1e-9", paper="exact"),
            Check("adaptive_rank_errors", rank_errors, "== 0", paper="rank estimated"),
            # our sanity bound: rescale retries stay a small overhead on the O(rd) budget
            Check("adaptive_rescale_fraction", rescale_fraction, "< 0.05", paper=None),
            Check("adaptive_max_rel_err_A", err_ad, "< 1e-9", paper="exact"),
            Check("cs_frac_recovered_m6rd", frac6, ">= 0.9", paper="O(rd) random measurements suffice"),
            Check("cs_kappa_min", kappa_min, "<= 6"),
            Check("least_squares_min_err_m6rd", min(ls_err6), "> 0.1", paper="no rank prior: needs d^2"),
            Check("cs_err_below_dof", err_below, "> 1e-3", paper="m < r(2d - r) cannot recover"),
        ],
        figures={"queries_vs_d": fig, "cs_kappa": fig2},
        tables={"adaptive": rows, "compressed_sensing": cs_rows, "fallback": fb_rows},
        timings={"adaptive_s": t_adaptive, "compressed_sensing_s": t_cs},
    )
