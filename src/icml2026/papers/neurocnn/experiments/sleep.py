"""Criteria 4-5: zero-shot sampling-rate transfer on the synthetic sleep-like task."""

from __future__ import annotations

import numpy as np

from icml2026.core import Check, Outcome, experiment, spawn

from ..data import make_sleep_bank
from .protocol import ZeroShotConfig, _plateau_checks, _rate_figure, _training_table, _zero_shot, _zero_shot_metrics

__all__ = ["sleep_zero_shot"]


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
            # 5 fixed epochs (95 steps) left seed 0 at 0.265 < 0.3 with its best epoch the last: early stopping
            # with 4 epochs (76 steps) of patience, more than the head's ~60-step flat start
            epochs=20,
            patience=4,
            check_plateau=False,
            channels=(8, 16, 16, 8),
            test_rates=(75, 100, 200),
            models=("neurocnn", "cnn"),
            min_train_acc=0.3,
            tol_unseen=0.05,
            tol_75=0.05,
            min_cnn_drop=0.1,
        ),
        "full": ZeroShotConfig(),
        # smoke: one epoch on 40 windows (contract test; its checks may fail)
        "smoke": ZeroShotConfig(n_train=40, n_val=10, n_test=20, epochs=1, patience=0, check_plateau=False,
                                channels=(4, 8), test_rates=(75, 100, 200),
                                models=("neurocnn", "cnn"), min_train_acc=0.3, tol_unseen=0.05, min_cnn_drop=0.1),
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
    checks = [Check("neurocnn_acc_train_rate", acc0, f">= {cfg.min_train_acc}")]
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
                    "cnn_raw_min_drop_at_>=2x_rate", drop, f">= {cfg.min_cnn_drop}"
                )
            )
    if "fno" in results:
        margin = acc0 - results["fno"][f0][0]
        metrics["neurocnn_minus_fno_acc"] = margin
        checks.append(
            Check("neurocnn_minus_fno_acc_train_rate", margin, ">= 0", paper="> 0 (outperforms NOs)")
        )
    if cfg.check_plateau:
        checks.extend(_plateau_checks(curves, cfg.epochs, cfg.patience))
    fig = _rate_figure(results, "Sleep-like EEG: trained at 100 Hz", 0, "accuracy")
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"accuracy_vs_rate": fig},
        tables={"zero_shot": rows, "training": _training_table(curves, cfg.epochs, cfg.patience)},
        timings=timings,
    )
