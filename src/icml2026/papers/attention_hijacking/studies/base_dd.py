"""Criterion 1 of the brief: the base method (DD with attention labels) on clean Rotten Tomatoes, against DD without
attention labels, 1 random real sample per class, full fine-tuning and the frozen encoder's linear probe.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from copy import deepcopy
from typing import Any, Literal

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, check_workers
from icml2026.core.plotting import new_figure
from icml2026.core.progress import plain_lines

from ..baselines import full_finetune, linear_probe_accuracy, random_real_baseline
from ..data import TextDataset, encode
from ..method import PlantedEffect, distill, evaluate_distilled
from ._common import (
    _CLS_ONLY_HELP,
    _CONTROLS,
    _DATA_HELP,
    _ETA_INIT,
    _MODEL_HELP,
    _WORKERS_HELP,
    AHConfig,
    Arch,
    Job,
    _agg,
    _check_paths,
    _data,
    _dcfg,
    _factory,
    _lcb,
    _run_jobs,
    _say,
)
from .attacks import _clean_dd_learns


@config
class BaseDDConfig:
    """Criterion 1: the base method on clean RT (same sizes as :class:`AHConfig`)."""

    arch: Arch = "bert-tiny"
    mlm_steps: int = param(1000, 1, 20000, help="MLM pre-training steps")
    mlm_batch: int = param(32, 4, 256, help="MLM batch size")
    n_seeds: int = param(3, 1, 10, help="distillation seeds")
    n_steps: int = param(1500, 1, 5000, help="outer distillation steps")
    n_learners: int = param(20, 1, 100, help="fresh learners per distilled set")
    n_train: int = param(6824, 64, 10_000_000, help="real training sentences used, at most all of them")
    n_test: int = param(853, 40, 10_000_000, help="test sentences, at most all of them")
    seq_len: int = param(48, 16, 128, help="S")
    lr: float = param(1e-2, 1e-5, 1.0, help="outer AdamW lr")
    batch_size: int = param(32, 2, 256, help="real mini-batch of the outer loss (base code: 32)")
    lr_init: float = param(_ETA_INIT, 1e-5, 10.0, help="initial inner lr (base code: 1e-2; card deviation 12)")
    finetune_steps: int = param(1000, 1, 20000, help="full-data fine-tuning steps (upper bound, 1 learner)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    cache: Literal["on", "off"] = param("on", help="keep the pre-trained encoder under runs/attention_hijacking.cache")
    workers: int = param(1, 1, 64, help=_WORKERS_HELP)
    cls_only_last_layer: int = param(0, 0, 1, help=_CLS_ONLY_HELP)
    model: str = param("", help=_MODEL_HELP)
    data: str = param("", help=_DATA_HELP)
    control: str = param("none", choices=_CONTROLS, help="controls of the two gains: 'planted' replaces the arm "
                         "without attention labels and the random-real arm by the DD-with-attention arm's own set and "
                         "victims, which lose twice the target's gain by construction (2 and 10 points); 'null' by "
                         "that arm unchanged (the same method)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        check_workers(self.workers, self.device)
        _check_paths(self)


def _with_factory(cfg: AHConfig, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(learner factory of cfg, *args, **kwargs)``: a job for :func:`_run_jobs`."""
    return fn(_factory(cfg), *args, **kwargs)


#: The two gains' targets (brief criterion 1 and the 1-point floor below); a planted control plants twice each.
_GAIN_TARGETS = {"gain_vs_no_attention": 0.01, "gain_vs_random_real": 0.05}


def _dd_cta_job(cfg: AHConfig, seed: int, name: str, train: TextDataset, test: TextDataset, pool: Any,
                clean_test: Any, attention: str, n_learners: int, r_make: np.random.Generator,
                r_eval: np.random.Generator, plant: PlantedEffect | None = None) -> float:
    """CTA of the fresh victims of one clean distilled set (with attention labels of type ``attention``), with
    ``plant`` planted into their predictions (controls only)."""
    factory = _factory(cfg)
    t0 = time.monotonic()
    with plain_lines():  # jobs may run side by side in worker processes: no live bars
        ds = distill(factory, train, _dcfg(cfg, attention_label_type=attention), r_make, pool=pool,
                     show_progress=f"base_dd seed {seed} {name}")
    cta = evaluate_distilled(ds, factory, test, n_learners, r_eval, clean=clean_test, plant=plant).cta
    _say(f"[base_dd seed {seed}] {name}: CTA {cta:.3f} ({time.monotonic() - t0:.0f} s)")
    return cta


def _gain_plant(cfg: BaseDDConfig, gain: str) -> PlantedEffect:
    """A control's comparison arm: the planted one loses twice the gain's target by construction; the null's is
    the same method as the arm it is compared with."""
    return PlantedEffect(cta_drop=2 * _GAIN_TARGETS[gain] if cfg.control == "planted" else 0.0)


def base_dd(cfg: BaseDDConfig, rng: np.random.Generator) -> Outcome:
    a = AHConfig(arch=cfg.arch, mlm_steps=cfg.mlm_steps, mlm_batch=cfg.mlm_batch, n_steps=cfg.n_steps,
                 n_train=cfg.n_train, n_test=cfg.n_test, seq_len=cfg.seq_len, lr=cfg.lr, lr_init=cfg.lr_init,
                 batch_size=cfg.batch_size, cls_only_last_layer=cfg.cls_only_last_layer,
                 device=cfg.device, cache=cfg.cache, model=cfg.model, data=cfg.data)
    factory = _factory(a)  # built (and cached on disk) here, before any worker reads it
    r_data, r_seeds, r_ft = spawn(rng, 3)
    train, val, test = _data(a, r_data)
    pool = encode(factory.tokenizer, train.texts, cfg.seq_len)
    clean_test = encode(factory.tokenizer, test.texts, cfg.seq_len)
    jobs: list[Job] = []
    for s, r in enumerate(spawn(r_seeds, cfg.n_seeds)):
        r1, r2, r3, e1, e2 = spawn(r, 5)
        for name, kind, rd, re in (("dd_attention", "cls", r1, e1), ("dd_no_attention", "none", r2, e2)):
            if cfg.control != "none" and name == "dd_no_attention":  # the DD-with-attention set and victims
                plant = _gain_plant(cfg, "gain_vs_no_attention")
                jobs.append(((s, name), _dd_cta_job, (a, s, name, train, test, pool, clean_test, "cls",
                                                      cfg.n_learners, deepcopy(r1), deepcopy(e1), plant)))
                continue
            jobs.append(((s, name), _dd_cta_job, (a, s, name, train, test, pool, clean_test, kind, cfg.n_learners,
                                                  rd, re)))
        if cfg.control != "none":  # the DD-with-attention set and victims again, planted on
            jobs.append(((s, "random_real"), _dd_cta_job, (a, s, "random_real", train, test, pool, clean_test, "cls",
                                                           cfg.n_learners, deepcopy(r1), deepcopy(e1),
                                                           _gain_plant(cfg, "gain_vs_random_real"))))
            continue
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
    m["cta_linear_probe"] = m["linear_probe_cta"] = linear_probe_accuracy(factory, train, test, seq_len=cfg.seq_len)
    checks = [
        # clean DD (with attention labels) learns the task: 98.5 % of the linear probe's CTA (Maekawa et al.)
        _clean_dd_learns(m, key="cta_dd_attention"),
        # Both gains are paired per distillation seed and checked on their lower bound over the seeds (_lcb): the
        # means sat within seed noise of the targets (quick: -0.0002 / -0.005 / +0.024 over run seeds 0-2 against
        # 0.01), so a mean's verdict followed the run seed.
        # Fails if attention labels are ignored by the inner loss (lam = 0 gives ~0 gain with noise of either
        # sign). One point, not the brief's ">= 0": two victims at chance tie within a few predictions (quick seed
        # 0: -0.0002, one prediction in 4,500), so a target at 0 would let float noise decide the verdict.
        Check("gain_vs_no_attention_lcb", m["gain_vs_no_attention_lcb"],
              f">= {_GAIN_TARGETS['gain_vs_no_attention']}", paper="attention labels help (Maekawa)",
              comparative=True),
        # fails when distillation learns nothing (a distilled set at init is no better than random real data)
        Check("gain_vs_random_real_lcb", m["gain_vs_random_real_lcb"], f">= {_GAIN_TARGETS['gain_vs_random_real']}",
              paper="—", comparative=True),
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
