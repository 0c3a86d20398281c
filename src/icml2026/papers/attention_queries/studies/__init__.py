"""The bodies of the experiments of "Provably Learning Attention with Queries" (registered, with their claims and
presets, in :mod:`..experiments`), one module per claim.

=============================  ==============================================================================
module                         claim
=============================  ==============================================================================
``exact_recovery``             Method 1: (A, v) exactly from d^2 + d noiseless queries (and retry accounting)
``low_rank_recovery``          Method 2: a rank-r head with O(rd) queries (adaptive, compressed sensing)
``noise_tolerance``            Method 3: the error grows linearly in the tolerance tau
``noisy_bound``                Method 3: the error within its error bar and the a-priori polynomial bound
``precision_recovery``         float32 / float16 oracles: precision inferred, recovery to it
``multihead_nonidentifiable``  Method 4: multi-head attention is not identifiable
``one_layer_reduction``        Method 4: a one-layer Transformer's A and V, given an FFN learner (assumed)
``pretrained_head``            every head of a real Hugging Face layer (biases included) from queries
=============================  ==============================================================================

Importing this package registers nothing (the registrations are in :mod:`..experiments`). ``_grid`` holds the
grids and reductions the sweeps share, ``_preconditions`` what the preconditions measure.
"""

from __future__ import annotations

from . import (
    exact_recovery,
    low_rank_recovery,
    multihead_nonidentifiable,
    noise_tolerance,
    noisy_bound,
    one_layer_reduction,
    precision_recovery,
    pretrained_head,
)

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
