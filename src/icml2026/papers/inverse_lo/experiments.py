"""Registered experiments of inverse_lo (finite regret on M-convex sets against ONS / OGD / cutting plane)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.plotting import new_figure, range_yerr
from icml2026.core.progress import track
from icml2026.core.stats import paired_difference

from .baselines import CuttingPlaneLearner, OnlineGradientLearner, OnlineNewtonStepLearner
from .data import (
    ENVIRONMENTS,
    make_instances,
    min_coordinate_gap,
    sample_w_star,
    segment_instances,
    w_star_with_gap,
)
from .feasible_sets import FeasibleSet
from .learner import CentroidLearner, Learner, PlayTrace, play
from .linear_extensions import mistake_bound
from .lower_bound import expected_lower_bound, lower_bound_instance, play_adaptive
from .regime import regime_checks

LEARNERS = ("centroid", "ons", "ogd", "cp")
_LABELS = {
    "centroid": "centroid (ours)",
    "robust": "robust centroid (ours)",
    "ons": "ONS",
    "ogd": "OGD",
    "cp": "cutting plane",
}


def _make_learner(
    name: str, d: int, instances: list[FeasibleSet], cp_samples: int, rng: np.random.Generator
) -> Learner:
    """Baselines get K = the largest action-set diameter bound of the run (brief: K = max ||x - x'||)."""
    if name == "centroid":
        return CentroidLearner(d)
    if name == "robust":
        return CentroidLearner(d, robust=True)
    k_diam = max(fs.diameter_bound() for fs in instances)
    if name == "ons":
        return OnlineNewtonStepLearner(d, action_diameter=k_diam)
    if name == "ogd":
        return OnlineGradientLearner(d, horizon=len(instances), action_diameter=k_diam)
    if name == "cp":
        return CuttingPlaneLearner(d, n_samples=cp_samples, rng=rng)
    raise ValueError(f"unknown learner {name!r}")


def _ratio(num: float, den: float) -> float:
    """num / den; a zero denominator gives inf (num > 0) or NaN (0 / 0: no comparison, the check fails)."""
    if den > 0:
        return num / den
    return math.inf if num > 0 else math.nan


def _mean_curve_figure(
    title: str, curves: dict[str, np.ndarray], logx: bool = True, symlog: bool = False
) -> Any:
    fig, ax = new_figure(title, "round t", "cumulative regret (mean over seeds)", logx=logx)
    if symlog:  # the cutting plane's linear regret would flatten every other curve
        ax.set_yscale("symlog", linthresh=1.0)
    for name, runs in curves.items():
        t = np.arange(1, runs.shape[1] + 1)
        mean = runs.mean(axis=0)
        ax.plot(t, mean, label=_LABELS.get(name, name))
        if runs.shape[0] > 1:
            ax.fill_between(t, runs.min(axis=0), runs.max(axis=0), alpha=0.15)
    ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------------------------------------------


_ENVS = tuple(sorted(ENVIRONMENTS))
#: values of a config's ``control`` field: the method itself, or the planted / null control of its comparisons
CONTROLS = ("none", "planted", "null")
# Shared bounds. d <= 18: the exact centroid (DP over order ideals, O(d 2^d)); the sampling route beyond is
# not what these experiments measure. Rounds and seeds: the upper ends still run in minutes on a CPU.
_D_MAX = 18
_ROUNDS_MAX = 20_000
_SEEDS_MAX = 20


@config
class FiniteRegretConfig:
    d: int = param(10, 2, _D_MAX, help="dimension; brief: d = 10 for the headline comparison")
    n_rounds: int = param(2000, 2, _ROUNDS_MAX, help="rounds T; issue: 2000 (quick), up to 10^4 (full)")
    n_seeds: int = param(5, 1, _SEEDS_MAX, help="seeds. Deviation: brief asks 10 seeds; the issue 5")
    envs: tuple[str, ...] = param(("uniform", "box_sum"), choices=_ENVS, min_len=1, max_len=len(_ENVS),
                                  help="feasible-set families")
    learners: tuple[str, ...] = param(LEARNERS, choices=LEARNERS, min_len=1, max_len=len(LEARNERS),
                                      help="learners; must include 'centroid'")
    cp_samples_per_dim: int = param(1000, 1, 10_000,
                                    help="cutting-plane samples per dimension. Deviation: notebook 10^4")
    control: str = param("none", choices=CONTROLS,
                         help="comparator arms (ons, ogd) replaced by a control: 'planted' = the centroid "
                         "learner shown the feedback of a random half of the rounds; 'null' = the centroid "
                         "learner on an independent w* and instance stream")

    def __post_init__(self) -> None:
        if "centroid" not in self.learners:
            raise ValueError(f"learners must include 'centroid', got {self.learners}")


class _HalfFeedbackLearner:
    """Planted control: a learner that sees the feedback of a known fraction of the rounds only.

    Wrapping the centroid learner, it makes (in expectation) about ``1 / keep`` times as many wrong rounds:
    every informative round it skips is repeated later. With ``keep = 1/2`` that is a ratio of ~2, below
    the reference figures (ONS / ours: ~18 / ~5 wrong rounds in the prior work's run, regret 4.4 / 2.0 in
    ours), so its power is a conservative one.
    """

    def __init__(self, inner: Learner, keep: float, rng: np.random.Generator):
        self.inner, self.keep, self.rng = inner, keep, rng
        self.d = inner.d
        self.n_resets = 0  # the centroid learner (not robust) never resets

    def recommend(self, feasible_set: FeasibleSet) -> np.ndarray:
        return self.inner.recommend(feasible_set)

    def observe(self, feasible_set: FeasibleSet, x_observed: np.ndarray) -> None:
        if self.rng.random() < self.keep:
            self.inner.observe(feasible_set, x_observed)


#: planted control: fraction of rounds whose feedback the planted comparator sees
_PLANTED_KEEP = 0.5


def _log_ratio_low(a: list[float], b: list[float]) -> float:
    """Lower end of the 95 % paired-t interval of the mean of log((1 + a) / (1 + b)) over seeds.

    A comparison "a > b over seeds" passes when this is > 0: a one-sided test at 2.5 %, so that two arms of
    one method (the null control) pass it in about 1 run in 40, while the earlier "ratio of means > 1"
    passed about half of them. On the log scale one seed with a very large baseline regret (OGD on a
    box-sum seed: the raw paired-t interval reached -56) does not swamp the others; the 1 keeps a run
    with no regret (or no wrong round) finite.
    """
    la = np.log1p(np.asarray(a, dtype=float))
    lb = np.log1p(np.asarray(b, dtype=float))
    return paired_difference(la, lb).low


@experiment(
    "inverse_lo.finite_regret",
    claim="On M-convex action sets the centroid learner stops erring after at most ln(d!)/ln(e/(e-1)) "
    "wrong rounds (finite regret), with fewer wrong rounds and lower regret than ONS.",
    presets={
        # 10 seeds (5 until issue 55): with 5, the paired comparison had power 0.6 on the planted control
        "quick": FiniteRegretConfig(n_seeds=10, learners=("centroid", "ons", "ogd")),
        "full": FiniteRegretConfig(n_rounds=10_000, n_seeds=5, envs=("uniform", "box_sum", "graphic")),
        # smoke: the same code path in a few seconds (contract and CLI tests); its checks may fail.
        "smoke": FiniteRegretConfig(d=4, n_rounds=100, n_seeds=2, learners=("centroid", "ons", "ogd")),
        # controls of the comparative checks (icml2026 controls): the quick configuration at 500 rounds (the
        # centroid's wrong rounds end within ~200 at d = 10), comparators replaced as `control` says
        "planted": FiniteRegretConfig(n_rounds=500, n_seeds=10, learners=("centroid", "ons", "ogd"),
                                      control="planted"),
        "null": FiniteRegretConfig(n_rounds=500, n_seeds=10, learners=("centroid", "ons", "ogd"), control="null"),
    },
)
def finite_regret(cfg: FiniteRegretConfig, rng: np.random.Generator) -> Outcome:
    bound = mistake_bound(cfg.d)
    half = cfg.n_rounds // 2
    metrics: dict[str, float] = {"bound": bound}
    checks: list[Check] = []
    figures = {}
    rows = []
    w_stars: list[np.ndarray] = []
    first_sets: list[FeasibleSet] = []
    # the control streams are spawned from their own generator, so the method's runs are unchanged by them
    env_rngs = spawn(rng, len(cfg.envs) + 1)
    control_rng = env_rngs.pop()
    for env, env_rng in zip(cfg.envs, env_rngs, strict=True):
        curves: dict[str, list[np.ndarray]] = {name: [] for name in cfg.learners}
        wrong: dict[str, list[int]] = {name: [] for name in cfg.learners}
        for seed_rng in track(spawn(env_rng, cfg.n_seeds), f"finite regret: {env} seeds", total=cfg.n_seeds):
            w_star = sample_w_star(cfg.d, seed_rng)
            instances = make_instances(env, cfg.d, cfg.n_rounds, seed_rng)
            w_stars.append(w_star)
            first_sets.append(instances[0])
            for name in cfg.learners:
                if cfg.control != "none" and name in ("ons", "ogd"):
                    trace = _control_trace(cfg, env, w_star, instances, control_rng)
                else:
                    learner = _make_learner(name, cfg.d, instances, cfg.cp_samples_per_dim * cfg.d, seed_rng)
                    trace = play(learner, w_star, instances)
                curves[name].append(trace.cumulative_regret)
                wrong[name].append(trace.n_wrong)
        runs = {name: np.array(c) for name, c in curves.items()}
        for name in cfg.learners:
            final = runs[name][:, -1]
            metrics[f"{env}_{name}_regret_mean"] = float(final.mean())
            metrics[f"{env}_{name}_wrong_mean"] = float(np.mean(wrong[name]))
            metrics[f"{env}_{name}_wrong_max"] = float(np.max(wrong[name]))
            metrics[f"{env}_{name}_regret_second_half_mean"] = float((final - runs[name][:, half - 1]).mean())
            rows.append(
                {
                    "env": env,
                    "learner": name,
                    "wrong_mean": float(np.mean(wrong[name])),
                    "wrong_max": int(np.max(wrong[name])),
                    "regret_T_mean": float(final.mean()),
                    f"regret_t{half}_mean": float(runs[name][:, half - 1].mean()),
                }
            )
        cen = runs["centroid"]
        flat = int(np.sum(cen[:, half - 1] == cen[:, -1]))
        checks.append(
            Check(
                f"{env}_centroid_wrong_max",
                metrics[f"{env}_centroid_wrong_max"],
                f"<= {bound:.4f}",
                paper=f"<= ln(d!)/ln(e/(e-1)) = {bound:.1f}",
            )
        )
        checks.append(
            Check(
                f"{env}_centroid_flat_regret_seeds",
                flat,
                f"== {cfg.n_seeds}",
                paper=f"regret constant after the last wrong round (t={half}..{cfg.n_rounds})",
            )
        )
        # Comparisons over seeds, paired (same w* and instances): the lower end of the 95 % paired-t interval
        # of log((1 + baseline) / (1 + ours)) must be > 0. Deviation (issue 55): this replaced "ratio of means
        # > 1", which two arms of one method pass about half the time; the ratios stay as metrics.
        for base in ("ons", "ogd"):
            if base in cfg.learners:
                metrics[f"{env}_{base}_over_centroid_regret"] = _ratio(
                    metrics[f"{env}_{base}_regret_mean"], metrics[f"{env}_centroid_regret_mean"])
                checks.append(
                    Check(
                        f"{env}_{base}_over_centroid_regret_log_low95",
                        _log_ratio_low(list(runs[base][:, -1]), list(cen[:, -1])),
                        "> 0",
                        paper="ours lower (O(d log d) vs O(d log T) / O(sqrt T))",
                        comparative=True,
                    )
                )
        if "ons" in cfg.learners:
            metrics[f"{env}_ons_over_centroid_wrong"] = _ratio(
                metrics[f"{env}_ons_wrong_mean"], metrics[f"{env}_centroid_wrong_mean"])
            checks.append(
                Check(
                    f"{env}_ons_over_centroid_wrong_log_low95",
                    _log_ratio_low([float(v) for v in wrong["ons"]], [float(v) for v in wrong["centroid"]]),
                    "> 0",
                    paper="ours fewer (prior-work reference run: ~18 vs ~5)",
                    comparative=True,
                )
            )
        figures[f"regret_vs_t_{env}"] = _mean_curve_figure(
            f"{env}, d={cfg.d}: cumulative regret ({cfg.n_seeds} seeds, band = min..max)", runs, symlog=True
        )
    checks.extend(regime_checks(w_stars, first_sets, control_rng, metrics))
    return Outcome(metrics=metrics, checks=checks, figures=figures, tables={"per_learner": rows})


def _control_trace(
    cfg: FiniteRegretConfig, env: str, w_star: np.ndarray, instances: list[FeasibleSet], rng: np.random.Generator
) -> PlayTrace:
    """A comparator arm of a control run (``cfg.control`` 'planted' or 'null'); see FiniteRegretConfig."""
    if cfg.control == "planted":
        return play(_HalfFeedbackLearner(CentroidLearner(cfg.d), _PLANTED_KEEP, rng), w_star, instances)
    # null: the same method on an independent w* and instance stream of the same distribution
    return play(CentroidLearner(cfg.d), sample_w_star(cfg.d, rng), make_instances(env, cfg.d, cfg.n_rounds, rng))


# ---------------------------------------------------------------------------------------------------
@config
class WrongVsDConfig:
    dims: tuple[int, ...] = param((4, 6, 8, 10, 12), 2, _D_MAX, min_len=1, max_len=17,
                                  help="dimensions (exact centroid); brief: d in {6, 8, 10, 12, 16}")
    n_rounds: int = param(300, 1, _ROUNDS_MAX, help="rounds; wrong rounds saturate within a few hundred")
    n_seeds: int = param(3, 1, _SEEDS_MAX, help="seeds per d")
    env: str = param("uniform", choices=_ENVS, help="feasible-set family")
    with_ons: bool = True


@experiment(
    "inverse_lo.wrong_vs_d",
    claim="The centroid learner's number of wrong rounds stays below ln(d!)/ln(e/(e-1)) = O(d log d) "
    "for every d.",
    presets={
        "quick": WrongVsDConfig(),
        "full": WrongVsDConfig(dims=(4, 6, 8, 10, 12, 14, 16), n_rounds=2000, n_seeds=5),
        "smoke": WrongVsDConfig(dims=(3, 4), n_rounds=50, n_seeds=2),
    },
)
def wrong_vs_d(cfg: WrongVsDConfig, rng: np.random.Generator) -> Outcome:
    names = ("centroid", "ons") if cfg.with_ons else ("centroid",)
    wrong = {name: np.zeros((len(cfg.dims), cfg.n_seeds)) for name in names}
    bounds = np.array([mistake_bound(d) for d in cfg.dims])
    d_rngs = spawn(rng, len(cfg.dims) + 1)
    regime_rng = d_rngs.pop()  # its own stream: the runs are those of the code before the preconditions
    dims = list(zip(cfg.dims, d_rngs, strict=True))
    w_stars: list[np.ndarray] = []
    first_sets: list[FeasibleSet] = []
    for k, (d, d_rng) in enumerate(track(dims, "wrong vs d: d")):
        for s, seed_rng in enumerate(spawn(d_rng, cfg.n_seeds)):
            w_star = sample_w_star(d, seed_rng)
            instances = make_instances(cfg.env, d, cfg.n_rounds, seed_rng)
            w_stars.append(w_star)
            first_sets.append(instances[0])
            for name in names:
                wrong[name][k, s] = play(
                    _make_learner(name, d, instances, 1, seed_rng), w_star, instances
                ).n_wrong
    metrics: dict[str, float] = {}
    rows = []
    for k, d in enumerate(cfg.dims):
        metrics[f"d{d}_bound"] = float(bounds[k])
        for name in names:
            metrics[f"d{d}_{name}_wrong_mean"] = float(wrong[name][k].mean())
            metrics[f"d{d}_{name}_wrong_max"] = float(wrong[name][k].max())
        rows.append(
            {
                "d": d,
                "bound": float(bounds[k]),
                **{f"{n}_wrong_mean": float(wrong[n][k].mean()) for n in names},
                **{f"{n}_wrong_max": int(wrong[n][k].max()) for n in names},
            }
        )
    violations = int(np.sum(wrong["centroid"] > bounds[:, None]))
    worst_ratio = float((wrong["centroid"].max(axis=1) / bounds).max())
    metrics["centroid_worst_wrong_over_bound"] = worst_ratio
    fig, ax = new_figure(
        f"wrong rounds vs d ({cfg.env}, T={cfg.n_rounds}, {cfg.n_seeds} seeds)",
        "dimension d",
        "number of wrong rounds",
    )
    ax.plot(cfg.dims, bounds, "k--", label="bound ln(d!)/ln(e/(e-1))")
    for name in names:
        ax.errorbar(
            cfg.dims,
            wrong[name].mean(axis=1),
            yerr=range_yerr(wrong[name].mean(axis=1), wrong[name].min(axis=1), wrong[name].max(axis=1)),
            marker="o",
            capsize=3,
            label=_LABELS[name],
        )
    ax.legend(fontsize=8)
    checks = [
        Check("centroid_runs_over_bound", violations, "== 0", paper="wrong rounds <= ln(d!)/ln(e/(e-1))"),
        Check("centroid_worst_wrong_over_bound", worst_ratio, "<= 1", paper="<= 1"),
        *regime_checks(w_stars, first_sets, regime_rng, metrics),
    ]
    return Outcome(metrics=metrics, checks=checks, figures={"wrong_vs_d": fig}, tables={"per_d": rows})


# ---------------------------------------------------------------------------------------------------
@config
class CorruptionConfig:
    d: int = param(10, 2, _D_MAX, help="dimension")
    n_rounds: int = param(600, 1, _ROUNDS_MAX, help="rounds; brief: T = 5000 (full)")
    n_seeds: int = param(3, 1, _SEEDS_MAX, help="seeds per C")
    corruptions: tuple[int, ...] = param((0, 5, 20), 0, _ROUNDS_MAX, min_len=1, max_len=10,
                                         help="numbers of corrupted rounds C (each <= n_rounds); issue: 0, 5, 20")
    env: str = param("uniform", choices=_ENVS, help="feasible-set family")
    corruption: str = param("worst", choices=("worst", "random"),
                            help="corrupted action. Deviation: 'random' = a random vertex, not uniform")
    with_ons: bool = True

    def __post_init__(self) -> None:
        if max(self.corruptions) > self.n_rounds:
            raise ValueError(
                f"corruptions must be integers in [0, n_rounds = {self.n_rounds}], got {self.corruptions}"
            )


@experiment(
    "inverse_lo.corruption",
    claim="With C corrupted rounds (C unknown) the robust centroid learner resets at most C times and makes "
    "at most (C+1) ln(d!)/ln(e/(e-1)) + C wrong rounds.",
    presets={
        "quick": CorruptionConfig(),
        "full": CorruptionConfig(n_rounds=5000, n_seeds=5),
        "smoke": CorruptionConfig(d=4, n_rounds=60, n_seeds=2, corruptions=(0, 2)),
    },
)
def corruption(cfg: CorruptionConfig, rng: np.random.Generator) -> Outcome:
    names = ("robust", "centroid", "ons") if cfg.with_ons else ("robust", "centroid")
    metrics: dict[str, float] = {}
    checks: list[Check] = []
    rows = []
    fig, ax = new_figure(
        f"corruption ({cfg.env}, d={cfg.d}, {cfg.corruption} action)",
        "round t",
        "cumulative regret (mean over seeds)",
        logx=True,
    )
    c_rngs = spawn(rng, len(cfg.corruptions) + 1)
    regime_rng = c_rngs.pop()  # its own stream: the runs are those of the code before the preconditions
    levels = list(zip(cfg.corruptions, c_rngs, strict=True))
    w_stars: list[np.ndarray] = []
    first_sets: list[FeasibleSet] = []
    for c_val, c_rng in track(levels, "corruption levels"):
        bound = mistake_bound(cfg.d, c_val)
        traces: dict[str, list[PlayTrace]] = {n: [] for n in names}
        for seed_rng in spawn(c_rng, cfg.n_seeds):
            w_star = sample_w_star(cfg.d, seed_rng)
            instances = make_instances(cfg.env, cfg.d, cfg.n_rounds, seed_rng)
            w_stars.append(w_star)
            first_sets.append(instances[0])
            rounds = np.sort(seed_rng.choice(cfg.n_rounds, size=c_val, replace=False))
            for name in names:
                learner = _make_learner(name, cfg.d, instances, 1, seed_rng)
                traces[name].append(
                    play(learner, w_star, instances, rounds.tolist(), corruption=cfg.corruption, rng=seed_rng)
                )
        for name in names:
            wrong = np.array([tr.n_wrong for tr in traces[name]])
            resets = np.array([tr.n_resets for tr in traces[name]])
            regret = np.array([tr.total_regret for tr in traces[name]])
            metrics[f"C{c_val}_{name}_wrong_max"] = float(wrong.max())
            metrics[f"C{c_val}_{name}_wrong_mean"] = float(wrong.mean())
            metrics[f"C{c_val}_{name}_regret_mean"] = float(regret.mean())
            metrics[f"C{c_val}_{name}_resets_max"] = float(resets.max())
            rows.append(
                {
                    "C": c_val,
                    "learner": name,
                    "bound": bound,
                    "wrong_mean": float(wrong.mean()),
                    "wrong_max": int(wrong.max()),
                    "resets_max": int(resets.max()),
                    "regret_mean": float(regret.mean()),
                }
            )
        t_axis = np.arange(1, cfg.n_rounds + 1)
        color = f"C{len(ax.get_lines()) // len(names)}"
        for name, style in zip(names, ("-", "--", ":"), strict=False):
            curve = np.array([tr.cumulative_regret for tr in traces[name]]).mean(axis=0)
            label = "non-robust centroid" if name == "centroid" else _LABELS[name]
            ax.plot(t_axis, curve, style, color=color, label=f"{label}, C={c_val}")
        checks.append(
            Check(
                f"C{c_val}_robust_resets_max",
                metrics[f"C{c_val}_robust_resets_max"],
                f"<= {c_val}",
                paper="#resets <= C",
            )
        )
        checks.append(
            Check(
                f"C{c_val}_robust_wrong_max",
                metrics[f"C{c_val}_robust_wrong_max"],
                f"<= {bound:.4f}",
                paper=f"<= (C+1) ln(d!)/ln(e/(e-1)) + C = {bound:.1f}",
            )
        )
    ax.set_yscale("symlog", linthresh=1.0)  # the non-robust learner's linear regret dwarfs the others
    ax.legend(fontsize=6, ncol=1)
    checks.extend(regime_checks(w_stars, first_sets, regime_rng, metrics))
    return Outcome(
        metrics=metrics, checks=checks, figures={"regret_under_corruption": fig}, tables={"per_C": rows}
    )


# ---------------------------------------------------------------------------------------------------
@config
class GapSweepConfig:
    d: int = param(10, 2, _D_MAX, help="dimension")
    n_rounds: int = param(500, 1, _ROUNDS_MAX, help="rounds; full: 5000")
    n_seeds: int = param(3, 1, _SEEDS_MAX, help="seeds")
    # (0, 1e3]: gaps below ~1e-12 of the typical gap 1..2 vanish in float64 after normalisation.
    deltas: tuple[float, ...] = param((1.0, 1e-1, 1e-2, 1e-3), 1e-12, 1e3, min_len=1, max_len=20,
                                      help="minimum coordinate gaps of w*; issue: 1, 1e-1, 1e-2, 1e-3")
    env: str = param("uniform", choices=_ENVS, help="feasible-set family")


@experiment(
    "inverse_lo.gap_sweep",
    claim="The centroid learner's wrong rounds stay under the gap-free bound ln(d!)/ln(e/(e-1)) however "
    "small the minimum coordinate gap delta of w* is; ONS's wrong rounds and regret are reported per delta.",
    presets={
        "quick": GapSweepConfig(),
        "full": GapSweepConfig(n_rounds=5000, n_seeds=5),
        "smoke": GapSweepConfig(d=4, n_rounds=60, n_seeds=2, deltas=(1.0, 1e-2)),
    },
)
def gap_sweep(cfg: GapSweepConfig, rng: np.random.Generator) -> Outcome:
    bound = mistake_bound(cfg.d)
    names = ("centroid", "ons")
    wrong = {n: np.zeros((len(cfg.deltas), cfg.n_seeds)) for n in names}
    regret = {n: np.zeros((len(cfg.deltas), cfg.n_seeds)) for n in names}
    gaps = np.zeros((len(cfg.deltas), cfg.n_seeds))
    seed_rngs = spawn(rng, cfg.n_seeds + 1)
    regime_rng = seed_rngs.pop()  # its own stream: the runs are those of the code before the preconditions
    w_stars: list[np.ndarray] = []
    first_sets: list[FeasibleSet] = []
    for s, seed_rng in enumerate(track(seed_rngs, "gap sweep seeds", total=cfg.n_seeds)):
        instances = make_instances(cfg.env, cfg.d, cfg.n_rounds, seed_rng)
        first_sets.append(instances[0])
        w_seed = int(seed_rng.integers(2**32))
        for k, delta in enumerate(cfg.deltas):
            # Same instances and the same order of w*'s coordinates for every delta; only the gaps change.
            w_star = w_star_with_gap(cfg.d, float(delta), np.random.default_rng(w_seed))
            gaps[k, s] = min_coordinate_gap(w_star)
            w_stars.append(w_star)
            for name in names:
                tr = play(_make_learner(name, cfg.d, instances, 1, seed_rng), w_star, instances)
                wrong[name][k, s] = tr.n_wrong
                regret[name][k, s] = tr.total_regret
    metrics: dict[str, float] = {"bound": bound}
    rows = []
    checks = []
    for k, delta in enumerate(cfg.deltas):
        tag = f"delta{delta:g}"
        metrics[f"{tag}_min_gap_normalised"] = float(gaps[k].mean())
        for name in names:
            metrics[f"{tag}_{name}_wrong_mean"] = float(wrong[name][k].mean())
            metrics[f"{tag}_{name}_wrong_max"] = float(wrong[name][k].max())
            metrics[f"{tag}_{name}_regret_mean"] = float(regret[name][k].mean())
        rows.append(
            {
                "delta": float(delta),
                "min_gap_normalised": float(gaps[k].mean()),
                **{f"{n}_wrong_mean": float(wrong[n][k].mean()) for n in names},
                **{f"{n}_regret_mean": float(regret[n][k].mean()) for n in names},
            }
        )
        checks.append(
            Check(
                f"{tag}_centroid_wrong_max",
                metrics[f"{tag}_centroid_wrong_max"],
                f"<= {bound:.4f}",
                paper=f"<= {bound:.1f} for every gap",
            )
        )
    # On M-convex sets the feedback is purely ordinal, so any learner driven by it sees the same rounds for
    # every delta with the same order of w*; this spread measures that (0 = gap-invariant).
    metrics["ons_wrong_spread_over_delta"] = float(np.ptp(wrong["ons"], axis=0).max())
    metrics["centroid_wrong_spread_over_delta"] = float(np.ptp(wrong["centroid"], axis=0).max())
    checks.extend(regime_checks(w_stars, first_sets, regime_rng, metrics))
    xs = np.array(cfg.deltas, dtype=float)
    fig, ax = new_figure(
        f"gap sweep ({cfg.env}, d={cfg.d}, T={cfg.n_rounds})",
        "minimum gap delta (relative)",
        "wrong rounds (mean, band = min..max)",
        logx=True,
    )
    ax.axhline(bound, color="k", ls="--", label="bound ln(d!)/ln(e/(e-1))")
    for name in names:
        ax.plot(xs, wrong[name].mean(axis=1), marker="o", label=f"{_LABELS[name]} wrong rounds")
        ax.fill_between(xs, wrong[name].min(axis=1), wrong[name].max(axis=1), alpha=0.15)
    ax2 = ax.twinx()
    for name in names:
        ax2.plot(xs, regret[name].mean(axis=1), ls=":", marker="s", label=f"{_LABELS[name]} regret")
    ax2.set_ylabel("final regret (mean, dotted)")
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    labels = ax.get_legend_handles_labels()[1] + ax2.get_legend_handles_labels()[1]
    ax.legend(handles, labels, fontsize=7, loc="center left")
    return Outcome(metrics=metrics, checks=checks, figures={"gap_sweep": fig}, tables={"per_delta": rows})


# ---------------------------------------------------------------------------------------------------
@config
class SegmentConfig:
    n: int = param(2, 1, 50, help="dimension; notebook: n = 2")
    # >= 100: the growth check compares the regret at T with that at T / 10.
    n_rounds: int = param(10_000, 100, 50_000, help="rounds T; notebook: 10^4")
    n_trials: int = param(5, 1, _SEEDS_MAX, help="trials; notebook: 10")
    cp_samples_per_dim: int = param(10_000, 1, 20_000, help="cutting-plane samples per dimension; notebook: 10^4")
    learners: tuple[str, ...] = param(("ons", "ogd", "cp"), choices=("ons", "ogd", "cp"), min_len=2, max_len=3,
                                      help="learners; must contain 'ons' and 'ogd'")

    def __post_init__(self) -> None:
        if not {"ons", "ogd"} <= set(self.learners):
            raise ValueError(f"learners must contain 'ons' and 'ogd', got {self.learners}")


@experiment(
    "inverse_lo.notebook_segment",
    claim="On the official notebook's two-point segment environment ONS's regret grows logarithmically in T "
    "and stays below OGD's (baseline sanity check).",
    presets={
        # 10 trials (the notebook's count; 3 until issue 55): with 3, seed 1 gave a growth ratio of 2.63
        "quick": SegmentConfig(n_trials=10, learners=("ons", "ogd")),
        "full": SegmentConfig(n_trials=10),
        "smoke": SegmentConfig(n_rounds=500, n_trials=2, learners=("ons", "ogd")),
    },
)
def notebook_segment(cfg: SegmentConfig, rng: np.random.Generator) -> Outcome:
    names = cfg.learners
    curves: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for trial_rng in track(spawn(rng, cfg.n_trials), "notebook segment trials", total=cfg.n_trials):
        w_star = sample_w_star(cfg.n, trial_rng) if cfg.n > 1 else np.ones(1)
        instances = segment_instances(cfg.n, cfg.n_rounds, trial_rng)
        for name in names:
            if name == "ons":
                learner: Learner = OnlineNewtonStepLearner(cfg.n, action_diameter=2.0)  # notebook: K = 2
            elif name == "ogd":
                learner = OnlineGradientLearner(cfg.n, horizon=cfg.n_rounds, action_diameter=2.0)
            else:
                learner = CuttingPlaneLearner(cfg.n, n_samples=cfg.cp_samples_per_dim * cfg.n, rng=trial_rng)
            curves[name].append(play(learner, w_star, instances).cumulative_regret)
    runs = {n: np.array(c) for n, c in curves.items()}
    t_end, t_tenth = cfg.n_rounds, cfg.n_rounds // 10
    metrics: dict[str, float] = {}
    for name in names:
        metrics[f"{name}_regret_mean"] = float(runs[name][:, -1].mean())
        metrics[f"{name}_regret_sd"] = float(runs[name][:, -1].std())
        metrics[f"{name}_growth_T_over_T10"] = float(
            runs[name][:, t_end - 1].mean() / max(runs[name][:, t_tenth - 1].mean(), 1e-12)
        )
    metrics["ons_regret_at_T10_mean"] = float(runs["ons"][:, t_tenth - 1].mean())
    checks = [
        # Deviation (issue 55): a control (shown, not counted) since issue 55. The notebook's own effect (ONS
        # 7.81 vs OGD 8.46, a ratio of 0.92) is far inside the trial spread (our sd 4.3 / 6.2 over 10
        # trials), so no run of 3-10 trials can decide it with power 0.8; it is a prior work's figure, not a
        # claim of this paper, and was a check "< 1" on the ratio of means until then.
        Check(
            "ons_over_ogd_regret",
            _ratio(metrics["ons_regret_mean"], metrics["ogd_regret_mean"]),
            "< 1",
            paper="ONS 7.81 vs OGD 8.46 (notebook, 10 trials)",
            role="control",
        ),
        # log growth from T/10 to T gives ln(T)/ln(T/10) = 1.33 at T = 10^4; sqrt growth would give 3.16.
        Check("ons_growth_T_over_T10", metrics["ons_growth_T_over_T10"], "< 2", paper="O(d log T)"),
        # the growth ratio is only defined when ONS has erred by T/10 (else it is x / 1e-12)
        Check("ons_regret_at_T10_mean", metrics["ons_regret_at_T10_mean"], "> 0", role="precondition"),
    ]
    fig = _mean_curve_figure(f"notebook segment, n={cfg.n} ({cfg.n_trials} trials)", runs)
    return Outcome(metrics=metrics, checks=checks, figures={"segment_regret": fig})


# ---------------------------------------------------------------------------------------------------
LOWER_LEARNERS = ("centroid", "robust", "ons", "ogd", "cp")
# Deviation: the paper's constant is not available to us; c = 1/4 is this family's expectation
# floor(d/2)/2 ~ d/4 for ANY learner, and the check uses half of it so that seed noise cannot flip it
# (pooled over all d and seeds, the expected margin is >= 3.9 standard deviations in the quick preset).
LOWER_C = 0.25
LOWER_C_CHECK = 0.125


@config
class LowerBoundConfig:
    dims: tuple[int, ...] = param((4, 6, 8, 10, 12), 2, _D_MAX, min_len=1, max_len=17,
                                  help="dimensions (exact centroid for d <= 18)")
    n_tail: int = param(200, 0, _ROUNDS_MAX, help="random rounds of family env after the floor(d/2) pair rounds")
    n_seeds: int = param(3, 1, _SEEDS_MAX, help="seeds per d (one w* and one instance sequence each)")
    env: str = param("uniform", choices=_ENVS, help="family of the rounds after the pair rounds")
    learners: tuple[str, ...] = param(LOWER_LEARNERS, choices=LOWER_LEARNERS, min_len=1,
                                      max_len=len(LOWER_LEARNERS), help="learners; must include 'centroid'")
    cp_samples_per_dim: int = param(1000, 1, 10_000,
                                    help="cutting-plane samples per dimension. Deviation: notebook 10^4")

    def __post_init__(self) -> None:
        if "centroid" not in self.learners:
            raise ValueError(f"learners must include 'centroid', got {self.learners}")


@experiment(
    "inverse_lo.lower_bound",
    claim="On M-convex action sets every learner makes Omega(d) wrong rounds (adversarial comparison-pair "
    "family), and the centroid learner stays within the O(d log d) upper bound ln(d!)/ln(e/(e-1)).",
    presets={
        "quick": LowerBoundConfig(),
        "full": LowerBoundConfig(dims=(4, 6, 8, 10, 12, 14, 16), n_tail=1000, n_seeds=5),
        "smoke": LowerBoundConfig(dims=(3, 4), n_tail=20, n_seeds=2, cp_samples_per_dim=50),
    },
)
def lower_bound(cfg: LowerBoundConfig, rng: np.random.Generator) -> Outcome:
    names = cfg.learners
    n_d = len(cfg.dims)
    wrong = {n: np.zeros((n_d, cfg.n_seeds)) for n in names}  # oblivious, whole run
    pair_wrong = {n: np.zeros((n_d, cfg.n_seeds)) for n in names}  # oblivious, pair rounds only
    adaptive_pair_wrong = {n: np.zeros((n_d, cfg.n_seeds)) for n in names}
    regret = {n: np.zeros((n_d, cfg.n_seeds)) for n in names}
    n_pairs = np.array([d // 2 for d in cfg.dims], dtype=float)
    d_rngs = spawn(rng, n_d + 1)
    regime_rng = d_rngs.pop()  # its own stream: the runs are those of the code before the preconditions
    w_stars: list[np.ndarray] = []
    sampled_sets: list[FeasibleSet] = []
    for k, (d, d_rng) in enumerate(track(list(zip(cfg.dims, d_rngs, strict=True)), "lower bound: d")):
        for s, seed_rng in enumerate(spawn(d_rng, cfg.n_seeds)):
            inst = lower_bound_instance(d, cfg.n_tail, cfg.env, seed_rng)
            w_stars.append(inst.w_star)
            sampled_sets.extend([inst.instances[0], inst.instances[-1]])  # a pair round and a tail round
            m = inst.n_pairs
            learner_rngs = spawn(seed_rng, 2 * len(names))
            for j, name in enumerate(names):
                ks = cfg.cp_samples_per_dim * d
                trace = play(_make_learner(name, d, inst.instances, ks, learner_rngs[2 * j]), inst.w_star,
                             inst.instances)
                wrong[name][k, s] = trace.n_wrong
                pair_wrong[name][k, s] = int(trace.wrong[:m].sum())
                regret[name][k, s] = trace.total_regret
                adv, _ = play_adaptive(_make_learner(name, d, inst.instances, ks, learner_rngs[2 * j + 1]), inst)
                adaptive_pair_wrong[name][k, s] = int(adv.wrong[:m].sum())
    lower = np.array([expected_lower_bound(d) for d in cfg.dims])
    upper = np.array([mistake_bound(d) for d in cfg.dims])
    dims = np.array(cfg.dims, dtype=float)
    metrics: dict[str, float] = {}
    rows = []
    checks: list[Check] = []
    for k, d in enumerate(cfg.dims):
        metrics[f"d{d}_expected_lower"] = float(lower[k])
        metrics[f"d{d}_upper_bound"] = float(upper[k])
        row: dict[str, float | int] = {"d": d, "E_lower_floor(d/2)/2": float(lower[k]), "upper": float(upper[k])}
        for name in names:
            metrics[f"d{d}_{name}_wrong_mean"] = float(wrong[name][k].mean())
            metrics[f"d{d}_{name}_wrong_min"] = float(wrong[name][k].min())
            metrics[f"d{d}_{name}_wrong_max"] = float(wrong[name][k].max())
            metrics[f"d{d}_{name}_regret_mean"] = float(regret[name][k].mean())
            metrics[f"d{d}_{name}_adaptive_pair_wrong_min"] = float(adaptive_pair_wrong[name][k].min())
            row[f"{name}_wrong_mean"] = float(wrong[name][k].mean())
            row[f"{name}_pair_wrong_mean"] = float(pair_wrong[name][k].mean())
            row[f"{name}_adaptive_pair_wrong_mean"] = float(adaptive_pair_wrong[name][k].mean())
        rows.append(row)
    total_d = float(dims.sum() * cfg.n_seeds)
    total_pairs = float(n_pairs.sum() * cfg.n_seeds)
    for name in names:
        # the lower-bound part: wrong pair rounds per unit of d, pooled over every d and seed (the random
        # tail rounds only add wrong rounds, so the whole-run count is reported but not checked)
        pair_per_d = float(pair_wrong[name].sum() / total_d)
        metrics[f"{name}_pair_wrong_per_d"] = pair_per_d
        metrics[f"{name}_wrong_per_d"] = float(wrong[name].sum() / total_d)
        metrics[f"{name}_pair_wrong_fraction"] = _ratio(float(pair_wrong[name].sum()), total_pairs)
        metrics[f"{name}_adaptive_pair_wrong_fraction"] = _ratio(float(adaptive_pair_wrong[name].sum()), total_pairs)
        checks.append(
            Check(
                f"{name}_pair_wrong_per_d",
                pair_per_d,
                f">= {LOWER_C_CHECK}",
                paper="Omega(d) wrong rounds for every learner on M-convex sets",
            )
        )
    violations = int(np.sum(wrong["centroid"] > upper[:, None]))
    worst = float((wrong["centroid"].max(axis=1) / upper).max())
    ours_over_lower = float((wrong["centroid"].mean(axis=1) / (LOWER_C * dims)).max())
    metrics["centroid_runs_over_upper_bound"] = float(violations)
    metrics["centroid_worst_wrong_over_upper"] = worst
    metrics["centroid_mean_over_cd_max"] = ours_over_lower
    checks.append(
        Check("centroid_runs_over_upper_bound", violations, "== 0",
              paper="wrong rounds <= ln(d!)/ln(e/(e-1)) = O(d log d), within a log factor of Omega(d)")
    )
    checks.extend(regime_checks(w_stars, sampled_sets, regime_rng, metrics))
    fig, ax = new_figure(
        f"pair family + {cfg.n_tail} {cfg.env} rounds: wrong rounds ({cfg.n_seeds} seeds)",
        "dimension d",
        "number of wrong rounds (mean, bar = min..max)",
    )
    ax.plot(dims, upper, "k--", label="upper bound ln(d!)/ln(e/(e-1))")
    ax.plot(dims, LOWER_C * dims, "k:", label=f"c d, c = {LOWER_C} (E of this family ~ floor(d/2)/2)")
    offsets = np.linspace(-0.2, 0.2, len(names))
    for off, name in zip(offsets, names, strict=True):
        mean = wrong[name].mean(axis=1)
        ax.errorbar(
            dims + off,
            mean,
            yerr=range_yerr(mean, wrong[name].min(axis=1), wrong[name].max(axis=1)),
            marker="o",
            capsize=3,
            label=_LABELS[name],
        )
    ax.legend(fontsize=7)
    fig2, ax2 = new_figure(
        f"pair rounds only: wrong rounds (oblivious w*, {cfg.n_seeds} seeds)",
        "dimension d",
        "wrong rounds among the floor(d/2) pair rounds (mean)",
    )
    ax2.plot(dims, lower, "k:", label="E for any learner: floor(d/2)/2")
    ax2.plot(dims, LOWER_C_CHECK * dims, "k-.", label=f"checked c d, c = {LOWER_C_CHECK}")
    ax2.plot(dims, n_pairs, "r--", label="adaptive adversary: floor(d/2)")
    for off, name in zip(offsets, names, strict=True):
        ax2.plot(dims + off, pair_wrong[name].mean(axis=1), marker="o", linestyle="none", label=_LABELS[name])
    ax2.legend(fontsize=7)
    figures = {"lower_bound_wrong_vs_d": fig, "lower_bound_pair_rounds": fig2}
    return Outcome(metrics=metrics, checks=checks, figures=figures, tables={"per_d": rows})
