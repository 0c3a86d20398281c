"""M-convex sets given by integer flows, with a min-cost-flow optimisation oracle (networkx).

Standard representation (network induction, Murota, *Discrete Convex Analysis*, Sec. 9.6): take a directed
network with integer arc capacities, a source s and d *terminal arcs* into a sink t. For an integral s-t flow
of value K, let x(i) be the flow on terminal arc i. The set

    X = {x in Z^d : x is the terminal vector of some integral s-t flow of value K}

is M-convex (it is the set of integer points of a base polytope of the flow-induced polymatroid). Special
cases built here: laminar capacity sets {x >= 0 : x(S) <= c_S (S in a laminar family), sum x = K} and the
bases of transversal matroids (bipartite matchings). No brute-force axiom check is needed for them;
:func:`~icml2026.papers.inverse_lo.feasible_sets.verify_m_convex` stays for ``ExplicitSet`` only.

Oracles (all through networkx):

* ``maximize(w)``: min-cost flow with cost -score(i) on terminal arc i, where score is the strict ranking
  of w (larger w first, the smaller index first on ties). On an M-convex set the optimal actions depend on
  w only through the order of its coordinates (structural characterisation), so the integer scores give
  the same optimum set exactly, with no float round-off inside network simplex, and the strict ranking
  picks the unique maximiser that the greedy tie-break of the other families picks.
* ``contains(x)``: a max flow with terminal capacities set to x reaches K.
* ``exchange_pairs(x)``: x - e_i + e_j is in X iff, in the residual network of a flow realising x (sink
  removed), terminal j's node is reachable from terminal i's node (an augmenting cycle through the sink
  enters by arc j and leaves by the reverse of arc i).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence

import networkx as nx
import numpy as np

from .feasible_sets import FeasibleSet, _as_weight, _stable_order

__all__ = ["FlowSet", "laminar_set", "transversal_matroid_bases", "is_laminar", "ENUMERATION_LIMIT"]

_SINK = ("sink",)
ENUMERATION_LIMIT = 10**6  # enumerate_points refuses boxes with more candidate points than this


def _term(i: int) -> tuple[str, int]:
    return ("term", i)


def _as_capacity(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    if not math.isfinite(float(value)) or float(value) != int(value) or int(value) < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    return int(value)


class FlowSet(FeasibleSet):
    """Terminal vectors of integral s-t flows of value ``total`` (an M-convex set, see the module doc).

    Parameters
    ----------
    arcs : sequence of (u, v, capacity): directed arcs between hashable node labels, integer capacity >= 0.
        Parallel arcs are merged (capacities add); self-loops are refused.
    terminals : sequence of d pairs (node, capacity): terminal arc i runs from ``node`` to the sink with
        that integer capacity; x(i) is its flow.
    source : the node that supplies ``total`` units.
    total : the flow value K (integer >= 0).

    Raises
    ------
    ValueError
        On malformed arcs/terminals, a source that is not in the network, or an empty set (the maximum
        flow is below ``total``).
    """

    def __init__(
        self,
        arcs: Sequence[tuple[Hashable, Hashable, int]],
        terminals: Sequence[tuple[Hashable, int]],
        source: Hashable,
        total: int,
    ):
        terminals = list(terminals)
        if len(terminals) < 1:
            raise ValueError("terminals: need at least one terminal arc (d >= 1)")
        graph = nx.DiGraph()
        for k, arc in enumerate(arcs):
            if not isinstance(arc, (tuple, list)) or len(arc) != 3:
                raise ValueError(f"arcs: entry {k} must be (u, v, capacity), got {arc!r}")
            u, v, cap = arc
            if u == v:
                raise ValueError(f"arcs: entry {k} is a self-loop at {u!r}")
            if any(n == _SINK or (isinstance(n, tuple) and n[:1] == ("term",)) for n in (u, v)):
                raise ValueError(f"arcs: node labels {_SINK!r} and ('term', i) are reserved, got {arc!r}")
            cap = _as_capacity(cap, f"arcs: capacity of entry {k}")
            if graph.has_edge(u, v):
                graph[u][v]["capacity"] += cap
            else:
                graph.add_edge(u, v, capacity=cap, weight=0)
        caps = []
        for i, term in enumerate(terminals):
            if not isinstance(term, (tuple, list)) or len(term) != 2:
                raise ValueError(f"terminals: entry {i} must be (node, capacity), got {term!r}")
            node, cap = term
            if node == _SINK:
                raise ValueError(f"terminals: node label {_SINK!r} is reserved")
            cap = _as_capacity(cap, f"terminals: capacity of entry {i}")
            caps.append(cap)
            graph.add_edge(node, _term(i), capacity=cap, weight=0)
            graph.add_edge(_term(i), _SINK, capacity=cap, weight=0)
        if source not in graph or source == _SINK:
            raise ValueError(f"source {source!r} is not a node of the network")
        self.total = _as_capacity(total, "total")
        self.d = len(terminals)
        self.source = source
        self.capacity = np.array(caps, dtype=np.int64)
        self._graph = graph
        self.max_total = int(nx.maximum_flow_value(graph, source, _SINK))
        if self.total > self.max_total:
            raise ValueError(f"total = {self.total}: the feasible set is empty (the maximum flow is {self.max_total})")

    def __repr__(self) -> str:
        return (
            f"FlowSet(d={self.d}, nodes={self._graph.number_of_nodes()}, arcs={self._graph.number_of_edges()}, "
            f"total={self.total})"
        )

    # -- oracles ------------------------------------------------------------------------------------
    def _terminal_vector(self, flow: dict) -> np.ndarray:
        return np.array([flow[_term(i)][_SINK] for i in range(self.d)], dtype=np.int64)

    def maximize(self, w: np.ndarray) -> np.ndarray:
        """argmax_{x in X} <w, x> by min-cost flow (networkx network simplex) on integer rank costs."""
        w = _as_weight(w, self.d)
        score = np.empty(self.d, dtype=np.int64)
        score[_stable_order(w)] = np.arange(self.d, 0, -1)  # strict, order-consistent, ties -> smaller index
        graph = self._graph.copy()
        for i in range(self.d):
            graph[_term(i)][_SINK]["weight"] = -int(score[i])
        graph.nodes[self.source]["demand"] = -self.total
        graph.nodes[_SINK]["demand"] = self.total
        flow = nx.min_cost_flow(graph)
        return self._terminal_vector(flow)

    def _fixed_terminal_graph(self, x: np.ndarray) -> nx.DiGraph:
        graph = self._graph.copy()
        for i in range(self.d):
            graph[_term(i)][_SINK]["capacity"] = int(x[i])
        return graph

    def contains(self, x: np.ndarray) -> bool:
        x = np.asarray(x)
        if x.shape != (self.d,) or x.dtype.kind not in "iuf" or not np.all(np.isfinite(x)):
            return False
        if not np.all(x == np.round(x)):
            return False
        x = x.astype(np.int64)
        if np.any(x < 0) or np.any(x > self.capacity) or int(x.sum()) != self.total:
            return False
        value = nx.maximum_flow_value(self._fixed_terminal_graph(x), self.source, _SINK)
        return int(value) == self.total

    def _exchange_pairs(self, x: np.ndarray) -> np.ndarray:
        _, flow = nx.maximum_flow(self._fixed_terminal_graph(x), self.source, _SINK)
        residual = nx.DiGraph()
        residual.add_nodes_from(n for n in self._graph if n != _SINK)
        for u, v, data in self._graph.edges(data=True):
            if v == _SINK:
                continue
            f = flow[u][v]
            if f < data["capacity"]:
                residual.add_edge(u, v)
            if f > 0:
                residual.add_edge(v, u)
        pairs: list[tuple[int, int]] = []
        for i in np.flatnonzero(x > 0):
            reach = nx.descendants(residual, _term(int(i)))
            pairs.extend((int(i), j) for j in range(self.d) if j != i and x[j] < self.capacity[j] and _term(j) in reach)
        return np.array(pairs, dtype=np.int64).reshape(-1, 2)

    def enumerate_points(self) -> np.ndarray:
        """All points (filters the box 0 <= x <= min(capacity, total) by ``contains``; small sets only)."""
        hi = np.minimum(self.capacity, self.total)
        n_box = math.prod(int(h) + 1 for h in hi)
        if n_box > ENUMERATION_LIMIT:
            raise ValueError(f"enumerate_points: the box has {n_box} > {ENUMERATION_LIMIT} candidate points")
        pts = [
            p
            for p in itertools.product(*(range(int(h) + 1) for h in hi))
            if sum(p) == self.total and self.contains(np.array(p, dtype=np.int64))
        ]
        return np.array(pts, dtype=np.int64).reshape(-1, self.d)

    def diameter_bound(self) -> float:
        """Upper bound ||min(capacity, total)||_2 (every coordinate lies in [0, min(capacity_i, total)])."""
        return float(np.linalg.norm(np.minimum(self.capacity, self.total)))


# ---------------------------------------------------------------------------------------------------
def is_laminar(family: Sequence[frozenset[int]]) -> bool:
    """True iff every two sets are disjoint or nested."""
    sets = list(family)
    return all(not (a & b) or a <= b or b <= a for a, b in itertools.combinations(sets, 2))


def laminar_set(
    d: int,
    family: Sequence[tuple[Sequence[int], int]],
    total: int,
    upper: Sequence[int] | np.ndarray | None = None,
) -> FlowSet:
    """{x in Z^d : x >= 0, x(i) <= upper(i), x(S) <= c_S for (S, c_S) in family, sum x = total} as a flow.

    The laminar family is a tree: the source is the root [d], each set S is a node fed from its smallest
    strict superset (or the root) through an arc of capacity c_S, and item i's terminal hangs from the
    smallest set containing i. ``upper`` defaults to ``total`` for every item.
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    d = int(d)
    sets: list[frozenset[int]] = []
    caps: list[int] = []
    for k, entry in enumerate(family):
        if not isinstance(entry, (tuple, list)) or len(entry) != 2:
            raise ValueError(f"family: entry {k} must be (members, capacity), got {entry!r}")
        members, cap = entry
        s = frozenset(int(m) for m in members)
        if not s or min(s) < 0 or max(s) >= d:
            raise ValueError(f"family: entry {k} must be a non-empty subset of [0, {d}), got {sorted(s)}")
        if s in sets:
            raise ValueError(f"family: set {sorted(s)} appears twice")
        sets.append(s)
        caps.append(_as_capacity(cap, f"family: capacity of entry {k}"))
    if not is_laminar(sets):
        raise ValueError("family: is not laminar (two sets overlap without nesting)")
    total = _as_capacity(total, "total")
    ub = np.full(d, total, dtype=np.int64) if upper is None else np.asarray(upper)
    if ub.shape != (d,):
        raise ValueError(f"upper must have shape ({d},), got {ub.shape}")
    ub_list = [_as_capacity(u, f"upper[{i}]") for i, u in enumerate(ub.tolist())]

    def parent(members: frozenset[int]) -> object:
        best = None
        for k, s in enumerate(sets):
            if members < s and (best is None or len(s) < len(sets[best])):
                best = k
        return ("root",) if best is None else ("set", best)

    arcs = [(parent(s), ("set", k), caps[k]) for k, s in enumerate(sets)]
    terminals = []
    for i in range(d):
        single = frozenset([i])
        node = ("set", sets.index(single)) if single in sets else parent(single)
        terminals.append((node, ub_list[i]))
    return FlowSet(arcs, terminals, ("root",), total)


def transversal_matroid_bases(d: int, slots: Sequence[Sequence[int]]) -> FlowSet:
    """Bases of the transversal matroid of the set system ``slots`` (subsets of the items [0, d)).

    A basis is a maximum set of items matched to distinct slots; as a flow: source -> slot (capacity 1)
    -> item (capacity 1 per allowed pair) -> sink (capacity 1), of value = the maximum matching size.
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    d = int(d)
    if len(slots) < 1:
        raise ValueError("slots: need at least one slot")
    arcs: list[tuple[Hashable, Hashable, int]] = []
    for k, slot in enumerate(slots):
        members = sorted({int(m) for m in slot})
        if members and (members[0] < 0 or members[-1] >= d):
            raise ValueError(f"slots: entry {k} must be a subset of [0, {d}), got {members}")
        arcs.append((("src",), ("slot", k), 1))
        arcs.extend((("slot", k), ("item", m), 1) for m in members)
    terminals = [(("item", i), 1) for i in range(d)]
    probe = FlowSet(arcs, terminals, ("src",), 0)
    return FlowSet(arcs, terminals, ("src",), probe.max_total)
