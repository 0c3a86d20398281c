"""FedTreeLoRA: tree-structured, layer-wise aggregation for federated LoRA fine-tuning.

"FedTreeLoRA: Reconciling Statistical and Functional Heterogeneity in Federated LoRA Fine-Tuning",
J. Bian, L. Wang, L. Zhang, J. Xu, arXiv:2603.13282 (ICML 2026), https://arxiv.org/abs/2603.13282.
No official code was found; this is a reconstruction from the paper's description (see README.md).

Symbols (paper / brief -> code)
-------------------------------
B_{l,k}, A_{l,k}        ``ClientModel.B_c["<l>_query"]`` etc. (N, d, r) / (N, r, d), stacked over clients
D^(l), D^glob           :func:`layer_distances`, :func:`global_distance`
T, P_c                  :func:`build_client_tree` -> :class:`ClientTree`, ``ClientTree.partition(c)``
Omega_l, phi, c*_l      :func:`select_layer_cuts` (``K``, ``tau``) -> :class:`LayerCuts`
S_k^(l), R_k^(l)        :func:`aggregation_weights` (cluster / external rows), :class:`Structure`
lambda_{l,k}=sigmoid(theta) ``ClientModel.theta[l][k]`` (local, never uploaded)
E_warm                  ``FedTreeLoRA(warmup_rounds=3)``
"""

from .baselines import FedALTScalar, FedIT, FedLEASEFlat, FedPerLoRA, LocalOnly
from .data import TASKS, VOCAB_SIZE, Client, make_clients, make_corpus, make_example
from .method import FedTreeLoRA, Strategy, Structure, aggregation_weights
from .model import (
    Backbone,
    BackboneConfig,
    ClientLoRALinear,
    ClientModel,
    load_backbone,
    pretrain_backbone,
    tokenize_clients,
)
from .simulator import PAYLOAD_KEYS, FederatedRun, TrainConfig, payload_floats, simulate
from .tree import (
    ClientTree,
    LayerCuts,
    build_client_tree,
    canonical_labels,
    global_distance,
    independent_layer_partitions,
    is_refinement,
    layer_distances,
    select_flat_partition,
    select_layer_cuts,
)

__all__ = [
    "layer_distances",
    "global_distance",
    "build_client_tree",
    "ClientTree",
    "select_layer_cuts",
    "LayerCuts",
    "select_flat_partition",
    "independent_layer_partitions",
    "is_refinement",
    "canonical_labels",
    "Strategy",
    "Structure",
    "aggregation_weights",
    "FedTreeLoRA",
    "FedIT",
    "LocalOnly",
    "FedPerLoRA",
    "FedLEASEFlat",
    "FedALTScalar",
    "simulate",
    "FederatedRun",
    "TrainConfig",
    "PAYLOAD_KEYS",
    "payload_floats",
    "Backbone",
    "BackboneConfig",
    "ClientModel",
    "ClientLoRALinear",
    "pretrain_backbone",
    "load_backbone",
    "tokenize_clients",
    "Client",
    "TASKS",
    "VOCAB_SIZE",
    "make_clients",
    "make_corpus",
    "make_example",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
