"""NeurOCNN: A Neural-Operator-Based Model for Physiological Time Series (ICML 2026; arXiv id not found).

Continuous-time spline convolutions sampled at the input's rate, Fourier projection pooling to a fixed set of
tokens, and an attention head: trained at one sampling rate, usable zero-shot at others.

Symbols (paper -> code)
-----------------------
P (C_out x C_in x K), control values     -> ``SplineConv1d.control``
u_k = linspace(-0.5, 0.5, K), knots       -> ``SplineConv1d.knots``
A (L_k x K), spline basis on the taps     -> ``SplineConv1d.basis(fs)``, :func:`natural_spline_basis`
D, kernel duration (s)                    -> ``duration_s``
L_k = odd(round(D fs)), taps              -> :func:`kernel_length`
fs, sampling rate (Hz)                    -> ``fs`` (second argument of every forward)
T_seg, T_total, S = round(T_total/T_seg)  -> ``segment_s``, ``window_s``, ``FourierProjectionPool.n_segments``
phi_m, M basis functions                  -> :func:`fourier_basis`, ``n_modes``
c_{s,m}, Fourier tokens                   -> output of ``FourierProjectionPool.forward`` (B, S*M, d)
"""

from .baselines import FixedCNN, FNOClassifier, ResampleBack, ckconv_model
from .data import ECG_CLASSES, SLEEP_CLASSES, SignalBank, linear_resample, make_ecg_bank, make_sleep_bank
from .model import NeurOCNN, TokenHead
from .pooling import FourierProjectionPool, fourier_basis, projection_matrix
from .recordings import RecordingBank, load_cinc2017, load_sleep_edf, subject_folds
from .spline_conv import (
    ContinuousConv1d,
    SirenConv1d,
    SplineConv1d,
    check_fs,
    check_signal,
    kernel_length,
    natural_spline_basis,
    tap_positions,
)
from .training import TrainResult, accuracy, macro_f1, predict, train_classifier

__all__ = [
    "SplineConv1d",
    "SirenConv1d",
    "ContinuousConv1d",
    "FourierProjectionPool",
    "NeurOCNN",
    "TokenHead",
    "FixedCNN",
    "ResampleBack",
    "FNOClassifier",
    "ckconv_model",
    "SignalBank",
    "make_sleep_bank",
    "make_ecg_bank",
    "linear_resample",
    "SLEEP_CLASSES",
    "ECG_CLASSES",
    "natural_spline_basis",
    "kernel_length",
    "tap_positions",
    "fourier_basis",
    "projection_matrix",
    "check_fs",
    "check_signal",
    "TrainResult",
    "train_classifier",
    "predict",
    "accuracy",
    "macro_f1",
    "RecordingBank",
    "load_sleep_edf",
    "load_cinc2017",
    "subject_folds",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
