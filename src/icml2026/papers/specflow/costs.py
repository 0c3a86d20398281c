"""Per-hop cost of SpecFlow against MVoT at a chosen reasoning depth: context, KV bytes, FLOPs, wall time.

Costs depend on shapes only, so they are measured with freshly initialised nets of the brief's sizes on a
forced path of ``depth`` moves (an empty 8 x 8 map, alternating D and R from the top-left corner).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from icml2026.core.rng import torch_generator
from icml2026.core.validate import positive_int

from .baselines import MVoTReasoner
from .data import LakeMap
from .flow import FlowUpdater, VelocityNet, seeded_init
from .reasoners import SpecFlowReasoner, _Reasoner, build_policy

__all__ = ["CostCurve", "measure_costs", "forced_path"]


@dataclass
class CostCurve:
    """Per-hop costs (index = hop, 0..depth) of one method; ``seconds`` is the median over repetitions."""

    method: str
    tokens_per_thought: int
    context: list[int] = field(default_factory=list)
    kv_bytes: list[int] = field(default_factory=list)
    kv_bytes_visual: list[int] = field(default_factory=list)
    kv_bytes_measured: list[int] = field(default_factory=list)
    workspace_shape: list[tuple[int, ...]] = field(default_factory=list)
    flops_policy: list[int] = field(default_factory=list)
    flops_flow: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def total_flops(self, depth: int) -> int:
        """Policy + flow FLOPs of an episode of ``depth`` hops (hops 0..depth)."""
        return int(sum(self.flops_policy[: depth + 1]) + sum(self.flops_flow[: depth + 1]))

    def policy_flops(self, depth: int) -> int:
        return int(sum(self.flops_policy[: depth + 1]))


def forced_path(depth: int, size: int = 8) -> tuple[LakeMap, list[int]]:
    """An empty map and ``depth`` moves alternating D and R from (0, 0) (then back along the border)."""
    depth = positive_int(depth, "depth", maximum=4 * size * size)
    moves, pos = [], (0, 0)
    for i in range(depth):
        a = 1 if i % 2 == 0 else 3
        if (a == 1 and pos[0] == size - 1) or (a == 3 and pos[1] == size - 1):
            a = 0 if a == 1 else 2  # bounce off the border so that every hop moves the agent
        moves.append(a)
        pos = (pos[0] + (1 if a == 1 else -1 if a == 0 else 0), pos[1] + (1 if a == 3 else -1 if a == 2 else 0))
    return LakeMap(np.zeros((size, size), dtype=bool), (0, 0), (size - 1, size - 1)), moves


def measure_costs(
    method: Literal["specflow", "mvot"],
    rng: np.random.Generator,
    depth: int = 14,
    tokens_per_thought: int = 16,
    n_layers: int = 4,
    d_model: int = 192,
    n_heads: int = 4,
    flow_width: int = 48,
    n_ode_steps: int = 5,
    w: float = 4.0,
    reps: int = 3,
    count_flops: bool = True,
    device: str | torch.device = "cpu",
) -> CostCurve:
    """Costs per hop of ``method`` over a forced episode of ``depth`` moves (one FLOP-counted run + timed reps).

    The nets are built on the CPU (weights drawn from ``rng``) and run on ``device``; wall times there are
    measured without synchronising a GPU, so they are reported, never checked.
    """
    if method not in ("specflow", "mvot"):
        raise ValueError(f"method: must be 'specflow' or 'mvot', got {method!r}")
    reps = positive_int(reps, "reps", maximum=1000)
    g = torch_generator(rng)
    net = seeded_init(lambda: VelocityNet(width=flow_width), g).to(device)
    assert isinstance(net, VelocityNet)
    reasoner: _Reasoner
    if method == "specflow":
        policy = build_policy(16, 16, n_layers, d_model, n_heads, 64 + depth, g, attn_implementation="eager").to(device)
        reasoner = SpecFlowReasoner(policy, FlowUpdater(net, "spectral", n_steps=n_ode_steps, w=w))
    else:
        side = int(round(tokens_per_thought ** 0.5))
        policy = build_policy((32 // side) ** 2, tokens_per_thought, n_layers, d_model, n_heads,
                              (depth + 2) * (tokens_per_thought + 1), g, attn_implementation="eager",
                              visual_input="pixel").to(device)
        reasoner = MVoTReasoner(policy, FlowUpdater(net, "pixel", n_steps=n_ode_steps, w=w), tokens_per_thought)
    lake, moves = forced_path(depth)
    curve = CostCurve(method, tokens_per_thought if method == "mvot" else 16)
    ep = reasoner.solve(lake, rng, forced=moves, count_flops=count_flops)
    curve.context, curve.kv_bytes, curve.kv_bytes_visual = ep.context, ep.kv_bytes, ep.kv_bytes_visual
    curve.kv_bytes_measured, curve.workspace_shape = ep.kv_bytes_measured, ep.workspace_shape
    curve.flops_policy, curve.flops_flow = ep.flops_policy, ep.flops_flow
    times = []
    with torch.no_grad():
        for _ in range(reps):
            times.append(reasoner.solve(lake, rng, forced=moves).seconds)
    curve.seconds = [float(v) for v in np.median(np.array(times), axis=0)]
    return curve
