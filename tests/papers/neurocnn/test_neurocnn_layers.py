"""Claim tests for the continuous-time layers of NeurOCNN (brief criteria 1-2, bad inputs)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from scipy.interpolate import CubicSpline  # noqa: E402

from icml2026.papers.neurocnn import (  # noqa: E402
    FixedCNN,
    FourierProjectionPool,
    NeurOCNN,
    SirenConv1d,
    SplineConv1d,
    kernel_length,
    natural_spline_basis,
    tap_positions,
)

torch.set_num_threads(1)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _sines(fs: float, seconds: float = 10.0, seed: int = 0, channels: int = 2, f_max: float = 18.0):
    rng = np.random.default_rng(seed)
    amp, freq = rng.standard_normal((channels, 5)), rng.uniform(0.5, f_max, (channels, 5))
    phase = rng.uniform(0, 2 * np.pi, (channels, 5))
    t = np.arange(int(round(seconds * fs))) / fs
    x = (amp[..., None] * np.cos(2 * np.pi * freq[..., None] * t + phase[..., None])).sum(-2)
    return torch.as_tensor(x[None], dtype=torch.float32)


@pytest.mark.parametrize("knots", [np.linspace(-0.5, 0.5, 15), np.array([-1.0, -0.3, 0.0, 0.1, 0.7, 2.0])])
def test_own_natural_spline_basis_matches_scipy(knots):
    rng = np.random.default_rng(1)
    p = rng.standard_normal((3, 2, knots.size))
    u = np.linspace(knots[0], knots[-1], 97)
    ref = CubicSpline(knots, p, axis=-1, bc_type="natural")(u)
    np.testing.assert_allclose(p @ natural_spline_basis(knots, u).T, ref, atol=1e-10)  # float64 solve


@pytest.mark.parametrize("fs", [30, 75, 90, 100, 128, 256, 333.3, 1000])
def test_layer_kernel_equals_scipy_spline_and_length_is_odd(fs):
    layer = SplineConv1d(2, 3, n_knots=15, duration_s=0.5, generator=_gen(0))
    p = layer.control.detach().double().numpy()
    base = max(1, round(0.5 * fs))
    for spacing in ("exact", "released"):
        layer.spacing = spacing
        u = tap_positions(0.5, fs, spacing)
        ref = CubicSpline(np.linspace(-0.5, 0.5, 15), p, axis=-1, bc_type="natural")(u)
        ref[..., np.abs(u) > 0.5 + 1e-12] = 0.0
        ker = layer.kernel(fs).detach().double().numpy()
        assert np.abs(ker - ref).max() < 1e-6  # brief criterion 1 (float32 kernel vs float64 scipy)
        assert ker.shape[-1] % 2 == 1 and ker.shape[-1] in (base, base + 1)


def test_exact_taps_are_one_over_fs_apart_and_released_agrees_when_round_is_even():
    for fs in (80.0, 90.0, 100.0, 128.0):
        u = tap_positions(0.5, fs, "exact")
        np.testing.assert_allclose(np.diff(u) * 0.5, 1 / fs, rtol=1e-12)
    # round(0.5 * 100) = 50 is even -> L = 51 taps spaced D/50 = 1/fs: both spacings coincide
    np.testing.assert_allclose(
        tap_positions(0.5, 100, "exact"), tap_positions(0.5, 100, "released"), atol=1e-15
    )
    # round(0.5 * 90) = 45 is odd -> released taps are stretched by 45/44 (the released-code quirk)
    ratio = np.diff(tap_positions(0.5, 90, "released"))[0] / np.diff(tap_positions(0.5, 90, "exact"))[0]
    assert ratio == pytest.approx(45 / 44, rel=1e-12)


def test_kernel_length_rule():
    assert kernel_length(0.5, 100) == 51 and kernel_length(0.5, 90) == 45 and kernel_length(0.5, 1) == 1
    assert kernel_length(0.001, 100) == 1  # at least one tap


def test_fft_route_equals_direct_conv():
    x = _sines(500.0)
    layer = SplineConv1d(2, 3, generator=_gen(2))
    with torch.no_grad():
        layer.method = "direct"
        a, _ = layer(x, 500.0)
        layer.method = "fft"
        b, _ = layer(x, 500.0)
    assert a.shape == b.shape == (1, 3, 5000)
    assert float((a - b).abs().max()) < 1e-5 * float(a.abs().max())  # float32 FFT round-off


@pytest.mark.parametrize("stride_s", [None, 0.02])
def test_unfold_route_equals_direct_conv(stride_s):
    x = _sines(100.0)
    layer = SplineConv1d(2, 3, generator=_gen(3), stride_s=stride_s)
    with torch.no_grad():
        layer.method = "direct"
        a, fa = layer(x, 100.0)
        layer.method = "unfold"
        b, fb = layer(x, 100.0)
    assert a.shape == b.shape and fa == fb
    assert float((a - b).abs().max()) < 1e-5 * float(a.abs().max())  # float32 summation-order round-off


def test_same_padding_stride_and_rate_out():
    layer = SplineConv1d(1, 1, duration_s=0.1, stride_s=0.02, generator=_gen(3))
    y, fs_out = layer(torch.randn(1, 1, 1001), 100.0)
    assert fs_out == pytest.approx(50.0) and y.shape[-1] == 501  # ceil(1001 / 2)


def test_riemann_factor_makes_output_rate_invariant_and_naive_sum_is_not():
    layer = SplineConv1d(2, 3, generator=_gen(4))
    with torch.no_grad():
        y1, _ = layer(_sines(500.0, f_max=5.0), 500.0)
        y2, _ = layer(_sines(1000.0, f_max=5.0), 1000.0)
    y2 = y2[..., ::2]
    rel = float(torch.linalg.norm(y1 - y2) / torch.linalg.norm(y2))
    assert rel < 0.02  # criterion 2 regime: >= 500 Hz is within 2% of the continuum
    # without the 1/fs quadrature weight the outputs would differ by the rate ratio (2x)
    rel_naive = float(torch.linalg.norm(500 * y1 - 1000 * y2) / torch.linalg.norm(1000 * y2))
    assert rel_naive > 0.4


def test_layer_error_to_continuum_falls_with_rate():
    layer = SplineConv1d(2, 3, generator=_gen(5))
    with torch.no_grad():
        ref, _ = layer(_sines(4000.0), 4000.0)
        t_ref = np.arange(ref.shape[-1]) / 4000.0
        errs = []
        for fs in (100.0, 200.0, 500.0):
            y, _ = layer(_sines(fs), fs)
            t = np.arange(y.shape[-1]) / fs
            keep = (t >= 0.5) & (t <= 9.5)
            r = np.stack([np.interp(t[keep], t_ref, ref[0, o].numpy()) for o in range(3)])
            errs.append(np.linalg.norm(y[0].numpy()[:, keep] - r) / np.linalg.norm(r))
    assert errs[0] > errs[1] > errs[2]  # first-order quadrature: error ~ 1/fs
    assert errs[2] < 0.03  # brief: ~1.3% at 500 Hz on typical draws; 3% leaves room for an unlucky draw


def test_fourier_pool_closed_form_and_rate_invariance():
    pool = FourierProjectionPool(n_modes=5, segment_s=2.0)
    fs = 2000.0
    t = np.arange(int(4 * fs)) / fs
    # h(t) = 1 + sin(2 pi t / 2): tokens per segment are int phi_m h = [2, 1, 0, 0, 0] (int sin^2 = T/2)
    h = torch.as_tensor((1 + np.sin(np.pi * t))[None, None], dtype=torch.float32)
    tok = pool(h, fs)[0, :, 0].numpy().reshape(2, 5)
    np.testing.assert_allclose(tok, [[2, 1, 0, 0, 0]] * 2, atol=2e-3)  # left Riemann sum error O(1/fs)
    x100, x1000 = _sines(100.0, f_max=3.0), _sines(1000.0, f_max=3.0)
    a, b = FourierProjectionPool(16, 2.0)(x100, 100.0), FourierProjectionPool(16, 2.0)(x1000, 1000.0)
    assert a.shape == b.shape == (1, 5 * 16, 2)
    assert float(torch.linalg.norm(a - b) / torch.linalg.norm(b)) < 0.02  # brief criterion 2


def test_siren_kernel_is_continuous_in_lag_and_zero_outside():
    layer = SirenConv1d(2, 3, generator=_gen(6))
    k100 = layer.kernel(100.0).detach()
    k200 = layer.kernel(200.0).detach()
    np.testing.assert_allclose(k200[..., ::2].numpy(), k100.numpy(), atol=1e-5)  # same lags, same values


# ------------------------------------------------------------------------------------------- bad inputs
BAD_FS = [None, 0, -100.0, float("nan"), float("inf"), "100"]


@pytest.mark.parametrize("fs", BAD_FS)
def test_missing_or_bad_rate_is_rejected(fs):
    x = torch.randn(1, 1, 1000)
    for module in (
        SplineConv1d(1, 2, generator=_gen(0)),
        FourierProjectionPool(4, 2.0),
        NeurOCNN(1, 3, (4, 4), n_modes=4, segment_s=2.0, window_s=10.0, generator=_gen(0)),
        FixedCNN(1, 3, (4, 4), generator=_gen(0)),
    ):
        with pytest.raises(ValueError, match="sampling rate"):
            module(x, fs)
    with pytest.raises(ValueError, match="sampling rate"):
        SplineConv1d(1, 2)(x)  # fs omitted


def test_signal_shorter_than_kernel_and_nan_are_rejected():
    layer = SplineConv1d(1, 2, duration_s=0.5, generator=_gen(0))
    with pytest.raises(ValueError, match="shorter than one kernel"):
        layer(torch.randn(1, 1, 40), 100.0)  # 51 taps at 100 Hz
    x = torch.randn(1, 1, 200)
    x[0, 0, 17] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        layer(x, 100.0)
    model = NeurOCNN(1, 3, (4, 4), n_modes=4, segment_s=2.0, window_s=10.0, generator=_gen(0))
    with pytest.raises(ValueError, match="NaN"):
        model(torch.full((1, 1, 1000), float("nan")), 100.0)
    with pytest.raises(ValueError, match="shorter than one kernel"):
        model(torch.randn(1, 1, 20), 100.0)
    with pytest.raises(ValueError, match="window lasts"):
        model(torch.randn(1, 1, 800), 100.0)  # 8 s instead of 10 s
    with pytest.raises(ValueError, match="channels"):
        model(torch.randn(1, 2, 1000), 100.0)


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="spacing"):
        SplineConv1d(1, 1, spacing="linear")
    with pytest.raises(ValueError, match="n_knots"):
        SplineConv1d(1, 1, n_knots=1)
    with pytest.raises(ValueError, match="duration_s"):
        SplineConv1d(1, 1, duration_s=0)
    with pytest.raises(ValueError, match="n_modes"):
        FourierProjectionPool(0, 2.0)
    with pytest.raises(ValueError, match="divisible"):
        NeurOCNN(1, 3, (4, 6))
