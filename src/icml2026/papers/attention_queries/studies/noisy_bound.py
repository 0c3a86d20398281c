"""Method 3: the noisy learner's error within its error bar and the a-priori polynomial bound."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.config import config, param
from icml2026.core.plotting import new_figure

from .._threads import single_blas_thread
from ..data import random_single_head, relative_error
from ..exact import NotIdentifiableError
from ..model import SingleHeadAttention
from ..noisy import noisy_error_bound, recover_noisy, search_adversary
from ..oracle import NoisyOracle
from ..queries import NoisyConditionError, SaturationError, margin_directions
from ._grid import NOISE_KINDS_RUN, check_pow2_range, nanmax, powers_of_two
from ._preconditions import NoiseAudit, noise_checks, value_norm_check


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
        check_pow2_range(self.d_min, self.d_max, "d_min", "d_max")
        if self.log10_tau_min > self.log10_tau_max:
            raise ValueError(f"log10_tau_min = {self.log10_tau_min}: must be <= log10_tau_max ({self.log10_tau_max})")


def _noisy_trial(
    head: Any,
    d: int,
    tau: float,
    kind: str,
    rng: np.random.Generator,
    norm_bound: float,
    audits: list[tuple[NoiseAudit, bool]],
) -> dict[str, Any]:
    """One recovery; its oracle's realised noise goes to ``audits`` as (audit, recovery completed)."""
    audit = NoiseAudit(NoisyOracle(head, tau, rng, kind), tau)
    try:
        est = recover_noisy(audit, d, tau, norm_bound=norm_bound)
    except (NoisyConditionError, NotIdentifiableError, SaturationError):
        # refused (conditions not met at this grid point, e.g. an extreme norm_bound): counted, never dropped
        audits.append((audit, False))
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
    audits.append((audit, True))
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


def noisy_bound(cfg: NoisyBoundConfig, rng: np.random.Generator) -> Outcome:
    with single_blas_thread():
        return _noisy_bound(cfg, rng)


def _noisy_bound(cfg: NoisyBoundConfig, rng: np.random.Generator) -> Outcome:
    rng_d, rng_m, rng_t, rng_s, rng_c = spawn(rng, 5)
    taus = np.logspace(cfg.log10_tau_min, cfg.log10_tau_max, cfg.n_tau)
    tau_mid = float(taus[len(taus) // 2])
    B = cfg.norm_bound
    # (1) dimension sweep at the middle tolerance, every adversary kind, n_seeds heads per d
    ds = powers_of_two(cfg.d_min, cfg.d_max)
    d_rows: list[dict[str, Any]] = []
    heads: list[SingleHeadAttention] = []  # every planted head (before any scaling of v), for the preconditions
    audits: list[tuple[NoiseAudit, bool]] = []  # every NoisyOracle's realised noise, and whether it completed
    for d, drng in zip(ds, spawn(rng_d, len(ds)), strict=True):
        for child in spawn(drng, cfg.n_seeds):
            h_rng, n_rng = spawn(child, 2)
            head = random_single_head(d, d, h_rng)
            heads.append(head)
            for kind, krng in zip(NOISE_KINDS_RUN, spawn(n_rng, len(NOISE_KINDS_RUN)), strict=True):
                d_rows.append({"d": d, **_noisy_trial(head, d, tau_mid, kind, krng, B, audits)})
    # (2) margin sweep: v scaled by 10^k (margin min |v^T c| >= ||v|| scales with it)
    scales = np.logspace(0.0, cfg.log10_margin_min, cfg.n_margins)
    m_rows: list[dict[str, Any]] = []
    dm = cfg.margin_d
    for child in spawn(rng_m, cfg.n_seeds):
        h_rng, n_rng = spawn(child, 2)
        base = random_single_head(dm, dm, h_rng)
        heads.append(base)
        for lam, lrng in zip(scales, spawn(n_rng, len(scales)), strict=True):
            head = SingleHeadAttention(base.A, float(lam) * base.v)
            margin = float(np.min(np.abs(margin_directions(head.v).T @ head.v)))
            for kind, krng in zip(NOISE_KINDS_RUN, spawn(lrng, len(NOISE_KINDS_RUN)), strict=True):
                m_rows.append(
                    {"v_scale": float(lam), "margin": margin, **_noisy_trial(head, dm, tau_mid, kind, krng, B, audits)}
                )
    # (3) tau sweep at margin_d
    t_rows: list[dict[str, Any]] = []
    for child in spawn(rng_t, cfg.n_seeds):
        h_rng, n_rng = spawn(child, 2)
        head = random_single_head(dm, dm, h_rng)
        heads.append(head)
        for tau, trng in zip(taus, spawn(n_rng, len(taus)), strict=True):
            for kind, krng in zip(NOISE_KINDS_RUN, spawn(trng, len(NOISE_KINDS_RUN)), strict=True):
                t_rows.append(_noisy_trial(head, dm, float(tau), kind, krng, B, audits))
    # (4) search for a worse adversary (sign patterns, hill climbing from the worst_case pattern)
    s_rows: list[dict[str, Any]] = []
    n_refused_search = 0
    for child in spawn(rng_s, cfg.n_seeds):
        h_rng, a_rng = spawn(child, 2)
        head = random_single_head(cfg.search_d, cfg.search_d, h_rng)
        heads.append(head)
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
    heads.append(base)
    cases = [
        ("tau=0.1", base, 0.1, 1.0),
        ("v*1e-3, tau=1e-4", SingleHeadAttention(base.A, 1e-3 * base.v), 1e-4, 1.0),
        ("B_x=0.1, tau=1e-4", base, 1e-4, 0.1),
    ]
    for (name, head, tau, bound_x), crng in zip(cases, spawn(n_rng, len(cases)), strict=True):
        for kind, krng in zip(NOISE_KINDS_RUN, spawn(crng, len(NOISE_KINDS_RUN)), strict=True):
            row: dict[str, Any] = {"case": name, "kind": kind}
            try:
                audit = NoiseAudit(NoisyOracle(head, tau, krng, kind), tau)
                audits.append((audit, False))  # outside the conditions: noise bounded, not required to reach
                est = recover_noisy(audit, 8, tau, norm_bound=bound_x)
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
    over_bar = nanmax([*(r["error_over_bar"] for r in all_rows), *(r["worst_error_over_bar"] for r in s_rows)])
    over_theory = nanmax(
        [*(r["error_over_theory"] for r in all_rows), *(r["worst_error_over_theory"] for r in s_rows)]
    )
    max_q = nanmax([r["queries_over_d2_plus_d"] for r in all_rows])

    def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
        return float(np.polyfit(np.log10(xs), np.log10(ys), 1)[0])

    # growth exponents of the worst (over seeds and kinds) error / tau
    per_d = [nanmax([r["rel_err_over_tau"] for r in d_rows if r["d"] == d]) for d in ds]
    per_d_bound = [nanmax([r["theory_over_tau"] for r in d_rows if r["d"] == d]) for d in ds]
    slope_d = slope(ds, per_d) if len(ds) > 1 else math.nan
    slope_d_bound = slope(ds, per_d_bound) if len(ds) > 1 else math.nan
    inv_m = [1.0 / float(np.mean([r["margin"] for r in m_rows if r["v_scale"] == lam])) for lam in scales]
    per_m = [nanmax([r["rel_err_over_tau"] for r in m_rows if r["v_scale"] == lam]) for lam in scales]
    per_m_bound = [nanmax([r["theory_over_tau"] for r in m_rows if r["v_scale"] == lam]) for lam in scales]
    slope_m = slope(inv_m, per_m)
    search_gain = nanmax([r["worst_rel_err_over_tau"] / r["worst_case_kind_over_tau"] for r in s_rows])

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
            [nanmax([r["rel_err_over_tau"] for r in d_rows if r["d"] == d and r["kind"] == kind]) for d in ds],
            "o-",
            label=f"measured, {kind} (worst of {cfg.n_seeds} heads)",
        )
    ax.plot(ds, [nanmax([r["bar_over_tau"] for r in d_rows if r["d"] == d]) for d in ds], "s--", label="error bar")
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
                nanmax([r["rel_err_over_tau"] for r in m_rows if r["v_scale"] == lam and r["kind"] == kind])
                for lam in scales
            ],
            "o-",
            label=f"measured, {kind}",
        )
    ax2.plot(inv_m, per_m_bound, "k-", label="a-priori bound")
    ax2.legend(fontsize=7)
    # Preconditions: the planted heads are identifiable (the margin sweep then scales v on purpose), and the
    # noisy oracles' noise is the configured tolerance (within tau everywhere, reaching tau / 2 in every
    # completed recovery). The adversary search's SignPatternAdversary adds +-tau by construction.
    pre = [value_norm_check(heads), *noise_checks([a for a, _ in audits], [a for a, done in audits if done])]
    return Outcome(
        metrics={
            **{c.name: c.value for c in pre},
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
            *pre,
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
