"""Registered experiments of SpecFlow (brief criteria 1-6)."""

from __future__ import annotations

import dataclasses
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
from icml2026.core.loaders import check_model_path
from icml2026.core.plotting import new_figure

from .baselines import MVoTReasoner, TextOnlyReasoner
from .costs import CostCurve, measure_costs
from .data import FrozenLakeMaps, expert_renders
from .flow import FlowUpdater, PerfectDenoiser, VelocityNet, guided_velocity, seeded_init
from .reasoners import Policy, SpecFlowReasoner, build_policy, load_backbone_policy
from .spectral import block_dct, block_idct, dct_matrix, frequency_mask, keep_count, to_workspace
from .training import (
    Evaluation,
    evaluate,
    expert_episodes,
    perfect_denoiser_decoding,
    train_policy,
    train_velocity,
)

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
    "reduces to the conditional (w = 1) and unconditional (w = 0) velocity; with a perfect denoiser the sampler "
    "decodes every thought as the exact workspace does, for every schedule and layout.",
    presets={"quick": TransformsConfig(), "full": TransformsConfig(n_maps=500)},
    no_preconditions="exact algebra on renders and on a perfect denoiser: nothing is learned, so no setup can "
    "fail to express the claims",
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
    # Issue 63: the sampler with a perfect denoiser (a net returning the true X_1) on every expert transition, for
    # every schedule and layout: any error left is the sampler's (before the fix, fixed + square decoded 0%)
    eps = expert_episodes(gen.batch(min(cfg.n_maps, 50), rng))
    denoiser: dict[str, float] = {}
    ceiling = float("nan")
    for s in ("cosine", "linear", "fixed"):
        for lay in ("square", "zigzag"):
            up = FlowUpdater(PerfectDenoiser(), "spectral", n_steps=5, w=4.0, schedule=s, layout=lay,  # type: ignore[arg-type]
                             min_keep=cfg.min_keep, max_keep=cfg.max_keep, fixed_keep=cfg.fixed_keep,
                             ws_keep=cfg.ws_keep)
            res = perfect_denoiser_decoding(up, eps, g)
            denoiser[f"denoiser_{s}_{lay}_max_abs_err"] = res.max_abs_err
            denoiser[f"denoiser_{s}_{lay}_agent_acc"] = res.agent_acc
            ceiling = res.exact_agent_acc
    metrics = {
        "exact_workspace_agent_acc": ceiling,
        **denoiser,
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
    # float32 round-off of 5 Euler steps and two block transforms is ~3e-7; a coefficient left with noise is >= 1e-2
    checks += [Check(k, v, "< 1e-4") for k, v in denoiser.items() if k.endswith("_max_abs_err")]
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
#: paper's FrozenLake success is 87.94%). Fixed before any run of this rule (2026-12-03; quick runs then measured
#: 0.5-2%); since issue 63 it is the bar of the preconditions that every policy, reading true thoughts, passes.
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
    no_preconditions="exact counts of tensor shapes, cache bytes and FLOPs, which do not depend on the weights "
    "(nothing is learned)",
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
#: The paper's effect sizes the planted controls build (success-rate points / 100), and the nulls' distance
#: beyond each claim's margin. SpecFlow vs VoCoT on VSR: 70.14 vs 68.88; SpecFlow vs the text-only latent
#: reasoner PCCoT on V*: 61.28 vs 44.40 (the smaller of its two text-only gaps; Heima on VSR: 18.45); the
#: FrozenLake schedule ablation: cosine 87.94 vs fixed 82.37 (the brief gives no number for the w sweep, so its
#: controls reuse this ablation gap).
EFFECT_VS_MVOT = 0.7014 - 0.6888
EFFECT_VS_TEXT = 0.6128 - 0.4440
EFFECT_SCHEDULE = 0.8794 - 0.8237
#: the non-inferiority margin of "SpecFlow >= MVoT - 5 points" (brief, criterion 5)
MVOT_MARGIN = 0.05


@config
class HeadlineConfig:
    n_train: int = param(1000, 4, 20000, help="expert episodes for training; brief: 20k")
    n_test: int = param(100, 1, 2000, help="test maps; brief: 500")
    policy_steps: int = param(400, 1, 50000, help="policy optimiser steps")
    flow_steps: int = param(500, 1, 50000, help="velocity-net optimiser steps")
    batch_size: int = param(128, 1, 512, help="expert actions per policy step")
    flow_batch_size: int = param(64, 1, 1024, help="transitions per velocity-net step")
    lr_policy: float = param(3e-3, 0.0, 0.1, lo_open=True)
    lr_flow: float = param(3e-3, 0.0, 0.1, lo_open=True)
    n_layers: int = param(2, 1, 8, help="brief: 4")
    d_model: int = param(64, 16, 512, help="brief: 192")
    n_heads: int = param(2, 1, 16, help="brief: 4")
    flow_width: int = param(48, 8, 128)
    n_ode_steps: int = param(5, 1, 16, help="paper: T = 5")
    w: float = param(4.0, 0.0, 10.0, help="paper's best w = 4")
    p_drop: float = param(0.1, 0.0, 1.0, help="CFG condition dropout; paper: 0.1")
    size: int = param(4, 2, 16, help="map side in cells (even: the 4-px-per-cell render must be whole 8x8 blocks); "
                      "brief: 8")
    hole_density: float = param(0.2, 0.0, 0.6, help="brief: 0.2")
    max_depth: int = param(6, 2, 64, help="longest expert path kept; brief: 14")
    deep_depth: int = param(4, 2, 64, help="maps with H >= this count as deep; brief: 8")
    n_denoiser_maps: int = param(50, 1, 2000, help="test maps whose expert transitions check the sampler")
    model: str = param("", help="a Hugging Face causal LM folder or .gguf file for the policies ('' = a Llama "
                       "built from n_layers / d_model / n_heads)")
    model_dtype: str = param("float32", choices=("float32", "bfloat16"), help="dtype of the loaded model")
    grad_accum: int = param(1, 1, 1024, help="micro-batches per policy optimiser step")
    control: str = param("none", choices=("none", "planted", "null"),
                         help="replace the compared arms by a control: 'planted' = the first arm re-evaluated on a "
                         "fresh stream with the paper's effect added by construction, 'null' = with the claim "
                         "made false by construction (the comparisons' power and false-positive rate)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model = {self.d_model}: must be a multiple of n_heads ({self.n_heads})")
        if self.size % 2:
            raise ValueError(f"size = {self.size}: must be even (the render, 4 px per cell, is cut in 8x8 blocks)")
        if self.max_depth > self.size * self.size:
            raise ValueError(f"max_depth = {self.max_depth}: must be <= size * size ({self.size * self.size})")
        if self.deep_depth > self.max_depth:
            raise ValueError(f"deep_depth = {self.deep_depth}: must be <= max_depth ({self.max_depth})")
        if self.model:
            check_model_path(self.model, key="model", kinds=("hf", "gguf"))


_C = TypeVar("_C", bound="HeadlineConfig")


# The full presets at the brief's scale (8x8 maps, depth 2..14, 20k training episodes, 500 test maps, policy
# ~5 min, each velocity net ~8 min on one core). Deviation: the policy is 2 layers, d = 64 (the brief: 4 layers,
# d = 192). In the brief's 5 minutes the larger policy gets ~1400 steps; measured with the true renders as thoughts
# (200 test maps, one seed): 4 layers d = 192 after 2000 steps solved 15.5%, 4 layers d = 128 after 3000 steps
# 19.5%, 2 layers d = 64 after 8000 steps 56% (66% as the Llama used now; 4 layers d = 64: 56.5%, 1.7x the time).
# The cost measurements (bounded_cost, the benchmark) keep the brief's size.
def _full(cls: type[_C]) -> _C:
    return cls(n_train=20000, n_test=500, policy_steps=8000, flow_steps=8000, batch_size=64, flow_batch_size=128,
               n_layers=2, d_model=64,
               n_heads=2, lr_policy=3e-3, lr_flow=3e-3, size=8, max_depth=14, deep_depth=8, n_denoiser_maps=100)


# Deviation (quick): 4x4 maps (16x16 renders, 4 workspace tokens), depth 2..6, deep = H >= 4, 400 policy steps
# of 128 actions. At the brief's 8x8 maps a quick-sized policy solved 1-2% of the maps even with true thoughts
# (the earlier quick runs), so no comparison could be read off it. Sized on 2026-12-07 (one seed, 100 test maps,
# before any run of the registered experiment): text-only 0.42, SpecFlow with the exact workspace 0.78,
# MVoT-oracle 0.79, against the bar MIN_LEARNED_SUCCESS = 0.2 kept from before.
_SMOKE = dict(n_train=8, n_test=3, policy_steps=2, flow_steps=2, batch_size=4, flow_batch_size=8, n_layers=1,
              d_model=16, n_heads=2, flow_width=8, n_ode_steps=2, n_denoiser_maps=3)


@dataclass
class _Trained:
    spec_policy: Policy
    spec_flow: FlowUpdater
    mvot_policy: Policy | None
    pixel_flow: FlowUpdater | None
    text_policy: Policy | None
    test: list
    policy_loss: dict[str, float]
    flow_loss: dict[str, float]
    n_blocks: int


def _flow(cfg: HeadlineConfig, space: str, g: torch.Generator, schedule: str = "cosine") -> FlowUpdater:
    net = seeded_init(lambda: VelocityNet(width=cfg.flow_width), g).to(cfg.device)  # weights drawn on the CPU
    assert isinstance(net, VelocityNet)
    return FlowUpdater(net, space, n_steps=cfg.n_ode_steps, w=cfg.w, schedule=schedule)  # type: ignore[arg-type]


def _maps(cfg: HeadlineConfig) -> FrozenLakeMaps:
    return FrozenLakeMaps(cfg.size, cfg.hole_density, max_depth=cfg.max_depth)


def _policy(cfg: HeadlineConfig, visual_dim: int, n_blocks: int, max_ctx: int, g: torch.Generator,
            visual_input: str) -> Policy:
    """A freshly built Llama policy, or (``cfg.model``) one on the user's causal LM."""
    if cfg.model:
        return load_backbone_policy(cfg.model, visual_dim, n_blocks, g, visual_input,  # type: ignore[arg-type]
                                    dtype=cfg.model_dtype, device=cfg.device)
    return build_policy(visual_dim, n_blocks, cfg.n_layers, cfg.d_model, cfg.n_heads, max_ctx, g,
                        visual_input=visual_input).to(cfg.device)  # type: ignore[arg-type]


def _train(cfg: HeadlineConfig, rng: np.random.Generator, baselines: bool) -> _Trained:
    r_data, r_test, r_model = spawn(rng, 3)
    gen = _maps(cfg)
    train = expert_episodes(gen.batch(cfg.n_train, r_data))
    test = gen.batch(cfg.n_test, r_test)
    g = torch_generator(r_model)
    n_blocks = (4 * cfg.size // 8) ** 2  # one workspace token (or 8x8 pixel patch) per 8x8 block
    ctx_mvot = 1 + (cfg.max_depth + 3) * (n_blocks + 1)  # every hop appends an action and a thought
    ctx_text = 1 + n_blocks + cfg.max_depth + 3
    policies = {"specflow": _policy(cfg, 16, n_blocks, ctx_text, g, "dct")}
    if baselines:
        policies["mvot"] = _policy(cfg, 64, n_blocks, ctx_mvot, g, "pixel")
        policies["text"] = _policy(cfg, 64, n_blocks, ctx_text, g, "pixel")
    losses = {k: train_policy(p, k, train, cfg.policy_steps, cfg.batch_size, cfg.lr_policy, g,
                              tokens_per_thought=n_blocks, grad_accum=cfg.grad_accum)
              for k, p in policies.items()}
    spec_flow = _flow(cfg, "spectral", g)
    flow_loss = {"spectral": train_velocity(spec_flow, train, cfg.flow_steps, cfg.flow_batch_size, cfg.lr_flow, g,
                                            cfg.p_drop)}
    pixel_flow = None
    if baselines:
        pixel_flow = _flow(cfg, "pixel", g)
        flow_loss["pixel"] = train_velocity(pixel_flow, train, cfg.flow_steps, cfg.flow_batch_size, cfg.lr_flow, g,
                                            cfg.p_drop)
    tail = max(1, min(20, cfg.policy_steps // 5))
    return _Trained(policies["specflow"], spec_flow, policies.get("mvot"), pixel_flow, policies.get("text"), test,
                    {k: float(np.mean(v[-tail:])) for k, v in losses.items()},
                    {k: float(np.mean(v[-max(1, min(20, cfg.flow_steps // 5)):])) for k, v in flow_loss.items()},
                    n_blocks)


def _reconstruction_figure(reasoner: SpecFlowReasoner, test: list, rng: np.random.Generator):
    """Decoded workspace per hop (top) beside the true render (bottom) on the deepest test map."""
    m, moves = max(test, key=lambda mv: len(mv[1]))
    ep = reasoner.solve(m, rng, len(moves), forced=moves, keep_thoughts=True)
    truth = expert_renders(m, moves)[0]
    n = min(len(ep.thoughts), 10)
    side = truth.shape[-1] + 2
    pad = lambda a: np.pad(np.clip(a, 0, 1), 1, constant_values=1.0)  # noqa: E731
    top = np.concatenate([pad(ep.thoughts[i]) for i in range(n)], axis=1)
    bottom = np.concatenate([pad(truth[i]) for i in range(n)], axis=1)
    fig, ax = new_figure("SpecFlow workspace per hop (top: decoded, bottom: true render)", "hop", "")
    ax.imshow(np.concatenate([top, bottom], axis=0), cmap="gray", vmin=0, vmax=1)
    ax.set_xticks([side // 2 + side * i for i in range(n)], [str(i) for i in range(n)])
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


def _outcomes(ev: Evaluation, test: list, deep_depth: int | None = None) -> np.ndarray:
    """Per-map success (bool array), on every test map or on those with H >= ``deep_depth``."""
    return np.array([ep.success for ep, (_, moves) in zip(ev.episodes, test, strict=True)
                     if deep_depth is None or len(moves) >= deep_depth], dtype=bool)


def _shifted(outcomes: np.ndarray, shift: float, rng: np.random.Generator) -> np.ndarray:
    """``outcomes`` with round(|shift| n) maps flipped at random: failures to successes (shift > 0) or back."""
    out = outcomes.copy()
    pool = np.flatnonzero(out == (shift < 0))
    k = min(int(round(abs(shift) * len(out))), len(pool))
    out[rng.choice(pool, size=k, replace=False)] = shift > 0
    return out


def _control_difference(first: np.ndarray, fresh: np.ndarray, shift: float, rng: np.random.Generator) -> float:
    """The difference a control run checks: the first arm re-evaluated on a fresh stream, shifted by construction
    (``shift``: the paper's effect, planted, or the claim made false, null), minus the first arm itself.

    Both arms are one method, so what remains besides the shift is the evaluation noise of that method. A
    negative shift removes successes from the fresh arm; when it holds fewer than round(|shift| n) of them (an
    arm that solves almost none of the deep maps), the reference arm gains that many instead, so that the null
    is false by the same distance.
    # Deviation: controls built from one arm evaluated twice (card, deviation 10), not from two trained methods.
    """
    if len(first) == 0:
        return float("nan")
    k = int(round(abs(shift) * len(first)))
    if shift < 0 and int(fresh.sum()) < k:
        return float(fresh.mean() - _shifted(first, -shift, rng).mean())
    return float(_shifted(fresh, shift, rng).mean() - first.mean())


def _denoiser_checks(flows: dict[str, FlowUpdater], test: list, n_maps: int, g: torch.Generator,
                     metrics: dict[str, float], size: int) -> list[Check]:
    """Preconditions: with a perfect denoiser each sampler decodes what the exact workspace decodes."""
    eps = expert_episodes(test[:n_maps])
    checks = []
    for label, up in flows.items():
        res = perfect_denoiser_decoding(up, eps, g, size)
        metrics[f"denoiser_{label}_max_abs_err"] = res.max_abs_err
        metrics[f"denoiser_{label}_agent_acc"] = res.agent_acc
        metrics[f"exact_{up.space}_agent_acc"] = res.exact_agent_acc
        # float32 round-off of 5 Euler steps and two block transforms is ~3e-7; a lost coefficient is >= 1e-2
        checks.append(Check(f"denoiser_{label}_max_abs_err", res.max_abs_err, "< 1e-4", role="precondition",
                            paper="(sampler keeps what the workspace holds)"))
    return checks


@experiment(
    "specflow.headline",
    claim="On FrozenLake maps SpecFlow (one block-DCT workspace) succeeds within 5 points of MVoT with "
    "pixel-space visual thoughts appended to the context, and at least as often as text-only CoT.",
    presets={
        "smoke": HeadlineConfig(**_SMOKE),  # type: ignore[arg-type]
        "quick": HeadlineConfig(),
        "planted": HeadlineConfig(control="planted"),
        "null": HeadlineConfig(control="null"),
        # Deviation: a 2-layer d = 64 policy instead of the brief's 4 layers, d = 192 (see _full)
        "full": _full(HeadlineConfig),
    },
)
def headline(cfg: HeadlineConfig, rng: np.random.Generator) -> Outcome:
    resolve_device(cfg.device)  # a device this machine lacks stops the run here
    r_train, r_eval, r_fig, r_ctl = spawn(rng, 4)
    # a control run compares SpecFlow with itself: the baselines are not trained
    control = cfg.control != "none"
    tr = _train(cfg, r_train, baselines=not control)
    e = spawn(r_eval, 7)
    tpt = tr.n_blocks
    spec_r = SpecFlowReasoner(tr.spec_policy, tr.spec_flow)
    evs = {"specflow": evaluate(spec_r, tr.test, e[0], cfg.deep_depth, "SpecFlow"),
           "specflow_exact": evaluate(SpecFlowReasoner(tr.spec_policy, None), tr.test, e[5], cfg.deep_depth,
                                      "SpecFlow policy, exact workspace")}
    if not control:
        assert tr.mvot_policy is not None and tr.text_policy is not None and tr.pixel_flow is not None
        diff_r = SpecFlowReasoner(tr.spec_policy, FlowUpdater(tr.spec_flow.net, "spectral", n_steps=cfg.n_ode_steps,
                                                              w=0.0))
        evs["diffthinker"] = evaluate(diff_r, tr.test, e[1], cfg.deep_depth, "DiffThinker-like (w = 0)")
        evs["mvot"] = evaluate(MVoTReasoner(tr.mvot_policy, tr.pixel_flow, tpt), tr.test, e[2], cfg.deep_depth,
                               "MVoT")
        evs["mvot_oracle"] = evaluate(MVoTReasoner(tr.mvot_policy, None, tpt), tr.test, e[3], cfg.deep_depth,
                                      "MVoT-oracle")
        evs["text"] = evaluate(TextOnlyReasoner(tr.text_policy, tpt), tr.test, e[4], cfg.deep_depth, "text-only")
    metrics: dict[str, float] = {}
    for k, ev in evs.items():
        _eval_metrics(k, ev, metrics)
    for k, v in tr.policy_loss.items():
        metrics[f"policy_loss_{k}"] = v
    for k, v in tr.flow_loss.items():
        metrics[f"flow_loss_{k}"] = v
    if control:
        # Controls: SpecFlow re-evaluated on a fresh stream, shifted by construction, against SpecFlow itself.
        fresh = _outcomes(evaluate(spec_r, tr.test, e[6], cfg.deep_depth, "SpecFlow (control)"), tr.test)
        first = _outcomes(evs["specflow"], tr.test)
        c1, c2 = spawn(r_ctl, 2)
        planted = cfg.control == "planted"
        d_mvot = _control_difference(first, fresh, EFFECT_VS_MVOT if planted else -2 * MVOT_MARGIN, c1)
        d_text = _control_difference(first, fresh, EFFECT_VS_TEXT if planted else -EFFECT_VS_TEXT, c2)
        metrics["control_specflow_minus_mvot_success"] = d_mvot
        metrics["control_specflow_minus_text_success"] = d_text
    else:
        d_mvot = evs["specflow"].success - evs["mvot"].success
        d_text = evs["specflow"].success - evs["text"].success
        metrics["specflow_minus_mvot_success"] = d_mvot
        metrics["specflow_minus_text_success"] = d_text
    # Preconditions (issue 63): the sampler keeps what the workspace holds (perfect denoiser, both spaces), and
    # every policy solves the maps when it reads true thoughts (text-only: it has none) above a bar fixed before
    # the run. Below the bar every method succeeds on a handful of maps and a comparison is decided by one episode.
    flows = {"spectral": tr.spec_flow} if tr.pixel_flow is None else {"spectral": tr.spec_flow,
                                                                       "pixel": tr.pixel_flow}
    checks = _denoiser_checks(flows, tr.test, cfg.n_denoiser_maps, torch_generator(r_fig), metrics, cfg.size)
    for k, label in (("specflow_exact", "SpecFlow policy on the exact workspace"), ("mvot_oracle", "MVoT-oracle"),
                     ("text", "text-only CoT")):
        if k in evs:
            checks.append(Check(f"{k}_success", evs[k].success, f">= {MIN_LEARNED_SUCCESS}", role="precondition",
                                paper=f"({label}; paper's FrozenLake success 87.94%)"))
    checks += [
        Check("specflow_minus_mvot_success", d_mvot, f">= {-MVOT_MARGIN}", comparative=True,
              paper="SpecFlow 70.14 vs VoCoT 68.88 acc % (VSR)"),
        Check("specflow_minus_text_success", d_text, ">= 0", comparative=True,
              paper="SpecFlow 61.28 vs PCCoT 44.40 acc % (V*)"),
    ]
    fig, ax = new_figure("Agent-cell accuracy of the visual thought read at each hop", "hop",
                         "accuracy (brightest-dot cell)")
    for k, label in (("specflow", "SpecFlow (DCT workspace)"), ("mvot", "MVoT (pixel thoughts)"),
                     ("diffthinker", "SpecFlow, w = 0")):
        if k not in evs:
            continue
        acc = evs[k].agent_acc_per_hop
        ax.plot(np.arange(1, len(acc) + 1), acc, "o-", label=label)
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    fig_s, ax = new_figure("Success rate", "method", "success")
    names = list(evs)
    ax.bar(range(len(names)), [evs[k].success for k in names])
    ax.set_xticks(range(len(names)), names, fontsize=7)
    rows = [{"method": k, "success": ev.success, "success_deep": ev.success_deep, "n_deep": ev.n_deep,
             "fell": ev.fell, "agent_cell_acc": ev.agent_acc if ev.agent_acc is not None else float("nan")}
            for k, ev in evs.items()]
    return Outcome(metrics=metrics, checks=checks, tables={"methods": rows},
                   figures={"agent_acc_per_hop": fig, "success": fig_s,
                            "workspace_per_hop": _reconstruction_figure(spec_r, tr.test, r_fig)})


@config
class AblationConfig(HeadlineConfig):
    w_values: tuple[float, ...] = param((1.0, 4.0), 0.0, 10.0, min_len=1, max_len=8,
                                        help="CFG scales; paper: 1, 2, 4, 6 (full)")
    ode_steps: tuple[int, ...] = param((1, 8), 1, 16, min_len=1, max_len=8, help="paper: 1, 3, 5, 8 (full)")
    n_drift: int = param(50, 1, 2000, help="test maps whose expert path is replayed to measure thought drift")


def _full_ablations() -> AblationConfig:
    return dataclasses.replace(_full(AblationConfig), w_values=(1.0, 2.0, 4.0, 6.0), ode_steps=(1, 3, 5, 8),
                               n_drift=100)


@experiment(
    "specflow.ablations",
    claim="The cosine mask schedule succeeds at least as often as the fixed low-frequency mask, and guidance "
    "w = 4 at least as often as w = 1 on deep maps (soft claims; ODE steps and w swept).",
    presets={
        "smoke": AblationConfig(**_SMOKE, w_values=(1.0, 4.0), ode_steps=(1, 2)),  # type: ignore[arg-type]
        "quick": AblationConfig(),
        "planted": AblationConfig(control="planted"),
        "null": AblationConfig(control="null"),
        "full": _full_ablations(),
    },
)
def ablations(cfg: AblationConfig, rng: np.random.Generator) -> Outcome:
    resolve_device(cfg.device)  # a device this machine lacks stops the run here
    r_train, r_flow, r_eval, r_drift, r_ctl = spawn(rng, 5)
    control = cfg.control != "none"
    tr = _train(cfg, r_train, baselines=False)
    g = torch_generator(r_flow)
    nets = {"cosine": tr.spec_flow}
    if not control:  # a control run compares the cosine arm with itself: the other schedules are not trained
        train = expert_episodes(_maps(cfg).batch(cfg.n_train, spawn(r_train, 1)[0]))
        for s in ("linear", "fixed"):
            nets[s] = _flow(cfg, "spectral", g, schedule=s)
            train_velocity(nets[s], train, cfg.flow_steps, cfg.flow_batch_size, cfg.lr_flow, g, cfg.p_drop)
    metrics: dict[str, float] = {}
    rows: list[dict] = []

    def run(label: str, up: FlowUpdater | None, r: np.random.Generator) -> Evaluation:
        ev = evaluate(SpecFlowReasoner(tr.spec_policy, up), tr.test, r, cfg.deep_depth, label)
        _eval_metrics(label, ev, metrics)
        if up is not None:
            rows.append({"variant": label, "schedule": up.schedule, "w": up.w, "ode_steps": up.n_steps,
                         "success": ev.success, "success_deep": ev.success_deep, "n_deep": ev.n_deep,
                         "agent_cell_acc": ev.agent_acc if ev.agent_acc is not None else float("nan")})
        return ev

    def updater(schedule: str, w: float, n_steps: int) -> FlowUpdater:
        return FlowUpdater(nets[schedule].net, "spectral", n_steps=n_steps, w=w, schedule=schedule)  # type: ignore[arg-type]

    variants = [(f"schedule_{s}", updater(s, cfg.w, cfg.n_ode_steps)) for s in nets]
    if not control:
        variants += [(f"w_{w:g}", updater("cosine", w, cfg.n_ode_steps)) for w in cfg.w_values]
        variants += [(f"steps_{n}", updater("cosine", cfg.w, n)) for n in cfg.ode_steps]
    # one evaluation stream per variant, the same test maps for all; a variant equal to an earlier one (w = 4
    # and T = 5 are the cosine run's own settings) reuses its evaluation
    evs: dict[str, Evaluation] = {}
    done: dict[tuple, Evaluation] = {}
    streams = spawn(r_eval, 16 + 3)  # at most 3 + 8 + 8 variants share the first 16 (max_len of the sweeps: 8)
    for (label, up), r in zip(variants, streams, strict=False):
        key = (up.schedule, up.w, up.n_steps)
        if key in done:
            evs[label] = done[key]
            _eval_metrics(label, done[key], metrics)
            rows.append({**next(row for row in rows if (row["schedule"], row["w"], row["ode_steps"]) == key),
                         "variant": label})
        else:
            evs[label] = done[key] = run(label, up, r)
    exact = run("specflow_exact", None, streams[-3])
    checks = []
    if control:
        # Controls: the first arm of each claim re-evaluated on a fresh stream, shifted by construction, against
        # that arm itself (cosine for the schedule claim, w = 4 for the guidance claim, on deep maps).
        shift = EFFECT_SCHEDULE if cfg.control == "planted" else -EFFECT_SCHEDULE
        c1, c2 = spawn(r_ctl, 2)
        cos = evs["schedule_cosine"]
        fresh = evaluate(SpecFlowReasoner(tr.spec_policy, updater("cosine", cfg.w, cfg.n_ode_steps)), tr.test,
                         streams[-2], cfg.deep_depth, "control")
        w4, fresh_w4 = cos, fresh
        if cfg.w != 4.0:
            w4 = run("w_4", updater("cosine", 4.0, cfg.n_ode_steps), streams[0])
            fresh_w4 = evaluate(SpecFlowReasoner(tr.spec_policy, updater("cosine", 4.0, cfg.n_ode_steps)), tr.test,
                                streams[-1], cfg.deep_depth, "control")
        d_sched = _control_difference(_outcomes(cos, tr.test), _outcomes(fresh, tr.test), shift, c1)
        d_w = _control_difference(_outcomes(w4, tr.test, cfg.deep_depth),
                                  _outcomes(fresh_w4, tr.test, cfg.deep_depth), shift, c2)
        metrics["control_cosine_minus_fixed_success"] = d_sched
        metrics["control_w4_minus_w1_success_deep"] = d_w
    else:
        d_sched = evs["schedule_cosine"].success - evs["schedule_fixed"].success
        metrics["cosine_minus_fixed_success"] = d_sched
        d_w = float("nan")
        if "w_1" in evs and "w_4" in evs:
            d_w = evs["w_4"].success_deep - evs["w_1"].success_deep
            metrics["w4_minus_w1_success_deep"] = d_w
    # Preconditions (issue 63): each schedule's sampler keeps what the workspace holds (perfect denoiser), so the
    # schedule comparison is decided by the schedules, not by noise left in X(1); the policy solves the maps
    # when it reads the exact workspace.
    checks += _denoiser_checks({f"schedule_{s}": up for s, up in nets.items()}, tr.test, cfg.n_denoiser_maps,
                               torch_generator(r_drift), metrics, cfg.size)
    checks.append(Check("specflow_exact_success", exact.success, f">= {MIN_LEARNED_SUCCESS}", role="precondition",
                        paper="(SpecFlow policy on the exact workspace; paper's FrozenLake success 87.94%)"))
    checks.append(Check("cosine_minus_fixed_success", d_sched, ">= 0", comparative=True,
                        paper="FrozenLake cosine 87.94 vs fixed 82.37"))
    if control or ("w_1" in evs and "w_4" in evs):
        checks.append(Check("w4_minus_w1_success_deep", d_w, ">= 0", comparative=True, paper="w = 4 best"))
    fig, ax = new_figure("Ablations: success rate", "variant", "success")
    ax.bar(range(len(rows)), [float(r["success"]) for r in rows])
    ax.set_xticks(range(len(rows)), [str(r["variant"]) for r in rows], rotation=45, fontsize=7)
    figures = {"ablations": fig}
    tables: dict[str, list[dict]] = {"variants": rows}
    if not control:
        tables["drift"], figures["thought_drift"] = _thought_drift(tr.spec_policy, nets["cosine"], cfg,
                                                                   tr.test[: cfg.n_drift], r_drift, metrics)
    return Outcome(metrics=metrics, checks=checks, tables=tables, figures=figures)


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
