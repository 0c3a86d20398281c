"""Preconditions (issue 55): each passes on the planted setup and fails, giving "undecided", on a broken one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from icml2026.core import make_rng
from icml2026.papers.attention_queries import (
    LowPrecisionHead,
    NoisyOracle,
    SingleHeadAttention,
    random_single_head,
)
from icml2026.papers.attention_queries.data import random_sequences
from icml2026.papers.attention_queries.multihead import MultiHeadAttention, nonidentifiable_pair
from icml2026.papers.attention_queries.studies import (
    exact_recovery,
    multihead_nonidentifiable,
    noise_tolerance,
)
from icml2026.papers.attention_queries.studies._preconditions import (
    NoiseAudit,
    noise_checks,
    rank_gap_check,
    rounding_check,
    rounding_over_eps,
    value_norm_check,
)


def _precondition(out: Any, name: str) -> Any:
    (check,) = [c for c in out.checks if c.name == name]
    assert check.role == "precondition"
    return check


def test_exact_recovery_with_saturating_heads_is_undecided() -> None:
    # scale = 100 puts the logits e_i^T A c_j far past log(1e9) at s = 1: retries are needed, so the exact count
    # d^2 + d is outside its regime; the run must say "undecided", not "not reproduced".
    small: dict[str, Any] = {"d_min": 8, "d_max": 8, "retry_d": 4, "n_retry_scales": 1}
    ok = exact_recovery.exact_recovery(exact_recovery.ExactConfig(**small), make_rng(0))
    assert _precondition(ok, "heads_max_logit_over_saturation").passed and ok.verdict == "reproduced"
    out = exact_recovery.exact_recovery(exact_recovery.ExactConfig(**small, scale=100.0), make_rng(0))
    assert not _precondition(out, "heads_max_logit_over_saturation").passed
    assert out.verdict == "undecided"


@pytest.mark.parametrize(
    "factor, failing", [(0.1, "oracle_min_noise_reach_over_tau"), (2.0, "oracle_max_noise_over_tau")]
)
def test_noise_tolerance_with_an_oracle_off_its_tolerance_is_undecided(
    monkeypatch: pytest.MonkeyPatch, factor: float, failing: str
) -> None:
    cfg = noise_tolerance.NoiseConfig(d=4, n_tau=2, log10_tau_min=-8.0, log10_tau_max=-6.0)
    ok = noise_tolerance.noise_tolerance(cfg, make_rng(0))
    assert all(c.passed for c in ok.checks if c.role == "precondition")

    def off(f: Any, tau: float, rng: Any = None, kind: str = "uniform") -> NoisyOracle:
        return NoisyOracle(f, factor * tau, rng, kind)  # noise 10x quieter or 2x louder than configured

    monkeypatch.setattr(noise_tolerance, "NoisyOracle", off)
    out = noise_tolerance.noise_tolerance(cfg, make_rng(0))
    assert not _precondition(out, failing).passed
    assert out.verdict == "undecided"


def test_multihead_with_zero_heads_is_undecided(monkeypatch: pytest.MonkeyPatch) -> None:
    def zero_pair(d: int, n_heads: int, rng: np.random.Generator) -> tuple[MultiHeadAttention, MultiHeadAttention]:
        first, second = nonidentifiable_pair(d, n_heads, rng)
        zeros = np.zeros((n_heads, d))
        return MultiHeadAttention(first.As, zeros), MultiHeadAttention(second.As, zeros)

    cfg = multihead_nonidentifiable.MultiHeadConfig(n_sequences=20)
    monkeypatch.setattr(multihead_nonidentifiable, "nonidentifiable_pair", zero_pair)
    out = multihead_nonidentifiable.multihead_nonidentifiable(cfg, make_rng(0))
    assert not _precondition(out, "max_abs_output").passed  # 0 = 0 says nothing about identifiability
    assert out.verdict == "undecided"


def test_noise_audit_is_transparent_and_measures_the_noise() -> None:
    head = random_single_head(4, 4, make_rng(1))
    X = np.random.default_rng(2).normal(size=(6, 2, 4))
    plain = NoisyOracle(head, 1e-3, make_rng(3), "uniform")
    audit = NoiseAudit(NoisyOracle(head, 1e-3, make_rng(3), "uniform"), 1e-3)
    np.testing.assert_array_equal(audit.batch(X), plain.batch(X))  # same answers, same random stream
    assert audit(X[0]) == plain(X[0])
    assert audit.n_answers == 7 and 0.0 < audit.max_abs_noise <= 1e-3 * (1 + 1e-9)
    loud = NoiseAudit(NoisyOracle(head, 2e-3, kind="adversarial"), 1e-3)  # adds 2 tau where tau is asked
    loud(X[0])
    quiet = NoiseAudit(NoisyOracle(head, 1e-5, kind="adversarial"), 1e-3)  # adds tau / 100
    quiet(X[0])
    assert not noise_checks([loud], [audit])[0].passed
    assert not noise_checks([audit], [quiet])[1].passed
    over, reach = noise_checks([audit], [audit])
    assert over.passed and reach.passed


def test_head_preconditions_fail_on_degenerate_heads() -> None:
    head = random_single_head(8, 2, make_rng(0))
    assert value_norm_check([head]).passed and rank_gap_check([(head, 2)]).passed
    assert not value_norm_check([SingleHeadAttention(head.A, np.zeros(8))]).passed  # the zero function
    assert not rank_gap_check([(head, 3)]).passed  # a rank-2 head planted as rank 3


def test_rounding_precondition_tells_the_dtypes_apart() -> None:
    head = random_single_head(16, 16, make_rng(0), scale=20.0)
    probes = random_sequences(16, 64, 1, make_rng(1))
    for dtype in ("float32", "float16"):
        assert rounding_check(dtype, [rounding_over_eps(LowPrecisionHead(head.A, head.v, dtype), head, probes)]).passed
    posing = LowPrecisionHead(head.A, head.v, "float16")
    posing.dtype = np.float32  # type: ignore[assignment]  # a float16 oracle said to be float32
    assert not rounding_check("float32", [rounding_over_eps(posing, head, probes)]).passed

    class Float64(LowPrecisionHead):
        def __call__(self, X: np.ndarray) -> float:
            return head(X)  # full float64 answers from an oracle said to be float32

    assert not rounding_check("float32", [rounding_over_eps(Float64(head.A, head.v, "float32"), head, probes)]).passed
