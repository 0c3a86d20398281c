"""The ``device`` field of correctness_models' torch experiments (gcm, self_vs_cross; metrics is numpy only): the
targets' and the CM's language model carry the meta device through, bad names are refused, and a missing CUDA
device is a missing dependency (exit 3), not a crash."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.core.textgen import TinyLMConfig, VocabTokenizer, build_tiny_causal_lm  # noqa: E402


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_target_and_cm_language_models_run_on_the_meta_device(family):
    # the "tinylm" target is GPT-2-class, the unrelated "cross" init Llama-class; the CM fine-tunes either
    tok = VocabTokenizer(list("abc A:?"), level="char")
    model = build_tiny_causal_lm(TinyLMConfig(family=family, d_model=16, n_layers=2, n_heads=2, max_len=32), tok,
                                 torch.Generator().manual_seed(0)).to("meta")
    emb = model.get_input_embeddings()(torch.randint(0, model.config.vocab_size, (3, 9)).to("meta"))
    # embeddings and a cache (no mask): transformers then skips its padding and packed-sequence checks, which
    # read token values that meta tensors do not have
    logits = model(inputs_embeds=emb, use_cache=True).logits
    assert logits.device.type == "meta" and tuple(logits.shape) == (3, 9, model.config.vocab_size)
