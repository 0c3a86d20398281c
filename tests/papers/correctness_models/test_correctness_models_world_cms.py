"""The synthetic world, histories, split, targets' bugs and phrasing, and the correctness models."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.correctness_models import (
    HISTORY_FIELDS,
    Embedder,
    FeatureCM,
    RetrievalCM,
    auroc,
    make_world,
    read_history,
    split_by_question,
    write_history,
)
from icml2026.papers.correctness_models.cms import HashedEncoder
from icml2026.papers.correctness_models.targets import _buggy_column_add, _buggy_column_sub, phrase


def test_world_is_deterministic_distinct_and_correctly_answered():
    w1 = make_world(400, np.random.default_rng(0), n_entities=100)
    w2 = make_world(400, np.random.default_rng(0), n_entities=100)
    assert [q.text for q in w1.questions] == [q.text for q in w2.questions]
    assert len({q.text for q in w1.questions}) == 400
    assert [q.text for q in make_world(400, np.random.default_rng(1), n_entities=100).questions] != [
        q.text for q in w1.questions]
    for q in w1.questions:
        if q.kind == "arith":
            assert int(q.answer) == {"+": q.a + q.b, "-": q.a - q.b, "*": q.a * q.b}[q.op]
        else:
            assert q.answer == w1.kb.answer(q.entity, q.attribute)
    assert w1.kb.weights[0] > 10 * w1.kb.weights[-1]  # Zipf: head facts far more frequent than the tail


def test_world_bad_inputs():
    with pytest.raises(ValueError, match="n_questions"):
        make_world(5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_questions"):
        make_world(1000, np.random.default_rng(0), n_entities=10)


def test_split_is_a_disjoint_70_5_25_partition():
    s = split_by_question(1000, np.random.default_rng(0))
    assert (s.train.size, s.cal.size, s.eval.size) == (700, 50, 250)
    allq = np.concatenate([s.train, s.cal, s.eval])
    assert np.array_equal(np.sort(allq), np.arange(1000))
    assert list(s.part_of(np.array([s.train[0], s.cal[0], s.eval[0]]))) == [0, 1, 2]


def test_history_roundtrip_and_schema(tmp_path):
    recs = [{"input_prompt": "What is 1 + 1?", "cleaned_model_completion": "2", "is_correct": "yes",
             "subject": "arith", "alpha_model_name": "rules", "question_id": 0}]
    path = tmp_path / "h.jsonl"
    assert write_history(recs, path) == 1
    assert read_history(path) == recs
    with pytest.raises(ValueError, match="missing fields"):
        write_history([{k: v for k, v in recs[0].items() if k != "subject"}], path)
    with pytest.raises(ValueError, match="is_correct"):
        write_history([{**recs[0], "is_correct": True}], path)
    assert set(HISTORY_FIELDS) <= set(recs[0])


def test_rule_solver_bug_needs_a_carry():
    rng = np.random.default_rng(0)
    # no column carries: always right; many carries: the bug fires on some draws
    assert all(_buggy_column_add(123, 456, rng) == 579 for _ in range(200))
    assert all(_buggy_column_sub(987, 654, rng) == 333 for _ in range(200))
    outs = {_buggy_column_add(999, 999, rng) for _ in range(200)}
    assert 1998 in outs and len(outs) > 1


def test_phrasing_and_its_control():
    w = make_world(20, np.random.default_rng(0), n_entities=10)
    q = w.questions[0]
    assert phrase("tinylm", q, "42", 0.9, u=0.5, tier_u=0.0) == "42"
    assert phrase("tinylm", q, "42", 0.5, u=0.5, tier_u=0.0) == "I think 42."
    assert "Not sure" in phrase("tinylm", q, "42", 0.1, u=0.5, tier_u=0.0)
    assert phrase("tinylm", q, "42", 0.1, u=0.5, tier_u=0.0, phrasing=False) == "42"
    assert phrase("tinylm", q, "42", 0.1, u=0.01, tier_u=0.0) == "42"  # the 10% random-tier noise


def _planted(n: int, rng: np.random.Generator):
    """Hedged responses ("maybe") are wrong, plain ones right; questions carry no signal."""
    qs = [f"What is {int(a)} + {int(b)}?" for a, b in rng.integers(0, 50, size=(n, 2))]
    y = (rng.random(n) < 0.5).astype(int)
    rs = [f"{i % 7}" if yi else f"maybe {i % 7}, not sure" for i, yi in enumerate(y)]
    return qs, rs, ["t"] * n, y


def test_feature_cm_reads_the_response_only_when_shown():
    rng = np.random.default_rng(0)
    emb = Embedder(HashedEncoder())
    tr, ev = _planted(400, rng), _planted(200, rng)
    af = FeatureCM(emb, "answerful").fit(*tr).predict(*ev[:3])
    al = FeatureCM(emb, "answerless").fit(*tr).predict(*ev[:3])
    assert auroc(af, ev[3]) > 0.99
    assert abs(auroc(al, ev[3]) - 0.5) < 0.12  # questions carry no signal: chance (+-2.4 sd at n=200)


def test_feature_cm_with_model_name_separates_targets():
    rng = np.random.default_rng(1)
    emb = Embedder(HashedEncoder())

    def data(lo, n):  # target "a" is always right, "b" always wrong (4 flipped labels keep both classes)
        qs = [f"What is {i} + 1?" for i in range(lo, lo + n)]
        ts = ["a" if u < 0.5 else "b" for u in rng.random(n)]
        y = np.array([1 if t == "a" else 0 for t in ts])
        y[:4] = 1 - y[:4]
        return qs, ["x"] * n, ts, y

    tr, ev = data(0, 400), data(1000, 200)
    named = FeatureCM(emb, "with_model_name", target_names=("a", "b")).fit(*tr)
    plain = FeatureCM(emb, "answerful").fit(*tr)
    assert auroc(named.predict(*ev[:3]), ev[3]) > 0.95
    assert auroc(plain.predict(*ev[:3]), ev[3]) < 0.7  # without the name the targets look alike


def test_feature_cm_bad_inputs():
    emb = Embedder(HashedEncoder())
    with pytest.raises(ValueError, match="both classes"):
        FeatureCM(emb).fit(["q?", "r?"], ["a", "b"], ["t", "t"], [1, 1])
    with pytest.raises(ValueError, match="same length"):
        FeatureCM(emb).fit(["q?", "r?"], ["a"], ["t", "t"], [1, 0])


def test_retrieval_cm_returns_the_labels_of_identical_past_examples():
    emb = Embedder(HashedEncoder())
    qs = ["What is 1 + 1?", "What is the color of Velmor?"] * 10
    rs = ["2", "maybe red"] * 10
    y = np.array([1, 0] * 10)
    cm = RetrievalCM(emb, k=5).fit(qs, rs, ["t"] * 20, y)
    p = cm.predict(qs[:2], rs[:2], ["t", "t"])
    assert p[0] > 0.9 and p[1] < 0.1
    ex = cm.examples(qs[0], rs[0], "t")
    assert len(ex) == 5 and all(e.is_correct for e in ex) and ex[0].distance < 1e-9
    with pytest.raises(ValueError, match="no history"):
        cm.predict(qs[:1], rs[:1], ["other"])


def test_tiny_lm_cm_learns_a_planted_signal_with_loss_on_the_last_token():
    torch = pytest.importorskip("torch")
    from icml2026.core.textgen import TinyLMConfig, VocabTokenizer, build_tiny_causal_lm
    from icml2026.papers.correctness_models import TinyLMCM, cm_prompt

    rng = np.random.default_rng(0)
    tr, ev = _planted(200, rng), _planted(100, rng)
    texts = [cm_prompt(q, r, variant="answerful") for q, r in zip(tr[0] + ev[0], tr[1] + ev[1], strict=True)]
    tok = VocabTokenizer.build(" ".join(texts).split() + ["yes", "no"], level="word")
    model = build_tiny_causal_lm(TinyLMConfig(d_model=32, n_layers=1, n_heads=2, max_len=128), tok,
                                 torch.Generator().manual_seed(0))
    before = [p.detach().clone() for p in model.parameters()]
    cm = TinyLMCM(model, tok, n_steps=40, batch_size=16, lr=3e-3).fit(tr[0], tr[1], tr[3], rng)
    p = cm.predict(ev[0], ev[1])
    assert auroc(p, ev[3]) > 0.95
    raw = cm.predict(ev[0], ev[1], renorm=False)
    assert np.all(raw <= p + 1e-12)  # the raw softmax at "yes" never exceeds its renormalised value
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))  # init untouched


def test_self_confidence_baselines():
    from icml2026.papers.correctness_models import calibrated_self_confidence, self_confidence

    recs = [{"target_confidence": 0.9}, {"target_confidence": 0.2}]
    np.testing.assert_array_equal(self_confidence(recs), [0.9, 0.2])
    with pytest.raises(ValueError, match="target_confidence"):
        self_confidence([{"x": 1}])
    with pytest.raises(ValueError, match="<= 1"):
        self_confidence([{"target_confidence": 1.5}])
    # an over-confident self-confidence (always 0.95 on 50% accuracy) is pulled to the base rate
    out = calibrated_self_confidence("isotonic", [0.95] * 10, [1, 0] * 5, [0.95, 0.95])
    np.testing.assert_allclose(out, [0.5, 0.5])


def test_histories_follow_the_official_schema_and_are_deterministic():
    from icml2026.papers.correctness_models import TargetScale, build_histories

    scale = TargetScale(corpus_arith=300, corpus_fact=600)
    h1 = build_histories(200, scale, np.random.default_rng(0), n_entities=100, families=("knn", "rules"))
    h2 = build_histories(200, scale, np.random.default_rng(0), n_entities=100, families=("knn", "rules"))
    r1, r2 = h1.records("rules"), h2.records("rules")
    assert r1 == r2
    assert all(set(HISTORY_FIELDS) <= set(r) for r in r1)
    gold = {q.qid: q.answer for q in h1.world.questions}
    for r, ans in zip(r1, h1.answers["rules"].answers, strict=True):
        assert (r["is_correct"] == "yes") == (ans == gold[r["question_id"]])
        assert ans in r["cleaned_model_completion"]  # the phrased response contains the bare answer
    bare = h1.records("rules", phrasing=False)
    assert [r["cleaned_model_completion"] for r in bare] == h1.answers["rules"].answers
    # one split shared by all targets: no question is in train for one target and eval for another
    q_tr = set(h1.part(["knn"], "train")[0])
    assert q_tr == set(h1.part(["rules"], "train")[0]) and not q_tr & set(h1.part(["rules"], "eval")[0])
    # the rule solver's confidence on arithmetic is its fixed (over-confident) 0.95
    arith = [i for i, q in enumerate(h1.world.questions) if q.kind == "arith"]
    assert np.all(h1.answers["rules"].confidence[arith] == 0.95)
