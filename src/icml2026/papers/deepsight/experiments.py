"""Registered experiments of deepsight: structure (criteria 1-3), world model A/B/C/D (criteria 4-5) and
adaptive CoT E/F (criterion 6), all in the real highway-env simulator.

Data: expert episodes on fixed simulator seeds (train 0.., val 500.., closed loop 1000..), so that the cache
under ``runs/deepsight.cache`` is shared by runs and seeds; the run's seed drives the encoder pre-training,
planner initialisation and training (sub-seeds via ``spawn``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, check_workers, resolve_device
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track
from icml2026.core.sweep import map_in_processes
from icml2026.core.training import fp16_device_problem

CACHE_DIR = Path("runs") / "deepsight.cache"
DATA_SEED = 20260514  # fixed: the long-tail assignment of the fixed data seeds (a benchmark, not a draw)


@config
class DriveConfig:
    """Sizes of one run (brief values in the comments)."""

    n_seeds: int = param(3, 1, 5, help="training seeds for A, B, C (E, F); D uses the first only (brief: 3)")
    n_train: int = param(120, 2, 200, help="training episodes (brief: ~120)")
    n_val: int = param(30, 1, 60, help="validation episodes (brief: 30)")
    episode_steps: int = param(36, 12, 60, help="policy steps (0.5 s) per logged episode (brief: 30-40)")
    long_tail_fraction: float = param(0.3, 0.0, 1.0, help="episodes with an injected event (brief: ~30%)")
    metres_per_px: float = param(2.0, 1.0, 4.0, help="BEV resolution; 64 px at 2 m/px = 128 m")
    enc_steps: int = param(300, 1, 2000, help="masked-image-modelling steps of the BEV encoder")
    train_steps: int = param(600, 1, 5000, help="planner optimisation steps")
    batch: int = param(32, 2, 128, help="planner batch size")
    lr: float = param(1e-3, 1e-5, 1e-2, help="AdamW peak learning rate")
    precision: Literal["fp32", "bf16", "fp16"] = param(
        "fp32", choices=("fp32", "bf16", "fp16"),
        help="planner training precision: fp32, or bf16 / fp16 mixed precision (autocast; fp16 needs a GPU)")
    grad_accum: int = param(1, 1, 128, help="micro-batches per planner step: the batch is split into this many "
                            "equal parts whose gradients are averaged (memory only; the step still sees `batch`)")
    d_model: int = param(128, 16, 256, help="planner width (brief: 128)")
    n_layers: int = param(4, 1, 8, help="planner layers (brief: 4)")
    mse_weight: float = param(2.0, 0.0, 10.0, help="weight of the latent MSE (paper: 2)")
    n_eval: int = param(50, 1, 100, help="closed-loop episodes, seeds 1000.. (brief: 50)")
    eval_steps: int = param(30, 12, 60, help="policy steps per closed-loop episode")
    n_boot: int = param(1000, 10, 10000, help="bootstrap resamples for the 95% intervals")
    cache: Literal["on", "off"] = "on"
    device: str = param("cpu", help="torch device of the encoder and planners: cpu, cuda, cuda:<n>, mps (--device)")
    workers: int = param(1, 1, 64, help="processes running the sub-seeds side by side (CPU only; same results)")
    planner: str = param("", help="a Hugging Face causal LM folder (Qwen2/Llama class) as the planner's backbone; "
                         "empty: a Qwen2 decoder built here from d_model / n_layers")
    encoder: str = param("", help="a pretrained DINOv3-class ViT folder as the frozen BEV encoder (resize + "
                         "ImageNet normalisation); empty: a tiny DINOv3 pre-trained here by masked image modelling")
    variant_d: Literal["on", "off"] = param("on", choices=("on", "off"),
                                            help="train the autoregressive baseline D on the first sub-seed")
    control: Literal["none", "planted", "null"] = param(
        "none", choices=("none", "planted", "null"),
        help="world_model's comparative checks on a control: 'planted' = C is the no-supervision arm C0 "
        "(another init) with its waypoint errors cut by 10 %; 'null' = C is that arm unchanged, and B is it "
        "with errors cut by 1/1.1 (C 10 % worse than B)")
    complex_share: float = param(0.5, 0.0, 0.9, help="adaptive_cot: share of complex frames in each training "
                                 "batch (oversampling the long tail; 0: uniform batches)")
    val_long_tail_fraction: float = param(1.0, 0.0, 1.0, help="adaptive_cot: long-tail share of the validation "
                                          "episodes it draws its balanced evaluation split from")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        check_workers(self.workers, self.device)
        if self.batch % self.grad_accum:
            raise ValueError(f"grad_accum = {self.grad_accum}: must divide batch = {self.batch} into equal "
                             "micro-batches")
        problem = fp16_device_problem(self.precision, self.device)
        if problem:
            raise ValueError(problem)
        from icml2026.core.loaders import check_model_path

        if self.planner:
            check_model_path(self.planner, key="planner", kinds=("hf",))
        if self.encoder:
            check_model_path(self.encoder, key="encoder", kinds=("hf",))


def _smoke() -> DriveConfig:
    return DriveConfig(
        n_seeds=1,
        n_train=3,
        n_val=1,
        episode_steps=14,
        enc_steps=2,
        train_steps=20,  # the brief's CI smoke: 4 episodes (3 + 1), 20 optimisation steps
        batch=8,
        d_model=32,
        n_layers=1,
        n_eval=1,
        eval_steps=12,
        n_boot=50,
        cache="off",
        variant_d="off",
    )


def _quick() -> DriveConfig:
    # one training sub-seed per run on one process (the headline is over runner seeds 0-2); D is left to the
    # full preset and the closed loop is a 2-episode smoke here (it is reported, never checked)
    return DriveConfig(
        n_seeds=1,
        n_train=16,
        n_val=4,
        episode_steps=30,
        enc_steps=60,
        train_steps=150,
        batch=16,
        d_model=48,
        n_layers=2,
        n_eval=2,
        eval_steps=12,
        n_boot=300,
        variant_d="off",
    )


def _full() -> DriveConfig:
    # the brief's sizes; one process per training sub-seed (3 on 2 cores: ~41 CPU-minutes per experiment)
    return DriveConfig(workers=3)


def _quick_cot() -> DriveConfig:
    # adaptive_cot: every training and validation episode carries a long-tail event (complex frames are ~5 % of
    # the frames of such episodes), 12 validation episodes for a balanced split with enough complex frames;
    # 4 closed-loop episodes (one long-tail, the brief's 30 %) for the token count
    return dataclasses.replace(_quick(), long_tail_fraction=1.0, n_val=12, n_eval=4)


def _full_cot() -> DriveConfig:
    return dataclasses.replace(_full(), long_tail_fraction=1.0, n_val=60)


@dataclass
class _Prepared:
    train: Any
    val: Any
    experts: dict[int, Any]
    eval_seeds: list[int]


def _prepare(cfg: DriveConfig, val_long_tail_fraction: float | None = None) -> _Prepared:
    """Expert episodes (cached), samples and the closed-loop experts; the validation episodes carry events in
    ``val_long_tail_fraction`` of the episodes (default: the training fraction)."""
    from .closed_loop import eval_event
    from .data import cached_episodes, collect_episodes, simulate_episode
    from .training import build_samples

    cache = CACHE_DIR if cfg.cache == "on" else None

    def eps(n: int, base: int, frac: float) -> list[Any]:
        key = {
            "what": "expert",
            "n": n,
            "base": base,
            "steps": cfg.episode_steps,
            "frac": frac,
            "data_seed": DATA_SEED,
        }
        return cached_episodes(
            key,
            lambda: collect_episodes(
                n,
                np.random.default_rng(DATA_SEED + base),
                frac,
                n_steps=cfg.episode_steps,
                seeds=list(range(base, base + n)),
            ),
            cache,
        )

    train = eps(cfg.n_train, 0, cfg.long_tail_fraction)
    vf = cfg.long_tail_fraction if val_long_tail_fraction is None else val_long_tail_fraction
    val = eps(cfg.n_val, 500, vf)
    eval_seeds = list(range(1000, 1000 + cfg.n_eval))
    key = {"what": "closed-loop expert", "seeds": eval_seeds, "steps": cfg.eval_steps}
    ref = cached_episodes(
        key,
        lambda: [
            simulate_episode(s, cfg.eval_steps, eval_event(s), np.random.default_rng(s))
            for s in track(eval_seeds, "deepsight closed-loop expert episodes", total=len(eval_seeds))
        ],
        cache,
    )
    return _Prepared(
        build_samples(train, metres_per_px=cfg.metres_per_px),
        build_samples(val, metres_per_px=cfg.metres_per_px, static_world=True),
        dict(zip(eval_seeds, ref, strict=True)),
        eval_seeds,
    )


@dataclass
class _Latents:
    train: np.ndarray
    val: np.ndarray
    val_static: np.ndarray  # latents of the frozen-world / constant-velocity-ego baseline frames
    patches: int = 16  # P of the encoder that made them
    registers: int = 2  # R (masked out of the targets)
    d_latent: int = 64


def _encode(cfg: DriveConfig, prep: _Prepared, rng: np.random.Generator, device: Any = "cpu") -> _Latents:
    """The frozen encoder's latents (standardised with train mean / std): a pretrained ViT from
    ``cfg.encoder`` (official preprocessing), else a tiny DINOv3 pre-trained here on training frames."""
    from .training import encode_targets, load_bev_encoder, pretrain_encoder

    enc: Any
    if cfg.encoder:
        enc = load_bev_encoder(cfg.encoder, device)
    else:
        frames = prep.train.bev.reshape(-1, *prep.train.bev.shape[2:])
        enc = pretrain_encoder(frames, rng, n_steps=cfg.enc_steps, device=device)
    z_tr, z_va = encode_targets(enc, prep.train.bev), encode_targets(enc, prep.val.bev)
    z_sw = encode_targets(enc, prep.val.static_world) if prep.val.static_world is not None else z_va
    flat = z_tr.reshape(-1, z_tr.shape[-1])
    # Deviation: targets standardised per channel with the training statistics (paper: raw DINOv3 features)
    mu, sd = flat.mean(0), flat.std(0) + 1e-6
    return _Latents(
        ((z_tr - mu) / sd).astype(np.float32),
        ((z_va - mu) / sd).astype(np.float32),
        ((z_sw - mu) / sd).astype(np.float32),
        patches=int(enc.n_patches),
        registers=int(enc.registers),
        d_latent=int(z_tr.shape[-1]),
    )


def _train(
    cfg: DriveConfig,
    variant: str,
    prep: _Prepared,
    lat: _Latents,
    seed: int,
    device: Any = "cpu",
    *,
    mse_weight: float | None = None,
    label: str = "",
) -> Any:
    from .method import PlannerConfig
    from .training import build_planner, train_planner

    pc = PlannerConfig(
        variant=variant,
        d_model=cfg.d_model,
        n_layers=cfg.n_layers,
        n_heads=4,
        patches=lat.patches,
        registers=lat.registers,
        d_latent=lat.d_latent,
        mse_weight=cfg.mse_weight if mse_weight is None else mse_weight,
        backbone_path=cfg.planner or None,
        label=label,
    )
    r = np.random.default_rng(seed)  # the same stream for every variant of a seed: paired comparisons
    planner = build_planner(pc, r).to(device)  # initialised on the CPU: the same weights on every device
    train_planner(
        planner,
        prep.train,
        lat.train,
        r,
        n_steps=cfg.train_steps,
        batch=cfg.batch,
        lr=cfg.lr,
        cot_mode="long" if variant == "E" else "adaptive",
        complex_share=cfg.complex_share if variant in ("E", "F") else 0.0,
        precision=cfg.precision,
        grad_accum=cfg.grad_accum,
    )
    return planner


def _stats(v: list[float]) -> tuple[float, float, float]:
    a = np.asarray(v, float)
    return float(a.mean()), float(a.min()), float(a.max())


# --------------------------------------------------------------------------------------------------
@config
class StructureConfig:
    """Tiny planners for the structural tests of criteria 1-3."""

    n_samples: int = param(4, 1, 16, help="observations per structural test")
    speed: float = param(
        13.0, 1.0, 15.0, help="ego speed (m/s) of the synthetic straight drive (<= 15: the ego stays in view)"
    )
    metres_per_px: float = param(1.0, 0.5, 4.0, help="BEV resolution of the warping test")
    device: str = param("cpu", help="torch device of the planners: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)


@experiment(
    "deepsight.structure",
    claim="All T x (P+1) BEV latents come from one forward pass (D needs T); registers are out of the MSE and "
    "BEV positions out of the CE; generation starts after <end_bev> and never emits BEV tokens; warped future "
    "frames of a straight drive keep the road static and move the ego by speed x dt.",
    presets={"smoke": StructureConfig(n_samples=2), "quick": StructureConfig(), "full": StructureConfig(n_samples=8)},
    no_preconditions="exact structural properties of untrained planners and of the warp of a synthetic drive: "
    "nothing is learned or sampled that could fail to express them",
)
def structure(cfg: StructureConfig, rng: np.random.Generator) -> Outcome:
    import torch

    from .method import N_TEXT, PlannerConfig
    from .structure import count_backbone_calls, straight_drive_episode, warp_displacements
    from .training import build_planner

    device = resolve_device(cfg.device)
    r_obs, r_c, r_d = spawn(rng, 3)
    kin = torch.as_tensor(r_obs.normal(size=(cfg.n_samples, 15, 28)).astype(np.float32))
    ego = torch.as_tensor(r_obs.normal(size=(cfg.n_samples, 14)).astype(np.float32))
    pc = PlannerConfig(variant="C", d_model=32, n_layers=1, n_heads=4)
    c = build_planner(pc, r_c).to(device)  # CPU inputs are moved by the planner
    d = build_planner(PlannerConfig(variant="D", d_model=32, n_layers=1, n_heads=4), r_d).to(device)
    calls_c = count_backbone_calls(c, lambda: c.predict_latents(_dummy_batch(kin, ego)))
    calls_d = count_backbone_calls(d, lambda: d.predict_latents(_dummy_batch(kin, ego)))
    lat = c.predict_latents(_dummy_batch(kin, ego))
    mask = c.bev_position_mask()
    tpf = pc.tokens_per_frame
    is_register = np.array([1 <= (i % tpf) <= pc.registers for i in range(pc.n_bev)])  # CLS, R registers, P
    registers_in_mse = int(mask.cpu().numpy()[is_register].sum())
    _, labels, bev0, _ = c.sequence(_dummy_batch(kin, ego))
    ce_at_bev = int((labels[:, bev0 : bev0 + pc.n_bev] >= 0).sum())
    _, reasoning, _, _ = c.plan_batch(kin, ego)
    bev_generated = sum(t.startswith("<bev") or t in ("<start_bev>", "<end_bev>") for r in reasoning for t in r)
    # the BEV query ids are distinct learned rows: no two queries share an embedding
    q = c.backbone.embed_tokens.weight[N_TEXT : N_TEXT + pc.n_bev]
    n_distinct = int(torch.unique(q.detach(), dim=0).shape[0])
    ep = straight_drive_episode(cfg.speed)
    disp = warp_displacements(ep, 2, metres_per_px=cfg.metres_per_px)
    expected = np.asarray([cfg.speed * h / cfg.metres_per_px for h in (0.0, 0.5, 1.0, 1.5, 2.0)])
    visible = disp.ego_rows == disp.ego_rows  # NaN rows: the ego left the image
    ego_err = float(np.nanmax(np.abs(disp.ego_rows - expected))) if visible.any() else float("inf")
    metrics = {
        "world_model_passes_C": float(calls_c),
        "world_model_passes_D": float(calls_d),
        "latent_tokens_C": float(lat.shape[1] * lat.shape[2]),
        "mse_positions": float(mask.sum()),
        "register_positions_in_mse": float(registers_in_mse),
        "ce_labels_at_bev": float(ce_at_bev),
        "bev_tokens_generated": float(bev_generated),
        "distinct_bev_queries": float(n_distinct),
        "n_bev_queries": float(pc.n_bev),
        "ego_shift_max_err_px": ego_err,
        "road_marking_shift_max_px": float(disp.road_shift_max),
        "ego_frames_visible": float(visible.sum()),
    }
    checks = [
        # fails if the world model rolled frames out sequentially (as variant D does: T passes)
        Check("world_model_passes_C", calls_c, "== 1", paper="one forward pass for all 5 frames"),
        Check("world_model_passes_D", calls_d, f"== {pc.frames}"),
        Check(
            "latent_tokens_C",
            lat.shape[1] * lat.shape[2],
            f"== {pc.frames * (pc.patches + 1)}",
            paper=None,
        ),
        # fails if the register positions were kept in the MSE mask
        Check("register_positions_in_mse", metrics["register_positions_in_mse"], "== 0", paper=None),
        Check("ce_labels_at_bev", ce_at_bev, "== 0", paper=None),
        Check("bev_tokens_generated", bev_generated, "== 0"),
        # fails if one shared query token were used (Pitfall 2)
        Check("distinct_bev_queries", n_distinct, f"== {pc.n_bev}", paper=None),
        # Deviation (official warp, see card): road markings static, the ego moves by speed x dt (+-1 px)
        Check("ego_shift_max_err_px", ego_err, "<= 1"),
        Check("road_marking_shift_max_px", disp.road_shift_max, "<= 1"),
    ]
    fig, ax = new_figure("Warped future BEVs of a straight drive", "horizon (s)", "ego displacement (px)")
    ax.plot([0, 0.5, 1.0, 1.5, 2.0], expected, "k--", label="speed x dt / (m/px)")
    ax.plot([0, 0.5, 1.0, 1.5, 2.0], disp.ego_rows, "o", label="ego blob in warped frame")
    ax.legend(fontsize=8)
    return Outcome(metrics=metrics, checks=checks, figures={"warp": fig})


def _dummy_batch(kin: Any, ego: Any) -> Any:
    import torch

    from .method import MAX_THINK, PlannerBatch, token_id

    b = kin.shape[0]
    think = torch.full((b, MAX_THINK), token_id("<pad>"), dtype=torch.long)
    think[:, :3] = torch.tensor([token_id("<think>"), token_id("easy"), token_id("</think>")])
    return PlannerBatch(kin, ego, torch.ones(b, dtype=torch.bool), think, torch.full((b,), 3), torch.zeros(b, 4, 2))


def _seed_latents(
    cfg: DriveConfig, prep: _Prepared, seed_rng: np.random.Generator, device: Any
) -> tuple[_Latents, int]:
    """A training sub-seed's encoder latents and the seed its variants share (paired comparisons)."""
    r_enc, r_train = spawn(seed_rng, 2)
    return _encode(cfg, prep, r_enc, device), int(r_train.integers(0, 2**31 - 1))


#: planted control of criterion 5: the C arm's waypoint errors cut by this fraction (twice the brief's 5 % target;
#: the paper gives no L2 figure); the null's B arm has its errors cut by 1 / (1 + this), so C is this much worse
PLANTED_GAIN = 0.10


def _scale_errors(wp: np.ndarray, gt: np.ndarray, k: float) -> np.ndarray:
    """Waypoints whose error to ``gt`` is ``k`` times that of ``wp`` (every sample's L2 scales by exactly k)."""
    return gt + k * (wp - gt)


def _arms(cfg: DriveConfig, prep: _Prepared, lat: _Latents, train_seed: int, s: int, device: Any) -> list[tuple]:
    """(name, planner, waypoints override or None) of a sub-seed. control 'none': A, B, C, C0 (C with
    mse_weight 0: the same BEV query tokens, no latent supervision) and D on sub-seed 0; a control: the arm
    C0 twice (two init streams), the second standing in for C (and B) with its errors scaled by construction."""
    from .training import open_loop_eval

    if cfg.control == "none":
        names = ["A", "B", "C", "C0"] + (["D"] if s == 0 and cfg.variant_d == "on" else [])
        out = []
        for v in track(names, f"world_model sub-seed {s} variants", total=len(names)):
            if v == "C0":
                out.append((v, _train(cfg, "C", prep, lat, train_seed, device, mse_weight=0.0, label="C0"), None))
            else:
                out.append((v, _train(cfg, v, prep, lat, train_seed, device), None))
        return out
    c0 = _train(cfg, "C", prep, lat, train_seed, device, mse_weight=0.0, label="C0")
    other = _train(cfg, "C", prep, lat, train_seed + 1, device, mse_weight=0.0, label="C0'")
    wp = open_loop_eval(other, prep.val, None).waypoints
    assert wp is not None
    gt = prep.val.wp
    if cfg.control == "planted":
        return [("C0", c0, None), ("C", other, _scale_errors(wp, gt, 1 - PLANTED_GAIN)), ("B", other, wp)]
    return [("C0", c0, None), ("C", other, wp), ("B", other, _scale_errors(wp, gt, 1 / (1 + PLANTED_GAIN)))]


def _world_model_seed(cfg: DriveConfig, prep: _Prepared, s: int, seed_rng: np.random.Generator) -> dict[str, Any]:
    """Sub-seed ``s`` of world_model: encoder, then the arms (:func:`_arms`), each evaluated open loop and
    (without a control) closed loop. Module-level so that sub-seeds can run in separate processes; all
    randomness from ``seed_rng`` (the variants of a sub-seed share one training stream: paired comparisons)."""
    from .closed_loop import closed_loop
    from .training import _cos, frame_index, open_loop_eval

    device = resolve_device(cfg.device)
    lat, train_seed = _seed_latents(cfg, prep, seed_rng, device)
    values: list[tuple[str, float]] = []
    rows: list[dict[str, Any]] = []
    cls: list[tuple[str, Any]] = []
    example: dict[str, Any] = {}

    def put(k: str, v: float) -> None:
        values.append((k, float(v)))

    for v, planner, wp_override in _arms(cfg, prep, lat, train_seed, s, device):
        ol = open_loop_eval(planner, prep.val, lat.val if v != "C0" or cfg.control == "none" else None)
        err = ol.l2_1s, ol.l2_2s
        if wp_override is not None:
            e = np.linalg.norm(wp_override - prep.val.wp, axis=-1)
            err = e[:, 1], e[:, 3]
        put(f"{v}_l2_1s", err[0].mean())
        put(f"{v}_l2_2s", err[1].mean())
        row: dict[str, Any] = {
            "seed": s,
            "variant": v,
            "l2_1s": round(float(err[0].mean()), 3),
            "l2_2s": round(float(err[1].mean()), 3),
        }
        if cfg.control == "none":
            cl = closed_loop(planner, prep.eval_seeds, n_steps=cfg.eval_steps, expert=prep.experts)
            cls.append((v, cl))
            put(f"{v}_collision_rate", cl.collision_rate)
            put(f"{v}_ds", cl.ds.mean())
            row["collision_rate"] = round(cl.collision_rate, 3)
            row["ds"] = round(float(cl.ds.mean()), 3)
        if ol.cos is not None and ol.cos_persist is not None and cfg.control == "none":
            put(f"{v}_cos_last", ol.cos[:, -1].mean())
            put(f"{v}_cos_persist_gt_last", ol.cos_persist[:, -1].mean())
            row["cos_last"] = round(float(ol.cos[:, -1].mean()), 3)
            row["cos_persist_gt_last"] = round(float(ol.cos_persist[:, -1].mean()), 3)
            if v == "C":
                tgt = lat.val[:, frame_index("C")]
                assert ol.pred_latents is not None
                own = _cos(np.repeat(ol.pred_latents[:, :1], tgt.shape[1], 1), tgt)
                stat = _cos(lat.val_static[:, frame_index("C")], tgt)
                put("C_cos_persist_own_last", own[:, -1].mean())
                put("C_cos_static_world_last", stat[:, -1].mean())
                for h in range(tgt.shape[1]):
                    put(f"C_cos_h{h}", ol.cos[:, h].mean())
                    put(f"C_cos_persist_gt_h{h}", ol.cos_persist[:, h].mean())
                    put(f"C_cos_persist_own_h{h}", own[:, h].mean())
                    put(f"C_cos_static_world_h{h}", stat[:, h].mean())
                row["cos_persist_own_last"] = round(float(own[:, -1].mean()), 3)
                if s == 0:
                    example = {"pred": ol.pred_latents, "lat": lat.val}
        rows.append(row)
    return {"values": values, "closed_loop": cls, "rows": rows, "example": example}


# --------------------------------------------------------------------------------------------------
@experiment(
    "deepsight.world_model",
    claim="Supervising the inserted BEV query tokens with the latents of five future frames (C) lowers open-loop "
    "L2@2s by >= 5% against the same tokens without latent supervision (C0, MSE weight 0) and stays within 5% of "
    "one future frame (B); preconditions: the base planner beats constant velocity and the latents forecast "
    "beyond persistence (cosine at t+2 s >= persistence + 0.05).",
    presets={
        "smoke": _smoke(),
        "quick": _quick(),
        "full": _full(),
        # controls of the comparative checks at the quick scale (icml2026 controls deepsight.world_model)
        "planted": dataclasses.replace(_quick(), control="planted"),
        "null": dataclasses.replace(_quick(), control="null"),
    },
)
def world_model(cfg: DriveConfig, rng: np.random.Generator) -> Outcome:
    from .closed_loop import bootstrap_ci

    resolve_device(cfg.device)
    prep = _prepare(cfg)
    per: dict[str, list[float]] = {}
    rows: list[dict[str, Any]] = []
    cl_all: dict[str, list[Any]] = {}
    example: dict[str, Any] = {}
    seeds = spawn(rng, cfg.n_seeds)
    r_boot = spawn(rng, 1)[0]
    # one call per training sub-seed (its encoder, then its variants; D on the first only), longest first
    calls = [(_world_model_seed, (cfg, prep, s, seeds[s])) for s in range(cfg.n_seeds)]
    for res in map_in_processes(calls, cfg.workers, label="world_model sub-seeds"):
        for k, v in res["values"]:
            per.setdefault(k, []).append(v)
        for v, cl in res["closed_loop"]:
            cl_all.setdefault(v, []).append(cl)
        rows.extend(res["rows"])
        example = example or res["example"]
    metrics: dict[str, float] = {}
    for k, vals in per.items():
        metrics[k], metrics[f"{k}_min"], metrics[f"{k}_max"] = _stats(vals)
    for v, cls in cl_all.items():
        ds = np.concatenate([c.ds for c in cls])
        col = np.concatenate([(c.collisions > 0).astype(float) for c in cls])
        metrics[f"{v}_ds_ci_lo"], metrics[f"{v}_ds_ci_hi"] = bootstrap_ci(ds, r_boot, cfg.n_boot)
        metrics[f"{v}_collision_ci_lo"], metrics[f"{v}_collision_ci_hi"] = bootstrap_ci(col, r_boot, cfg.n_boot)
    # the kinematic baseline of the base task: keep the current speed along the current heading
    from .method import constant_velocity_waypoints

    cv = constant_velocity_waypoints(_torch_tensor(prep.val.ego)).numpy()
    cv_err = np.linalg.norm(cv - prep.val.wp, axis=-1)
    metrics["CV_l2_1s"], metrics["CV_l2_2s"] = float(cv_err[:, 1].mean()), float(cv_err[:, 3].mean())

    def gain(a: str, b: str) -> float:  # relative L2@2s gain of arm b over arm a
        return (metrics[f"{a}_l2_2s"] - metrics[f"{b}_l2_2s"]) / max(metrics[f"{a}_l2_2s"], 1e-9)

    metrics["C_vs_C0_l2_2s_rel_gain"] = gain("C0", "C")
    metrics["C_over_B_l2_2s"] = metrics["C_l2_2s"] / max(metrics["B_l2_2s"], 1e-9)
    base = "A" if cfg.control == "none" else "C0"  # the base planner (a control run trains C0 only)
    metrics["base_l2_2s_over_constant_velocity"] = metrics[f"{base}_l2_2s"] / max(metrics["CV_l2_2s"], 1e-9)
    checks = [
        # precondition: the base planner learns its task (fails if its plan is no better than keeping speed)
        Check(f"{base}_l2_2s_over_constant_velocity", metrics["base_l2_2s_over_constant_velocity"], "<= 0.9",
              role="precondition"),
    ]
    if cfg.control == "none":
        metrics["C_vs_A_l2_2s_rel_gain"] = gain("A", "C")
        metrics["C0_vs_A_l2_2s_rel_gain"] = gain("A", "C0")
        metrics["C_cos_gain_over_persist_own"] = metrics["C_cos_last"] - metrics["C_cos_persist_own_last"]
        metrics["C_cos_gain_over_persist_gt"] = metrics["C_cos_last"] - metrics["C_cos_persist_gt_last"]
        metrics["C_cos_gain_over_static_world"] = metrics["C_cos_last"] - metrics["C_cos_static_world_last"]
        checks += [
            # criterion 4 as the precondition of criterion 5 (the forecasting task is learnable: without a
            # forecast there is no world model to help the plan). Persistence = the planner's own t latent
            # copied to t+2 s (fails if the five frames collapse to one current-scene estimate) and the
            # ground-truth t latent copied (the brief's literal baseline; the planner never sees a BEV)
            Check("C_cos_t2_minus_own_persistence", metrics["C_cos_gain_over_persist_own"], ">= 0.05",
                  role="precondition"),
            Check("C_cos_t2_minus_gt_persistence", metrics["C_cos_gain_over_persist_gt"], ">= 0.05",
                  role="precondition"),
            # our stronger baseline (the scene at t frozen, the ego moved at constant velocity), behind the
            # forecasting guard: shown beside the claims, not counted (neither the paper's nor the brief's)
            Check("C_cos_t2_minus_static_world", metrics["C_cos_gain_over_static_world"], ">= 0", role="control"),
        ]
    checks += [
        # criterion 5 (issue 59): the latent supervision helps the plan, against the same BEV query tokens
        # without it (C0); C vs A (reported) confounds the supervision with the 95 inserted tokens
        Check("C_vs_C0_l2_2s_rel_gain", metrics["C_vs_C0_l2_2s_rel_gain"], ">= 0.05", comparative=True),
        # "not worse than B": within the brief's own unit of a meaningful L2 change (5 % relative)
        Check("C_over_B_l2_2s", metrics["C_over_B_l2_2s"], "<= 1.05", paper="one future frame is 'short-sighted'",
              comparative=True),
    ]
    figs = {}
    if example:
        figs["latent_neighbours"] = _nn_figure(prep.val, example["pred"], example["lat"])
    if cl_all:
        figs["closed_loop_long_tail"] = _trajectory_figure({v: c[0] for v, c in cl_all.items()})
    fig, ax = new_figure("Open-loop L2 at 2 s (mean over seeds, bars: min-max)", "arm", "L2@2s (m)")
    vs = list(dict.fromkeys(r["variant"] for r in rows)) + ["CV"]
    lo = [metrics[f"{v}_l2_2s"] - metrics.get(f"{v}_l2_2s_min", metrics[f"{v}_l2_2s"]) for v in vs]
    hi = [metrics.get(f"{v}_l2_2s_max", metrics[f"{v}_l2_2s"]) - metrics[f"{v}_l2_2s"] for v in vs]
    ax.bar(range(len(vs)), [metrics[f"{v}_l2_2s"] for v in vs], tick_label=vs, yerr=np.array([lo, hi]))
    figs["l2_2s"] = fig
    return Outcome(metrics=metrics, checks=checks, figures=figs, tables={"per_seed": rows})


def _torch_tensor(a: np.ndarray) -> Any:
    import torch

    return torch.as_tensor(np.asarray(a, np.float32))


def _nn_figure(val: Any, pred: np.ndarray, lat: np.ndarray) -> Any:
    """Row 1: BEV targets of one long-tail val sample per horizon; row 2: the val BEV whose target latent is
    nearest (cosine) to the predicted latent at that horizon."""
    from matplotlib.figure import Figure

    idx = int(np.nonzero(val.complex)[0][0]) if val.complex.any() else 0
    n_h = pred.shape[1]
    fig = Figure(figsize=(2.0 * n_h, 4.4), dpi=110)
    flat = lat.reshape(lat.shape[0] * lat.shape[1], -1)
    flat = flat / (np.linalg.norm(flat, axis=1, keepdims=True) + 1e-8)
    for h in range(n_h):
        p = pred[idx, h].reshape(-1)
        j = int(np.argmax(flat @ (p / (np.linalg.norm(p) + 1e-8))))
        for row, img in ((0, val.bev[idx, h]), (1, val.bev[j // lat.shape[1], j % lat.shape[1]])):
            ax = fig.add_subplot(2, n_h, row * n_h + h + 1)
            ax.imshow(img.transpose(1, 2, 0))
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"{'target' if row == 0 else 'nearest to pred'} t+{0.5 * h:.1f}s", fontsize=7)
    fig.suptitle("Variant C: BEV target vs nearest neighbour of the predicted latent (val)", fontsize=9)
    return fig


def _trajectory_figure(results: dict[str, Any]) -> Any:
    fig, ax = new_figure("Closed loop, first long-tail episode", "x (m)", "y (m, lanes)")
    for v, cl in results.items():
        lt = np.nonzero(cl.long_tail)[0]
        i = int(lt[0]) if lt.size else 0
        ep = cl.episodes[i]
        ax.plot(
            ep.ego[:, 0],
            ep.ego[:, 1],
            "-o",
            ms=2,
            label=f"{v} (seed {int(cl.seeds[i])}{', crash' if ep.crashed.any() else ''})",
        )
    ax.invert_yaxis()
    ax.legend(fontsize=7)
    return fig


def balanced_split(complex_: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of a balanced evaluation split: every complex frame and as many simple frames, drawn without
    replacement (when simple frames are fewer, as many complex frames); sorted."""
    c, s = np.nonzero(complex_)[0], np.nonzero(~complex_)[0]
    n = min(len(c), len(s))
    return np.sort(np.concatenate([rng.permutation(c)[:n], rng.permutation(s)[:n]]))


def _subset(s: Any, idx: np.ndarray) -> Any:
    """The samples ``idx`` of a SampleSet (inputs, waypoints, labels; BEV frames kept for shape only)."""
    return dataclasses.replace(
        s,
        kin=s.kin[idx],
        ego=s.ego[idx],
        wp=s.wp[idx],
        bev=s.bev[idx],
        complex=s.complex[idx],
        ann=[s.ann[i] for i in idx],
        episode=s.episode[idx],
        step=s.step[idx],
        long_tail=s.long_tail[idx],
        static_world=None,
    )


def _adaptive_cot_seed(cfg: DriveConfig, prep: _Prepared, s: int, seed_rng: np.random.Generator) -> dict[str, Any]:
    """Sub-seed ``s`` of adaptive_cot: encoder, then E (always-long CoT) and F (adaptive), each trained and
    evaluated open loop (balanced split) and closed loop (module-level: it can run in its own process)."""
    from .closed_loop import closed_loop, eval_event
    from .training import open_loop_eval

    device = resolve_device(cfg.device)
    lt_seeds = [e for e in prep.eval_seeds if eval_event(e) != "none"] or prep.eval_seeds[:1]
    lat, train_seed = _seed_latents(cfg, prep, seed_rng, device)
    split = balanced_split(prep.val.complex, np.random.default_rng(DATA_SEED))
    is_c = prep.val.complex[split]
    # the trigger on the (annotated) training frames: did F learn the labels it was trained on?
    tr_split = balanced_split(prep.train.complex, np.random.default_rng(DATA_SEED + 1))
    values: list[tuple[str, float]] = []
    rows: list[dict[str, Any]] = []
    ds_lt: list[tuple[str, np.ndarray]] = []
    for v in track(("E", "F"), f"adaptive_cot sub-seed {s} variants", total=2):
        planner = _train(cfg, v, prep, lat, train_seed, device)
        ol = open_loop_eval(planner, prep.val, lat.val)
        cl = closed_loop(planner, prep.eval_seeds, n_steps=cfg.eval_steps, expert=prep.experts)
        lt = np.isin(cl.seeds, lt_seeds)
        ds_lt.append((v, cl.ds[lt]))
        long_ = ol.reasoning_tokens[split] > 1  # the trigger: long reasoning (one token = "easy")
        tpr = float(long_[is_c].mean()) if is_c.any() else float("nan")
        tnr = float((~long_[~is_c]).mean()) if (~is_c).any() else float("nan")
        for k, val in (
            ("tokens_open_loop", ol.reasoning_tokens.mean()),
            ("tokens_closed_loop", cl.reasoning_tokens.mean()),
            ("ds", cl.ds.mean()),
            ("ds_long_tail", cl.ds[lt].mean()),
            ("l2_2s", ol.l2_2s.mean()),
            ("collision_rate", cl.collision_rate),
            ("long_rate_balanced", long_.mean()),
            ("long_on_complex", tpr),
            ("long_on_simple", 1 - tnr),
            ("trigger_balanced_accuracy", (tpr + tnr) / 2),
        ):
            values.append((f"{v}_{k}", float(val)))
        if v == "F":
            sub = _subset(prep.train, tr_split)
            tr_long = open_loop_eval(planner, sub, None).reasoning_tokens > 1
            c_tr = sub.complex
            ba_tr = (float(tr_long[c_tr].mean()) + float((~tr_long[~c_tr]).mean())) / 2 if c_tr.any() else 0.5
            values.append(("F_trigger_balanced_accuracy_train", ba_tr))
        rows.append(
            {
                "seed": s,
                "variant": v,
                "tokens_per_step": round(float(cl.reasoning_tokens.mean()), 3),
                "balanced_accuracy": round((tpr + tnr) / 2, 3),
                "ds": round(float(cl.ds.mean()), 3),
                "ds_long_tail": round(float(cl.ds[lt].mean()), 3),
                "l2_2s": round(float(ol.l2_2s.mean()), 3),
            }
        )
    return {"values": values, "ds_long_tail": ds_lt, "rows": rows}


# --------------------------------------------------------------------------------------------------
@experiment(
    "deepsight.adaptive_cot",
    claim="Adaptive CoT (F) reasons at length on hard scenes and says 'easy' on simple ones (balanced accuracy "
    ">= 0.75 on a balanced split of complex and simple frames) and so emits <= 35% of the reasoning tokens of "
    "always-long CoT (E) per closed-loop step; preconditions: enough complex frames to measure the trigger, and "
    "E has learned the long format.",
    presets={"smoke": _smoke(), "quick": _quick_cot(), "full": _full_cot()},
)
def adaptive_cot(cfg: DriveConfig, rng: np.random.Generator) -> Outcome:
    from .closed_loop import bootstrap_ci

    resolve_device(cfg.device)
    # Deviation (issue 59): the validation episodes carry long-tail events in val_long_tail_fraction of them
    # (all, by default) and the evaluation split is balanced by construction; training batches oversample
    # the complex frames (complex_share): at the brief's 30 % of episodes only 2-3 % of frames are complex
    prep = _prepare(cfg, val_long_tail_fraction=cfg.val_long_tail_fraction)
    per: dict[str, list[float]] = {}
    rows: list[dict[str, Any]] = []
    r_boot = spawn(rng, 1)[0]
    ds_lt: dict[str, list[np.ndarray]] = {}
    seeds = spawn(rng, cfg.n_seeds)
    calls = [(_adaptive_cot_seed, (cfg, prep, s, seeds[s])) for s in range(cfg.n_seeds)]
    for res in map_in_processes(calls, cfg.workers, label="adaptive_cot sub-seeds"):
        for k, val in res["values"]:
            per.setdefault(k, []).append(val)
        for v, ds in res["ds_long_tail"]:
            ds_lt.setdefault(v, []).append(ds)
        rows.extend(res["rows"])
    metrics: dict[str, float] = {}
    for k, vals in per.items():
        metrics[k], metrics[f"{k}_min"], metrics[f"{k}_max"] = _stats(vals)
    ratio = metrics["F_tokens_closed_loop"] / max(metrics["E_tokens_closed_loop"], 1e-9)
    metrics["token_ratio_F_over_E"] = ratio
    split = balanced_split(prep.val.complex, np.random.default_rng(DATA_SEED))
    metrics["val_complex_fraction"] = float(prep.val.complex.mean())
    metrics["balanced_split_complex_frames"] = float(prep.val.complex[split].sum())
    metrics["balanced_split_simple_frames"] = float((~prep.val.complex[split]).sum())
    metrics["train_complex_frames"] = float(prep.train.complex.sum())
    metrics["train_complex_fraction"] = float(prep.train.complex.mean())
    for v in ("E", "F"):
        lo, hi = bootstrap_ci(np.concatenate(ds_lt[v]), r_boot, cfg.n_boot)
        metrics[f"{v}_ds_long_tail_ci_lo"], metrics[f"{v}_ds_long_tail_ci_hi"] = lo, hi
    # the long-tail DS gap rests on about one long-tail closed-loop episode per sub-seed: reported, not checked
    metrics["F_minus_E_ds_long_tail_points"] = 100 * (metrics["F_ds_long_tail"] - metrics["E_ds_long_tail"])
    n_min = 20 if cfg.n_val >= 4 else 1  # the smoke preset's single validation episode only runs the code
    checks = [
        # preconditions: the trigger can be measured (enough complex frames in training and in the balanced
        # evaluation split), and the always-long arm has learned the format whose cost F is compared with
        Check("balanced_split_complex_frames", metrics["balanced_split_complex_frames"], f">= {n_min}",
              role="precondition"),
        Check("train_complex_frames", metrics["train_complex_frames"], f">= {n_min}", role="precondition"),
        Check("E_long_rate_balanced", metrics["E_long_rate_balanced"], ">= 0.9", role="precondition"),
        # ... and F has learned the trigger on the frames it was trained on (balanced accuracy on a balanced
        # split of the training frames): fails when F is undertrained, which is a defect of the setup, not a
        # negative result; the claim below is the same reading on held-out frames
        Check("F_trigger_balanced_accuracy_train", metrics["F_trigger_balanced_accuracy_train"], ">= 0.75",
              role="precondition"),
        # the paper's adaptivity, read as a classifier on the balanced split (not a class-imbalanced rate:
        # answering 'easy' everywhere scores 0.5): fails when F collapses to one answer
        Check("F_trigger_balanced_accuracy", metrics["F_trigger_balanced_accuracy"], ">= 0.75",
              paper="short CoT for easy scenes, long for hard ones (no number)"),
        # the cost on the natural closed-loop distribution. Not comparative: E's count is its fixed long format
        # (4 content tokens, its learning is the precondition above), so this bounds F's own cost
        Check("token_ratio_F_over_E", ratio, "<= 0.35", paper="reasoning cost proportional to difficulty (no number)"),
    ]
    fig, ax = new_figure("Reasoning tokens per closed-loop step (mean over seeds)", "variant", "tokens / step")
    ax.bar(
        [0, 1],
        [metrics["E_tokens_closed_loop"], metrics["F_tokens_closed_loop"]],
        tick_label=["E always-long", "F adaptive"],
    )
    return Outcome(metrics=metrics, checks=checks, figures={"tokens": fig}, tables={"per_seed": rows})
