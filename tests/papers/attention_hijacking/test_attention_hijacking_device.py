"""The ``device`` field of attention_hijacking's experiments: the learner and the attack losses carry the meta
device through (CPU-side token batches are moved, not mixed), bad names are refused, and a missing CUDA device
is a missing dependency (exit 3), not a crash."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.papers.attention_hijacking import LearnerFactory  # noqa: E402
from icml2026.papers.attention_hijacking.data import EncodedBatch  # noqa: E402
from icml2026.papers.attention_hijacking.method import (  # noqa: E402
    _forward,
    hijack_loss,
    segregation_loss,
)


@pytest.fixture()
def meta_factory(tok):  # type: ignore[no-untyped-def]
    from transformers import BertConfig, BertForSequenceClassification

    cfg = BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, num_labels=2, attn_implementation="eager")
    return LearnerFactory(BertForSequenceClassification(cfg), tok).to("meta")


def test_learner_forward_and_attack_losses_run_on_the_meta_device(meta_factory):
    f = meta_factory
    assert f.device.type == "meta" and f.excluded_token_ids.device.type == "meta"
    params = f.init_params(torch.Generator().manual_seed(0))  # head drawn on the CPU, then moved
    assert all(v.device.type == "meta" for v in params.values())
    # transformers' mask code reads the mask's values (padding_mask.all()), which meta tensors do not have, so
    # the forward passes here go without a mask (the inner training, which always passes one, cannot run on meta)
    ids = torch.randint(1000, 2000, (3, 10))  # a CPU batch, as the encoded pools are
    logits, att = _forward(f, params, input_ids=ids)
    assert logits.device.type == "meta" and tuple(logits.shape) == (3, 2)
    assert len(att) == 2 and tuple(att[0].shape) == (3, 2, 10, 10)
    logits, _ = _forward(f, params, inputs_embeds=torch.randn(2, 10, 16))  # a CPU-held distilled set
    assert logits.device.type == "meta" and tuple(logits.shape) == (2, 2)
    mask = torch.zeros(3, 10, dtype=torch.bool)
    mask[:, 2] = True
    batch = EncodedBatch(ids, torch.ones(3, 10, dtype=torch.long), mask)
    assert hijack_loss(att, mask, 1, (0,)).device.type == "meta"
    assert segregation_loss(att, att, batch, batch, 1, (0,)).device.type == "meta"
