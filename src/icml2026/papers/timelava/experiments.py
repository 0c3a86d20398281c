"""Registered TimeLAVA experiments: solver checks, anomaly detection, label noise, pruning."""

from __future__ import annotations

import time
from typing import Any, Literal

import numpy as np
from scipy.ndimage import median_filter
from scipy.spatial.distance import cdist
from scipy.stats import kurtosis, spearmanr

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track
from icml2026.core.stats import auroc, paired_difference
from icml2026.core.validate import as_labels, finite_number

from .baselines import lava_sample_values, lava_values, pyod_segment_scores, timeinf_scores
from .data import (
    load_anomaly_series,
    load_ecg_diff_count3,
    load_ucr_classification,
    make_regime_shift_series,
    make_spike_series,
    synthetic_base,
)
from .solver import sinkhorn_log_unbalanced, transport_plan, uot_objective
from .valuation import (
    SegmentValues,
    calibrated_values,
    rank_segments,
    segment_series,
    value_samples,
    value_segments,
    wavelet_features,
)

# Ranges shared by the configs. kappa: the KL marginal penalty (paper 2.0); at 20 the problem is nearly
# balanced (rho = 0.9995 at eps = 0.01) and the dense iteration slows as 1 / (1 - rho). eps: the entropic
# regularisation (paper 0.01); 1e-4 is the brief's reference eps, above 10 every value is ~0. On the shipped
# series (thousands of segments) eps = 1e-4 took 92 s for InternalBleeding16 alone, so the real-data
# experiments stop at 1e-3.
_KAPPA_HI, _EPS_LO, _EPS_REAL_LO, _EPS_HI = 20.0, 1e-4, 1e-3, 10.0

#: The controls of a comparative claim (issue 55): "planted" makes an effect by construction, on which the
#: check must pass; "null" gives both arms one method on independent streams, on which it must fail.
Control = Literal["none", "planted", "null"]
#: Two-sided level of the paired t intervals of the comparative checks: a check passes when the interval's
#: near end clears 0, a one-sided test at 5% (so a null passes about one run in twenty).
_TEST_LEVEL = 0.9


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """ROC-AUC of ``scores`` (high = anomalous / harmful) against 0/1 ``labels``, by the shared
    :func:`icml2026.core.stats.auroc` (scikit-learn's ``roc_auc_score``); one class only is an error."""
    return auroc(scores, labels, one_class="raise")


def inject_oracle(scores: np.ndarray, truth: np.ndarray, frac: float, rng: np.random.Generator) -> np.ndarray:
    """Planted control: ``scores`` (high = harmful) given the oracle's answer on a random share of items.

    ``round(frac * n)`` items drawn uniformly get a score above every other score when ``truth`` marks them
    harmful and below every other score when it does not; the rest keep their score. Returns a new array.
    """
    s = np.array(scores, dtype=float, copy=True)
    truth = np.asarray(truth, dtype=bool)
    if truth.shape != s.shape:
        raise ValueError(f"truth: shape {truth.shape} differs from the scores' shape {s.shape}")
    frac = finite_number(frac, "frac", lo=0.0, hi=1.0)
    k = int(round(frac * s.size))
    idx = rng.choice(s.size, k, replace=False)
    span = float(np.ptp(s)) + 1.0
    s[idx] = np.where(truth[idx], s.max() + span, s.min() - span)
    return s


# ------------------------------------------------------------------------------------------------------------
# 1. Solver: POT cross-check, sensitivity formula, zero-sum values, eps-robustness (brief criteria 1, 2, 3, 7)
# ------------------------------------------------------------------------------------------------------------


@config
class SolverConfig:
    n_eval: int = param(30, 2, 400, help="evaluated segments of the POT cross-check problem")
    n_ref: int = param(20, 1, 400, help="reference segments of the POT cross-check problem")
    kappa: float = param(2.0, 0.0, _KAPPA_HI, lo_open=True, help="paper default (App. C.1.3)")
    # POT iterates in the plain domain: exp(-D/eps) underflows for D/eps > ~700 (D has mean 1, max ~3)
    eps: float = param(0.01, 0.005, 10.0, help="paper default 0.01")
    series_length: int = param(2000, 256, 10_000, help="eps-robustness series (brief: T = 2000)")
    eps_grid: tuple[float, ...] = param((1.0, 0.1, 0.01), _EPS_LO, _EPS_HI, min_len=1, max_len=8)
    eps_ref: float = param(1e-4, _EPS_LO, _EPS_HI, help="the eps whose ranking the grid is compared with")


def _small_problem(cfg: SolverConfig, rng: np.random.Generator) -> np.ndarray:
    """Wavelet L1 costs between segments of two synthetic series, scaled to mean 1 (POT works in the plain
    domain only when ``D/eps`` stays below ~700)."""
    x, _ = make_spike_series(cfg.n_eval * 16 + 64, 0.02, (4.0, 7.0), rng)
    r = synthetic_base(cfg.n_ref * 16 + 64, rng)
    _, sx = segment_series(x[:, None], 64, 16)
    _, sr = segment_series(r[:, None], 64, 16)
    d = cdist(wavelet_features(sx[: cfg.n_eval]), wavelet_features(sr[: cfg.n_ref]), "cityblock")
    return d / d.mean()


@experiment(
    "timelava.solver_checks",
    claim="The log-domain unbalanced Sinkhorn matches POT, and psi_kappa(f) is the exact sensitivity dW/da_i "
    "(up to (kappa+eps)/kappa); values sum to 0 and their ranking is stable in eps.",
    presets={
        "quick": SolverConfig(),
        "full": SolverConfig(n_eval=60, n_ref=40, series_length=4000),
        # smoke: the same code path at tiny sizes for the contract test (its checks may fail)
        "smoke": SolverConfig(n_eval=8, n_ref=6, series_length=400, eps_grid=(0.1,), eps_ref=0.01),
    },
    no_preconditions="Every check compares the solver with an exact reference (POT's iteration, central finite "
    "differences of the objective, an algebraic identity) or the values with themselves across eps; nothing is "
    "trained, and the generated series only supplies costs (a degenerate draw makes Spearman NaN, which fails).",
)
def solver_checks(cfg: SolverConfig, rng: np.random.Generator) -> Outcome:
    import ot

    r_prob, r_series, r_ref = spawn(rng, 3)
    d = _small_problem(cfg, r_prob)
    n, m = d.shape
    a, b = np.full(n, 1 / n), np.full(m, 1 / m)
    ours = sinkhorn_log_unbalanced(d, cfg.kappa, cfg.eps, tol=1e-14)
    plan = transport_plan(d, ours.f, ours.g, cfg.eps)
    pot_plan, log = ot.unbalanced.sinkhorn_unbalanced(
        a,
        b,
        d,
        cfg.eps,
        cfg.kappa,
        method="sinkhorn",
        reg_type="kl",
        log=True,
        numItermax=1_000_000,
        stopThr=1e-15,
    )
    plan_rel = float(np.abs(plan - pot_plan).max() / np.abs(pot_plan).max())
    f_err = float(np.abs(ours.f - cfg.eps * log["logu"]).max() / (1 + np.abs(ours.f).max()))

    # Criterion 2: central finite difference of W_SW(a) w.r.t. a_i vs (kappa+eps)/kappa * phi_i.
    _, phi = calibrated_values(ours.f, cfg.kappa)
    fd_rel = []
    for i in range(min(n, 3)):  # three coordinates: each needs two tight (tol 1e-15) solves
        h = 1e-5 * a[i]
        vals = []
        for sgn in (1.0, -1.0):
            ap = a.copy()
            ap[i] += sgn * h
            res = sinkhorn_log_unbalanced(d, cfg.kappa, cfg.eps, a=ap, tol=1e-15)
            vals.append(uot_objective(transport_plan(d, res.f, res.g, cfg.eps, a=ap), d, ap, b, cfg.kappa, cfg.eps))
        fd = (vals[0] - vals[1]) / (2 * h)
        pred = (cfg.kappa + cfg.eps) / cfg.kappa * phi[i]
        fd_rel.append(abs(fd - pred) / abs(pred))
    fd_max = float(max(fd_rel))

    # Criteria 3 and 7 on a synthetic spike series.
    x, _ = make_spike_series(cfg.series_length, 0.02, (4.0, 7.0), r_series)
    ref = synthetic_base(cfg.series_length, r_ref)
    base = value_segments(x, ref, eps=cfg.eps_ref)
    order = rank_segments(base.values)
    descending = float(np.all(np.diff(base.values[order]) <= 0))
    rows = []
    rhos = []
    fig, ax = new_figure("Segment values across eps", f"value at eps={cfg.eps_ref:g}", "value at other eps")
    for e in track(cfg.eps_grid, "eps grid"):
        v = value_segments(x, ref, eps=e).values
        rho_s = float(spearmanr(v, base.values).statistic)
        rhos.append(rho_s)
        rows.append({"eps": e, "spearman_vs_eps_ref": rho_s})
        ax.scatter(base.values, v, s=4, label=f"eps={e:g}")
    ax.legend()
    metrics = {
        "plan_rel_err_vs_pot": plan_rel,
        "f_vs_eps_logu": f_err,
        "fd_sensitivity_rel_err": fd_max,
        "abs_sum_values": float(abs(base.values.sum())),
        "rank_descending": descending,
        "min_spearman_eps": float(min(rhos)),
    }
    checks = [
        Check("plan_rel_err_vs_pot", plan_rel, "< 1e-6"),
        Check("f_vs_eps_logu", f_err, "< 1e-6", paper="equal"),
        Check("fd_sensitivity_rel_err", fd_max, "< 1e-4"),
        Check("abs_sum_values", metrics["abs_sum_values"], "< 1e-8", paper="0"),
        Check("rank_descending", descending, "== 1"),
        Check("min_spearman_eps", metrics["min_spearman_eps"], "> 0.9", paper="> 0.90 (Thm B.2)"),
    ]
    return Outcome(metrics=metrics, checks=checks, figures={"eps_robustness": fig}, tables={"eps": rows})


# ------------------------------------------------------------------------------------------------------------
# 2. Anomaly detection on shipped series
# ------------------------------------------------------------------------------------------------------------

_STRIDE = {"InternalBleeding16": 4, "ecg-diff-count-3": 8, "mitdb": 4, "yahoo": 4}


@config
class AnomalyRealConfig:
    datasets: tuple[str, ...] = param(
        ("InternalBleeding16", "ecg-diff-count-3"), choices=tuple(_STRIDE), min_len=1, max_len=len(_STRIDE)
    )
    # paper L = 64; the shortest reference (yahoo's clean prefix) has 400 points
    window: int = param(64, 8, 256, help="paper L = 64")
    kappa: float = param(2.0, 0.0, _KAPPA_HI, lo_open=True)
    eps: float = param(0.01, _EPS_REAL_LO, _EPS_HI)
    baselines: bool = True  # LAVA-raw, TimeLAVA-raw (ablation), TimeInf, pyod detectors

    def __post_init__(self) -> None:
        if len(set(self.datasets)) != len(self.datasets):
            raise ValueError(f"datasets = {self.datasets}: lists a data set twice")


def _overlay(name: str, series: np.ndarray, labels: np.ndarray, scores: np.ndarray):  # noqa: ANN202
    fig, ax = new_figure(f"{name}: series and TimeLAVA score", "time step", "value (z-scored)")
    z = (series - series.mean()) / (series.std() + 1e-12)
    s = (scores - scores.mean()) / (scores.std() + 1e-12)
    ax.plot(z, lw=0.5, color="0.4", label="series")
    ax.plot(s - 4, lw=0.8, color="tab:red", label="-v(t) (shifted)")
    idx = np.flatnonzero(labels)
    ax.scatter(idx, z[idx], s=6, color="tab:orange", label="labelled anomaly", zorder=3)
    ax.legend(loc="upper right", fontsize=7)
    return fig


def _solver_preconditions(key: str, res: SegmentValues, kappa: float) -> list[Check]:
    """Preconditions of one valuation: the UOT solve reached its tolerance, and the values are not all equal.

    A solve stopped early gives duals that are not the fixed point of Eq. (5), so the values are not the
    paper's; all-equal values (``psi_kappa`` saturated at kappa for every segment, the OSULeaf failure, or a
    reference that contains every evaluated segment) carry no ranking, and an AUC of 0.5 from them says
    nothing about the method. The spread target is the one ``value_samples`` warns at (1e-12 kappa).
    """
    return [
        Check(f"{key}_solver_converged", float(res.converged), "== 1", role="precondition"),
        Check(f"{key}_value_spread_over_kappa", float(np.ptp(res.values)) / kappa, "> 1e-12", role="precondition"),
    ]


@experiment(
    "timelava.anomaly_real",
    claim="Point-wise TimeLAVA scores -v(t) detect the labelled anomalies of shipped UCR/ECG series with "
    "ROC-AUC >= 0.95, against LAVA, TimeInf and pyod detectors.",
    presets={
        "quick": AnomalyRealConfig(),
        "full": AnomalyRealConfig(datasets=("InternalBleeding16", "ecg-diff-count-3", "mitdb", "yahoo")),
        # smoke: one shipped series, no baselines (for the contract test)
        "smoke": AnomalyRealConfig(datasets=("InternalBleeding16",), baselines=False),
    },
)
def anomaly_real(cfg: AnomalyRealConfig, rng: np.random.Generator) -> Outcome:
    metrics: dict[str, float] = {}
    checks: list[Check] = []
    figures = {}
    rows = []
    timings = {}
    for name in track(cfg.datasets, "anomaly-detection series"):
        ds = load_anomaly_series(name)
        stride = _STRIDE[name]
        t0 = time.perf_counter()
        res = value_segments(ds.series, ds.reference, cfg.window, stride, cfg.kappa, cfg.eps)
        timings[f"{name}_timelava_s"] = time.perf_counter() - t0
        score = -res.pointwise()
        auc = float(_auc(ds.labels, score))
        key = name.replace("-", "_")
        checks += _solver_preconditions(key, res, cfg.kappa)
        metrics[f"{key}_auc_timelava"] = auc
        row = {"dataset": name, "T": len(ds.series), "stride": stride, "timelava": round(auc, 4)}
        if cfg.baselines:
            others = {
                "timelava_raw": -value_segments(
                    ds.series, ds.reference, cfg.window, stride, cfg.kappa, cfg.eps, wavelet=None
                ).pointwise(),
                "lava_raw": -lava_values(ds.series, ds.reference, cfg.window, stride).pointwise(),
                "timeinf": timeinf_scores(ds.series, cfg.window),
            }
            for det in ("iforest", "lof", "knn_ref"):
                others[det] = pyod_segment_scores(ds.series, ds.reference, det, rng, cfg.window, stride)
            for method, sc in others.items():
                a = float(_auc(ds.labels, sc))
                metrics[f"{key}_auc_{method}"] = a
                row[method] = round(a, 4)
        rows.append(row)
        paper = {"InternalBleeding16": "0.999 (brief)", "ecg-diff-count-3": "0.9999 (brief)"}.get(name)
        if name in ("InternalBleeding16", "ecg-diff-count-3"):
            checks.append(Check(f"{key}_auc_timelava", auc, ">= 0.95", paper=paper))
        figures[f"overlay_{key}"] = _overlay(name, ds.series, ds.labels, score)
    return Outcome(metrics=metrics, checks=checks, figures=figures, tables={"auc": rows}, timings=timings)


# ------------------------------------------------------------------------------------------------------------
# 3. Synthetic spikes vs regime shift (criterion 6)
# ------------------------------------------------------------------------------------------------------------


@config
class SyntheticConfig:
    length: int = param(2000, 32, 10_000, help="brief: T = 2000")
    seeds: int = param(3, 1, 10, help="independent draws (brief: seeds 0-2)")
    spike_frac: float = param(0.02, 0.0, 0.5, lo_open=True)
    spike_mag: tuple[float, float] = param((4.0, 7.0), 0.0, 100.0, help="(lo, hi) spike size")
    heavy_frac: float = param(0.05, 0.0, 0.5, lo_open=True, help="kurtosis comparison: 5% spikes")
    heavy_mag: tuple[float, float] = param((8.0, 12.0), 0.0, 100.0, help="of magnitude 8-12 vs regime shift")
    window: int = param(64, 8, 512)
    # stride 1 quadruples the segments of stride 2 per side: one valuation took 69 s (vs 12 s) on 2 cores
    stride: int = param(4, 2, 512, help="at most window")
    kurtosis_stride: int = param(8, 2, 512, help="at most window")
    baselines: bool = True
    # planted: the regime-shift series is replaced by the anomaly-free base signal (light-tailed values by
    # construction); null: by a second heavy-spike series drawn from the regime shift's stream (same condition)
    control: Control = "none"

    def __post_init__(self) -> None:
        if self.length < 4 * self.window:
            raise ValueError(f"length = {self.length}: must be >= 4 * window ({4 * self.window})")
        for name in ("stride", "kurtosis_stride"):
            if getattr(self, name) > self.window:
                raise ValueError(f"{name} = {getattr(self, name)}: must be <= window ({self.window})")
        for name in ("spike_mag", "heavy_mag"):
            lo, hi = getattr(self, name)
            if lo > hi:
                raise ValueError(f"{name} = {(lo, hi)}: needs lo <= hi")


@experiment(
    "timelava.anomaly_synthetic",
    claim="On synthetic series TimeLAVA localises isolated spikes (AUC >= 0.75) and isolated spikes give "
    "heavy-tailed segment values while a regime shift does not (Thm 5.1).",
    presets={
        "quick": SyntheticConfig(),
        "full": SyntheticConfig(length=4000, seeds=5),
        # smoke: one short draw with every baseline (contract test; its checks may fail)
        "smoke": SyntheticConfig(length=512, seeds=1, window=32, stride=8),
        # controls of the comparative kurtosis check (icml2026 controls timelava.anomaly_synthetic)
        "planted": SyntheticConfig(baselines=False, control="planted"),
        "null": SyntheticConfig(baselines=False, control="null"),
    },
)
def anomaly_synthetic(cfg: SyntheticConfig, rng: np.random.Generator) -> Outcome:
    metrics: dict[str, float] = {}
    checks: list[Check] = []
    rows = []
    streams = spawn(rng, cfg.seeds + 1)
    kurt_spike, kurt_shift = [], []
    figures: dict[str, Any] = {}
    for k in track(range(cfg.seeds), "seeds", total=cfg.seeds):
        r_x, r_ref, r_h, r_s, r_det = spawn(streams[k], 5)
        x, y = make_spike_series(cfg.length, cfg.spike_frac, cfg.spike_mag, r_x)
        ref = synthetic_base(cfg.length, r_ref)
        res = value_segments(x, ref, cfg.window, cfg.stride)
        score = -res.pointwise()
        auc = float(_auc(y, score))
        metrics[f"seed{k}_auc_timelava"] = auc
        # Precondition: the planted spikes stand out for an oracle that knows they are isolated points (the
        # distance to the running median of 5 points); 0.95 because the spikes (4-7) are 80-140 noise s.d.
        # tall. If they did not (e.g. spike_mag near 0), the AUC claim below would test nothing.
        oracle = _auc(y, np.abs(x - median_filter(x, size=5, mode="nearest")))
        metrics[f"seed{k}_auc_oracle_median"] = oracle
        checks.append(Check(f"seed{k}_auc_oracle_median", oracle, ">= 0.95", role="precondition"))
        checks += _solver_preconditions(f"seed{k}", res, 2.0)
        checks.append(Check(f"seed{k}_auc_timelava", auc, ">= 0.75"))
        row = {"draw": k, "timelava": round(auc, 4)}
        if cfg.baselines:
            others = {
                "lava_raw": -lava_values(x, ref, cfg.window, cfg.stride).pointwise(),
                "timeinf": timeinf_scores(x, cfg.window),
                "iforest": pyod_segment_scores(x, ref, "iforest", r_det, cfg.window, cfg.stride),
                "knn_ref": pyod_segment_scores(x, ref, "knn_ref", r_det, cfg.window, cfg.stride),
            }
            for method, sc in others.items():
                a = float(_auc(y, sc))
                metrics[f"seed{k}_auc_{method}"] = a
                row[method] = round(a, 4)
        rows.append(row)
        xh, _ = make_spike_series(cfg.length, cfg.heavy_frac, cfg.heavy_mag, r_h)
        if cfg.control == "planted":
            xs = synthetic_base(cfg.length, r_s)
        elif cfg.control == "null":
            xs, _ = make_spike_series(cfg.length, cfg.heavy_frac, cfg.heavy_mag, r_s)
        else:
            xs, _ = make_regime_shift_series(cfg.length, r_s)
        vh = value_segments(xh, ref, cfg.window, cfg.kurtosis_stride).values
        vs = value_segments(xs, ref, cfg.window, cfg.kurtosis_stride).values
        kurt_spike.append(float(kurtosis(vh)))
        kurt_shift.append(float(kurtosis(vs)))
        if k == 0:
            figures["overlay_spikes"] = _overlay("synthetic spikes", x, y, score)
            fig2, ax = new_figure("Segment values: spikes vs regime shift", "segment value v", "count")
            ax.hist(vh, bins=60, alpha=0.6, label="5% spikes (8-12)")
            ax.hist(vs, bins=60, alpha=0.6, label="regime shift")
            ax.legend()
            figures["value_histograms"] = fig2
    gap = float(np.min(np.array(kurt_spike) - np.array(kurt_shift)))
    metrics["kurtosis_spike_mean"] = float(np.mean(kurt_spike))
    metrics["kurtosis_shift_mean"] = float(np.mean(kurt_shift))
    metrics["kurtosis_gap_min"] = gap
    # compares two conditions (isolated spikes vs a regime shift): comparative, with the brief's margin of 10
    # (the brief's own figures, 35-80 vs -1.7, are in the card: the paper states none)
    checks.append(Check("kurtosis_gap_min", gap, "> 10", comparative=True))
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures=figures,
        tables={"auc": rows},
    )


# ------------------------------------------------------------------------------------------------------------
# 4. Label-noise detection on UCR classification sets (criterion 8, first half)
# ------------------------------------------------------------------------------------------------------------


# UCR classification sets shipped in aeon with equal-length univariate series
_UCR_SETS = ("GunPoint", "ArrowHead", "ItalyPowerDemand", "OSULeaf")


@config
class LabelNoiseConfig:
    datasets: tuple[str, ...] = param(
        ("GunPoint", "ArrowHead", "ItalyPowerDemand"), choices=_UCR_SETS, min_len=1, max_len=len(_UCR_SETS)
    )
    flip_frac: float = param(0.2, 0.0, 0.5, lo_open=True, hi_open=True, help="brief: 20% of labels flipped")
    # A set counts as a win when the paired t interval of (TimeLAVA - LAVA) AUROC over the flip draws clears
    # 0; with one draw the interval is the difference itself (no error control), so the presets use 5 and 10.
    repeats: int = param(5, 1, 20, help="independent flip draws per set, the same for both methods")
    label_weight: float = param(1.0, 0.0, 100.0, help="c = 1 (Eq. 6)")
    kappa: float = param(2.0, 0.0, _KAPPA_HI, lo_open=True)
    eps: float = param(0.01, _EPS_REAL_LO, _EPS_HI)
    # planted: TimeLAVA's arm is LAVA given the oracle (the flip mask) on this share of the training samples
    planted_frac: float = param(0.2, 0.0, 1.0, lo_open=True, help="planted control: share given the oracle")
    # null: TimeLAVA's arm is LAVA on flip draws from an independent stream (same method, other seeds)
    control: Control = "none"

    def __post_init__(self) -> None:
        if len(set(self.datasets)) != len(self.datasets):
            raise ValueError(f"datasets = {self.datasets}: lists a data set twice")


def flip_labels(y: np.ndarray, frac: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Flip ``round(frac n)`` labels to a different class drawn uniformly; returns (noisy labels, mask)."""
    y = as_labels(y, "y")
    frac = finite_number(frac, "frac", lo=0.0, hi=1.0, lo_open=True)
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError("y: needs at least 2 classes to flip labels")
    n_flip = max(1, int(round(frac * len(y))))
    idx = rng.choice(len(y), n_flip, replace=False)
    noisy = y.copy()
    for i in idx:
        noisy[i] = rng.choice(classes[classes != y[i]])
    mask = np.zeros(len(y), dtype=bool)
    mask[idx] = True
    return noisy, mask


def nn_margin_scores(
    x: np.ndarray, labels: np.ndarray, reference: np.ndarray, reference_labels: np.ndarray
) -> np.ndarray:
    """Oracle of the label-noise task: 1-NN margin to a clean labelled reference (high = likely flipped).

    ``d(x_i, nearest reference of class labels_i) - d(x_i, nearest reference of another class)``, Euclidean.
    Returns (n,) scores; a class absent from the reference counts as infinitely far (clipped to the largest
    finite distance plus one).
    """
    d = cdist(np.asarray(x, float).reshape(len(x), -1), np.asarray(reference, float).reshape(len(reference), -1))
    same = reference_labels[None, :] == np.asarray(labels)[:, None]
    big = float(d.max()) + 1.0
    d_same = np.where(same, d, big).min(axis=1)
    d_other = np.where(~same, d, big).min(axis=1)
    return d_same - d_other


@experiment(
    "timelava.label_noise",
    claim="With the LAVA label term (c = 1), TimeLAVA's values rank flipped labels of UCR training sets "
    "lower than LAVA on raw series does (AUROC, paired over flip draws) on at least 2 of 3 sets.",
    presets={
        "quick": LabelNoiseConfig(),
        "full": LabelNoiseConfig(datasets=("GunPoint", "ArrowHead", "ItalyPowerDemand", "OSULeaf"), repeats=10),
        "planted": LabelNoiseConfig(control="planted"),
        "null": LabelNoiseConfig(control="null"),
    },
)
def label_noise(cfg: LabelNoiseConfig, rng: np.random.Generator) -> Outcome:
    metrics: dict[str, float] = {}
    checks: list[Check] = []
    rows = []
    wins = 0
    for ds_name, stream in track(list(zip(cfg.datasets, spawn(rng, len(cfg.datasets)), strict=True)), "series"):
        ds = load_ucr_classification(ds_name)
        draws = spawn(stream, cfg.repeats)
        # spawned after the draws, so that the draws (and the AUROCs of control "none") do not depend on them
        null_draws = spawn(stream, cfg.repeats)
        (r_plant,) = spawn(stream, 1)
        auc_t, auc_l, auc_o = [], [], []
        for r, r_null in zip(draws, null_draws, strict=True):
            noisy, mask = flip_labels(ds.y_train, cfg.flip_frac, r)
            lv, _ = lava_sample_values(ds.x_train, ds.x_test, noisy, ds.y_test, cfg.label_weight)
            if cfg.control == "none":
                tv = value_samples(
                    ds.x_train,
                    ds.x_test,
                    cfg.kappa,
                    cfg.eps,
                    labels=noisy,
                    reference_labels=ds.y_test,
                    label_weight=cfg.label_weight,
                )
                harm = -tv.values
            elif cfg.control == "planted":
                harm = inject_oracle(-lv, mask, cfg.planted_frac, r_plant)
            else:
                noisy_b, mask_b = flip_labels(ds.y_train, cfg.flip_frac, r_null)
                lv_b, _ = lava_sample_values(ds.x_train, ds.x_test, noisy_b, ds.y_test, cfg.label_weight)
                harm, mask_t = -lv_b, mask_b
            auc_t.append(float(_auc(mask if cfg.control != "null" else mask_t, harm)))
            auc_l.append(float(_auc(mask, -lv)))
            auc_o.append(_auc(mask, nn_margin_scores(ds.x_train, noisy, ds.x_test, ds.y_test)))
        mt, ml, mo = float(np.mean(auc_t)), float(np.mean(auc_l)), float(np.mean(auc_o))
        diff = paired_difference(auc_t, auc_l, level=_TEST_LEVEL)
        win = diff.low > 0
        metrics[f"{ds_name}_auroc_timelava"] = mt
        metrics[f"{ds_name}_auroc_lava_raw"] = ml
        metrics[f"{ds_name}_auroc_oracle_1nn"] = mo
        metrics[f"{ds_name}_auroc_diff_low"] = diff.low
        wins += int(win)
        # Precondition: the flips are detectable from the data at all. The oracle is the 1-NN margin to the
        # clean labelled reference (it uses the reference's labels, which the valuations also use); below 0.7
        # the classes barely separate by their nearest clean series, and neither method can be asked to win.
        checks.append(Check(f"{ds_name}_auroc_oracle_1nn", mo, ">= 0.7", role="precondition"))
        rows.append(
            {
                "dataset": ds_name,
                "n_train": len(ds.y_train),
                "timelava": round(mt, 4),
                "lava_raw": round(ml, 4),
                "oracle_1nn": round(mo, 4),
                "diff_ci_low": round(diff.low, 4),
                "win": int(win),
            }
        )
    metrics["n_wins"] = float(wins)
    need = min(2, len(cfg.datasets))
    fig, ax = new_figure("Label-noise detection AUROC", "data set", "AUROC")
    xs = np.arange(len(rows))
    ax.bar(xs - 0.2, [metrics[f"{d}_auroc_timelava"] for d in cfg.datasets], 0.4, label="TimeLAVA")
    ax.bar(xs + 0.2, [metrics[f"{d}_auroc_lava_raw"] for d in cfg.datasets], 0.4, label="LAVA (raw)")
    ax.set_xticks(xs, list(cfg.datasets), fontsize=7)
    ax.legend()
    # Deviation: a win is a paired one-sided t test at 5% over the flip draws (the brief: "beats"), so that
    # a set is not counted on the noise of one draw.
    checks.append(
        Check("n_wins_over_lava", wins, f">= {need}", comparative=True)  # the brief: beats LAVA on >= 2 of 3 sets
    )
    return Outcome(metrics=metrics, checks=checks, figures={"auroc": fig}, tables={"auroc": rows})


# ------------------------------------------------------------------------------------------------------------
# 5. Data pruning for forecasting (criterion 8, second half)
# ------------------------------------------------------------------------------------------------------------


_ECG_LENGTH = 10_000  # points of the clean ecg-diff-count-3 TRAIN_NA series


@config
class PruningConfig:
    block: int = param(64, 8, 1024, help="L = S = 64 for pruning (brief)")
    # ECG TRAIN_NA: [0, 6000) train, [6000, 8000) reference, [8000, 10000) test
    train_length: int = param(6000, 32, 9000)
    reference_length: int = param(2000, 8, 9000)
    corrupt_frac: float = param(0.1, 0.0, 0.5, lo_open=True, help="10% of blocks corrupted")
    # at most half of the blocks removed, so that the AR fit keeps data; 0.1 is the checked fraction
    prune_fracs: tuple[float, ...] = param((0.05, 0.1, 0.2), 0.0, 0.5, lo_open=True, min_len=1, max_len=10)
    ar_order: int = param(32, 1, 512, help="less than block")
    ridge: float = param(1e-3, 1e-8, 1e3, help="ridge penalty (times the number of rows) of the AR fit")
    random_draws: int = param(20, 1, 200, help="full: 100; each draw refits the AR model at every fraction")
    # The comparisons are paired over independent corruption draws (a one-sided t test at 5%); draw 0 is the
    # single draw of the earlier protocol.
    draws: int = param(10, 1, 40, help="independent corruption draws (full: 20)")
    # planted controls: a random pruned set (against random pruning) and TimeInf's pruned set (against
    # TimeInf) with this share of their mistakes corrected by the oracle (fix_pruned_set): half of the room
    # between the baseline and removing exactly the corrupted blocks
    planted_frac_random: float = param(0.5, 0.0, 1.0, lo_open=True, help="planted: share fixed vs random")
    planted_frac_timeinf: float = param(0.5, 0.0, 1.0, lo_open=True, help="planted: share fixed vs TimeInf")
    # null: value pruning replaced by one random pruning (vs random) and by TimeInf on independent corruption
    # draws (vs TimeInf): both arms one method, other streams
    control: Control = "none"

    def __post_init__(self) -> None:
        if self.ar_order >= self.block:
            raise ValueError(f"ar_order = {self.ar_order}: must be smaller than block ({self.block})")
        if self.train_length < 4 * self.block:
            raise ValueError(f"train_length = {self.train_length}: must hold >= 4 blocks ({4 * self.block})")
        if self.reference_length < self.block:
            raise ValueError(f"reference_length = {self.reference_length}: must be >= block ({self.block})")
        test = _ECG_LENGTH - self.train_length - self.reference_length
        if test < max(256, 4 * self.ar_order):
            raise ValueError(
                f"train_length = {self.train_length}: with reference_length = {self.reference_length} it "
                f"leaves {test} of the {_ECG_LENGTH} points for the test part; need >= {max(256, 4 * self.ar_order)}"
            )
        if 0.1 not in self.prune_fracs:
            raise ValueError(f"prune_fracs = {self.prune_fracs}: must contain 0.1 (the checked fraction)")


def _ar_fit_mse(x: np.ndarray, keep_block: np.ndarray, block: int, p: int, ridge: float, test: np.ndarray) -> float:
    """Fit a ridge AR(p) on targets whose lag window lies in kept blocks; one-step test MSE."""
    lags = np.lib.stride_tricks.sliding_window_view(x[:-1], p)  # row t: x[t : t+p] -> target x[t+p]
    target = x[p:]
    first_blk = np.arange(len(target)) // block
    last_blk = (np.arange(len(target)) + p) // block
    ok = keep_block[first_blk] & keep_block[np.minimum(last_blk, len(keep_block) - 1)]
    z = np.hstack([lags[ok], np.ones((ok.sum(), 1))])
    w = np.linalg.solve(z.T @ z + ridge * len(z) * np.eye(p + 1), z.T @ target[ok])
    tl = np.lib.stride_tricks.sliding_window_view(test[:-1], p)
    pred = np.hstack([tl, np.ones((len(tl), 1))]) @ w
    return float(np.mean((test[p:] - pred) ** 2))


def _corrupt_blocks(x: np.ndarray, cfg: PruningConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Corrupt ``round(corrupt_frac * blocks)`` random blocks of ``x`` (half Gaussian noise of one series
    s.d., half 4 spikes of 4-8 s.d.); returns (corrupted copy, (blocks,) bool mask of the corrupted ones)."""
    x = x.copy()
    n_blocks = len(x) // cfg.block
    n_bad = max(1, int(round(cfg.corrupt_frac * n_blocks)))
    bad = rng.choice(n_blocks, n_bad, replace=False)
    sd = x.std()
    for k, i in enumerate(bad):  # half noise blocks, half spike blocks
        sl = slice(i * cfg.block, (i + 1) * cfg.block)
        if k % 2 == 0:
            x[sl] += rng.normal(0, 1.0 * sd, cfg.block)
        else:
            pos = rng.choice(cfg.block, 4, replace=False)
            x[sl][pos] += rng.choice([-1, 1], 4) * rng.uniform(4, 8, 4) * sd
    is_bad = np.zeros(n_blocks, dtype=bool)
    is_bad[bad] = True
    return x, is_bad


def _prune_lowest(x: np.ndarray, value: np.ndarray, k: int, cfg: PruningConfig, test: np.ndarray) -> float:
    """Test MSE of the AR model after removing the ``k`` blocks of lowest ``value``."""
    keep = np.ones(len(value), bool)
    keep[np.argsort(value, kind="stable")[:k]] = False
    return _ar_fit_mse(x, keep, cfg.block, cfg.ar_order, cfg.ridge, test)


def fix_pruned_set(
    pruned: np.ndarray, is_bad: np.ndarray, frac: float, rng: np.random.Generator
) -> np.ndarray:
    """Planted control: a pruned set with a share of its mistakes corrected by the oracle.

    ``round(frac * min(#missed bad blocks, #pruned clean blocks))`` pruned clean blocks, drawn uniformly, are
    swapped for as many missed bad blocks: ``frac = 0`` keeps the set, ``frac = 1`` moves it as close to the
    oracle's (all bad blocks removed) as its size allows. Returns the new index array, the same size.
    """
    pruned = np.asarray(pruned, dtype=np.int64)
    is_bad = np.asarray(is_bad, dtype=bool)
    frac = finite_number(frac, "frac", lo=0.0, hi=1.0)
    inside = np.zeros(is_bad.size, dtype=bool)
    inside[pruned] = True
    missed = np.flatnonzero(is_bad & ~inside)
    wrong = np.flatnonzero(~is_bad & inside)
    n_fix = int(round(frac * min(missed.size, wrong.size)))
    inside[rng.choice(wrong, n_fix, replace=False)] = False
    inside[rng.choice(missed, n_fix, replace=False)] = True
    return np.flatnonzero(inside)


def _mse_without(x: np.ndarray, pruned: np.ndarray, n_blocks: int, cfg: PruningConfig, test: np.ndarray) -> float:
    keep = np.ones(n_blocks, bool)
    keep[pruned] = False
    return _ar_fit_mse(x, keep, cfg.block, cfg.ar_order, cfg.ridge, test)


def _ar_block_oracle(x: np.ndarray, ref: np.ndarray, cfg: PruningConfig) -> np.ndarray:
    """Oracle score of each block: one-step squared error of an AR model fitted on the clean reference."""
    p = cfg.ar_order
    lags = np.lib.stride_tricks.sliding_window_view(ref[:-1], p)
    z = np.hstack([lags, np.ones((len(lags), 1))])
    w = np.linalg.solve(z.T @ z + cfg.ridge * len(z) * np.eye(p + 1), z.T @ ref[p:])
    xl = np.lib.stride_tricks.sliding_window_view(x[:-1], p)
    err = np.zeros(len(x))
    err[p:] = (x[p:] - np.hstack([xl, np.ones((len(xl), 1))]) @ w) ** 2
    return err.reshape(-1, cfg.block).mean(axis=1)


@experiment(
    "timelava.pruning",
    claim="Removing the lowest-value blocks of a corrupted training series lowers the forecasting MSE of an "
    "AR model more than removing random blocks or the blocks of highest TimeInf influence (paired over "
    "corruption draws); removing the highest-value blocks hurts.",
    presets={
        "quick": PruningConfig(),
        "full": PruningConfig(random_draws=100, prune_fracs=(0.05, 0.1, 0.15, 0.2), draws=20),
        "planted": PruningConfig(prune_fracs=(0.1,), control="planted"),
        "null": PruningConfig(prune_fracs=(0.1,), control="null"),
    },
)
def pruning(cfg: PruningConfig, rng: np.random.Generator) -> Outcome:
    first = spawn(rng, 2)  # draw 0: the streams of the earlier single-draw protocol
    streams = [first] + [spawn(sub, 2) for sub in spawn(rng, cfg.draws - 1)]
    ctrl = spawn(rng, cfg.draws)  # control streams, spawned last so that they change nothing above
    full = load_ecg_diff_count3().reference  # the clean TRAIN_NA series (10,000 points)
    clean = full[: cfg.train_length].copy()
    ref = full[cfg.train_length : cfg.train_length + cfg.reference_length]
    test = full[cfg.train_length + cfg.reference_length :]
    n_blocks = len(clean) // cfg.block
    clean = clean[: n_blocks * cfg.block]
    fr_keys = [f"{int(round(frac * 100))}pct" for frac in cfg.prune_fracs]
    per: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        per.setdefault(key, []).append(float(value))

    for (r_cor, r_rand), r_ctrl in track(list(zip(streams, ctrl, strict=True)), "corruption draws", total=cfg.draws):
        r_null_rand, r_null_cor, r_plant = spawn(r_ctrl, 3)
        x, is_bad = _corrupt_blocks(clean, cfg, r_cor)
        res = value_segments(x, ref, cfg.block, cfg.block, reference_stride=8)
        # Competitors on the same blocks (issue 32): LAVA values (raw blocks, balanced OT) and TimeInf
        # self-influence (point scores averaged over each block; high = harmful, so the value is minus it).
        lava_v = lava_values(x, ref, cfg.block, cfg.block, reference_stride=8).values
        tinf = timeinf_scores(x, cfg.block).reshape(n_blocks, cfg.block).mean(axis=1)
        add("bad_block_auc", _auc(is_bad, -res.values))
        add("bad_block_auc_lava", _auc(is_bad, -lava_v))
        add("bad_block_auc_timeinf", _auc(is_bad, tinf))
        add("bad_block_auc_oracle_ar", _auc(is_bad, _ar_block_oracle(x, ref, cfg)))
        add("mse_no_pruning", _ar_fit_mse(x, np.ones(n_blocks, bool), cfg.block, cfg.ar_order, cfg.ridge, test))
        add("mse_clean_oracle", _ar_fit_mse(x, ~is_bad, cfg.block, cfg.ar_order, cfg.ridge, test))
        for frac, tag in zip(cfg.prune_fracs, fr_keys, strict=True):
            k = max(1, int(round(frac * n_blocks)))
            add(f"mse_low_{tag}", _prune_lowest(x, res.values, k, cfg, test))
            add(f"mse_high_{tag}", _prune_lowest(x, -res.values, k, cfg, test))
            add(f"mse_lava_{tag}", _prune_lowest(x, lava_v, k, cfg, test))
            add(f"mse_timeinf_{tag}", _prune_lowest(x, -tinf, k, cfg, test))
            rand = []
            for _ in range(cfg.random_draws):
                keep = np.ones(n_blocks, bool)
                keep[r_rand.choice(n_blocks, k, replace=False)] = False
                rand.append(_ar_fit_mse(x, keep, cfg.block, cfg.ar_order, cfg.ridge, test))
            add(f"mse_random_{tag}", float(np.mean(rand)))
            add(f"mse_random_sd_{tag}", float(np.std(rand)))
            if tag == "10pct":
                # the arms compared at 10%: value pruning (control "none"), or the controls' arms
                if cfg.control == "null":
                    a_rand = _prune_lowest(x, r_null_rand.random(n_blocks), k, cfg, test)
                    x_b, _ = _corrupt_blocks(clean, cfg, r_null_cor)
                    tinf_b = timeinf_scores(x_b, cfg.block).reshape(n_blocks, cfg.block).mean(axis=1)
                    a_tinf = _prune_lowest(x_b, -tinf_b, k, cfg, test)
                elif cfg.control == "planted":
                    rand_set = r_plant.choice(n_blocks, k, replace=False)
                    a_rand = _mse_without(
                        x, fix_pruned_set(rand_set, is_bad, cfg.planted_frac_random, r_plant), n_blocks, cfg, test
                    )
                    tinf_set = np.argsort(-tinf, kind="stable")[:k]
                    a_tinf = _mse_without(
                        x, fix_pruned_set(tinf_set, is_bad, cfg.planted_frac_timeinf, r_plant), n_blocks, cfg, test
                    )
                else:
                    a_rand = a_tinf = per[f"mse_low_{tag}"][-1]
                add("arm_vs_random_10pct", a_rand)
                add("arm_vs_timeinf_10pct", a_tinf)
    metrics = {key: float(np.mean(v)) for key, v in per.items() if not key.startswith("arm_")}
    metrics["mse_clean_series_over_test_var"] = (
        _ar_fit_mse(clean, np.ones(n_blocks, bool), cfg.block, cfg.ar_order, cfg.ridge, test) / float(test.var())
    )
    metrics["mse_clean_oracle_over_no_pruning"] = float(
        np.mean(np.array(per["mse_clean_oracle"]) / np.array(per["mse_no_pruning"]))
    )
    vs_random = paired_difference(per["arm_vs_random_10pct"], per["mse_random_10pct"], level=_TEST_LEVEL)
    vs_timeinf = paired_difference(per["arm_vs_timeinf_10pct"], per["mse_timeinf_10pct"], level=_TEST_LEVEL)
    metrics["mse_low_minus_random_10pct"] = vs_random.mean
    metrics["mse_low_minus_random_10pct_ub"] = vs_random.high
    metrics["mse_timelava_minus_timeinf_10pct"] = vs_timeinf.mean
    metrics["mse_timelava_minus_timeinf_10pct_ub"] = vs_timeinf.high
    rows = []
    for frac, tag in zip(cfg.prune_fracs, fr_keys, strict=True):
        rows.append(
            {
                "pruned": frac,
                "lowest_value": metrics[f"mse_low_{tag}"],
                "random_mean": metrics[f"mse_random_{tag}"],
                "random_sd": metrics[f"mse_random_sd_{tag}"],
                "highest_value": metrics[f"mse_high_{tag}"],
                "lava_lowest": metrics[f"mse_lava_{tag}"],
                "timeinf_lowest": metrics[f"mse_timeinf_{tag}"],
            }
        )
    fig, ax = new_figure("Forecasting MSE after pruning blocks", "fraction of blocks removed", "test MSE")
    fr = [r["pruned"] for r in rows]
    ax.plot(fr, [r["lowest_value"] for r in rows], "o-", label="lowest value removed")
    ax.plot(fr, [r["random_mean"] for r in rows], "s-", label="random removed (mean)")
    ax.plot(fr, [r["highest_value"] for r in rows], "^-", label="highest value removed")
    ax.plot(fr, [r["lava_lowest"] for r in rows], "d:", label="lowest LAVA value removed")
    ax.plot(fr, [r["timeinf_lowest"] for r in rows], "x:", label="highest TimeInf influence removed")
    ax.axhline(metrics["mse_no_pruning"], color="0.5", ls="--", label="no pruning")
    ax.legend(fontsize=7)
    checks = [
        # Preconditions. The AR(32) forecaster learns the clean series (its test MSE is under half the test
        # variance, the MSE of predicting the mean); the corruption hurts it (removing exactly the corrupted
        # blocks lowers the MSE by more than 20%, else pruning cannot help and the comparison is empty); and
        # the corrupted blocks are detectable by an oracle that knows the clean dynamics (the one-step error
        # of an AR model fitted on the clean reference), at the 0.9 bar the claim holds TimeLAVA to.
        Check("mse_clean_series_over_test_var", metrics["mse_clean_series_over_test_var"], "< 0.5",
              role="precondition"),
        Check("mse_clean_oracle_over_no_pruning", metrics["mse_clean_oracle_over_no_pruning"], "< 0.8",
              role="precondition"),
        Check("bad_block_auc_oracle_ar", metrics["bad_block_auc_oracle_ar"], ">= 0.9", role="precondition"),
        # Deviation: the comparisons are paired one-sided t tests at 5% over corruption draws (the upper end
        # of the 90% interval of the MSE difference must be below 0), not one draw's sign.
        Check("mse_low_minus_random_10pct_ub", vs_random.high, "< 0", comparative=True),
        Check("bad_block_auc", metrics["bad_block_auc"], ">= 0.9"),
        # "more informative than existing methods" (abstract), against TimeInf. Against LAVA no check: at 10%
        # both remove exactly the corrupted blocks on most draws (a tie at the clean oracle, MSE difference 0),
        # so the comparison would be decided by ties; the LAVA numbers are reported (metrics, card).
        Check("mse_timelava_minus_timeinf_10pct_ub", vs_timeinf.high, "< 0",
              paper="significantly more informative", comparative=True),
    ]
    return Outcome(metrics=metrics, checks=checks, figures={"pruning_mse": fig}, tables={"pruning": rows})


# ------------------------------------------------------------------------------------------------------------
# 6. Contaminated reference and the balanced-OT ablation (issue 32)
# ------------------------------------------------------------------------------------------------------------


@config
class ContaminationConfig:
    length: int = param(1000, 256, 10_000, help="evaluated and reference series length")
    seeds: int = param(3, 1, 10, help="independent draws (sub-seeds)")
    window: int = param(64, 8, 256)
    stride: int = param(8, 2, 256, help="at most window")
    fracs: tuple[float, ...] = param(
        (0.05, 0.1, 0.2, 0.3),
        0.0,
        0.5,
        lo_open=True,
        min_len=1,
        max_len=8,
        help="fraction of reference blocks replaced by outliers",
    )
    outlier_mag: float = param(20.0, 0.0, 1e4, lo_open=True, help="outlier level shift (+-) and spike size")
    kappa: float = param(2.0, 0.1, 100.0, help="TimeLAVA's KL penalty (paper: 2)")
    kappa_balanced: float = param(1000.0, 100.0, 1e4, help="balanced-OT ablation (brief: kappa -> large, 1e3)")
    # Controls (no balanced solve is run in them). Against the balanced ablation: the second arm is TimeLAVA on
    # references contaminated from an independent stream (null), with its value changes scaled by
    # 1 + planted_excess (planted). The AUC drop (a non-inferiority check, "drop < 0.05"): planted makes the
    # contamination harmless by construction (the reference is a fresh clean draw), null makes it harmful by
    # construction (the replaced blocks are copies of the evaluated series' own blocks, spikes included).
    planted_excess: float = param(0.5, 0.0, 10.0, lo_open=True, help="planted: balanced values move this much more")
    control: Control = "none"

    def __post_init__(self) -> None:
        if self.stride > self.window:
            raise ValueError(f"stride = {self.stride}: must be <= window ({self.window})")
        if self.length < 4 * self.window:
            raise ValueError(f"length = {self.length}: must be >= 4 * window ({4 * self.window})")


def contaminate_reference(
    ref: np.ndarray, frac: float, mag: float, window: int, rng: np.random.Generator
) -> np.ndarray:
    """Replace ``round(frac * blocks)`` random blocks of the reference by outliers: the block is shifted by
    ``+-mag`` and one point gets an extra spike of ``mag``. Returns a new array."""
    out = np.array(ref, dtype=float, copy=True)
    n_blocks = len(out) // window
    k = max(1, int(round(frac * n_blocks)))
    for i in rng.choice(n_blocks, k, replace=False):
        sl = slice(i * window, (i + 1) * window)
        out[sl] = out[sl] + mag * rng.choice([-1.0, 1.0]) + mag * rng.standard_normal(window)
        out[i * window + int(rng.integers(window))] += mag
    return out


@experiment(
    "timelava.contaminated_reference",
    claim="Bounded sensitivity to outlier contamination: with a fraction of the reference replaced by outliers, "
    "TimeLAVA's spike-detection AUC stays within 0.05 and its values move less (relative to their scale) than "
    "those of the balanced-OT ablation (kappa -> infinity)",
    presets={
        # quick: 6 draws (the paired test over draws needs them) at two fractions (each balanced solve is slow)
        "quick": ContaminationConfig(seeds=6, fracs=(0.1, 0.3)),
        "full": ContaminationConfig(length=2000, stride=4, seeds=8, fracs=(0.02, 0.05, 0.1, 0.2, 0.3, 0.4)),
        # smoke: one short draw (contract test; its checks may fail)
        "smoke": ContaminationConfig(length=256, seeds=1, window=32, stride=16, fracs=(0.1,)),
        "planted": ContaminationConfig(seeds=6, fracs=(0.1, 0.3), control="planted"),
        "null": ContaminationConfig(seeds=6, fracs=(0.1, 0.3), control="null"),
    },
)
def contaminated_reference(cfg: ContaminationConfig, rng: np.random.Generator) -> Outcome:
    # the second arm: the balanced ablation, or (controls) TimeLAVA on independently contaminated references
    second = "balanced" if cfg.control == "none" else "timelava_other_stream"
    kappas = {"timelava": cfg.kappa, second: cfg.kappa if cfg.control != "none" else cfg.kappa_balanced}
    rows = []
    auc0: dict[str, list[float]] = {m: [] for m in kappas}
    auc_last: dict[str, list[float]] = {m: [] for m in kappas}
    rel = {m: np.zeros((cfg.seeds, len(cfg.fracs))) for m in kappas}
    rho = {m: np.zeros((cfg.seeds, len(cfg.fracs))) for m in kappas}
    auc_ctrl: list[float] = []
    converged: list[float] = []
    oracle: list[float] = []
    for s, sub in enumerate(track(spawn(rng, cfg.seeds), "seeds", total=cfg.seeds)):
        r_x, r_ref, r_c = spawn(sub, 3)
        r_c2, r_alt = spawn(sub, 2)  # control streams, spawned after the three above
        x, y = make_spike_series(cfg.length, 0.02, (4.0, 7.0), r_x)
        # Precondition: the spikes stand out for an oracle that knows they are isolated points (see
        # anomaly_synthetic); without that the AUC and its drop measure nothing.
        oracle.append(_auc(y, np.abs(x - median_filter(x, size=5, mode="nearest"))))
        ref0 = synthetic_base(cfg.length, r_ref)
        refs = {
            m: [
                contaminate_reference(ref0, f, cfg.outlier_mag, cfg.window, g)
                for f, g in zip(cfg.fracs, spawn(r_c if m == "timelava" else r_c2, len(cfg.fracs)), strict=True)
            ]
            for m in kappas
        }
        if cfg.control == "none":
            refs[second] = refs["timelava"]  # paired: both kappas see the same contaminated references
        for method, kappa in track(list(kappas.items()), f"draw {s}: kappa variants"):
            v0 = value_segments(x, ref0, cfg.window, cfg.stride, kappa=kappa)
            converged.append(float(v0.converged))
            a0 = float(_auc(y, -v0.pointwise()))
            auc0[method].append(a0)
            scale = float(np.max(np.abs(v0.values)))
            for j, (frac, ref) in enumerate(zip(cfg.fracs, refs[method], strict=True)):
                v = value_segments(x, ref, cfg.window, cfg.stride, kappa=kappa)
                converged.append(float(v.converged))
                a = float(_auc(y, -v.pointwise()))
                change = v.values - v0.values
                if cfg.control == "planted" and method == second:
                    change = (1.0 + cfg.planted_excess) * change  # planted: these values move more
                rel[method][s, j] = float(np.max(np.abs(change))) / scale
                rho[method][s, j] = float(spearmanr(v.values, v0.values)[0])
                if j == len(cfg.fracs) - 1:
                    auc_last[method].append(a)
                rows.append(
                    {
                        "draw": s,
                        "method": method,
                        "kappa": kappa,
                        "frac": frac,
                        "auc": a,
                        "auc_clean": a0,
                        "max_abs_value_change": float(np.max(np.abs(change))),
                        "rel_value_change": rel[method][s, j],
                        "spearman_vs_clean": rho[method][s, j],
                    }
                )
        if cfg.control != "none":
            # the AUC-drop check's contaminated arm at the largest fraction: harmless (planted: a fresh clean
            # reference) or harmful (null: the replaced blocks copy the evaluated series, spikes included)
            if cfg.control == "planted":
                ref_c = synthetic_base(cfg.length, r_alt)
            else:
                ref_c = ref0.copy()
                n_blocks = cfg.length // cfg.window
                k = max(1, int(round(cfg.fracs[-1] * n_blocks)))
                for i in r_alt.choice(n_blocks, k, replace=False):
                    ref_c[i * cfg.window : (i + 1) * cfg.window] = x[i * cfg.window : (i + 1) * cfg.window]
            vc = value_segments(x, ref_c, cfg.window, cfg.stride, kappa=cfg.kappa)
            converged.append(float(vc.converged))
            auc_ctrl.append(float(_auc(y, -vc.pointwise())))
    if cfg.control != "none":
        auc_last["timelava"] = auc_ctrl
    drop = {m: float(np.mean(np.array(auc0[m]) - np.array(auc_last[m]))) for m in kappas}
    metrics = {
        "auc_clean_timelava_mean": float(np.mean(auc0["timelava"])),
        f"auc_clean_{second}_mean": float(np.mean(auc0[second])),
        "auc_drop_at_max_frac_timelava": drop["timelava"],
        f"auc_drop_at_max_frac_{second}": drop[second],
        "rel_value_change_timelava_mean": float(rel["timelava"].mean()),
        f"rel_value_change_{second}_mean": float(rel[second].mean()),
        "rel_value_change_timelava_max_frac": float(rel["timelava"][:, -1].mean()),
        f"rel_value_change_{second}_max_frac": float(rel[second][:, -1].mean()),
        "spearman_timelava_max_frac": float(rho["timelava"][:, -1].mean()),
        f"spearman_{second}_max_frac": float(rho[second][:, -1].mean()),
        "auc_oracle_median_min": float(min(oracle)),
        "solver_converged_share": float(np.mean(converged)),
    }
    # paired over draws (each draw's mean over the fractions): a one-sided t test at 5%
    per_draw = paired_difference(rel[second].mean(axis=1), rel["timelava"].mean(axis=1), level=_TEST_LEVEL)
    metrics["rel_change_balanced_minus_timelava"] = per_draw.mean
    metrics["rel_change_balanced_minus_timelava_lb"] = per_draw.low
    checks = [
        # Preconditions: every UOT solve reached its tolerance (else the values are not Eq. (5)'s), and the
        # planted spikes are visible to the running-median oracle (0.95, as in anomaly_synthetic).
        Check("solver_converged_share", metrics["solver_converged_share"], "== 1", role="precondition"),
        Check("auc_oracle_median_min", metrics["auc_oracle_median_min"], ">= 0.95", role="precondition"),
        # A non-inferiority comparison of two conditions (clean vs contaminated reference). Fails if
        # contamination of the reference destroys detection (e.g. outliers that the evaluated spikes get
        # matched to: outlier_mag close to the spike size, or fracs up to 0.5).
        Check("auc_drop_at_max_frac_timelava", drop["timelava"], "< 0.05", paper="bounded sensitivity",
              comparative=True),
        # Deviation: paired one-sided t test over draws (lower end of the 90% interval > 0) instead of the
        # sign of the mean; fails if the KL relaxation does not damp the outliers' effect.
        Check("rel_change_balanced_minus_timelava_lb", per_draw.low, "> 0", paper="KL relaxation (vs balanced OT)",
              comparative=True),
    ]
    fig, ax = new_figure(
        "Contaminated reference: value change",
        "fraction of reference blocks replaced",
        "max |v - v_clean| / max |v_clean|",
    )
    for method in kappas:
        ax.errorbar(
            cfg.fracs,
            rel[method].mean(axis=0),
            yerr=rel[method].std(axis=0),
            marker="o",
            label=f"{method} (kappa = {kappas[method]:g})",
        )
    ax.legend(fontsize=7)
    return Outcome(metrics=metrics, checks=checks, figures={"contamination": fig}, tables={"contamination": rows})
