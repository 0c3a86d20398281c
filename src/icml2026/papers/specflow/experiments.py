"""Registered experiments of SpecFlow (brief criteria 1-6)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch
from matplotlib.figure import Figure
from scipy.fft import dctn

from icml2026.core import Check, Outcome, experiment, spawn, torch_generator
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, resolve_device
from icml2026.core.plotting import new_figure

from .baselines import MVoTReasoner, TextOnlyReasoner
from .costs import CostCurve, measure_costs
from .data import FrozenLakeMaps, expert_renders
from .flow import FlowUpdater, VelocityNet, guided_velocity, seeded_init
from .reasoners import SpecFlowReasoner, build_policy
from .spectral import block_dct, block_idct, dct_matrix, frequency_mask, keep_count, to_workspace
from .training import Evaluation, evaluate, expert_episodes, train_policy, train_velocity

__all__ = ["TransformsConfig", "CostConfig", "HeadlineConfig", "AblationConfig"]


# ---------------------------------------------------------------------------------------------------------
# Criteria 1-3: block DCT, the mask M(t), CFG
# ---------------------------------------------------------------------------------------------------------
@config
class TransformsConfig:
    n_maps: int = param(50, 1, 2000, help="maps whose renders are used for energy compaction")
    ws_keep: int = param(16, 1, 64, help="zig-zag coefficients kept per 8 x 8 block (ours: 16)")
    min_keep: int = param(8, 1, 64, help="code default 8")
    max_keep: int = param(64, 1, 64, help="code default 64")
    fixed_keep: int = param(16, 1, 64, help="code default 16")

    def __post_init__(self) -> None:
        if self.min_keep > self.max_keep:
            raise ValueError(f"min_keep = {self.min_keep}: must be <= max_keep ({self.max_keep})")


@experiment(
    "specflow.transforms",
    claim="The block DCT is orthonormal and invertible to 1e-5, the first 16 of 64 zig-zag coefficients carry "
    ">= 90% of a render's energy, the mask grows from min_keep to max_keep without decreasing, and CFG "
    "reduces to the conditional (w = 1) and unconditional (w = 0) velocity.",
    presets={"quick": TransformsConfig(), "full": TransformsConfig(n_maps=500)},
)
def transforms(cfg: TransformsConfig, rng: np.random.Generator) -> Outcome:
    d = dct_matrix(8, torch.float64)
    ortho_err = float((d @ d.T - torch.eye(8, dtype=torch.float64)).abs().max())
    gen = FrozenLakeMaps()
    frames = np.concatenate([expert_renders(m, mv)[0] for m, mv in gen.batch(cfg.n_maps, rng)])
    x = torch.from_numpy(frames)
    X = block_dct(x)
    roundtrip = float((block_idct(X) - x).abs().max())
    # scipy oracle on every block of the first render
    f64 = torch.from_numpy(frames[0].astype(np.float64))
    X64 = block_dct(f64).numpy()
    scipy_err = max(float(np.abs(X64[r:r + 8, c:c + 8] - dctn(frames[0][r:r + 8, c:c + 8].astype(np.float64),
                                                               type=2, norm="ortho")).max())
                    for r in range(0, 32, 8) for c in range(0, 32, 8))
    energy = (to_workspace(X, cfg.ws_keep) ** 2).sum(dim=(-1, -2)) / (X ** 2).sum(dim=(-1, -2))
    per_coef = (to_workspace(X, 64) ** 2).mean(dim=(0, 1)).numpy()
    grid = np.linspace(0, 1, 101)
    keeps = {s: [keep_count(float(t), s, cfg.min_keep, cfg.max_keep, cfg.fixed_keep) for t in grid]
             for s in ("cosine", "linear", "fixed")}
    n_decreases = sum(int(b < a) for s in ("cosine", "linear") for a, b in zip(keeps[s], keeps[s][1:], strict=False))
    square_bad = sum(int(float(frequency_mask(float(t), 8, "square", "cosine", cfg.min_keep, cfg.max_keep,
                                              cfg.fixed_keep).sum()) != math.isqrt(k) ** 2)
                     for t, k in zip(grid, keeps["cosine"], strict=True))
    g = torch_generator(rng)
    uu, uc = torch.randn(64, 1, 32, 32, generator=g), torch.randn(64, 1, 32, 32, generator=g)
    cfg_w1 = float((guided_velocity(uu, uc, 1.0) - uc).abs().max())
    cfg_w0 = float((guided_velocity(uu, uc, 0.0) - uu).abs().max())
    metrics = {
        "dct_orthonormality_err": ortho_err,
        "roundtrip_max_abs_err": roundtrip,
        "scipy_max_abs_err": scipy_err,
        "energy_kept_min": float(energy.min()),
        "energy_kept_mean": float(energy.mean()),
        "keep_cosine_t0": keeps["cosine"][0],
        "keep_cosine_t1": keeps["cosine"][-1],
        "keep_linear_t0": keeps["linear"][0],
        "keep_linear_t1": keeps["linear"][-1],
        "n_decreases": n_decreases,
        "fixed_distinct_values": len(set(keeps["fixed"])),
        "square_count_mismatches": square_bad,
        "cfg_w1_max_diff": cfg_w1,
        "cfg_w0_max_diff": cfg_w0,
    }
    checks = [
        Check("dct_orthonormality_err", ortho_err, "< 1e-12", paper="orthonormal D"),
        Check("roundtrip_max_abs_err", roundtrip, "< 1e-5"),
        Check("scipy_max_abs_err", scipy_err, "< 1e-10"),
        Check("energy_kept_min", float(energy.min()), ">= 0.9"),
        Check("keep_cosine_t0", keeps["cosine"][0], f"== {cfg.min_keep}"),
        Check("keep_cosine_t1", keeps["cosine"][-1], f"== {cfg.max_keep}"),
        Check("keep_linear_t0", keeps["linear"][0], f"== {cfg.min_keep}"),
        Check("keep_linear_t1", keeps["linear"][-1], f"== {cfg.max_keep}"),
        Check("n_decreases", n_decreases, "== 0"),
        Check("fixed_distinct_values", len(set(keeps["fixed"])), "== 1"),
        Check("square_count_mismatches", square_bad, "== 0"),
        Check("cfg_w1_max_diff", cfg_w1, "== 0"),
        Check("cfg_w0_max_diff", cfg_w0, "== 0"),
    ]
    fig, ax = new_figure("Progressive frequency mask M(t)", "flow time t (0 = noise, 1 = data)",
                         "coefficients kept per 8x8 block")
    for s, style in (("cosine", "-"), ("linear", "--"), ("fixed", ":")):
        ax.plot(grid, keeps[s], style, label=s)
        sq = [math.isqrt(k) ** 2 for k in keeps[s]]
        if s == "cosine":
            ax.plot(grid, sq, "-", alpha=0.5, label="cosine, square layout (floor(sqrt)^2)")
    # the masks themselves at t = 0, 0.25, ..., 1 as an inset strip
    strip = np.concatenate([np.pad(frequency_mask(t, 8, "square", "cosine", cfg.min_keep, cfg.max_keep,
                                                  cfg.fixed_keep).numpy(), 1, constant_values=0.5)
                            for t in (0.0, 0.25, 0.5, 0.75, 1.0)], axis=1)
    inset = ax.inset_axes((0.45, 0.05, 0.52, 0.16))
    inset.imshow(strip, cmap="gray", vmin=0, vmax=1)
    inset.set_xticks([5 + 10 * i for i in range(5)], ["0", ".25", ".5", ".75", "1"], fontsize=6)
    inset.set_yticks([])
    ax.legend(loc="upper left", fontsize=8)
    fig2, ax2 = new_figure("Energy per zig-zag coefficient (renders)", "zig-zag index", "mean energy", logy=True)
    ax2.plot(np.arange(64), per_coef, "o-", ms=3)
    ax2.axvline(cfg.ws_keep - 0.5, color="k", ls="--", label=f"workspace keeps {cfg.ws_keep}")
    ax2.legend()
    return Outcome(metrics=metrics, checks=checks, figures={"mask_over_t": fig, "energy_per_coefficient": fig2})


# ---------------------------------------------------------------------------------------------------------
# Criterion 4 and the cost half of criterion 5: bounded workspace, KV bytes, FLOPs, latency per hop
# ---------------------------------------------------------------------------------------------------------
@config
class CostConfig:
    depth: int = param(14, 12, 40, help="reasoning depth (moves); the brief measures 1..14")
    tokens_per_thought: tuple[int, ...] = param((16, 64), choices=(4, 16, 64), min_len=1, max_len=3,
                                                help="MVoT visual tokens per thought; brief: 16 and 64")
    n_layers: int = param(4, 1, 8, help="brief: 4")
    d_model: int = param(192, 16, 512, help="brief: 192")
    n_heads: int = param(4, 1, 16, help="brief: 4")
    flow_width: int = param(48, 8, 128, help="velocity-net channels (about 0.25M parameters at 48)")
    n_ode_steps: int = param(5, 1, 16, help="paper: T = 5")
    w: float = param(4.0, 0.0, 10.0, help="paper: w = 4")
    reps: int = param(3, 1, 20, help="timed repetitions (median per hop)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model = {self.d_model}: must be a multiple of n_heads ({self.n_heads})")


#: Success rate below which success comparisons are undecidable at our test-set sizes (a fifth of the maps; the
#: paper's FrozenLake success is 87.94%). Fixed before any run of this rule; quick runs measured 0.5-2%.
MIN_LEARNED_SUCCESS = 0.2


def _window(values: list[float], centre: int) -> float:
    """Median over hops centre-1..centre+1 (one hop's wall time is noisy on a shared CPU)."""
    return float(np.median(values[max(1, centre - 1): centre + 2]))


@experiment(
    "specflow.bounded_cost",
    claim="SpecFlow's workspace and visual KV cache are the same at every hop while MVoT's context grows by "
    "tokens_per_thought + 1 per hop; at depth >= 8 MVoT needs >= 2x SpecFlow's KV cache and, with 64 tokens "
    "per thought, >= 1.6x its FLOPs; SpecFlow's per-hop compute stays flat (FLOPs of hop 12 <= 1.1 x hop 1).",
    presets={"quick": CostConfig(), "full": CostConfig(reps=10),
             "smoke": CostConfig(tokens_per_thought=(16,), n_layers=1, d_model=32, n_heads=2, flow_width=8,
                                 n_ode_steps=1, reps=1)},
)
def bounded_cost(cfg: CostConfig, rng: np.random.Generator) -> Outcome:
    kw = dict(depth=cfg.depth, n_layers=cfg.n_layers, d_model=cfg.d_model, n_heads=cfg.n_heads,
              flow_width=cfg.flow_width, n_ode_steps=cfg.n_ode_steps, w=cfg.w, reps=cfg.reps,
              device=resolve_device(cfg.device))
    tpts = sorted(set(cfg.tokens_per_thought))
    r_spec, *r_mvot = spawn(rng, 1 + len(tpts))
    spec = measure_costs("specflow", r_spec, tokens_per_thought=16, **kw)  # type: ignore[arg-type]
    mvot = {t: measure_costs("mvot", r, tokens_per_thought=t, **kw) for t, r in zip(tpts, r_mvot, strict=True)}  # type: ignore[arg-type]
    hops = range(1, cfg.depth + 1)
    metrics: dict[str, float] = {
        "specflow_workspace_shapes_distinct": len({spec.workspace_shape[h] for h in hops}),
        "specflow_visual_kv_distinct": len({spec.kv_bytes_visual[h] for h in hops}),
        "specflow_kv_formula_vs_cache_max_diff": max(abs(a - b) for a, b in zip(spec.kv_bytes, spec.kv_bytes_measured,
                                                                               strict=True)),
    }
    checks = [
        Check("specflow_workspace_shapes_distinct", metrics["specflow_workspace_shapes_distinct"], "== 1",
              paper="fixed-size workspace"),
        Check("specflow_visual_kv_distinct", metrics["specflow_visual_kv_distinct"], "== 1"),
        Check("specflow_kv_formula_vs_cache_max_diff", metrics["specflow_kv_formula_vs_cache_max_diff"], "== 0"),
    ]
    timings: dict[str, float] = {}
    deep = [8, min(14, cfg.depth)]
    for t, c in mvot.items():
        growth = np.diff(c.context)
        dev = float(np.abs(growth - (t + 1)).max())
        metrics[f"mvot{t}_context_growth_max_dev"] = dev
        checks.append(Check(f"mvot{t}_context_growth_max_dev", dev, "== 0", paper="grows with every thought"))
        for dd in deep:
            kv = c.kv_bytes[dd] / spec.kv_bytes[dd]
            fl = c.total_flops(dd) / spec.total_flops(dd)
            flp = c.policy_flops(dd) / spec.policy_flops(dd)
            metrics[f"kv_ratio_tpt{t}_depth{dd}"] = kv
            metrics[f"flops_ratio_tpt{t}_depth{dd}"] = fl
            metrics[f"policy_flops_ratio_tpt{t}_depth{dd}"] = flp
            if t == 16:
                checks.append(Check(f"kv_ratio_tpt{t}_depth{dd}", kv, ">= 2", paper="up to 2.1x KV (dynamic tasks)"))
            if t == 64:
                checks.append(Check(f"flops_ratio_tpt{t}_depth{dd}", fl, ">= 1.6",
                                    paper="VoCoT 20342 vs SpecFlow 11170 GFLOPs (VSR)"))
        metrics[f"mvot{t}_total_gflops_depth{cfg.depth}"] = c.total_flops(cfg.depth) / 1e9
        lat = _window(c.seconds, 12) / _window(c.seconds, 1)
        timings[f"mvot{t}_latency_ratio_hop12_hop1"] = lat
    metrics[f"specflow_total_gflops_depth{cfg.depth}"] = spec.total_flops(cfg.depth) / 1e9
    metrics["specflow_flow_gflops_per_hop"] = spec.flops_flow[1] / 1e9
    metrics["specflow_policy_gflops_hop1"] = spec.flops_policy[1] / 1e9
    metrics["specflow_policy_gflops_hop12"] = spec.flops_policy[12] / 1e9
    lat_spec = _window(spec.seconds, 12) / _window(spec.seconds, 1)
    timings["specflow_latency_ratio_hop12_hop1"] = lat_spec
    for h in hops:
        timings[f"specflow_seconds_hop{h}"] = spec.seconds[h]
        for t, c in mvot.items():
            timings[f"mvot{t}_seconds_hop{h}"] = c.seconds[h]
    # Flat per-hop cost, checked on the per-hop FLOPs (torch's FlopCounterMode: the same on every machine).
    # Deviation: the wall-time ratio is reported in the timings, not checked: on a shared 2-core CPU it ranged
    # 0.98-1.35 over three seeds for the same computation, so its verdict was decided by the machine's load.
    # Fails for a workspace whose context grows with the hops (MVoT: 1.2-1.4x at 64 tokens per thought).
    def hop_flops(c: CostCurve, h: int) -> float:
        return float(c.flops_policy[h] + c.flops_flow[h])

    spec_hop = hop_flops(spec, 12) / hop_flops(spec, 1)
    metrics["specflow_hop_flops_ratio_hop12_hop1"] = spec_hop
    checks.append(Check("specflow_hop_flops_ratio_hop12_hop1", spec_hop, "<= 1.1", paper=".41 s vs VoCoT .65 s (VSR)"))
    tmax = max(mvot)
    mvot_hop = hop_flops(mvot[tmax], 12) / hop_flops(mvot[tmax], 1)
    metrics[f"mvot{tmax}_hop_flops_ratio_hop12_hop1"] = mvot_hop
    checks.append(Check(f"mvot{tmax}_hop_flops_ratio_hop12_hop1", mvot_hop, "> 1.1"))
    rows = []
    for h in range(cfg.depth + 1):
        row = {"hop": h, "specflow_ctx": spec.context[h], "specflow_kv_mb": spec.kv_bytes[h] / 2**20,
               "specflow_gflops": (spec.flops_policy[h] + spec.flops_flow[h]) / 1e9}
        for t, c in mvot.items():
            row[f"mvot{t}_ctx"] = c.context[h]
            row[f"mvot{t}_kv_mb"] = c.kv_bytes[h] / 2**20
            row[f"mvot{t}_gflops"] = (c.flops_policy[h] + c.flops_flow[h]) / 1e9
        rows.append(row)
    return Outcome(metrics=metrics, checks=checks, timings=timings, tables={"per_hop": rows},
                   figures=_cost_figures(spec, mvot, cfg.depth))


def _cost_figures(spec: CostCurve, mvot: dict[int, CostCurve], depth: int) -> dict:
    hops = np.arange(depth + 1)
    fig_kv, ax = new_figure("Policy KV cache against reasoning depth", "hop", "KV cache (MiB)")
    ax.plot(hops, np.array(spec.kv_bytes) / 2**20, "o-", label="SpecFlow (16 workspace tokens)")
    for t, c in mvot.items():
        ax.plot(hops, np.array(c.kv_bytes) / 2**20, "s--", label=f"MVoT ({t} tokens / thought)")
    ax.legend()
    fig_fl, ax = new_figure("Cumulative FLOPs (policy + flow)", "reasoning depth", "GFLOPs", logy=True)
    ax.plot(hops, [spec.total_flops(int(d)) / 1e9 for d in hops], "o-", label="SpecFlow")
    for t, c in mvot.items():
        ax.plot(hops, [c.total_flops(int(d)) / 1e9 for d in hops], "s--", label=f"MVoT ({t} tok.)")
    ax.legend()
    fig_t, ax = new_figure("Wall time per hop (median over repetitions)", "hop", "seconds")
    ax.plot(hops[1:], spec.seconds[1:], "o-", label="SpecFlow")
    for t, c in mvot.items():
        ax.plot(hops[1:], c.seconds[1:], "s--", label=f"MVoT ({t} tok.)")
    ax.legend()
    return {"kv_vs_depth": fig_kv, "flops_vs_depth": fig_fl, "latency_vs_depth": fig_t}


# ---------------------------------------------------------------------------------------------------------
# Criterion 5 (accuracy) and criterion 6 (ablations): trained policies and velocity nets
# ---------------------------------------------------------------------------------------------------------
@config
class HeadlineConfig:
    n_train: int = param(1000, 4, 20000, help="expert episodes for training; brief: 20k")
    n_test: int = param(60, 1, 2000, help="test maps; brief: 500")
    policy_steps: int = param(600, 1, 50000, help="policy optimiser steps")
    flow_steps: int = param(500, 1, 50000, help="velocity-net optimiser steps")
    batch_size: int = param(32, 1, 512, help="expert actions per policy step; the velocity net takes twice this")
    lr_policy: float = param(3e-3, 0.0, 0.1, lo_open=True)
    lr_flow: float = param(3e-3, 0.0, 0.1, lo_open=True)
    n_layers: int = param(2, 1, 8, help="brief: 4")
    d_model: int = param(64, 16, 512, help="brief: 192")
    n_heads: int = param(2, 1, 16, help="brief: 4")
    flow_width: int = param(48, 8, 128)
    n_ode_steps: int = param(5, 1, 16, help="paper: T = 5")
    w: float = param(4.0, 0.0, 10.0, help="paper's best w = 4")
    p_drop: float = param(0.1, 0.0, 1.0, help="CFG condition dropout; paper: 0.1")
    deep_depth: int = param(8, 2, 14, help="maps with H >= this count as deep")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model = {self.d_model}: must be a multiple of n_heads ({self.n_heads})")


_C = TypeVar("_C", bound="HeadlineConfig")


# The full presets at the brief's budget (20k training episodes, 500 test maps, policy ~5 min, each velocity
# net ~8 min on one core). Deviation: the policy is 2 layers, d = 64 (the brief: 4 layers, d = 192). In the
# brief's 5 minutes the larger policy gets ~1400 steps; measured with the true renders as thoughts (200 test
# maps, one seed): 4 layers d = 192 after 2000 steps solved 15.5%, 4 layers d = 128 after 3000 steps 19.5%,
# 2 layers d = 64 after 8000 steps 56% (66% as the Llama used now; 4 layers d = 64: 56.5%, 1.7x the time).
# The cost measurements (bounded_cost, the benchmark) keep the brief's size.
def _full(cls: type[_C]) -> _C:
    return cls(n_train=20000, n_test=500, policy_steps=8000, flow_steps=8000, batch_size=64, n_layers=2, d_model=64,
               n_heads=2, lr_policy=3e-3, lr_flow=3e-3)


@dataclass
class _Trained:
    spec_policy: torch.nn.Module
    spec_flow: FlowUpdater
    mvot_policy: torch.nn.Module | None
    pixel_flow: FlowUpdater | None
    text_policy: torch.nn.Module | None
    test: list
    policy_loss: dict[str, float]
    flow_loss: dict[str, float]


def _flow(cfg: HeadlineConfig, space: str, g: torch.Generator, schedule: str = "cosine") -> FlowUpdater:
    net = seeded_init(lambda: VelocityNet(width=cfg.flow_width), g).to(cfg.device)  # weights drawn on the CPU
    assert isinstance(net, VelocityNet)
    return FlowUpdater(net, space, n_steps=cfg.n_ode_steps, w=cfg.w, schedule=schedule)  # type: ignore[arg-type]


def _train(cfg: HeadlineConfig, rng: np.random.Generator, baselines: bool) -> _Trained:
    r_data, r_test, r_model = spawn(rng, 3)
    gen = FrozenLakeMaps()
    train = expert_episodes(gen.batch(cfg.n_train, r_data))
    test = gen.batch(cfg.n_test, r_test)
    g = torch_generator(r_model)
    ctx_mvot = 16 * (2 * 14 + 4)
    dev = cfg.device  # resolved by the experiment; weights are drawn on the CPU, then moved
    policies = {"specflow": build_policy(16, 16, cfg.n_layers, cfg.d_model, cfg.n_heads, 64, g).to(dev)}
    if baselines:
        policies["mvot"] = build_policy(64, 16, cfg.n_layers, cfg.d_model, cfg.n_heads, ctx_mvot, g,
                                        visual_input="pixel").to(dev)
        policies["text"] = build_policy(64, 16, cfg.n_layers, cfg.d_model, cfg.n_heads, 64, g,
                                        visual_input="pixel").to(dev)
    losses = {k: train_policy(p, k, train, cfg.policy_steps, cfg.batch_size, cfg.lr_policy, g)
              for k, p in policies.items()}
    spec_flow = _flow(cfg, "spectral", g)
    flow_loss = {"spectral": train_velocity(spec_flow, train, cfg.flow_steps, 2 * cfg.batch_size, cfg.lr_flow, g,
                                            cfg.p_drop)}
    pixel_flow = None
    if baselines:
        pixel_flow = _flow(cfg, "pixel", g)
        flow_loss["pixel"] = train_velocity(pixel_flow, train, cfg.flow_steps, 2 * cfg.batch_size, cfg.lr_flow, g,
                                            cfg.p_drop)
    tail = max(1, min(20, cfg.policy_steps // 5))
    return _Trained(policies["specflow"], spec_flow, policies.get("mvot"), pixel_flow, policies.get("text"), test,
                    {k: float(np.mean(v[-tail:])) for k, v in losses.items()},
                    {k: float(np.mean(v[-max(1, min(20, cfg.flow_steps // 5)):])) for k, v in flow_loss.items()})


def _reconstruction_figure(reasoner: SpecFlowReasoner, test: list, rng: np.random.Generator):
    """Decoded workspace per hop (top) beside the true render (bottom) on the deepest test map."""
    m, moves = max(test, key=lambda mv: len(mv[1]))
    ep = reasoner.solve(m, rng, len(moves), forced=moves, keep_thoughts=True)
    truth = expert_renders(m, moves)[0]
    n = min(len(ep.thoughts), 10)
    pad = lambda a: np.pad(np.clip(a, 0, 1), 1, constant_values=1.0)  # noqa: E731
    top = np.concatenate([pad(ep.thoughts[i]) for i in range(n)], axis=1)
    bottom = np.concatenate([pad(truth[i]) for i in range(n)], axis=1)
    fig, ax = new_figure("SpecFlow workspace per hop (top: decoded, bottom: true render)", "hop", "")
    ax.imshow(np.concatenate([top, bottom], axis=0), cmap="gray", vmin=0, vmax=1)
    ax.set_xticks([17 + 34 * i for i in range(n)], [str(i) for i in range(n)])
    ax.set_yticks([])
    ax.grid(False)
    return fig


def _eval_metrics(prefix: str, ev: Evaluation, metrics: dict[str, float]) -> None:
    metrics[f"{prefix}_success"] = ev.success
    metrics[f"{prefix}_fell"] = ev.fell
    if ev.n_deep:
        metrics[f"{prefix}_success_deep"] = ev.success_deep
    if ev.agent_acc is not None:
        metrics[f"{prefix}_agent_cell_acc"] = ev.agent_acc


@experiment(
    "specflow.headline",
    claim="On 8x8 FrozenLake maps SpecFlow (one 16-token block-DCT workspace) succeeds within 5 points of "
    "MVoT with pixel-space visual thoughts appended to the context, and at least as often as text-only CoT.",
    presets={
        "smoke": HeadlineConfig(n_train=8, n_test=3, policy_steps=2, flow_steps=2, batch_size=4, n_layers=1,
                                d_model=16, n_heads=2, flow_width=8, n_ode_steps=2),
        "quick": HeadlineConfig(),
        # Deviation: a 2-layer d = 64 policy instead of the brief's 4 layers, d = 192 (see _full)
        "full": _full(HeadlineConfig),
    },
)
def headline(cfg: HeadlineConfig, rng: np.random.Generator) -> Outcome:
    resolve_device(cfg.device)  # a device this machine lacks stops the run here
    r_train, r_eval, r_fig = spawn(rng, 3)
    tr = _train(cfg, r_train, baselines=True)
    assert tr.mvot_policy is not None and tr.text_policy is not None and tr.pixel_flow is not None
    e = spawn(r_eval, 5)
    spec_r = SpecFlowReasoner(tr.spec_policy, tr.spec_flow)  # type: ignore[arg-type]
    evs = {
        "specflow": evaluate(spec_r, tr.test, e[0], cfg.deep_depth, "SpecFlow"),
        "diffthinker": evaluate(SpecFlowReasoner(tr.spec_policy, FlowUpdater(tr.spec_flow.net, "spectral",  # type: ignore[arg-type]
                                                                              n_steps=cfg.n_ode_steps, w=0.0)),
                                tr.test, e[1], cfg.deep_depth, "DiffThinker-like (w = 0)"),
        "mvot": evaluate(MVoTReasoner(tr.mvot_policy, tr.pixel_flow), tr.test, e[2], cfg.deep_depth, "MVoT"),  # type: ignore[arg-type]
        "mvot_oracle": evaluate(MVoTReasoner(tr.mvot_policy, None), tr.test, e[3], cfg.deep_depth, "MVoT-oracle"),  # type: ignore[arg-type]
        "text": evaluate(TextOnlyReasoner(tr.text_policy), tr.test, e[4], cfg.deep_depth, "text-only"),  # type: ignore[arg-type]
    }
    metrics: dict[str, float] = {}
    for k, ev in evs.items():
        _eval_metrics(k, ev, metrics)
    for k, v in tr.policy_loss.items():
        metrics[f"policy_loss_{k}"] = v
    for k, v in tr.flow_loss.items():
        metrics[f"flow_loss_{k}"] = v
    d_mvot = evs["specflow"].success - evs["mvot"].success
    d_text = evs["specflow"].success - evs["text"].success
    metrics["specflow_minus_mvot_success"] = d_mvot
    metrics["specflow_minus_text_success"] = d_text
    # The comparisons are evidence only if the policies can solve maps at all: the guard asks that the policy
    # fed the TRUE renders (MVoT-oracle, the easiest reasoner) solves MIN_LEARNED_SUCCESS of them. Below it
    # every method succeeds on a handful of maps and a comparison is decided by one episode (it flipped
    # between seeds), so the comparisons are then reported as metrics and the guard fails the run.
    oracle = evs["mvot_oracle"].success
    checks = [Check("guard_mvot_oracle_success", oracle, f">= {MIN_LEARNED_SUCCESS}",
                    paper="(guard; paper's FrozenLake success 87.94%)")]
    if oracle >= MIN_LEARNED_SUCCESS:
        checks += [
            Check("specflow_minus_mvot_success", d_mvot, ">= -0.05", paper="SpecFlow 70.14 vs VoCoT 68.88 acc % (VSR)"),
            Check("specflow_minus_text_success", d_text, ">= 0"),
        ]
    fig, ax = new_figure("Agent-cell accuracy of the visual thought read at each hop", "hop",
                         "accuracy (brightest-dot cell)")
    for k, label in (("specflow", "SpecFlow (DCT workspace)"), ("mvot", "MVoT (pixel thoughts)"),
                     ("diffthinker", "SpecFlow, w = 0")):
        acc = evs[k].agent_acc_per_hop
        ax.plot(np.arange(1, len(acc) + 1), acc, "o-", label=label)
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    fig_s, ax = new_figure("Success rate", "method", "success")
    names = list(evs)
    ax.bar(range(len(names)), [evs[k].success for k in names])
    ax.set_xticks(range(len(names)), names, fontsize=8)
    rows = [{"method": k, "success": ev.success, "success_deep": ev.success_deep, "n_deep": ev.n_deep,
             "fell": ev.fell, "agent_cell_acc": ev.agent_acc if ev.agent_acc is not None else float("nan")}
            for k, ev in evs.items()]
    return Outcome(metrics=metrics, checks=checks, tables={"methods": rows},
                   figures={"agent_acc_per_hop": fig, "success": fig_s,
                            "workspace_per_hop": _reconstruction_figure(spec_r, tr.test, r_fig)})


@config
class AblationConfig(HeadlineConfig):
    w_values: tuple[float, ...] = param((1.0, 2.0, 4.0, 6.0), 0.0, 10.0, min_len=1, max_len=8,
                                        help="CFG scales; paper: 1, 2, 4, 6")
    ode_steps: tuple[int, ...] = param((1, 3, 5, 8), 1, 16, min_len=1, max_len=8, help="paper: 1, 3, 5, 8")
    n_drift: int = param(100, 1, 2000, help="test maps whose expert path is replayed to measure thought drift")


@experiment(
    "specflow.ablations",
    claim="The cosine mask schedule succeeds at least as often as the fixed low-frequency mask, and guidance "
    "w = 4 at least as often as w = 1 on maps of depth >= 8 (soft claims; ODE steps and w swept).",
    presets={
        "smoke": AblationConfig(n_train=8, n_test=3, policy_steps=2, flow_steps=2, batch_size=4, n_layers=1,
                                d_model=16, n_heads=2, flow_width=8, n_ode_steps=2, w_values=(1.0, 4.0),
                                ode_steps=(1, 2)),
        "quick": AblationConfig(),
        "full": _full(AblationConfig),
    },
)
def ablations(cfg: AblationConfig, rng: np.random.Generator) -> Outcome:
    resolve_device(cfg.device)  # a device this machine lacks stops the run here
    r_train, r_flow, r_eval, r_drift = spawn(rng, 4)
    tr = _train(cfg, r_train, baselines=False)
    gen = FrozenLakeMaps()
    train = expert_episodes(gen.batch(cfg.n_train, spawn(r_train, 1)[0]))
    g = torch_generator(r_flow)
    nets = {"cosine": tr.spec_flow}
    for s in ("linear", "fixed"):
        nets[s] = _flow(cfg, "spectral", g, schedule=s)
        train_velocity(nets[s], train, cfg.flow_steps, 2 * cfg.batch_size, cfg.lr_flow, g, cfg.p_drop)
    metrics: dict[str, float] = {}
    rows = []

    def run(label: str, up: FlowUpdater, r: np.random.Generator) -> Evaluation:
        ev = evaluate(SpecFlowReasoner(tr.spec_policy, up), tr.test, r, cfg.deep_depth, label)  # type: ignore[arg-type]
        _eval_metrics(label, ev, metrics)
        rows.append({"variant": label, "schedule": up.schedule, "w": up.w, "ode_steps": up.n_steps,
                     "success": ev.success, "success_deep": ev.success_deep, "n_deep": ev.n_deep,
                     "agent_cell_acc": ev.agent_acc if ev.agent_acc is not None else float("nan")})
        return ev

    variants = [(f"schedule_{s}", FlowUpdater(nets[s].net, "spectral", n_steps=cfg.n_ode_steps, w=cfg.w, schedule=s))  # type: ignore[arg-type]
                for s in ("cosine", "linear", "fixed")]
    variants += [(f"w_{w:g}", FlowUpdater(nets["cosine"].net, "spectral", n_steps=cfg.n_ode_steps, w=w))
                 for w in cfg.w_values]
    variants += [(f"steps_{n}", FlowUpdater(nets["cosine"].net, "spectral", n_steps=n, w=cfg.w))
                 for n in cfg.ode_steps]
    # one evaluation stream per variant, the same test maps for all; a variant equal to an earlier one (w = 4
    # and T = 5 are the cosine run's own settings) reuses its evaluation
    evs: dict[str, Evaluation] = {}
    done: dict[tuple, Evaluation] = {}
    for (label, up), r in zip(variants, spawn(r_eval, len(variants)), strict=True):
        key = (up.schedule, up.w, up.n_steps)
        if key in done:
            evs[label] = done[key]
            _eval_metrics(label, done[key], metrics)
            rows.append({**next(row for row in rows if (row["schedule"], row["w"], row["ode_steps"]) == key),
                         "variant": label})
        else:
            evs[label] = done[key] = run(label, up, r)
    d_sched = evs["schedule_cosine"].success - evs["schedule_fixed"].success
    metrics["cosine_minus_fixed_success"] = d_sched
    # As in the headline: the soft comparisons are checked only once the cosine run itself solves
    # MIN_LEARNED_SUCCESS of the maps; below it they are reported as metrics and the guard fails.
    best = max(ev.success for ev in evs.values())
    checks = [Check("guard_best_variant_success", best, f">= {MIN_LEARNED_SUCCESS}",
                    paper="(guard; paper's FrozenLake success 87.94%)")]
    if best >= MIN_LEARNED_SUCCESS:
        checks.append(
            Check("cosine_minus_fixed_success", d_sched, ">= 0", paper="FrozenLake cosine 87.94 vs fixed 82.37")
        )
    if "w_1" in evs and "w_4" in evs:
        d_w = evs["w_4"].success_deep - evs["w_1"].success_deep
        metrics["w4_minus_w1_success_deep"] = d_w
        if best >= MIN_LEARNED_SUCCESS:
            checks.append(Check("w4_minus_w1_success_deep", d_w, ">= 0", paper="w = 4 best"))
    fig, ax = new_figure("Ablations: success rate", "variant", "success")
    ax.bar(range(len(rows)), [float(r["success"]) for r in rows])  # type: ignore[arg-type]
    ax.set_xticks(range(len(rows)), [str(r["variant"]) for r in rows], rotation=45, fontsize=7)
    drift_rows, fig_drift = _thought_drift(tr.spec_policy, nets["cosine"], cfg, tr.test[: cfg.n_drift], r_drift,
                                           metrics)
    return Outcome(metrics=metrics, checks=checks, tables={"variants": rows, "drift": drift_rows},
                   figures={"ablations": fig, "thought_drift": fig_drift})


def _thought_drift(policy: torch.nn.Module, flow: FlowUpdater, cfg: AblationConfig, maps: list,
                   rng: np.random.Generator, metrics: dict[str, float]) -> tuple[list[dict], Figure]:
    """Thoughts along the expert's own path (forced moves), per hop and guidance scale w.

    Each hop's thought is generated from the previous generated one, so errors compound; replaying the expert
    path takes the policy out of it. Per hop: agent-cell accuracy and mean absolute pixel error against the
    true render.
    """
    rows: list[dict] = []
    fig, ax = new_figure("Thought drift along the expert path (SpecFlow)", "hop", "agent-cell accuracy")
    for w, r in zip(cfg.w_values, spawn(rng, len(cfg.w_values)), strict=True):
        reasoner = SpecFlowReasoner(policy, FlowUpdater(flow.net, "spectral", n_steps=cfg.n_ode_steps, w=w))  # type: ignore[arg-type]
        ok: dict[int, list[bool]] = {}
        err: dict[int, list[float]] = {}
        for m, moves in maps:
            ep = reasoner.solve(m, r, len(moves), forced=moves, keep_thoughts=True)
            truth = expert_renders(m, moves)[0]
            for hop in range(1, len(ep.thoughts)):
                ok.setdefault(hop, []).append(bool(ep.agent_ok[hop]))
                err.setdefault(hop, []).append(float(np.abs(ep.thoughts[hop] - truth[hop]).mean()))
        hops = sorted(ok)
        for hop in hops:
            rows.append({"w": w, "hop": hop, "n_maps": len(ok[hop]), "agent_cell_acc": float(np.mean(ok[hop])),
                         "pixel_abs_err": float(np.mean(err[hop]))})
        for hop in (1, 4, 8):
            if hop in ok:
                metrics[f"drift_w{w:g}_agent_acc_hop{hop}"] = float(np.mean(ok[hop]))
                metrics[f"drift_w{w:g}_pixel_err_hop{hop}"] = float(np.mean(err[hop]))
        ax.plot(hops, [float(np.mean(ok[h])) for h in hops], "o-", label=f"w = {w:g}")
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    return rows, fig
