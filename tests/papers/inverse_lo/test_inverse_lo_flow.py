"""Min-cost-flow oracle for flow-defined M-convex sets: cross-checked against enumeration; d = 50 learner run."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.inverse_lo import (
    BoxSumSet,
    CentroidLearner,
    FlowSet,
    UniformMatroidBases,
    laminar_set,
    play,
    random_flow_set,
    sample_w_star,
    transversal_matroid_bases,
    verify_m_convex,
)


def _brute_pairs(points: np.ndarray, x: np.ndarray) -> set[tuple[int, int]]:
    members = {tuple(p) for p in points.tolist()}
    d = x.size
    eye = np.eye(d, dtype=np.int64)
    return {(i, j) for i in range(d) for j in range(d) if i != j and tuple(x - eye[i] + eye[j]) in members}


def _random_small(rng: np.random.Generator, k: int) -> FlowSet:
    d = int(rng.integers(2, 6))
    kind = k % 3
    if kind == 0:
        return random_flow_set(d, rng)
    if kind == 1:  # a random laminar family: a chain of nested sets plus disjoint singletons
        order = rng.permutation(d)
        family = [(order[: int(s)].tolist(), int(rng.integers(0, 3))) for s in sorted(set(rng.integers(1, d + 1, 2)))]
        upper = rng.integers(0, 3, size=d)
        top = laminar_set(d, family, 0, upper=upper).max_total
        return laminar_set(d, family, int(rng.integers(0, top + 1)), upper=upper)
    slots = [
        rng.choice(d, size=int(rng.integers(1, d + 1)), replace=False).tolist()
        for _ in range(int(rng.integers(1, d + 1)))
    ]
    return transversal_matroid_bases(d, slots)


def test_flow_argmax_equals_enumeration_on_100_random_instances():
    rng = np.random.default_rng(2026)
    for k in range(100):
        fs = _random_small(rng, k)
        pts = fs.enumerate_points()
        assert pts.shape[0] >= 1
        verify_m_convex(pts)  # the representation theorem, checked by brute force on the small instance
        w = rng.standard_normal(fs.d)
        if k % 4 == 0:
            w = np.round(w)  # ties
        x = fs.maximize(w)
        assert fs.contains(x)
        assert np.isclose(x @ w, (pts @ w).max(), rtol=0, atol=1e-12)
        # the same unique maximiser as enumeration under the strict ranking (ties -> smaller index)
        score = np.empty(fs.d)
        score[np.argsort(-w, kind="stable")] = np.arange(fs.d, 0, -1)
        np.testing.assert_array_equal(x, pts[int(np.argmax(pts @ score))])
        for p in pts:
            got = {tuple(q) for q in fs.exchange_pairs(p).tolist()}
            assert got == _brute_pairs(pts, p)


def test_flow_membership_matches_enumeration():
    rng = np.random.default_rng(5)
    fs = random_flow_set(4, rng)
    members = {tuple(p) for p in fs.enumerate_points().tolist()}
    import itertools

    for p in itertools.product(range(3), repeat=4):
        assert fs.contains(np.array(p)) == (p in members)
    assert not fs.contains(np.array([0.5, 0, 0, 0]))
    assert not fs.contains(np.zeros(3))


def test_flow_agrees_with_greedy_families_including_ties():
    # a box-sum set and a uniform matroid written as flows: the same maximiser, the same tie-break
    lower, upper, total = np.zeros(5, dtype=int), np.array([2, 1, 3, 0, 2]), 4
    box = BoxSumSet(lower, upper, total)
    as_flow = FlowSet([], [("s", int(u)) for u in upper], "s", total)
    uni = UniformMatroidBases(5, [0, 2, 3, 4], 2)
    uni_flow = FlowSet(
        [("s", ("a", i), 1) for i in (0, 2, 3, 4)], [(("a", i), 1) if i != 1 else ("s", 0) for i in range(5)], "s", 2
    )
    rng = np.random.default_rng(1)
    for _ in range(50):
        w = np.round(rng.standard_normal(5))
        np.testing.assert_array_equal(as_flow.maximize(w), box.maximize(w))
        np.testing.assert_array_equal(uni_flow.maximize(w), uni.maximize(w))
        x = box.maximize(w)
        assert {tuple(q) for q in as_flow.exchange_pairs(x).tolist()} == {
            tuple(q) for q in box.exchange_pairs(x).tolist()
        }


def test_laminar_and_transversal_constructions():
    lam = laminar_set(4, [([0, 1], 1), ([0, 1, 2], 2)], 3, upper=[1, 1, 1, 2])
    pts = {tuple(p) for p in lam.enumerate_points().tolist()}
    want = {p for p in np.ndindex(2, 2, 2, 3) if sum(p) == 3 and p[0] + p[1] <= 1 and p[0] + p[1] + p[2] <= 2}
    assert pts == want
    tr = transversal_matroid_bases(4, [[0, 1], [1], [2, 3]])
    assert tr.total == 3
    bases = {tuple(p) for p in tr.enumerate_points().tolist()}
    assert bases == {(1, 1, 1, 0), (1, 1, 0, 1)}


def test_d50_flow_set_runs_through_the_learner():
    rng = np.random.default_rng(0)
    d = 50
    instances = [random_flow_set(d, rng) for _ in range(12)]
    w_star = sample_w_star(d, rng)
    learner = CentroidLearner(d, rng=np.random.default_rng(1), n_chains=8, n_sweeps=400)  # MCMC centroid
    trace = play(learner, w_star, instances)
    assert trace.n_rounds == 12
    assert np.all(trace.regret >= -1e-12)
    assert learner.edges_.sum() > 0  # the exchange edges of the flow sets reached the poset
    # every learned edge is consistent with w* (truthful feedback)
    i, j = np.nonzero(learner.edges_)
    assert np.all(w_star[i] >= w_star[j])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(arcs=[], terminals=[], source="s", total=0), "terminals"),
        (dict(arcs=[("s", "s", 1)], terminals=[("s", 1)], source="s", total=0), "self-loop"),
        (dict(arcs=[("s", "a", -1)], terminals=[("a", 1)], source="s", total=0), "capacity"),
        (dict(arcs=[("s", "a", 1.5)], terminals=[("a", 1)], source="s", total=0), "capacity|^arcs: "),
        (dict(arcs=[("s", "a", 1)], terminals=[("a", 1)], source="z", total=0), "source"),
        (dict(arcs=[("s", "a", 1)], terminals=[("a", 1)], source="s", total=2), "empty"),
        (dict(arcs=[("s", "a", 1)], terminals=[("a", 1)], source="s", total=-1), "total"),
        (dict(arcs=[("s", "a")], terminals=[("a", 1)], source="s", total=0), "arcs"),
    ],
)
def test_flow_set_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FlowSet(**kwargs)


def test_flow_helpers_bad_input():
    with pytest.raises(ValueError, match="laminar"):
        laminar_set(3, [([0, 1], 1), ([1, 2], 1)], 1)
    with pytest.raises(ValueError, match="family"):
        laminar_set(3, [([0, 5], 1)], 1)
    with pytest.raises(ValueError, match="slots"):
        transversal_matroid_bases(3, [[0, 3]])
    fs = FlowSet([], [("s", 1), ("s", 1)], "s", 1)
    with pytest.raises(ValueError, match="weight"):
        fs.maximize(np.array([np.nan, 0.0]))
    with pytest.raises(ValueError, match="not in the feasible set"):
        fs.exchange_pairs(np.array([1, 1]))
