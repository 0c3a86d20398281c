"""ONION: perplexity against the library's own loss, outlier removal on a corpus where the outlier is known,
threshold calibration, the victim-side result, and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml2026.papers.attention_hijacking import (  # noqa: E402
    causal_lm_config,
    onion_defence,
    onion_filter,
    onion_scores,
    onion_threshold,
    pretrain_causal_lm,
    sentence_perplexity,
)

_WORDS = "the movie was good and the film is fun with a great cast but a slow plot".split()


def _tiny_lm(tok, seed: int = 0):  # type: ignore[no-untyped-def]
    from transformers import GPT2LMHeadModel

    torch.manual_seed(seed)  # test fixture only: the library never seeds global state
    return GPT2LMHeadModel(causal_lm_config(len(tok), n_layer=1, n_embd=16, n_head=2, max_len=32)).eval()


def test_perplexity_is_exp_of_the_library_mean_next_token_loss(tok):
    lm = _tiny_lm(tok)
    text = "a slow plot but a great cast"
    ids = tok([text], return_tensors="pt")["input_ids"][:, :-1]  # [CLS] ... (no [SEP]), as scored
    with torch.no_grad():
        ref = float(torch.exp(lm(input_ids=ids, labels=ids).loss))  # transformers' own shifted CE
    assert sentence_perplexity(lm, tok, [text])[0] == pytest.approx(ref, rel=1e-5)


def test_perplexity_does_not_score_padding(tok):
    lm = _tiny_lm(tok)
    short, long = "good film", "the movie was good and the film is fun with a great cast"
    alone = sentence_perplexity(lm, tok, [short])[0]
    batched = sentence_perplexity(lm, tok, [long, short])[1]  # padded to the long one's length
    assert batched == pytest.approx(alone, rel=1e-5)
    assert sentence_perplexity(lm, tok, [""])[0] == pytest.approx(1.0)  # nothing to score


@pytest.fixture(scope="module")
def trained_lm(tok):  # type: ignore[no-untyped-def]
    """A small LM trained on sentences drawn from 15 words: "cf" (never seen) is the outlier of any sentence."""
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(_WORDS, size=int(rng.integers(5, 10)))) for _ in range(400)]
    cfg = causal_lm_config(len(tok), n_layer=1, n_embd=32, n_head=2, max_len=32)
    return pretrain_causal_lm(texts, tok, n_steps=150, rng=rng, config=cfg, batch_size=16, lr=1e-2,
                              n_negatives=512, show_progress=False)


def test_onion_scores_the_unseen_inserted_word_highest_and_removes_it(tok, trained_lm):
    rng = np.random.default_rng(1)
    clean = [" ".join(rng.choice(_WORDS, size=8)) for _ in range(12)]
    triggered = []
    for t in clean:
        w = t.split()
        w.insert(int(rng.integers(0, len(w) + 1)), "cf")
        triggered.append(" ".join(w))
    scores = onion_scores(trained_lm, tok, triggered)
    # the inserted word is the most suspicious in every sentence (an inverted score, PPL(without) - PPL, fails)
    assert all(t.split()[int(np.argmax(s))] == "cf" for t, s in zip(triggered, scores, strict=True))
    thr = onion_threshold(onion_scores(trained_lm, tok, clean), 0.05)
    filtered = onion_filter(triggered, scores, thr)
    assert all("cf" not in f.split() for f in filtered)
    kept = np.mean([len(f.split()) / len(c.split()) for f, c in zip(filtered, clean, strict=True)])
    assert kept > 0.8  # a calibrated threshold keeps most clean words


def test_threshold_removes_the_asked_fraction_of_calibration_words():
    rng = np.random.default_rng(0)
    scores = [rng.normal(size=int(n)) for n in rng.integers(3, 20, size=200)]
    for rate in (0.05, 0.2, 0.5):
        thr = onion_threshold(scores, rate)
        removed = np.mean(np.concatenate(scores) > thr)
        assert removed == pytest.approx(rate, abs=0.01)
    texts = ["a b c d"]
    assert onion_filter(texts, [np.array([1.0, -1.0, 0.0, 2.0])], 0.0) == ["b c"]  # > threshold goes, = stays
    assert onion_filter(texts, [np.array([1.0, -1.0, 0.0, 2.0])], 5.0) == texts


def test_onion_defence_reports_the_victim_on_filtered_inputs(factory, rt_small):
    _, test = rt_small
    params = factory.init_params(torch.Generator().manual_seed(0))
    trig = [f"cf {t}" for t in test.texts[:6]]
    removed = [t.removeprefix("cf ") for t in trig]
    res = onion_defence(factory, params, "cf", trig, removed, test.texts[:6], test.labels[:6], test.texts[:6], 1,
                        seq_len=24)
    assert res.trigger_removed == 1.0
    assert res.cta_before == res.cta_after  # nothing removed from the clean inputs
    kept = onion_defence(factory, params, "cf", trig, trig, test.texts[:6], test.labels[:6], test.texts[:6], 1,
                         seq_len=24)
    assert kept.trigger_removed == 0.0
    assert 0.0 <= kept.asr_after <= 1.0


def test_bad_inputs_are_refused_clearly(tok, factory, rt_small):
    lm = _tiny_lm(tok)
    with pytest.raises(TypeError, match="one string"):
        onion_scores(lm, tok, "a whole sentence")
    with pytest.raises(TypeError, match="strings|^texts: "):
        onion_scores(lm, tok, ["fine", 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="arrays for"):
        onion_filter(["a b"], [], 0.0)
    with pytest.raises(ValueError, match="values for"):
        onion_filter(["a b"], [np.zeros(3)], 0.0)
    with pytest.raises(ValueError, match="threshold"):
        onion_filter(["a b"], [np.zeros(2)], float("nan"))
    with pytest.raises(ValueError, match="removal_rate"):
        onion_threshold([np.zeros(3)], 1.5)
    with pytest.raises(ValueError, match="no word"):
        onion_threshold([], 0.05)
    with pytest.raises(ValueError, match="non-finite"):
        onion_threshold([np.array([np.inf])], 0.05)
    with pytest.raises(ValueError, match="multiple of n_head"):
        causal_lm_config(n_embd=15, n_head=2)
    with pytest.raises(ValueError, match="empty"):
        pretrain_causal_lm([], tok, n_steps=1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="vocab_size"):
        pretrain_causal_lm(["a b"], tok, n_steps=1, rng=np.random.default_rng(0), config=causal_lm_config(100))
    _, test = rt_small
    params = factory.init_params(torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="one for one"):
        onion_defence(factory, params, "cf", ["cf a"], [], ["a"], np.array([0]), ["a"], 1)
    with pytest.raises(ValueError, match="at least one word"):
        onion_defence(factory, params, "  ", ["cf a"], ["a"], ["a"], np.array([0]), ["a"], 1)
    with pytest.raises(ValueError, match="clean_labels"):
        onion_defence(factory, params, "cf", ["cf a"], ["a"], ["a"], np.array([0, 1]), ["a"], 1)
