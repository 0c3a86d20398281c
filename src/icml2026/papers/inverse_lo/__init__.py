"""Finite and corruption-robust regret in online inverse linear optimisation on M-convex action sets.

T. Oki, S. Sakaue, "Finite and Corruption-Robust Regret Bounds in Online Inverse Linear Optimization under
M-Convex Action Sets", ICML 2026, arXiv:2602.01682. No official code; the learner is our reconstruction
from the paper's ingredients (see README.md).

Symbols (paper -> code)
-----------------------
w*                     ``w_star`` (hidden objective, (d,))
X_t                    a :class:`FeasibleSet` (``UniformMatroidBases``, ``BoxSumSet``, ...)
x_hat_t, x_t, x*_t     ``learner.recommend(X_t)``, the observed action, ``X_t.maximize(w_star)``
exchange pair (i, j)   ``X_t.exchange_pairs(x)`` rows: x - e_i + e_j in X_t, certifying w(i) >= w(j)
P, K_P                 ``CentroidLearner.edges_`` (poset edges) and its order polytope
e(P)                   ``count_linear_extensions(d, edges)``
w_hat (centroid)       ``linear_extension_heights(d, edges) / (d + 1)`` = ``CentroidLearner.centroid()``
C                      number of corrupted rounds (``corrupt_rounds`` of ``play``)
ln(d!)/ln(e/(e-1))     ``mistake_bound(d)``; with corruption ``mistake_bound(d, C)``
theta_t, A_t, eta, gamma  state and constants of ``OnlineNewtonStepLearner`` (Sakaue et al. 2025)
D, K                   diameter of Theta (2) and ``action_diameter`` of the baselines
"""

from .baselines import CuttingPlaneLearner, OnlineGradientLearner, OnlineNewtonStepLearner
from .data import (
    ENVIRONMENTS,
    make_instances,
    min_coordinate_gap,
    random_box_sum,
    random_flow_set,
    random_graphic_matroid,
    random_partition_matroid,
    random_uniform_matroid,
    sample_w_star,
    segment_instances,
    w_star_with_gap,
)
from .feasible_sets import (
    BoxSumSet,
    ExplicitSet,
    FeasibleSet,
    GraphicMatroidBases,
    PartitionMatroidBases,
    UniformMatroidBases,
    verify_m_convex,
)
from .flow_sets import FlowSet, is_laminar, laminar_set, transversal_matroid_bases
from .learner import CentroidLearner, Learner, PlayTrace, play
from .linear_extensions import (
    EXACT_MAX_D,
    count_linear_extensions,
    linear_extension_heights,
    mistake_bound,
    order_polytope_centroid,
)

__all__ = [
    "BoxSumSet",
    "CentroidLearner",
    "CuttingPlaneLearner",
    "ENVIRONMENTS",
    "EXACT_MAX_D",
    "ExplicitSet",
    "FeasibleSet",
    "FlowSet",
    "GraphicMatroidBases",
    "Learner",
    "OnlineGradientLearner",
    "OnlineNewtonStepLearner",
    "PartitionMatroidBases",
    "PlayTrace",
    "UniformMatroidBases",
    "count_linear_extensions",
    "is_laminar",
    "laminar_set",
    "linear_extension_heights",
    "make_instances",
    "min_coordinate_gap",
    "mistake_bound",
    "order_polytope_centroid",
    "play",
    "random_box_sum",
    "random_graphic_matroid",
    "random_partition_matroid",
    "random_uniform_matroid",
    "sample_w_star",
    "random_flow_set",
    "segment_instances",
    "transversal_matroid_bases",
    "verify_m_convex",
    "w_star_with_gap",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
