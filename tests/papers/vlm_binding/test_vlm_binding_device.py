"""The ``device`` field of vlm_binding's torch experiments: CPU runs, the meta device carries shapes through the
models (text and image prompts), bad names are refused, and a missing CUDA device is a missing dependency (exit 3),
not a crash."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.papers.vlm_binding.data import N_IMAGE_TOKENS, Vocab, image_batch, sample_task, text_batch  # noqa: E402
from icml2026.papers.vlm_binding.model import BindingLM, CellEncoder  # noqa: E402


def _samples(vocab: Vocab, n: int = 3) -> list:
    rng = np.random.default_rng(0)
    return [sample_task(4, rng, vocab) for _ in range(n)]


@pytest.mark.parametrize("mode", ["text", "image"])
def test_binding_lm_runs_on_the_meta_device(mode):
    vocab = Vocab(8, 8, 8, 16)
    model = BindingLM(vocab, CellEncoder(16, 4), torch.Generator().manual_seed(0), n_layer=1, d_model=16, n_head=4)
    model = model.to("meta")
    samples = _samples(vocab)
    batch = text_batch(samples) if mode == "text" else image_batch(samples, np.random.default_rng(1), render=False)
    logits, _ = model(batch)
    assert logits.device.type == "meta" and tuple(logits.shape) == (3, vocab.size)
    assert tuple(model.item_logits(batch).shape) == (3, vocab.n_items)


def test_cell_encoder_runs_on_the_meta_device():
    enc = CellEncoder(16, 4).to("meta")
    out = enc(torch.zeros(2, 64, 64, 3, dtype=torch.uint8, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (2, N_IMAGE_TOKENS, 16)
