"""The paper's learner (centroid of the order polytope + exchange edges), its corruption-robust variant,
and the online protocol ``play`` shared by every learner.

Protocol (Sec. 2): each round t the feasible set X_t is revealed, the learner recommends x_hat_t, the
agent's action x_t in argmax_{x in X_t} <w*, x> is observed (in up to C rounds an adversary shows another
action instead). Regret_T = sum_t <w*, x*_t - x_hat_t>, measured against the truly optimal x*_t.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import networkx as nx
import numpy as np

from .feasible_sets import FeasibleSet
from .linear_extensions import EXACT_MAX_D, linear_extension_heights

__all__ = ["Learner", "CentroidLearner", "PlayTrace", "play"]


@runtime_checkable
class Learner(Protocol):
    """What ``play`` needs: ``d``, ``n_resets``, ``recommend(X) -> x`` and ``observe(X, x_observed)``."""

    d: int
    n_resets: int

    def recommend(self, feasible_set: FeasibleSet) -> np.ndarray: ...

    def observe(self, feasible_set: FeasibleSet, x_observed: np.ndarray) -> None: ...


def _check_set(feasible_set: FeasibleSet, d: int) -> None:
    if not isinstance(feasible_set, FeasibleSet):
        raise TypeError(f"feasible_set must be a FeasibleSet, got {type(feasible_set).__name__}")
    if feasible_set.d != d:
        raise ValueError(f"feasible set has dimension {feasible_set.d}, the learner has d={d}")


class CentroidLearner:
    """Finite-regret learner on M-convex sets (Algorithm: centroid of the order polytope + exchange edges).

    Round t: (1) w_hat = centroid of K_P = {w in [0,1]^d : w(i) >= w(j), (i, j) in P}, computed exactly
    from linear-extension heights (d <= 18) or by sampling (d > 18); (2) recommend argmax_{X_t} <w_hat, x>
    (greedy, tie-break by index); (3) add to P every exchange edge (i, j), x_t - e_i + e_j in X_t, of the
    observed action (the structural characterisation: x_t optimal iff w(i) >= w(j) on those pairs).

    Each round with x_hat_t != x_t cuts K_P through or beyond its centroid, so e(P) shrinks by at least
    the factor 1 - 1/e (Grunbaum); hence at most ln(d!)/ln(e/(e-1)) wrong rounds (``mistake_bound``).

    Parameters
    ----------
    d : dimension of w*.
    robust : the corruption-robust variant. When the new edges close a directed cycle (impossible under
        truthful feedback if w* has distinct coordinates), declare corruption, discard the whole epoch's
        edges (the current round's included) and start again from the empty poset; ``n_resets`` counts it.
        Without ``robust``, a cycle is kept and its strongly connected components are contracted (the
        brief's rule for ties in w*): the coordinates of one component share one centroid value.
    rng : generator for the sampling centroid when d > 18 (default: seeded 0).
    n_chains, n_sweeps : size of that sampler (see ``linear_extension_heights``).

    Attributes
    ----------
    edges_ : (d, d) bool, edges_[i, j] iff the current poset holds i -> j (w(i) >= w(j)).
    n_resets : number of resets (robust variant).
    """

    def __init__(
        self,
        d: int,
        robust: bool = False,
        *,
        rng: np.random.Generator | None = None,
        n_chains: int = 32,
        n_sweeps: int | None = None,
    ):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"d must be a positive integer, got {d!r}")
        self.d = int(d)
        self.robust = bool(robust)
        self.rng = np.random.default_rng(0) if rng is None else rng
        self.n_chains = n_chains
        self.n_sweeps = n_sweeps
        self.edges_ = np.zeros((self.d, self.d), dtype=bool)
        self.n_resets = 0
        self._centroid: np.ndarray | None = None

    # -- knowledge set -------------------------------------------------------------------------------
    def edge_list(self) -> np.ndarray:
        """The poset's edges (i, j), meaning w(i) >= w(j), shape (m, 2)."""
        return np.argwhere(self.edges_).astype(np.int64).reshape(-1, 2)

    def _heights(self, n: int, edges: np.ndarray) -> np.ndarray:
        method = "exact" if n <= EXACT_MAX_D else "mcmc"
        return linear_extension_heights(
            n, edges, method=method, rng=self.rng, n_chains=self.n_chains, n_sweeps=self.n_sweeps
        )

    def centroid(self) -> np.ndarray:
        """w_hat, the centroid of K_P, shape (d,) (cached until P changes)."""
        if self._centroid is not None:
            return self._centroid
        edges = self.edge_list()
        graph = nx.DiGraph()
        graph.add_nodes_from(range(self.d))
        graph.add_edges_from(edges.tolist())
        if nx.is_directed_acyclic_graph(graph):
            w_hat = self._heights(self.d, edges) / (self.d + 1)
        else:
            # Deviation (brief's rule for ties in w*): only reachable without `robust`; contract the
            # strongly connected components (ties w(i) = w(j)).
            cond = nx.condensation(graph)
            n_comp = cond.number_of_nodes()
            comp_edges = np.array(list(cond.edges()), dtype=np.int64).reshape(-1, 2)
            comp_w = self._heights(n_comp, comp_edges) / (n_comp + 1)
            mapping = cond.graph["mapping"]
            w_hat = np.array([comp_w[mapping[i]] for i in range(self.d)])
        self._centroid = w_hat
        return w_hat

    # -- protocol ------------------------------------------------------------------------------------
    def recommend(self, feasible_set: FeasibleSet) -> np.ndarray:
        """x_hat_t = argmax_{x in X_t} <w_hat, x> (step 2), shape (d,)."""
        _check_set(feasible_set, self.d)
        if not feasible_set.is_m_convex:
            raise ValueError(
                "CentroidLearner needs an M-convex feasible set (only there do exchange pairs certify "
                "optimality); "
                f"got {feasible_set!r}"
            )
        return feasible_set.maximize(self.centroid())

    def observe(self, feasible_set: FeasibleSet, x_observed: np.ndarray) -> None:
        """Add the exchange edges of the observed action (step 3); robust: reset on a directed cycle."""
        _check_set(feasible_set, self.d)
        if not feasible_set.is_m_convex:
            raise ValueError(f"CentroidLearner needs an M-convex feasible set, got {feasible_set!r}")
        pairs = feasible_set.exchange_pairs(x_observed)  # raises if x_observed is outside X_t
        if pairs.size == 0:
            return
        if self.edges_[pairs[:, 0], pairs[:, 1]].all():
            return
        candidate = self.edges_.copy()
        candidate[pairs[:, 0], pairs[:, 1]] = True
        if self.robust:
            graph = nx.DiGraph()
            graph.add_nodes_from(range(self.d))
            graph.add_edges_from(np.argwhere(candidate).tolist())
            if not nx.is_directed_acyclic_graph(graph):
                # Deviation: the paper's monitoring may discard fewer edges; we drop the whole epoch.
                # Corruption detected: this epoch holds at least one corrupted round. Start a new epoch
                # with the empty poset; the current round's edges are discarded too, so epochs are
                # disjoint and #resets <= C.
                self.edges_ = np.zeros_like(self.edges_)
                self.n_resets += 1
                self._centroid = None
                return
        self.edges_ = candidate
        self._centroid = None


@dataclass
class PlayTrace:
    """Per-round record of one run of ``play``.

    Attributes
    ----------
    regret : (T,) <w*, x*_t - x_hat_t> with x*_t the truly optimal action.
    cumulative_regret : (T,) running sum of ``regret``.
    wrong : (T,) bool, x_hat_t != x_t (the observed action).
    suboptimal : (T,) bool, regret_t > 1e-12 (a wrong round can be regret-free when w* ties).
    corrupted : (T,) bool, rounds whose feedback was corrupted.
    reset : (T,) bool, rounds at which the learner reset (robust variant; re-samples for cutting plane).
    """

    regret: np.ndarray
    cumulative_regret: np.ndarray
    wrong: np.ndarray
    suboptimal: np.ndarray
    corrupted: np.ndarray
    reset: np.ndarray

    @property
    def n_rounds(self) -> int:
        return int(self.regret.size)

    @property
    def n_wrong(self) -> int:
        """Number of rounds with x_hat_t != x_t."""
        return int(self.wrong.sum())

    @property
    def n_resets(self) -> int:
        return int(self.reset.sum())

    @property
    def total_regret(self) -> float:
        return float(self.cumulative_regret[-1]) if self.regret.size else 0.0


def play(
    learner: Learner,
    w_star: np.ndarray,
    instances: Iterable[FeasibleSet],
    corrupt_rounds: Sequence[int] | np.ndarray = (),
    *,
    corruption: str = "worst",
    rng: np.random.Generator | None = None,
) -> PlayTrace:
    """Run the online protocol for T = len(instances) rounds and record regret and wrong rounds.

    Parameters
    ----------
    learner : any object with ``d``, ``n_resets``, ``recommend`` and ``observe``.
    w_star : (d,) the agent's hidden objective.
    instances : the feasible sets X_1..X_T, each a :class:`FeasibleSet` of dimension d.
    corrupt_rounds : 0-based rounds whose feedback the adversary replaces.
    corruption : ``"worst"`` shows argmin_{X_t} <w*, x>; ``"random"`` shows the maximiser of a random
        Gaussian direction (a random vertex of X_t; needs ``rng``).
    rng : generator for ``corruption="random"``.

    Returns
    -------
    PlayTrace with per-round regret, cumulative regret, wrong rounds and resets.
    """
    if not isinstance(learner, Learner):
        raise ValueError(f"learner must have d, n_resets, recommend and observe, got {type(learner).__name__}")
    sets = list(instances)
    if not sets:
        raise ValueError("instances: is empty (the protocol needs at least one round)")
    d = int(learner.d)
    w = np.asarray(w_star, dtype=float)
    if w.shape != (d,):
        raise ValueError(f"w_star must have shape ({d},) to match the learner, got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("w_star must be finite")
    n_rounds = len(sets)
    bad = [r for r in corrupt_rounds if not (isinstance(r, (int, np.integer)) and 0 <= r < n_rounds)]
    if bad:
        raise ValueError(f"corrupt_rounds must be integers in [0, {n_rounds}), got {bad}")
    corrupt = np.zeros(n_rounds, dtype=bool)
    corrupt[np.asarray(list(corrupt_rounds), dtype=np.int64)] = True
    if corruption not in ("worst", "random"):
        raise ValueError(f"corruption must be 'worst' or 'random', got {corruption!r}")
    if corruption == "random" and corrupt.any() and rng is None:
        raise ValueError("corruption='random' needs an rng")
    for t, fs in enumerate(sets):
        _check_set(fs, d)
        if fs.d != w.size:
            raise ValueError(f"instance {t} has dimension {fs.d}, w_star has {w.size}")
    regret = np.zeros(n_rounds)
    wrong = np.zeros(n_rounds, dtype=bool)
    reset = np.zeros(n_rounds, dtype=bool)
    for t, fs in enumerate(sets):
        x_best = fs.maximize(w)
        x_hat = np.asarray(learner.recommend(fs))
        if corrupt[t]:
            if corruption == "worst":
                x_obs = fs.minimize(w)
            else:
                assert rng is not None
                x_obs = fs.maximize(rng.standard_normal(d))
        else:
            x_obs = x_best
        before = learner.n_resets
        learner.observe(fs, x_obs)
        reset[t] = learner.n_resets > before
        regret[t] = float(w @ (x_best - x_hat))
        wrong[t] = not np.array_equal(x_hat, x_obs)
    return PlayTrace(
        regret=regret,
        cumulative_regret=np.cumsum(regret),
        wrong=wrong,
        suboptimal=regret > 1e-12,
        corrupted=corrupt,
        reset=reset,
    )
