"""Criterion 5 of the brief (report): criteria 2 and 3 re-checked on MiniLM-L6, the shipped pretrained weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, spawn

from ._common import AHConfig
from .attacks import _KIND, _attack_grids, _AttackGrid, _bars, _claim_checks


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
