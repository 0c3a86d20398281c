"""The zero-shot protocol shared by criteria 4-6: train at one rate, evaluate at every test rate."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from icml2026.core import Check, spawn, torch_generator
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, resolve_device
from icml2026.core.plotting import new_figure

from ..baselines import FixedCNN, FNOClassifier, ResampleBack, ckconv_model
from ..data import SignalBank
from ..model import NeurOCNN
from ..recordings import EEG_CHANNELS, RecordingBank, check_data_config
from ..training import accuracy, macro_f1, predict, train_classifier
from ._limits import _RATE_HI, _RATE_LO, _check_bank, _check_model_sizes, _check_sleep_basis
from .controls import CONTROLS

__all__ = ["ZeroShotConfig", "EvalPredictions"]


@dataclass
class EvalPredictions:
    """One evaluation's per-item predictions on the analytic test signals (for the controls and paired checks).

    ``rows[row][fs]`` are the (n,) class predictions of result row ``row`` (``neurocnn``, ``cnn_raw``,
    ``cnn_resample_back``, ...) at test rate ``fs``; ``labels`` the (n,) true classes.
    """

    labels: np.ndarray
    n_classes: int
    rows: dict[str, dict[float, np.ndarray]] = field(default_factory=dict)

_ALL_MODELS = ("neurocnn", "cnn", "fno", "ckconv")


def _check_test_rates(cfg: Any) -> None:
    """``test_rates`` includes ``train_fs`` and lists no rate twice (the zero-shot configs' shared rule)."""
    if cfg.train_fs not in cfg.test_rates:
        raise ValueError(f"test_rates = {cfg.test_rates}: must include train_fs ({cfg.train_fs:g})")
    if len(set(cfg.test_rates)) != len(cfg.test_rates):
        raise ValueError(f"test_rates = {cfg.test_rates}: lists a rate twice")


def _check_plateau_fields(cfg: object) -> None:
    """``check_plateau`` needs early stopping and a cap that leaves room for it (else it could never pass)."""
    epochs, patience = cfg.epochs, cfg.patience  # type: ignore[attr-defined]
    if cfg.check_plateau and patience == 0:  # type: ignore[attr-defined]
        raise ValueError("patience = 0: check_plateau needs early stopping (patience >= 1) or check_plateau=false")
    if cfg.check_plateau and patience >= epochs:  # type: ignore[attr-defined]
        raise ValueError(f"patience = {patience}: must be below epochs ({epochs}) for a plateau before the cap")


def _plateau_checks(curves: dict[str, list[float]], epochs: int, patience: int, suffix: str = "") -> list[Check]:
    """One precondition per model (named ``<model>_best_epoch_before_cap<suffix>``): its best validation epoch
    (1-based) is <= epochs - patience.

    Training stops after ``patience`` epochs without improvement, so this holds exactly when the model reached
    a plateau before the cap; it fails for a model still improving near the cap (e.g. the 20-epoch run of
    issue 31, best epoch 19 of 20). A model still improving is not the trained model the claims are about, so
    the check is a precondition (a failure makes the run undecided, not a failure of the paper).
    """
    return [
        Check(f"{name}_best_epoch_before_cap{suffix}", int(np.argmax(curve)) + 1, f"<= {epochs - patience}",
              paper="(best-val checkpoint)", role="precondition")
        for name, curve in curves.items()
    ]


def _training_table(curves: dict[str, list[float]], epochs: int, patience: int) -> list[dict[str, float | str]]:
    """Per model: best epoch, epochs run, the cap, best validation accuracy and whether it plateaued."""
    return [
        {
            "model": name,
            "best_epoch": int(np.argmax(curve)) + 1,
            "epochs_run": len(curve),
            "cap": epochs,
            "patience": patience,
            "best_val_acc": float(max(curve)),
            "plateau": int(patience > 0 and len(curve) - 1 - int(np.argmax(curve)) >= patience),
        }
        for name, curve in curves.items()
    ]


def _check_models(models: tuple[str, ...]) -> None:
    if len(set(models)) != len(models):
        raise ValueError(f"models = {models}: lists a model twice")
    if "neurocnn" not in models:
        raise ValueError(f"models = {models}: the claim is about NeurOCNN: models must include 'neurocnn'")


@config
class ZeroShotConfig:
    # Deviation: CPU scale throughout (paper values in the comments)
    n_train: int = param(3000, 1, 20_000, help="brief (CPU scale): 3k-6k training windows")
    n_val: int = param(400, 1, 5_000)
    n_test: int = param(500, 1, 5_000)
    # Deviation: the released code trains 40 epochs and keeps the best-validation checkpoint; we stop a model
    # once its validation accuracy has not improved for `patience` epochs (`epochs` is the cap), so that every
    # model is compared at its plateau (issue 31: at 20 fixed epochs all of them were still improving).
    epochs: int = param(60, 1, 200, help="cap on epochs (paper: 20-40 fixed; 20 fixed left every model improving)")
    patience: int = param(8, 0, 100, help="early stopping on validation accuracy; 0: run all epochs")
    # with it, a check per model that its best epoch is <= epochs - patience (it plateaued before the cap)
    check_plateau: bool = param(True, help="check that every model plateaued before the cap")
    batch_size: int = param(32, 1, 256, help="paper: 64")
    lr: float = param(1e-3, 0.0, 1.0, lo_open=True, help="paper: 1e-3")
    channels: tuple[int, ...] = param((16, 32, 32, 16), 1, 256, min_len=1, max_len=8,
                                      help="paper: (64, 128, 64, 32); brief's CPU size")
    n_knots: int = param(12, 2, 100, help="paper: 15")
    duration_s: float = param(0.25, 0.01, 5.0, help="paper: 0.5")
    n_modes: int = param(16, 1, 256, help="paper: 50")
    segment_s: float = param(2.0, 0.1, 60.0, help="paper: 5")
    window_s: float = param(10.0, 1.0, 120.0, help="paper: 30")
    train_fs: float = param(100.0, _RATE_LO, _RATE_HI, help="paper: 100")
    test_rates: tuple[float, ...] = param((75, 100, 150, 200, 250, 300, 500), _RATE_LO, _RATE_HI, min_len=1, max_len=16)
    models: tuple[str, ...] = param(("neurocnn", "cnn", "fno", "ckconv"), choices=_ALL_MODELS, min_len=1,
                                    max_len=len(_ALL_MODELS))
    cnn_kernel: int = param(9, 1, 101, help="odd, in samples")
    # Deviation: paper 150 modes over 30 s (0-2.5 Hz); ours cover 0-6.4 Hz
    fno_modes: int = param(128, 2, 4096, help="at most the samples of a window at the lowest test rate")
    fno_hidden: int = param(16, 1, 256, help="paper: 128")
    # scales the class-overlap knobs; the transient-event counts are Poisson(c / difficulty)
    difficulty: float = param(1.0, 0.1, 10.0, help="scales the class-overlap knobs of the synthetic task")
    # acceptance thresholds (brief criterion 4); the quick preset loosens them to its tiny scale. Their ranges
    # exclude the values at which a check could never fail (accuracy >= 0, gap <= 1, drop >= -1).
    min_train_acc: float = param(0.85, 0.0, 1.0, lo_open=True)
    tol_unseen: float = param(0.03, 0.0, 1.0, hi_open=True)
    tol_75: float = param(0.05, 0.0, 1.0, hi_open=True)
    min_cnn_drop: float = param(0.15, 0.0, 1.0, lo_open=True)
    # precondition of every trained model a claim rests on (NeurOCNN, the CNN, the FNO): accuracy at the training
    # rate >= 1.5x the 0.2 chance level of the 5 balanced classes, so that no gap, drop or margin is that of a
    # chance-level model
    min_learned_acc: float = param(0.3, 0.0, 1.0, lo_open=True, help="precondition: 1.5x chance (0.2)")
    # the paired margin NeurOCNN - FNO is claimed when its 95% interval's lower end is above 0 (a bare ">= 0"
    # passes half the time when both arms are one method)
    control: str = param("none", choices=CONTROLS,
                         help="none: the real arms; planted / null: the controls of the comparative claims")

    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    # Real recordings (issue 68): a folder of Sleep-EDF recordings (<id>-PSG.edf + <id>-Hypnogram.edf) replaces the
    # synthetic windows; window_s is then the epoch length (paper: 30 s) and the run is a subject-wise
    # cross-validation (the test predictions of every fold pooled)
    data: str = param("", help="a folder of Sleep-EDF recordings (*-PSG.edf + *-Hypnogram.edf); '': synthetic")
    channel: str = param("EEG Fpz-Cz", choices=EEG_CHANNELS, help="the EEG channel read from each PSG file")
    n_folds: int = param(5, 3, 20, help="subject-wise folds (with data; released code: 5)")
    max_folds: int = param(0, 0, 20, help="run only the first this many folds (0: all; with data)")
    lowpass_hz: float = param(35.0, 0.0, 1000.0, help="low-pass before resampling to train_fs (paper: 35 Hz; 0: none)")
    wake_margin_min: float = param(30.0, 0.0, 1440.0, help="wake kept within this many minutes of sleep (1440: all)")
    max_epochs_per_recording: int = param(0, 0, 100_000, help="> 0: that many epochs drawn per recording (CPU)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        check_data_config(self.data, self.n_folds, self.max_folds)
        _check_test_rates(self)
        _check_models(self.models)
        _check_plateau_fields(self)
        _check_model_sizes(self, self.test_rates)
        _check_sleep_basis(self.window_s, max(self.test_rates))
        if self.cnn_kernel % 2 == 0:
            raise ValueError(f"cnn_kernel = {self.cnn_kernel}: must be odd")
        n_min = int(round(self.window_s * min(self.test_rates)))
        if "cnn" in self.models and self.cnn_kernel > n_min:
            raise ValueError(f"cnn_kernel = {self.cnn_kernel}: longer than a window at {min(self.test_rates):g} Hz "
                             f"({n_min} samples)")
        if "fno" in self.models and self.fno_modes > n_min:
            raise ValueError(f"fno_modes = {self.fno_modes}: more than the {n_min} samples of a window at "
                             f"{min(self.test_rates):g} Hz")
        _check_bank("n_train", self.n_train, self.window_s, self.train_fs)
        _check_bank("n_val", self.n_val, self.window_s, self.train_fs)
        _check_bank("n_test", self.n_test, self.window_s, sum(self.test_rates))


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
        metrics[f"{name}_best_epoch"] = int(np.argmax(curve)) + 1  # 1-based; the first maximum is kept
        metrics[f"{name}_epochs_run"] = len(curve)
    rows: list[dict[str, float | str]] = []
    for row, per_rate in results.items():
        for fs, (acc, f1) in per_rate.items():
            metrics[f"{row}_acc_{fs:g}hz"] = acc
            metrics[f"{row}_macro_f1_{fs:g}hz"] = f1
            rows.append({"model": row, "fs_hz": fs, "accuracy": acc, "macro_f1": f1})
    return metrics, rows


def _zero_shot(
    cfg: ZeroShotConfig, train: SignalBank | RecordingBank, val: SignalBank | RecordingBank,
    test: SignalBank | RecordingBank, rng: np.random.Generator,
    keep: list[EvalPredictions] | None = None,
) -> tuple[dict[str, dict[float, tuple[float, float]]], dict[str, float], dict[str, list[float]]]:
    """Train every model at train_fs and evaluate at each test rate.

    Returns ``{row: {fs: (accuracy, macro_f1)}}``, timings, and each model's validation-accuracy curve. With
    ``keep`` (a list), the per-item predictions on the analytic test signals are appended to it.
    """
    n_classes = len(train.class_names)
    device = resolve_device(cfg.device)
    x_tr, x_va = train.sample(cfg.train_fs), val.sample(cfg.train_fs)
    x_te = {fs: test.sample(fs) for fs in cfg.test_rates}
    # The paper's protocol: the stored train-rate signal linearly interpolated to the new rate (F.interpolate);
    # ours (x_te) samples the analytic signal at the new rate. Both are reported; the checks use ours.
    # A control (sleep.comparison_arms, ecg._control_gap_f1) builds the unseen-rate arms of NeurOCNN and of the
    # raw CNN from their train-rate predictions, so it evaluates only those and the resample-back CNN (the real
    # arm of a null), and neither the linear protocol nor the released taps (no claim compares them)
    real = cfg.control == "none"
    x_te_linear = {fs: test.sample_linear(fs, cfg.train_fs) for fs in cfg.test_rates} if real else {}
    results: dict[str, dict[float, tuple[float, float]]] = {}
    timings: dict[str, float] = {}
    curves: dict[str, list[float]] = {}
    # one child stream per model name, so a model's result does not depend on which others are run
    children = dict(zip(_ALL_MODELS, spawn(rng, len(_ALL_MODELS)), strict=True))
    kept = EvalPredictions(np.asarray(test.labels), n_classes)
    if keep is not None:
        keep.append(kept)
    for name in cfg.models:
        gen = torch_generator(children[name])
        model = _build(name, cfg, n_classes, gen).to(device)
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
            patience=cfg.patience or None,
        )
        timings[f"train_{name}_s"] = time.perf_counter() - start
        # the validation curve (at train_fs) says whether a model was still improving when training stopped
        curves[name] = hist.val_accuracy
        variants: dict[str, torch.nn.Module] = {name: model}
        if name == "cnn":
            variants = {"cnn_raw": model, "cnn_resample_back": ResampleBack(model, cfg.train_fs)}
        for row, net in variants.items():
            results[row] = {}
            kept.rows[row] = {}
            for fs in cfg.test_rates if real or row == "cnn_resample_back" else (cfg.train_fs,):
                pred = predict(net, x_te[fs], fs)
                kept.rows[row][fs] = pred
                results[row][fs] = (accuracy(test.labels, pred), macro_f1(test.labels, pred, n_classes))
            if not real:
                continue
            results[f"{row}_linear_protocol"] = {}
            for fs in cfg.test_rates:
                pred = predict(net, x_te_linear[fs], fs)
                results[f"{row}_linear_protocol"][fs] = (
                    accuracy(test.labels, pred),
                    macro_f1(test.labels, pred, n_classes),
                )
        if name == "neurocnn" and real:  # same weights, the released code's tap spacing (identical at 100 Hz)
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



def _cv_zero_shot(
    cfg: ZeroShotConfig, bank: RecordingBank, rng: np.random.Generator
) -> tuple[dict[str, dict[float, tuple[float, float]]], dict[str, float], dict[str, list[float]], EvalPredictions]:
    """The zero-shot protocol as a subject-wise cross-validation on real recordings (``cfg.data``).

    Folds from :func:`..recordings.subject_folds` (the first ``max_folds`` of ``n_folds``); every fold trains its
    own models. The test predictions of the folds are pooled (each window is tested once, by the fold that held
    its subject out), so accuracy and macro-F1 of every row the protocol keeps predictions of are those of the
    pooled predictions; other rows (linear protocol, released taps) are the test-size-weighted mean over folds.
    Validation curves come back per fold (``<model>_fold<k>``), timings summed.
    """
    from ..recordings import subject_folds

    r_split, r_mod = spawn(rng, 2)
    folds = subject_folds(bank.labels, bank.groups, cfg.n_folds, r_split)[: cfg.max_folds or None]
    keeps: list[EvalPredictions] = []
    per_fold = []
    for (tr, va, te), r in zip(folds, spawn(r_mod, len(folds)), strict=True):
        per_fold.append(_zero_shot(cfg, bank.subset(tr), bank.subset(va), bank.subset(te), r, keeps))
    n_classes = keeps[0].n_classes
    pooled = EvalPredictions(np.concatenate([k.labels for k in keeps]), n_classes)
    for row, per_rate in keeps[0].rows.items():
        pooled.rows[row] = {fs: np.concatenate([k.rows[row][fs] for k in keeps]) for fs in per_rate}
    weights = [k.labels.size for k in keeps]
    results: dict[str, dict[float, tuple[float, float]]] = {}
    for row, rates in per_fold[0][0].items():
        results[row] = {}
        for fs in rates:
            if row in pooled.rows and fs in pooled.rows[row]:
                pred = pooled.rows[row][fs]
                results[row][fs] = (accuracy(pooled.labels, pred), macro_f1(pooled.labels, pred, n_classes))
            else:
                acc, f1 = np.average([f[0][row][fs] for f in per_fold], axis=0, weights=weights)
                results[row][fs] = (float(acc), float(f1))
    timings = {key: float(sum(f[1][key] for f in per_fold)) for key in per_fold[0][1]}
    curves = {f"{name}_fold{k}": curve for k, f in enumerate(per_fold) for name, curve in f[2].items()}
    return results, timings, curves, pooled
