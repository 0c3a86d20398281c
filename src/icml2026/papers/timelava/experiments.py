"""Registered TimeLAVA experiments: solver checks, anomaly detection, label noise, pruning."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from scipy.spatial.distance import cdist
from scipy.stats import kurtosis, spearmanr
from sklearn.metrics import roc_auc_score

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track
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
        auc = float(roc_auc_score(ds.labels, score))
        key = name.replace("-", "_")
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
                a = float(roc_auc_score(ds.labels, sc))
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
        score = -value_segments(x, ref, cfg.window, cfg.stride).pointwise()
        auc = float(roc_auc_score(y, score))
        metrics[f"seed{k}_auc_timelava"] = auc
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
                a = float(roc_auc_score(y, sc))
                metrics[f"seed{k}_auc_{method}"] = a
                row[method] = round(a, 4)
        rows.append(row)
        xh, _ = make_spike_series(cfg.length, cfg.heavy_frac, cfg.heavy_mag, r_h)
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
    checks.append(Check("kurtosis_gap_min", gap, "> 10"))
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
    repeats: int = param(1, 1, 20, help="independent flip draws per set")
    label_weight: float = param(1.0, 0.0, 100.0, help="c = 1 (Eq. 6)")
    kappa: float = param(2.0, 0.0, _KAPPA_HI, lo_open=True)
    eps: float = param(0.01, _EPS_REAL_LO, _EPS_HI)

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


@experiment(
    "timelava.label_noise",
    claim="With the LAVA label term (c = 1), TimeLAVA's values rank flipped labels of UCR training sets "
    "lower than LAVA on raw series does (AUROC) on at least 2 of 3 sets.",
    presets={
        "quick": LabelNoiseConfig(),
        "full": LabelNoiseConfig(datasets=("GunPoint", "ArrowHead", "ItalyPowerDemand", "OSULeaf"), repeats=3),
    },
)
def label_noise(cfg: LabelNoiseConfig, rng: np.random.Generator) -> Outcome:
    metrics: dict[str, float] = {}
    rows = []
    wins = 0
    for ds_name, stream in track(list(zip(cfg.datasets, spawn(rng, len(cfg.datasets)), strict=True)), "series"):
        ds = load_ucr_classification(ds_name)
        auc_t, auc_l = [], []
        for r in spawn(stream, cfg.repeats):
            noisy, mask = flip_labels(ds.y_train, cfg.flip_frac, r)
            tv = value_samples(
                ds.x_train,
                ds.x_test,
                cfg.kappa,
                cfg.eps,
                labels=noisy,
                reference_labels=ds.y_test,
                label_weight=cfg.label_weight,
            )
            lv, _ = lava_sample_values(ds.x_train, ds.x_test, noisy, ds.y_test, cfg.label_weight)
            auc_t.append(float(roc_auc_score(mask, -tv.values)))
            auc_l.append(float(roc_auc_score(mask, -lv)))
        mt, ml = float(np.mean(auc_t)), float(np.mean(auc_l))
        metrics[f"{ds_name}_auroc_timelava"] = mt
        metrics[f"{ds_name}_auroc_lava_raw"] = ml
        wins += int(mt > ml)
        rows.append(
            {
                "dataset": ds_name,
                "n_train": len(ds.y_train),
                "timelava": round(mt, 4),
                "lava_raw": round(ml, 4),
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
    checks = [Check("n_wins_over_lava", wins, f">= {need}")]
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


@experiment(
    "timelava.pruning",
    claim="Removing the lowest-value blocks of a corrupted training series lowers the forecasting MSE of an "
    "AR model more than removing random blocks (and removing the highest-value blocks hurts).",
    presets={
        "quick": PruningConfig(),
        "full": PruningConfig(random_draws=100, prune_fracs=(0.05, 0.1, 0.15, 0.2)),
    },
)
def pruning(cfg: PruningConfig, rng: np.random.Generator) -> Outcome:
    r_cor, r_rand = spawn(rng, 2)
    full = load_ecg_diff_count3().reference  # the clean TRAIN_NA series (10,000 points)
    x = full[: cfg.train_length].copy()
    ref = full[cfg.train_length : cfg.train_length + cfg.reference_length]
    test = full[cfg.train_length + cfg.reference_length :]
    n_blocks = len(x) // cfg.block
    x = x[: n_blocks * cfg.block]
    n_bad = max(1, int(round(cfg.corrupt_frac * n_blocks)))
    bad = r_cor.choice(n_blocks, n_bad, replace=False)
    sd = x.std()
    for k, i in enumerate(bad):  # half noise blocks, half spike blocks
        sl = slice(i * cfg.block, (i + 1) * cfg.block)
        if k % 2 == 0:
            x[sl] += r_cor.normal(0, 1.0 * sd, cfg.block)
        else:
            pos = r_cor.choice(cfg.block, 4, replace=False)
            x[sl][pos] += r_cor.choice([-1, 1], 4) * r_cor.uniform(4, 8, 4) * sd
    res = value_segments(x, ref, cfg.block, cfg.block, reference_stride=8)
    order = np.argsort(res.values)  # ascending: lowest value first
    # Competitors on the same blocks (issue 32): LAVA values (raw blocks, balanced OT) and TimeInf
    # self-influence (point scores averaged over each block; high = harmful, so the value is minus it).
    lava_v = lava_values(x, ref, cfg.block, cfg.block, reference_stride=8).values
    tinf = timeinf_scores(x, cfg.block).reshape(n_blocks, cfg.block).mean(axis=1)
    other_orders = {"lava": np.argsort(lava_v), "timeinf": np.argsort(-tinf)}
    is_bad = np.zeros(n_blocks, dtype=bool)
    is_bad[bad] = True
    metrics = {
        "bad_block_auc": float(roc_auc_score(is_bad, -res.values)),
        "bad_block_auc_lava": float(roc_auc_score(is_bad, -lava_v)),
        "bad_block_auc_timeinf": float(roc_auc_score(is_bad, tinf)),
        "mse_no_pruning": _ar_fit_mse(x, np.ones(n_blocks, bool), cfg.block, cfg.ar_order, cfg.ridge, test),
        "mse_clean_oracle": _ar_fit_mse(x, ~is_bad, cfg.block, cfg.ar_order, cfg.ridge, test),
    }
    rows = []
    for frac in track(cfg.prune_fracs, "pruned fractions"):
        k = max(1, int(round(frac * n_blocks)))
        keep_low = np.ones(n_blocks, bool)
        keep_low[order[:k]] = False
        keep_high = np.ones(n_blocks, bool)
        keep_high[order[-k:]] = False
        mse_low = _ar_fit_mse(x, keep_low, cfg.block, cfg.ar_order, cfg.ridge, test)
        mse_high = _ar_fit_mse(x, keep_high, cfg.block, cfg.ar_order, cfg.ridge, test)
        mse_other = {}
        for method, o in other_orders.items():
            keep_o = np.ones(n_blocks, bool)
            keep_o[o[:k]] = False
            mse_other[method] = _ar_fit_mse(x, keep_o, cfg.block, cfg.ar_order, cfg.ridge, test)
        rand = []
        for _ in range(cfg.random_draws):
            keep = np.ones(n_blocks, bool)
            keep[r_rand.choice(n_blocks, k, replace=False)] = False
            rand.append(_ar_fit_mse(x, keep, cfg.block, cfg.ar_order, cfg.ridge, test))
        tag = f"{int(round(frac * 100))}pct"
        metrics[f"mse_low_{tag}"] = mse_low
        metrics[f"mse_random_{tag}"] = float(np.mean(rand))
        metrics[f"mse_high_{tag}"] = mse_high
        metrics[f"mse_lava_{tag}"] = mse_other["lava"]
        metrics[f"mse_timeinf_{tag}"] = mse_other["timeinf"]
        rows.append(
            {
                "pruned": frac,
                "lowest_value": mse_low,
                "random_mean": float(np.mean(rand)),
                "random_sd": float(np.std(rand)),
                "highest_value": mse_high,
                "lava_lowest": mse_other["lava"],
                "timeinf_lowest": mse_other["timeinf"],
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
    ten = "10pct"
    checks = [
        Check(
            "mse_low_minus_random_10pct",
            metrics[f"mse_low_{ten}"] - metrics[f"mse_random_{ten}"],
            "< 0",
        ),
        Check("bad_block_auc", metrics["bad_block_auc"], ">= 0.9"),
        # "more informative than existing methods" (abstract), against TimeInf: fails if pruning the blocks of
        # highest TimeInf influence gives an equal or lower forecasting MSE. Against LAVA no check: at 10% both
        # remove exactly the corrupted blocks on 2 of 3 seeds (a tie at the clean oracle, MSE difference 0),
        # so a strict comparison would be decided by ties; the LAVA numbers are reported (metrics, card).
        Check(
            "mse_timelava_minus_timeinf_10pct",
            metrics[f"mse_low_{ten}"] - metrics[f"mse_timeinf_{ten}"],
            "< 0",
            paper="significantly more informative",
        ),
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
        "quick": ContaminationConfig(),
        "full": ContaminationConfig(length=2000, stride=4, seeds=5, fracs=(0.02, 0.05, 0.1, 0.2, 0.3, 0.4)),
        # smoke: one short draw (contract test; its checks may fail)
        "smoke": ContaminationConfig(length=256, seeds=1, window=32, stride=16, fracs=(0.1,)),
    },
)
def contaminated_reference(cfg: ContaminationConfig, rng: np.random.Generator) -> Outcome:
    kappas = {"timelava": cfg.kappa, "balanced": cfg.kappa_balanced}
    rows = []
    auc0: dict[str, list[float]] = {m: [] for m in kappas}
    auc_last: dict[str, list[float]] = {m: [] for m in kappas}
    rel = {m: np.zeros((cfg.seeds, len(cfg.fracs))) for m in kappas}
    rho = {m: np.zeros((cfg.seeds, len(cfg.fracs))) for m in kappas}
    for s, sub in enumerate(track(spawn(rng, cfg.seeds), "seeds", total=cfg.seeds)):
        r_x, r_ref, r_c = spawn(sub, 3)
        x, y = make_spike_series(cfg.length, 0.02, (4.0, 7.0), r_x)
        ref0 = synthetic_base(cfg.length, r_ref)
        refs = [
            contaminate_reference(ref0, f, cfg.outlier_mag, cfg.window, g)
            for f, g in zip(cfg.fracs, spawn(r_c, len(cfg.fracs)), strict=True)
        ]
        for method, kappa in track(list(kappas.items()), f"draw {s}: kappa variants"):
            v0 = value_segments(x, ref0, cfg.window, cfg.stride, kappa=kappa)
            a0 = float(roc_auc_score(y, -v0.pointwise()))
            auc0[method].append(a0)
            scale = float(np.max(np.abs(v0.values)))
            for j, (frac, ref) in enumerate(zip(cfg.fracs, refs, strict=True)):
                v = value_segments(x, ref, cfg.window, cfg.stride, kappa=kappa)
                a = float(roc_auc_score(y, -v.pointwise()))
                rel[method][s, j] = float(np.max(np.abs(v.values - v0.values))) / scale
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
                        "max_abs_value_change": float(np.max(np.abs(v.values - v0.values))),
                        "rel_value_change": rel[method][s, j],
                        "spearman_vs_clean": rho[method][s, j],
                    }
                )
    drop = {m: float(np.mean(np.array(auc0[m]) - np.array(auc_last[m]))) for m in kappas}
    metrics = {
        "auc_clean_timelava_mean": float(np.mean(auc0["timelava"])),
        "auc_clean_balanced_mean": float(np.mean(auc0["balanced"])),
        "auc_drop_at_max_frac_timelava": drop["timelava"],
        "auc_drop_at_max_frac_balanced": drop["balanced"],
        "rel_value_change_timelava_mean": float(rel["timelava"].mean()),
        "rel_value_change_balanced_mean": float(rel["balanced"].mean()),
        "rel_value_change_timelava_max_frac": float(rel["timelava"][:, -1].mean()),
        "rel_value_change_balanced_max_frac": float(rel["balanced"][:, -1].mean()),
        "spearman_timelava_max_frac": float(rho["timelava"][:, -1].mean()),
        "spearman_balanced_max_frac": float(rho["balanced"][:, -1].mean()),
    }
    paired = float(np.mean(rel["balanced"] - rel["timelava"]))
    metrics["rel_change_balanced_minus_timelava"] = paired
    checks = [
        # fails if contamination of the reference destroys detection (e.g. outliers that the evaluated spikes
        # get matched to: outlier_mag close to the spike size, or fracs up to 0.5)
        Check("auc_drop_at_max_frac_timelava", drop["timelava"], "< 0.05", paper="bounded sensitivity"),
        # paired over draws and fractions; fails if the KL relaxation does not damp the outliers' effect
        Check("rel_change_balanced_minus_timelava", paired, "> 0", paper="KL relaxation (vs balanced OT)"),
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
