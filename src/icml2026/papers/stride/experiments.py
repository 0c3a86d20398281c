"""Registered experiments of STRIDE (brief criteria 5 and 6): the protein stress test and molecule editing.

Each experiment trains its models for ``n_seeds`` independent seeds (streams spawned from the run's
generator) and states its claims over the mean of those seeds, with the spread in the metrics.
``python -m icml2026.papers.stride.experiments --quick`` runs both quick presets (criterion 7).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from icml2026.core import Check, Outcome, experiment, spawn, torch_generator
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, check_workers, resolve_device
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track
from icml2026.core.sweep import map_in_processes

from .baselines import direct_sft_data, random_perturbation, trajectory_sft_data
from .data import make_molecule_task, make_protein_task, random_variant
from .edits import edit_distance, tokenize_smiles
from .evaluate import executed_output, molecule_metrics, protein_metrics
from .policy import (
    AdapterDisabled,
    EditCodec,
    EditVocab,
    PolicyConfig,
    SFTConfig,
    build_policy,
    is_adapted,
    load_policy,
    sample,
    sft_train,
)
from .pretrain import shared_vocab, teacher_forced_exact
from .rewards import completion_reward, is_protein, molecule_reward, protein_reward, score_molecule_edit
from .rl import RLConfig, rl_train

__all__ = ["ProteinConfig", "MoleculeConfig", "protein_stress_test", "molecule_editing"]


def _model_rules(d_model: int, n_heads: int) -> None:
    if d_model % n_heads:
        raise ValueError(f"d_model = {d_model}: must be divisible by n_heads ({n_heads})")


#: The shipped Stage 0 checkpoint (``model = "pretrained"``): the tiny edit-language model of
#: :mod:`.pretrain`, saved with ``save_pretrained`` and its word-level tokenizer.
PRETRAINED = Path(__file__).resolve().parent / "checkpoints" / "edit-lm-tiny"
_MODEL_HELP = ("'pretrained' (the shipped tiny Stage 0 checkpoint), 'scratch' (a fresh tiny model of d_model, "
               "n_layers, n_heads, family) or a local Hugging Face folder (model + tokenizer, save_pretrained)")


def _check_model(model: str) -> None:
    if model in ("pretrained", "scratch"):
        return
    from icml2026.core.errors import BadInput
    from icml2026.core.loaders import check_model_path

    try:
        check_model_path(model, key="model", kinds=("hf", "gguf"))
    except BadInput as exc:
        raise ValueError(str(exc)) from None


def _arm(cfg: Any, vocab: EditVocab, gen: torch.Generator, device: torch.device, max_len: int
         ) -> tuple[Any, EditCodec]:
    """A fresh policy of one arm and its codec: the shipped checkpoint, a tiny model from scratch, or the
    user's checkpoint (``cfg.model``), with LoRA adapters when ``cfg.lora_rank`` > 0."""
    dtype = "bfloat16" if cfg.bf16 else None
    if cfg.model == "scratch":
        model = build_policy(vocab, PolicyConfig(cfg.family, cfg.d_model, cfg.n_layers, cfg.n_heads, max_len), gen)
        tok = vocab.tokenizer()
        if cfg.bf16:
            model = model.to(torch.bfloat16)
    else:
        model, tok = load_policy(PRETRAINED if cfg.model == "pretrained" else cfg.model, dtype=dtype)
    if cfg.lora_rank:
        from icml2026.core.loaders import apply_lora

        # paper: alpha = 2 r (SFT r 32 / alpha 64, RL r 16 / alpha 32)
        model = apply_lora(model, r=cfg.lora_rank, alpha=2 * cfg.lora_rank, target_modules="all-linear",
                           task_type="CAUSAL_LM")
    return model.to(device), EditCodec(tok, vocab, index_source=cfg.index_source)


def _stage2_start(sft_model: Any, cfg: Any) -> tuple[Any, Any]:
    """(the model Stage II trains, a view of the Stage I model for evaluation). With LoRA the Stage I adapter
    is merged and a fresh one added: pi_ref and STRIDE-SFT are then that model with its adapter off (no
    copy); otherwise Stage II trains a copy."""
    if not is_adapted(sft_model):
        return copy.deepcopy(sft_model), sft_model
    from icml2026.core.loaders import apply_lora

    rl = apply_lora(sft_model.merge_and_unload(), r=cfg.lora_rank, alpha=2 * cfg.lora_rank,
                    target_modules="all-linear", task_type="CAUSAL_LM")
    return rl, AdapterDisabled(rl)


def _limits(codec: EditCodec, model: Any, prompts: list[list[int]], comps: list[list[int]]) -> int:
    """max_new_tokens: the longest training completion plus 8, within the model's positions."""
    from .policy import _max_positions

    max_new = max(len(c) for c in comps) + 8
    room = _max_positions(getattr(model, "wrapped", model)) - max(len(p) for p in prompts)
    if room < max(len(c) for c in comps):
        raise ValueError(f"model: {room} positions left after the longest prompt, but a completion has "
                         f"{max(len(c) for c in comps)} tokens")
    return min(max_new, room)


def _sample_texts(model: Any, codec: EditCodec, prompts: list[list[int]], n: int, gen: torch.Generator,
                  max_new: int, temperature: float, top_p: float = 1.0) -> list[str]:
    comps = sample(model, prompts, n=n, max_new_tokens=max_new, eos_id=codec.eos_id, pad_id=codec.pad_id,
                   generator=gen, temperature=temperature, top_p=top_p)
    return [codec.decode_completion(c) for c in comps]


# ---------------------------------------------------------------------------------------------------------
# Protein stress test (criterion 5)
# ---------------------------------------------------------------------------------------------------------
Control = Literal["none", "planted", "null"]


@config
class _PolicyConfig:
    """The fields both experiments share: the policy (which model, LoRA, precision), its SFT and RL steps' common
    settings, and where it runs. Each experiment's config adds its task and its RL algorithm's fields."""

    model: str = param("pretrained", help=_MODEL_HELP)
    index_source: bool = param(True, help="write each source token after its position word (P0 A P1 C ...; a "
                               "molecule: P0 c P1 1 ...)")
    lora_rank: int = param(0, 0, 1024, help="LoRA rank of both stages (0: full fine-tune; paper: 32 SFT, 16 RL)")
    bf16: bool = param(False, help="load / cast the policy to bfloat16")
    grad_accum: int = param(1, 1, 1024, help="SFT micro-batches per step")
    family: Literal["gpt2", "llama"] = "llama"
    d_model: int = param(64, 8, 512, help="model = scratch only (brief: 128)")
    n_layers: int = param(2, 1, 12, help="model = scratch only (brief: 4)")
    n_heads: int = param(4, 1, 16, help="model = scratch only")
    sft_batch: int = param(64, 1, 1024)
    sft_lr: float = param(1e-3, 0, 0.1, lo_open=True)
    group_size: int = param(8, 2, 64)
    rl_lr: float = param(1e-4, 0, 0.1, lo_open=True)
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    workers: int = param(1, 1, 64, help="processes training the seeds side by side (CPU only; same results)")

    def _check_policy(self) -> None:
        """The rules between the shared fields (each experiment's ``__post_init__`` calls it first)."""
        check_device_name(self.device)
        check_workers(self.workers, self.device)
        _model_rules(self.d_model, self.n_heads)
        _check_model(self.model)
        if self.grad_accum > self.sft_batch:
            raise ValueError(f"grad_accum = {self.grad_accum}: must be <= sft_batch ({self.sft_batch})")


@config
class ProteinConfig(_PolicyConfig):
    n_seeds: int = param(3, 1, 10, help="independent seeds (data, models); claims use their mean")
    length: int = param(32, 8, 56, help="ancestor length (brief: 32; positions P0..P63 bound it)")
    n_train_sources: int = param(200, 2, 2000, help="brief: 200")
    n_test_sources: int = param(20, 1, 200, help="brief: 20 held-out sources")
    targets_per_source: int = param(20, 1, 100, help="noisy-oracle SFT targets per source (brief: ~20)")
    true_improve_frac: float = param(0.55, 0.05, 0.95, help="fraction of kept targets that truly improve")
    n_eval_train_sources: int = param(20, 1, 200, help="training sources also evaluated (the paper's WT setting)")
    n_samples: int = param(100, 1, 1000, help="samples per source (paper: N = 100)")
    eval_temperature: float = param(1.0, 0.05, 5.0, help="brief: T = 1.0")
    sft_steps: int = param(600, 1, 20000)
    rl_algo: Literal["grpo", "gspo"] = "grpo"
    reward: Literal["paper", "official"] = "paper"
    rl_steps: int = param(300, 1, 5000, help="brief: 300-500")
    rl_prompts: int = param(16, 1, 256, help="brief: 16 prompts x G = 8")
    clip_eps: float = param(0.2, 0, 1, lo_open=True, hi_open=True, help="paper: 0.2")
    kl_beta: float = param(0.001, 0, 10, help="paper: 0.001")
    # Deviation: protein rollouts at T = 1.0, top-p 1 (the brief's evaluation temperature), not the paper's 0.7 / 0.9
    rl_temperature: float = param(1.0, 0.05, 5.0, help="rollout temperature")
    rl_top_p: float = param(1.0, 0.01, 1.0, lo_open=True)
    control: Control = param("none", help="controls of the comparative checks: 'planted' = the STRIDE arm is the "
                             "baseline arm with failed samples swapped for oracle successes (expected gain "
                             "0.47, the paper's); 'null' = the STRIDE arm is the baseline method trained on "
                             "another seed (no Stage II)")

    def __post_init__(self) -> None:
        self._check_policy()
        if self.n_eval_train_sources > self.n_train_sources:
            raise ValueError(f"n_eval_train_sources = {self.n_eval_train_sources}: must be <= n_train_sources "
                             f"({self.n_train_sources})")


#: The paper's gain of STRIDE over Vanilla SFT (89/100 - 42/100); the planted control's expected effect.
PAPER_PROTEIN_GAIN = 0.47


def _oracle_successes(src: str, oracle: Any, targets: set[str], rng: np.random.Generator, k: int) -> list[str]:
    """Up to ``k`` distinct novel 1-3-edit variants of ``src`` that the oracle scores above it (the planted
    control's "oracle" outputs)."""
    f_src, out, seen = oracle.score(src), list[str](), set[str]()
    for _ in range(400 * k):
        if len(out) == k:
            break
        v = random_variant(src, rng)
        if v in seen or v in targets or v == src:
            continue
        seen.add(v)
        if 1 <= edit_distance(src, v) <= 3 and oracle.score(v) > f_src:
            out.append(v)
    return out


def _plant(outs: list[list[str | None]], sources: list[str], task: Any, rng: np.random.Generator
           ) -> list[list[str | None]]:
    """The planted arm: ``outs`` with each failed sample swapped, with probability ``q``, for an oracle
    success, ``q`` set so that the expected success gain is :data:`PAPER_PROTEIN_GAIN` (capped at 1)."""
    ok = [[o is not None and is_protein(o) and 1 <= edit_distance(s, o) <= 3
           and task.oracle.score(o) > task.oracle.score(s) for o in row] for s, row in zip(sources, outs, strict=True)]
    n_fail = sum(not x for row in ok for x in row)
    total = sum(len(row) for row in outs)
    q = min(1.0, PAPER_PROTEIN_GAIN * total / n_fail) if n_fail else 0.0
    planted = []
    for s, row, good in zip(sources, outs, ok, strict=True):
        pool = _oracle_successes(s, task.oracle, set(task.targets.get(s, [])), rng, len(row))
        new = list(row)
        for j, g in enumerate(good):
            if not g and pool and rng.random() < q:
                new[j] = pool[int(rng.integers(len(pool)))]
        planted.append(new)
    return planted


def _protein_outputs(model: Any, codec: EditCodec, sources: list[str], n: int, trajectory: bool,
                     temperature: float, gen: torch.Generator, max_new: int) -> list[list[str | None]]:
    texts = _sample_texts(model, codec, [codec.prompt(s) for s in sources], n, gen, max_new, temperature)
    return [[executed_output(s, texts[k * n + j], trajectory) for j in range(n)] for k, s in enumerate(sources)]


def _protein_seed(cfg: ProteinConfig, rng: np.random.Generator, device: torch.device,
                  tag: str = "") -> dict[str, float]:
    # Deviation: a tiny llama-class model (pretrained on generic edits, Stage 0, see pretrain.py) stands in for
    # Qwen3-14B + LoRA; the presets are smaller still than the brief's CPU plan (see README.md).
    r_data, r_sft, r_van, r_rl, r_eval, r_ctl = spawn(rng, 6)
    task = make_protein_task(r_data, length=cfg.length, n_train=cfg.n_train_sources, n_test=cfg.n_test_sources,
                             targets_per_source=cfg.targets_per_source, true_improve_frac=cfg.true_improve_frac)
    vocab = shared_vocab()
    pairs = [(s, t, None) for s in task.train_sources for t in task.targets[s]]
    # Deviation: the paper's d in 1[1 <= d <= 3] is read as Levenshtein(x_src, x_out) (= the success metric's d)
    max_len = 4 * cfg.length + 64
    scfg = SFTConfig(n_steps=cfg.sft_steps, batch_size=cfg.sft_batch, lr=cfg.sft_lr, grad_accum=cfg.grad_accum)
    timings: dict[str, float] = {}

    losses: dict[str, np.ndarray] = {}

    def sft_arm(r: np.random.Generator, trajectory: bool, desc: str) -> tuple[Any, EditCodec]:
        model, codec = _arm(cfg, vocab, torch_generator(r), device, max_len)
        data = trajectory_sft_data(codec, pairs) if trajectory else direct_sft_data(codec, pairs)
        losses[desc] = sft_train(model, *data, codec.pad_id, scfg, r, desc=f"{tag}{desc}")
        return model, codec

    t0 = time.perf_counter()
    stride_sft, codec = sft_arm(r_sft, True, "STRIDE-SFT")
    vanilla, _ = sft_arm(r_van, False, "Vanilla SFT")
    timings["sft_s"] = time.perf_counter() - t0
    t_prompts, t_comps = trajectory_sft_data(codec, pairs)
    max_new = _limits(codec, stride_sft, t_prompts, t_comps)

    t0 = time.perf_counter()
    hist = None
    if cfg.control == "none":
        stride, stride_sft = _stage2_start(stride_sft, cfg)
        prompts = [codec.prompt(s) for s in task.train_sources]

        def reward(k: int, ids: list[int]) -> float:
            src = task.train_sources[k]
            return completion_reward(src, codec.decode_completion(ids),
                                     lambda s, o: protein_reward(s, o, task.oracle, cfg.reward))

        rcfg = RLConfig(algo=cfg.rl_algo, n_steps=cfg.rl_steps, n_prompts=cfg.rl_prompts, group_size=cfg.group_size,
                        lr=cfg.rl_lr, eps=cfg.clip_eps, beta=cfg.kl_beta, temperature=cfg.rl_temperature,
                        top_p=cfg.rl_top_p, max_new_tokens=max_new)
        hist = rl_train(stride, prompts, reward, rcfg, r_rl, eos_id=codec.eos_id, pad_id=codec.pad_id,
                        desc=f"{tag}STRIDE RL")
    elif cfg.control == "null":  # both arms of each comparison one method: the baseline on another seed
        r_n1, r_n2 = spawn(r_ctl, 2)
        null_vanilla, _ = sft_arm(r_n1, False, "null: Vanilla SFT (2nd seed)")
        null_sft, _ = sft_arm(r_n2, True, "null: STRIDE-SFT (2nd seed)")
    timings["rl_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    out: dict[str, float] = {}
    # Preconditions on the held-out sources: Stage I copies and indexes the source (teacher-forced exact
    # output after the ground-truth trajectory; samples that pass the gate), and Vanilla SFT edits the source
    # it is given (its samples lie within 1-3 edits of it) rather than writing a memorised sequence.
    test_pairs = [(s, t, None) for s in task.test_sources for t in task.targets[s]]
    out["stage1.test.tf_exact"] = teacher_forced_exact(stride_sft, codec, test_pairs)
    out["stage1.train.tf_exact"] = teacher_forced_exact(
        stride_sft, codec, [(s, t, None) for s in task.train_sources[:cfg.n_test_sources] for t in task.targets[s]])
    splits = {"test": task.test_sources, "train": task.train_sources[:cfg.n_eval_train_sources]}
    gen = torch_generator(r_eval)
    for split, sources in splits.items():
        per_method: dict[str, list[list[str | None]]] = {
            "random": [list[str | None](random_perturbation(s, cfg.n_samples, r_eval)) for s in sources],
            "vanilla_sft": _protein_outputs(vanilla, codec, sources, cfg.n_samples, False, cfg.eval_temperature,
                                            gen, max_new),
            "stride_sft": _protein_outputs(stride_sft, codec, sources, cfg.n_samples, True, cfg.eval_temperature,
                                           gen, max_new),
        }
        if cfg.control == "none":
            per_method["stride"] = _protein_outputs(stride, codec, sources, cfg.n_samples, True,
                                                    cfg.eval_temperature, gen, max_new)
            per_method["stride_vs_vanilla"] = per_method["stride_vs_sft"] = per_method["stride"]
        elif cfg.control == "planted":
            per_method["stride_vs_vanilla"] = _plant(per_method["vanilla_sft"], sources, task, r_ctl)
            per_method["stride_vs_sft"] = _plant(per_method["stride_sft"], sources, task, r_ctl)
            per_method["stride"] = per_method["stride_vs_vanilla"]
        else:
            per_method["stride_vs_vanilla"] = _protein_outputs(null_vanilla, codec, sources, cfg.n_samples, False,
                                                               cfg.eval_temperature, gen, max_new)
            per_method["stride_vs_sft"] = _protein_outputs(null_sft, codec, sources, cfg.n_samples, True,
                                                           cfg.eval_temperature, gen, max_new)
            per_method["stride"] = per_method["stride_vs_sft"]
        for m, outs in per_method.items():
            pm = protein_metrics(task.oracle, sources, outs, task.targets)
            for key in ("success", "unique", "novelty", "consistent", "copy_rate"):
                out[f"{split}.{m}.{key}"] = getattr(pm, key)
        near = [o is not None and is_protein(o) and 1 <= edit_distance(s, o) <= 3
                for s, row in zip(sources, per_method["vanilla_sft"], strict=True) for o in row]
        out[f"{split}.vanilla_sft.near_source"] = float(np.mean(near))
    timings["eval_s"] = time.perf_counter() - t0
    curve = hist.mean_reward if hist is not None else np.zeros(1)
    q = len(curve) // 10 or 1
    out["rl.reward_first10pct"] = float(np.mean(curve[:q]))
    out["rl.reward_last10pct"] = float(np.mean(curve[-q:]))
    for key, name in (("stride_sft", "STRIDE-SFT"), ("vanilla_sft", "Vanilla SFT")):
        k = len(losses[name]) // 10 or 1
        out[f"sft.{key}.loss_first10pct"] = float(np.mean(losses[name][:k]))
        out[f"sft.{key}.loss_last10pct"] = float(np.mean(losses[name][-k:]))
    out["data.sigma"] = task.sigma
    out["data.true_improve_frac"] = task.true_improve_frac
    out["_curve"] = curve  # type: ignore[assignment]
    out["_timings"] = timings  # type: ignore[assignment]
    return out


def _aggregate(per_seed: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, float]]:
    keys = [k for k in per_seed[0] if not k.startswith("_")]
    metrics: dict[str, float] = {}
    for k in keys:
        vals = np.array([s[k] for s in per_seed], dtype=float)
        metrics[f"{k}.mean"] = float(np.nanmean(vals)) if np.any(np.isfinite(vals)) else float("nan")
        metrics[f"{k}.std"] = float(np.nanstd(vals)) if np.any(np.isfinite(vals)) else float("nan")
        for i, v in enumerate(vals):
            metrics[f"{k}.seed{i}"] = float(v)
    timings = {f"seed{i}.{k}": float(v) for i, s in enumerate(per_seed) for k, v in s["_timings"].items()}
    return metrics, timings


def _all_seeds_mean(per_seed: list[dict[str, Any]], key: str) -> float:
    vals = np.array([s[key] for s in per_seed], dtype=float)
    return float(vals.mean()) if np.all(np.isfinite(vals)) else float("nan")


_PROT_QUICK = dict(n_seeds=1, length=16, n_train_sources=40, n_test_sources=8, targets_per_source=10,
                   n_eval_train_sources=4, n_samples=16, sft_steps=100, sft_batch=32, sft_lr=1e-3, rl_steps=10,
                   rl_prompts=8, group_size=8, rl_lr=3e-4)


@experiment(
    "stride.protein_stress_test",
    claim="On the protein full-action stress test (synthetic epistatic oracle, N samples per source), "
    "STRIDE (SFT + GRPO) succeeds far more often than Vanilla SFT and STRIDE-SFT, with mostly novel "
    "successes, while random perturbation rarely succeeds.",
    presets={
        "smoke": ProteinConfig(n_seeds=1, length=12, n_train_sources=8, n_test_sources=2, targets_per_source=4,
                               n_eval_train_sources=2, n_samples=8, sft_steps=10, sft_batch=16, rl_steps=2,
                               rl_prompts=2, group_size=4),
        "quick": ProteinConfig(**_PROT_QUICK),  # type: ignore[arg-type]
        # controls of the two comparative checks, at the quick size (the card's verdicts are quick's)
        "planted": ProteinConfig(**{**_PROT_QUICK, "control": "planted"}),  # type: ignore[arg-type]
        "null": ProteinConfig(**{**_PROT_QUICK, "control": "null"}),  # type: ignore[arg-type]
        "full": ProteinConfig(length=24, workers=2),
    },
)
def protein_stress_test(cfg: ProteinConfig, rng: np.random.Generator) -> Outcome:
    return _protein_outcome(cfg, _run_seeds([(_protein_seed, cfg, rng)], cfg.workers, "protein seeds")[0])


def _run_seeds(runs: list[tuple[Callable[..., dict[str, Any]], Any, np.random.Generator]], workers: int,
               desc: str) -> list[list[dict[str, Any]]]:
    """Per run ``(seed_fn, cfg, rng)``: ``seed_fn(cfg, r, device)`` for each of ``spawn(rng, cfg.n_seeds)``,
    all runs' seeds in one pool of ``workers`` processes (in this process, with progress, when 1)."""
    # the tag names the seed in the progress lines, which interleave when seeds run side by side
    calls = [(fn, (cfg, r, resolve_device(cfg.device), f"{cfg.__class__.__name__[:-6].lower()} seed {i}: "))
             for fn, cfg, rng in runs for i, r in enumerate(spawn(rng, cfg.n_seeds))]
    if workers == 1:
        flat = [fn(*args) for fn, args in track(calls, desc, len(calls))]
    else:
        flat = map_in_processes(calls, workers, label=f"{desc} seeds")
    out, k = [], 0
    for _, cfg, _ in runs:
        out.append(flat[k:k + cfg.n_seeds])
        k += cfg.n_seeds
    return out


#: Stage I precondition bars (issue 57), fixed before any run of the new setup. A model that copies and
#: indexes its source writes the whole output right after the ground-truth trajectory on most held-out pairs
#: (teacher-forced exact output >= 0.8), and most of its own samples pass the consistency gate (>= 0.5); the
#: issue's from-scratch model had 5% exact outputs on held-out sources.
TF_EXACT_BAR, CONSISTENT_BAR, NEAR_SOURCE_BAR = 0.8, 0.5, 0.5


def _protein_outcome(cfg: ProteinConfig, per_seed: list[dict[str, Any]]) -> Outcome:
    metrics, timings = _aggregate(per_seed)
    m = metrics.__getitem__
    checks = [
        Check("stage1.test.tf_exact", m("stage1.test.tf_exact.mean"), f">= {TF_EXACT_BAR}", role="precondition"),
        Check("stage1.test.consistent", m("test.stride_sft.consistent.mean"), f">= {CONSISTENT_BAR}",
              role="precondition"),
        Check("vanilla.test.near_source", m("test.vanilla_sft.near_source.mean"), f">= {NEAR_SOURCE_BAR}",
              role="precondition"),
        # Criterion 5 of the brief, on the held-out sources; targets fixed by the brief before any run.
        Check("test.stride_minus_vanilla_success",
              m("test.stride_vs_vanilla.success.mean") - m("test.vanilla_sft.success.mean"), ">= 0.25",
              paper="0.89 - 0.42 = 0.47", comparative=True),
        Check("test.stride_minus_stride_sft_success",
              m("test.stride_vs_sft.success.mean") - m("test.stride_sft.success.mean"), ">= 0.10",
              comparative=True),
        # a seed without any STRIDE success has no novelty (nan); the claim then fails rather than resting on
        # the other seeds (nanmean would let one success in one seed pass it)
        Check("test.stride_novelty", _all_seeds_mean(per_seed, "test.stride.novelty"), ">= 0.8",
              paper="76/78 = 0.97"),
        Check("test.random_success", m("test.random.success.mean"), "<= 0.35", paper="5/100 = 0.05"),
    ]
    fig, ax = new_figure("STRIDE Stage II (GRPO) reward", "RL step", "mean rollout reward")
    for i, s in enumerate(per_seed):
        ax.plot(np.asarray(s["_curve"]), label=f"seed {i}")
    ax.legend()
    table = []
    for split in ("test", "train"):
        for meth in ("random", "vanilla_sft", "stride_sft", "stride"):
            row: dict[str, Any] = {"split": split, "method": meth}
            for key in ("success", "unique", "novelty", "consistent", "copy_rate"):
                row[key] = f"{m(f'{split}.{meth}.{key}.mean'):.3f} ± {m(f'{split}.{meth}.{key}.std'):.3f}"
            table.append(row)
    return Outcome(metrics=metrics, checks=checks, figures={"rl_reward": fig}, tables={"protein": table},
                   timings=timings)


# ---------------------------------------------------------------------------------------------------------
# Molecule editing (criterion 6)
# ---------------------------------------------------------------------------------------------------------
@config
class MoleculeConfig(_PolicyConfig):
    n_seeds: int = param(3, 1, 10)
    n_scaffolds: int = param(14, 1, 14, help="scaffolds used (14 = ~5.6k molecules)")
    n_train: int = param(20000, 10, 200000, help="training (source, instruction, target) triples")
    n_test: int = param(500, 1, 5000, help="brief: 500 held-out (molecule, instruction) prompts")
    n_eval_samples: int = param(4, 1, 64, help="samples per held-out prompt (rates are over all of them)")
    max_edit_distance: int = param(8, 1, 30)
    min_target_reward: float = param(0.5, 0.0, 1.0, help="keep (source, target, instruction) triples the "
                                     "reward scores at least this high (issue 57)")
    sft_steps: int = param(1500, 1, 50000)
    rl_algo: Literal["grpo", "gspo"] = "gspo"
    rl_steps: int = param(150, 1, 5000)
    rl_prompts: int = param(16, 1, 256)
    steps_per_generation: int = param(4, 1, 64, help="paper: 4")
    eps_low: float = param(3e-4, 0, 1, lo_open=True, hi_open=True, help="paper: 3e-4")
    eps_high: float = param(4e-4, 0, 1, lo_open=True, help="paper: 4e-4")
    temperature: float = param(0.7, 0.05, 5.0, help="paper: 0.7 (rollouts and evaluation)")
    top_p: float = param(0.9, 0.01, 1.0, lo_open=True, help="paper: 0.9")
    control: Control = param("none", help="controls of the comparative checks, both arms built by construction "
                             "at the evaluation's sample size (no model): 'planted' = the paper's STRIDE-SFT and "
                             "STRIDE-GSPO rates; 'null' = both arms at the paper's GSPO rates, the second's shift "
                             "rate raised by the paper's effect (0.228)")

    def __post_init__(self) -> None:
        self._check_policy()
        if (self.rl_prompts * self.group_size) % self.steps_per_generation:
            raise ValueError(f"steps_per_generation = {self.steps_per_generation}: must divide rl_prompts * "
                             f"group_size ({self.rl_prompts * self.group_size})")


#: The ground truth must beat copying the source by this much under the reward (half the smallest positive
#: reward a valid, similar, non-drifting strict edit earns, 0.5).
GT_MARGIN = 0.25


#: The paper's DrugAssist rates (valid, strict, shift rate over valid outputs): STRIDE-SFT and STRIDE-GSPO.
PAPER_SFT_RATES, PAPER_GSPO_RATES = (0.750, 0.579, 0.983), (0.909, 0.676, 0.755)


def _type_probs(valid: float, strict: float, shift: float) -> np.ndarray:
    """P(invalid, clean strict edit, strict but drifting edit, drifting non-strict edit) for an arm with these
    rates (shift over valid outputs)."""
    shifted = shift * valid
    clean = valid - shifted
    strict_drift = max(strict - clean, 0.0)
    probs = np.array([1 - valid, clean, strict_drift, max(shifted - strict_drift, 0.0)])
    return probs / probs.sum()


def _control_arms(task: Any, prompts: list[tuple[str, int]], n: int, control: str, rng: np.random.Generator
                  ) -> tuple[list[tuple[str, int]], list[str | None], list[str | None]]:
    """The two arms of a control, built by construction at the evaluation's sample size ``n`` (outputs drawn from
    the ground truth and the sources' one-slot neighbours, at fixed rates), over the held-out prompts that have
    each kind of output. planted: STRIDE-SFT at the paper's SFT rates, GSPO at its GSPO rates (the paper's
    effect). null: both at the paper's GSPO rates (one method), the GSPO arm's shift rate raised by the paper's
    effect (0.228: worse than the shift check's margin, a non-inferiority null)."""
    kinds: list[tuple[tuple[str, int], list[str], list[str], list[str]]] = []
    for s, i in prompts:
        sd: list[str] = []
        dr: list[str] = []
        for t in task.neighbours.get(s, []):
            sc = score_molecule_edit(s, t, i)
            if sc.shifted:
                (sd if sc.r_prop == 1.0 else dr).append(t)
        gt = task.targets.get((s, i), [])
        if gt and sd and dr:
            kinds.append(((s, i), gt, sd, dr))
    if not kinds:
        raise ValueError("n_test: no held-out prompt has a clean, a strict-drifting and a drifting edit; raise n_test")
    v, st, sh = PAPER_GSPO_RATES
    rates = ((PAPER_SFT_RATES, PAPER_GSPO_RATES) if control == "planted"
             else (PAPER_GSPO_RATES, (v, st, min(1.0, sh + (PAPER_SFT_RATES[2] - sh)))))
    rep = [kinds[k % len(kinds)] for k in range(n)]
    arms: list[list[str | None]] = []
    for r in rates:
        probs = _type_probs(*r)
        arm: list[str | None] = []
        for _, gt, sd, dr in rep:
            kind = int(rng.choice(4, p=probs))
            pool = (None, gt, sd, dr)[kind]
            arm.append(None if pool is None else pool[int(rng.integers(len(pool)))])
        arms.append(arm)
    return [k[0] for k in rep], arms[0], arms[1]


def _molecule_seed(cfg: MoleculeConfig, rng: np.random.Generator, device: torch.device,
                   tag: str = "") -> dict[str, Any]:
    r_data, r_sft, r_rl, r_eval, r_ctl = spawn(rng, 5)
    task = make_molecule_task(r_data, n_train=cfg.n_train, n_test=cfg.n_test, n_scaffolds=cfg.n_scaffolds,
                              max_edit_distance=cfg.max_edit_distance, min_reward=cfg.min_target_reward)
    gt = [molecule_reward(s, task.targets[(s, i)][0], i) for s, i in task.test_prompts]
    copy_r = [molecule_reward(s, s, i) for s, i in task.test_prompts]
    out: dict[str, Any] = {"data.gt_reward": float(np.mean(gt)), "data.copy_reward": float(np.mean(copy_r))}
    out["data.gt_minus_copy_reward"] = out["data.gt_reward"] - out["data.copy_reward"]
    out["data.n_molecules"] = task.n_molecules
    out["data.n_pairs"] = task.n_pairs
    out["data.n_dropped_labels"] = task.n_dropped
    if cfg.control != "none":  # controls: both arms by construction, no model (see _control_arms)
        rep, a_sft, a_rl = _control_arms(task, task.test_prompts, cfg.n_test * cfg.n_eval_samples, cfg.control, r_ctl)
        for name, outs in (("stride_sft", a_sft), ("stride_rl", a_rl)):
            mm = molecule_metrics(rep, outs)
            for key in ("valid", "strict", "loose", "similarity", "shift_rate", "unique"):
                out[f"{name}.{key}"] = getattr(mm, key)
        for key in ("stage1.test.tf_exact", "stage1.test.consistent", "sft.loss_first10pct", "sft.loss_last10pct",
                    "rl.reward_first10pct", "rl.reward_last10pct"):
            out[key] = float("nan")  # no model in a control run
        out["_curve"] = np.zeros(1)
        out["_timings"] = {}
        return out
    vocab = shared_vocab()
    pairs = [(tokenize_smiles(e.src), tokenize_smiles(e.tgt), e.instruction) for e in task.train]
    longest = max(max(len(p[0]) for p in pairs), max(len(tokenize_smiles(s)) for s, _ in task.test_prompts))
    max_len = 2 * longest + 6 + 5 * cfg.max_edit_distance + longest + cfg.max_edit_distance + 8
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    sft_model, codec = _arm(cfg, vocab, torch_generator(r_sft), device, max_len)
    t_prompts, t_comps = trajectory_sft_data(codec, pairs)
    sft_losses = sft_train(sft_model, t_prompts, t_comps, codec.pad_id,
                           SFTConfig(n_steps=cfg.sft_steps, batch_size=cfg.sft_batch, lr=cfg.sft_lr,
                                     grad_accum=cfg.grad_accum), r_sft, desc=f"{tag}STRIDE-SFT")
    timings["sft_s"] = time.perf_counter() - t0
    max_new = _limits(codec, sft_model, t_prompts, t_comps)

    train_prompts = sorted({(e.src, e.instruction) for e in task.train})
    prompts = [codec.prompt(tokenize_smiles(s), i) for s, i in train_prompts]

    def reward(k: int, ids: list[int]) -> float:
        src, ins = train_prompts[k]
        return completion_reward(tokenize_smiles(src), codec.decode_completion(ids),
                                 lambda s, o: molecule_reward("".join(s), "".join(o), ins))

    t0 = time.perf_counter()
    rl_model, sft_model = _stage2_start(sft_model, cfg)
    rcfg = RLConfig(algo=cfg.rl_algo, n_steps=cfg.rl_steps, n_prompts=cfg.rl_prompts, group_size=cfg.group_size,
                    lr=cfg.rl_lr, eps=0.2, eps_low=cfg.eps_low, eps_high=cfg.eps_high, beta=0.0,
                    steps_per_generation=cfg.steps_per_generation, temperature=cfg.temperature,
                    top_p=cfg.top_p, max_new_tokens=max_new)
    hist = rl_train(rl_model, prompts, reward, rcfg, r_rl, eos_id=codec.eos_id, pad_id=codec.pad_id,
                    desc=f"{tag}STRIDE-{cfg.rl_algo.upper()}")
    timings["rl_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    # Preconditions: the ground truth scores clearly above copying the source under the reward used (copy
    # and a failed gate earn 0; measured above), and Stage I copies and indexes the source on held-out pairs.
    held = [(tokenize_smiles(s), tokenize_smiles(task.targets[(s, i)][0]), i) for s, i in task.test_prompts]
    out["stage1.test.tf_exact"] = teacher_forced_exact(sft_model, codec, held)
    gen = torch_generator(r_eval)
    test_ids = [codec.prompt(tokenize_smiles(s), i) for s, i in task.test_prompts]
    rep = [p for p in task.test_prompts for _ in range(cfg.n_eval_samples)]
    # Deviation: n_eval_samples samples per held-out prompt at the paper's sampling settings (T = 0.7, top-p 0.9)
    arms = {"stride_sft": sft_model, "stride_rl": rl_model}
    for name, model in arms.items():
        texts = _sample_texts(model, codec, test_ids, cfg.n_eval_samples, gen, max_new, cfg.temperature, cfg.top_p)
        outs = [executed_output(tokenize_smiles(s), t, True) for (s, _), t in zip(rep, texts, strict=True)]
        if name == "stride_sft":
            out["stage1.test.consistent"] = float(np.mean([o is not None for o in outs]))
        mm = molecule_metrics(rep, outs)
        for key in ("valid", "strict", "loose", "similarity", "shift_rate", "unique"):
            out[f"{name}.{key}"] = getattr(mm, key)
    timings["eval_s"] = time.perf_counter() - t0
    curve = hist.mean_reward
    q = len(curve) // 10 or 1
    out["rl.reward_first10pct"] = float(np.mean(curve[:q]))
    out["rl.reward_last10pct"] = float(np.mean(curve[-q:]))
    k = len(sft_losses) // 10 or 1
    out["sft.loss_first10pct"] = float(np.mean(sft_losses[:k]))
    out["sft.loss_last10pct"] = float(np.mean(sft_losses[-k:]))
    out["_curve"] = curve
    out["_timings"] = timings
    return out


_MOL_QUICK = dict(n_seeds=1, n_scaffolds=2, n_train=600, n_test=150, n_eval_samples=4, sft_steps=100,
                  sft_batch=32, sft_lr=1e-3, rl_steps=6, rl_prompts=8, group_size=8, rl_lr=3e-4)


@experiment(
    "stride.molecule_editing",
    claim="On instructed molecule editing (RDKit descriptors, instruction ids 101-108 and 201-206), GSPO "
    "after STRIDE-SFT raises the valid rate and the strict success rate and does not raise the shift rate.",
    presets={
        "smoke": MoleculeConfig(n_seeds=1, n_scaffolds=1, n_train=64, n_test=16, n_eval_samples=1, sft_steps=10,
                                sft_batch=16, rl_steps=2, rl_prompts=2, group_size=4, steps_per_generation=2),
        "quick": MoleculeConfig(**_MOL_QUICK),  # type: ignore[arg-type]
        "planted": MoleculeConfig(**{**_MOL_QUICK, "control": "planted"}),  # type: ignore[arg-type]
        "null": MoleculeConfig(**{**_MOL_QUICK, "control": "null"}),  # type: ignore[arg-type]
        "full": MoleculeConfig(workers=2),
    },
)
def molecule_editing(cfg: MoleculeConfig, rng: np.random.Generator) -> Outcome:
    return _molecule_outcome(cfg, _run_seeds([(_molecule_seed, cfg, rng)], cfg.workers, "molecule seeds")[0])


def _molecule_outcome(cfg: MoleculeConfig, per_seed: list[dict[str, Any]]) -> Outcome:
    metrics, timings = _aggregate(per_seed)
    m = metrics.__getitem__
    checks = [
        Check("data.gt_minus_copy_reward", m("data.gt_minus_copy_reward.mean"), f">= {GT_MARGIN}",
              role="precondition"),
        Check("stage1.test.tf_exact", m("stage1.test.tf_exact.mean"), f">= {TF_EXACT_BAR}", role="precondition"),
        Check("stage1.test.consistent", m("stage1.test.consistent.mean"), f">= {CONSISTENT_BAR}",
              role="precondition"),
        # Criterion 6 of the brief; the paper's figures are its DrugAssist table (STRIDE-SFT -> STRIDE-GSPO).
        Check("valid_gain", m("stride_rl.valid.mean") - m("stride_sft.valid.mean"), ">= 0.03",
              paper="0.909 - 0.750 = 0.159", comparative=True),
        Check("strict_gain", m("stride_rl.strict.mean") - m("stride_sft.strict.mean"), ">= 0.03",
              paper="0.676 - 0.579 = 0.097", comparative=True),
        Check("shift_rate_change", m("stride_rl.shift_rate.mean") - m("stride_sft.shift_rate.mean"), "<= 0",
              paper="0.755 - 0.983 = -0.228", comparative=True),
    ]
    fig, ax = new_figure("STRIDE Stage II reward on molecules", "RL step", "mean rollout reward (chem_reward)")
    for i, s in enumerate(per_seed):
        ax.plot(np.asarray(s["_curve"]), label=f"seed {i}")
    ax.legend()
    table = [{"model": name, **{key: f"{m(f'{name}.{key}.mean'):.3f} ± {m(f'{name}.{key}.std'):.3f}"
                                for key in ("valid", "strict", "loose", "similarity", "shift_rate")}}
             for name in ("stride_sft", "stride_rl")]
    return Outcome(metrics=metrics, checks=checks, figures={"rl_reward": fig}, tables={"molecules": table},
                   timings=timings)


if __name__ == "__main__":  # criterion 7: python -m icml2026.papers.stride.experiments --quick
    import argparse
    import dataclasses
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from icml2026.core.registry import get_experiment
    from icml2026.core.runner import run_experiment

    ap = argparse.ArgumentParser(description="Run both STRIDE experiments at one preset, write their run folders "
                                 "(as `icml2026 run` does) and print the checks.")
    ap.add_argument("--quick", action="store_true", help="quick presets (the same as --preset quick)")
    ap.add_argument("--preset", choices=("smoke", "quick", "full"), default=None,
                    help="preset of both experiments (default: full)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None,
                    help="processes per experiment for its seeds (default: the preset's own; full: 2)")
    ap.add_argument("--n-seeds", type=int, default=None,
                    help="seeds per experiment (default: the preset's own; full: 3, the headline's mean)")
    ap.add_argument("--out", default="runs", help="folder of the run folders (default: runs)")
    args = ap.parse_args()
    for flag, val in (("--workers", args.workers), ("--n-seeds", args.n_seeds)):
        if val is not None and val < 1:
            ap.error(f"{flag} {val}: must be >= 1")
    if args.quick and args.preset not in (None, "quick"):
        ap.error(f"--quick and --preset {args.preset}: choose one")
    preset = "quick" if args.quick else (args.preset or "full")
    jobs = []
    for name in ("stride.protein_stress_test", "stride.molecule_editing"):
        exp = get_experiment(name)
        cfg = exp.config(preset)
        over = {k: v for k, v in (("n_seeds", args.n_seeds), ("workers", args.workers))
                if v is not None and v != getattr(cfg, k)}
        jobs.append((exp, dataclasses.replace(cfg, **over), over))
    t0 = time.perf_counter()

    def _one(job: tuple[Any, Any, dict[str, Any]]) -> Any:
        exp, cfg, over = job
        return run_experiment(exp, cfg, preset=preset, seed=args.seed, out=Path(args.out), overrides=over)

    if all(cfg.workers == 1 for _, cfg, _ in jobs):
        results = [_one(j) for j in jobs]
    else:  # both experiments side by side, each with its own pool of seed processes
        with ThreadPoolExecutor(max_workers=len(jobs)) as threads:
            results = list(threads.map(_one, jobs))
    for res in results:
        r = res.results
        print(f"{r['experiment']} [{preset}] {r['timing']['wall_s']:.0f}s -> {res.path}")
        for c in r["checks"]:
            print(f"  {'PASS' if c['passed'] else 'FAIL'} {c['name']} = {c['value']} (target {c['target']})")
    print(f"both experiments [{preset}]: {time.perf_counter() - t0:.0f}s wall")
