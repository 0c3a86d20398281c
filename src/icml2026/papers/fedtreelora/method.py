"""FedTreeLoRA as a federated strategy: warm-up, global tree, layer-wise cuts, cluster/external experts.

A strategy decides, per layer, which clients average their adapters (a partition of the clients), whether
each client also receives a frozen external expert (the average over the other blocks) mixed by a local
learnable ``lambda``, and when that structure is built. The engines (:func:`.simulator.simulate` and the
Flower adapter) only execute a :class:`Structure`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml2026.core.validate import as_array, as_labels

from .tree import (
    MIN_CLIENTS,
    _check_k_tau,
    build_client_tree,
    independent_layer_partitions,
    layer_distances,
    select_layer_cuts,
)

__all__ = ["Structure", "Strategy", "FedTreeLoRA", "aggregation_weights"]


@dataclass
class Structure:
    """Per-layer sharing structure executed by the engines.

    partitions : one label array (N,) per layer (clients with equal labels average their cluster experts).
    external : each client also receives the n-weighted average over the clients outside its block.
    learn_lambda : lambda = sigmoid(theta) is trained locally (else fixed at sigmoid(theta_init)).
    info : what the strategy chose (cuts, scores) and the per-layer distances it chose from, for reporting.
    """

    partitions: list[np.ndarray]
    external: bool = False
    learn_lambda: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def cuts(self) -> list[int]:
        return [len(np.unique(p)) for p in self.partitions]

    def has_external(self, layer: int) -> np.ndarray:
        """(N,) bool: client k has a non-empty rest-of-world R_k at this layer (and externals are on)."""
        p = self.partitions[layer]
        if not self.external:
            return np.zeros(p.shape[0], dtype=bool)
        return np.array([np.any(p != p[k]) for k in range(p.shape[0])])

    def uploads(self, layer: int) -> np.ndarray:
        """(N,) bool: client k uploads its layer-l cluster expert (someone else needs it)."""
        p = self.partitions[layer]
        block = np.array([np.sum(p == p[k]) for k in range(p.shape[0])])
        if self.external:
            return np.ones(p.shape[0], dtype=bool)
        return block > 1


def aggregation_weights(labels: np.ndarray, n_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-stochastic (N, N) weights: cluster expert = n-weighted mean over S_k, external over R_k (step 4).

    A row of the external matrix is all zero where R_k is empty (no external expert).
    """
    labels = as_labels(labels, "labels")
    n_k = as_array(n_k, "n_k", ndim=1, lo=0.0)
    if n_k.shape != labels.shape:
        raise ValueError(f"n_k: expected one count per client ({labels.size}), got shape {n_k.shape}")
    same = labels[:, None] == labels[None, :]
    w = np.broadcast_to(n_k[None, :].astype(float), same.shape)
    clus = np.where(same, w, 0.0)
    clus = clus / clus.sum(axis=1, keepdims=True)
    ext = np.where(~same, w, 0.0)
    s = ext.sum(axis=1, keepdims=True)
    ext = np.divide(ext, s, out=np.zeros_like(ext), where=s > 0)
    return clus, ext


class Strategy:
    """Base strategy: a fixed structure from round 0 (override :meth:`initial` / :meth:`build`)."""

    name = "strategy"
    warmup_rounds = 0
    theta_init = 2.0  # lambda = sigmoid(2) ~ 0.88 at the start (*ours*)
    rebuild_every: int | None = None

    def initial(self, n_clients: int, n_layers: int) -> Structure:
        """Structure of the rounds before :meth:`build` (warm-up: purely local)."""
        return Structure([np.arange(n_clients) for _ in range(n_layers)])

    def build(self, B_per_layer: Sequence[np.ndarray]) -> Structure:
        """Structure after warm-up from the uploaded B's (list over layers of (N, ...) arrays).

        The base strategy's structure is fixed: the same as :meth:`initial` for these clients and layers.
        Strategies that cluster (FedTreeLoRA, FedLEASEFlat) override this."""
        return self.initial(len(B_per_layer[0]), len(B_per_layer))


def _check_clients_layers(n_clients: int, n_layers: int) -> None:
    if n_clients < MIN_CLIENTS:
        raise ValueError(f"clients: needs at least {MIN_CLIENTS} clients, got {n_clients}")
    if n_layers < 1:
        raise ValueError(f"n_layers = {n_layers}: must be >= 1")


class FedTreeLoRA(Strategy):
    """FedTreeLoRA (steps 1-5 of the method) and its ablations.

    Parameters
    ----------
    K, tau : cut window width and the score of c = 1 (*ours*: 2 and 0.25).
    warmup_rounds : E_warm purely local rounds before the tree is built (*ours*: 3; must be >= 1, B starts at 0).
    fixed_c : ablation "fixed c for all layers": cut the global tree at c in every layer.
    independent : ablation "independent per-layer clustering": a separate tree and c per layer.
    use_external : False = ablation "cluster-only" (no external expert, lambda = 1).
    normalize : per-layer normalisation of D^(l) before averaging into D^glob (option, off as in the paper).
    rebuild_every : rebuild tree and cuts every R rounds after warm-up (option; None = once).
    """

    def __init__(
        self,
        K: int = 2,
        tau: float = 0.25,
        warmup_rounds: int = 3,
        fixed_c: int | None = None,
        independent: bool = False,
        use_external: bool = True,
        normalize: bool = False,
        rebuild_every: int | None = None,
        theta_init: float = 2.0,
        name: str | None = None,
    ) -> None:
        self.K, self.tau = _check_k_tau(K, tau)
        if isinstance(warmup_rounds, bool) or not isinstance(warmup_rounds, int) or warmup_rounds < 1:
            raise ValueError(f"warmup_rounds = {warmup_rounds!r}: must be an int >= 1 (B is zero before warm-up)")
        if fixed_c is not None and (isinstance(fixed_c, bool) or not isinstance(fixed_c, int) or fixed_c < 1):
            raise ValueError(f"fixed_c = {fixed_c!r}: must be None or an int >= 1")
        if fixed_c is not None and independent:
            raise ValueError("fixed_c and independent are different ablations; give one of them")
        if rebuild_every is not None and (not isinstance(rebuild_every, int) or rebuild_every < 1):
            raise ValueError(f"rebuild_every = {rebuild_every!r}: must be None or an int >= 1")
        if not np.isfinite(theta_init):
            raise ValueError(f"theta_init = {theta_init}: must be finite")
        self.warmup_rounds = warmup_rounds
        self.fixed_c, self.independent, self.use_external = fixed_c, independent, use_external
        self.normalize, self.rebuild_every, self.theta_init = normalize, rebuild_every, float(theta_init)
        if name is None:
            name = (
                "FedTreeLoRA"
                if fixed_c is None and not independent
                else f"fixed c={fixed_c}"
                if fixed_c is not None
                else "independent"
            ) + ("" if use_external else " (cluster-only)")
        self.name = name

    def build(self, B_per_layer: Sequence[np.ndarray]) -> Structure:
        dists = layer_distances(B_per_layer)
        n, n_layers = dists[0].shape[0], len(dists)
        _check_clients_layers(n, n_layers)
        info: dict[str, Any] = {}
        if self.independent:
            parts = independent_layer_partitions(dists, tau=self.tau)
        else:
            tree = build_client_tree(dists, normalize=self.normalize)
            if self.fixed_c is not None:
                if self.fixed_c > n:
                    raise ValueError(f"fixed_c = {self.fixed_c}: exceeds the number of clients {n}")
                parts = [tree.partition(self.fixed_c) for _ in range(n_layers)]
            else:
                lc = select_layer_cuts(tree, dists, K=self.K, tau=self.tau)
                parts = lc.partitions
                info["scores"] = lc.scores
            info["linkage"] = tree.Z
        info["distances"] = dists  # for reporting (e.g. how well the tasks separate); never sent anywhere
        return Structure(parts, external=self.use_external, learn_lambda=self.use_external, info=info)
