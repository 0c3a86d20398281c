"""The ``device`` field of truth_polling's small-model experiments: CPU runs, the meta device carries shapes
through the torch families (GRU LM, character CNN, the transformer's model), bad names are refused, and a missing
CUDA device is a missing dependency (exit 3), not a crash. ``truth_polling.simulator`` is numpy only (no field)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml2026.papers.truth_polling.data import make_fact_corpus  # noqa: E402
from icml2026.papers.truth_polling.experiments import (  # noqa: E402
    SimulatorConfig,
)
from icml2026.papers.truth_polling.models import CharCNNClassifier, FamilyConfig, GRULanguageModel  # noqa: E402

TINY = FamilyConfig(d_model=8, lm_steps=1, batch_size=4, cnn_epochs=1)


def _lines():
    return make_fact_corpus(20, np.random.default_rng(0), n_options=4).lines


def test_gru_family_runs_on_the_meta_device():
    m = GRULanguageModel(TINY).fit(_lines(), np.random.default_rng(1))
    for mod in (m.emb_, m.gru_, m.out_):
        mod.to("meta")
    ids, mask = m._pad([[1, 5, 6, 2], [1, 7, 2]])
    logits = m._logits(ids)
    assert ids.device.type == "meta" and mask.device.type == "meta"
    assert logits.device.type == "meta" and tuple(logits.shape) == (2, 4, m.tok_.vocab_size)


def test_char_cnn_family_runs_on_the_meta_device():
    m = CharCNNClassifier(TINY).fit(_lines(), np.random.default_rng(1))
    m.net_.to("meta")
    out = m._forward(m._encode(["abc", "abcdef"]).to("meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (2, len(m.classes_))


def test_transformer_family_model_runs_on_the_meta_device():
    pytest.importorskip("transformers")
    from icml2026.core.textgen import TinyLMConfig, VocabTokenizer, build_tiny_causal_lm

    tok = VocabTokenizer.build(["a b c ."], level="word")
    model = build_tiny_causal_lm(TinyLMConfig(d_model=8, n_layers=1, n_heads=4, max_len=8), tok,
                                 torch.Generator().manual_seed(0))
    model.set_attn_implementation("eager")  # SDPA's mask shortcut reads values, which meta cannot give
    model = model.to("meta")
    ids = torch.ones(2, 5, dtype=torch.long, device="meta")
    logits = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits
    assert logits.device.type == "meta" and tuple(logits.shape) == (2, 5, tok.vocab_size)


def test_the_numpy_simulator_has_no_device_field():
    assert not hasattr(SimulatorConfig(), "device")
