"""Criterion 8: p(yes) from a local HF model (vs a manual forward pass) and from a loopback HTTP server."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.core.textgen import HFLocalBackend, TinyLMConfig, VocabTokenizer, build_tiny_causal_lm  # noqa: E402
from icml2026.papers.correctness_models import (  # noqa: E402
    YesNoHTTPBackend,
    cm_prompt,
    prob_yes_local,
    serve_yes_no_model,
    yes_no_token_ids,
)

PROMPTS = [
    cm_prompt("What is 2 + 2?", "4", variant="answerful"),
    cm_prompt("What is the color of Velmor?", "I think red.", variant="answerful"),
    cm_prompt("What is 9 * 9?", "", variant="answerless"),
]


@pytest.fixture(scope="module")
def saved_backend(tmp_path_factory):
    words = " ".join(PROMPTS).split() + ["yes", "no"]
    tok = VocabTokenizer.build(words, level="word")
    gen = torch.Generator().manual_seed(0)
    model = build_tiny_causal_lm(TinyLMConfig(d_model=32, n_layers=1, n_heads=2, max_len=128, init_std=0.5), tok, gen)
    folder = tmp_path_factory.mktemp("tiny_cm")
    HFLocalBackend(model, tok, name="tiny").save_pretrained(folder)
    return HFLocalBackend.from_pretrained(folder)


def _manual_p_yes(backend, prompt, renorm):
    tok = backend.tokenizer
    ids = torch.tensor([[tok.bos_id] + tok.encode(prompt)])
    with torch.no_grad():
        probs = torch.softmax(backend.model(input_ids=ids).logits[0, -1].double(), -1)
    y, n = yes_no_token_ids(tok)
    return float(probs[y] / (probs[y] + probs[n])) if renorm else float(probs[y])


@pytest.mark.parametrize("renorm", [True, False])
def test_local_prob_yes_matches_a_manual_forward_pass(saved_backend, renorm):
    got = prob_yes_local(saved_backend, PROMPTS, renorm=renorm)  # batched with left padding
    want = np.array([_manual_p_yes(saved_backend, p, renorm) for p in PROMPTS])
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)  # brief criterion 8: to 1e-6
    assert np.ptp(want) > 1e-4  # the prompts really get different answers (a constant would not pass)


def test_raw_prob_yes_equals_the_backends_own_score(saved_backend):
    # an independent route: core.textgen's score(prompt, "yes") sums log-probs of the continuation
    raw = prob_yes_local(saved_backend, PROMPTS, renorm=False)
    np.testing.assert_allclose(raw, np.exp(saved_backend.score(PROMPTS, ["yes"] * len(PROMPTS))), atol=1e-6)


@pytest.mark.parametrize("renorm", [True, False])
def test_http_top_logprobs_route_matches_local(saved_backend, renorm):
    local = prob_yes_local(saved_backend, PROMPTS, renorm=renorm)
    with serve_yes_no_model(saved_backend) as url:
        remote = YesNoHTTPBackend(url, "tiny", timeout_s=20).prob_yes(
            PROMPTS, renorm=renorm, top_logprobs=saved_backend.tokenizer.vocab_size)
    np.testing.assert_allclose(remote, local, atol=1e-6)


def test_http_route_without_yes_or_no_in_top_k_is_an_error(saved_backend):
    from icml2026.core.textgen import BackendResponseError

    probs = prob_yes_local(saved_backend, PROMPTS, renorm=False)
    with serve_yes_no_model(saved_backend) as url:
        client = YesNoHTTPBackend(url, "tiny", timeout_s=20)
        # with k = 1 only the argmax token is returned; unless it is yes or no, renormalising is impossible
        from icml2026.papers.correctness_models import next_token_distribution

        top1 = next_token_distribution(saved_backend, PROMPTS).argmax(1)
        y, n = yes_no_token_ids(saved_backend.tokenizer)
        missing = [p for p, t in zip(PROMPTS, top1, strict=True) if t not in (y, n)]
        assert missing, "the fixture should have a prompt whose top token is neither yes nor no"
        with pytest.raises(BackendResponseError, match="top 1"):
            client.prob_yes(missing, top_logprobs=1)
        assert np.all(client.prob_yes(missing, renorm=False, top_logprobs=1) == 0.0)
    assert np.all(probs > 0)


def test_bad_prompts_and_tokens(saved_backend):
    with pytest.raises((ValueError, TypeError), match="prompts"):
        prob_yes_local(saved_backend, "one string")
    with pytest.raises((ValueError, TypeError), match="prompts"):
        prob_yes_local(saved_backend, [])
    char_tok = VocabTokenizer(list("yesno"), level="char")
    with pytest.raises((ValueError, TypeError), match="one token"):
        yes_no_token_ids(char_tok)
    assert yes_no_token_ids(char_tok, first_token=True) == (char_tok.encode("y")[0], char_tok.encode("n")[0])
