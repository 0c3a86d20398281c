"""Registered experiments of PROBE: the headline comparison (criteria 1, 3, 4) and the lambda limit (1, 2).

The pipeline is split so that no unseen-generator image can reach training or model selection:
:func:`train_seen` and :func:`fit_methods` see only real train crops and the seen DDPM; the unseen zoo
(:func:`train_unseen_zoo`) is drawn from its own random stream and only :func:`evaluate_methods` samples it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, check_workers, resolve_device
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track
from icml2026.core.rng import torch_seeded
from icml2026.core.sweep import map_in_processes

from .baselines import (
    cnnspot_augment,
    extra_standard_samples,
    latent_steer_buffer,
    pgd_fakes,
    random_lora_buffer,
)
from .data import load_reals
from .detector import Detector, balanced_accuracy
from .generators import (
    AEReconstructor,
    DCGANGenerator,
    DiffusionGenerator,
    PCAGaussianGenerator,
    VAEGenerator,
    seen_unet,
    unseen_unet,
)
from .method import ProbeConfig, RefineConfig, probe_generator, refine_detector
from .realism import SEEN_BAR, RealismSpace, matched_noise

METHODS = ("B0", "B1", "B2", "B3", "B4", "B5", "PROBE")
UNSEEN = ("vae", "dcgan", "ddpm2", "ae_recon", "pca_gauss")
#: planted control: fraction of each unseen generator's test items (real and fake) on which the PROBE arm is given
#: the true label; the rest keep B1's predictions. Gain over B1 = f (1 - bAcc_B1) ~ 0.4 x 0.35 = 0.14, the
#: paper's +14.6 points over its baseline.
PLANTED_ORACLE = 0.4
#: null control of the non-inferiority check (seen bAcc drop <= 0.02): the PROBE arm's seen predictions are
#: made wrong on this fraction of items (drop ~ 0.1 x bAcc_seen ~ 0.095, beyond the margin).
NULL_SEEN_HARM = 0.1


@config
class HeadlineConfig:
    """Sizes of one PROBE run (brief Sec. 5 values in the comments)."""

    dataset: Literal["photos", "digits"] = "photos"
    size: int = param(16, 8, 16, choices=(8, 16), help="crop size (photos; digits are 8x8)")
    n_seeds: int = param(3, 1, 5, help="sub-seeds (detector, PROBE, controls; zoo too unless share_zoo)")
    share_zoo: bool = False
    ddpm_steps: int = param(1200, 1, 5000, help="training steps of the seen DDPM")
    ddim_steps: int = param(10, 2, 50, help="DDIM sampling steps of the seen DDPM (brief: 10-20)")
    zoo_steps: int = param(800, 1, 5000, help="training steps of VAE, DCGAN, AE and DDPM-2")
    n_real: int = param(4096, 64, 30000, help="real train crops used by the detectors")
    n_seen: int = param(1024, 32, 8192, help="seen-DDPM fakes of the detector's training set")
    det_epochs: int = param(4, 1, 50, help="detector training epochs")
    n_eval: int = param(1000, 32, 4000, help="real and fake test images per generator (balanced)")
    lam: float = param(1.0, 0.0, 1e6, help="lambda of L_prec, per pixel location (brief: {0.1, 1, 10})")
    lora_rank: int = param(4, 1, 16, help="LoRA rank r (brief: 4)")
    lora_lr: float = param(2e-2, 1e-5, 1.0, help="Adam step of Delta-phi (brief: 1e-3)")
    n_restarts: int = param(4, 1, 32, help="LoRA restarts from zero")
    n_updates: int = param(40, 1, 1000, help="LoRA updates per restart")
    dump_every: int = param(5, 1, 1000, help="updates between buffer dumps")
    n_dump: int = param(32, 1, 1024, help="images per dump")
    batch_size: int = param(16, 1, 256, help="x_T per LoRA update")
    grad_steps: int = param(2, 1, 50, help="K: DDIM steps back-propagated (brief: 2-4)")
    refine_epochs: int = param(2, 1, 20, help="Stage-2 epochs (brief: 1-3)")
    refine_lr: float = param(1e-4, 1e-6, 1e-1, help="Stage-2 Adam step (brief: 1e-4)")
    pgd_eps: float = param(8 / 255, 0.0, 1.0, help="B2 L_inf radius on [-1, 1] (brief: 4/255 on [0, 1])")
    latent_lr: float = param(0.05, 1e-5, 10.0, help="B5 Adam step on the latent")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    workers: int = param(1, 1, 64, help="processes running the sub-seeds side by side (CPU only; same results)")
    latent_steer: bool = param(True, help="run control B5 (latent steering; as costly as Stage 1)")
    control: str = param("none", choices=("none", "planted", "null"),
                         help="replace the PROBE arm of the comparative checks by a control: 'planted' = B1 with "
                         "the true label on 40 % of each unseen generator's test items; 'null' = B1 again with "
                         "other seeds (and wrong seen predictions on 10 % of items, for the non-inferiority check)")
    model: str = param("", help="a diffusers pipeline folder (DDPMPipeline: unet + scheduler) used as the seen "
                       "generator instead of training one here; its images must have the dataset's size and "
                       "channels")

    generator: str = param("", help="a StableDiffusionPipeline folder (text-to-image, latent): the seen generator, "
                           "steered with LoRA on its UNet; needs data")
    detector: str = param("", help="a Hugging Face vision backbone folder (DINOv2 or ResNet-50, save_pretrained): "
                          "the detector, with a linear head; needs generator")
    data: str = param("", help="an image folder: train/ holds real training images, every other subfolder is a "
                      "benchmark (real images under a folder whose name contains 'real'); needs generator")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        check_workers(self.workers, self.device)
        if self.generator or self.detector or self.data:
            from icml2026.core.loaders import check_model_path

            if not (self.generator and self.data):
                key = "data" if self.generator else "generator"
                raise ValueError(f"{key}: the real-parts run (generator, detector, data) needs both generator=PATH "
                                 "and data=DIR")
            if self.model:
                raise ValueError("model: give either model (a pixel DDPM pipeline) or generator (Stable Diffusion)")
            check_model_path(self.generator, key="generator", kinds=("diffusers",))
            if self.detector:
                check_model_path(self.detector, key="detector", kinds=("hf",))
            if not Path(self.data).is_dir():
                raise ValueError(f"data: {self.data!r} is not a folder")
        if self.model:
            from icml2026.core.loaders import check_model_path

            check_model_path(self.model, kinds=("diffusers",))
        if self.dump_every > self.n_updates:
            raise ValueError(f"dump_every = {self.dump_every}: must be <= n_updates = {self.n_updates}")
        if self.grad_steps > self.ddim_steps:
            raise ValueError(f"grad_steps = {self.grad_steps}: must be <= ddim_steps = {self.ddim_steps}")

    @property
    def probe(self) -> ProbeConfig:
        return ProbeConfig(
            lam=self.lam,
            rank=self.lora_rank,
            lr=self.lora_lr,
            n_restarts=self.n_restarts,
            n_updates=self.n_updates,
            dump_every=self.dump_every,
            n_dump=self.n_dump,
            batch_size=self.batch_size,
            grad_steps=self.grad_steps,
        )

    @property
    def refine(self) -> RefineConfig:
        return RefineConfig(epochs=self.refine_epochs, lr=self.refine_lr)


def train_seen(real_train: np.ndarray, cfg: HeadlineConfig, rng: np.random.Generator) -> DiffusionGenerator:
    """The seen generator: a DDPM with the attention UNet, DDIM sampling (built on the CPU, moved to cfg.device);
    or, with ``cfg.model``, the user's pretrained pipeline (nothing trained here)."""
    r_init, r_fit = spawn(rng, 2)
    if cfg.model:
        gen = DiffusionGenerator.from_pipeline(cfg.model, "ddim", cfg.ddim_steps, device=cfg.device)
        want = tuple(real_train.shape[1:])
        if (gen.channels, gen.size, gen.size) != want:
            from icml2026.core.errors import BadInput

            raise BadInput(f"model = {cfg.model!r}: its UNet makes {gen.channels}x{gen.size}x{gen.size} images; "
                           f"the dataset {cfg.dataset!r} at size {cfg.size} is {'x'.join(map(str, want))}")
        return gen
    with torch_seeded(r_init):  # the UNet's initial weights from the run's stream, not the process's history
        unet = seen_unet(real_train.shape[2], real_train.shape[1]).to(cfg.device)
    gen = DiffusionGenerator(unet, "ddim", cfg.ddim_steps)
    return gen.fit(real_train, r_fit, n_steps=cfg.ddpm_steps, batch_size=64)


def train_unseen_zoo(
    real_train: np.ndarray, real_test: np.ndarray, cfg: HeadlineConfig, rng: np.random.Generator
) -> dict[str, Any]:
    """The five unseen families (test only), each trained on the real train crops (on cfg.device)."""
    s, c = real_train.shape[2], real_train.shape[1]
    r = spawn(rng, 5)
    steps, dev = cfg.zoo_steps, cfg.device
    # every network's initial weights come from its own stream (torch_seeded), not from the process's history
    with torch_seeded(r[2]):
        ddpm2 = DiffusionGenerator(unseen_unet(s, c).to(dev), "ddpm", 40)
    ddpm2.fit(real_train, r[2], n_steps=steps, batch_size=64)
    with torch_seeded(r[3]):
        ae = AEReconstructor(s, c, device=dev)
    with torch_seeded(r[0]):
        vae = VAEGenerator(s, c, device=dev)
    with torch_seeded(r[1]):
        dcgan = DCGANGenerator(s, c, device=dev)
    return {
        "vae": vae.fit(real_train, r[0], n_steps=steps),
        "dcgan": dcgan.fit(real_train, r[1], n_steps=steps),
        "ddpm2": ddpm2,
        "ae_recon": ae.fit(real_train, r[3], n_steps=steps).set_sources(real_test),
        "pca_gauss": PCAGaussianGenerator().fit(real_train, r[4]),
    }


@dataclass
class MethodsFit:
    """Everything trained from seen data only: detectors per method, buffers and Stage-1 diagnostics."""

    detectors: dict[str, Detector]
    buffers: dict[str, np.ndarray]
    seen_fakes: np.ndarray
    probe_base: np.ndarray
    probe_norms: list[float]


def _new_detector(cfg: HeadlineConfig) -> Detector:
    if cfg.detector:
        from .real_parts import PretrainedDetector

        return PretrainedDetector(cfg.detector, epochs=cfg.det_epochs, device=cfg.device)
    return Detector(epochs=cfg.det_epochs, device=cfg.device)


def fit_methods(
    real_train: np.ndarray, seen: DiffusionGenerator, cfg: HeadlineConfig, rng: np.random.Generator
) -> MethodsFit:
    """B0 (detector as trained), B1-B5 and PROBE, from real train crops and the seen DDPM only.

    With ``cfg.control == "null"`` a second B1 ("B1_null": other extra samples, other Stage-2 seed) is fitted
    too, the arm that replaces PROBE in the comparative checks."""
    r = spawn(rng, 11)
    real = real_train[r[0].choice(len(real_train), size=min(cfg.n_real, len(real_train)), replace=False)]
    seen_fakes = seen.sample(cfg.n_seen, r[1])
    b0 = _new_detector(cfg).fit(real, seen_fakes, r[2])
    pc = cfg.probe
    res = probe_generator(seen, b0, pc, r[3])  # Stage 1
    n_buf = len(res.buffer)
    buffers = {"PROBE": res.buffer, "B1": extra_standard_samples(seen, n_buf, r[4])}
    reported = cfg.control == "none"  # B2-B5 are reported only; the control runs skip them (no check reads them)
    if reported:
        buffers["B4"] = random_lora_buffer(seen, res, pc, r[5])
    if reported and cfg.latent_steer and not cfg.generator:  # B5 steers a pixel x_T (not SD's latent + prompt)
        buffers["B5"] = latent_steer_buffer(seen, b0, pc, r[6], lr=cfg.latent_lr).buffer
    if reported:
        buffers["B2"] = pgd_fakes(b0, seen.sample(n_buf, r[7]), eps=cfg.pgd_eps)
    dets = {"B0": b0}
    r_ft = spawn(r[8], len(METHODS))
    for i, m in enumerate(METHODS[1:], 1):  # Stage 2 (identical recipe; B3: augmentation, no extra images)
        if m == "B3" and reported:
            dets[m] = refine_detector(b0, real, seen_fakes, None, cfg.refine, r_ft[i], augment=cnnspot_augment)
        elif m in buffers:
            dets[m] = refine_detector(b0, real, seen_fakes, buffers[m], cfg.refine, r_ft[i])
    if cfg.control == "null":
        r_n1, r_n2 = spawn(r[9], 2)
        dets["B1_null"] = refine_detector(
            b0, real, seen_fakes, extra_standard_samples(seen, n_buf, r_n1), cfg.refine, r_n2
        )
    return MethodsFit(dets, buffers, seen_fakes, res.base, res.dump_norms)


@dataclass
class LabelledSet:
    """A benchmark of real (0) and fake (1) images read from a folder (the real-parts run)."""

    images: np.ndarray
    labels: np.ndarray


def _control_arm(
    p: dict[str, np.ndarray], y: np.ndarray, generator: str, control: str, rng: np.random.Generator
) -> np.ndarray:
    """The PROBE arm's p(fake) under a control (see ``HeadlineConfig.control``)."""
    if control == "planted":
        out = p["B1"].copy()
        if generator != "seen":  # the true label on PLANTED_ORACLE of the items
            m = rng.random(len(y)) < PLANTED_ORACLE
            out[m] = y[m]
        return out
    out = p["B1_null"].copy()
    if generator == "seen":  # wrong on NULL_SEEN_HARM of the items: a seen drop beyond the margin
        m = rng.random(len(y)) < NULL_SEEN_HARM
        out[m] = 1.0 - y[m]
    return out


def evaluate_methods(
    fit: MethodsFit,
    real_test: np.ndarray,
    generators: dict[str, Any],
    n_eval: int,
    rng: np.random.Generator,
    control: str = "none",
) -> dict[str, dict[str, float]]:
    """bAcc of every detector on every generator: the same n real test crops and n fakes for all methods.

    Under a control the PROBE arm is replaced (:func:`_control_arm`); "B1_null" is not reported."""
    n = min(n_eval, len(real_test))
    r_real, r_ctl, *r_gen = spawn(rng, 2 + len(generators))
    reals = real_test[r_real.choice(len(real_test), size=n, replace=False)]
    shown = [m for m in fit.detectors if m != "B1_null"]
    out: dict[str, dict[str, float]] = {m: {} for m in shown}
    r_c = spawn(r_ctl, len(generators))
    for (name, gen), rg, rc in zip(generators.items(), r_gen, r_c, strict=True):
        if isinstance(gen, LabelledSet):  # a benchmark folder: its own real and fake images
            x, y = gen.images, gen.labels
        else:
            x, y = np.concatenate([reals, gen.sample(n, rg)]), np.r_[np.zeros(n), np.ones(n)]
        p = {m: det.predict_proba(x) for m, det in fit.detectors.items()}
        if control != "none":
            p["PROBE"] = _control_arm(p, y, name, control, rc)
        for m in shown:
            out[m][name] = balanced_accuracy(y, p[m])
    return out


_SPACES: dict[tuple[str, int], RealismSpace] = {}


def realism_space(dataset: str, size: int) -> RealismSpace:
    """The realism feature space of ``dataset`` at ``size`` (trained once per process, with its own fixed seed)."""
    key = (dataset, size)
    if key not in _SPACES:
        _SPACES[key] = RealismSpace().fit(load_reals(dataset, size)[0])  # type: ignore[arg-type]
    return _SPACES[key]


def _crop_grid(rows: dict[str, np.ndarray], n_cols: int = 8) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(n_cols * 0.7 + 1.6, len(rows) * 0.75 + 0.4), dpi=110)
    for i, (name, imgs) in enumerate(rows.items()):
        for j in range(min(n_cols, len(imgs))):
            ax = fig.add_subplot(len(rows), n_cols, i * n_cols + j + 1)
            img = (imgs[j].transpose(1, 2, 0) + 1) / 2
            ax.imshow(
                np.clip(img[..., 0] if img.shape[2] == 1 else img, 0, 1),
                cmap="gray",
                vmin=0,
                vmax=1,
                interpolation="nearest",
            )
            ax.set_xticks([])
            ax.set_yticks([])
            if j == 0:
                ax.set_ylabel(name, fontsize=7, rotation=0, ha="right", va="center")
    fig.suptitle("real / seen DDPM / PROBE buffer / unseen generators", fontsize=8)
    return fig


def _agg(vals: list[float]) -> tuple[float, float, float, float]:
    a = np.asarray(vals, float)
    return float(a.mean()), float(a.std()), float(a.min()), float(a.max())


def _train_seen_of(cfg: HeadlineConfig, rng: np.random.Generator) -> DiffusionGenerator:
    return train_seen(load_reals(cfg.dataset, cfg.size)[0], cfg, rng)


def _train_zoo_of(cfg: HeadlineConfig, rng: np.random.Generator) -> dict[str, Any]:
    return train_unseen_zoo(*load_reals(cfg.dataset, cfg.size), cfg, rng)


def _real_parts(cfg: HeadlineConfig) -> tuple[np.ndarray, np.ndarray, Any, dict[str, Any]]:
    """(real train, real held-out, the Stable Diffusion generator, {benchmark: LabelledSet}) of a real-parts run.

    The last quarter of ``data/train`` (at least 4 images) is held out: the seen generator's bAcc and the realism
    distances are measured on it."""
    from .real_parts import StableDiffusionGenerator, load_image_folder

    gen = StableDiffusionGenerator.from_folder(cfg.generator, n_sample_steps=cfg.ddim_steps, device=cfg.device)
    train, benches = load_image_folder(cfg.data, gen.size)
    cut = len(train) - max(4, len(train) // 4)
    if cut < 4:
        from icml2026.core.errors import BadInput

        raise BadInput(f"data = {cfg.data!r}: needs at least 8 real images under train/")
    return train[:cut], train[cut:], gen, {k: LabelledSet(x, y) for k, (x, y) in benches.items()}


def _sub_seed(
    cfg: HeadlineConfig, s: int, r: np.random.Generator, shared: tuple[DiffusionGenerator, dict[str, Any]] | None
) -> dict[str, Any]:
    """One sub-seed: (the zoo unless shared,) B0-B5 and PROBE, their evaluation and the buffer diagnostics.

    Module-level so that sub-seeds can run in separate processes: everything random comes from ``r``, so the
    values do not depend on where or in which order the sub-seeds run."""
    r_seen, r_zoo, r_fit, r_eval, r_diag = spawn(r, 5)
    if cfg.generator:  # the real-parts run: Stable Diffusion, the user's benchmarks as the unseen sets
        real_tr, real_te, seen, zoo = _real_parts(cfg)
        space = RealismSpace().fit(real_tr)
    else:
        real_tr, real_te = load_reals(cfg.dataset, cfg.size)
        if shared is None:
            seen, zoo = train_seen(real_tr, cfg, r_seen), train_unseen_zoo(real_tr, real_te, cfg, r_zoo)
        else:
            seen, zoo = shared
        space = realism_space(cfg.dataset, cfg.size)
    unseen = list(zoo)
    fit = fit_methods(real_tr, seen, cfg, r_fit)  # no unseen generator in here
    bacc = evaluate_methods(fit, real_te, {"seen": seen, **zoo}, cfg.n_eval, r_eval, cfg.control)
    methods = [m for m in METHODS if m in bacc]
    val: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    # criterion 1: hardness and realism of every buffer, against standard seen samples, in the trained space
    b0 = fit.detectors["B0"]
    r_std, r_noise = spawn(r_diag, 2)
    std = seen.sample(len(fit.buffers["PROBE"]), r_std)
    fd_std = space.distance(real_te, std)
    fd_noise = space.distance(real_te, matched_noise(real_tr, len(std), r_noise))
    val["frozen_acc_standard"] = float((b0.predict_proba(std) > 0.5).mean())
    val["fd_standard"], val["fd_noise"] = fd_std, fd_noise
    val["seen_realism_vs_noise"] = fd_std / fd_noise
    val["realism_space_accuracy"] = space.train_accuracy_
    for m, buf in fit.buffers.items():
        fd = space.distance(real_te, buf)
        val[f"frozen_acc_{m}"] = float((b0.predict_proba(buf) > 0.5).mean())
        val[f"fd_{m}"], val[f"fd_ratio_{m}"] = fd, fd / fd_std
    val["hardness_margin"] = val["frozen_acc_standard"] - val["frozen_acc_PROBE"]
    val["lora_norm_final"] = float(np.mean(fit.probe_norms[-1:]))
    for m in methods:
        unseen_mean = float(np.mean([bacc[m][g] for g in unseen]))
        val[f"bacc_unseen_{m}"], val[f"bacc_seen_{m}"] = unseen_mean, float(bacc[m]["seen"])
        for g in unseen:
            val[f"bacc_{g}_{m}"] = float(bacc[m][g])
        rows.append(
            {
                "seed": s,
                "method": m,
                "seen": round(bacc[m]["seen"], 4),
                "unseen_mean": round(unseen_mean, 4),
                **{g: round(bacc[m][g], 4) for g in unseen},
            }
        )
    val["probe_minus_b0"] = val["bacc_unseen_PROBE"] - val["bacc_unseen_B0"]
    val["probe_minus_b1"] = val["bacc_unseen_PROBE"] - val["bacc_unseen_B1"]
    for m in ("B2", "B3", "B4", "B5"):
        if m in bacc:
            val[f"probe_minus_{m.lower()}"] = val["bacc_unseen_PROBE"] - val[f"bacc_unseen_{m}"]
    val["seen_drop"] = val["bacc_seen_B0"] - val["bacc_seen_PROBE"]
    grid: dict[str, np.ndarray] = {}
    if s == 0:
        g_r = spawn(r_diag, len(zoo))
        grid = {
            "real": real_te[:: max(1, len(real_te) // 8)][:8],
            "seen DDPM": std[:8],
            "PROBE buffer": fit.buffers["PROBE"][-8:],
            **{
                k: gen.images[:8] if isinstance(gen, LabelledSet) else gen.sample(8, rg)
                for (k, gen), rg in zip(zoo.items(), g_r, strict=True)
            },
        }
    return {"values": val, "rows": rows, "grid": grid, "unseen": unseen}


#: the quick preset (also the base of the planted and null controls)
# Issue 56: 498 CPU-s before (3 sub-seeds, B5, 300-step zoo, workers 2); one sub-seed per run seed now (the
# headline's 3 seeds are the run seeds 0-2; full keeps 3 sub-seeds per run), no B5 (reported at full scale),
# smaller zoo, detector sets, buffer and evaluation.
_QUICK = HeadlineConfig(
    size=8,
    n_seeds=1,
    share_zoo=True,
    ddpm_steps=200,
    ddim_steps=6,
    zoo_steps=60,
    n_real=1024,
    n_seen=384,
    det_epochs=2,
    n_eval=200,
    n_restarts=1,
    n_updates=20,
    dump_every=5,
    n_dump=32,
    batch_size=8,
    refine_epochs=1,
    latent_steer=False,
)


@experiment(
    "probe.headline",
    claim="Retraining the detector on the PROBE buffer (LoRA-steered, realistic fakes the frozen detector "
    "calls real) raises mean bAcc on five unseen generator families by >= 5 points over the detector as "
    "trained and >= 3 points over adding as many standard samples, with <= 2 points loss on the seen one.",
    presets={
        "smoke": HeadlineConfig(
            dataset="digits",
            size=8,
            n_seeds=1,
            share_zoo=True,
            ddpm_steps=8,
            ddim_steps=4,
            zoo_steps=8,
            n_real=128,
            n_seen=64,
            det_epochs=1,
            n_eval=32,
            n_restarts=1,
            n_updates=4,
            dump_every=2,
            n_dump=8,
            batch_size=4,
            refine_epochs=1,
        ),
        "quick": _QUICK,
        # one process per sub-seed (each trains its own zoo): ~16 CPU-minutes each at 16x16
        "full": HeadlineConfig(workers=3),
        # controls of the comparative checks (icml2026 controls probe.headline --seeds 0-4 --store): the quick
        # preset with the PROBE arm replaced, B2-B5 skipped (no check reads them) and, for CPU time only
        # (# Deviation: 10 control runs at quick's ~100 CPU-s did not fit the session), the seen DDPM and the zoo
        # trained for fewer steps (80 / 20 instead of 200 / 60); the evaluation sizes, the buffer size and the
        # Stage-2 recipe, which set the checks' noise, are quick's
        "planted": dataclasses.replace(_QUICK, control="planted", ddpm_steps=80, zoo_steps=20),
        "null": dataclasses.replace(_QUICK, control="null", ddpm_steps=80, zoo_steps=20),
    },
)
def headline(cfg: HeadlineConfig, rng: np.random.Generator) -> Outcome:
    resolve_device(cfg.device)  # a device this machine lacks stops the run here; the helpers build on cfg.device
    r_seen0, r_zoo0, r_seeds = spawn(rng, 3)
    shared = None
    if cfg.share_zoo:  # the seen DDPM and the zoo side by side (each call carries its own generator)
        seen0, zoo0 = map_in_processes([(_train_seen_of, (cfg, r_seen0)), (_train_zoo_of, (cfg, r_zoo0))], cfg.workers)
        shared = (seen0, zoo0)
    calls = [(_sub_seed, (cfg, s, r, shared)) for s, r in enumerate(spawn(r_seeds, cfg.n_seeds))]
    per: dict[str, list[float]] = {}
    rows: list[dict[str, Any]] = []
    grid: dict[str, np.ndarray] = {}
    unseen: list[str] = list(UNSEEN)
    for res in map_in_processes(calls, cfg.workers, label="probe sub-seeds"):
        for k, v in res["values"].items():
            per.setdefault(k, []).append(v)
        rows.extend(res["rows"])
        grid = grid or res["grid"]
        unseen = res["unseen"]
    metrics: dict[str, float] = {}
    for k, v in per.items():
        metrics[k], metrics[f"{k}_std"], metrics[f"{k}_min"], metrics[f"{k}_max"] = _agg(v)
    # Preconditions (issue 60, fixed before the runs of this version): the detector tells standard seen
    # samples from real, the seen generator's samples are far closer to real than matched noise in the trained
    # realism space, and Stage 1 made the buffer harder for the frozen detector than standard samples by a
    # margin (else PROBE's buffer is B1's by construction and the comparison with B1 tests nothing).
    checks = [
        Check("frozen_acc_on_standard_seen", metrics["frozen_acc_standard"], ">= 0.9", role="precondition"),
        Check("seen_realism_vs_noise", metrics["seen_realism_vs_noise"], f"<= {SEEN_BAR}", role="precondition"),
        Check("buffer_hardness_margin", metrics["hardness_margin"], ">= 0.2", role="precondition"),
        # fails if the critic does not steer (e.g. lam huge, lora_lr tiny): the buffer stays "fake" (~0.9+)
        Check(
            "frozen_acc_on_buffer",
            metrics["frozen_acc_PROBE"],
            "<= 0.5",
            paper="realistic samples that are difficult to classify",
        ),
        # fails when the buffer drifts off the image manifold (lam = 0: tested), in the trained space
        Check("buffer_realism_ratio", metrics["fd_ratio_PROBE"], "<= 1.5"),
        # the brief's criterion 3: mean over the sub-seeds (issue 60: the earlier mean - 2 SE gate was stricter
        # than the brief; its false-positive rate is now measured on the null control instead)
        Check(
            "unseen_bacc_probe_minus_b0",
            metrics["probe_minus_b0"],
            ">= 0.05",
            paper="+14.6 points avg bAcc (ResNet-50, 63.5 -> 78.1)",
            comparative=True,
        ),
        Check(
            "unseen_bacc_probe_minus_b1",
            metrics["probe_minus_b1"],
            ">= 0.03",
            paper="data scale alone is insufficient",
            comparative=True,
        ),
        Check("seen_bacc_drop", metrics["seen_drop"], "<= 0.02", comparative=True),
    ]
    fig, ax = new_figure("bAcc per generator and method (mean over sub-seeds)", "generator", "bAcc")
    gens = ["seen", *unseen]
    x = np.arange(len(gens))
    shown = [m for m in METHODS if f"bacc_seen_{m}" in metrics]
    wdt = 0.8 / len(shown)
    for i, m in enumerate(shown):
        vals = [
            metrics[f"bacc_{'seen' if g == 'seen' else g}_{m}"] if g != "seen" else metrics[f"bacc_seen_{m}"]
            for g in gens
        ]
        ax.bar(x + (i - len(shown) / 2 + 0.5) * wdt, vals, wdt, label=m)
    ax.set_xticks(x, gens, fontsize=7)
    ax.set_ylim(0.4, 1.0)
    ax.legend(fontsize=6, ncol=4)
    return Outcome(
        metrics=metrics, checks=checks, figures={"bacc": fig, "crops": _crop_grid(grid)}, tables={"per_seed": rows}
    )


@config
class LimitConfig:
    """Criterion 1 (second half) and 2: lambda -> large gives the base generator; only Delta-phi moves."""

    n_seeds: int = param(3, 1, 5, help="independent generators/detectors/probes")
    ddpm_steps: int = param(100, 1, 5000, help="seen-DDPM training steps (quality is irrelevant here)")
    n_updates: int = param(20, 1, 500, help="LoRA updates")
    lam_large: float = param(1e6, 1.0, 1e12, help="the 'very large' lambda")
    lam: float = param(1.0, 0.0, 1e3, help="the working lambda (for contrast)")
    # issue 60: 1e-2 before; at 1e-2 the working lambda moved the samples by only 0.024-0.037 (< the 0.05 fixed
    # a priori, now a precondition), so the step is the headline's 2e-2
    lora_lr: float = param(2e-2, 1e-5, 1.0, help="Adam step of Delta-phi (the headline's)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)


@experiment(
    "probe.lambda_limit",
    claim="With lambda very large PROBE's samples equal the base generator's (max abs pixel difference < 1e-3 "
    "at the same noise) while the working lambda moves them; Stage 1 leaves the base UNet and the detector "
    "bit-identical.",
    presets={
        "smoke": LimitConfig(n_seeds=1, ddpm_steps=5, n_updates=4),
        # issue 56: 3 sub-seeds, 60 DDPM steps, 20 updates before (91 CPU-s); the run seeds 0-2 replicate now
        "quick": LimitConfig(n_seeds=1, ddpm_steps=30, n_updates=12),
        "full": LimitConfig(n_seeds=3, ddpm_steps=300, n_updates=60),
    },
)
def lambda_limit(cfg: LimitConfig, rng: np.random.Generator) -> Outcome:
    device = resolve_device(cfg.device)
    real_tr, real_te = load_reals("photos", 8)
    per: dict[str, list[float]] = {}
    for r in track(spawn(rng, cfg.n_seeds), "lambda-limit seeds", total=cfg.n_seeds):
        r_g, r_f, r_d, r_p = spawn(r, 4)
        real = real_tr[r_g.choice(len(real_tr), 1024, replace=False)]
        with torch_seeded(r_g):
            unet = seen_unet(8, 3).to(device)
        gen = DiffusionGenerator(unet, "ddim", 6).fit(real, r_g, n_steps=cfg.ddpm_steps)
        det = Detector(epochs=1, device=device).fit(real[:256], gen.sample(256, r_f), r_d)
        unet0 = {k: v.clone() for k, v in gen.unet.state_dict().items()}
        det0 = {k: v.clone() for k, v in det.net_.state_dict().items()}
        space = realism_space("photos", 8)
        fd_std = space.distance(real_te, gen.sample(128, r_f))  # as many as a buffer (n_dump)
        per.setdefault("fd_ratio_noise", []).append(space.distance(real_te, matched_noise(real, 128, r_f)) / fd_std)
        for name, lam in (("large", cfg.lam_large), ("working", cfg.lam), ("zero", 0.0)):
            pc = ProbeConfig(
                lam=lam,
                lr=cfg.lora_lr,
                n_restarts=1,
                n_updates=cfg.n_updates,
                dump_every=cfg.n_updates,
                n_dump=128,
                batch_size=4,
                grad_steps=2,
            )
            res = probe_generator(gen, det, pc, r_p)
            per.setdefault(f"max_abs_diff_{name}", []).append(float(np.abs(res.buffer - res.base).max()))
            per.setdefault(f"fd_ratio_{name}", []).append(space.distance(real_te, res.buffer) / fd_std)
            per.setdefault(f"lora_norm_{name}", []).append(res.dump_norms[-1])
        same_unet = all(torch.equal(unet0[k], v) for k, v in gen.unet.state_dict().items())
        same_det = all(torch.equal(det0[k], v) for k, v in det.net_.state_dict().items())
        per.setdefault("changed_tensors", []).append(float((not same_unet) + (not same_det)))
    metrics = {
        "max_abs_diff_large_max": float(np.max(per["max_abs_diff_large"])),
        "max_abs_diff_working_min": float(np.min(per["max_abs_diff_working"])),
        "lora_norm_large_max": float(np.max(per["lora_norm_large"])),
        "lora_norm_working_min": float(np.min(per["lora_norm_working"])),
        "changed_tensors_max": float(np.max(per["changed_tensors"])),
        "max_abs_diff_zero_min": float(np.min(per["max_abs_diff_zero"])),
        **{f"fd_ratio_{k}_{f.__name__}": float(f(per[f"fd_ratio_{k}"]))
           for k in ("large", "working", "zero", "noise") for f in (np.min, np.max)},
    }
    checks = [
        # fails if L_prec does not bind (e.g. a sign error, or Adam's lr-sized steps not damped)
        Check("max_abs_pixel_diff_large_lambda", metrics["max_abs_diff_large_max"], "< 1e-3"),
        # precondition: the working lambda does change the samples (fails if the LoRA has no effect), else
        # "lambda large gives the base generator" is true of a LoRA that never moves
        Check("min_abs_pixel_diff_working_lambda", metrics["max_abs_diff_working_min"], "> 0.05",
              role="precondition"),
        Check("base_unet_or_detector_changed", metrics["changed_tensors_max"], "== 0"),
        # issue 60: the realism check (buffer FD <= 1.5 x standard samples', trained space) must be able to fail:
        # shown beside the claims, on the lambda = 0 buffer (no L_prec) and on matched noise
        Check("realism_ratio_lambda0_fails", metrics["fd_ratio_zero_min"], "> 1.5", role="control"),
        Check("realism_ratio_noise_fails", metrics["fd_ratio_noise_min"], "> 1.5", role="control"),
    ]
    return Outcome(metrics=metrics, checks=checks)
