"""M-convex feasible sets: membership, greedy linear maximisation and exchange pairs (Sec. 2 of the paper).

An M-convex set X subset Z^d satisfies the exchange axiom: for all x, y in X and every i with
x(i) > y(i) there is j with x(j) < y(j) such that x - e_i + e_j in X and y + e_i - e_j in X.
The families here (matroid bases, box-sum sets) are M-convex; linear maximisation over them is greedy.

Conventions shared by every set
-------------------------------
* ``d`` is the ambient dimension; points are integer vectors of shape ``(d,)`` (dtype int64).
* ``maximize(w)`` returns one maximiser of <w, x>; ties are broken deterministically by index (a
  coordinate with a smaller index is preferred), never by noise: the cut argument needs a
  deterministic recommendation at the exact centroid.
* ``exchange_pairs(x)`` returns the pairs (i, j), i != j, with x - e_i + e_j in X, as an int array of
  shape ``(m, 2)``. By the structural characterisation, x is optimal for w iff w(i) >= w(j) for all of them.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Sequence

import networkx as nx
import numpy as np

from icml2026.core.validate import as_array

__all__ = [
    "FeasibleSet",
    "UniformMatroidBases",
    "PartitionMatroidBases",
    "GraphicMatroidBases",
    "BoxSumSet",
    "ExplicitSet",
    "verify_m_convex",
]


def _as_weight(w: np.ndarray, d: int) -> np.ndarray:
    w = np.asarray(w, dtype=float)
    if w.shape != (d,):
        raise ValueError(f"weight vector must have shape ({d},), got {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("weight vector must be finite")
    return w


def _as_point(x: np.ndarray, d: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.shape != (d,):
        raise ValueError(f"action must have shape ({d},), got {arr.shape}")
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind not in "fb" or not np.isfinite(arr).all() or not (arr == np.round(arr)).all():
        raise ValueError("action must be an integer vector")
    return arr.astype(np.int64)


def _stable_order(w: np.ndarray) -> np.ndarray:
    """Indices by decreasing w, smaller index first on ties."""
    return np.argsort(-w, kind="stable")


class FeasibleSet(ABC):
    """A finite feasible set X_t subset Z^d with a linear optimisation oracle.

    ``is_m_convex`` is True when the set is known to be M-convex (the structured families, or an
    :class:`ExplicitSet` whose exchange axiom was checked); only then are exchange pairs a certificate
    of optimality, and only then does :class:`CentroidLearner` accept the set.
    """

    d: int
    is_m_convex: bool = True

    @abstractmethod
    def maximize(self, w: np.ndarray) -> np.ndarray:
        """One maximiser of <w, x> over X, shape (d,), deterministic tie-break by index."""

    @abstractmethod
    def contains(self, x: np.ndarray) -> bool:
        """Membership test for an integer vector x of shape (d,)."""

    @abstractmethod
    def _exchange_pairs(self, x: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def enumerate_points(self) -> np.ndarray:
        """All points of X, shape (n_points, d) (for small sets: tests and brute force)."""

    @abstractmethod
    def diameter_bound(self) -> float:
        """An upper bound on max ||x - x'||_2 over X (exact where the docstring says so)."""

    def minimize(self, w: np.ndarray) -> np.ndarray:
        """One minimiser of <w, x> (the worst action for w): ``maximize(-w)``."""
        return self.maximize(-_as_weight(w, self.d))

    def validate_member(self, x: np.ndarray, what: str = "action") -> np.ndarray:
        """Return x as int64 (d,), raising ValueError naming the problem if x is not in X."""
        try:
            arr = _as_point(x, self.d)
        except ValueError as exc:
            raise ValueError(f"{what} is not in the feasible set: {exc}") from exc
        if not self.contains(arr):
            raise ValueError(f"{what} {arr.tolist()} is not in the feasible set {self!r}")
        return arr

    def exchange_pairs(self, x: np.ndarray) -> np.ndarray:
        """Exchange pairs (i, j) with x - e_i + e_j in X (structural characterisation), shape (m, 2).

        Raises ValueError if x is not in X.
        """
        arr = self.validate_member(x)
        pairs = self._exchange_pairs(arr)
        return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def _pairs_product(sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """All pairs (i, j), i in sources, j in targets, i != j, shape (m, 2)."""
    pairs = np.empty((sources.size * targets.size, 2), dtype=np.int64)
    pairs[:, 0] = np.repeat(sources, targets.size)
    pairs[:, 1] = np.tile(targets, sources.size)
    return pairs[pairs[:, 0] != pairs[:, 1]]


class UniformMatroidBases(FeasibleSet):
    """Bases of the uniform matroid U(k, S): {x in {0,1}^d : supp(x) subset S, sum(x) = k}.

    Parameters
    ----------
    d : ambient dimension.
    available : the available items S, indices in [0, d) (any order, no repeats).
    k : the number of items to choose, 0 <= k <= |S|.

    ``diameter_bound`` is exact: sqrt(2 min(k, |S| - k)).
    """

    def __init__(self, d: int, available: Sequence[int] | np.ndarray, k: int):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"d must be a positive integer, got {d!r}")
        avail = np.asarray(available, dtype=np.int64).ravel()
        if avail.size and (avail.min() < 0 or avail.max() >= d):
            raise ValueError(f"available items must lie in [0, {d}), got {avail.tolist()}")
        if np.unique(avail).size != avail.size:
            raise ValueError("available items must not repeat")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= avail.size:
            raise ValueError(f"k must be an integer in [0, |S|] = [0, {avail.size}], got {k!r}")
        self.d = int(d)
        self.available = np.sort(avail)
        self.k = int(k)
        self._mask = np.zeros(self.d, dtype=bool)
        self._mask[self.available] = True

    def __repr__(self) -> str:
        return f"UniformMatroidBases(d={self.d}, available={self.available.tolist()}, k={self.k})"

    def maximize(self, w: np.ndarray) -> np.ndarray:
        w = _as_weight(w, self.d)
        chosen = self.available[_stable_order(w[self.available])[: self.k]]
        x = np.zeros(self.d, dtype=np.int64)
        x[chosen] = 1
        return x

    def contains(self, x: np.ndarray) -> bool:
        x = np.asarray(x)
        return bool(
            x.shape == (self.d,)
            and ((x == 0) | (x == 1)).all()
            and not x[~self._mask].any()
            and int(x.sum()) == self.k
        )

    def _exchange_pairs(self, x: np.ndarray) -> np.ndarray:
        inside = np.flatnonzero(x == 1)
        outside = np.flatnonzero((x == 0) & self._mask)
        return _pairs_product(inside, outside)

    def enumerate_points(self) -> np.ndarray:
        pts = []
        for comb in itertools.combinations(self.available.tolist(), self.k):
            x = np.zeros(self.d, dtype=np.int64)
            x[list(comb)] = 1
            pts.append(x)
        return np.array(pts, dtype=np.int64).reshape(-1, self.d)

    def diameter_bound(self) -> float:
        return float(np.sqrt(2 * min(self.k, self.available.size - self.k)))


class PartitionMatroidBases(FeasibleSet):
    """Bases of a partition matroid: exactly k_b items from each block B_b, nothing outside the blocks.

    Parameters
    ----------
    d : ambient dimension.
    blocks : disjoint index lists B_1, ..., B_m in [0, d).
    capacities : k_b with 0 <= k_b <= |B_b|.

    ``diameter_bound`` is exact: sqrt(2 sum_b min(k_b, |B_b| - k_b)).
    """

    def __init__(self, d: int, blocks: Sequence[Sequence[int]], capacities: Sequence[int]):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"d must be a positive integer, got {d!r}")
        if len(blocks) != len(capacities):
            raise ValueError(f"got {len(blocks)} blocks but {len(capacities)} capacities")
        self.d = int(d)
        self.blocks = [np.sort(np.asarray(b, dtype=np.int64).ravel()) for b in blocks]
        self.capacities = [int(c) for c in capacities]
        seen = np.concatenate(self.blocks) if self.blocks else np.zeros(0, dtype=np.int64)
        if seen.size and (seen.min() < 0 or seen.max() >= d):
            raise ValueError(f"block items must lie in [0, {d})")
        if np.unique(seen).size != seen.size:
            raise ValueError("blocks of a partition matroid must be disjoint")
        for b, c in zip(self.blocks, self.capacities, strict=True):
            if not 0 <= c <= b.size:
                raise ValueError(f"capacity {c} is outside [0, {b.size}] for block {b.tolist()}")
        self._block_of = np.full(self.d, -1, dtype=np.int64)
        for idx, b in enumerate(self.blocks):
            self._block_of[b] = idx

    def __repr__(self) -> str:
        blocks = [b.tolist() for b in self.blocks]
        return f"PartitionMatroidBases(d={self.d}, blocks={blocks}, capacities={self.capacities})"

    def maximize(self, w: np.ndarray) -> np.ndarray:
        w = _as_weight(w, self.d)
        x = np.zeros(self.d, dtype=np.int64)
        for b, c in zip(self.blocks, self.capacities, strict=True):
            x[b[_stable_order(w[b])[:c]]] = 1
        return x

    def contains(self, x: np.ndarray) -> bool:
        x = np.asarray(x)
        if x.shape != (self.d,) or not np.all((x == 0) | (x == 1)):
            return False
        if np.any(x[self._block_of < 0]):
            return False
        return all(int(x[b].sum()) == c for b, c in zip(self.blocks, self.capacities, strict=True))

    def _exchange_pairs(self, x: np.ndarray) -> np.ndarray:
        parts = [_pairs_product(b[x[b] == 1], b[x[b] == 0]) for b in self.blocks]
        return np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)

    def enumerate_points(self) -> np.ndarray:
        per_block = [
            list(itertools.combinations(b.tolist(), c))
            for b, c in zip(self.blocks, self.capacities, strict=True)
        ]
        pts = []
        for choice in itertools.product(*per_block):
            x = np.zeros(self.d, dtype=np.int64)
            for comb in choice:
                x[list(comb)] = 1
            pts.append(x)
        return np.array(pts, dtype=np.int64).reshape(-1, self.d)

    def diameter_bound(self) -> float:
        return float(
            np.sqrt(2 * sum(min(c, b.size - c) for b, c in zip(self.blocks, self.capacities, strict=True)))
        )


class GraphicMatroidBases(FeasibleSet):
    """Bases of a graphic matroid: spanning forests of a multigraph whose d edges are the coordinates.

    For a connected graph the bases are its spanning trees. x - e_i + e_j is a basis iff tree edge i lies
    on the fundamental cycle that non-tree edge j closes in the tree (found with networkx).

    Parameters
    ----------
    n_nodes : number of vertices (labelled 0..n_nodes-1).
    edges : sequence of d pairs (u, v); parallel edges and self-loops are allowed.

    ``diameter_bound`` is an upper bound: sqrt(2 min(r, d - r)) with r the rank.
    """

    def __init__(self, n_nodes: int, edges: Sequence[tuple[int, int]] | np.ndarray):
        if isinstance(n_nodes, bool) or not isinstance(n_nodes, (int, np.integer)) or n_nodes < 1:
            raise ValueError(f"n_nodes must be a positive integer, got {n_nodes!r}")
        arr = np.asarray(edges, dtype=np.int64)
        if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1:
            raise ValueError(f"edges must be a non-empty (d, 2) array of vertex pairs, got shape {arr.shape}")
        if arr.min() < 0 or arr.max() >= n_nodes:
            raise ValueError(f"edge endpoints must lie in [0, {n_nodes})")
        self.n_nodes = int(n_nodes)
        self.edges = arr
        self.d = int(arr.shape[0])
        graph = nx.MultiGraph()
        graph.add_nodes_from(range(self.n_nodes))
        graph.add_edges_from(arr.tolist())
        self.rank = self.n_nodes - nx.number_connected_components(graph)

    def __repr__(self) -> str:
        return f"GraphicMatroidBases(n_nodes={self.n_nodes}, edges={self.edges.tolist()})"

    def maximize(self, w: np.ndarray) -> np.ndarray:
        """Kruskal's algorithm (greedy), edges by decreasing weight, smaller index first on ties."""
        w = _as_weight(w, self.d)
        forest = nx.utils.UnionFind(range(self.n_nodes))
        x = np.zeros(self.d, dtype=np.int64)
        for e in _stable_order(w):
            u, v = int(self.edges[e, 0]), int(self.edges[e, 1])
            if forest[u] != forest[v]:
                forest.union(u, v)
                x[e] = 1
        return x

    def contains(self, x: np.ndarray) -> bool:
        x = np.asarray(x)
        if x.shape != (self.d,) or not np.all((x == 0) | (x == 1)) or int(x.sum()) != self.rank:
            return False
        forest = nx.utils.UnionFind(range(self.n_nodes))
        for e in np.flatnonzero(x):
            u, v = int(self.edges[e, 0]), int(self.edges[e, 1])
            if forest[u] == forest[v]:
                return False
            forest.union(u, v)
        return True

    def _exchange_pairs(self, x: np.ndarray) -> np.ndarray:
        tree = nx.Graph()
        tree.add_nodes_from(range(self.n_nodes))
        for e in np.flatnonzero(x):
            tree.add_edge(int(self.edges[e, 0]), int(self.edges[e, 1]), index=int(e))
        pairs: list[tuple[int, int]] = []
        for j in np.flatnonzero(x == 0):
            u, v = int(self.edges[j, 0]), int(self.edges[j, 1])
            if u == v:
                continue  # a self-loop closes no fundamental cycle through tree edges
            path = nx.shortest_path(tree, u, v)
            pairs.extend((tree.edges[a, b]["index"], int(j)) for a, b in itertools.pairwise(path))
        return np.array(pairs, dtype=np.int64).reshape(-1, 2)

    def enumerate_points(self) -> np.ndarray:
        pts = []
        for comb in itertools.combinations(range(self.d), self.rank):
            x = np.zeros(self.d, dtype=np.int64)
            x[list(comb)] = 1
            if self.contains(x):
                pts.append(x)
        return np.array(pts, dtype=np.int64).reshape(-1, self.d)

    def diameter_bound(self) -> float:
        return float(np.sqrt(2 * min(self.rank, self.d - self.rank)))


class BoxSumSet(FeasibleSet):
    """Box-sum set {x in Z^d : sum(x) = total, lower <= x <= upper} (integer points of a base polytope).

    Greedy maximisation fills coordinates from ``lower`` in order of decreasing w (smaller index first on
    ties) up to ``upper`` until the sum reaches ``total``.

    ``diameter_bound`` is an upper bound: ||upper - lower||_2.
    """

    def __init__(self, lower: Sequence[int] | np.ndarray, upper: Sequence[int] | np.ndarray, total: int):
        lo = np.asarray(lower)
        hi = np.asarray(upper)
        if lo.ndim != 1 or lo.shape != hi.shape or lo.size < 1:
            raise ValueError(
                f"lower and upper must be 1-D of equal non-zero length, got {lo.shape}, {hi.shape}"
            )
        if not (np.all(lo == np.round(lo)) and np.all(hi == np.round(hi))):
            raise ValueError("lower and upper must be integer vectors")
        lo, hi = lo.astype(np.int64), hi.astype(np.int64)
        if np.any(lo > hi):
            raise ValueError("the feasible set is empty: lower > upper in some coordinate")
        if isinstance(total, bool) or not float(total).is_integer():
            raise ValueError(f"total must be an integer, got {total!r}")
        total = int(total)
        if not int(lo.sum()) <= total <= int(hi.sum()):
            raise ValueError(
                f"the feasible set is empty: total={total} is outside [sum(lower), sum(upper)] = "
                f"[{int(lo.sum())}, {int(hi.sum())}]"
            )
        self.lower, self.upper, self.total = lo, hi, total
        self._lower_sum = int(lo.sum())
        self.d = int(lo.size)

    def __repr__(self) -> str:
        return f"BoxSumSet(lower={self.lower.tolist()}, upper={self.upper.tolist()}, total={self.total})"

    def maximize(self, w: np.ndarray) -> np.ndarray:
        w = _as_weight(w, self.d)
        order = _stable_order(w)
        cap = (self.upper - self.lower)[order]
        before = np.cumsum(cap) - cap
        take = np.minimum(np.maximum(self.total - self._lower_sum - before, 0), cap)
        x = self.lower.copy()
        x[order] += take
        return x

    def contains(self, x: np.ndarray) -> bool:
        x = np.asarray(x)
        return bool(
            x.shape == (self.d,)
            and (x >= self.lower).all()
            and (x <= self.upper).all()
            and int(x.sum()) == self.total
        )

    def _exchange_pairs(self, x: np.ndarray) -> np.ndarray:
        return _pairs_product(np.flatnonzero(x > self.lower), np.flatnonzero(x < self.upper))

    def enumerate_points(self) -> np.ndarray:
        ranges = [range(int(a), int(b) + 1) for a, b in zip(self.lower, self.upper, strict=True)]
        pts = [p for p in itertools.product(*ranges) if sum(p) == self.total]
        return np.array(pts, dtype=np.int64).reshape(-1, self.d)

    def diameter_bound(self) -> float:
        return float(np.linalg.norm(self.upper - self.lower))


def verify_m_convex(points: np.ndarray) -> None:
    """Brute-force check of the M-convex exchange axiom on an explicit finite point set.

    Parameters
    ----------
    points : (n_points, d) integer array, the set X (non-empty, no repeats).

    Raises
    ------
    ValueError
        Naming the violating x, y and i when the exchange axiom fails.
    """
    raw = as_array(points, "points", ndim=2)
    if not np.all(raw == np.round(raw)):
        raise ValueError("points: must be integer vectors")
    pts = raw.astype(np.int64)
    members = {tuple(p) for p in pts.tolist()}
    d = pts.shape[1]
    eye = np.eye(d, dtype=np.int64)
    for x in pts:
        for y in pts:
            for i in np.flatnonzero(x > y):
                ok = any(
                    tuple(x - eye[i] + eye[j]) in members and tuple(y + eye[i] - eye[j]) in members
                    for j in np.flatnonzero(x < y)
                )
                if not ok:
                    raise ValueError(
                        f"feasible set is not M-convex: exchange axiom fails for x={x.tolist()}, "
                        f"y={y.tolist()}, i={int(i)}"
                    )


class ExplicitSet(FeasibleSet):
    """A feasible set given by its points, shape (n_points, d).

    With ``check_m_convex=True`` (default) the points must be integer and M-convex (checked by brute
    force, O(n^2 d^2)); with ``check_m_convex=False`` any real points are accepted (e.g. the notebook's
    two-point segment for the baselines) but the set is not marked M-convex, so exchange pairs are not a
    certificate of optimality and :class:`CentroidLearner` refuses it. Ties in ``maximize`` go to the
    first point in the given order. ``diameter_bound`` is exact.
    """

    def __init__(self, points: np.ndarray | Sequence[Sequence[float]], check_m_convex: bool = True):
        pts = np.asarray(points, dtype=float)
        if pts.ndim != 2 or pts.shape[0] < 1 or pts.shape[1] < 1:
            raise ValueError(
                f"the feasible set is empty or malformed: points must be (n>=1, d>=1), got {pts.shape}"
            )
        if not np.all(np.isfinite(pts)):
            raise ValueError("feasible points must be finite")
        if len({tuple(p) for p in pts.tolist()}) != pts.shape[0]:
            raise ValueError("feasible points must not repeat")
        self.d = int(pts.shape[1])
        if check_m_convex:
            if not np.all(pts == np.round(pts)):
                raise ValueError("feasible set is not M-convex: its points must be integer vectors")
            int_points = pts.astype(np.int64)
            verify_m_convex(int_points)
            self.points = int_points
        else:
            self.points = pts
        self.is_m_convex = bool(check_m_convex)
        self._members = {tuple(p) for p in self.points.tolist()}

    def __repr__(self) -> str:
        return f"ExplicitSet(n_points={self.points.shape[0]}, d={self.d}, m_convex={self.is_m_convex})"

    def maximize(self, w: np.ndarray) -> np.ndarray:
        w = _as_weight(w, self.d)
        return self.points[int(np.argmax(self.points @ w))].copy()

    def contains(self, x: np.ndarray) -> bool:
        x = np.asarray(x, dtype=float)
        # float keys hash and compare equal to integer keys (1.0 == 1), and a non-integer never matches
        return x.shape == (self.d,) and tuple(x.tolist()) in self._members

    def validate_member(self, x: np.ndarray, what: str = "action") -> np.ndarray:
        arr = np.asarray(x, dtype=float)
        if arr.shape != (self.d,) or not self.contains(arr):
            raise ValueError(f"{what} {arr.tolist()} is not in the feasible set {self!r}")
        return arr.astype(self.points.dtype)

    def _exchange_pairs(self, x: np.ndarray) -> np.ndarray:
        if not self.is_m_convex:
            raise ValueError(
                "exchange pairs certify optimality only on M-convex sets; this set was not checked"
            )
        pairs = []
        for i in range(self.d):
            for j in range(self.d):
                if i != j:
                    y = x.copy()
                    y[i] -= 1
                    y[j] += 1
                    if tuple(y.tolist()) in self._members:
                        pairs.append((i, j))
        return np.array(pairs, dtype=np.int64).reshape(-1, 2)

    def enumerate_points(self) -> np.ndarray:
        return self.points.copy()

    def diameter_bound(self) -> float:
        diff = self.points[:, None, :] - self.points[None, :, :]
        return float(np.sqrt((diff**2).sum(-1).max()))
