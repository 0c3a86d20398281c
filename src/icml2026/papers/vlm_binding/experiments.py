"""Registered experiments of vlm_binding (acceptance criteria 1-6 of the brief).

* ``generator``     criterion 1: the task generator's invariants and the encoder pre-training accuracy.
* ``noise_control`` criterion 2: unattendable noise tokens only shift positions (logit equality).
* ``regimes``       criteria 3-6: the training regimes over seeds, OOD text accuracy per N, and the
                    interchange / knockout / probe analysis of text-only vs image-text.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, check_workers, resolve_device
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track
from icml2026.core.sweep import map_in_processes
from icml2026.core.training import TrainingOptions, fp16_device_problem

from .data import N_IMAGE_TOKENS, Batch, Vocab, image_batch, noise_text_batch, render_scene, sample_task
from .mechanism import OUTCOMES, interchange_fractions, knockout_profile, probe_layers, sym_pos_ratio
from .model import BindingLM, CellEncoder, pretrain_encoder
from .regimes import REGIMES, Schedule, train_regimes
from .train import Curriculum, accuracy, sample_batch

__all__ = [
    "GeneratorConfig", "MechanismConfig", "NoiseConfig", "RegimesConfig", "generator", "mechanism", "noise_control",
    "regimes",
]


@config
class GeneratorConfig:
    """Generator invariants and encoder pre-training (brief: C=S=32, I=24; encoder ~1 min of training)."""

    n_colours: int = param(32, 2, 216, help="colour tokens C (brief 32, paper 216)")
    n_shapes: int = param(32, 2, 216, help="shape tokens S (brief 32, paper 216)")
    n_items: int = param(24, 2, 64, help="item tokens I (brief 24)")
    n_samples: int = param(200, 1, 5000, help="samples per N checked")
    n_max: int = param(16, 2, 24, help="largest N checked (brief OOD max 16)")
    encoder_steps: int = param(600, 0, 5000, help="encoder pre-training steps (batch 256 cells)")
    encoder_width: int = param(16, 1, 64, help="CNN width")
    feature_dim: int = param(32, 1, 256, help="encoder feature size")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.n_max > min(self.n_colours, self.n_shapes, self.n_items):
            raise ValueError(f"n_max = {self.n_max}: must be <= min(n_colours, n_shapes, n_items)")


@experiment(
    "vlm_binding.generator",
    claim="Every Indirect Retrieval sample has exactly one correct item with distinct colours and shapes; "
    "scenes are deterministic by seed and always give 64 image tokens; the frozen cell encoder "
    "pre-trained here classifies colour and shape of single-object cells with >= 99% accuracy.",
    no_preconditions="exact counts of the generator's invariants and the encoder's own held-out accuracy: nothing "
    "is compared, and no model must first learn anything for these checks to mean what they say",
    presets={
        "smoke": GeneratorConfig(n_samples=20, n_max=8, encoder_steps=20),
        "quick": GeneratorConfig(n_samples=100, encoder_steps=600),
        "full": GeneratorConfig(),
    },
)
def generator(cfg: GeneratorConfig, rng: np.random.Generator) -> Outcome:
    vocab = Vocab(cfg.n_colours, cfg.n_shapes, cfg.n_items)
    r_gen, r_img, r_enc = spawn(rng, 3)
    n_bad_unique = n_bad_distinct = n_bad_tokens = n_bad_det = 0
    total = 0
    for n in range(1, cfg.n_max + 1):
        for _ in range(cfg.n_samples):
            s = sample_task(n, r_gen, vocab)
            total += 1
            colours = [c for c, _ in s.objects]
            shapes = [sh for _, sh in s.objects]
            n_bad_distinct += len(set(colours)) != n or len(set(shapes)) != n
            # exactly one correct item: recompute the two hops independently and count matching items
            matches = [i for sh, i in s.associations if sh == shapes[colours.index(s.query_colour)]]
            n_bad_unique += not (len(matches) == 1 and matches[0] == s.answer and colours.count(s.query_colour) == 1)
        b = image_batch([sample_task(n, r_gen, vocab) for _ in range(4)], r_img)
        n_bad_tokens += int((b.is_context.sum(1) != N_IMAGE_TOKENS).any())
        seed = int(r_img.integers(2**31))
        s = sample_task(n, r_gen, vocab)
        a = render_scene(s, np.random.default_rng(seed))
        c = render_scene(s, np.random.default_rng(seed))
        n_bad_det += int(not np.array_equal(a, c))
    enc = CellEncoder(cfg.feature_dim, cfg.encoder_width)
    rep = pretrain_encoder(enc, vocab, cfg.encoder_steps, r_enc, device=resolve_device(cfg.device))
    metrics = {
        "n_samples": float(total),
        "bad_unique_answer": float(n_bad_unique),
        "bad_distinct": float(n_bad_distinct),
        "bad_image_token_count": float(n_bad_tokens),
        "nondeterministic_render": float(n_bad_det),
        "encoder_colour_acc": rep.colour_accuracy,
        "encoder_shape_acc": rep.shape_accuracy,
        "encoder_empty_acc": rep.empty_accuracy,
    }
    checks = [
        # fails if the association list ever repeats a shape/item or the query colour is absent
        Check("samples_without_unique_answer", n_bad_unique, "== 0", paper="one correct item per sample"),
        Check("samples_with_repeated_colour_or_shape", n_bad_distinct, "== 0"),
        # fails if the image path ever yields a token count depending on N
        Check("batches_without_64_image_tokens", n_bad_tokens, "== 0", paper="64 image tokens"),
        Check("scenes_not_deterministic_by_seed", n_bad_det, "== 0"),
        # fails for an untrained encoder (encoder_steps=0 gives chance accuracy, ~1/C)
        Check("encoder_colour_accuracy", rep.colour_accuracy, ">= 0.99"),
        Check("encoder_shape_accuracy", rep.shape_accuracy, ">= 0.99"),
    ]
    return Outcome(metrics=metrics, checks=checks)


@config
class NoiseConfig:
    """Noise control on a (briefly trained) model: brief d=128, 4 layers."""

    n_layer: int = param(3, 1, 8, help="transformer layers")
    d_model: int = param(64, 8, 256, help="model width (multiple of n_head=4)")
    n_samples: int = param(64, 1, 2000, help="prompts compared")
    n_objects: int = param(5, 1, 16, help="objects per prompt")
    train_steps: int = param(20, 0, 2000, help="text steps before the comparison (weights need not be random)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    workers: int = param(1, 1, 64, help="processes training the sub-seeds side by side (CPU only; same results)")
    precision: str = param("fp32", choices=("fp32", "bf16", "fp16"),
                           help="training precision: bf16 / fp16 mixed precision through accelerate (fp16 on a GPU)")
    grad_accum: int = param(1, 1, 64, help="micro-batches of batch_size per optimizer step (paper scale: 128 = 32 x 4)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        check_workers(self.workers, self.device)
        problem = fp16_device_problem(self.precision, self.device)
        if problem:
            raise ValueError(problem)
        if self.d_model % 4:
            raise ValueError(f"d_model = {self.d_model}: must be a multiple of 4 (n_head = 4)")


def _strip_noise(b: Batch) -> Batch:
    """The same prompts with the noise tokens removed and the position ids of the remaining tokens kept."""
    keep = [np.flatnonzero(b.key_mask[k]) for k in range(len(b))]
    t = max(len(k) for k in keep)
    ids = np.zeros((len(b), t), dtype=np.int64)  # left padding (masked keys; value irrelevant)
    key = np.zeros((len(b), t), bool)
    pos = np.zeros((len(b), t), dtype=np.int64)
    ctx = np.zeros((len(b), t), bool)
    for k, kk in enumerate(keep):
        ids[k, t - len(kk) :], key[k, t - len(kk) :] = b.ids[k, kk], True
        pos[k, t - len(kk) :], ctx[k, t - len(kk) :] = b.position_ids[k, kk], b.is_context[k, kk]
    return Batch(ids, key, pos, b.answer, b.query_slot, b.query_shape, b.n_objects, ctx)


@experiment(
    "vlm_binding.noise_control",
    claim="Noise tokens are unattendable: logits with noise equal (to 1e-5) those of the prompt with the noise "
    "removed and the same shifted position ids, and differ from the unshifted prompt.",
    presets={
        "smoke": NoiseConfig(n_samples=8, train_steps=2),
        "quick": NoiseConfig(),
        "full": NoiseConfig(n_samples=512, train_steps=200),
    },
)
def noise_control(cfg: NoiseConfig, rng: np.random.Generator) -> Outcome:
    from .data import text_batch
    from .train import Trainer

    device = resolve_device(cfg.device)
    vocab = Vocab()
    r_init, r_train, r_data = spawn(rng, 3)
    model = BindingLM(
        vocab,
        None,
        torch.Generator().manual_seed(int(r_init.integers(2**62))),
        n_layer=cfg.n_layer,
        d_model=cfg.d_model,
        n_head=4,
    ).to(device)
    Trainer(model, lr=1e-3, warmup=1).run_stage(cfg.train_steps, {"noise": 0.5, "text": 0.5}, (2, 8), 32, r_train)
    model.eval()
    samples = [sample_task(cfg.n_objects, r_data, vocab) for _ in range(cfg.n_samples)]
    noisy = noise_text_batch(samples, r_data)
    with torch.no_grad():
        l_noise = model(noisy)[0]
        l_shift = model(_strip_noise(noisy))[0]
        l_plain = model(text_batch(samples))[0]
    err = float((l_noise - l_shift).abs().max())
    moved = float((l_noise - l_plain).abs().max())
    metrics = {"max_abs_diff_shifted": err, "max_abs_diff_unshifted": moved}
    checks = [
        # fails if noise tokens were attendable (any query reading a noise key changes the logits)
        Check("noise_vs_shifted_positions_max_abs_logit_diff", err, "< 1e-5", paper="noise only shifts positions"),
        # fails if position ids had no effect (then the noise control would test nothing)
        Check("noise_vs_unshifted_max_abs_logit_diff", moved, "> 1e-3", role="precondition"),
    ]
    return Outcome(metrics=metrics, checks=checks)


@config
class RegimesConfig:
    """Sizes of the regimes run (brief values in the help; CPU-scale defaults, see the card's deviations)."""

    # Deviation: the model and task sizes below are smaller than the brief's (3 layers, d=64, C=S=I=16, ID N<=5,
    # OOD N<=10, batch 32, lr 2e-3; `full` keeps the brief's 8000/4000/4000 stage lengths): the brief's model
    # at batch 128 is ~1.5 h per regime on a free core.

    n_seeds: int = param(3, 1, 10, help="independent seeds (model init and data)")
    n_layer: int = param(3, 1, 24, help="layers (brief 4, paper 12)")
    d_model: int = param(64, 8, 1024, help="width (brief 128; `paper` preset 768); a multiple of n_head")
    n_head: int = param(4, 1, 16, help="attention heads (brief 4; `paper` preset 12)")
    n_colours: int = param(16, 4, 216, help="colour tokens (brief 32, paper 216)")
    n_shapes: int = param(16, 4, 216, help="shape tokens (brief 32, paper 216)")
    n_items: int = param(16, 4, 64, help="item tokens (brief 24, paper 32)")
    n_id_max: int = param(5, 2, 12, help="largest in-distribution N (brief and paper 8); ID = 2..n_id_max")
    n_ood_max: int = param(10, 3, 24, help="largest OOD N (brief 16); OOD = n_id_max+1..n_ood_max")
    steps_text: int = param(3000, 1, 20000, help="stage 1 steps S1 (brief ~8k)")
    steps_image: int = param(1000, 1, 20000, help="stage 2 steps S2 (brief ~4k)")
    steps_mix: int = param(1000, 1, 20000, help="stage 3 steps S3 (brief ~4k)")
    batch_size: int = param(32, 2, 512, help="batch (brief 128)")
    lr: float = param(2e-3, 1e-5, 1e-2, help="AdamW learning rate (brief 3e-4)")
    encoder_steps: int = param(400, 1, 5000, help="encoder pre-training steps")
    n_eval: int = param(200, 10, 5000, help="evaluation samples per N")
    n_pairs: int = param(200, 10, 5000, help="interchange (x, x') pairs")
    n_probe: int = param(600, 40, 10000, help="probe samples")
    noise_image: bool = False
    random_encoder: bool = False
    curriculum: bool = param(True, help="stage 1 grows the largest N from 2 to n_id_max as the loss falls (issue 64)")
    curriculum_loss: float = param(0.1, 1e-4, 5.0, help="running training loss below which the curriculum adds an N")
    control: str = param("none", choices=("none", "planted", "null"),
                         help="the image-text arm replaced by a control of the comparative checks: 'planted' = its "
                         "OOD answers given the oracle's on a fraction 0.514 of prompts (the paper's gain, 37.2 -> "
                         "69.5, as a share of the text-only errors); 'null' = a second text-only model (same "
                         "steps, its own seed)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    workers: int = param(1, 1, 64, help="processes training the sub-seeds side by side (CPU only; same results)")
    precision: str = param("fp32", choices=("fp32", "bf16", "fp16"),
                           help="training precision: bf16 / fp16 mixed precision through accelerate (fp16 on a GPU)")
    grad_accum: int = param(1, 1, 64, help="micro-batches of batch_size per optimizer step (paper scale: 128 = 32 x 4)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        check_workers(self.workers, self.device)
        problem = fp16_device_problem(self.precision, self.device)
        if problem:
            raise ValueError(problem)
        if self.d_model % self.n_head:
            raise ValueError(f"d_model = {self.d_model}: must be a multiple of n_head = {self.n_head}")
        if self.n_ood_max <= self.n_id_max:
            raise ValueError(f"n_ood_max = {self.n_ood_max}: must exceed n_id_max = {self.n_id_max}")
        if self.n_ood_max > min(self.n_colours, self.n_shapes, self.n_items):
            raise ValueError(f"n_ood_max = {self.n_ood_max}: must be <= the colour, shape and item counts")
        if 2 * self.n_id_max > self.n_items:
            raise ValueError(f"n_id_max = {self.n_id_max}: needs 2 * n_id_max <= n_items (interchange)")


def _regime_list(cfg: RegimesConfig) -> tuple[str, ...]:
    out = ["text-only", "text-long", "image-text", "noise-text"]
    if cfg.noise_image:
        out.append("noise-image-text")
    if cfg.random_encoder:
        out.append("image-text-random-encoder")
    return tuple(out)


def _regime_seed(cfg: RegimesConfig, seed: int, r: np.random.Generator, device: torch.device) -> dict[str, Any]:
    """One sub-seed of the regimes run: encoder, the regimes' models, their accuracies per N and the mechanism
    measures of text-only and image-text. Everything is drawn from ``r`` (no global random state), so sub-seeds
    may run in any process and order."""
    vocab = Vocab(cfg.n_colours, cfg.n_shapes, cfg.n_items, 16)
    names = _regime_list(cfg)
    id_ns = list(range(2, cfg.n_id_max + 1))
    ood_ns = list(range(cfg.n_id_max + 1, cfg.n_ood_max + 1))
    sched = Schedule(cfg.steps_text, cfg.steps_image, cfg.steps_mix)
    model_kwargs = {"n_layer": cfg.n_layer, "d_model": cfg.d_model, "n_head": cfg.n_head}
    per_n: dict[str, dict[int, float]] = {}
    mech: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    r_enc, r_rand, r_train, r_eval, r_mech, r_ctl = spawn(r, 6)
    encoder = CellEncoder(32, 16)
    rep = pretrain_encoder(encoder, vocab, cfg.encoder_steps, r_enc, device=device)
    enc = (rep.colour_accuracy, rep.shape_accuracy)
    rand_enc = None
    if cfg.random_encoder:
        rand_enc = CellEncoder(32, 16)
        pretrain_encoder(rand_enc, vocab, 0, r_rand, device=device)  # random init from the seed, never trained
    n_steps = cfg.steps_text * (1 + int(cfg.noise_image)) + (cfg.steps_image + cfg.steps_mix) * (len(names) - 1)
    bar = iter(track(range(n_steps), f"regimes seed {seed}", total=n_steps))

    def tick(it: Any = bar) -> None:
        next(it, None)

    models = train_regimes(
        names,
        sched,
        vocab,
        encoder,
        rand_enc,
        model_kwargs,
        (2, cfg.n_id_max),
        cfg.batch_size,
        cfg.lr,
        r_train,
        on_step=tick,
        device=device,
        options=TrainingOptions(precision=cfg.precision, grad_accum=cfg.grad_accum, max_grad_norm=1.0),
        curriculum=Curriculum(loss_threshold=cfg.curriculum_loss) if cfg.curriculum else None,
    )
    for _ in bar:  # drain (prints the final progress line)
        pass
    if cfg.control == "null":  # the image-text arm is a second text-only model: same method, its own seed
        from .train import Trainer

        r_twin_init, r_twin = spawn(r_ctl, 2)
        twin = BindingLM(vocab, encoder, torch.Generator().manual_seed(int(r_twin_init.integers(2**62))),
                         **model_kwargs).to(device)
        Trainer(twin, lr=cfg.lr, options=TrainingOptions(precision=cfg.precision, grad_accum=cfg.grad_accum,
                                                         max_grad_norm=1.0)).run_stage(
            cfg.steps_text, {"text": 1.0}, (2, cfg.n_id_max), cfg.batch_size, r_twin, None,
            Curriculum(loss_threshold=cfg.curriculum_loss) if cfg.curriculum else None)
        models["image-text"] = twin
    eval_sets = {n: sample_batch(cfg.n_eval, (n, n), vocab, r_eval) for n in id_ns + ood_ns}
    for name in names:
        correct = {n: accuracy(models[name], eval_sets[n], "text", r_eval) for n in eval_sets}
        if cfg.control == "planted" and name == "image-text":
            # the planted effect: the oracle's (correct) answer on a fixed share of the OOD prompts
            for n in ood_ns:
                correct[n] = correct[n] | (r_ctl.random(len(correct[n])) < PLANTED_ORACLE_SHARE)
        acc = {n: float(correct[n].mean()) for n in eval_sets}
        per_n[name] = acc
        rows.append(
            {
                "seed": seed,
                "regime": name,
                "id_acc": round(float(np.mean([acc[n] for n in id_ns])), 4),
                "ood_acc": round(float(np.mean([acc[n] for n in ood_ns])), 4),
                **{f"N={n}": round(acc[n], 3) for n in id_ns + ood_ns},
            }
        )
    for name in ("text-only", "image-text"):
        m = models[name]
        r_i, r_k, r_p = spawn(r_mech, 3)
        inter = interchange_fractions(m, cfg.n_pairs, (3, cfg.n_id_max) if cfg.n_id_max >= 3 else (3, 3), r_i)
        ratio, layer = sym_pos_ratio(inter)
        ko = knockout_profile(m, sample_batch(cfg.n_eval, (2, cfg.n_id_max), vocab, r_k), r_k)
        pr = probe_layers(m, sample_batch(cfg.n_probe, (2, cfg.n_id_max), vocab, r_p), r_p)
        flips = inter.fractions[layer]["symbolic"] + inter.fractions[layer]["positional"]
        mech[name] = {
            "ratio": ratio,
            "layer": layer,
            "flips": flips,
            "fractions": inter.fractions,
            "knockout": ko,
            "probe_slot": pr.slot,
            "probe_shape": pr.shape,
        }
    return {"per_n": per_n, "mech": mech, "enc": enc, "rows": rows}


_QUICK = RegimesConfig(
    n_seeds=1, n_layer=3, d_model=32, n_id_max=4, n_ood_max=8, steps_text=200, steps_image=40, steps_mix=40,
    encoder_steps=300, n_eval=100, n_pairs=40, n_probe=100,
)


#: planted control: share of OOD prompts on which the image-text arm is given the oracle's answer, the paper's
#: gain as a share of the text-only errors, (69.5 - 37.2) / (100 - 37.2)
PLANTED_ORACLE_SHARE = (69.5 - 37.2) / (100 - 37.2)


@experiment(
    "vlm_binding.regimes",
    claim="A text-only transformer learns the task in distribution but fails OOD (more objects); continuing "
    "on image-tokenized prompts then mixing text back raises text-only OOD accuracy >= 1.3x (and >= 10 points "
    "over equal-step text training) and shifts binding from positional to symbolic (higher Sym/Pos ratio).",
    presets={
        "smoke": RegimesConfig(
            n_seeds=1,
            n_layer=1,
            d_model=16,
            steps_text=3,
            steps_image=2,
            steps_mix=2,
            batch_size=4,
            encoder_steps=2,
            n_eval=10,
            n_pairs=10,
            n_probe=40,
        ),
        # issue 64: 3 layers (the task's minimum depth: bind shape to colour, colour to shape, shape to item) with
        # the curriculum over N, 200/40/40 steps; one sub-seed per run (runs 0-2 give the 3 seeds). Until
        # 2026-12-07: 2 layers, 3 sub-seeds of 120/30/30 steps, ID 0.17. Undecided at CPU scale (see the card).
        "quick": _QUICK,
        "planted": dataclasses.replace(_QUICK, control="planted"),
        "null": dataclasses.replace(_QUICK, control="null"),
        # the brief's model and task scale (4 layers, d=128, C=S=32, I=24, ID N<=8, OOD 9..16, batch 128, lr 3e-4,
        # 8k + 4k + 4k steps) with the curriculum: a GPU preset (a CPU core does ~1 step/s of it; see the card).
        # Until 2026-12-07: 3 layers, d=64, batch 32, lr 2e-3, 3 sub-seeds in 33.5 min, ID 0.308
        "full": RegimesConfig(
            n_layer=4, d_model=128, n_colours=32, n_shapes=32, n_items=24, n_id_max=8, n_ood_max=16,
            steps_text=8000, steps_image=4000, steps_mix=4000, batch_size=128, lr=3e-4, encoder_steps=600,
            n_eval=200, n_pairs=200, n_probe=600, noise_image=True, random_encoder=True,
        ),
        # the paper's controlled scale (brief: 12 layers, vocabulary 216 colours x 216 shapes x 32 items, trained on
        # up to 8 objects, OOD beyond 8), the brief's stage lengths and batch, for a GPU (`--device cuda`; cost in
        # the card). Deviation: the paper's width is not in our brief; 768 wide with 12 heads (GPT-2 small's)
        "paper": RegimesConfig(
            n_layer=12, d_model=768, n_head=12, n_colours=216, n_shapes=216, n_items=32, n_id_max=8, n_ood_max=16,
            steps_text=8000, steps_image=4000, steps_mix=4000, batch_size=128, lr=3e-4, encoder_steps=3000,
            n_eval=500, n_pairs=500, n_probe=2000, noise_image=True, random_encoder=True,
        ),
    },
)
def regimes(cfg: RegimesConfig, rng: np.random.Generator) -> Outcome:
    device = resolve_device(cfg.device)
    names = _regime_list(cfg)
    id_ns = list(range(2, cfg.n_id_max + 1))
    ood_ns = list(range(cfg.n_id_max + 1, cfg.n_ood_max + 1))
    per_n: dict[str, list[dict[int, float]]] = {r: [] for r in names}
    mech: dict[str, list[dict[str, Any]]] = {"text-only": [], "image-text": []}
    enc_acc: list[tuple[float, float]] = []
    rows: list[dict[str, Any]] = []
    calls = [(_regime_seed, (cfg, seed, r, device)) for seed, r in enumerate(spawn(rng, cfg.n_seeds))]
    for res in map_in_processes(calls, cfg.workers, label="regimes seeds"):
        for name in names:
            per_n[name].append(res["per_n"][name])
        for name in mech:
            mech[name].append(res["mech"][name])
        enc_acc.append(res["enc"])
        rows.extend(res["rows"])
    metrics: dict[str, float] = {}

    def put(key: str, vals: list[float]) -> None:
        a = np.asarray(vals, float)
        metrics[key], metrics[f"{key}_std"] = float(a.mean()), float(a.std())
        metrics[f"{key}_min"], metrics[f"{key}_max"] = float(a.min()), float(a.max())

    id_acc = {r: [float(np.mean([a[n] for n in id_ns])) for a in per_n[r]] for r in names}
    ood_acc = {r: [float(np.mean([a[n] for n in ood_ns])) for a in per_n[r]] for r in names}
    for reg in names:
        put(f"{reg}_id_acc", id_acc[reg])
        put(f"{reg}_ood_acc", ood_acc[reg])
        for n in id_ns + ood_ns:
            metrics[f"{reg}_acc_N{n}"] = float(np.mean([a[n] for a in per_n[reg]]))
    for name in mech:
        put(f"{name}_sym_pos_ratio", [m["ratio"] for m in mech[name]])
        metrics[f"{name}_dominant_layer_mean"] = float(np.mean([m["layer"] for m in mech[name]]))
        put(f"{name}_sym_plus_pos_flips", [m["flips"] for m in mech[name]])
    put("encoder_colour_acc", [a for a, _ in enc_acc])
    put("encoder_shape_acc", [b for _, b in enc_acc])
    t_ood, l_ood, i_ood, n_ood = (
        np.asarray(ood_acc[k]) for k in ("text-only", "text-long", "image-text", "noise-text")
    )
    # paired per-seed statistics (same init and stage 1 for every regime of a seed)
    put("ood_gain_image_vs_long", list(i_ood - l_ood))
    put("ood_gain_noise_vs_text_only", list(n_ood - t_ood))
    put("ood_gain_image_vs_noise", list(i_ood - n_ood))
    ratio_it = np.array([m["ratio"] for m in mech["image-text"]])
    ratio_t = np.array([m["ratio"] for m in mech["text-only"]])
    put("sym_pos_ratio_change", list(np.log(ratio_it) - np.log(ratio_t)))
    put("ood_ratio_image_over_text_only", list(i_ood / np.maximum(t_ood, 1e-9)))
    # Headline comparisons (criteria 4-6) must hold on EVERY sub-seed: the checks read the minimum over
    # sub-seeds of the paired per-seed statistic (ratios of small accuracies and of smoothed flip counts are
    # unstable, and a mean can be carried by one seed). With one sub-seed the minimum is that seed's value.
    ood_ratio = metrics["ood_ratio_image_over_text_only_min"]
    # Criterion 3 is the precondition of every comparison (issue 64): a text-only model that has learned the task in
    # distribution (ID half; fails for an under-trained model) and still fails OOD (the shortcut, OOD half; fails
    # for a model that generalises by itself, leaving nothing to correct). Below them the comparisons are ratios
    # and differences of chance-level accuracies, and the run is undecided.
    checks = [
        Check("text_only_id_acc", metrics["text-only_id_acc"], ">= 0.98", paper="~100% ID", role="precondition"),
        Check("text_only_ood_acc", metrics["text-only_ood_acc"], "<= 0.60", paper="37.2% OOD", role="precondition"),
        # criterion 4, on the minimum over sub-seeds of the paired per-seed statistic: fails if images do not
        # help, or help no more than the same number of further text steps
        Check("ood_ratio_image_text_over_text_only", ood_ratio, ">= 1.3", paper="69.5 / 37.2 = 1.87",
              comparative=True),
        Check("ood_gain_image_text_minus_text_long", metrics["ood_gain_image_vs_long_min"], ">= 0.10",
              comparative=True),
        # criterion 4, no forgetting: fails if the image stages cost the text task in distribution
        Check("image_text_id_acc", metrics["image-text_id_acc"], ">= 0.97", paper="no forgetting"),
    ]
    # Deviation (issue 64): criteria 5 (a soft check in the brief) and 6 are reported as metrics
    # (ood_gain_noise_vs_text_only_min, ood_gain_image_vs_noise_min, sym_pos_ratio_change_min,
    # *_sym_plus_pos_flips_min), not checked: no planted control of the interchange ratio can be built by
    # construction here, and a comparative check without measured power may not decide a verdict.
    figures = _figures(names, per_n, mech, id_ns, ood_ns, cfg.n_layer)
    tables: dict[str, list[dict[str, Any]]] = {
        "per_seed": rows,
        "mechanism": [
            {
                "regime": name,
                "seed": s,
                "sym_pos_ratio": round(m["ratio"], 3),
                "dominant_layer": m["layer"],
                "sym_plus_pos": round(m["flips"], 3),
                "knockout_acc": [round(x, 3) for x in m["knockout"]],
                "probe_slot": [round(x, 3) for x in m["probe_slot"]],
                "probe_shape": [round(x, 3) for x in m["probe_shape"]],
                **{f"L{k}": " ".join(f"{o[:3]}={f[o]:.2f}" for o in OUTCOMES) for k, f in enumerate(m["fractions"])},
            }
            for name in mech
            for s, m in enumerate(mech[name])
        ],
    }
    return Outcome(metrics=metrics, checks=checks, figures=figures, tables=tables)


def _figures(
    names: tuple[str, ...],
    per_n: dict[str, list[dict[int, float]]],
    mech: dict[str, list[dict[str, Any]]],
    id_ns: list[int],
    ood_ns: list[int],
    n_layer: int,
) -> dict[str, Any]:
    ns = id_ns + ood_ns
    fig, ax = new_figure(
        "Text accuracy vs number of objects (mean, min-max over seeds)", "number of objects N", "accuracy"
    )
    for name in names:
        a = np.array([[acc[n] for n in ns] for acc in per_n[name]])
        ax.plot(ns, a.mean(0), marker="o", label=name)
        ax.fill_between(ns, a.min(0), a.max(0), alpha=0.15)
    ax.plot(ns, [1.0 / n for n in ns], color="black", ls=":", lw=1, label="chance 1/N (any listed item)")
    ax.axvline(id_ns[-1] + 0.5, color="grey", ls="--", lw=1)
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7)
    figs: dict[str, Any] = {"accuracy_vs_n": fig}
    for name in mech:
        f2, ax2 = new_figure(f"Interchange outcome per layer, {name} (mean over seeds)", "layer", "fraction")
        for o in OUTCOMES:
            ax2.plot(
                range(n_layer),
                [np.mean([m["fractions"][k][o] for m in mech[name]]) for k in range(n_layer)],
                marker="o",
                label=o,
            )
        ax2.set_ylim(-0.02, 1.02)
        ax2.legend(fontsize=7)
        figs[f"interchange_{name.replace('-', '_')}"] = f2
    fig3, ax3 = new_figure("Linear probe accuracy per layer (mean over seeds)", "layer", "held-out accuracy")
    for name in mech:
        ax3.plot(
            range(n_layer), np.mean([m["probe_slot"] for m in mech[name]], 0), marker="o", label=f"{name}: slot of c_q"
        )
        ax3.plot(
            range(n_layer),
            np.mean([m["probe_shape"] for m in mech[name]], 0),
            marker="s",
            ls="--",
            label=f"{name}: bound shape",
        )
    ax3.legend(fontsize=7)
    figs["probes_per_layer"] = fig3
    return figs


_ = REGIMES  # the full list of regimes lives in .regimes


@config
class MechanismConfig:
    """The mechanism analyses on one model: ours trained here (text only) or a Hugging Face causal LM."""

    model: str = param("", help="a Hugging Face causal LM folder or .gguf file (GPT-2, Llama, Qwen2 layouts; its "
                       "tokenizer builds the prompts); '' = our BindingLM trained here on text")
    dtype: str = param("float32", choices=("float32", "bfloat16", "float16"), help="weights of a loaded model")
    n_layer: int = param(4, 1, 24, help="layers of the model trained here")
    d_model: int = param(64, 8, 1024, help="width of the model trained here (a multiple of 4)")
    train_steps: int = param(300, 0, 100000, help="text steps of the model trained here")
    batch_size: int = param(32, 2, 512, help="batch of the model trained here")
    lr: float = param(3e-3, 1e-5, 1e-1, help="AdamW learning rate of the model trained here")
    n_colours: int = param(16, 4, 32, help="colour tokens (a loaded model's prompts use colour words, 32 at most)")
    n_shapes: int = param(16, 4, 32, help="shape tokens (32 words at most)")
    n_items: int = param(16, 6, 24, help="item tokens (24 words at most)")
    n_min: int = param(3, 3, 12, help="fewest objects in the analysed prompts (the intervention needs 3)")
    n_max: int = param(5, 3, 12, help="most objects in the analysed prompts (the trained range)")
    n_eval: int = param(200, 10, 5000, help="prompts per N for the accuracy")
    n_pairs: int = param(200, 10, 5000, help="interchange (x, x') pairs")
    n_probe: int = param(400, 40, 10000, help="probe prompts")
    n_noise: int = param(32, 2, 1000, help="prompts of the noise-token control")
    min_id_acc: float = param(0.98, 0.0, 1.0, help="precondition: accuracy on the analysed prompts (brief 0.98)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.n_max < self.n_min:
            raise ValueError(f"n_max = {self.n_max}: must be >= n_min = {self.n_min}")
        if self.d_model % 4:
            raise ValueError(f"d_model = {self.d_model}: must be a multiple of 4 (n_head = 4)")
        if 2 * self.n_max > self.n_items:
            raise ValueError(f"n_max = {self.n_max}: needs 2 * n_max <= n_items (interchange)")
        if self.n_max > min(self.n_colours, self.n_shapes):
            raise ValueError(f"n_max = {self.n_max}: must be <= n_colours and n_shapes")
        if self.model:
            from icml2026.core.errors import BadInput
            from icml2026.core.loaders import check_model_path

            try:
                check_model_path(self.model, kinds=("hf", "gguf"))
            except BadInput as exc:
                raise ValueError(str(exc)) from None


def _noise_gap(model: Any, samples: list[Any], rng: np.random.Generator) -> tuple[float, float]:
    """(max |logit diff| noise vs noise removed with the same positions, the same vs no shift) at the query."""
    from .mechanism import _batch

    noisy = _batch(model, samples, "noise", rng)
    with torch.no_grad():
        l_noise = model(noisy)[0]
        l_shift = model(_strip_noise(noisy))[0]
        l_plain = model(_batch(model, samples, "text", rng))[0]
    return float((l_noise - l_shift).abs().max()), float((l_noise - l_plain).abs().max())


@experiment(
    "vlm_binding.mechanism",
    claim="In a model that does the task, binding is more symbolic than positional: the interchange "
    "intervention's Sym/Pos ratio at the dominant layer exceeds 1 (the paper's real models: 1.2-2.5). The "
    "activation patching, knockout, probes and noise-token control run on our model or any Hugging Face causal "
    "LM (--set model=PATH) with prompts from the same generator.",
    presets={
        "smoke": MechanismConfig(train_steps=2, n_layer=2, d_model=16, n_eval=10, n_pairs=10, n_probe=40,
                                 n_noise=4),
        "quick": MechanismConfig(n_layer=3, d_model=32, train_steps=300, n_eval=100, n_pairs=100, n_probe=200),
        "full": MechanismConfig(train_steps=8000, batch_size=128, lr=1e-3),
    },
)
def mechanism(cfg: MechanismConfig, rng: np.random.Generator) -> Outcome:
    from .hf import HFBindingModel
    from .train import Trainer

    device = resolve_device(cfg.device)
    r_init, r_train, r_eval, r_i, r_k, r_p, r_n = spawn(rng, 7)
    model: Any
    if cfg.model:
        model = HFBindingModel.load(cfg.model, device=str(device), dtype=cfg.dtype, n_colours=cfg.n_colours,
                                    n_shapes=cfg.n_shapes, n_items=cfg.n_items)
        source = "loaded"
    else:
        vocab = Vocab(cfg.n_colours, cfg.n_shapes, cfg.n_items, 16)
        model = BindingLM(vocab, None, torch.Generator().manual_seed(int(r_init.integers(2**62))),
                          n_layer=cfg.n_layer, d_model=cfg.d_model, n_head=4).to(device)
        tr = Trainer(model, lr=cfg.lr)
        tr.run_stage(cfg.train_steps, {"text": 1.0}, (2, cfg.n_max), cfg.batch_size, r_train, None, Curriculum())
        source = "trained here"
    model.eval()
    ns = list(range(cfg.n_min, cfg.n_max + 1))
    with torch.no_grad():
        acc = {n: float(accuracy(model, sample_batch(cfg.n_eval, (n, n), model.vocab, r_eval), "text", r_eval).mean())
               for n in ns}
    inter = interchange_fractions(model, cfg.n_pairs, (cfg.n_min, cfg.n_max), r_i)
    ratio, layer = sym_pos_ratio(inter)
    flips = inter.fractions[layer]["symbolic"] + inter.fractions[layer]["positional"]
    ko = knockout_profile(model, sample_batch(cfg.n_eval, (cfg.n_min, cfg.n_max), model.vocab, r_k), r_k)
    pr = probe_layers(model, sample_batch(cfg.n_probe, (cfg.n_min, cfg.n_max), model.vocab, r_p), r_p)
    gap, moved = _noise_gap(model, sample_batch(cfg.n_noise, (cfg.n_min, cfg.n_max), model.vocab, r_n), r_n)
    id_acc = float(np.mean(list(acc.values())))
    metrics: dict[str, float] = {
        "id_acc": id_acc, **{f"acc_N{n}": a for n, a in acc.items()}, "chance": float(np.mean([1 / n for n in ns])),
        "sym_pos_ratio": ratio, "dominant_layer": float(layer), "sym_plus_pos_flips": flips,
        "noise_vs_shifted_max_abs_logit_diff": gap, "noise_vs_unshifted_max_abs_logit_diff": moved,
        "n_layer": float(model.n_layer), "probe_slot_chance": pr.slot_chance, "probe_shape_chance": pr.shape_chance,
    }
    checks = [
        # the analyses read a binding mechanism only in a model that does the task (an untrained or random model fails)
        Check("id_acc", id_acc, f">= {cfg.min_id_acc:g}", paper="~100% ID", role="precondition"),
        # the noise control of this model: masked noise tokens only shift positions (fails if they were attendable)
        Check("noise_vs_shifted_positions_max_abs_logit_diff", gap, "< 1e-4", role="precondition"),
        # the ratio means something only if patching moves the prediction to x's symbolic or positional item
        Check("sym_plus_pos_flips_at_dominant_layer", flips, ">= 0.2", role="precondition"),
        # fails for a model that binds by position (the text-only shortcut the paper describes)
        Check("sym_pos_ratio", ratio, "> 1.0", paper="Qwen2 1.383, Qwen2.5 1.218, Qwen3 1.819 (base LLMs)"),
    ]
    tables = {
        "layers": [
            {"layer": k, **{o: round(inter.fractions[k][o], 3) for o in OUTCOMES}, "knockout_acc": round(ko[k], 3),
             "probe_slot": round(pr.slot[k], 3), "probe_shape": round(pr.shape[k], 3)}
            for k in range(model.n_layer)
        ],
        "model": [{"source": source, "path": cfg.model or "-", "n_layer": model.n_layer}],
    }
    return Outcome(metrics=metrics, checks=checks, tables=tables)
