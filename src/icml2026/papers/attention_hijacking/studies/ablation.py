"""AH's two attention terms do what they are built for: removing L_hijack (beta = 0) lowers the victims' CLS
attention on the trigger, removing L_seg (gamma = 0) raises the other heads' KL (noise trigger 'cf').

Its paired effects and checks (:func:`_ablation_effects`, :func:`_ablation_checks`) are also the grid's.
"""

from __future__ import annotations

import time
from copy import deepcopy
from dataclasses import replace
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.plotting import new_figure
from icml2026.core.progress import plain_lines

from ..data import TextDataset, encode, encode_triggered
from ..method import AttackResult, distill, encode_attack_pools, evaluate_distilled
from ._common import (
    _AH_ABLATIONS,
    TARGET,
    AHConfig,
    Job,
    _agg,
    _control_result,
    _data,
    _dcfg,
    _factory,
    _lcb,
    _put,
    _run_jobs,
    _say,
)


def _variant_job(cfg: AHConfig, seed: int, name: str, kw: dict[str, Any], train: TextDataset, test: TextDataset,
                 pool: Any, ap: Any, clean_test: Any, trig_test: Any, r_make: np.random.Generator,
                 r_eval: np.random.Generator) -> AttackResult:
    """The fresh victims of one AH variant (AH's DistillConfig with the fields ``kw`` replaced)."""
    factory = _factory(cfg)
    t0 = time.monotonic()
    # a control's variants: clean DD (the same set for every variant), the planted one with the attention effects
    # planted by construction (_control_result)
    dc = _dcfg(cfg) if cfg.control != "none" else replace(_dcfg(cfg, attack=True, trigger=ap.trigger), **kw)
    with plain_lines():  # jobs may run side by side in worker processes: no live bars
        ds = distill(factory, train, dc, r_make, pool=pool, attack_pools=ap if dc.attack else None,
                     show_progress=f"ablation seed {seed} {name}")
    res = evaluate_distilled(ds, factory, test, cfg.n_learners, r_eval, trigger=ap.trigger, target=TARGET,
                             triggered=trig_test, clean=clean_test)
    if cfg.control != "none":
        res = _control_result(cfg, name, ap.trigger, res)
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


def _ablation_checks(m: dict[str, float], prefix: str = "", full: str = "ah") -> list[Check]:
    """The two ablation checks on ``m``'s ``hijack_effect_lcb`` and ``seg_effect_lcb`` (comparative: AH against
    its ablations), after their precondition: full AH (prefix ``full``) hijacks the head (criterion 4's >= 0.5),
    else there is no hijack for L_hijack's removal to lower."""
    return [
        Check(f"{prefix}{full}_hijacks_for_the_ablation", m[f"{full}_trigger_attention"], ">= 0.5", paper="—",
              role="precondition"),
        # Both effects are paired per distillation seed and checked on their lower bound over the seeds (_lcb).
        # Fails if L_hijack had no effect on the victims' attention (or the opposite effect).
        Check(f"{prefix}hijack_term_raises_trigger_attention_lcb", m["hijack_effect_lcb"], ">= 0.05", paper="—",
              comparative=True),
        # Fails if L_seg does not do what it is built for: keep criterion 4's bound (KL <= 0.1). An effect under
        # half that bound cannot decide criterion 4, and the earlier target "mean > 0" was decided by the run seed
        # (quick means 0.019 / 0.022 / -0.001 for run seeds 0-2).
        Check(f"{prefix}seg_term_lowers_other_heads_kl_lcb", m["seg_effect_lcb"], ">= 0.05", paper="—",
              comparative=True),
    ]


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
        per_variant = spawn(r, len(variants))
        shared = spawn(per_variant[0], 2) if cfg.control != "none" else []  # (spawning advances per_variant[0])
        for (name, kw), rr in zip(variants.items(), per_variant, strict=True):
            # a control's variants: one clean DD set and its victims (copies of the same streams), planted on
            rd, re = [deepcopy(x) for x in shared] if cfg.control != "none" else spawn(rr, 2)
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
    checks = _ablation_checks(m, full="full")
    fig, ax = new_figure("AH ablations, noise trigger 'cf'", "variant", "fraction")
    x = np.arange(len(variants))
    ax.bar(x - 0.2, [m[f"{n}_asr"] for n in variants], 0.4, label="ASR")
    ax.bar(x + 0.2, [m[f"{n}_trigger_attention"] for n in variants], 0.4, label="CLS mass on trigger")
    ax.set_xticks(x, list(variants), fontsize=7)
    ax.legend(fontsize=8)
    return Outcome(metrics=m, checks=checks, figures={"ablation": fig}, tables={"per_seed": rows})
