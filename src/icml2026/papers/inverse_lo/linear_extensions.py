"""Centroid of the order polytope via linear-extension heights (the learner's step 1).

The knowledge set is the order polytope K_P = {w in [0,1]^d : w(i) >= w(j) for every edge i -> j of P}.
It is the union of the e(P) simplices of the linear extensions of P, each of volume 1/d!, so
vol(K_P) = e(P)/d!, and its centroid is w_hat(i) = E[height(i)] / (d + 1), where height is the position
from the bottom (1 = smallest) in a uniformly random linear extension.

Edge convention everywhere: an edge (i, j) means "i is above j" (w(i) >= w(j)).

Exact route (d <= 18): dynamic programming over the lattice of order ideals (down-sets; their
complements are the up-sets of the brief), with bitmasks. With f(D) = number of orderings of a down-set D
as the bottom |D| elements and g(D) = number of orderings of its complement as the top, every extension
that puts i at height |D| + 1 just above the down-set D is counted by f(D) g(D + i), so
    e(P) = f([d]),   E[height(i)] e(P) = sum over down-sets D with D + i a down-set of (|D|+1) f(D) g(D+i).
All counts are exact int64 (18! < 2^63). The work is O(d * #ideals), at most O(d 2^d).

Sampling route (any d): the Bubley-Dyer / Karzanov-Khachiyan adjacent-transposition chain on linear
extensions, run in odd-even sweeps on many chains at once; the heights are averaged after burn-in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import networkx as nx
import numpy as np

from icml2026.core.validate import positive_int

__all__ = [
    "EXACT_MAX_D",
    "linear_extension_heights",
    "count_linear_extensions",
    "order_polytope_centroid",
    "mistake_bound",
]

EXACT_MAX_D = 18  # the brief's guard for the exponential DP; 18! < 2^63 keeps int64 counts exact


def mistake_bound(d: int, n_corruptions: int = 0) -> float:
    """Theorem (finite regret): wrong rounds <= (C + 1) ln(d!) / ln(e / (e - 1)) + C.

    With C = 0 this is the volume argument: e(P) in [1, d!] and each wrong round multiplies e(P) by at most
    1 - 1/e (Grunbaum). d = 10 gives 32.89.
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    if (
        isinstance(n_corruptions, bool)
        or not isinstance(n_corruptions, (int, np.integer))
        or n_corruptions < 0
    ):
        raise ValueError(f"n_corruptions must be a non-negative integer, got {n_corruptions!r}")
    per_epoch = math.lgamma(d + 1) / math.log(math.e / (math.e - 1.0))
    return (n_corruptions + 1) * per_epoch + n_corruptions


def _validate(d: int, edges: Sequence[tuple[int, int]] | np.ndarray) -> np.ndarray:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    arr = np.asarray(edges if len(edges) else np.zeros((0, 2)), dtype=float)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"edges must be an (m, 2) array of pairs (i, j) meaning w(i) >= w(j), got {arr.shape}"
        )
    if not np.all(arr == np.round(arr)):
        raise ValueError("edges must hold integer indices")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= d):
        raise ValueError(f"edge endpoints must lie in [0, {d})")
    graph = nx.DiGraph()
    graph.add_nodes_from(range(int(d)))
    graph.add_edges_from(arr.tolist())
    if not nx.is_directed_acyclic_graph(graph):
        cycle = [int(u) for u, _ in nx.find_cycle(graph)]
        raise ValueError(
            f"edges contain a directed cycle {cycle}: the order polytope has zero volume "
            "and no linear extension"
        )
    return arr


def _below_masks(d: int, edges: np.ndarray) -> np.ndarray:
    """below[i] = bitmask of the j with an edge i -> j (direct lower covers, enough for the DP)."""
    below = np.zeros(d, dtype=np.int64)
    for i, j in edges.tolist():
        below[i] |= 1 << j
    return below


def _ideal_dp(d: int, below: np.ndarray) -> tuple[int, np.ndarray]:
    """Exact e(P) and the integer vector e(P) * E[height], by DP over order ideals (layer by size).

    Sums run in float64 through ``np.bincount`` (fast) yet stay exact: every partial sum is a count of
    linear extensions (or of extensions with i at a given height), hence an integer <= e(P) <= 18! < 2^53.
    The height numerators sum_k (k+1) count_k(i) can exceed 2^53 and are accumulated in int64.
    """
    size = 1 << d
    seen = np.zeros(size, dtype=bool)
    index_of = np.zeros(size, dtype=np.int64)
    bits = np.left_shift(np.int64(1), np.arange(d, dtype=np.int64))
    layers: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
    transitions: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for _k in range(d):
        ideals = layers[-1][:, None]
        # (ideal, i) is a transition iff i is outside the ideal and everything below i is inside it.
        src, elem = np.nonzero(((ideals & bits) == 0) & ((ideals & below) == below))
        children = layers[-1][src] | bits[elem]
        seen[children] = True
        nxt = np.flatnonzero(seen)  # sorted, duplicates merged, O(2^d) per layer
        seen[nxt] = False
        index_of[nxt] = np.arange(nxt.size)
        layers.append(nxt.astype(np.int64))
        transitions.append((src, elem, index_of[children]))
    # f: orderings of each ideal as the bottom block (forward pass).
    f: list[np.ndarray] = [np.ones(1)]
    for k, (src, _elem, dst) in enumerate(transitions):
        f.append(np.bincount(dst, weights=f[k][src], minlength=layers[k + 1].size))
    # g: orderings of each ideal's complement as the top block (backward pass).
    g: list[np.ndarray] = [np.zeros(0)] * (d + 1)
    g[d] = np.ones(1)
    for k in range(d - 1, -1, -1):
        src, _elem, dst = transitions[k]
        g[k] = np.bincount(src, weights=g[k + 1][dst], minlength=layers[k].size)
    n_ext = int(f[d][0])
    weighted = np.zeros(d, dtype=np.int64)
    for k, (src, elem, dst) in enumerate(transitions):
        at_height = np.bincount(elem, weights=f[k][src] * g[k + 1][dst], minlength=d)  # exact, <= e(P)
        weighted += (k + 1) * np.rint(at_height).astype(np.int64)
    return n_ext, weighted


def _random_topological_orders(d: int, below: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n linear extensions (bottom to top) built by repeatedly placing a random minimal element."""
    out = np.empty((n, d), dtype=np.int64)
    below_list = [int(b) for b in below]
    for c in range(n):
        placed = 0
        for pos in range(d):
            cands = [i for i in range(d) if not placed >> i & 1 and below_list[i] & ~placed == 0]
            i = cands[int(rng.integers(len(cands)))]
            out[c, pos] = i
            placed |= 1 << i
    return out


def _mcmc_heights(
    d: int, edges: np.ndarray, rng: np.random.Generator, n_chains: int, n_sweeps: int
) -> np.ndarray:
    """Estimate E[height] with the lazy adjacent-transposition chain (Bubley-Dyer), odd-even sweeps.

    Each half-sweep proposes, independently with probability 1/2, to swap every disjoint adjacent pair
    (p, p+1) of one parity; a swap is made iff the two elements are incomparable (adjacent elements of a
    linear extension are comparable iff there is a direct edge between them). Each half-sweep is symmetric,
    so the uniform distribution on linear extensions is stationary; the chain is irreducible and lazy.
    """
    comparable = np.zeros((d, d), dtype=bool)
    if edges.size:
        comparable[edges[:, 0], edges[:, 1]] = True
        comparable[edges[:, 1], edges[:, 0]] = True
    perm = _random_topological_orders(d, _below_masks(d, edges), n_chains, rng)
    burn_in = n_sweeps // 4
    positions = np.arange(1, d + 1, dtype=np.int64)
    height_sum = np.zeros(d, dtype=np.float64)
    inv = np.empty_like(perm)
    rows = np.arange(n_chains)[:, None]
    n_kept = 0
    for sweep in range(n_sweeps):
        for parity in (0, 1):
            left = np.arange(parity, d - 1, 2)
            if left.size == 0:
                continue
            a, b = perm[:, left], perm[:, left + 1]
            swap = (rng.random(a.shape) < 0.5) & ~comparable[a, b]
            perm[:, left] = np.where(swap, b, a)
            perm[:, left + 1] = np.where(swap, a, b)
        if sweep >= burn_in:
            inv[rows, perm] = positions
            height_sum += inv.sum(axis=0)
            n_kept += n_chains
    return height_sum / n_kept


def linear_extension_heights(
    d: int,
    edges: Sequence[tuple[int, int]] | np.ndarray,
    *,
    method: str = "auto",
    rng: np.random.Generator | None = None,
    n_chains: int = 32,
    n_sweeps: int | None = None,
) -> np.ndarray:
    """Expected heights of a uniformly random linear extension (centroid of the order polytope, step 1).

    Parameters
    ----------
    d : number of elements (coordinates of w).
    edges : (m, 2) pairs (i, j) meaning i is above j, i.e. w(i) >= w(j).
    method : ``"exact"`` (DP over ideals, d <= 18), ``"mcmc"`` (Markov chain on linear extensions) or
        ``"auto"`` (exact for d <= 18, else mcmc, as the brief prescribes).
    rng : generator for the mcmc route (default: a fresh generator seeded 0, so results are reproducible).
    n_chains, n_sweeps : mcmc size; ``n_sweeps`` defaults to max(400, 2 d^2) odd-even sweeps, a quarter
        of them burn-in (the chain needs ~d^2 sweeps for an element to cross the order).

    Returns
    -------
    heights : (d,) float array, E[position from the bottom] in [1, d]; the centroid is heights / (d + 1).

    Raises
    ------
    ValueError
        If the edges contain a directed cycle (no linear extension exists), an index is out of range, or
        ``method="exact"`` is asked for d > 18.
    """
    arr = _validate(d, edges)
    d = int(d)
    if method not in ("auto", "exact", "mcmc"):
        raise ValueError(f"method must be 'auto', 'exact' or 'mcmc', got {method!r}")
    if method == "exact" and d > EXACT_MAX_D:
        raise ValueError(f"the exact DP is exponential in d; d={d} > {EXACT_MAX_D}: use method='mcmc'")
    if method == "exact" or (method == "auto" and d <= EXACT_MAX_D):
        n_ext, weighted = _ideal_dp(d, _below_masks(d, arr))
        return weighted / n_ext
    n_chains = positive_int(n_chains, "n_chains")
    sweeps = max(400, 2 * d * d) if n_sweeps is None else positive_int(n_sweeps, "n_sweeps")
    gen = np.random.default_rng(0) if rng is None else rng
    return _mcmc_heights(d, arr, gen, int(n_chains), sweeps)


def count_linear_extensions(d: int, edges: Sequence[tuple[int, int]] | np.ndarray) -> int:
    """e(P), the number of linear extensions (d! vol(K_P)), exactly by the ideal DP (d <= 18).

    Raises ValueError on a directed cycle or d > 18.
    """
    arr = _validate(d, edges)
    if d > EXACT_MAX_D:
        raise ValueError(f"exact counting is exponential in d; d={d} > {EXACT_MAX_D}")
    n_ext, _ = _ideal_dp(int(d), _below_masks(int(d), arr))
    return n_ext


def order_polytope_centroid(
    d: int, edges: Sequence[tuple[int, int]] | np.ndarray, **kwargs: object
) -> np.ndarray:
    """Centroid of K_P = {w in [0,1]^d : w(i) >= w(j) for (i, j) in edges}: heights / (d + 1), shape (d,)."""
    return linear_extension_heights(d, edges, **kwargs) / (d + 1)  # type: ignore[arg-type]
