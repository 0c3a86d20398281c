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
    with pytest.raises(ValueError, match="config.json"):
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
