"""M-convex feasible sets: exchange pairs, greedy oracle and the structural characterisation."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml2026.papers.inverse_lo import (
    BoxSumSet,
    ExplicitSet,
    GraphicMatroidBases,
    PartitionMatroidBases,
    UniformMatroidBases,
    random_box_sum,
    random_graphic_matroid,
    random_partition_matroid,
    random_uniform_matroid,
    verify_m_convex,
)

GENERATORS = [random_uniform_matroid, random_partition_matroid, random_graphic_matroid, random_box_sum]


def _brute_exchange_pairs(points: np.ndarray, x: np.ndarray) -> set[tuple[int, int]]:
    members = {tuple(p) for p in points.tolist()}
    d = x.size
    out = set()
    for i, j in itertools.permutations(range(d), 2):
        y = x.copy()
        y[i] -= 1
        y[j] += 1
        if tuple(y.tolist()) in members:
            out.add((i, j))
    return out


@st.composite
def small_sets(draw):  # noqa: ANN201
    family = draw(st.integers(0, 4))
    d = draw(st.integers(2, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if family < 4:
        fs = GENERATORS[family](d, rng)
    else:  # an explicit M-convex set: the points of a random box-sum set, checked by brute force
        fs = ExplicitSet(random_box_sum(d, rng, max_upper=2).enumerate_points())
    w = np.array(draw(st.lists(st.integers(-3, 3), min_size=fs.d, max_size=fs.d)), dtype=float)
    return fs, w


@settings(max_examples=200, deadline=None)  # acceptance 1: 200 random small M-convex sets
@given(small_sets())
def test_optimal_iff_all_exchange_edges_satisfied(case):
    fs, w = case
    points = fs.enumerate_points()
    best = (points @ w).max()
    for x in points:
        optimal = x @ w >= best  # integer w: exact arithmetic, ties included on purpose
        pairs = fs.exchange_pairs(x)
        edges_ok = all(w[i] >= w[j] for i, j in pairs.tolist())
        assert optimal == edges_ok


@pytest.mark.parametrize("gen", GENERATORS)
def test_exchange_pairs_match_brute_force_and_sets_are_m_convex(gen):
    rng = np.random.default_rng(11)
    for _ in range(15):
        fs = gen(int(rng.integers(2, 7)), rng)
        points = fs.enumerate_points()
        verify_m_convex(points)  # the exchange axiom holds on the enumerated set
        for x in points:
            assert {tuple(p) for p in fs.exchange_pairs(x).tolist()} == _brute_exchange_pairs(points, x)
            assert fs.contains(x)


@pytest.mark.parametrize("gen", GENERATORS)
def test_greedy_maximiser_is_optimal(gen):
    rng = np.random.default_rng(5)
    for _ in range(20):
        fs = gen(int(rng.integers(2, 7)), rng)
        w = rng.standard_normal(fs.d)
        x = fs.maximize(w)
        assert fs.contains(x)
        assert x @ w == pytest.approx((fs.enumerate_points() @ w).max(), abs=1e-12)
        assert fs.minimize(w) @ w == pytest.approx((fs.enumerate_points() @ w).min(), abs=1e-12)


def test_diameter_bounds_are_upper_bounds_and_exact_where_stated():
    rng = np.random.default_rng(2)
    for gen in GENERATORS:
        for _ in range(10):
            fs = gen(int(rng.integers(2, 7)), rng)
            pts = fs.enumerate_points().astype(float)
            exact = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1).max())
            assert exact <= fs.diameter_bound() + 1e-12
            if gen in (random_uniform_matroid, random_partition_matroid):
                assert fs.diameter_bound() == pytest.approx(exact)


def test_graphic_bases_count_matches_matrix_tree_theorem():
    rng = np.random.default_rng(3)
    for _ in range(10):
        fs = random_graphic_matroid(int(rng.integers(3, 9)), rng)
        graph = nx.MultiGraph()
        graph.add_nodes_from(range(fs.n_nodes))
        graph.add_edges_from(fs.edges.tolist())
        assert fs.enumerate_points().shape[0] == round(nx.number_of_spanning_trees(graph))


def test_deterministic_tie_break_by_index():
    fs = UniformMatroidBases(6, [5, 1, 3, 4], 2)
    np.testing.assert_array_equal(fs.maximize(np.zeros(6)), [0, 1, 0, 1, 0, 0])
    box = BoxSumSet([0, 0, 0], [2, 2, 2], 3)
    np.testing.assert_array_equal(box.maximize(np.zeros(3)), [2, 1, 0])


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="not M-convex"):
        ExplicitSet([[1, 0, 0], [0, 1, 1]])  # different sums: the exchange axiom fails
    with pytest.raises(ValueError, match="not M-convex"):
        ExplicitSet([[1, 1, 0, 0], [0, 0, 1, 1]])  # missing the intermediate points
    with pytest.raises(ValueError, match="empty"):
        ExplicitSet(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="empty"):
        BoxSumSet([0, 0], [1, 1], 3)
    with pytest.raises(ValueError, match="k must"):
        UniformMatroidBases(4, [0, 1], 3)
    with pytest.raises(ValueError, match="disjoint"):
        PartitionMatroidBases(4, [[0, 1], [1, 2]], [1, 1])
    fs = UniformMatroidBases(4, [0, 1, 2], 1)
    with pytest.raises(ValueError, match="not in the feasible set"):
        fs.exchange_pairs(np.array([0, 0, 0, 1]))
    with pytest.raises(ValueError, match="shape"):
        fs.maximize(np.ones(3))
    with pytest.raises(ValueError, match="endpoints"):
        GraphicMatroidBases(2, [(0, 2)])
    segment = ExplicitSet([[0.6, 0.8], [-0.6, -0.8]], check_m_convex=False)
    with pytest.raises(ValueError, match="M-convex"):
        segment.exchange_pairs(np.array([0.6, 0.8]))
