"""Exact float32 helpers and the scaling solver fl(fl(rho z) a) == T (brief Acceptance 4)."""

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from icml2026.papers.fp_gradients import (
    count_mismatches,
    round_f32,
    same_value,
    solve_scaling,
    solve_single_scaling,
)
from icml2026.papers.fp_gradients.experiments import random_normal_floats
from icml2026.papers.fp_gradients.floats import dyadic, dyadic_add, dyadic_mul, round_dyadic_f32

torch.set_num_threads(1)


def _random_f32(rng, n):
    bits = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    v = bits.view(np.float32)
    return v[np.isfinite(v)]


def test_round_f32_matches_numpy_float32_arithmetic():
    # numpy float32 ufuncs are correctly rounded (IEEE 754), so exact-then-round must agree bitwise,
    # including subnormal results and overflow to inf.
    rng = np.random.default_rng(0)
    a, b = _random_f32(rng, 4000), _random_f32(rng, 4000)
    n = min(a.size, b.size)
    with np.errstate(all="ignore"):
        prod, summ = a[:n] * b[:n], a[:n] + b[:n]
    for x, y, p, s in zip(a[:n].tolist(), b[:n].tolist(), prod.tolist(), summ.tolist(), strict=True):
        exact_p, exact_s = Fraction(x) * Fraction(y), Fraction(x) + Fraction(y)
        assert same_value(round_f32(exact_p), p) or (math.isinf(p) and round_f32(exact_p) == p)
        assert same_value(round_f32(exact_s), s) or (math.isinf(s) and round_f32(exact_s) == s)
        assert round_dyadic_f32(dyadic_mul(dyadic(x), dyadic(y))) == round_f32(exact_p)
        assert round_dyadic_f32(dyadic_add(dyadic(x), dyadic(y))) == round_f32(exact_s)


def test_round_f32_ties_to_even_and_non_dyadic():
    one_ulp = 2.0**-23
    assert round_f32(Fraction(1) + Fraction(one_ulp) / 2) == 1.0  # tie -> even mantissa
    assert round_f32(Fraction(1) + Fraction(3 * one_ulp) / 2) == 1.0 + 2 * one_ulp
    assert round_f32(Fraction(1, 3)) == float(np.float32(1) / np.float32(3))
    assert round_f32(Fraction(2) ** -150) == 0.0  # half the smallest subnormal ties to 0
    assert round_f32(Fraction(2) ** 128) == math.inf


def test_same_value_treats_signed_zeros_equal_and_nan_unequal():
    a = np.array([0.0, -0.0, 1.0, np.nan, 1e-45], dtype=np.float32)
    b = np.array([-0.0, 0.0, np.nextafter(np.float32(1), np.float32(2)), np.nan, 1e-45], dtype=np.float32)
    assert same_value(a, b).tolist() == [True, True, False, False, True]
    assert count_mismatches(a, b) == 2


def _check_pairs(n, seed):
    rng = np.random.default_rng(seed)
    rho, target = random_normal_floats(n, rng), random_normal_floats(n, rng)
    for r, t in zip(rho.tolist(), target.tolist(), strict=True):
        sol = solve_scaling(r, t)
        d = np.float32(r) * np.float32(sol.z)
        assert np.float32(d) * np.float32(sol.a) == np.float32(t)
        assert float(d) == sol.d


def test_solver_random_normal_pairs_small():
    _check_pairs(1500, seed=1)  # the 10,000-pair acceptance run is the slow test below


@pytest.mark.slow
def test_solver_10000_random_normal_pairs():
    _check_pairs(10_000, seed=2)  # brief Acceptance 4: 10,000 pairs, 0 failures


def test_solver_edge_cases_and_errors():
    assert solve_scaling(3.0, 0.0).z == 0.0
    sub = float(np.float32(1e-40))  # subnormal seed
    sol = solve_scaling(sub, 5.0)
    assert np.float32(np.float32(sub) * np.float32(sol.z)) * np.float32(sol.a) == np.float32(5.0)
    with pytest.raises(ValueError, match="rho = 0"):
        solve_scaling(0.0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        solve_scaling(math.inf, 1.0)
    with pytest.raises(ValueError, match="float32"):
        solve_scaling(0.1, 1.0)  # 0.1 is a float64, not a float32 value
    sol = solve_scaling(2.0, 3.0, prefer_exponent=40)
    assert 2.0**39 <= abs(sol.d) < 2.0**42  # steering the intermediate magnitude works


def test_single_rounding_baseline_skips_targets():
    # The brief: a single product fl(rho z) cannot reach every T.  rho = 3: products 3 z near T = 1 + u
    # step by 3 ulps of z ~ 1.5 ulps of T, so some T in [1, 2) are unreachable, but two roundings reach them.
    rng = np.random.default_rng(3)
    ts = (1 + rng.integers(0, 2**23, size=400) / 2**23).astype(np.float32)
    missing = [float(t) for t in ts if solve_single_scaling(3.0, float(t)) is None]
    assert len(missing) > 40
    for t in missing[:20]:
        sol = solve_scaling(3.0, t)
        assert np.float32(np.float32(3.0) * np.float32(sol.z)) * np.float32(sol.a) == np.float32(t)
    z = solve_single_scaling(3.0, 6.0)
    assert z is not None and np.float32(3.0) * np.float32(z) == np.float32(6.0)
