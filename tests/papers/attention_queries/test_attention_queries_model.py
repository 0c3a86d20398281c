"""The target model and the oracles: checked against a brute-force loop; counting; errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml2026.papers.attention_queries import (
    CountingOracle,
    NoisyOracle,
    SingleHeadAttention,
    random_single_head,
)


def _brute_force(A: np.ndarray, v: np.ndarray, X: np.ndarray) -> float:
    """f(X) = sum_j softmax_j(x_n^T A x_j) v^T x_j written out with Python loops (brief, problem setting)."""
    n = X.shape[0]
    logits = [float(X[-1] @ A @ X[j]) for j in range(n)]
    top = max(logits)
    weights = [math.exp(s - top) for s in logits]
    total = sum(weights)
    return sum(w / total * float(v @ X[j]) for j, w in enumerate(weights))


def test_head_matches_brute_force_and_batch():
    rng = np.random.default_rng(0)
    head = random_single_head(6, 3, rng)
    for n in (1, 2, 5, 9):
        X = rng.standard_normal((n, 6))
        # float64 rounding of a handful of operations: 1e-12 relative is ample.
        assert head(X) == pytest.approx(_brute_force(head.A, head.v, X), rel=1e-12, abs=1e-12)
    Xb = rng.standard_normal((7, 4, 6))
    np.testing.assert_allclose(head.batch(Xb), [head(x) for x in Xb], rtol=1e-12, atol=1e-13)


def test_single_token_returns_value_coordinate():
    # Softmax over one token is 1, so f((e_i)) = v_i exactly (Method 1, step 1).
    head = random_single_head(5, 2, np.random.default_rng(1))
    for i in range(5):
        assert head(np.eye(5)[i : i + 1]) == head.v[i]


def test_from_factors_matches_A_and_random_head_scale():
    rng = np.random.default_rng(2)
    W_Q, W_K, v = rng.standard_normal((8, 3)), rng.standard_normal((8, 3)), rng.standard_normal(8)
    head = SingleHeadAttention.from_factors(W_Q, W_K, v)
    np.testing.assert_allclose(head.A, W_Q @ W_K.T / np.sqrt(3), rtol=1e-14)
    plain = SingleHeadAttention(head.A, v)
    X = rng.standard_normal((4, 8))
    assert head(X) == pytest.approx(plain(X), rel=1e-12)
    # random_single_head: entries of A have standard deviation `scale` (sample of 64^2 entries: +-10%).
    big = random_single_head(64, 64, np.random.default_rng(3), scale=2.0)
    assert np.std(big.A) == pytest.approx(2.0, rel=0.1)
    assert np.linalg.matrix_rank(random_single_head(16, 3, rng).A) == 3


@pytest.mark.parametrize(
    "A, v, match",
    [
        (np.zeros((3, 4)), np.zeros(3), "square"),
        (np.zeros((3, 3)), np.zeros(4), r"v must have shape"),
        (np.full((2, 2), np.nan), np.zeros(2), "finite"),
    ],
)
def test_bad_head_parameters(A, v, match):
    with pytest.raises(ValueError, match=match):
        SingleHeadAttention(A, v)


def test_bad_query_shapes():
    head = random_single_head(4, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="2-D array"):
        head(np.ones(4))
    with pytest.raises(ValueError, match="dimension 3"):
        head(np.ones((2, 3)))
    with pytest.raises(ValueError, match="at least one token"):
        head(np.ones((0, 4)))
    with pytest.raises(ValueError, match="finite"):
        head(np.array([[np.inf, 0, 0, 0]]))
    with pytest.raises(ValueError, match="3-D array"):
        head.batch(np.ones((2, 4)))


def test_random_single_head_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"rank must be in \[1, d=4\]"):
        random_single_head(4, 5, rng)
    with pytest.raises(ValueError, match="positive integer"):
        random_single_head(0, 1, rng)
    with pytest.raises(TypeError, match="Generator"):
        random_single_head(4, 2, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scale"):
        random_single_head(4, 2, rng, scale=-1.0)


def test_counting_oracle_counts_every_call_and_batch_item():
    head = random_single_head(4, 2, np.random.default_rng(0))
    oracle = CountingOracle(head)
    oracle(np.ones((2, 4)))
    oracle.batch(np.ones((5, 3, 4)))  # vectorised path
    oracle.batch([np.ones((1, 4)), np.ones((3, 4))])  # ragged list: one call each
    assert oracle.n_queries == 1 + 5 + 2
    plain = CountingOracle(lambda X: float(np.sum(X)))  # no .batch: evaluated one by one
    np.testing.assert_array_equal(plain.batch(np.ones((3, 2, 4))), [8.0, 8.0, 8.0])
    assert plain.n_queries == 3
    with pytest.raises(TypeError, match="callable"):
        CountingOracle(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-finite"):
        CountingOracle(lambda X: float("nan"))(np.ones((1, 4)))


def test_noisy_oracle_respects_tolerance():
    head = random_single_head(4, 2, np.random.default_rng(0))
    X = np.random.default_rng(1).standard_normal((50, 3, 4))
    exact = head.batch(X)
    uni = NoisyOracle(head, 1e-3, np.random.default_rng(2), "uniform").batch(X)
    adv = NoisyOracle(head, 1e-3, kind="adversarial").batch(X)
    assert np.max(np.abs(uni - exact)) <= 1e-3
    assert np.std(uni - exact) > 1e-4  # U[-tau, tau] has std tau / sqrt(3) ~ 5.8e-4
    np.testing.assert_allclose(np.abs(adv - exact), 1e-3, rtol=1e-9)
    with pytest.raises(ValueError, match="unknown noise kind"):
        NoisyOracle(head, 1e-3, np.random.default_rng(0), "gaussian")
    with pytest.raises(ValueError, match="tau"):
        NoisyOracle(head, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="needs rng"):
        NoisyOracle(head, 1e-3, None, "uniform")
