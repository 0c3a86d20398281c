"""Floating-point networks with AD represent values and gradients (fp_gradients, P10).

Paper: G. Hwang et al., "Floating-Point Networks with Automatic Differentiation Can Represent Almost All
Floating-Point Functions and Their Gradients", ICML 2026, arXiv:2605.01702.

Claim 1 is reproduced by an explicit construction (our own, see README.md): a float32 ReLU network that
torch's nn.Linear and a left-to-right reference evaluate identically, because every sum that matters has
at most two non-zero, exactly representable terms.  Targets may come from the whole float32 range, and
inputs may be vectors x in F^d (d <= 4, ``construct`` with 2-D ``xs``).  Claim 2 (several losses at once)
is built by ``construct_multi``: seed-selective channels make D^AD(phi_i o f)(x_k) = h_{i,k} for every
loss i.  ELU, GELU, SiLU, sigmoid and tanh (torch's modules) are built by ``construct(...,
activation=...)`` from their exact float regimes (activations.py, scalar inputs).  Not implemented (the
card says why): float16 / bfloat16, the other activations for vector inputs and Claim 2.

Symbol table (paper / brief -> code)
------------------------------------
D (finite domain), x_k        -> ``xs``
g: D -> F (values)            -> ``values``
h: D -> F (AD gradients)      -> ``grads``
phi (loss), D^AD phi(g_k)     -> ``phi``, the seed ``rho`` (``phi_seeds``)
D^AD(phi o f)(x)              -> gradients from ``torch_values_and_grads`` / ``reference_values_and_grads``
Delta_k, sigma_k = 4/Delta_k  -> ``point_scales`` (log2 sigma_k), ``PointPlan.sigma_log2``
z_k, a_k (mechanism 4)        -> ``solve_scaling`` -> ``PointPlan.z``, ``PointPlan.a``
fl(.)                         -> float32 round-to-nearest-even (``round_f32``)
x_k in F^d, h_k in F^d        -> ``build_vector_construction`` (``xs`` (K, d), ``grads`` (K, d))
"""

from .activations import (
    ActivationConstruction,
    activation_targets,
    build_activation_construction,
    reference_values_and_grads_activation,
    verify_activation,
)
from .baselines import construct_fixed_order, output_value_first_orders, sobolev_fit
from .construction import (
    Construction,
    ConstructionError,
    PointPlan,
    build_construction,
    construct,
    point_scales,
    simulate_point,
)
from .data import Targets, grid_points, mild_targets, random_targets
from .floats import count_mismatches, round_f32, same_value
from .losses import BUILTIN_PHIS, phi_seeds, resolve_phi
from .multi import (
    MultiConstruction,
    MultiTargets,
    build_multi_construction,
    construct_multi,
    impose_necessary_conditions,
    plan_multi_points,
    random_multi_targets,
    selector,
)
from .semantics import (
    Layer,
    Verification,
    layers_from_sequential,
    reference_values_and_grads,
    torch_values_and_grads,
    verify,
)
from .solver import ScalingSolution, solve_scaling, solve_single_scaling
from .vector import (
    VectorConstruction,
    build_vector_construction,
    construct_vector,
    coordinate_scales,
    random_vector_targets,
)

__all__ = [
    "construct",
    "verify",
    "solve_scaling",
    "solve_single_scaling",
    "ScalingSolution",
    "build_construction",
    "Construction",
    "ConstructionError",
    "PointPlan",
    "point_scales",
    "simulate_point",
    "Layer",
    "Verification",
    "layers_from_sequential",
    "reference_values_and_grads",
    "torch_values_and_grads",
    "BUILTIN_PHIS",
    "phi_seeds",
    "resolve_phi",
    "construct_fixed_order",
    "output_value_first_orders",
    "sobolev_fit",
    "Targets",
    "grid_points",
    "random_targets",
    "mild_targets",
    "round_f32",
    "same_value",
    "count_mismatches",
    "VectorConstruction",
    "build_vector_construction",
    "construct_vector",
    "coordinate_scales",
    "random_vector_targets",
    "construct_multi",
    "build_multi_construction",
    "plan_multi_points",
    "MultiConstruction",
    "MultiTargets",
    "random_multi_targets",
    "impose_necessary_conditions",
    "selector",
    "ActivationConstruction",
    "activation_targets",
    "build_activation_construction",
    "reference_values_and_grads_activation",
    "verify_activation",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals(), allow_inf=("same_value", "count_mismatches"))  # compare float32 values, inf included
