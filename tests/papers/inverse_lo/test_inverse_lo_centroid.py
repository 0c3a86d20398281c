"""Exact centroid of the order polytope (DP over ideals) against brute force, closed forms and sampling."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from icml2026.papers.inverse_lo import (
    count_linear_extensions,
    linear_extension_heights,
    mistake_bound,
    order_polytope_centroid,
)


def _brute(d: int, edges: list[tuple[int, int]]) -> tuple[int, np.ndarray]:
    total, n = np.zeros(d), 0
    for perm in itertools.permutations(range(d)):  # perm[k] = element at height k + 1
        height = {e: k + 1 for k, e in enumerate(perm)}
        if all(height[i] > height[j] for i, j in edges):
            n += 1
            for e in range(d):
                total[e] += height[e]
    return n, total / n


def _random_poset(d: int, p: float, rng: np.random.Generator) -> list[tuple[int, int]]:
    order = rng.permutation(d)  # a hidden total order keeps the random edges acyclic
    return [(int(order[a]), int(order[b])) for a in range(d) for b in range(a) if rng.random() < p]


def test_dp_equals_brute_force_on_random_posets_up_to_d7():
    rng = np.random.default_rng(0)
    for _ in range(60):  # acceptance 2: every poset tested, d <= 7, to 1e-12
        d = int(rng.integers(1, 8))
        edges = _random_poset(d, float(rng.uniform(0, 0.6)), rng)
        n, heights = _brute(d, edges)
        assert count_linear_extensions(d, edges) == n
        np.testing.assert_allclose(linear_extension_heights(d, edges), heights, atol=1e-12, rtol=0)


def test_closed_forms_antichain_and_chain():
    # Antichain: K_P is the cube, centroid 1/2 and e(P) = d!; chain 0 > 1 > ... : heights d, d-1, ..., 1.
    for d in (1, 5, 12):
        np.testing.assert_allclose(order_polytope_centroid(d, []), np.full(d, 0.5), atol=1e-15)
        assert count_linear_extensions(d, []) == math.factorial(d)
        chain = [(i, i + 1) for i in range(d - 1)]
        np.testing.assert_allclose(linear_extension_heights(d, chain), np.arange(d, 0, -1), atol=1e-12)
        assert count_linear_extensions(d, chain) == 1


def test_exact_counts_at_the_guard_d18():
    # 18! = 6402373705728000 < 2^63: the int64 DP stays exact at the brief's guard d = 18.
    assert count_linear_extensions(18, []) == math.factorial(18)
    # Two disjoint chains of 9: e(P) = C(18, 9) interleavings.
    edges = [(i, i + 1) for i in range(8)] + [(i, i + 1) for i in range(9, 17)]
    assert count_linear_extensions(18, edges) == math.comb(18, 9)


def test_mcmc_estimator_is_close_to_the_exact_heights():
    rng = np.random.default_rng(1)
    for d in (6, 9):
        edges = _random_poset(d, 0.25, rng)
        exact = linear_extension_heights(d, edges)
        est = linear_extension_heights(d, edges, method="mcmc", rng=rng, n_chains=64)
        # Heights lie in [1, d]; 64 chains x max(400, 2 d^2) sweeps give a standard error of a few 1e-2.
        assert np.abs(est - exact).max() < 0.15


def test_mcmc_runs_beyond_the_exact_guard():
    rng = np.random.default_rng(2)
    edges = [(i, i + 1) for i in range(29)]  # a chain of 30: only one linear extension
    est = linear_extension_heights(30, edges, rng=rng, n_chains=4, n_sweeps=10)
    np.testing.assert_allclose(est, np.arange(30, 0, -1))  # the chain cannot move: exact
    anti = linear_extension_heights(24, [], rng=rng, n_chains=64)
    # Antichain: E[height] = (d + 1)/2. A height has sd ~ 24/sqrt(12) = 6.9; 64 chains of 1152 correlated
    # sweeps leave roughly 10^3 effective samples, so the max error over 24 elements is ~ 0.5 (1.0 = 4 sd).
    assert np.abs(anti - 12.5).max() < 1.0


def test_mistake_bound_values():
    # Brief: d = 10 gives ln(10!)/ln(e/(e-1)) = 32.9; with C corruptions (C+1) * that + C.
    assert mistake_bound(10) == pytest.approx(32.93, abs=5e-3)
    assert mistake_bound(10, 5) == pytest.approx(6 * mistake_bound(10) + 5)


def test_bad_inputs():
    with pytest.raises(ValueError, match="directed cycle"):
        linear_extension_heights(3, [(0, 1), (1, 2), (2, 0)])
    with pytest.raises(ValueError, match="directed cycle"):
        count_linear_extensions(2, [(0, 1), (1, 0)])
    with pytest.raises(ValueError, match="lie in"):
        linear_extension_heights(3, [(0, 3)])
    with pytest.raises(ValueError, match="d=19"):
        linear_extension_heights(19, [], method="exact")
    with pytest.raises(ValueError, match="positive integer"):
        linear_extension_heights(0, [])
    with pytest.raises(ValueError, match="method"):
        linear_extension_heights(3, [], method="fast")
