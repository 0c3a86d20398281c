"""Bad input to NeurOCNN's public functions and configs: a ValueError naming the argument, never a deep crash
or a silently wrong number (issue 14)."""

import dataclasses

import numpy as np
import pytest
import torch

from icml2026.core.registry import get_experiment
from icml2026.papers.neurocnn import (
    FixedCNN,
    NeurOCNN,
    SplineConv1d,
    accuracy,
    fourier_basis,
    kernel_length,
    linear_resample,
    macro_f1,
    make_sleep_bank,
    natural_spline_basis,
    predict,
    projection_matrix,
    tap_positions,
    train_classifier,
)
from icml2026.papers.neurocnn.studies import EcgConfig, ModelInvarianceConfig, ZeroShotConfig

torch.set_num_threads(1)  # shared 2-core machine


def _tiny_model():
    return NeurOCNN(1, 3, (4, 4), n_knots=5, duration_s=0.1, n_modes=4, segment_s=1.0,
                    generator=torch.Generator().manual_seed(0))


def test_models_accept_float64_input_with_the_float32_result():
    # issue 14: a float64 batch crashed deep inside GroupNorm ("expected scalar type Double")
    x = torch.randn(2, 1, 200, generator=torch.Generator().manual_seed(1))
    for model in (_tiny_model().eval(), FixedCNN(1, 3, (4, 4), generator=torch.Generator().manual_seed(0)).eval()):
        with torch.no_grad():
            out64, out32 = model(x.double(), 100.0), model(x, 100.0)
        assert out64.dtype == torch.float32
        assert torch.equal(out64, out32)  # the cast is to the model's own dtype: identical numbers


def test_kernel_length_rejects_zero_and_nan_rate():
    # issue 14: kernel_length(0.5, fs=0) returned 1 tap instead of an error
    with pytest.raises(ValueError, match="sampling rate"):
        kernel_length(0.5, 0)
    with pytest.raises(ValueError, match="sampling rate|^fs: "):
        kernel_length(0.5, float("nan"))
    with pytest.raises(ValueError, match="duration_s"):
        kernel_length(-0.5, 100.0)
    with pytest.raises(ValueError, match="sampling rate"):
        tap_positions(0.5, -1.0)
    assert kernel_length(0.5, 100.0) == 51  # valid input unchanged


def test_train_classifier_rejects_mismatched_labels():
    # issue 14: len(y) != len(x) was not caught before the first batch
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 1, 200)).astype(np.float32)
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="same length"):
        train_classifier(_tiny_model(), x, np.zeros(7, int), 100.0, x, np.zeros(8, int), g, epochs=1)
    with pytest.raises(ValueError, match="same length"):
        train_classifier(_tiny_model(), x, np.zeros(8, int), 100.0, x, np.zeros(5, int), g, epochs=1)
    bad = x.copy()
    bad[0, 0, 3] = np.nan
    with pytest.raises(ValueError, match="x"):
        train_classifier(_tiny_model(), bad, np.zeros(8, int), 100.0, x, np.zeros(8, int), g, epochs=1)
    with pytest.raises(ValueError, match="lr"):
        train_classifier(_tiny_model(), x, np.zeros(8, int), 100.0, x, np.zeros(8, int), g, epochs=1,
                         lr=float("nan"))
    with pytest.raises(ValueError, match="y"):
        train_classifier(_tiny_model(), x, np.full(8, 0.5), 100.0, x, np.zeros(8, int), g, epochs=1)
    with pytest.raises(ValueError, match="sampling rate"):
        train_classifier(_tiny_model(), x, np.zeros(8, int), 0.0, x, np.zeros(8, int), g, epochs=1)
    with pytest.raises(ValueError, match="x"):
        predict(_tiny_model(), np.zeros((0, 1, 200)), 100.0)


def test_metrics_validate_lengths_and_labels():
    with pytest.raises(ValueError, match="same length"):
        macro_f1(np.array([0, 1, 2]), np.array([0, 1]), 3)  # issue 14: accepted silently
    with pytest.raises(ValueError, match="same length"):
        accuracy(np.array([0, 1, 2]), np.array([0, 1]))
    with pytest.raises(ValueError, match="y_pred"):
        macro_f1(np.array([0, 1]), np.array([0, 5]), 3)    # a class outside 0..n_classes-1 was ignored
    with pytest.raises(ValueError, match="y_true"):
        accuracy(np.array([]), np.array([]))
    with pytest.raises(ValueError, match="n_classes"):
        macro_f1(np.array([0, 1]), np.array([0, 1]), 0)
    assert macro_f1(np.array([0, 1, 1]), np.array([0, 1, 0]), 2) == pytest.approx((2 / 3 + 2 / 3) / 2)


def test_basis_and_pooling_helpers_validate_arguments():
    with pytest.raises(ValueError, match="finite"):
        natural_spline_basis(np.linspace(-0.5, 0.5, 5), np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="t must"):
        fourier_basis(np.array([0.0, np.inf]), 4, 1.0)
    with pytest.raises(ValueError, match="n_modes"):
        fourier_basis(np.zeros(3), 0, 1.0)
    with pytest.raises(ValueError, match="segment_s"):
        fourier_basis(np.zeros(3), 4, float("nan"))
    with pytest.raises(ValueError, match="sampling rate|^fs: "):
        projection_matrix(100, float("inf"), 4, 1.0)
    with pytest.raises(ValueError, match="n_samples"):
        projection_matrix(0, 100.0, 4, 1.0)
    with pytest.raises(ValueError, match="n_out"):
        linear_resample(np.zeros(5), 0)
    with pytest.raises(ValueError, match="difficulty"):
        make_sleep_bank(5, np.random.default_rng(0), difficulty=float("nan"))
    with pytest.raises(ValueError, match="difficulty"):  # was a ZeroDivisionError in the event counts
        make_sleep_bank(5, np.random.default_rng(0), difficulty=0.0)
    with pytest.raises(ValueError, match="^difficulty"):
        ZeroShotConfig(difficulty=0.0)
    with pytest.raises(ValueError, match="sampling rate"):
        make_sleep_bank(5, np.random.default_rng(0), window_s=2.0).sample(float("nan"))
    with pytest.raises(ValueError, match="sampling rate"):
        SplineConv1d(1, 1, 5, 0.1)(torch.zeros(1, 1, 50), 0.0)


@pytest.mark.parametrize("cls, kwargs, field", [
    (ZeroShotConfig, {"channels": (16, 30)}, "channels"),          # 30 is not divisible by 4 heads
    (ZeroShotConfig, {"n_modes": 256}, "n_modes"),                  # 5 x 256 tokens for the attention head
    (ZeroShotConfig, {"models": ("neurocnn", "cnn", "cnn")}, "models"),
    (ZeroShotConfig, {"fno_modes": 4096}, "fno_modes"),             # more modes than samples at 75 Hz
    (ZeroShotConfig, {"n_train": 20_000, "window_s": 30.0, "segment_s": 10.0}, "n_train"),
    (ZeroShotConfig, {"segment_s": 20.0}, "segment_s"),
    (ZeroShotConfig, {"cnn_kernel": 8}, "cnn_kernel"),
    (EcgConfig, {"recording_s": 8.5}, "recording_s"),
    (EcgConfig, {"models": ("cnn",)}, "models"),
    (EcgConfig, {"n_recordings_per_class": 4, "test_recordings_per_class": 4}, "test_recordings_per_class"),
    (EcgConfig, {"n_recordings_per_class": 40, "windows_per_recording": 5}, "n_recordings_per_class"),  # ECGSYN time
    (ModelInvarianceConfig, {"n_windows": 64, "window_s": 16.0, "rates": (2000.0,)}, "n_windows"),
    (ModelInvarianceConfig, {"window_s": 120.0, "segment_s": 60.0}, "window_s"),  # the bank's Fourier basis
    (ModelInvarianceConfig, {"duration_s": 5.0, "window_s": 5.0, "segment_s": 5.0}, "duration_s"),
])
def test_cross_field_rules_name_the_field(cls, kwargs, field):
    with pytest.raises(ValueError, match=f"^{field}"):
        cls(**kwargs)


def test_every_preset_rejects_the_contract_values():
    for name in ("spline_basis", "layer_invariance", "model_invariance", "sleep_zero_shot", "ecg_zero_shot"):
        exp = get_experiment(f"neurocnn.{name}")
        for preset in ("quick", "smoke"):
            base = exp.presets.get(preset)
            if base is None:
                continue
            for f in dataclasses.fields(base):
                cur = getattr(base, f.name)
                for bad in (-1, 10**9, float("nan"), float("inf"), "x"):
                    val = (bad,) if isinstance(cur, tuple) and bad != "x" else bad
                    with pytest.raises(ValueError, match=f"^{f.name}"):
                        dataclasses.replace(base, **{f.name: val})


def test_pooling_drops_the_partial_tail_segment():
    """A 2.9 s window with 2 s segments pools one segment; the last 0.9 s is dropped (official code), not
    folded into segment 0."""
    from icml2026.papers.neurocnn.pooling import FourierProjectionPool

    x = torch.zeros(1, 1, 290)
    x[..., 200:] = 1.0
    tokens = FourierProjectionPool(4, 2.0)(x, 100.0)
    assert tokens.shape == (1, 4, 1)
    assert float(tokens.abs().max()) == 0.0


def test_undersampled_kernel_warns():
    """At 10 Hz a 0.25 s kernel has 3 taps for 12 knots: a warning names the rate and the taps."""
    from icml2026.papers.neurocnn.spline_conv import SplineConv1d

    layer = SplineConv1d(1, 2, 12, 0.25)
    with pytest.warns(UserWarning, match="3 taps for 12 knots"):
        layer(torch.zeros(1, 1, 50), 10.0)
