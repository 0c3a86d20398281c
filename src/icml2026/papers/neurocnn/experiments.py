"""Registered experiments of NeurOCNN (brief criteria 1-6)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from scipy.interpolate import CubicSpline

from icml2026.core import Check, Outcome, experiment, spawn, torch_generator
from icml2026.core.plotting import new_figure

from .baselines import FixedCNN, FNOClassifier, ResampleBack, ckconv_model
from .data import SignalBank, make_ecg_bank, make_sleep_bank
from .model import NeurOCNN
from .pooling import FourierProjectionPool
from .spline_conv import SplineConv1d, kernel_length, natural_spline_basis, tap_positions
from .training import accuracy, macro_f1, predict, train_classifier

__all__ = ["BasisConfig", "LayerInvarianceConfig", "ModelInvarianceConfig", "ZeroShotConfig", "EcgConfig"]


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")


# ---------------------------------------------------------------------------------------------------------
# Criterion 1: the spline basis
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BasisConfig:
    rates: tuple[float, ...] = (30, 50, 75, 80, 90, 100, 128, 150, 200, 256, 300, 500, 1000)
    n_knots: int = 15  # paper: 15
    duration_s: float = 0.5  # paper: 0.5 s
    in_channels: int = 2
    out_channels: int = 3

    def __post_init__(self) -> None:
        if not self.rates or any(r <= 0 for r in self.rates):
            raise ValueError("rates must be a non-empty tuple of positive Hz")
        if self.n_knots < 2:
            raise ValueError("n_knots must be >= 2")
        _positive("duration_s", self.duration_s)


@experiment(
    "neurocnn.spline_basis",
    claim="The kernel P @ A^T equals the natural cubic spline through the control points on every tap "
    "grid, and the kernel length is odd and round(D fs) or round(D fs) + 1.",
    presets={"quick": BasisConfig(), "full": BasisConfig(n_knots=15, in_channels=8, out_channels=8)},
)
def spline_basis(cfg: BasisConfig, rng: np.random.Generator) -> Outcome:
    layer = SplineConv1d(
        cfg.in_channels, cfg.out_channels, cfg.n_knots, cfg.duration_s, generator=torch_generator(rng)
    )
    p = layer.control.detach().double().numpy()
    knots = np.linspace(-0.5, 0.5, cfg.n_knots)
    max_err, n_bad_len, n_even = 0.0, 0, 0
    rows = []
    for spacing in ("exact", "released"):
        layer.spacing = spacing
        for fs in cfg.rates:
            u = tap_positions(cfg.duration_s, fs, spacing)
            ref = CubicSpline(knots, p, axis=-1, bc_type="natural")(u)
            ref[..., np.abs(u) > 0.5 + 1e-12] = 0.0  # compact support
            ker = layer.kernel(fs).detach().double().numpy()
            own = p @ natural_spline_basis(knots, u).T
            err = max(float(np.abs(ker - ref).max()), float(np.abs(own - ref).max()))
            max_err = max(max_err, err)
            n_taps = kernel_length(cfg.duration_s, fs)
            base = max(1, round(cfg.duration_s * fs))
            n_even += int(n_taps % 2 == 0)
            n_bad_len += int(n_taps not in (base, base + 1) or ker.shape[-1] != n_taps)
            rows.append({"spacing": spacing, "fs_hz": fs, "taps": n_taps, "max_abs_err": err})
    return Outcome(
        metrics={"max_abs_err": max_err, "n_even_kernels": n_even, "n_bad_lengths": n_bad_len},
        checks=[
            Check("max_abs_err_vs_scipy", max_err, "< 1e-6", paper="1e-6 (brief)"),
            Check("n_even_kernels", n_even, "== 0", paper="0 (always odd)"),
            Check("n_bad_lengths", n_bad_len, "== 0", paper="0"),
        ],
        tables={"per_rate": rows},
    )


# ---------------------------------------------------------------------------------------------------------
# Criterion 2: layer convergence to the continuous convolution; Fourier pooling invariance
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerInvarianceConfig:
    rates: tuple[float, ...] = (80, 90, 100, 128, 200, 300, 500, 1000)
    ref_fs: float = 4000.0  # brief: 4 kHz reference
    # Deviation: the brief gives one number per rate; we take the median over random (layer, signal) draws
    # (the brief's figures match the mean over many draws; both are reported)
    n_draws: int = 8
    n_sines: int = 5
    f_max: float = 18.0  # Hz, brief: sinusoids <= 18 Hz
    window_s: float = 10.0
    trim_s: float = 0.5
    n_knots: int = 15
    duration_s: float = 0.5
    pool_modes: int = 16
    pool_segment_s: float = 2.0

    def __post_init__(self) -> None:
        if self.n_draws < 1 or self.n_sines < 1:
            raise ValueError("n_draws and n_sines must be >= 1")
        if any(r <= 0 for r in self.rates) or self.ref_fs <= max(self.rates):
            raise ValueError("rates must be positive and below ref_fs")
        if 2 * self.trim_s >= self.window_s:
            raise ValueError("trim_s must be less than half of window_s")


def _sines(amp: np.ndarray, freq: np.ndarray, phase: np.ndarray, fs: float, window_s: float) -> torch.Tensor:
    t = np.arange(int(round(window_s * fs))) / fs
    x = (amp[..., None] * np.cos(2 * np.pi * freq[..., None] * t + phase[..., None])).sum(-2)
    return torch.as_tensor(x[None], dtype=torch.float32)


@experiment(
    "neurocnn.layer_invariance",
    claim="A random spline-conv layer's output at rate fs converges to the continuous convolution "
    "(4 kHz reference) as fs grows, and Fourier pooling tokens agree across rates.",
    presets={"quick": LayerInvarianceConfig(n_draws=8), "full": LayerInvarianceConfig(n_draws=32)},
)
def layer_invariance(cfg: LayerInvarianceConfig, rng: np.random.Generator) -> Outcome:
    errs = {sp: np.zeros((cfg.n_draws, len(cfg.rates))) for sp in ("exact", "released")}
    for d, child in enumerate(spawn(rng, cfg.n_draws)):
        layer = SplineConv1d(2, 3, cfg.n_knots, cfg.duration_s, generator=torch_generator(child))
        amp = child.standard_normal((2, cfg.n_sines))
        freq = child.uniform(0.5, cfg.f_max, (2, cfg.n_sines))
        phase = child.uniform(0, 2 * np.pi, (2, cfg.n_sines))
        with torch.no_grad():
            layer.spacing = "exact"
            y_ref, _ = layer(_sines(amp, freq, phase, cfg.ref_fs, cfg.window_s), cfg.ref_fs)
            t_ref = np.arange(y_ref.shape[-1]) / cfg.ref_fs
            for spacing in ("exact", "released"):
                layer.spacing = spacing
                for j, fs in enumerate(cfg.rates):
                    y, _ = layer(_sines(amp, freq, phase, fs, cfg.window_s), fs)
                    t = np.arange(y.shape[-1]) / fs
                    keep = (t >= cfg.trim_s) & (t <= cfg.window_s - cfg.trim_s)
                    ref = np.stack([np.interp(t[keep], t_ref, y_ref[0, o].numpy()) for o in range(3)])
                    errs[spacing][d, j] = np.linalg.norm(y[0].numpy()[:, keep] - ref) / np.linalg.norm(ref)
    med = {sp: np.median(e, axis=0) for sp, e in errs.items()}
    mean = {sp: e.mean(axis=0) for sp, e in errs.items()}
    # Fourier pooling of one smooth function at 100 vs 1000 Hz
    pool = FourierProjectionPool(cfg.pool_modes, cfg.pool_segment_s)
    amp = rng.standard_normal((4, 3))
    freq = rng.uniform(0.1, 3.0, (4, 3))
    phase = rng.uniform(0, 2 * np.pi, (4, 3))
    tok = {fs: pool(_sines(amp, freq, phase, fs, cfg.window_s), fs)[0] for fs in (100.0, 1000.0)}
    pool_err = float(torch.linalg.norm(tok[100.0] - tok[1000.0]) / torch.linalg.norm(tok[1000.0]))

    metrics: dict[str, float] = {"pool_rel_err_100_vs_1000": pool_err}
    rows = []
    for j, fs in enumerate(cfg.rates):
        metrics[f"rel_l2_exact_{fs:g}hz"] = float(med["exact"][j])
        metrics[f"rel_l2_released_{fs:g}hz"] = float(med["released"][j])
        metrics[f"rel_l2_exact_mean_{fs:g}hz"] = float(mean["exact"][j])
        rows.append(
            {
                "fs_hz": fs,
                "exact_median": float(med["exact"][j]),
                "exact_mean": float(mean["exact"][j]),
                "released_median": float(med["released"][j]),
                "released_mean": float(mean["released"][j]),
            }
        )
    paper = {80: "0.095", 100: "0.074", 128: "0.057", 200: "0.035", 300: "0.022", 500: "0.013", 1000: "0.005"}
    checks = []
    for j, fs in enumerate(cfg.rates):
        bound = 0.10 if fs <= 128 else 0.04 if fs <= 200 else None
        if fs >= 500:
            bound = 0.02
        if bound is not None and fs != 90:  # 90 Hz is shown for the spacing comparison only
            checks.append(
                Check(f"rel_l2_exact_{fs:g}hz", med["exact"][j], f"<= {bound}", paper=paper.get(int(fs)))
            )
    exact_sorted = [med["exact"][j] for j in np.argsort(cfg.rates) if cfg.rates[j] != 90]
    n_increases = int(sum(b > a for a, b in zip(exact_sorted[:-1], exact_sorted[1:], strict=True)))
    metrics["n_increases_exact"] = n_increases
    checks.append(Check("n_increases_with_fs_exact", n_increases, "== 0", paper="decreasing"))
    checks.append(Check("pool_rel_err_100_vs_1000", pool_err, "< 0.02", paper="< 0.02 (brief)"))

    fig, ax = new_figure(
        "Spline-conv layer vs 4 kHz reference",
        "sampling rate fs (Hz)",
        "relative L2 error (median over draws)",
        logx=True,
        logy=True,
    )
    rates = np.array(cfg.rates, dtype=float)
    ax.plot(rates, med["exact"], "o-", label="exact 1/fs taps")
    ax.plot(rates, med["released"], "s--", label="released linspace taps")
    ax.plot(
        rates,
        med["exact"][list(cfg.rates).index(100)] * 100 / rates if 100 in cfg.rates else rates * 0,
        ":",
        color="gray",
        label="~1/fs",
    )
    ax.legend()
    return Outcome(
        metrics=metrics, checks=checks, figures={"layer_error_vs_rate": fig}, tables={"per_rate": rows}
    )


# ---------------------------------------------------------------------------------------------------------
# Criterion 3: an untrained model gives the same logits at different rates
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelInvarianceConfig:
    n_windows: int = 16
    channels: tuple[int, ...] = (64, 128, 64, 32)  # paper: (64, 128, 64, 32); no training, so paper size
    n_knots: int = 15  # paper: 15
    duration_s: float = 0.5  # paper: 0.5 s
    n_modes: int = 50  # paper: 50
    segment_s: float = 5.0  # paper: 5 s
    window_s: float = 30.0  # paper: 30 s
    base_fs: float = 100.0
    rates: tuple[float, ...] = (200.0, 300.0)

    def __post_init__(self) -> None:
        if self.n_windows < 1:
            raise ValueError("n_windows must be >= 1")
        if self.channels[-1] % 4:
            raise ValueError("the last width must be divisible by the 4 attention heads")


@experiment(
    "neurocnn.model_invariance",
    claim="An untrained NeurOCNN gives nearly the same logits for one analytic signal sampled at "
    "100 Hz and at 200 / 300 Hz, unlike a fixed-kernel CNN.",
    presets={"quick": ModelInvarianceConfig(n_windows=4), "full": ModelInvarianceConfig(n_windows=32)},
)
def model_invariance(cfg: ModelInvarianceConfig, rng: np.random.Generator) -> Outcome:
    data_rng, model_rng = spawn(rng, 2)
    bank = make_sleep_bank(cfg.n_windows, data_rng, window_s=cfg.window_s)
    gen = torch_generator(model_rng)
    model = NeurOCNN(
        1,
        5,
        cfg.channels,
        cfg.n_knots,
        cfg.duration_s,
        cfg.n_modes,
        cfg.segment_s,
        cfg.window_s,
        generator=gen,
    ).eval()
    cnn = FixedCNN(1, 5, cfg.channels, generator=gen).eval()
    metrics: dict[str, float] = {}
    checks = []
    with torch.no_grad():
        x0 = torch.as_tensor(bank.sample(cfg.base_fs))
        z0, c0 = model(x0, cfg.base_fs), cnn(x0, cfg.base_fs)
        for fs in cfg.rates:
            x = torch.as_tensor(bank.sample(fs))
            rel = float(torch.linalg.norm(model(x, fs) - z0) / torch.linalg.norm(z0))
            rel_cnn = float(torch.linalg.norm(cnn(x, fs) - c0) / torch.linalg.norm(c0))
            metrics[f"neurocnn_rel_diff_{fs:g}hz"] = rel
            metrics[f"cnn_rel_diff_{fs:g}hz"] = rel_cnn
            checks.append(Check(f"neurocnn_rel_diff_{fs:g}hz", rel, "< 0.05", paper="< 0.05 (brief)"))
            # "unlike a fixed-kernel CNN": at least twice NeurOCNN's 5% bound (our check, not the brief's)
            checks.append(Check(f"cnn_rel_diff_{fs:g}hz", rel_cnn, ">= 0.1", paper="(not quantified)"))
    return Outcome(metrics=metrics, checks=checks)


# ---------------------------------------------------------------------------------------------------------
# Criteria 4-5: zero-shot sampling-rate transfer on the synthetic sleep-like task
# ---------------------------------------------------------------------------------------------------------
_ALL_MODELS = ("neurocnn", "cnn", "fno", "ckconv")


@dataclass(frozen=True)
class ZeroShotConfig:
    # Deviation: CPU scale throughout (paper values in the comments)
    n_train: int = 3000  # brief (CPU scale): 3k-6k training windows
    n_val: int = 400
    n_test: int = 500
    epochs: int = 20  # paper: 20-40; brief (CPU scale): ~10 (8 left NeurOCNN still improving)
    batch_size: int = 32  # paper: 64
    lr: float = 1e-3  # paper: 1e-3
    channels: tuple[int, ...] = (16, 32, 32, 16)  # paper: (64, 128, 64, 32); brief's CPU size
    n_knots: int = 12  # paper: 15
    duration_s: float = 0.25  # paper: 0.5
    n_modes: int = 16  # paper: 50
    segment_s: float = 2.0  # paper: 5
    window_s: float = 10.0  # paper: 30
    train_fs: float = 100.0  # paper: 100
    test_rates: tuple[float, ...] = (75, 100, 150, 200, 250, 300, 500)
    models: tuple[str, ...] = ("neurocnn", "cnn", "fno", "ckconv")
    cnn_kernel: int = 9
    fno_modes: int = 128  # Deviation: paper 150 modes over 30 s (0-2.5 Hz); ours cover 0-6.4 Hz
    fno_hidden: int = 16  # paper: 128
    difficulty: float = 1.0
    # acceptance thresholds (brief criterion 4); the quick preset loosens them to its tiny scale
    min_train_acc: float = 0.85
    tol_unseen: float = 0.03
    tol_75: float = 0.05
    min_cnn_drop: float = 0.15

    def __post_init__(self) -> None:
        for name in ("n_train", "n_val", "n_test", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.train_fs not in self.test_rates:
            raise ValueError("test_rates must include train_fs")
        unknown = set(self.models) - set(_ALL_MODELS)
        if unknown or not self.models:
            raise ValueError(f"models must be a non-empty subset of {_ALL_MODELS}, got {self.models}")
        if any(r <= 0 for r in self.test_rates):
            raise ValueError("test_rates must be positive")


def _build(name: str, cfg: ZeroShotConfig, n_classes: int, gen: torch.Generator) -> torch.nn.Module:
    # the two continuous-kernel models share backbone, pooling and head settings
    shared = dict(
        channels=cfg.channels,
        duration_s=cfg.duration_s,
        n_modes=cfg.n_modes,
        segment_s=cfg.segment_s,
        window_s=cfg.window_s,
        generator=gen,
    )
    if name == "neurocnn":
        return NeurOCNN(1, n_classes, n_knots=cfg.n_knots, **shared)  # type: ignore[arg-type]
    if name == "ckconv":
        return ckconv_model(1, n_classes, **shared)  # type: ignore[arg-type]
    if name == "fno":
        return FNOClassifier(
            1,
            n_classes,
            n_modes=cfg.fno_modes,
            hidden=cfg.fno_hidden,
            d=cfg.channels[-1],
            pool_modes=cfg.n_modes,
            segment_s=cfg.segment_s,
            generator=gen,
        )
    return FixedCNN(1, n_classes, cfg.channels, cfg.cnn_kernel, generator=gen)


def _zero_shot_metrics(
    results: dict[str, dict[float, tuple[float, float]]], curves: dict[str, list[float]]
) -> tuple[dict[str, float], list[dict[str, float | str]]]:
    """Flatten per-model, per-rate (accuracy, macro-F1) and validation curves into metrics and table rows."""
    metrics: dict[str, float] = {}
    for name, curve in curves.items():
        metrics[f"{name}_best_val_acc"] = max(curve)
        metrics[f"{name}_best_epoch"] = int(np.argmax(curve)) + 1
    rows: list[dict[str, float | str]] = []
    for row, per_rate in results.items():
        for fs, (acc, f1) in per_rate.items():
            metrics[f"{row}_acc_{fs:g}hz"] = acc
            metrics[f"{row}_macro_f1_{fs:g}hz"] = f1
            rows.append({"model": row, "fs_hz": fs, "accuracy": acc, "macro_f1": f1})
    return metrics, rows


def _zero_shot(
    cfg: ZeroShotConfig, train: SignalBank, val: SignalBank, test: SignalBank, rng: np.random.Generator
) -> tuple[dict[str, dict[float, tuple[float, float]]], dict[str, float], dict[str, list[float]]]:
    """Train every model at train_fs and evaluate at each test rate.

    Returns ``{row: {fs: (accuracy, macro_f1)}}``, timings, and each model's validation-accuracy curve.
    """
    n_classes = len(train.class_names)
    x_tr, x_va = train.sample(cfg.train_fs), val.sample(cfg.train_fs)
    x_te = {fs: test.sample(fs) for fs in cfg.test_rates}
    results: dict[str, dict[float, tuple[float, float]]] = {}
    timings: dict[str, float] = {}
    curves: dict[str, list[float]] = {}
    # one child stream per model name, so a model's result does not depend on which others are run
    children = dict(zip(_ALL_MODELS, spawn(rng, len(_ALL_MODELS)), strict=True))
    for name in cfg.models:
        gen = torch_generator(children[name])
        model = _build(name, cfg, n_classes, gen)
        start = time.perf_counter()
        hist = train_classifier(
            model,
            x_tr,
            train.labels,
            cfg.train_fs,
            x_va,
            val.labels,
            gen,
            cfg.epochs,
            cfg.batch_size,
            cfg.lr,
            progress=f"train {name} at {cfg.train_fs:g} Hz (epochs)",
        )
        timings[f"train_{name}_s"] = time.perf_counter() - start
        # the validation curve (at train_fs) says whether a model was still improving when training stopped
        curves[name] = hist.val_accuracy
        variants: dict[str, torch.nn.Module] = {name: model}
        if name == "cnn":
            variants = {"cnn_raw": model, "cnn_resample_back": ResampleBack(model, cfg.train_fs)}
        for row, net in variants.items():
            results[row] = {}
            for fs in cfg.test_rates:
                pred = predict(net, x_te[fs], fs)
                results[row][fs] = (accuracy(test.labels, pred), macro_f1(test.labels, pred, n_classes))
        if name == "neurocnn":  # same weights, the released code's tap spacing (identical at 100 Hz)
            model.set_spacing("released")  # type: ignore[operator]  # nn.Module attribute typing
            results["neurocnn_released_taps"] = {}
            for fs in cfg.test_rates:
                pred = predict(model, x_te[fs], fs)
                results["neurocnn_released_taps"][fs] = (
                    accuracy(test.labels, pred),
                    macro_f1(test.labels, pred, n_classes),
                )
            model.set_spacing("exact")  # type: ignore[operator]  # nn.Module attribute typing
    return results, timings, curves


def _rate_figure(results: dict[str, dict[float, tuple[float, float]]], title: str, which: int, ylabel: str):
    fig, ax = new_figure(title, "test sampling rate (Hz)", ylabel)
    for row, per_rate in results.items():
        rates = sorted(per_rate)
        ax.plot(rates, [per_rate[r][which] for r in rates], "o-", label=row)
    ax.axvline(100.0, color="gray", ls=":", lw=1)
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7)
    return fig


@experiment(
    "neurocnn.sleep_zero_shot",
    claim="Trained at 100 Hz on sleep-like EEG, NeurOCNN keeps its accuracy at unseen rates 75-500 Hz "
    "zero-shot, while a fixed-kernel CNN on raw new-rate input collapses; NeurOCNN >= FNO.",
    presets={
        # Quick scale (~1 min): NeurOCNN is far from converged (the brief's >= 0.85 is a full-preset
        # criterion), so the quick checks ask that it has learned something (>= 0.3, 1.5x the 0.2 chance
        # level, so that a gap near 0 is not the trivial gap of a chance-level model), that its accuracy at
        # 75 / 200 Hz stays within 5 points of 100 Hz, and that the fixed CNN on raw input drops >= 10.
        "quick": ZeroShotConfig(
            n_train=600,
            n_val=100,
            n_test=200,
            epochs=5,
            channels=(8, 16, 16, 8),
            test_rates=(75, 100, 200),
            models=("neurocnn", "cnn"),
            min_train_acc=0.3,
            tol_unseen=0.05,
            tol_75=0.05,
            min_cnn_drop=0.1,
        ),
        "full": ZeroShotConfig(),
    },
)
def sleep_zero_shot(cfg: ZeroShotConfig, rng: np.random.Generator) -> Outcome:
    if "neurocnn" not in cfg.models:
        raise ValueError(f"the claim is about NeurOCNN: models must include 'neurocnn', got {cfg.models}")
    r_tr, r_va, r_te, r_mod = spawn(rng, 4)
    train = make_sleep_bank(cfg.n_train, r_tr, cfg.window_s, cfg.difficulty)
    val = make_sleep_bank(cfg.n_val, r_va, cfg.window_s, cfg.difficulty)
    test = make_sleep_bank(cfg.n_test, r_te, cfg.window_s, cfg.difficulty)
    results, timings, curves = _zero_shot(cfg, train, val, test, r_mod)
    metrics, rows = _zero_shot_metrics(results, curves)
    f0 = cfg.train_fs
    neuro = results["neurocnn"]
    acc0 = neuro[f0][0]
    checks = [Check("neurocnn_acc_train_rate", acc0, f">= {cfg.min_train_acc}", paper=">= 0.85 (brief)")]
    for fs in cfg.test_rates:
        if fs == f0:
            continue
        tol = cfg.tol_75 if fs < f0 else cfg.tol_unseen
        checks.append(
            Check(
                f"neurocnn_acc_gap_{fs:g}hz",
                abs(neuro[fs][0] - acc0),
                f"<= {tol}",
                paper=f"<= {tol} (brief: stable)",
            )
        )
    if "cnn_raw" in results:
        high = [fs for fs in cfg.test_rates if fs >= 2 * f0]
        if high:
            drop = min(results["cnn_raw"][f0][0] - results["cnn_raw"][fs][0] for fs in high)
            metrics["cnn_raw_min_drop_ge_200hz"] = drop
            checks.append(
                Check(
                    "cnn_raw_min_drop_at_>=2x_rate", drop, f">= {cfg.min_cnn_drop}", paper=">= 0.15 (brief)"
                )
            )
    if "fno" in results:
        margin = acc0 - results["fno"][f0][0]
        metrics["neurocnn_minus_fno_acc"] = margin
        checks.append(
            Check("neurocnn_minus_fno_acc_train_rate", margin, ">= 0", paper="> 0 (outperforms NOs)")
        )
    fig = _rate_figure(results, "Sleep-like EEG: trained at 100 Hz", 0, "accuracy")
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"accuracy_vs_rate": fig},
        tables={"zero_shot": rows},
        timings=timings,
    )


# ---------------------------------------------------------------------------------------------------------
# Criterion 6: the same protocol on synthetic ECG
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EcgConfig:
    n_recordings_per_class: int = 8
    windows_per_recording: int = 25
    recording_s: float = 60.0
    window_s: float = 8.0  # CinC 2017 frames in the paper: 8 s
    epochs: int = 10
    batch_size: int = 32
    lr: float = 1e-3
    channels: tuple[int, ...] = (8, 16, 16, 8)
    n_knots: int = 12
    duration_s: float = 0.25
    n_modes: int = 16
    segment_s: float = 2.0
    train_fs: float = 100.0
    test_rates: tuple[float, ...] = (75, 100, 150, 200, 250, 300, 500)
    models: tuple[str, ...] = ("neurocnn", "cnn")
    tol_f1: float = 0.05  # brief criterion 6
    # our guard against a trivially small gap: NeurOCNN must have learned (1.5x the 0.25 chance macro-F1)
    min_train_f1: float = 0.375

    def __post_init__(self) -> None:
        if self.n_recordings_per_class < 2:
            raise ValueError("n_recordings_per_class must be >= 2 (recordings are split train / test)")
        if self.windows_per_recording < 1 or self.epochs < 1:
            raise ValueError("windows_per_recording and epochs must be >= 1")
        if self.train_fs not in self.test_rates:
            raise ValueError("test_rates must include train_fs")


@experiment(
    "neurocnn.ecg_zero_shot",
    claim="Trained at 100 Hz on synthetic 4-class ECG (neurokit2 ECGSYN), NeurOCNN's macro-F1 at unseen "
    "rates stays within 0.05 of its train-rate value.",
    presets={
        # quick: 5 training recordings per class x 10 windows (with 2 x 40, the model did not learn across
        # recordings: macro-F1 0.31, below the learned-something guard)
        "quick": EcgConfig(
            n_recordings_per_class=8,
            windows_per_recording=10,
            recording_s=20.0,
            epochs=10,
            test_rates=(75, 100, 200),
            models=("neurocnn",),
            tol_f1=0.05,
        ),
        "full": EcgConfig(),
    },
)
def ecg_zero_shot(cfg: EcgConfig, rng: np.random.Generator) -> Outcome:
    if "neurocnn" not in cfg.models:
        raise ValueError(f"the claim is about NeurOCNN: models must include 'neurocnn', got {cfg.models}")
    r_data, r_split, r_mod = spawn(rng, 3)
    bank = make_ecg_bank(
        cfg.n_recordings_per_class, cfg.windows_per_recording, r_data, cfg.window_s, cfg.recording_s
    )
    # recording-wise split: per class, one recording in four (at least one) for test, one for validation
    rec_label = {int(g): int(y) for g, y in zip(bank.groups, bank.labels, strict=True)}
    test_recs, val_recs = set(), set()
    for c in range(4):
        recs = [g for g, y in rec_label.items() if y == c]
        r_split.shuffle(recs)
        n_test = max(1, len(recs) // 4)
        test_recs.update(recs[:n_test])
        if len(recs) - n_test >= 2:
            val_recs.add(recs[n_test])
    is_test = np.isin(bank.groups, list(test_recs))
    is_val = np.isin(bank.groups, list(val_recs))
    train = bank.subset(np.nonzero(~is_test & ~is_val)[0])
    test = bank.subset(np.nonzero(is_test)[0])
    val = bank.subset(np.nonzero(is_val)[0]) if is_val.any() else train
    zcfg = ZeroShotConfig(
        n_train=len(train),
        n_val=len(val),
        n_test=len(test),
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        channels=cfg.channels,
        n_knots=cfg.n_knots,
        duration_s=cfg.duration_s,
        n_modes=cfg.n_modes,
        segment_s=cfg.segment_s,
        window_s=cfg.window_s,
        train_fs=cfg.train_fs,
        test_rates=cfg.test_rates,
        models=cfg.models,
    )
    results, timings, curves = _zero_shot(zcfg, train, val, test, r_mod)
    metrics, rows = _zero_shot_metrics(results, curves)
    neuro = results["neurocnn"]
    f1_0 = neuro[cfg.train_fs][1]
    checks = [
        Check(
            f"neurocnn_macro_f1_gap_{fs:g}hz",
            abs(neuro[fs][1] - f1_0),
            f"<= {cfg.tol_f1}",
            paper="<= 0.05 (brief)",
        )
        for fs in cfg.test_rates
        if fs != cfg.train_fs
    ]
    checks.append(
        Check("neurocnn_macro_f1_train_rate", f1_0, f">= {cfg.min_train_f1}", paper="(guard: 1.5x chance 0.25)")
    )
    fig = _rate_figure(results, "Synthetic ECG: trained at 100 Hz", 1, "macro-F1")
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"macro_f1_vs_rate": fig},
        tables={"zero_shot": rows},
        timings=timings,
    )
