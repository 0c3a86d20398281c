"""Registered experiments of "Provably Learning Attention with Queries" (one per claim)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.plotting import new_figure

from ._threads import single_blas_thread
from .baselines import least_squares_recovery
from .data import random_sequences, random_single_head, relative_error
from .exact import NotIdentifiableError, recover_exact
from .low_rank import recover_low_rank
from .model import SingleHeadAttention
from .multihead import nonidentifiable_pair
from .noisy import noisy_error_bound, recover_noisy, search_adversary
from .one_layer import FFNLearnerStub, random_one_layer, recover_one_layer
from .oracle import CountingOracle, NoisyOracle
from .precision import LowPrecisionHead
from .queries import NoisyConditionError, SaturationError, choose_directions, margin_directions


def _powers_of_two(lo: int, hi: int) -> list[int]:
    return [2**k for k in range(int(math.log2(lo)), int(math.log2(hi)) + 1)]


def _check_pow2_range(lo: int, hi: int, lo_name: str, hi_name: str) -> None:
    """Both ends powers of two (the grids double), ``lo <= hi``; messages start with the field's name."""
    for x, name in ((lo, lo_name), (hi, hi_name)):
        if x < 1 or x & (x - 1):
            raise ValueError(f"{name} = {x}: must be a power of two")
    if lo > hi:
        raise ValueError(f"{lo_name} = {lo}: must be <= {hi_name} ({hi})")


# ------------------------------------------------------------------------------------------ Method 1
def _over_bar(err: float, bar: float | None) -> float:
    """``err / bar`` (0 when both are 0, inf for an error where the bar claims none or there is no bar)."""
    if bar is not None and bar > 0:
        return err / bar
    return 0.0 if err == 0 else float("inf")


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
        _check_pow2_range(self.d_min, self.d_max, "d_min", "d_max")


@experiment(
    "attention_queries.exact_recovery",
    claim="A single attention head (A, v) is recovered exactly from d^2 + d noiseless queries.",
    presets={"quick": ExactConfig(), "full": ExactConfig(d_max=128)},
)
def exact_recovery(cfg: ExactConfig, rng: np.random.Generator) -> Outcome:
    ds = _powers_of_two(cfg.d_min, cfg.d_max)
    rows: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    for d, child in zip(ds, spawn(rng, len(ds)), strict=True):
        head = random_single_head(d, d, child, scale=cfg.scale)
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
                "err_over_error_bar": _over_bar(float(np.linalg.norm(est.A - head.A)), est.error_bound_A),
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
    return Outcome(
        metrics={
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


# ------------------------------------------------------------------------------------------ Method 2
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
        _check_pow2_range(self.d_min, self.d_max, "d_min", "d_max")
        _check_pow2_range(1, self.r_max, "r_max", "r_max")
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


@experiment(
    "attention_queries.low_rank_recovery",
    claim="A rank-r head is recovered with O(rd) queries: (2r+2)d adaptively, about kappa r d (kappa ~ 3-6) "
    "by compressed sensing, far below the d^2 + d of the exact method.",
    presets={
        "quick": LowRankConfig(cs_kappa_min=2.5),
        "full": LowRankConfig(d_max=256, r_max=16, cs_n_seeds=10, cs_kappa_min=1.5, cs_kappa_step=0.25),
    },
)
def low_rank_recovery(cfg: LowRankConfig, rng: np.random.Generator) -> Outcome:
    with single_blas_thread():
        return _low_rank_recovery(cfg, rng)


def _low_rank_recovery(cfg: LowRankConfig, rng: np.random.Generator) -> Outcome:
    rng_ad, rng_cs = spawn(rng, 2)
    ds = _powers_of_two(cfg.d_min, cfg.d_max)
    ranks = _powers_of_two(1, cfg.r_max)
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    pairs = [(d, r) for d in ds for r in ranks if r <= d // 4]
    for (d, r), child in zip(pairs, spawn(rng_ad, len(pairs)), strict=True):
        head = random_single_head(d, r, child)
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
    return Outcome(
        metrics={
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


# ------------------------------------------------------------------------------------------ Method 3
NOISE_KINDS_RUN = ("uniform", "adversarial", "worst_case")


@config
class NoiseConfig:
    d: int = param(8, 1, 64, help="token dimension; brief: d in {8, ..., 64}")
    log10_tau_min: float = param(-10.0, -14.0, -1.0, help="brief acceptance 4: tau in {1e-10, ..., 1e-4}")
    # -1: larger noise leaves the first-order regime the claim is about.
    log10_tau_max: float = param(-4.0, -14.0, -1.0, help="largest tolerance, log10")
    n_tau: int = param(7, 2, 50, help="tolerances on the log grid")
    norm_bound: float = param(1.0, 1e-3, 1e3, help="B_x, the largest token norm a query may use")
    n_repeats: int = param(1, 1, 101, help="repeats per query (median answer)")

    def __post_init__(self) -> None:
        if self.log10_tau_min >= self.log10_tau_max:
            raise ValueError(f"log10_tau_min = {self.log10_tau_min}: must be < log10_tau_max ({self.log10_tau_max})")


@experiment(
    "attention_queries.noise_tolerance",
    claim="With an additive-tolerance oracle the recovery error grows linearly in tau (log-log slope ~ 1).",
    presets={"quick": NoiseConfig(), "full": NoiseConfig(d=32, n_tau=13)},
)
def noise_tolerance(cfg: NoiseConfig, rng: np.random.Generator) -> Outcome:
    rng_head, rng_noise = spawn(rng, 2)
    head = random_single_head(cfg.d, cfg.d, rng_head)
    taus = np.logspace(cfg.log10_tau_min, cfg.log10_tau_max, cfg.n_tau)
    rows: list[dict[str, Any]] = []
    slopes: dict[str, float] = {}
    fig, ax = new_figure(
        f"Method 3: error against tolerance (d={cfg.d})",
        "tolerance tau",
        "relative Frobenius error of A",
        logx=True,
        logy=True,
    )
    n_failed = 0
    for kind, krng in zip(NOISE_KINDS_RUN, spawn(rng_noise, len(NOISE_KINDS_RUN)), strict=True):
        errs = []
        for tau, trng in zip(taus, spawn(krng, len(taus)), strict=True):
            oracle = CountingOracle(NoisyOracle(head, float(tau), trng, kind))
            try:
                est = recover_noisy(oracle, cfg.d, float(tau), norm_bound=cfg.norm_bound, n_repeats=cfg.n_repeats)
            except (NoisyConditionError, NotIdentifiableError, SaturationError):
                # Noise this large (relative to norm_bound) defeats the method: a measured failure (the
                # method names the violated condition), counted and shown in the table, never dropped.
                n_failed += 1
                errs.append(math.nan)
                rows.append(
                    {
                        "kind": kind,
                        "tau": float(tau),
                        "rel_err_A": math.nan,
                        "queries": oracle.n_queries,
                        "rel_err_v": math.nan,
                        "error_over_bar": math.nan,
                    }
                )
                continue
            err = relative_error(est.A, head.A)
            errs.append(err)
            assert est.error_bound_A is not None
            rows.append(
                {
                    "kind": kind,
                    "tau": float(tau),
                    "rel_err_A": err,
                    "queries": est.n_queries,
                    "rel_err_v": relative_error(est.v, head.v),
                    "error_over_bar": float(np.linalg.norm(est.A - head.A)) / est.error_bound_A,
                }
            )
        log_errs = np.log10(np.maximum(errs, 1e-300))  # an exact 0 error (tiny tau) must not give -inf
        ok = np.all(np.isfinite(log_errs))
        slopes[kind] = float(np.polyfit(np.log10(taus), log_errs, 1)[0]) if ok else math.nan
        ax.plot(taus, errs, "o-", label=f"{kind} (slope {slopes[kind]:.3f})")
    ax.plot(taus, taus, "k:", label="slope 1")
    ax.legend()
    worst = float(np.max([r["rel_err_A"] / r["tau"] for r in rows]))  # NaN when a recovery failed
    over_bar = float(np.max([r["error_over_bar"] for r in rows]))
    return Outcome(
        metrics={
            "slope_uniform": slopes["uniform"],
            "slope_adversarial": slopes["adversarial"],
            "slope_worst_case": slopes["worst_case"],
            "max_error_over_tau": worst,
            "max_error_over_error_bar": over_bar,
            "n_failed_recoveries": n_failed,
        },
        checks=[
            Check("slope_uniform", slopes["uniform"], "in [0.8, 1.2]", paper="error O(tau)"),
            Check("slope_adversarial", slopes["adversarial"], "in [0.8, 1.2]", paper="error O(tau)"),
            Check("slope_worst_case", slopes["worst_case"], "in [0.8, 1.2]", paper="error O(tau)"),
            # the returned error bar must hold for every noise within the tolerance (fails if a bar is
            # computed too small, e.g. without the value vector's error)
            Check("max_error_over_error_bar", over_bar, "<= 1", paper="—"),
            Check("n_failed_recoveries", n_failed, "== 0", paper="recovery for tau small enough"),
        ],
        figures={"error_vs_tau": fig},
        tables={"per_tau": rows},
    )


@config
class NoisyBoundConfig:
    d_min: int = param(4, 2, 64, help="smallest d of the dimension sweep (power of two)")
    d_max: int = param(32, 2, 64, help="largest d of the dimension sweep (power of two); issue 28: up to 64")
    log10_margin_min: float = param(-2.0, -4.0, 0.0, help="v scaled by 10^k for k on a grid down to this")
    n_margins: int = param(3, 2, 10, help="margins on the grid 10^0 .. 10^log10_margin_min")
    margin_d: int = param(8, 2, 64, help="dimension of the margin sweep")
    log10_tau_min: float = param(-8.0, -14.0, -2.0, help="smallest tolerance of the tau sweep (log10)")
    log10_tau_max: float = param(-4.0, -14.0, -2.0, help="largest tolerance of the tau sweep (log10)")
    n_tau: int = param(3, 1, 20, help="tolerances on the log grid")
    norm_bound: float = param(1.0, 0.05, 100.0, help="B_x, the largest token norm a query may use")
    n_seeds: int = param(3, 1, 20, help="random heads per grid point (headline claims over >= 3)")
    search_d: int = param(8, 2, 32, help="dimension of the adversary search")
    search_passes: int = param(1, 0, 5, help="sign-flip sweeps of the adversary search (3 d flips each)")

    def __post_init__(self) -> None:
        _check_pow2_range(self.d_min, self.d_max, "d_min", "d_max")
        if self.log10_tau_min > self.log10_tau_max:
            raise ValueError(f"log10_tau_min = {self.log10_tau_min}: must be <= log10_tau_max ({self.log10_tau_max})")


def _nanmax(values: Sequence[float]) -> float:
    """Largest non-NaN value (NaN when there is none); refusals are counted by their own check."""
    arr = np.asarray(list(values), dtype=np.float64)
    return float(np.nanmax(arr)) if np.any(np.isfinite(arr)) else math.nan


def _noisy_trial(
    head: Any, d: int, tau: float, kind: str, rng: np.random.Generator, norm_bound: float
) -> dict[str, Any]:
    try:
        est = recover_noisy(NoisyOracle(head, tau, rng, kind), d, tau, norm_bound=norm_bound)
    except (NoisyConditionError, NotIdentifiableError, SaturationError):
        # refused (conditions not met at this grid point, e.g. an extreme norm_bound): counted, never dropped
        nan = math.nan
        return {
            "kind": kind,
            "tau": tau,
            "refused": True,
            "rel_err_over_tau": nan,
            "bar_over_tau": nan,
            "theory_over_tau": nan,
            "error_over_bar": nan,
            "error_over_theory": nan,
            "queries_over_d2_plus_d": nan,
        }
    assert est.error_bound_A is not None
    err = float(np.linalg.norm(est.A - head.A))
    nA = float(np.linalg.norm(head.A))
    bound = noisy_error_bound(head.A, head.v, tau, norm_bound)
    return {
        "kind": kind,
        "tau": tau,
        "refused": False,
        "rel_err_over_tau": err / nA / tau,
        "bar_over_tau": est.error_bound_A / nA / tau,
        "theory_over_tau": bound / nA / tau,
        "error_over_bar": err / est.error_bound_A,
        "error_over_theory": err / bound,
        "queries_over_d2_plus_d": est.n_queries / (d * d + d),
    }


@experiment(
    "attention_queries.noisy_bound",
    claim="Under additive tolerance tau the noisy learner's error stays within its error bar and within the "
    "a-priori bound O(tau d ||C^-1|| / (margin s*^3)), polynomial in d and 1/margin, for uniform, sign and "
    "worst-case adversaries and the worst found by a sign search, with at most 2(d^2 + d) queries.",
    presets={
        "smoke": NoisyBoundConfig(d_max=8, n_margins=2, n_tau=1, n_seeds=1, search_d=4, search_passes=0),
        "quick": NoisyBoundConfig(),
        "full": NoisyBoundConfig(d_max=64, n_margins=5, log10_margin_min=-3.0, n_tau=5, n_seeds=5, search_passes=2),
    },
)
def noisy_bound(cfg: NoisyBoundConfig, rng: np.random.Generator) -> Outcome:
    with single_blas_thread():
        return _noisy_bound(cfg, rng)


def _noisy_bound(cfg: NoisyBoundConfig, rng: np.random.Generator) -> Outcome:
    rng_d, rng_m, rng_t, rng_s, rng_c = spawn(rng, 5)
    taus = np.logspace(cfg.log10_tau_min, cfg.log10_tau_max, cfg.n_tau)
    tau_mid = float(taus[len(taus) // 2])
    B = cfg.norm_bound
    # (1) dimension sweep at the middle tolerance, every adversary kind, n_seeds heads per d
    ds = _powers_of_two(cfg.d_min, cfg.d_max)
    d_rows: list[dict[str, Any]] = []
    for d, drng in zip(ds, spawn(rng_d, len(ds)), strict=True):
        for child in spawn(drng, cfg.n_seeds):
            h_rng, n_rng = spawn(child, 2)
            head = random_single_head(d, d, h_rng)
            for kind, krng in zip(NOISE_KINDS_RUN, spawn(n_rng, len(NOISE_KINDS_RUN)), strict=True):
                d_rows.append({"d": d, **_noisy_trial(head, d, tau_mid, kind, krng, B)})
    # (2) margin sweep: v scaled by 10^k (margin min |v^T c| >= ||v|| scales with it)
    scales = np.logspace(0.0, cfg.log10_margin_min, cfg.n_margins)
    m_rows: list[dict[str, Any]] = []
    dm = cfg.margin_d
    for child in spawn(rng_m, cfg.n_seeds):
        h_rng, n_rng = spawn(child, 2)
        base = random_single_head(dm, dm, h_rng)
        for lam, lrng in zip(scales, spawn(n_rng, len(scales)), strict=True):
            head = SingleHeadAttention(base.A, float(lam) * base.v)
            margin = float(np.min(np.abs(margin_directions(head.v).T @ head.v)))
            for kind, krng in zip(NOISE_KINDS_RUN, spawn(lrng, len(NOISE_KINDS_RUN)), strict=True):
                m_rows.append(
                    {"v_scale": float(lam), "margin": margin, **_noisy_trial(head, dm, tau_mid, kind, krng, B)}
                )
    # (3) tau sweep at margin_d
    t_rows: list[dict[str, Any]] = []
    for child in spawn(rng_t, cfg.n_seeds):
        h_rng, n_rng = spawn(child, 2)
        head = random_single_head(dm, dm, h_rng)
        for tau, trng in zip(taus, spawn(n_rng, len(taus)), strict=True):
            for kind, krng in zip(NOISE_KINDS_RUN, spawn(trng, len(NOISE_KINDS_RUN)), strict=True):
                t_rows.append(_noisy_trial(head, dm, float(tau), kind, krng, B))
    # (4) search for a worse adversary (sign patterns, hill climbing from the worst_case pattern)
    s_rows: list[dict[str, Any]] = []
    n_refused_search = 0
    for child in spawn(rng_s, cfg.n_seeds):
        h_rng, a_rng = spawn(child, 2)
        head = random_single_head(cfg.search_d, cfg.search_d, h_rng)
        try:
            res = search_adversary(head, head.A, cfg.search_d, tau_mid, a_rng, norm_bound=B, n_passes=cfg.search_passes)
        except (NoisyConditionError, NotIdentifiableError, SaturationError):
            n_refused_search += 1
            continue
        bound = noisy_error_bound(head.A, head.v, tau_mid, B) / float(np.linalg.norm(head.A))
        s_rows.append(
            {
                "worst_rel_err_over_tau": res.worst_error / tau_mid,
                "worst_case_kind_over_tau": res.start_error / tau_mid,
                "worst_error_over_bar": res.worst_bound_ratio,
                "worst_error_over_theory": res.worst_error / bound,
                "n_evaluations": res.n_evaluations,
            }
        )
    # (5) outside the conditions the method must refuse with the condition named, never return garbage
    c_rows: list[dict[str, Any]] = []
    h_rng, n_rng = spawn(rng_c, 2)
    base = random_single_head(8, 8, h_rng)
    cases = [
        ("tau=0.1", base, 0.1, 1.0),
        ("v*1e-3, tau=1e-4", SingleHeadAttention(base.A, 1e-3 * base.v), 1e-4, 1.0),
        ("B_x=0.1, tau=1e-4", base, 1e-4, 0.1),
    ]
    for (name, head, tau, bound_x), crng in zip(cases, spawn(n_rng, len(cases)), strict=True):
        for kind, krng in zip(NOISE_KINDS_RUN, spawn(crng, len(NOISE_KINDS_RUN)), strict=True):
            row: dict[str, Any] = {"case": name, "kind": kind}
            try:
                est = recover_noisy(NoisyOracle(head, tau, krng, kind), 8, tau, norm_bound=bound_x)
            except NoisyConditionError as exc:
                msg = str(exc)
                row.update(refused=True, names_condition=("norm" in msg or "margin" in msg), rel_err=math.nan)
            else:
                assert est.error_bound_A is not None
                err = relative_error(est.A, head.A)
                # an answer is acceptable only with a bar that covers it and says it is informative
                row.update(
                    refused=False,
                    names_condition=False,
                    rel_err=err,
                    honest=bool(np.linalg.norm(est.A - head.A) <= est.error_bound_A),
                )
            c_rows.append(row)
    silent_bad = sum(1 for r in c_rows if not r["refused"] and not r.get("honest", False))
    unnamed = sum(1 for r in c_rows if r["refused"] and not r["names_condition"])

    all_rows = d_rows + m_rows + t_rows
    n_refused = sum(r["refused"] for r in all_rows) + n_refused_search
    over_bar = _nanmax([*(r["error_over_bar"] for r in all_rows), *(r["worst_error_over_bar"] for r in s_rows)])
    over_theory = _nanmax(
        [*(r["error_over_theory"] for r in all_rows), *(r["worst_error_over_theory"] for r in s_rows)]
    )
    max_q = _nanmax([r["queries_over_d2_plus_d"] for r in all_rows])

    def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
        return float(np.polyfit(np.log10(xs), np.log10(ys), 1)[0])

    # growth exponents of the worst (over seeds and kinds) error / tau
    per_d = [_nanmax([r["rel_err_over_tau"] for r in d_rows if r["d"] == d]) for d in ds]
    per_d_bound = [_nanmax([r["theory_over_tau"] for r in d_rows if r["d"] == d]) for d in ds]
    slope_d = slope(ds, per_d) if len(ds) > 1 else math.nan
    slope_d_bound = slope(ds, per_d_bound) if len(ds) > 1 else math.nan
    inv_m = [1.0 / float(np.mean([r["margin"] for r in m_rows if r["v_scale"] == lam])) for lam in scales]
    per_m = [_nanmax([r["rel_err_over_tau"] for r in m_rows if r["v_scale"] == lam]) for lam in scales]
    per_m_bound = [_nanmax([r["theory_over_tau"] for r in m_rows if r["v_scale"] == lam]) for lam in scales]
    slope_m = slope(inv_m, per_m)
    search_gain = _nanmax([r["worst_rel_err_over_tau"] / r["worst_case_kind_over_tau"] for r in s_rows])

    fig, ax = new_figure(
        f"Method 3: error / tau against d (tau = {tau_mid:.0e}, B_x = {B:g})",
        "dimension d",
        "relative error of A / tau",
        logx=True,
        logy=True,
    )
    for kind in NOISE_KINDS_RUN:
        ax.plot(
            ds,
            [_nanmax([r["rel_err_over_tau"] for r in d_rows if r["d"] == d and r["kind"] == kind]) for d in ds],
            "o-",
            label=f"measured, {kind} (worst of {cfg.n_seeds} heads)",
        )
    ax.plot(ds, [_nanmax([r["bar_over_tau"] for r in d_rows if r["d"] == d]) for d in ds], "s--", label="error bar")
    ax.plot(ds, per_d_bound, "k-", label="a-priori bound")
    ax.legend(fontsize=7)
    fig2, ax2 = new_figure(
        f"Method 3: error / tau against 1 / margin (d = {dm})",
        "1 / margin (1 / min |v^T c|)",
        "relative error of A / tau",
        logx=True,
        logy=True,
    )
    for kind in NOISE_KINDS_RUN:
        ax2.plot(
            inv_m,
            [
                _nanmax([r["rel_err_over_tau"] for r in m_rows if r["v_scale"] == lam and r["kind"] == kind])
                for lam in scales
            ],
            "o-",
            label=f"measured, {kind}",
        )
    ax2.plot(inv_m, per_m_bound, "k-", label="a-priori bound")
    ax2.legend(fontsize=7)
    return Outcome(
        metrics={
            "max_error_over_error_bar": over_bar,
            "max_error_over_theory_bound": over_theory,
            "slope_error_over_tau_vs_d": slope_d,
            "slope_theory_bound_vs_d": slope_d_bound,
            "slope_error_vs_inv_margin": slope_m,
            "adversary_search_gain_over_worst_case": search_gain,
            "max_queries_over_d2_plus_d": max_q,
            "n_out_of_condition_silent": silent_bad,
            "n_refused_inside_conditions": n_refused,
            "n_refusals_without_condition": unnamed,
            **{f"error_over_tau_d{d}": e for d, e in zip(ds, per_d, strict=True)},
        },
        checks=[
            # fails if any adversary (incl. the searched ones) beats the returned error bar
            Check("max_error_over_error_bar", over_bar, "<= 1", paper="—"),
            # fails if the learner is worse than the a-priori polynomial bound anywhere on the grids
            Check(
                "max_error_over_theory_bound",
                over_theory,
                "<= 1",
                paper="eps accuracy with a polynomial number of queries",
            ),
            # the bound is linear in 1/margin; a quadratic dependence (slope 2) fails
            Check("slope_error_vs_inv_margin", slope_m, "in [0.8, 1.2]", paper="—"),
            # issue 28 measured d^1.5 (156 at d = 4 to 7923 at d = 64) with Method 1's directions; the bound of
            # the margin directions does not grow with d (slope_theory_bound_vs_d), so slope 1.5 fails
            Check("slope_error_over_tau_vs_d", slope_d, "< 0.5", paper="—"),
            Check("max_queries_over_d2_plus_d", max_q, "<= 2", paper="a polynomial number of queries"),
            # the grids lie inside the conditions: a refusal there is a failure of the method
            Check("n_refused_inside_conditions", n_refused, "== 0", paper="under mild norm and margin conditions"),
            # outside the conditions: refuse, naming the condition; never a silent wrong answer
            Check("n_out_of_condition_silent", silent_bad, "== 0", paper="mild norm and margin conditions"),
            Check("n_refusals_without_condition", unnamed, "== 0", paper="mild norm and margin conditions"),
        ],
        figures={"error_vs_d": fig, "error_vs_margin": fig2},
        tables={
            "d_sweep": d_rows,
            "margin_sweep": m_rows,
            "tau_sweep": t_rows,
            "adversary_search": s_rows,
            "conditions": c_rows,
        },
    )


@config
class PrecisionConfig:
    d: int = param(16, 2, 48, help="dimension of the exact-recovery instances")
    scale_big: float = param(20.0, 1.0, 100.0, help="entry scale of A of the saturating instances (issue 28: 20)")
    lr_d: int = param(32, 8, 64, help="dimension of the low-rank instance (issue 28: 32)")
    lr_rank: int = param(3, 1, 8, help="rank of the low-rank instance (issue 28: 3)")
    n_seeds: int = param(3, 1, 20, help="random heads per case")

    def __post_init__(self) -> None:
        if (2 * self.lr_rank + 2) * self.lr_d >= self.lr_d**2 + self.lr_d:
            raise ValueError(f"lr_rank = {self.lr_rank}: must be < (lr_d - 1) / 2 (else the exact method is used)")


@experiment(
    "attention_queries.precision_recovery",
    claim="With float32 and float16 oracles (the precision of real models) the learner infers the precision "
    "from the answers, sets the saturation threshold and rank tolerance from it, and recovers A to "
    "~1e-6 (float32) and ~1e-2 (float16) within its error bar; float32 rank estimation stays at (2r+2)d "
    "queries plus counted retries.",
    presets={
        "smoke": PrecisionConfig(d=8, lr_d=16, lr_rank=2, n_seeds=1),
        "quick": PrecisionConfig(),
        "full": PrecisionConfig(d=32, lr_d=64, lr_rank=4, n_seeds=5),
    },
)
def precision_recovery(cfg: PrecisionConfig, rng: np.random.Generator) -> Outcome:
    with single_blas_thread():
        return _precision_recovery(cfg, rng)


def _precision_recovery(cfg: PrecisionConfig, rng: np.random.Generator) -> Outcome:
    rows: list[dict[str, Any]] = []
    n_refused = 0
    rng_e, rng_l = spawn(rng, 2)
    for child in spawn(rng_e, cfg.n_seeds):
        for dtype, scale, hrng in zip(
            ("float32", "float32", "float16", "float16"),
            (1.0, cfg.scale_big, 1.0, cfg.scale_big),
            spawn(child, 4),
            strict=True,
        ):
            head = random_single_head(cfg.d, cfg.d, hrng, scale=scale)
            oracle = LowPrecisionHead(head.A, head.v, dtype)
            row: dict[str, Any] = {"dtype": dtype, "scale": scale}
            for prec in ("float64", "auto"):
                try:
                    est = recover_exact(CountingOracle(oracle), cfg.d, precision=prec)
                except (NoisyConditionError, NotIdentifiableError, SaturationError):
                    n_refused += 1  # counted by a check, never dropped
                    for key in ("rel_err", "queries", "error_over_bar"):
                        row[f"{key}_{prec}"] = math.nan
                    row[f"source_{prec}"] = "refused"
                    continue
                assert est.error_bound_A is not None
                # the float32 cast of A itself is part of the error: the bar is widened by it (2 eps ||A||)
                cast = float(np.linalg.norm(oracle.A.astype(oracle.dtype).astype(np.float64) - head.A))
                row[f"rel_err_{prec}"] = relative_error(est.A, head.A)
                row[f"queries_{prec}"] = est.n_queries
                row[f"error_over_bar_{prec}"] = float(np.linalg.norm(est.A - head.A)) / (est.error_bound_A + cast)
                row[f"source_{prec}"] = est.precision_source
            rows.append(row)
    lr_rows: list[dict[str, Any]] = []
    for child in spawn(rng_l, cfg.n_seeds):
        h_rng, r_rng = spawn(child, 2)
        head = random_single_head(cfg.lr_d, cfg.lr_rank, h_rng)
        oracle = LowPrecisionHead(head.A, head.v, "float32")
        for prec in ("float64", "auto"):
            try:
                est = recover_low_rank(CountingOracle(oracle), cfg.lr_d, rng=r_rng, precision=prec)
            except (NoisyConditionError, NotIdentifiableError, SaturationError):
                n_refused += prec == "auto"
                nan = math.nan
                lr_rows.append(
                    {"precision": prec, "rank": -1, "queries": nan, "queries_over_2r_plus_2_d": nan, "rel_err_A": nan}
                )
                continue
            lr_rows.append(
                {
                    "precision": prec,
                    "rank": est.rank,
                    "queries": est.n_queries,
                    "queries_over_2r_plus_2_d": est.n_queries / ((2 * cfg.lr_rank + 2) * cfg.lr_d),
                    "rel_err_A": relative_error(est.A, head.A),
                }
            )

    def worst(key: str, dtype: str) -> float:
        return _nanmax([r[key] for r in rows if r["dtype"] == dtype])

    auto_lr = [r for r in lr_rows if r["precision"] == "auto"]
    f64_lr = [r for r in lr_rows if r["precision"] == "float64"]
    rank_err = sum(r["rank"] != cfg.lr_rank for r in auto_lr)
    return Outcome(
        metrics={
            "n_refused_auto": n_refused,
            "float32_max_rel_err_auto": worst("rel_err_auto", "float32"),
            "float32_max_rel_err_float64_assumed": worst("rel_err_float64", "float32"),
            "float16_max_rel_err_auto": worst("rel_err_auto", "float16"),
            "float16_max_rel_err_float64_assumed": worst("rel_err_float64", "float16"),
            "max_error_over_bar_auto": _nanmax([r["error_over_bar_auto"] for r in rows]),
            "max_queries_over_d2_plus_d_auto": _nanmax([r["queries_auto"] for r in rows]) / (cfg.d**2 + cfg.d),
            "float32_lowrank_rank_errors_auto": rank_err,
            "float32_lowrank_max_queries_over_2r_plus_2_d_auto": _nanmax(
                [r["queries_over_2r_plus_2_d"] for r in auto_lr]
            ),
            "float32_lowrank_max_rel_err_auto": _nanmax([r["rel_err_A"] for r in auto_lr]),
            "float32_lowrank_rank_errors_float64_assumed": sum(r["rank"] != cfg.lr_rank for r in f64_lr),
            "float32_lowrank_max_queries_over_2r_plus_2_d_float64_assumed": max(
                r["queries_over_2r_plus_2_d"] for r in f64_lr
            ),
        },
        checks=[
            # targets: ~30 float32 epsilons (1.2e-7) and ~50 float16 epsilons; issue 28 measured 0.27 for float32
            # at entries ~20 with the float64 settings
            Check("n_refused_auto", n_refused, "== 0", paper="—"),
            Check("float32_max_rel_err_auto", worst("rel_err_auto", "float32"), "< 1e-5", paper="—"),
            Check("float16_max_rel_err_auto", worst("rel_err_auto", "float16"), "< 0.05", paper="—"),
            # fails if the precision-derived bars are too small for a real low-precision oracle
            Check("max_error_over_bar_auto", _nanmax([r["error_over_bar_auto"] for r in rows]), "<= 1", paper="—"),
            # issue 28: rank 25 and 1664 queries (6.5 x (2r+2)d) with the fixed 1e-8 tolerance; the schedule
            # asks each pair once plus at most one SNR re-ask (hence 2), saturation retries aside
            Check("float32_lowrank_rank_errors_auto", rank_err, "== 0", paper="rank estimated"),
            Check(
                "float32_lowrank_max_queries_over_2r_plus_2_d_auto",
                _nanmax([r["queries_over_2r_plus_2_d"] for r in auto_lr]),
                "<= 2",
                paper="O(rd) queries",
            ),
            Check("float32_lowrank_max_rel_err_auto", _nanmax([r["rel_err_A"] for r in auto_lr]), "< 1e-4", paper="—"),
        ],
        tables={"exact": rows, "low_rank": lr_rows},
    )


# ------------------------------------------------------------------------------------------ Method 4
@config
class MultiHeadConfig:
    d: int = param(8, 1, 128, help="token dimension")
    n_heads: int = param(3, 2, 32, help="heads (the construction needs two)")
    n_sequences: int = param(1000, 1, 100_000, help="brief acceptance 6: 1000 random sequences")
    max_len: int = param(10, 1, 100, help="longest sequence; brief acceptance 6: n up to 10")


@experiment(
    "attention_queries.multihead_nonidentifiable",
    claim="Multi-head attention is not identifiable: different per-head parameters give the same function.",
    presets={"quick": MultiHeadConfig(), "full": MultiHeadConfig(d=32, n_heads=8, n_sequences=10000)},
)
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
            Check("max_output_difference", diff, "< 1e-12", paper="equal functions"),
            Check("min_head_parameter_gap", gap, "> 0.1", paper="different heads"),
        ],
        figures={"outputs": fig},
    )


@config
class OneLayerConfig:
    d: int = param(8, 1, 64, help="token dimension")
    n_models: int = param(2, 1, 20, help="random one-layer models")


@experiment(
    "attention_queries.one_layer_reduction",
    claim="Given an FFN learner (assumed, as in the paper), a one-layer Transformer's A and V are recovered "
    "exactly, A with d^2 further queries.",
    presets={"quick": OneLayerConfig(), "full": OneLayerConfig(d=32, n_models=5)},
)
def one_layer_reduction(cfg: OneLayerConfig, rng: np.random.Generator) -> Outcome:
    rows: list[dict[str, Any]] = []
    for child in spawn(rng, cfg.n_models):
        model_rng, stub_rng = spawn(child, 2)
        model = random_one_layer(cfg.d, model_rng)
        est = recover_one_layer(CountingOracle(model), cfg.d, FFNLearnerStub(model, stub_rng))
        rows.append(
            {
                "rel_err_A": relative_error(est.A, model.A),
                "rel_err_V": relative_error(est.V, model.V),
                "queries": est.n_queries,
                "rescale_queries": est.n_rescale_queries,
                "stub_check_queries": est.n_stub_check_queries,
                "rel_bar_A": (est.error_bound_A or math.nan) / float(np.linalg.norm(est.A)),
            }
        )
    err_A = max(r["rel_err_A"] for r in rows)
    err_V = max(r["rel_err_V"] for r in rows)
    excess = max(r["queries"] - cfg.d**2 for r in rows)  # every call, retries included (issue 28)
    return Outcome(
        metrics={
            "max_rel_err_A": err_A,
            "max_rel_err_V": err_V,
            "query_excess_over_d2": excess,
            "max_rel_error_bar_A": max(r["rel_bar_A"] for r in rows),
        },
        checks=[
            Check("max_rel_err_A", err_A, "< 1e-8", paper="exact (given the FFN)"),
            Check("max_rel_err_V", err_V, "< 1e-10", paper="exact (given the FFN)"),
            Check("query_excess_over_d2", excess, "== 0", paper="d^2 attention queries"),
        ],
        tables={"per_model": rows},
    )
