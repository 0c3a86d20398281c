"""The ``device`` field of STRIDE's experiments: CPU runs, the meta device carries shapes through both policy
families (GPT-2 and Llama), bad names are refused, and a missing CUDA device is a missing dependency (exit 3),
not a crash."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.papers.stride import AMINO_ACIDS, EditVocab, PolicyConfig, build_policy, completion_logprobs  # noqa: E402


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_policy_log_probabilities_run_on_the_meta_device(family):
    # Eager attention: the default SDPA path of Hugging Face reads the padding mask's values (.item()) to decide
    # whether it can skip the mask, which the meta device cannot give; the model and completion_logprobs
    # (ids, masks and gather on the model's device) are otherwise the same.
    vocab = EditVocab(AMINO_ACIDS)
    model = build_policy(vocab, PolicyConfig(family=family, d_model=16, n_layers=1, n_heads=2, max_len=48),
                         torch.Generator().manual_seed(0))
    model.set_attn_implementation("eager")
    model = model.to("meta")
    prompts = [vocab.prompt("ACDE"), vocab.prompt("ACDEFG")]
    completions = [vocab.direct_completion("ACDF"), [vocab.eos_id]]
    logp, mask = completion_logprobs(model, prompts, completions, vocab.pad_id)
    width = max(len(p) + len(c) for p, c in zip(prompts, completions, strict=True)) - 1
    assert logp.device.type == "meta" and tuple(logp.shape) == (2, width) and tuple(mask.shape) == (2, width)
