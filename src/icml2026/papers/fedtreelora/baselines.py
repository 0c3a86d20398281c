"""The methods FedTreeLoRA is compared with, as :class:`~.method.Strategy` objects run by the same engines.

All share backbone, rank, optimiser, rounds and the local classification head.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .method import Strategy, Structure
from .tree import layer_distances, select_flat_partition

__all__ = ["FedIT", "LocalOnly", "FedPerLoRA", "FedLEASEFlat", "FedALTScalar"]


class FedIT(Strategy):
    """FedIT / FedAvg-LoRA: A and B FedAvg-ed (separately, n-weighted) over all clients in every layer."""

    name = "FedIT"

    def initial(self, n_clients: int, n_layers: int) -> Structure:
        return Structure([np.zeros(n_clients, dtype=int) for _ in range(n_layers)])


class LocalOnly(Strategy):
    """Local training only: no communication."""

    name = "Local"


class FedPerLoRA(Strategy):
    """FedPer-LoRA(k): layers 1..k FedAvg-shared over all clients, layers > k local (the shallow trunk)."""

    def __init__(self, k: int) -> None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"k = {k!r}: must be an int >= 0 (number of shared shallow layers)")
        self.k = int(k)
        self.name = f"FedPer-LoRA(k={self.k})"

    def initial(self, n_clients: int, n_layers: int) -> Structure:
        if self.k > n_layers:
            raise ValueError(f"k = {self.k}: exceeds the number of layers {n_layers}")
        return Structure(
            [np.zeros(n_clients, dtype=int) if layer < self.k else np.arange(n_clients) for layer in range(n_layers)]
        )


class FedLEASEFlat(Strategy):
    """FedLEASE, simplified to its clustering: after warm-up, AHC + silhouette on all-layer B gives ONE
    partition used in every layer, FedAvg within cluster.

    # Deviation: the original FedLEASE also allocates and adaptively selects several LoRA experts per client;
    # only its flat (same for all layers) client clustering is kept here, as the brief specifies.
    """

    def __init__(self, tau: float = 0.25, warmup_rounds: int = 3) -> None:
        if isinstance(warmup_rounds, bool) or not isinstance(warmup_rounds, int) or warmup_rounds < 1:
            raise ValueError(f"warmup_rounds = {warmup_rounds!r}: must be an int >= 1")
        self.tau, self.warmup_rounds, self.name = tau, warmup_rounds, "FedLEASE-flat"

    def build(self, B_per_layer: Sequence[np.ndarray]) -> Structure:
        flat = [np.concatenate([np.asarray(b).reshape(np.shape(b)[0], -1) for b in B_per_layer], axis=1)]
        d = layer_distances(flat)[0]
        part = select_flat_partition(d, tau=self.tau)
        return Structure([part.copy() for _ in B_per_layer], info={"flat_c": int(len(np.unique(part)))})


class FedALTScalar(Strategy):
    """FedALT, simplified: own LoRA + frozen rest-of-world LoRA (average of all others), mixed by a learnable
    per-layer scalar (= FedTreeLoRA with every cut at singletons).

    # Deviation: FedALT's mixer is an input-dependent MoE router; here one learnable scalar per layer
    # (the brief's simplification).
    """

    name = "FedALT-scalar"

    def __init__(self, theta_init: float = 2.0) -> None:
        self.theta_init = float(theta_init)

    def initial(self, n_clients: int, n_layers: int) -> Structure:
        return Structure([np.arange(n_clients) for _ in range(n_layers)], external=True, learn_lambda=True)
