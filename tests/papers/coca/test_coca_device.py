"""The ``device`` field of coca's experiments: the toy LM with its LoReFT intervention, the probes and the
adversarial eraser carry the meta device through, bad names are refused, and a missing CUDA device is a missing
dependency (exit 3), not a crash."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.core.textgen import TinyLMConfig, VocabTokenizer, build_tiny_causal_lm  # noqa: E402
from icml2026.papers.coca.harness import LoReFTIntervention, apply_intervention  # noqa: E402
from icml2026.papers.coca.probes import _mlp  # noqa: E402


def test_toy_lm_with_its_loreft_intervention_runs_on_the_meta_device():
    tok = VocabTokenizer.build(["req a1 b2 f0 => ans a1 b2", "sorry"], level="word")
    gen = torch.Generator().manual_seed(0)
    model = build_tiny_causal_lm(TinyLMConfig(family="llama", d_model=16, n_layers=2, n_heads=2, max_len=40),
                                 tok, gen).to("meta")
    module = LoReFTIntervention(16, 2, gen).to("meta")  # initialised on the CPU, as run_toy does, then moved
    ids = torch.randint(0, model.config.vocab_size, (3, 7)).to("meta")
    # with a cache (and no mask) transformers skips its packed-sequence check, which reads values meta lacks
    with apply_intervention(model, 1, module):
        logits = model(input_ids=ids, use_cache=True).logits
    assert logits.device.type == "meta" and tuple(logits.shape) == (3, 7, model.config.vocab_size)


def test_probe_and_eraser_networks_run_on_the_meta_device():
    net = _mlp(4, (8, 8), 3, torch.Generator().manual_seed(0)).to("meta")  # probes and the eraser use _mlp
    out = net(torch.empty(5, 4, dtype=torch.float64, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (5, 3)
