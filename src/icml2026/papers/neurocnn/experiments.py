"""Registered experiments of NeurOCNN (brief criteria 1-6).

The registrations (claims and presets) are here; each experiment's body lives in the package :mod:`.studies`,
one module per claim (its docstring lists them). The config classes are those of the studies, imported here.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from icml2026.core import Outcome, experiment

from .studies import basis as _basis
from .studies import ecg as _ecg
from .studies import layer as _layer
from .studies import sleep as _sleep
from .studies import untrained as _untrained
from .studies.basis import BasisConfig
from .studies.ecg import EcgConfig
from .studies.layer import LayerInvarianceConfig
from .studies.protocol import ZeroShotConfig
from .studies.untrained import ModelInvarianceConfig

__all__ = ["BasisConfig", "LayerInvarianceConfig", "ModelInvarianceConfig", "ZeroShotConfig", "EcgConfig",
           "spline_basis", "layer_invariance", "model_invariance", "sleep_zero_shot", "ecg_zero_shot"]


@experiment(
    "neurocnn.spline_basis",
    claim="The kernel P @ A^T equals the natural cubic spline through the control points on every tap "
    "grid, and the kernel length is odd and round(D fs) or round(D fs) + 1.",
    presets={"quick": BasisConfig(), "full": BasisConfig(n_knots=15, in_channels=8, out_channels=8)},
    no_preconditions="Analytic: the layer's kernel is compared with scipy's natural cubic spline through the same "
    "control values on fixed tap grids; nothing is trained, and any random control values are a valid instance.",
)
def spline_basis(cfg: BasisConfig, rng: np.random.Generator) -> Outcome:
    return _basis.spline_basis(cfg, rng)


def _ecg_control_preset(control: str) -> EcgConfig:
    return EcgConfig(n_recordings_per_class=14, test_recordings_per_class=8, n_repeats=1, windows_per_recording=10,
                     recording_s=20.0, epochs=10, patience=0, check_plateau=False,
                     test_rates=(75, 100, 150, 200, 250, 300, 500), models=("neurocnn",), tol_f1=0.05,
                     control=control)


@experiment(
    "neurocnn.ecg_zero_shot",
    claim="Trained at 100 Hz on synthetic 4-class ECG (neurokit2 ECGSYN), NeurOCNN's macro-F1 at unseen "
    "rates stays within 0.05 of its train-rate value.",
    presets={
        # quick: 5 training recordings per class x 10 windows (with 2 x 40, the model did not learn across
        # recordings: macro-F1 0.31, below the learned-something guard), 1 for validation and 8 for test
        # (320 test windows: with 2 per class, 80 windows, one window moved macro-F1 by 0.01-0.02, so the
        # 0.05 gap bound sat within a few windows of the test set's resolution). Three independent trainings
        # per run, the gap checked on their mean: one trained model's gap ranged 0.00-0.05 over seeds 0-4.
        # Issue 56 (the make demo budget, 2026-12-07): three trainings on three simulated banks cost 270 CPU-s
        # (seed 0: mean gaps 0.022 / 0.022, each training's at most 0.034), two-fifths of it ECGSYN; quick now
        # makes two trainings on one shared bank (own split and init each). Decided from the cost, not from a
        # verdict: the three-bank quick runs all passed.
        "quick": EcgConfig(
            n_recordings_per_class=14,
            test_recordings_per_class=8,
            n_repeats=2,
            share_bank=True,
            windows_per_recording=10,
            recording_s=20.0,
            epochs=40,
            patience=10,
            check_plateau=False,
            test_rates=(75, 100, 200),
            models=("neurocnn",),
            tol_f1=0.05,
        ),
        # full: three independent trainings per run, the gap checked on their mean (decided after the
        # one-training full preset failed on seed 2 with a gap of 0.061 while seeds 0 and 1 passed; the
        # 0.05 bound is unchanged). One training's gap is a single draw of recordings, split and init.
        "full": EcgConfig(n_repeats=3),
        # smoke: 2 short recordings per class, one epoch (contract test; its checks may fail)
        "smoke": EcgConfig(n_recordings_per_class=2, windows_per_recording=2, recording_s=5.0, window_s=4.0,
                           epochs=1, patience=0, check_plateau=False, channels=(4, 8), test_rates=(100, 200),
                           models=("neurocnn",)),
        # the controls of the gap claims (studies.controls): the quick scale with one training per run (a single
        # training's gap is noisier than the mean of three, so power and false-positive rate are measured on
        # the harder statistic), evaluated at the full preset's seven rates so that each full gap check is
        # measured; 10 epochs (the constructed arm only needs a model above chance; ten control runs stay cheap)
        "planted": _ecg_control_preset("planted"),
        "null": _ecg_control_preset("null"),
    },
)
def ecg_zero_shot(cfg: EcgConfig, rng: np.random.Generator) -> Outcome:
    return _ecg.ecg_zero_shot(cfg, rng)


@experiment(
    "neurocnn.layer_invariance",
    claim="A random spline-conv layer's output at rate fs converges to the continuous convolution "
    "(4 kHz reference) as fs grows, and Fourier pooling tokens agree across rates.",
    presets={
        "quick": LayerInvarianceConfig(n_draws=256),
        "full": LayerInvarianceConfig(n_draws=1024),
        # smoke: two draws, two rates, a 1 kHz reference (contract test; its checks may fail)
        "smoke": LayerInvarianceConfig(rates=(100, 200), ref_fs=1000.0, n_draws=2, window_s=4.0),
    },
)
def layer_invariance(cfg: LayerInvarianceConfig, rng: np.random.Generator) -> Outcome:
    return _layer.layer_invariance(cfg, rng)


_SLEEP_QUICK = ZeroShotConfig(
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
)
# The controls of the comparative claims (studies.controls, studies.sleep.comparison_arms): the quick preset's
# thresholds, the full preset's test set (500 windows, where the FNO margin is claimed) at its seven rates (so that
# every gap check of the full preset is measured); trained on half the quick windows for 6 epochs (the constructed
# arms only need a model above chance, and the ten control runs must stay cheap: ~1 min each on a shared 2-core CPU).
# Issue 55: with the quick preset's 200 test windows the FNO margin's controls gave power 0.80 and false-positive
# rate 0.20, both on their bounds (every other check: 1.00 / 0.00), so the test set was enlarged to the full one.
_SLEEP_CONTROL = dataclasses.replace(_SLEEP_QUICK, n_train=300, n_val=50, n_test=500, epochs=6, patience=0,
                                     test_rates=(75.0, 100.0, 150.0, 200.0, 250.0, 300.0, 500.0))


@experiment(
    "neurocnn.sleep_zero_shot",
    claim="Trained at 100 Hz on sleep-like EEG, NeurOCNN keeps its accuracy at unseen rates 75-500 Hz "
    "zero-shot, while a fixed-kernel CNN on raw new-rate input collapses; NeurOCNN >= FNO.",
    presets={
        # Quick scale (~1 min): NeurOCNN is far from converged (the brief's >= 0.85 is a full-preset
        # criterion), so the quick checks ask that it has learned something (>= 0.3, 1.5x the 0.2 chance
        # level, so that a gap near 0 is not the trivial gap of a chance-level model), that its accuracy at
        # 75 / 200 Hz stays within 5 points of 100 Hz, and that the fixed CNN on raw input drops >= 10.
        "quick": _SLEEP_QUICK,
        "full": ZeroShotConfig(),
        "planted": dataclasses.replace(_SLEEP_CONTROL, control="planted"),
        "null": dataclasses.replace(_SLEEP_CONTROL, control="null"),
        # smoke: one epoch on 40 windows (contract test; its checks may fail)
        "smoke": ZeroShotConfig(n_train=40, n_val=10, n_test=20, epochs=1, patience=0, check_plateau=False,
                                channels=(4, 8), test_rates=(75, 100, 200),
                                models=("neurocnn", "cnn"), min_train_acc=0.3, tol_unseen=0.05, min_cnn_drop=0.1),
    },
)
def sleep_zero_shot(cfg: ZeroShotConfig, rng: np.random.Generator) -> Outcome:
    return _sleep.sleep_zero_shot(cfg, rng)


@experiment(
    "neurocnn.model_invariance",
    claim="An untrained NeurOCNN's logits for one analytic signal move far less between 100 Hz and "
    "200 / 300 Hz than a fixed-kernel CNN's (median over random models); the brief's < 5% is reported.",
    presets={
        "quick": ModelInvarianceConfig(n_models=8, n_windows=2),
        "full": ModelInvarianceConfig(n_models=32, n_windows=4),
        # smoke: two 10 s windows through two narrow models (contract test; its checks may fail)
        "smoke": ModelInvarianceConfig(n_models=2, n_windows=1, channels=(8, 8), n_modes=8, segment_s=5.0,
                                       window_s=10.0),
        # the controls of the ratio claim, at the smoke's narrow sizes with the quick preset's 8 models (the
        # statistic, a median over models of the ratio of two relative logit changes, is the same):
        # planted: the NeurOCNN arm moves by exactly the brief's 5% of its logits' norm, in a random direction;
        # null: the NeurOCNN arm is a second fixed CNN (another initialisation): both arms one method
        "planted": ModelInvarianceConfig(n_models=8, n_windows=1, channels=(8, 8), n_modes=8, segment_s=5.0,
                                         window_s=10.0, control="planted"),
        "null": ModelInvarianceConfig(n_models=8, n_windows=1, channels=(8, 8), n_modes=8, segment_s=5.0,
                                      window_s=10.0, control="null"),
    },
)
def model_invariance(cfg: ModelInvarianceConfig, rng: np.random.Generator) -> Outcome:
    return _untrained.model_invariance(cfg, rng)
