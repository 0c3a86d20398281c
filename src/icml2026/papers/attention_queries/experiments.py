"""Registered experiments of "Provably Learning Attention with Queries".

The registrations (claims and presets) are here; each experiment's body lives in the package :mod:`.studies`,
one module per claim (its docstring lists them). The config classes are those of the studies.
"""

from __future__ import annotations

import numpy as np

from icml2026.core import Outcome, experiment

from .studies import exact_recovery as _exact_recovery
from .studies import low_rank_recovery as _low_rank_recovery
from .studies import multihead_nonidentifiable as _multihead_nonidentifiable
from .studies import noise_tolerance as _noise_tolerance
from .studies import noisy_bound as _noisy_bound
from .studies import one_layer_reduction as _one_layer_reduction
from .studies import precision_recovery as _precision_recovery
from .studies import pretrained_head as _pretrained_head
from .studies.exact_recovery import ExactConfig
from .studies.low_rank_recovery import LowRankConfig
from .studies.multihead_nonidentifiable import MultiHeadConfig
from .studies.noise_tolerance import NoiseConfig
from .studies.noisy_bound import NoisyBoundConfig
from .studies.one_layer_reduction import OneLayerConfig
from .studies.precision_recovery import PrecisionConfig
from .studies.pretrained_head import PretrainedHeadConfig

__all__ = [
    "exact_recovery",
    "low_rank_recovery",
    "multihead_nonidentifiable",
    "noise_tolerance",
    "noisy_bound",
    "one_layer_reduction",
    "precision_recovery",
    "pretrained_head",
]


@experiment(
    "attention_queries.exact_recovery",
    claim="A single attention head (A, v) is recovered exactly from d^2 + d noiseless queries.",
    presets={"quick": ExactConfig(), "full": ExactConfig(d_max=128)},
)
def exact_recovery(cfg: ExactConfig, rng: np.random.Generator) -> Outcome:
    return _exact_recovery.exact_recovery(cfg, rng)


@experiment(
    "attention_queries.low_rank_recovery",
    claim="A rank-r head is recovered with O(rd) queries: (2r+2)d adaptively, about kappa r d (kappa ~ 3-6) "
    "by compressed sensing, far below the d^2 + d of the exact method.",
    presets={
        "quick": LowRankConfig(cs_kappa_min=2.5),
        "full": LowRankConfig(d_max=256, r_max=16, cs_n_seeds=10, cs_kappa_min=1.5, cs_kappa_step=0.25),
    },
)
def low_rank_recovery(cfg: LowRankConfig, rng: np.random.Generator) -> Outcome:
    return _low_rank_recovery.low_rank_recovery(cfg, rng)


@experiment(
    "attention_queries.multihead_nonidentifiable",
    claim="Multi-head attention is not identifiable: different per-head parameters give the same function.",
    presets={"quick": MultiHeadConfig(), "full": MultiHeadConfig(d=32, n_heads=8, n_sequences=10000)},
)
def multihead_nonidentifiable(cfg: MultiHeadConfig, rng: np.random.Generator) -> Outcome:
    return _multihead_nonidentifiable.multihead_nonidentifiable(cfg, rng)


@experiment(
    "attention_queries.noise_tolerance",
    claim="With an additive-tolerance oracle the recovery error grows linearly in tau (log-log slope ~ 1).",
    presets={"quick": NoiseConfig(), "full": NoiseConfig(d=32, n_tau=13)},
)
def noise_tolerance(cfg: NoiseConfig, rng: np.random.Generator) -> Outcome:
    return _noise_tolerance.noise_tolerance(cfg, rng)


@experiment(
    "attention_queries.noisy_bound",
    claim="Under additive tolerance tau the noisy learner's error stays within its error bar and within the "
    "a-priori bound O(tau d ||C^-1|| / (margin s*^3)), polynomial in d and 1/margin, for uniform, sign and "
    "worst-case adversaries and the worst found by a sign search, with at most 2(d^2 + d) queries.",
    presets={
        "smoke": NoisyBoundConfig(d_max=8, n_margins=2, n_tau=1, n_seeds=1, search_d=4, search_passes=0),
        "quick": NoisyBoundConfig(),
        "full": NoisyBoundConfig(d_max=64, n_margins=5, log10_margin_min=-3.0, n_tau=5, n_seeds=5, search_passes=2),
    },
)
def noisy_bound(cfg: NoisyBoundConfig, rng: np.random.Generator) -> Outcome:
    return _noisy_bound.noisy_bound(cfg, rng)


@experiment(
    "attention_queries.one_layer_reduction",
    claim="Given an FFN learner (assumed, as in the paper), a one-layer Transformer's A and V are recovered "
    "exactly, A with d^2 further queries.",
    presets={"quick": OneLayerConfig(), "full": OneLayerConfig(d=32, n_models=5)},
)
def one_layer_reduction(cfg: OneLayerConfig, rng: np.random.Generator) -> Outcome:
    return _one_layer_reduction.one_layer_reduction(cfg, rng)


@experiment(
    "attention_queries.precision_recovery",
    claim="With float32 and float16 oracles (the precision of real models) the learner infers the precision "
    "from the answers, sets the saturation threshold and rank tolerance from it, and recovers A to "
    "~1e-6 (float32) and ~1e-2 (float16) within its error bar; float32 rank estimation stays at (2r+2)d "
    "queries plus counted retries.",
    presets={
        "smoke": PrecisionConfig(d=8, lr_d=16, lr_rank=2, n_seeds=1),
        "quick": PrecisionConfig(),
        "full": PrecisionConfig(d=32, lr_d=64, lr_rank=4, n_seeds=5),
    },
)
def precision_recovery(cfg: PrecisionConfig, rng: np.random.Generator) -> Outcome:
    return _precision_recovery.precision_recovery(cfg, rng)


@experiment(
    "attention_queries.pretrained_head",
    claim="Every head of a real pretrained attention layer (a Hugging Face BERT or GPT-2 block, its query, key, "
    "value and output biases included) is recovered from black-box queries: A, the query-bias vector w, v and "
    "the value offset, with d^2 + 2d + 1 queries (exact) or (2r + 2) d + 1 (adaptive, r the head dimension), "
    "plus counted retries and probes.",
    presets={
        "quick": PretrainedHeadConfig(),
        "full": PretrainedHeadConfig(d_model=64, n_heads=4),
        "smoke": PretrainedHeadConfig(d_model=16, n_heads=2, method="adaptive"),
    },
)
def pretrained_head(cfg: PretrainedHeadConfig, rng: np.random.Generator) -> Outcome:
    return _pretrained_head.pretrained_head(cfg, rng)
