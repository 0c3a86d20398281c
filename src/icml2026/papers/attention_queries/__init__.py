"""Provably Learning Attention with Queries (Bhattamishra, Shah, Hahn, Kanade; ICML 2026).

arXiv:2601.16873, https://arxiv.org/abs/2601.16873. No official code; the query construction here is
our reconstruction of the paper's algorithms (see README.md, the paper card).

Symbols (paper -> code)
-----------------------
=====================  ==========================================================
x_1..x_n, X            a query sequence, ``X`` of shape (n, d); x_n is the last token
d, r                   ``d`` token dimension, ``rank`` head dimension
W_Q, W_K               ``W_Q``, ``W_K`` (d, r) of :meth:`SingleHeadAttention.from_factors`
A = W_Q W_K^T/sqrt(r)  ``A`` (d, d), the identifiable attention form
v = W_V W_O u          ``v`` (d,), the value/output/readout vector
alpha                  softmax weights; ``alpha`` in the two-token identity
s                      query scale of the rescaling step (``scale``)
b, c, C                last-token and difference directions; ``C`` the basis of Method 1
R                      orthonormal row-space basis of Method 2b
m, kappa               compressed-sensing measurements, m = kappa r d
tau, B_x               noise tolerance ``tau``, query norm bound ``norm_bound``
eps                    the oracle's relative precision ``precision`` (float32: 1.2e-7)
margin                 min_j |v^T c_j|; Method 3 uses c_j = e_j + sign(v_j) v/||v|| (margin >= ||v||)
V, W_1, b_1, W_2, b_2  one-layer Transformer value matrix and FFN weights (Method 4)
H                      number of heads ``n_heads``
=====================  ==========================================================
"""

from .baselines import least_squares_recovery
from .data import random_sequences, random_single_head, relative_error
from .exact import NotIdentifiableError, recover_exact
from .hf_head import PretrainedHead, heads_of_layer, layer_attention_readout
from .low_rank import factored_als, nuclear_norm_recovery, recover_low_rank
from .model import HeadEstimate, SingleHeadAttention
from .multihead import MultiHeadAttention, nonidentifiable_pair
from .noisy import noisy_error_bound, recover_noisy, search_adversary
from .one_layer import (
    FFNLearnerStub,
    OneLayerEstimate,
    OneLayerTransformer,
    ReLUNetwork,
    random_one_layer,
    recover_one_layer,
)
from .oracle import CountingOracle, NoisyOracle, SignPatternAdversary
from .precision import LowPrecisionHead, NoiseModel, estimate_precision, infer_precision
from .queries import NoisyConditionError, SaturationError, margin_directions

__all__ = [
    "SingleHeadAttention",
    "HeadEstimate",
    "random_single_head",
    "random_sequences",
    "relative_error",
    "CountingOracle",
    "NoisyOracle",
    "recover_exact",
    "recover_low_rank",
    "factored_als",
    "nuclear_norm_recovery",
    "recover_noisy",
    "noisy_error_bound",
    "search_adversary",
    "margin_directions",
    "SignPatternAdversary",
    "NoisyConditionError",
    "LowPrecisionHead",
    "NoiseModel",
    "estimate_precision",
    "infer_precision",
    "SaturationError",
    "NotIdentifiableError",
    "least_squares_recovery",
    "MultiHeadAttention",
    "nonidentifiable_pair",
    "OneLayerTransformer",
    "ReLUNetwork",
    "FFNLearnerStub",
    "OneLayerEstimate",
    "random_one_layer",
    "recover_one_layer",
    "PretrainedHead",
    "heads_of_layer",
    "layer_attention_readout",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
