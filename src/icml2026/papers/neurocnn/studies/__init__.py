"""The bodies of NeurOCNN's experiments (brief criteria 1-6; registered, with their claims and presets, in
:mod:`..experiments`), one module per claim.

==================  ==========================================================================================
``basis``           ``neurocnn.spline_basis``: criterion 1, the spline kernel against scipy
``layer``           ``neurocnn.layer_invariance``: criterion 2, layer convergence and pooling invariance
``untrained``       ``neurocnn.model_invariance``: criterion 3, an untrained model's logits across rates
``protocol``        the zero-shot protocol of criteria 4-6 (``ZeroShotConfig``, training, evaluation)
``sleep``           ``neurocnn.sleep_zero_shot``: criteria 4-5 on the synthetic sleep-like EEG
``ecg``             ``neurocnn.ecg_zero_shot``: criterion 6 on synthetic ECG
``controls``        the constructed arms of the ``planted`` and ``null`` presets (the controls)
==================  ==========================================================================================

Importing this package registers nothing (the registrations are in :mod:`..experiments`); ``_limits`` holds the
size limits the configs share.
"""

from __future__ import annotations

from . import basis, ecg, layer, protocol, sleep, untrained
from .basis import BasisConfig, spline_basis
from .ecg import EcgConfig, ecg_zero_shot
from .layer import LayerInvarianceConfig, _convergence_order, layer_invariance
from .protocol import ZeroShotConfig, _plateau_checks, _training_table
from .sleep import sleep_zero_shot
from .untrained import ModelInvarianceConfig, model_invariance

__all__ = ["BasisConfig", "LayerInvarianceConfig", "ModelInvarianceConfig", "ZeroShotConfig", "EcgConfig",
           "spline_basis", "layer_invariance", "model_invariance", "sleep_zero_shot", "ecg_zero_shot",
           "basis", "layer", "untrained", "protocol", "sleep", "ecg", "_convergence_order", "_plateau_checks",
           "_training_table"]
