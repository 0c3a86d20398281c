"""Differentiable Weightless Controllers: Learning Logic Circuits for Continuous Control.

F. Kresse, C. H. Lampert, ICML 2026, arXiv:2512.01467 (https://arxiv.org/abs/2512.01467). Official code:
HyberionBrew/differentiable_weightless_controllers (CUDA, torch-dwn). This is a pure-PyTorch CPU
reimplementation with a Verilog export verified in iverilog (see README.md).

Symbols (paper -> code)
-----------------------
mu, var, x_hat          ``ObsNormalizer.mean``, ``.var``, ``.normalize(x)`` (clip to +/-10)
B, tau_m                ``bits``, ``thermometer_thresholds(B)[m]``; bit ``j*B+m`` = [x_hat_j > tau_m]
N, n, l                 ``n_luts``, ``lut_inputs``, index of ``DWCPolicy.layers``
T_l (N x 2^n)           ``LUTLayer.tables`` (real, clamped to [-1, 1]); deployed bits ``table_bits()``
map_l (N x n)           ``LUTLayer.indices()``; learnable parameter ``LUTLayer.wm`` (in_bits, N*n)
alpha, beta (EFD)       ``efd_constants(n)``; kernel W[a, l, a'] = ``efd_weights(n)``
tau (mapping softmax)   ``MAPPING_TAU`` = 1e-3
p_a, N/act_dim          popcounts ``DWCPolicy.integer_popcounts``, ``DWCPolicy.group_size``
log_alpha_a, beta_a     ``DWCPolicy.log_alpha``, ``DWCPolicy.beta``
action_scale, bias      ``DWCPolicy.action_scale``, ``DWCPolicy.action_bias``
"""

from .baselines import DWCActor, MLPActor, QuantMLPActor
from .checkpoint import convert_checkpoint, load_checkpoint
from .data import ControlLaw, lqr_cartpole_law, sample_states
from .encoding import ObsNormalizer, thermometer_encode, thermometer_thresholds
from .envs import env_dims, env_factory, make_vector_env
from .interpret import FirstLayerReport, first_layer_report
from .lut import MAPPING_TAU, EFDLookup, LearnableMapping, LUTLayer, efd_constants, efd_weights
from .policy import DWCPolicy, IntegerDWC, PolicyError, head_affine
from .sac import ReplayBuffer, SACConfig, SACResult, evaluate, make_actor, make_env, train_sac
from .supervised import fit_mse
from .verilog import ExportResult, SimulationResult, export_verilog, have_iverilog, have_yosys, simulate, synth_stats

__all__ = [
    "ControlLaw", "DWCActor", "DWCPolicy", "EFDLookup", "ExportResult", "FirstLayerReport", "IntegerDWC",
    "LUTLayer", "LearnableMapping", "MAPPING_TAU", "MLPActor", "QuantMLPActor", "ObsNormalizer",
    "PolicyError", "SACConfig",
    "SACResult", "SimulationResult", "convert_checkpoint", "efd_constants", "efd_weights", "evaluate",
    "export_verilog",
    "first_layer_report", "fit_mse", "have_iverilog", "have_yosys", "head_affine", "load_checkpoint",
    "lqr_cartpole_law",
    "make_actor", "make_env", "sample_states", "simulate", "synth_stats", "thermometer_encode",
    "thermometer_thresholds", "train_sac", "env_dims", "env_factory", "make_vector_env", "ReplayBuffer",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
