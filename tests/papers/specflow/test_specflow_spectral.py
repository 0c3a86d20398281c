"""Criteria 1-3 of the brief: block DCT, the progressive mask M(t), classifier-free guidance; bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.fft import dctn, idctn

from icml2026.papers.specflow import (
    FrozenLakeMaps,
    block_dct,
    block_idct,
    euler_sample,
    frequency_mask,
    guided_velocity,
    keep_count,
)
from icml2026.papers.specflow.data import expert_renders
from icml2026.papers.specflow.spectral import dct_matrix, from_workspace, to_workspace, zigzag_order


def test_dct_matrix_is_orthonormal_and_matches_formula() -> None:
    d = dct_matrix(8, torch.float64)
    np.testing.assert_allclose((d @ d.T).numpy(), np.eye(8), atol=1e-12)  # float64 rounding only
    k, n = 3, 5
    assert float(d[k, n]) == pytest.approx(math.sqrt(2 / 8) * math.cos(math.pi / 8 * (n + 0.5) * k), abs=1e-14)
    assert float(d[0, 2]) == pytest.approx(1 / math.sqrt(8), abs=1e-14)


def test_block_dct_round_trips_with_batch_dims_and_gradients() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 16, 24, generator=g, requires_grad=True)
    X = block_dct(x)
    assert X.shape == x.shape
    assert float((block_idct(X) - x).detach().abs().max()) < 1e-5  # criterion 1: atol 1e-5 (float32)
    X.sum().backward()  # differentiable
    assert x.grad is not None and torch.isfinite(x.grad).all()


def test_block_dct_equals_scipy_dctn_per_block() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 16))
    X = block_dct(torch.from_numpy(x)).numpy()
    for r in (0, 8):
        for c in (0, 8):
            ref = dctn(x[r:r + 8, c:c + 8], type=2, norm="ortho")
            np.testing.assert_allclose(X[r:r + 8, c:c + 8], ref, atol=1e-10)  # float64: exact up to rounding
            np.testing.assert_allclose(idctn(ref, type=2, norm="ortho"), x[r:r + 8, c:c + 8], atol=1e-10)


def test_block_dct_is_per_block_not_global() -> None:
    # a global 16 x 16 DCT of the same image differs: the transform must not mix blocks
    x = torch.zeros(16, 16, dtype=torch.float64)
    x[:8, :8] = 1.0
    X = block_dct(x)
    assert float(X[8:, 8:].abs().max()) == 0.0
    assert float(X[0, 0]) == pytest.approx(8.0)  # DC of an all-ones 8 x 8 block: 64 / 8


def test_energy_compaction_on_renders() -> None:
    # criterion 1: the first 16 of 64 zig-zag coefficients carry >= 90% of a render's energy
    rng = np.random.default_rng(2)
    gen = FrozenLakeMaps()
    fractions = []
    for m, moves in gen.batch(20, rng):
        frames, _ = expert_renders(m, moves)
        X = block_dct(torch.from_numpy(frames))
        kept = to_workspace(X, 16)
        fractions.append(float((kept ** 2).sum() / (X ** 2).sum()))
    assert min(fractions) >= 0.90
    # and keeping 1 coefficient (DC only) does not reach it on every render: the bound is not automatic
    X = block_dct(torch.from_numpy(expert_renders(*gen.sample(rng))[0]))
    assert float((to_workspace(X, 1) ** 2).sum() / (X ** 2).sum()) < 0.999


def test_workspace_layout_round_trips_and_is_zigzag() -> None:
    zz = zigzag_order(8)
    assert [tuple(v) for v in zz[:6]] == [(0, 0), (0, 1), (1, 0), (2, 0), (1, 1), (0, 2)]  # JPEG scan
    assert len({tuple(v) for v in zz}) == 64
    X = torch.randn(1, 32, 32, generator=torch.Generator().manual_seed(3))
    ws = to_workspace(X, 16)
    assert ws.shape == (1, 16, 16)
    back = from_workspace(ws, 32, 32)
    np.testing.assert_array_equal(to_workspace(back, 16).numpy(), ws.numpy())
    np.testing.assert_array_equal(from_workspace(to_workspace(X, 64), 32, 32).numpy(), X.numpy())


@pytest.mark.parametrize("schedule", ["cosine", "linear"])
def test_keep_count_endpoints_and_monotone(schedule: str) -> None:
    grid = np.linspace(0, 1, 101)
    keeps = [keep_count(float(t), schedule) for t in grid]
    assert keeps[0] == 8 and keeps[-1] == 64  # criterion 2: keep(0) = min_keep, keep(1) = max_keep
    assert all(b >= a for a, b in zip(keeps, keeps[1:], strict=False))
    assert len(set(keeps)) > 10  # it does progress


def test_keep_count_closed_forms() -> None:
    assert keep_count(0.5, "cosine") == 36  # 8 + 0.5 * 56
    assert keep_count(0.25, "linear") == 22  # 8 + 14
    assert keep_count(0.25, "cosine") == round(8 + (0.5 - 0.5 * math.cos(math.pi / 4)) * 56)
    assert {keep_count(float(t), "fixed") for t in np.linspace(0, 1, 101)} == {16}


@pytest.mark.parametrize("t", [0.0, 0.13, 0.5, 0.77, 1.0])
def test_square_mask_keeps_floor_sqrt_squared_low_frequencies(t: float) -> None:
    m = frequency_mask(t, layout="square")
    s = math.isqrt(keep_count(t))
    assert int(m.sum()) == s * s
    assert float(m[:s, :s].min()) == 1.0 and float(m.sum()) == float(m[:s, :s].sum())


def test_zigzag_and_radial_masks_keep_exactly_keep_entries_and_grow() -> None:
    for layout in ("zigzag", "radial"):
        prev = None
        for t in np.linspace(0, 1, 21):
            m = frequency_mask(float(t), layout=layout)
            assert int(m.sum()) == keep_count(float(t))
            assert float(m[0, 0]) == 1.0  # DC always kept: low-frequency at the noise end
            if prev is not None:
                assert bool((m >= prev).all())  # nested: a kept frequency stays kept
            prev = m
    assert int(frequency_mask(0.0, layout="zigzag")[7, 7]) == 0


def test_cfg_identities() -> None:
    g = torch.Generator().manual_seed(4)
    uu, uc = torch.randn(3, 1, 8, 8, generator=g), torch.randn(3, 1, 8, 8, generator=g)
    assert torch.equal(guided_velocity(uu, uc, 1.0), uc)  # criterion 3: w = 1 -> conditional
    assert torch.equal(guided_velocity(uu, uc, 0.0), uu)  # w = 0 -> unconditional
    np.testing.assert_allclose(guided_velocity(uu, uc, 4.0).numpy(), (uu + 4 * (uc - uu)).numpy(), atol=1e-6)


def test_euler_sample_integrates_a_known_flow_exactly() -> None:
    # constant velocity v: X(1) = X(0) + v for any step count; linear flow u = target - X0 as in Eq. (5)
    x0 = torch.zeros(1, 8, 8)
    v = torch.full((1, 8, 8), 2.5)
    for n in (1, 3, 5, 8):
        out = euler_sample(lambda x, t: v, x0, n)
        assert torch.allclose(out, x0 + v)
    # dX/dt = X has Euler solution (1 + 1/T)^T
    out = euler_sample(lambda x, t: x, torch.ones(1), 5)
    assert float(out) == pytest.approx((1 + 1 / 5) ** 5)
    # the mask acts on the velocity input only; the state is updated everywhere
    mask = torch.zeros(1, 8, 8)
    out = euler_sample(lambda x, t: torch.ones_like(x) + x, torch.ones(1, 8, 8), 4, mask_fn=lambda t: mask)
    assert torch.allclose(out, torch.full((1, 8, 8), 2.0))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: block_dct(torch.zeros(10, 16)), "x"),
        (lambda: block_dct(torch.zeros(16)), "x"),
        (lambda: block_dct(torch.full((8, 8), float("nan"))), "x"),
        (lambda: block_dct(np.zeros((8, 8))), "x"),
        (lambda: block_idct(torch.zeros(8, 12)), "X"),
        (lambda: block_dct(torch.zeros(8, 8), block=0), "block"),
        (lambda: keep_count(1.5), "t"),
        (lambda: keep_count(float("nan")), "t"),
        (lambda: keep_count(0.5, "quadratic"), "schedule"),  # type: ignore[arg-type]
        (lambda: keep_count(0.5, min_keep=10, max_keep=4), "min_keep"),
        (lambda: keep_count(0.5, min_keep=0), "min_keep"),
        (lambda: frequency_mask(0.5, max_keep=65), "max_keep"),
        (lambda: frequency_mask(0.5, layout="diamond"), "layout"),  # type: ignore[arg-type]
        (lambda: guided_velocity(torch.zeros(2), torch.zeros(3), 1.0), "u_cond"),
        (lambda: guided_velocity(torch.zeros(2), torch.zeros(2), float("inf")), "w"),
        (lambda: euler_sample(lambda x, t: x, torch.zeros(2), 0), "n_steps"),
        (lambda: euler_sample(lambda x, t: x[:1], torch.zeros(2), 2), "velocity_fn"),
        (lambda: to_workspace(torch.zeros(8, 8), 0), "ws_keep"),
    ],
)
def test_bad_inputs_raise_value_error_naming_the_argument(call, name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call()
