"""Hand fixtures for every aggregation rule (criterion 1), normalisation, ties and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.core import make_rng
from icml2026.papers.truth_polling import RULES, Rule, aggregate, dawid_skene, normalize_answer


def one_question(votes_per_model: list[list[str | None]]) -> np.ndarray:
    """answers[m, s, 0] from a list of per-model sample lists."""
    return np.array(votes_per_model, dtype=object)[:, :, None]


def test_normalisation_merges_surface_variants() -> None:
    assert normalize_answer("  The Paris! ") == "paris"
    assert normalize_answer("PARIS.") == normalize_answer("paris")
    assert normalize_answer("3.5") == "3.5" and normalize_answer("-2") == "-2"
    assert normalize_answer("A") == "a"  # a multiple-choice letter is not an article to drop
    assert normalize_answer("   ...  ") is None and normalize_answer(None) is None
    assert normalize_answer("NYC", aliases={"nyc": "New York City"}) == "new york city"
    ans = one_question([["Paris", "paris!", "Lyon"]])
    assert aggregate(ans, "majority_self").answers[0] == "paris"  # without normalisation Lyon would tie


def test_single_takes_first_sample_of_one_model() -> None:
    ans = one_question([["a", "b", "b"], ["c", "c", "c"]])
    assert aggregate(ans, "single").answers[0] == "a"
    res = aggregate(ans, Rule("single", models=(1,)))
    assert res.answers[0] == "c" and res.cost == 1


def test_majority_self_and_cross_and_costs() -> None:
    ans = one_question([["a", "b", "b"], ["c", "c", "a"], ["a", "c", "d"]])
    assert aggregate(ans, Rule("majority_self", k=3)).answers[0] == "b"
    r = aggregate(ans, "majority_cross")  # pooled: a=3, c=3, b=2, d=1 -> tie a/c, smallest wins: a
    assert r.answers[0] == "a" and r.cost == 9 and r.tie_rate == 1.0
    r2 = aggregate(ans, Rule("majority_cross", k=2))  # a, b, c, c, a, c -> c
    assert r2.answers[0] == "c" and r2.cost == 6


def test_ties_never_follow_model_order() -> None:
    ans = one_question([["x"], ["y"]])
    swapped = ans[::-1]
    # the order-independent rule: the smallest tied answer, whatever the model order
    assert aggregate(ans, "majority_cross").answers[0] == aggregate(swapped, "majority_cross").answers[0] == "x"
    rng = make_rng(0)
    wins = [aggregate(swapped, "majority_cross", rng=rng).answers[0] for _ in range(2000)]
    # random tie breaking is uniform: 1000 expected, binomial sd 22, so +-100 is > 4 sd
    assert abs(wins.count("x") - 1000) < 100


def test_empty_votes_give_no_answer() -> None:
    ans = np.array([[["a", None]], [[None, ""]]], dtype=object)  # q0: one vote 'a'; q1: no valid vote
    res = aggregate(ans, "majority_cross")
    assert res.answers[0] == "a" and res.answers[1] is None and res.codes[1] == -1


def test_confidence_and_log_odds_weights() -> None:
    ans = one_question([["a", "a", "b"]])
    conf = np.array([[[0.3], [0.3], [0.9]]])
    assert aggregate(ans, "majority_self").answers[0] == "a"
    assert aggregate(ans, Rule("confidence_weighted", models=(0,)), conf).answers[0] == "b"  # 0.6 < 0.9
    # log-odds: a gets 2 log(3/7) < 0, b gets log 9 > 0
    assert aggregate(ans, Rule("log_odds_weighted", models=(0,)), conf).answers[0] == "b"
    conf2 = np.array([[[0.6], [0.6], [0.7]]])  # weights: a 1.2 vs b 0.7; log-odds a 0.81 vs b 0.85
    assert aggregate(ans, Rule("confidence_weighted", models=(0,)), conf2).answers[0] == "a"
    assert aggregate(ans, Rule("log_odds_weighted", models=(0,)), conf2).answers[0] == "b"


def test_surprisingly_popular_philadelphia() -> None:
    # Prelec, Seung & McCoy (2017): "Is Philadelphia the capital of Pennsylvania?" Most say yes (wrong);
    # the informed minority says no and predicts that most others will say yes.
    ans = one_question([["yes"], ["yes"], ["yes"], ["no"], ["no"]])
    options = ["yes", "no"]
    meta = np.array([[[0.9, 0.1]], [[0.8, 0.2]], [[0.85, 0.15]], [[0.9, 0.1]], [[0.8, 0.2]]])  # (m, q, V)
    assert aggregate(ans, "majority_cross").answers[0] == "yes"
    res = aggregate(ans, "surprisingly_popular", meta_predictions=meta, options=options)
    # actual: yes 0.6, no 0.4; predicted: yes 0.85, no 0.15 -> "no" is surprisingly popular
    assert res.answers[0] == "no" and res.cost == 5 + 5  # answers plus one meta-prediction per model
    per_sample = meta[:, None, :, :]
    res2 = aggregate(ans, "surprisingly_popular", meta_predictions=per_sample, options=options)
    assert res2.answers[0] == "no" and res2.cost == 10


def test_verifier_filter_prefers_verified_then_plurality() -> None:
    ans = np.array([[["7", "7", "8", "9"], ["5", "5", "5", "6"]]], dtype=object).transpose(0, 2, 1)  # (1, 4, 2)
    truth = {0: "8", 1: "4"}
    res = aggregate(ans, Rule("verifier_filter", k=4), verifier=lambda q, a: a == truth[q])
    assert res.answers[0] == "8"  # the minority answer that passes the checker
    assert res.answers[1] == "5"  # nothing passes: plain plurality
    assert aggregate(ans, Rule("verifier_filter", k=2), verifier=lambda q, a: a == truth[q]).answers[0] == "7"


def test_dawid_skene_downweights_a_random_worker() -> None:
    rng = make_rng(1)
    n_q, gold = 400, rng.integers(0, 3, size=400)
    good = np.where(rng.random((3, n_q)) < 0.8, gold, rng.integers(0, 3, size=(3, n_q)))
    noise = rng.integers(0, 3, size=(4, n_q))  # four uninformative workers outvote three good ones often
    codes = np.concatenate([good, noise])[:, None, :]
    post = dawid_skene(codes, 3)
    majority = aggregate(codes, "majority_cross", rng=rng)
    ds_acc = float(np.mean(post.argmax(1) == gold))
    assert ds_acc > float(np.mean(majority.codes == gold)) + 0.05  # EM learns who is reliable
    assert aggregate(codes, "dawid_skene").codes.shape == (n_q,)


def test_integer_answers_are_labels() -> None:
    ans = np.array([[[3, 2]], [[3, -1]], [[1, 2]]])
    res = aggregate(ans, "majority_cross")
    assert list(res.answers) == [3, 2]


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_runs_on_a_random_poll(rule: str) -> None:
    rng = make_rng(2)
    ans = rng.integers(0, 4, size=(3, 5, 20))
    res = aggregate(
        ans,
        rule,
        confidences=rng.random((3, 5, 20)),
        meta_predictions=rng.random((3, 20, 4)),
        options=[0, 1, 2, 3],
        verifier=lambda q, a: a == 0,
        rng=rng,
    )
    assert res.codes.shape == (20,) and res.cost >= 1
    # permuting the models never changes a deterministic (rng-free) aggregate
    perm = [2, 0, 1]
    res_a = aggregate(
        ans,
        Rule(rule, models=(0,) if rule in ("single", "majority_self", "verifier_filter") else None),
        confidences=np.ones((3, 5, 20)) * 0.7,
        meta_predictions=np.ones((3, 20, 4)),
        options=[0, 1, 2, 3],
        verifier=lambda q, a: a == 0,
    )
    if rule not in ("single", "majority_self", "verifier_filter"):
        res_b = aggregate(
            ans[perm],
            rule,
            confidences=np.ones((3, 5, 20)) * 0.7,
            meta_predictions=np.ones((3, 20, 4)),
            options=[0, 1, 2, 3],
        )
        assert list(res_a.answers) == list(res_b.answers)


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="empty"):
        aggregate([], "majority_cross")
    with pytest.raises(ValueError, match="empty"):
        aggregate(np.empty((2, 0, 3), dtype=object), "majority_cross")
    with pytest.raises(ValueError, match="unknown aggregation rule 'majority_vote'"):
        aggregate(one_question([["a"]]), "majority_vote")
    with pytest.raises(ValueError, match="confidences have shape"):
        aggregate(one_question([["a", "b"]]), "confidence_weighted", confidences=np.ones((1, 3, 1)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        aggregate(one_question([["a", "b"]]), "confidence_weighted", confidences=np.full((1, 2, 1), 1.5))
    with pytest.raises(ValueError, match="needs confidences"):
        aggregate(one_question([["a"]]), "log_odds_weighted")
    with pytest.raises(ValueError, match="meta_predictions"):
        aggregate(one_question([["a"]]), "surprisingly_popular")
    with pytest.raises(ValueError, match="columns"):
        aggregate(
            one_question([["a"]]),
            "surprisingly_popular",
            meta_predictions=np.ones((1, 1, 3)),
            options=["a", "b"],
        )
    with pytest.raises(ValueError, match="verifier"):
        aggregate(one_question([["a"]]), "verifier_filter")
    with pytest.raises(ValueError, match="k=4"):
        aggregate(one_question([["a", "b"]]), Rule("majority_self", k=4))
    with pytest.raises(ValueError, match="out of range"):
        aggregate(one_question([["a"]]), Rule("majority_cross", models=(0, 3)))
    with pytest.raises(ValueError, match="shape"):
        aggregate([["a", "b"]], "majority_cross")
    with pytest.raises(ValueError, match="positive integer"):
        Rule("majority_self", k=0)
