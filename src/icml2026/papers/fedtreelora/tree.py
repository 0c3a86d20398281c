"""The paper's contribution: per-layer distances, the global client tree and layer-wise cut selection.

Sec. 3 of FedTreeLoRA (steps 2 and 3 of the brief): ``D^(l)_ij = ||B_{l,i} - B_{l,j}||_F`` per layer,
``D^glob = (1/L) sum_l D^(l)``, agglomerative clustering (average linkage) on ``D^glob`` gives one merge tree
T whose cuts ``P_c`` are nested; the cut of layer l is chosen shallow -> deep in the window
``Omega_l = {c*_{l-1}, ..., min(N-1, c*_{l-1}+K)}`` by the score ``phi(1) = tau``,
``phi(c >= 2) = silhouette(P_c; D^(l))``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform
from sklearn.metrics import silhouette_score

from icml2026.core.validate import as_array

__all__ = [
    "layer_distances",
    "global_distance",
    "ClientTree",
    "build_client_tree",
    "LayerCuts",
    "select_layer_cuts",
    "select_flat_partition",
    "independent_layer_partitions",
    "is_refinement",
    "canonical_labels",
]

MIN_CLIENTS = 3  # a tree with a non-trivial cut window needs N - 1 >= 2


def layer_distances(B_per_layer: Sequence[Any]) -> list[np.ndarray]:
    """Per-layer Frobenius distances between clients' B matrices (step 2 of the method).

    Parameters
    ----------
    B_per_layer : list over layers (shallow -> deep) of arrays of shape (N, ...); row k holds client k's
        B of every targeted map of that layer (flattened and concatenated, or stacked).

    Returns
    -------
    list of (N, N) symmetric arrays ``D^(l)_ij = ||B_{l,i} - B_{l,j}||_F``.
    """
    if isinstance(B_per_layer, np.ndarray) or not isinstance(B_per_layer, Sequence) or len(B_per_layer) == 0:
        raise ValueError("B_per_layer: expected a non-empty list of per-layer arrays of shape (N, ...)")
    out: list[np.ndarray] = []
    n_clients: int | None = None
    for layer, B in enumerate(B_per_layer):
        arr = as_array(B, f"B_per_layer[{layer}]")
        if arr.ndim < 2:
            raise ValueError(f"B_per_layer[{layer}]: expected shape (N, ...), got {arr.shape}")
        flat = arr.reshape(arr.shape[0], -1)
        if n_clients is None:
            n_clients = flat.shape[0]
        elif flat.shape[0] != n_clients:
            raise ValueError(f"B_per_layer[{layer}]: has {flat.shape[0]} clients, layer 0 has {n_clients}")
        if n_clients < MIN_CLIENTS:
            raise ValueError(f"B_per_layer: needs at least {MIN_CLIENTS} clients, got {n_clients}")
        sq = np.sum(flat * flat, axis=1)
        d2 = sq[:, None] + sq[None, :] - 2.0 * flat @ flat.T
        d = np.sqrt(np.clip(d2, 0.0, None))
        d = 0.5 * (d + d.T)  # exact symmetry despite rounding
        np.fill_diagonal(d, 0.0)
        out.append(d)
    return out


def _check_distances(distances: Any, name: str = "distances") -> list[np.ndarray]:
    """A list of (N, N) symmetric, non-negative, finite matrices with zero diagonal (one per layer)."""
    if isinstance(distances, np.ndarray) and distances.ndim == 2:
        distances = [distances]
    if isinstance(distances, np.ndarray) and distances.ndim == 3:
        distances = list(distances)
    if not isinstance(distances, Sequence) or len(distances) == 0:
        raise ValueError(f"{name}: expected a non-empty list of (N, N) distance matrices")
    mats: list[np.ndarray] = []
    for layer, d in enumerate(distances):
        m = as_array(d, f"{name}[{layer}]", ndim=2, lo=0.0)
        if m.shape[0] != m.shape[1]:
            raise ValueError(f"{name}[{layer}]: must be square, got shape {m.shape}")
        if m.shape[0] < MIN_CLIENTS:
            raise ValueError(f"{name}: needs at least {MIN_CLIENTS} clients, got {m.shape[0]}")
        if mats and m.shape != mats[0].shape:
            raise ValueError(f"{name}[{layer}]: shape {m.shape} differs from layer 0's {mats[0].shape}")
        scale = max(float(np.abs(m).max()), 1e-300)
        if not np.allclose(m, m.T, rtol=1e-9, atol=1e-12 * scale):
            raise ValueError(f"{name}[{layer}]: must be symmetric")
        if np.any(np.abs(np.diag(m)) > 1e-12 * scale):
            raise ValueError(f"{name}[{layer}]: must have a zero diagonal")
        mats.append(0.5 * (m + m.T))
    return mats


def global_distance(distances: Sequence[Any], normalize: bool = False) -> np.ndarray:
    """``D^glob = (1/L) sum_l D^(l)``; with ``normalize`` each layer is first divided by its mean
    off-diagonal distance (the brief's option against deep layers dominating; off by default as in the paper)."""
    mats = _check_distances(distances)
    if normalize:
        n = mats[0].shape[0]
        mats = [m / max(m.sum() / (n * (n - 1)), 1e-300) for m in mats]
    return np.mean(np.stack(mats), axis=0)


def canonical_labels(labels: Any) -> np.ndarray:
    """Relabel a partition 0, 1, ... in order of first appearance (so equal partitions compare equal)."""
    lab = np.asarray(labels)
    out = np.empty(lab.shape[0], dtype=int)
    seen: dict[Any, int] = {}
    for i, v in enumerate(lab.tolist()):
        out[i] = seen.setdefault(v, len(seen))
    return out


def is_refinement(fine: Any, coarse: Any) -> bool:
    """True when every block of ``fine`` lies inside one block of ``coarse`` (no topological drift)."""
    f, c = np.asarray(fine), np.asarray(coarse)
    if f.shape != c.shape:
        raise ValueError(f"fine and coarse partitions differ in length: {f.shape} vs {c.shape}")
    return all(len(set(c[f == b].tolist())) == 1 for b in np.unique(f))


@dataclass
class ClientTree:
    """The binary merge tree T of N clients (scipy linkage matrix ``Z``, shape (N-1, 4)).

    ``partition(c)`` replays the first N - c merges of ``Z``: exactly c blocks for every c (no fewer on
    tied heights, the ``fcluster(maxclust)`` pitfall), and nested across c by construction.
    """

    Z: np.ndarray
    n_clients: int
    distance: np.ndarray  # the (N, N) matrix the tree was built on (D^glob)
    _cache: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def partition(self, c: int) -> np.ndarray:
        """Labels (N,) of the cut of T into ``c`` clusters, 1 <= c <= N, canonical (first appearance)."""
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
            raise TypeError(f"c must be an int, got {type(c).__name__}")
        if not 1 <= c <= self.n_clients:
            raise ValueError(f"c = {c}: must be in [1, {self.n_clients}]")
        c = int(c)
        if c not in self._cache:
            n = self.n_clients
            parent = list(range(2 * n - 1))

            def find(i: int) -> int:
                while parent[i] != i:
                    parent[i] = parent[parent[i]]
                    i = parent[i]
                return i

            for step in range(n - c):
                a, b = int(self.Z[step, 0]), int(self.Z[step, 1])
                parent[find(a)] = n + step
                parent[find(b)] = n + step
            self._cache[c] = canonical_labels([find(i) for i in range(n)])
        return self._cache[c].copy()


def build_client_tree(distances: Any, method: str = "average", normalize: bool = False) -> ClientTree:
    """Agglomerative clustering of clients on ``D^glob`` (step 2; *ours*: average linkage).

    Parameters
    ----------
    distances : list of per-layer (N, N) matrices (their plain mean is used) or one (N, N) matrix.
    method : scipy linkage method ("average", "complete", "single", "weighted").
    normalize : divide each layer by its mean distance before averaging (brief's option; default off).
    """
    if method not in ("average", "complete", "single", "weighted"):
        raise ValueError(f"method = {method!r}: must be one of 'average', 'complete', 'single', 'weighted'")
    d = global_distance(distances, normalize=normalize)
    Z = linkage(squareform(d, checks=False), method=method)
    return ClientTree(Z=Z, n_clients=d.shape[0], distance=d)


def _phi(labels: np.ndarray, d: np.ndarray, tau: float) -> float:
    """Score of a partition: tau for one block, silhouette on the precomputed distance otherwise."""
    k = len(np.unique(labels))
    if k == 1:
        return tau
    if k >= d.shape[0]:  # silhouette undefined for all-singletons; never in the window (c <= N-1)
        return -np.inf
    if float(d.max()) == 0.0:  # all clients identical at this layer: no structure to split on
        return -np.inf
    return float(silhouette_score(d, labels, metric="precomputed"))


@dataclass
class LayerCuts:
    """Chosen cut per layer and the corresponding partitions (step 3).

    cuts : list of c*_l (non-decreasing); partitions : one label array (N,) per layer, each refining the
    previous; scores : phi of every candidate c in each layer's window (list of dicts c -> phi).
    """

    cuts: list[int]
    partitions: list[np.ndarray]
    scores: list[dict[int, float]]


def _check_k_tau(K: Any, tau: Any) -> tuple[int, float]:
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)):
        raise TypeError(f"K must be an int, got {type(K).__name__}")
    if K < 1:
        raise ValueError(f"K = {K}: must be >= 1")
    if isinstance(tau, bool) or not isinstance(tau, (int, float, np.floating, np.integer)):
        raise TypeError(f"tau must be a number, got {type(tau).__name__}")
    if not (np.isfinite(tau) and 0.0 < float(tau) < 1.0):
        raise ValueError(f"tau = {tau}: must be in (0, 1)")
    return int(K), float(tau)


def select_layer_cuts(tree: ClientTree, distances: Sequence[Any], K: int = 2, tau: float = 0.25) -> LayerCuts:
    """Layer-wise cut selection, shallow -> deep (step 3, *ours* K = 2, tau = 0.25).

    ``Omega_l = {c : c*_{l-1} <= c <= min(N-1, c*_{l-1} + K)}`` with ``c*_0 = 1``; we read the paper's
    ``c < min(N, c*_{l-1} + K)`` as the inclusive window of K + 1 values capped at N - 1 (the two readings
    differ by one value at the top). ``c*_l = argmax phi`` (ties: smallest c).
    """
    if not isinstance(tree, ClientTree):
        raise TypeError(f"tree must be a ClientTree, got {type(tree).__name__}")
    K, tau = _check_k_tau(K, tau)
    mats = _check_distances(distances)
    n = tree.n_clients
    if mats[0].shape[0] != n:
        raise ValueError(f"distances: have {mats[0].shape[0]} clients, the tree has {n}")
    cuts: list[int] = []
    parts: list[np.ndarray] = []
    scores: list[dict[int, float]] = []
    prev = 1
    for d in mats:
        # Deviation: the window includes min(N-1, c*+K) (the paper writes c < min(N, c*+K)), see the card
        window = range(prev, min(n - 1, prev + K) + 1)
        sc = {c: _phi(tree.partition(c), d, tau) for c in window}
        best = max(window, key=lambda c: (sc[c], -c))  # argmax, ties to the smaller c
        cuts.append(best)
        parts.append(tree.partition(best))
        scores.append(sc)
        prev = best
    return LayerCuts(cuts=cuts, partitions=parts, scores=scores)


def select_flat_partition(distance: Any, tau: float = 0.25, method: str = "average") -> np.ndarray:
    """FedLEASE-flat's one partition for all layers: AHC on one distance, c in 1..N-1 by phi (tau for c=1)."""
    tree = build_client_tree(distance, method=method)
    d = tree.distance
    _, tau = _check_k_tau(1, tau)
    sc = {c: _phi(tree.partition(c), d, tau) for c in range(1, tree.n_clients)}
    best = max(sc, key=lambda c: (sc[c], -c))
    return tree.partition(best)


def independent_layer_partitions(
    distances: Sequence[Any], tau: float = 0.25, method: str = "average"
) -> list[np.ndarray]:
    """Ablation "independent per-layer clustering": a separate tree and c per layer (no nesting, no window)."""
    return [select_flat_partition(d, tau=tau, method=method) for d in _check_distances(distances)]
