"""Baselines: real-data poisoning, DoorPing's trigger search, TBADD selection, STRIP."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml2026.papers.attention_hijacking import (  # noqa: E402
    DistillConfig,
    doorping,
    poison_real_data,
    strip_defence,
    tbadd,
    train_learner,
)


def test_poisoning_touches_rate_times_n_non_target_rows(tok, rt_small):
    train, _ = rt_small
    pool, poison = poison_real_data(tok, train, "cf", 1, 0.1, 16, np.random.default_rng(0))
    assert len(poison.rows) == round(0.1 * len(train))
    assert (train.labels[poison.rows] != 1).all()  # poisoning relabels non-target rows only
    rows_with_trigger = np.flatnonzero(pool.trigger_mask.any(1).numpy())
    assert rows_with_trigger.tolist() == poison.rows.tolist()
    assert poison.trigger_id == tok.convert_tokens_to_ids("cf")


def test_doorping_searches_whole_word_triggers(factory, rt_small):
    train, _ = rt_small
    cfg = DistillConfig(seq_len=16, n_steps=2, batch_size=8)
    ds = doorping(factory, train, cfg, np.random.default_rng(0), trigger="cf", target=1, rate=0.2, search_every=1)
    assert ds.trigger is not None and ds.trigger.isalpha() and ds.target == 1
    with pytest.raises(ValueError, match="single-token"):
        doorping(factory, train, cfg, np.random.default_rng(0), trigger="i watch", target=1)


def test_tbadd_returns_one_of_its_snapshots(factory, rt_small):
    train, test = rt_small
    cfg = DistillConfig(seq_len=16, n_steps=2, batch_size=8)
    ds = tbadd(factory, train, test, cfg, np.random.default_rng(0), trigger="cf", target=1, n_snapshots=2,
               n_select_learners=1)
    assert ds.trigger == "cf" and ds.target == 1 and ds.snapshots == []


def test_strip_false_rejection_rate_is_near_its_setting(factory, rt_small):
    train, test = rt_small
    cfg = DistillConfig(seq_len=16, n_steps=1, batch_size=8)
    from icml2026.papers.attention_hijacking import distill

    ds = distill(factory, train, cfg, np.random.default_rng(0), show_progress=False)
    victim = train_learner(ds, factory, torch.Generator().manual_seed(0))
    # an untrained head predicts ~50/50 for every input (all entropies tie at ln 2); sharpen it so they differ
    victim = {k: (v * 300 if k == "classifier.weight" else v) for k, v in victim.items()}
    res = strip_defence(factory, victim, ["cf " + t for t in test.texts[:10]], test, test, 1,
                        np.random.default_rng(0), n_perturb=3, frr=0.2, seq_len=16)
    # the threshold is the 20 % quantile of clean entropies measured on the same clean set: FRR ~0.2
    assert 0.1 <= res.false_rejection_rate <= 0.3
    assert 0.0 <= res.detection_rate <= 1.0 and 0.0 <= res.asr_after <= 1.0


def test_linear_probe_accuracy_is_a_test_accuracy_and_refuses_one_class(factory, rt_small):
    from icml2026.papers.attention_hijacking import linear_probe_accuracy

    train, test = rt_small
    acc = linear_probe_accuracy(factory, train, test, seq_len=16)
    assert 0.0 <= acc <= 1.0 and acc * len(test) == pytest.approx(round(acc * len(test)))  # a count over test
    with pytest.raises(ValueError, match="both classes"):
        linear_probe_accuracy(factory, train.subset(np.flatnonzero(train.labels == 1)), test, seq_len=16)
