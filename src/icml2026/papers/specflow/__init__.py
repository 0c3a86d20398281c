"""SpecFlow: Spectral-Progressive Thought Flow for Lightweight Multimodal Reasoning (ICML 2026, arXiv:2606.02842).

One fixed-size visual workspace in block-DCT space, overwritten each reasoning hop by a flow-matching update
steered by the textual trace through classifier-free guidance, so that memory and latency per hop do not grow
with reasoning depth (MVoT-style interleaving appends every visual thought instead). CPU scale: FrozenLake
maps (4 x 4 quick, 8 x 8 full), a small Llama policy built from a config or any Hugging Face causal LM from a
local folder (:func:`load_backbone_policy`), and a small conv velocity net.

Symbols (paper -> code)
-----------------------
D (b x b), orthonormal DCT-II; X = D x D^T       -> :func:`dct_matrix`, :func:`block_dct`, :func:`block_idct`
b = 8, block side                                -> ``block``
keep(t), alpha(t) (cosine | linear | fixed)      -> :func:`keep_count` (``schedule``, ``min_keep``, ``max_keep``,
                                                    ``fixed_keep``)
M(t), progressive frequency mask                 -> :func:`frequency_mask` (``layout`` square | zigzag | radial)
u_theta(M(t) X_t, t, c), velocity net            -> :class:`VelocityNet`
X_t = (1-t) X_noise + t X_data (t=0 noise)       -> :func:`flow_matching_loss`
u = u(., null) + w (u(., c) - u(., null)), CFG   -> :func:`guided_velocity` (``w``)
Euler on t_k = k/T                               -> :func:`euler_sample` (``n_steps`` = T)
FlowUpdate(v_i, t_<=i) (Alg. 1)                  -> :class:`FlowUpdater` (checked with :class:`PerfectDenoiser`,
                                                    :func:`perfect_denoiser_decoding`)
Policy(v_{i+1}, t_<=i) (Alg. 1)                  -> :class:`Policy`, :class:`SpecFlowReasoner`
workspace: first ws_keep zig-zag coefficients    -> :func:`to_workspace`, ``ws_keep``
"""

from .baselines import MVoTReasoner, TextOnlyReasoner
from .data import ACTIONS, FrozenLakeMaps, LakeMap, agent_cell, bfs_expert, expert_renders, render
from .flow import FlowUpdater, PerfectDenoiser, VelocityNet, euler_sample, flow_matching_loss, guided_velocity
from .reasoners import Episode, Policy, SpecFlowReasoner, build_policy, kv_bytes, load_backbone_policy
from .spectral import (
    block_dct,
    block_idct,
    dct_matrix,
    frequency_mask,
    from_workspace,
    keep_count,
    to_workspace,
    zigzag_order,
)
from .training import evaluate, expert_episodes, perfect_denoiser_decoding, train_policy, train_velocity

__all__ = [
    "block_dct",
    "block_idct",
    "dct_matrix",
    "zigzag_order",
    "keep_count",
    "frequency_mask",
    "to_workspace",
    "from_workspace",
    "guided_velocity",
    "euler_sample",
    "flow_matching_loss",
    "VelocityNet",
    "FlowUpdater",
    "PerfectDenoiser",
    "perfect_denoiser_decoding",
    "FrozenLakeMaps",
    "LakeMap",
    "ACTIONS",
    "bfs_expert",
    "render",
    "expert_renders",
    "agent_cell",
    "Policy",
    "build_policy",
    "load_backbone_policy",
    "Episode",
    "kv_bytes",
    "SpecFlowReasoner",
    "MVoTReasoner",
    "TextOnlyReasoner",
    "expert_episodes",
    "train_policy",
    "train_velocity",
    "evaluate",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
