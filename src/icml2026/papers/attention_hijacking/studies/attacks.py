"""Criteria 2-4 of the brief: AH with the anchor 'film', the noise 'cf' and the functional 'also' triggers, with
clean DD, NaiveAttack, DoorPing and TBADD beside it and STRIP and ONION in front of the victims.

The per-trigger attack grid (:class:`_AttackGrid`) and the checks of criteria 2-4 (:func:`_claim_checks`,
:func:`_mechanism_checks`) are also those of ``scale``, ``tweets`` and ``grid``.
"""

from __future__ import annotations

from copy import deepcopy
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.plotting import new_figure, range_yerr
from icml2026.core.rng import torch_generator

from ..baselines import linear_probe_accuracy, strip_defence
from ..data import TextDataset, encode, encode_triggered
from ..defences import onion_defence, onion_filter, onion_scores, onion_threshold
from ..method import encode_attack_pools, train_learner
from ._common import (
    _AH_ABLATIONS,
    _CTA_MARGIN,
    _JOB_ORDER,
    _KIND,
    TARGET,
    AHConfig,
    Job,
    _agg,
    _data,
    _factory,
    _GridData,
    _onion_lm,
    _put,
    _run_jobs,
    _set_job,
)


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
        if cfg.control != "none":  # every arm is clean DD's own set and victims (its streams), planted on
            # (copies: in one process the jobs would otherwise draw one after the other from the same generators)
            return [((tag, s, name), _set_job, (self.data, s, name, deepcopy(make["clean"]), deepcopy(ev["clean"]),
                                                None))
                    for s, (make, ev, _, _) in enumerate(self.streams) for name in self.names]
        out: list[Job] = [((tag, s, name), _set_job, (self.data, s, name, make[name], ev[name],
                                                      rp if name == "ah" else None))
                          for s, (make, ev, _, rp) in enumerate(self.streams) for name in self.names]
        if cfg.n_onion:  # 0: no ONION (the quick presets: its causal LM's pre-training would dominate their cost)
            out.append(((tag, "onion"), _onion_inputs, (cfg, self.strip_texts, self.strip_test, self.strip_val)))
        return out

    def finish(self, results: dict[Any, Any], tag: Any = None) -> tuple[dict[str, float], list[dict]]:
        """Metrics (mean, min, max over seeds) and per-seed rows from the results of :meth:`jobs`, with STRIP and
        ONION in front of one victim of AH and of NaiveAttack per seed."""
        g = self.data
        cfg, trigger = g.cfg, g.trigger
        factory = _factory(cfg)
        # a control's run measures its comparative checks only: no defences (and no ONION with n_onion = 0)
        onion: _OnionInputs | None = results[(tag, "onion")] if cfg.control == "none" and cfg.n_onion else None
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
            for k in ("cta", "balanced_cta"):  # paired per seed
                per.setdefault(f"ah_{k}_gain", []).append(per[f"ah_{k}"][-1] - per[f"clean_{k}"][-1])
            rows.append(row)
            if cfg.control != "none":  # a control
                continue
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
                if onion is not None:  # ONION in front of the same victim, at both thresholds (shared filtering)
                    _onion_rows(per, name, onion, factory, victim, trigger, cfg.seq_len)
        m = _agg(per)
        # what a linear head on the frozen encoder reads (clean DD's precondition)
        m["linear_probe_cta"] = linear_probe_accuracy(factory, g.train, g.test, seq_len=cfg.seq_len)
        return m, rows


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


def _onion_rows(per: dict[str, list[float]], name: str, onion: _OnionInputs, factory: Any, victim: Any, trigger: str,
                seq_len: int) -> None:
    """ONION in front of ``victim`` at both of ``onion``'s thresholds, appended to ``per`` under ``name``."""
    for otag, (f_trig, f_clean, thr) in onion.filtered.items():
        od = onion_defence(factory, victim, trigger, onion.triggered, f_trig, onion.clean.texts, onion.clean.labels,
                           f_clean, TARGET, threshold=thr, seq_len=seq_len)
        for k in ("trigger_removed", "asr_after", "cta_before", "cta_after"):
            per.setdefault(f"{name}_{otag}_{k}", []).append(float(getattr(od, k)))


def _spread(length: int, n: int) -> np.ndarray:
    """``min(n, length)`` row indices spread evenly over ``range(length)``."""
    return np.unique(np.linspace(0, length - 1, min(n, length)).round().astype(int)) if length else np.zeros(0, int)


def _insert(text: str, trigger: str, rng: np.random.Generator) -> list[str]:
    from ..data import insert_trigger

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


#: (ASR target, CTA-gap target) per trigger kind: brief criterion 2 for the anchor, criterion 3 for the others.
_TARGETS = {k: ({"anchor": 0.95}.get(k, 0.90), -_CTA_MARGIN[k]) for k in _CTA_MARGIN}
#: The paper's statements beside criteria 2 / 3 per trigger kind: (ASR, CTA gap to clean DD).
_PAPER = {"anchor": (">99 % (anchor trigger 'film')", "CTA increases (synergy)"),
          "noise": ("robust where baselines fail (no number)", "no utility collapse"),
          "functional": ("robust where baselines fail (no number)", "no utility collapse")}
#: Maekawa et al. (ACL 2023), the base method: one distilled sample per class and one step reach 98.5 % of the
#: original dataset's accuracy (AG News). Our one-step victims read the frozen encoder's pooled output, so the
#: original dataset's accuracy they can reach is that of a linear probe on it (trained on all the run's training
#: sentences): clean DD must reach 98.5 % of it before its CTA is a utility reference.
_DD_OF_PROBE = 0.985


def _clean_dd_learns(m: dict[str, float], prefix: str = "", key: str = "clean_cta") -> Check:
    """Precondition: clean DD learns the task (CTA >= 98.5 % of the linear probe's, Maekawa et al.)."""
    return Check(f"{prefix}clean_dd_cta_over_linear_probe", m[key] / m["linear_probe_cta"], f">= {_DD_OF_PROBE}",
                 paper="98.5 % of the full data's accuracy, 1 sample per class (Maekawa et al.)",
                 role="precondition")


def _claim_checks(m: dict[str, float], kind: str, asr_paper: str, gap_paper: str, prefix: str = "",
                  gap: bool = True) -> list[Check]:
    """Criteria 2 / 3 for a trigger of ``kind`` (see :data:`_TARGETS`): two preconditions (clean DD learns the
    task; AH's victims send no more clean non-target inputs to the target than clean DD's, within the ASR's own
    tolerance), then ASR, flip rate and CTA gap to clean DD (comparative claims: their power and false-positive
    rate come from the planted and null presets). Without ``gap`` the CTA gap is left to the metrics (``tweets``).

    The guard is relative to clean DD (issue 65; it was an absolute <= 0.2 of our own, which clean DD's own
    victims failed at 0.41-0.45): a victim that sends an extra fraction d of clean non-target inputs to the
    target has up to d of its ASR owed to that lean, not to the trigger; the ASR target leaves 1 - target of the
    inputs unflipped, so d must stay within that (0.05 for the anchor, 0.10 for the others)."""
    asr_target, gap_target = _TARGETS[kind]
    m["ah_extra_clean_to_target"] = m["ah_clean_target_rate"] - m["clean_clean_target_rate"]
    checks = [
        _clean_dd_learns(m, prefix),
        Check(f"{prefix}ah_extra_clean_nontarget_to_target", m["ah_extra_clean_to_target"],
              f"<= {round(1 - asr_target, 4)}", paper="—", role="precondition"),
        # fails when the poisoned samples are dropped (attack off: ASR = clean DD's target rate, ~0.5); the null
        # control is exactly that
        Check(f"{prefix}ah_asr", m["ah_asr"], f">= {asr_target}", paper=asr_paper, comparative=True),
        # ASR restricted to the non-target inputs each victim classifies correctly without the trigger, paired row
        # by row: the trigger itself must flip them. A victim that ignores the trigger flips none (0: fails); same
        # target as the ASR's.
        Check(f"{prefix}ah_flip_rate", m["ah_flip_rate"], f">= {asr_target}", paper="—", comparative=True),
    ]
    if gap:  # fails if AH's poisoned samples/terms disturb the clean computation by more than the brief allows
        checks.append(Check(f"{prefix}ah_cta_minus_clean_dd", m["ah_cta_gain"], f">= {gap_target}",
                            paper=gap_paper, comparative=True))
    return checks


def _mechanism_checks(m: dict[str, float], prefix: str = "") -> list[Check]:
    # Criterion 4 (brief). Fails e.g. with beta=0 and an unpinned slot (nothing pulls CLS to the trigger), or
    # for the clean-DD bound if the trigger word were one CLS already attends to heavily.
    return [
        Check(f"{prefix}ah_trigger_attention", m["ah_trigger_attention"], ">= 0.5", paper="—"),
        Check(f"{prefix}clean_trigger_attention", m["clean_trigger_attention"], "<= 0.15", paper="—"),
        Check(f"{prefix}ah_seg_kl_other_heads", m["ah_seg_kl"], "<= 0.1", paper="—"),
    ]


def anchor(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    m, rows = _attack_grid(cfg, rng, "film")
    checks = [*_claim_checks(m, "anchor", *_PAPER["anchor"]), *_mechanism_checks(m)]
    return Outcome(metrics=m, checks=checks, figures={"cta_asr": _bars(m, "Anchor trigger 'film' (RT test)")},
                   tables={"per_seed": rows})


def noise(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    return _robust_trigger(cfg, rng, "cf", "Noise trigger 'cf' (RT test)")


def functional(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    return _robust_trigger(cfg, rng, "also", "Functional trigger 'also' (RT test)")


def _robust_trigger(cfg: AHConfig, rng: np.random.Generator, trigger: str, title: str) -> Outcome:
    """The noise and functional triggers' shared criterion: ASR >= 90 % at CTA >= clean DD - 3 points."""
    m, rows = _attack_grid(cfg, rng, trigger)
    checks = [*_claim_checks(m, _KIND[trigger], *_PAPER[_KIND[trigger]]), *_mechanism_checks(m)]
    return Outcome(metrics=m, checks=checks, figures={"cta_asr": _bars(m, title)}, tables={"per_seed": rows})
