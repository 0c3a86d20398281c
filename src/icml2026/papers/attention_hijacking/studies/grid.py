"""The brief's full grid in one run: three triggers x clean DD, AH, its two ablations, NaiveAttack and TBADD, with
the checks of criteria 2-4 and of the ablation per trigger, plus the MiniLM-L6 subset (reported).
"""

from __future__ import annotations

from copy import deepcopy
from dataclasses import replace
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.config import config, param

from ..baselines import linear_probe_accuracy
from ..data import encode, encode_triggered
from ..method import AttackResult, encode_attack_pools
from ._common import (
    _AH_ABLATIONS,
    _JOB_ORDER,
    TARGET,
    AHConfig,
    Job,
    _agg,
    _data,
    _factory,
    _GridData,
    _put,
    _run_jobs,
    _set_job,
    _victims,
)
from .ablation import _ablation_checks, _ablation_effects
from .attacks import _KIND, _PAPER, _bars, _claim_checks, _mechanism_checks


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
        rm_clean, re = spawn(r_clean, 2)
        re_clean = spawn(re, len(grids))
        jobs.append(((arch, seed, "clean"), _shared_clean_job, (grids, seed, rm_clean, re_clean)))
        for g, rt, rc in zip(grids, r_trig, re_clean, strict=True):
            streams = dict(zip(_GRID_SETS, spawn(rt, len(_GRID_SETS)), strict=True))
            for name in (names if arch == "tiny" else ["ah"]):
                rm, rv = spawn(streams[name], 2)
                if cfg.control != "none":  # a control's arm: clean DD's own set and victims, planted on
                    rm, rv = deepcopy(rm_clean), deepcopy(rc)  # copies: the clean job draws from its own
                jobs.append(((arch, seed, g.trigger, name), _set_job, (g, seed, name, rm, rv, None)))

    for s, r in enumerate(spawn(r_seeds, cfg.n_seeds)):
        add("tiny", s, list(gs.values()), r)
    if cfg.minilm_steps:  # the same data and encodings (MiniLM-L6's WordPiece vocabulary is the encoders')
        mcfg = replace(cfg, arch="minilm-l6", n_steps=cfg.minilm_steps)
        add("minilm", 0, [replace(gs[t], cfg=mcfg, label="minilm-l6 ") for t in _MINILM_TRIGGERS], r_minilm)
    res = _run_jobs(sorted(jobs, key=_grid_rank), cfg.workers, "grid sets")
    probe = linear_probe_accuracy(_factory(cfg), train, test, seq_len=cfg.seq_len)

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
        if arch == "tiny":  # clean DD's precondition reads the frozen encoder's linear probe
            m["linear_probe_cta"] = probe
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
