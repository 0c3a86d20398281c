"""Method 4: multi-head non-identifiability (brief acceptance 6) and the one-layer reduction."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.attention_queries import (
    CountingOracle,
    FFNLearnerStub,
    MultiHeadAttention,
    SingleHeadAttention,
    nonidentifiable_pair,
    random_one_layer,
    random_sequences,
    recover_one_layer,
    relative_error,
)


@pytest.mark.parametrize("d, n_heads", [(8, 2), (6, 4)])
def test_acceptance_6_pair_agrees_on_1000_sequences(d, n_heads):
    # Brief acceptance 6: outputs agree on 1000 random sequences (n up to 10) to 1e-12,
    # while the per-head parameters differ by O(1).
    first, second = nonidentifiable_pair(d, n_heads, np.random.default_rng(0))
    seqs = random_sequences(d, 1000, 10, np.random.default_rng(1))
    assert max(len(x) for x in seqs) == 10
    diffs = [abs(first(x) - second(x)) for x in seqs]
    assert max(diffs) < 1e-12
    assert max(abs(first(x)) for x in seqs) > 0.1  # the function is not trivially zero
    # No head of the second model equals head 0 of the first (value vectors moved by w ~ N(0, I)).
    assert min(np.linalg.norm(first.vs[0] - v) for v in second.vs) > 0.1


def test_multihead_is_the_sum_of_single_heads():
    first, _ = nonidentifiable_pair(5, 3, np.random.default_rng(2))
    heads = [SingleHeadAttention(A, v) for A, v in zip(first.As, first.vs, strict=True)]
    X = np.random.default_rng(3).standard_normal((4, 5))
    assert first(X) == pytest.approx(sum(h(X) for h in heads), rel=1e-12)
    Xb = np.random.default_rng(4).standard_normal((6, 3, 5))
    np.testing.assert_allclose(first.batch(Xb), [first(x) for x in Xb], rtol=1e-12)


def test_multihead_bad_inputs():
    with pytest.raises(ValueError, match="n_heads must be >= 2"):
        nonidentifiable_pair(4, 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="vs must have shape"):
        MultiHeadAttention(np.zeros((2, 3, 3)), np.zeros((3, 3)))


@pytest.mark.parametrize("d", [3, 8, 16])
def test_one_layer_reduction_recovers_A_and_V(d):
    # Given the (assumed) FFN learner, A from d^2 queries and V from the two learned first layers are exact.
    model = random_one_layer(d, np.random.default_rng(d))
    oracle = CountingOracle(model)
    est = recover_one_layer(oracle, d, FFNLearnerStub(model, np.random.default_rng(0)))
    assert relative_error(est.V, model.V) < 1e-10
    assert relative_error(est.A, model.A) < 1e-8
    assert est.n_queries == d * d + est.n_rescale_queries
    assert oracle.n_queries == est.n_queries + est.n_stub_check_queries


def test_one_layer_stub_is_checked_against_the_oracle():
    # A stub built for another model disagrees with the oracle and is caught by its counted checks.
    model = random_one_layer(4, np.random.default_rng(0))
    other = random_one_layer(4, np.random.default_rng(1))
    with pytest.raises(RuntimeError, match="disagrees with the oracle"):
        recover_one_layer(model, 4, FFNLearnerStub(other, np.random.default_rng(2)))
    with pytest.raises(ValueError, match="width must be >= d"):
        random_one_layer(4, np.random.default_rng(0), width=2)
