"""Criteria 4-5: zero-shot sampling-rate transfer on the synthetic sleep-like task."""

from __future__ import annotations

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.stats import paired_difference

from ..data import make_sleep_bank
from ..recordings import load_sleep_edf
from ..training import accuracy
from .controls import degrade, reshuffle
from .protocol import (
    EvalPredictions,
    ZeroShotConfig,
    _cv_zero_shot,
    _plateau_checks,
    _rate_figure,
    _training_table,
    _zero_shot,
    _zero_shot_metrics,
)

__all__ = ["sleep_zero_shot", "comparison_arms", "PLANTED_FNO_MARGIN", "RESHUFFLE_FRACTION"]

#: The planted NeurOCNN - FNO margin. The paper gives no figure ("outperforms the neural-operator baselines");
#: 10 points is about half the margin our full runs measure (0.176-0.184), so the control asks for less.
PLANTED_FNO_MARGIN = 0.10
#: The fraction of correct items that change (balanced by as many expected gains) between two arms of one
#: method in the controls: two trainings of one model disagree on some items while scoring alike.
RESHUFFLE_FRACTION = 0.10


def comparison_arms(cfg: ZeroShotConfig, kept: EvalPredictions,
                    rng: np.random.Generator) -> dict[str, dict[float, np.ndarray]]:
    """The per-item predictions each comparative claim compares, ``{row: {fs: (n,) predictions}}``.

    ``control = "none"``: the real predictions of ``neurocnn`` and ``cnn_raw`` at every rate (and ``fno`` when
    trained). Otherwise one arm of each comparison is built from the other by construction (module
    :mod:`.controls`), with a stream spawned from ``rng`` after every real draw:

    ==========================  ============================================  ==========================================
    claim                       planted (the check must pass)                 null (the check must fail)
    ==========================  ============================================  ==========================================
    NeurOCNN gap at rate fs     100 Hz predictions, expected drop tol / 3     100 Hz predictions, expected drop 2 tol
    CNN drop at >= 2x the rate  100 Hz predictions, expected drop 2 min_drop  the same CNN fed the 100 Hz signal
                                                                              (resample-back, real predictions)
    NeurOCNN - FNO (lower 95%)  NeurOCNN's, reshuffled, then 10 points worse  NeurOCNN's, reshuffled (same accuracy)
    ==========================  ============================================  ==========================================

    The planted gap is a third of the tolerance (the full runs' largest NeurOCNN drop, 0.010, is a third of
    0.03); the planted CNN drop is twice the bound (the full runs measure 2.6-3.3 times it). The FNO arm is
    built even when no FNO is trained, so that the controls measure that claim's power at no training cost.
    """
    f0 = cfg.train_fs
    arms = {row: dict(per_rate) for row, per_rate in kept.rows.items() if row in ("neurocnn", "cnn_raw", "fno")}
    if cfg.control == "none":
        return arms
    (ctl,) = spawn(rng, 1)
    planted = cfg.control == "planted"
    labels, n_classes = kept.labels, kept.n_classes
    base = kept.rows["neurocnn"][f0]
    for fs in cfg.test_rates:
        if fs != f0:
            tol = cfg.tol_75 if fs < f0 else cfg.tol_unseen
            arms["neurocnn"][fs] = degrade(base, labels, tol / 3 if planted else 2 * tol, n_classes, ctl)
    if "cnn_raw" in arms:
        cnn0 = kept.rows["cnn_raw"][f0]
        for fs in cfg.test_rates:
            if fs >= 2 * f0:
                arms["cnn_raw"][fs] = (degrade(cnn0, labels, 2 * cfg.min_cnn_drop, n_classes, ctl) if planted
                                       else kept.rows["cnn_resample_back"][fs])
    other = reshuffle(base, labels, RESHUFFLE_FRACTION, n_classes, ctl)
    arms["fno"] = {f0: degrade(other, labels, PLANTED_FNO_MARGIN, n_classes, ctl) if planted else other}
    return arms


def sleep_zero_shot(cfg: ZeroShotConfig, rng: np.random.Generator) -> Outcome:
    if "neurocnn" not in cfg.models:
        raise ValueError(f"the claim is about NeurOCNN: models must include 'neurocnn', got {cfg.models}")
    r_tr, r_va, r_te, r_mod = spawn(rng, 4)
    keep: list[EvalPredictions] = []
    if cfg.data:
        # real recordings (issue 68): Sleep-EDF epochs, subject-wise cross-validation, test predictions pooled
        bank = load_sleep_edf(cfg.data, cfg.channel, cfg.window_s, cfg.train_fs, cfg.lowpass_hz, cfg.wake_margin_min,
                              cfg.max_epochs_per_recording, r_tr)
        results, timings, curves, pooled = _cv_zero_shot(cfg, bank, r_mod)
        keep.append(pooled)
    else:
        train = make_sleep_bank(cfg.n_train, r_tr, cfg.window_s, cfg.difficulty)
        val = make_sleep_bank(cfg.n_val, r_va, cfg.window_s, cfg.difficulty)
        test = make_sleep_bank(cfg.n_test, r_te, cfg.window_s, cfg.difficulty)
        results, timings, curves = _zero_shot(cfg, train, val, test, r_mod, keep)
    metrics, rows = _zero_shot_metrics(results, curves)
    if cfg.data:
        metrics["n_windows"] = float(len(bank))
        metrics["n_subjects"] = float(len(bank.subjects))
        metrics["n_folds_run"] = float(cfg.max_folds or cfg.n_folds)
    f0 = cfg.train_fs
    # the predictions the comparative claims compare: the real ones, or a control's constructed arm
    arms = comparison_arms(cfg, keep[0], rng)
    labels = keep[0].labels
    neuro = results["neurocnn"]
    acc0 = neuro[f0][0]
    # every trained model a claim rests on must have learned (1.5x chance): a gap, drop or margin of a
    # chance-level model is trivially small (or large) and says nothing about the paper
    learned = {"neurocnn": "neurocnn", "cnn_raw": "cnn", "fno": "fno"}
    checks = [
        Check(f"{name}_learned_train_rate", results[row][f0][0], f">= {cfg.min_learned_acc}",
              paper="(precondition: 1.5x chance 0.2)", role="precondition")
        for row, name in learned.items() if row in results
    ]
    # the brief's criterion 4 (>= 0.85 in the full preset; the quick preset's 0.3 repeats the precondition)
    checks.append(Check("neurocnn_acc_train_rate", acc0, f">= {cfg.min_train_acc}"))
    for fs in cfg.test_rates:
        if fs == f0:
            continue
        tol = cfg.tol_75 if fs < f0 else cfg.tol_unseen
        checks.append(
            Check(
                f"neurocnn_acc_gap_{fs:g}hz",
                abs(accuracy(labels, arms["neurocnn"][fs]) - acc0),
                f"<= {tol}",
                paper="stable accuracy at unseen rates",
                comparative=True,
            )
        )
    if "cnn_raw" in arms:
        high = [fs for fs in cfg.test_rates if fs >= 2 * f0]
        if high:
            cnn0 = accuracy(labels, arms["cnn_raw"][f0])
            drop = min(cnn0 - accuracy(labels, arms["cnn_raw"][fs]) for fs in high)
            metrics["cnn_raw_min_drop_ge_200hz"] = drop
            checks.append(Check("cnn_raw_min_drop_at_>=2x_rate", drop, f">= {cfg.min_cnn_drop}", comparative=True))
    if "fno" in arms:
        # Deviation from the earlier check (margin >= 0, issue 55): with both arms one method a bare sign passes
        # half the time, so the claim is the paired 95% interval's lower end over the test items (> 0)
        neuro_hit = (keep[0].rows["neurocnn"][f0] == labels).astype(float)
        fno_hit = (arms["fno"][f0] == labels).astype(float)
        diff = paired_difference(neuro_hit, fno_hit)
        metrics["neurocnn_minus_fno_acc"] = acc0 - accuracy(labels, arms["fno"][f0])
        metrics["neurocnn_minus_fno_acc_lower95"] = diff.low
        checks.append(Check("neurocnn_minus_fno_acc_lower95", diff.low, "> 0",
                            paper="outperforms neural-operator baselines", comparative=True))
    if cfg.check_plateau:
        checks.extend(_plateau_checks(curves, cfg.epochs, cfg.patience))
    title = (f"Sleep-EDF ({len(bank.subjects)} subjects, subject-wise CV): trained at {f0:g} Hz" if cfg.data
             else "Sleep-like EEG: trained at 100 Hz")
    fig = _rate_figure(results, title, 0, "accuracy")
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"accuracy_vs_rate": fig},
        tables={"zero_shot": rows, "training": _training_table(curves, cfg.epochs, cfg.patience)},
        timings=timings,
    )
