"""Random instance generators: M-convex feasible sets per family, hidden objectives w*, and the notebook's
two-point segment environment for the baselines (brief, "CPU-scale reproduction plan").
"""

from __future__ import annotations

import numpy as np

from icml2026.core.validate import as_array, positive_int

from .feasible_sets import (
    BoxSumSet,
    ExplicitSet,
    FeasibleSet,
    GraphicMatroidBases,
    PartitionMatroidBases,
    UniformMatroidBases,
)
from .flow_sets import FlowSet

__all__ = [
    "ENVIRONMENTS",
    "random_uniform_matroid",
    "random_partition_matroid",
    "random_graphic_matroid",
    "random_box_sum",
    "random_flow_set",
    "make_instances",
    "sample_w_star",
    "w_star_with_gap",
    "min_coordinate_gap",
    "segment_instances",
]


def _check_d(d: int, minimum: int = 2) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < minimum:
        raise ValueError(f"d must be an integer >= {minimum}, got {d!r}")
    return int(d)


def random_uniform_matroid(d: int, rng: np.random.Generator) -> UniformMatroidBases:
    """Env (a): random available items S (|S| in [2, d]) and k in [1, |S| - 1]."""
    d = _check_d(d)
    size = int(rng.integers(2, d + 1))
    available = rng.choice(d, size=size, replace=False)
    return UniformMatroidBases(d, available, int(rng.integers(1, size)))


def random_partition_matroid(d: int, rng: np.random.Generator) -> PartitionMatroidBases:
    """Random partition of a random subset into blocks of size >= 2, capacities in [1, |B| - 1]."""
    d = _check_d(d)
    size = int(rng.integers(2, d + 1))
    items = rng.permutation(d)[:size]
    n_blocks = int(rng.integers(1, size // 2 + 1))
    sizes = 2 + rng.multinomial(size - 2 * n_blocks, np.full(n_blocks, 1.0 / n_blocks))
    blocks = np.split(items, np.cumsum(sizes)[:-1])
    caps = [int(rng.integers(1, b.size)) for b in blocks]
    return PartitionMatroidBases(d, [b.tolist() for b in blocks], caps)


def random_graphic_matroid(d: int, rng: np.random.Generator) -> GraphicMatroidBases:
    """Env (b): spanning trees of a random connected multigraph with d edges (random tree + extra edges)."""
    d = _check_d(d)
    n_nodes = int(rng.integers(2, d + 1))  # a tree needs n_nodes - 1 <= d - 1 edges, so >= 1 extra edge
    edges = [(int(rng.integers(0, v)), v) for v in range(1, n_nodes)]
    while len(edges) < d:
        u, v = rng.choice(n_nodes, size=2, replace=False)
        edges.append((int(u), int(v)))
    order = rng.permutation(d)
    return GraphicMatroidBases(n_nodes, [edges[i] for i in order])


def random_box_sum(d: int, rng: np.random.Generator, max_upper: int = 3) -> BoxSumSet:
    """Env (c): {x in Z^d : sum x = K, 0 <= x <= u} with u uniform in [0, max_upper], K in [1, sum u - 1]."""
    d = _check_d(d)
    if max_upper < 1:
        raise ValueError(f"max_upper must be >= 1, got {max_upper}")
    upper = rng.integers(0, max_upper + 1, size=d)
    while upper.sum() < 2:
        upper = rng.integers(0, max_upper + 1, size=d)
    return BoxSumSet(np.zeros(d, dtype=np.int64), upper, int(rng.integers(1, upper.sum())))


def random_flow_set(d: int, rng: np.random.Generator) -> FlowSet:
    """Env "flow": terminal vectors of integral flows in a random two-layer network (M-convex, not a box).

    Source -> m in [1, d] hubs (capacity U{1..3}) -> each item from 1 or 2 random hubs (capacity U{1, 2})
    -> item's terminal arc (capacity U{1, 2}); the flow value K is uniform in [1, max flow - 1] when the max
    flow is >= 2 (so the set has >= 2 points), else the max flow.
    """
    d = _check_d(d, 1)
    m = int(rng.integers(1, d + 1))
    arcs: list[tuple[object, object, int]] = [(("s",), ("hub", k), int(rng.integers(1, 4))) for k in range(m)]
    for i in range(d):
        for k in rng.choice(m, size=int(rng.integers(1, min(m, 2) + 1)), replace=False):
            arcs.append((("hub", int(k)), ("item", i), int(rng.integers(1, 3))))
    terminals = [(("item", i), int(rng.integers(1, 3))) for i in range(d)]
    top = FlowSet(arcs, terminals, ("s",), 0).max_total
    total = int(rng.integers(1, top)) if top >= 2 else top
    return FlowSet(arcs, terminals, ("s",), total)


ENVIRONMENTS = {
    "uniform": random_uniform_matroid,
    "partition": random_partition_matroid,
    "graphic": random_graphic_matroid,
    "box_sum": random_box_sum,
    "flow": random_flow_set,
}


def make_instances(env: str, d: int, n_rounds: int, rng: np.random.Generator) -> list[FeasibleSet]:
    """T = ``n_rounds`` random feasible sets of family ``env`` (one of ``ENVIRONMENTS``)."""
    if env not in ENVIRONMENTS:
        raise ValueError(f"unknown environment {env!r}; choose one of {sorted(ENVIRONMENTS)}")
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, (int, np.integer)) or n_rounds < 1:
        raise ValueError(f"n_rounds must be a positive integer, got {n_rounds!r}")
    gen = ENVIRONMENTS[env]
    return [gen(d, rng) for _ in range(int(n_rounds))]


def sample_w_star(d: int, rng: np.random.Generator) -> np.ndarray:
    """w* ~ N(0, I_d) normalised to the unit sphere (distinct coordinates almost surely), shape (d,)."""
    d = _check_d(d, 1)
    w = rng.standard_normal(d)
    return w / np.linalg.norm(w)


def w_star_with_gap(d: int, delta: float, rng: np.random.Generator) -> np.ndarray:
    """w* whose sorted coordinates come in near-ties: pairs at gap ``delta``, pairs apart by U[1, 2].

    Sorted values v_1 < ... < v_d have consecutive gaps delta, U[1,2], delta, U[1,2], ... (so the smallest
    gap is delta relative to the typical gap 1..2); coordinates are randomly permuted, centred and
    normalised to the unit sphere. Centring does not change any argmax on the sum-constant sets used here.
    """
    d = _check_d(d)
    if not (np.isfinite(delta) and delta > 0):
        raise ValueError(f"delta must be a positive number, got {delta!r}")
    gaps = np.where(np.arange(d - 1) % 2 == 0, delta, rng.uniform(1.0, 2.0, size=d - 1))
    values = np.concatenate([[0.0], np.cumsum(gaps)])
    w = values[rng.permutation(d)]
    w = w - w.mean()
    return w / np.linalg.norm(w)


def min_coordinate_gap(w: np.ndarray) -> float:
    """Smallest difference between two coordinates of w."""
    s = np.sort(as_array(w, "w", ndim=1))
    return float(np.diff(s).min()) if s.size > 1 else float("inf")


def segment_instances(n: int, n_rounds: int, rng: np.random.Generator) -> list[ExplicitSet]:
    """The official notebook's environment: X_t = {x1, -x1}, x1 uniform on the unit sphere of R^n.

    Not M-convex (real points); used to check the baselines against the notebook.
    """
    n = _check_d(n, 1)
    n_rounds = positive_int(n_rounds, "n_rounds")
    x1 = rng.standard_normal((n_rounds, n))
    x1 /= np.linalg.norm(x1, axis=1, keepdims=True)
    return [ExplicitSet(np.stack([x, -x]), check_m_convex=False) for x in x1]
