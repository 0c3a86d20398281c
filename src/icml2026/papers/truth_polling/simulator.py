"""Generative simulator of correlated model errors and the exact accuracy of plurality voting (brief Sec. 5).

Model [ours, from the brief]: logit P(correct_{m,q}) = a_m + theta_q + eps_{m,q}, with
theta_q ~ N(0, sigma_theta^2) (shared difficulty) and eps ~ N(0, tau^2) (model-specific); a wrong answer is
the question's shared attractor with probability rho, else uniform over the A - 1 wrong options
(the attractor included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import expit, gammaln

from icml2026.core.config import config, param
from icml2026.core.validate import as_labels, as_probabilities, finite_number, positive_int

__all__ = [
    "SimulatedPoll",
    "SimulatorParams",
    "answer_distributions",
    "plurality_accuracy_exact",
    "plurality_accuracy_limit",
    "simulate_polling",
]


@config
class SimulatorParams:
    """Parameters of the generative simulator (brief Sec. 5 prototype values as defaults)."""

    n_models: int = param(5, 1, 1000)
    n_samples: int = param(25, 1, 100_000)
    n_questions: int = param(4000, 1, 10**7)
    n_options: int = param(4, 2, 1000, help="A")
    a: float = param(0.0, -50, 50, help="a_m, the same for every model")
    sigma_theta: float = param(3.0, 0, 50)
    tau: float = param(0.3, 0, 50)
    rho: float = param(0.8, 0, 1)

    def __post_init__(self) -> None:
        cells = self.n_models * self.n_samples * self.n_questions * self.n_options
        if cells > 2 * 10**9:
            raise ValueError(
                f"n_questions = {self.n_questions}: models x samples x questions x options = {cells} "
                "exceeds 2e9 array cells"
            )


@dataclass
class SimulatedPoll:
    """A simulated poll: answers[m, s, q] codes in [0, A), gold[q], attractor[q], probs[m, q, A]."""

    answers: np.ndarray
    gold: np.ndarray
    attractor: np.ndarray
    probs: np.ndarray


def answer_distributions(
    p_correct: np.ndarray, gold: np.ndarray, attractor: np.ndarray, n_options: int, rho: float
) -> np.ndarray:
    """(m, q, A) answer distribution from P(correct) (m, q): gold gets p, the attractor
    (1 - p)(rho + (1 - rho)/(A - 1)), each other wrong option (1 - p)(1 - rho)/(A - 1)."""
    p_correct = as_probabilities(p_correct, "p_correct", ndim=2)
    n_options = positive_int(n_options, "n_options", minimum=2)
    rho = finite_number(rho, "rho", lo=0, hi=1)
    n_m, n_q = p_correct.shape
    gold = as_labels(gold, "gold", n_classes=n_options)
    attractor = as_labels(attractor, "attractor", n_classes=n_options)
    if len(gold) != n_q or len(attractor) != n_q:
        raise ValueError(
            f"gold and attractor: need {n_q} entries (one per question), got {len(gold)}, {len(attractor)}"
        )
    if np.any(attractor == gold):
        raise ValueError("attractor: must differ from gold on every question (it is a wrong answer)")
    wrong = (1 - p_correct)[..., None] * np.full(n_options, (1 - rho) / (n_options - 1))
    probs = np.broadcast_to(wrong, (n_m, n_q, n_options)).copy()
    qi = np.arange(n_q)
    probs[:, qi, attractor] += (1 - p_correct) * rho
    probs[:, qi, gold] = p_correct
    return probs


def simulate_polling(params: SimulatorParams, rng: np.random.Generator) -> SimulatedPoll:
    """Draw difficulties, per-model noise, gold answers, attractors and n_samples answers per model."""
    if not isinstance(params, SimulatorParams):
        raise ValueError(f"params: expected SimulatorParams, got {type(params).__name__}")
    p = params
    theta = rng.normal(0.0, p.sigma_theta, size=p.n_questions)
    eps = rng.normal(0.0, p.tau, size=(p.n_models, p.n_questions))
    p_correct = expit(p.a + theta[None, :] + eps)
    gold = rng.integers(0, p.n_options, size=p.n_questions)
    attractor = (gold + rng.integers(1, p.n_options, size=p.n_questions)) % p.n_options  # uniform among wrong
    probs = answer_distributions(p_correct, gold, attractor, p.n_options, p.rho)
    cdf = np.cumsum(probs, axis=2)
    u = rng.random((p.n_models, p.n_samples, p.n_questions))
    answers = (u[..., None] > cdf[:, None, :, :-1]).sum(axis=3)
    return SimulatedPoll(answers=answers, gold=gold, attractor=attractor, probs=probs)


@lru_cache(maxsize=16)
def _compositions(k: int, n_options: int) -> np.ndarray:
    """All count vectors of k votes over n_options answers, (C(k + A - 1, A - 1), A)."""
    if n_options == 1:
        return np.array([[k]])
    rows = [
        np.concatenate([np.full((len(rest), 1), first), rest], axis=1)
        for first in range(k + 1)
        for rest in [_compositions(k - first, n_options - 1)]
    ]
    return np.concatenate(rows, axis=0)


def plurality_accuracy_exact(probs: np.ndarray, gold: np.ndarray, k: int, max_states: int = 200_000) -> np.ndarray:
    """Exact P(plurality of k i.i.d. draws = gold), ties broken uniformly, per question (brief Sec. 5).

    probs : (q, A) answer distribution per question; gold : (q,).
    Sums the multinomial pmf over all C(k + A - 1, A - 1) count vectors; for A = 2 this is
    P(Bin(k, p) > k/2) + P(Bin(k, p) = k/2) / 2. Returns shape (q,).
    """
    probs, gold = _check_probs_gold(probs, gold)
    k = positive_int(k, "k")
    max_states = positive_int(max_states, "max_states")
    n_q, n_a = probs.shape
    n_states = math.comb(k + n_a - 1, n_a - 1)
    if n_states > max_states:
        raise ValueError(f"k = {k}: {n_states} vote-count states with A = {n_a}; more than max_states={max_states}")
    comps = _compositions(int(k), n_a)
    if len(comps) > max_states:
        raise ValueError(f"{len(comps)} vote-count states for k={k}, A={n_a}; more than max_states={max_states}")
    log_coef = gammaln(k + 1) - gammaln(comps + 1).sum(axis=1)  # (C,)
    top = comps.max(axis=1)
    n_top = (comps == top[:, None]).sum(axis=1)
    out = np.zeros(n_q)
    with np.errstate(divide="ignore"):
        logp = np.log(probs)
    for start in range(0, n_q, 256):
        lp = logp[start : start + 256]
        # 0 * log 0 = 0: a zero-probability answer contributes only through count vectors with count 0
        terms = np.where(comps[None, :, :] > 0, comps[None, :, :] * lp[:, None, :], 0.0).sum(axis=2)
        pmf = np.exp(log_coef[None, :] + terms)  # (chunk, C)
        g = gold[start : start + 256]
        wins = (comps[:, g].T == top[None, :]) / n_top[None, :]  # (chunk, C): gold's share of the win
        out[start : start + 256] = (pmf * wins).sum(axis=1)
    return out


def plurality_accuracy_limit(probs: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """k -> infinity limit per question: 1 if gold has the strictly largest probability, 1/#tied if tied
    at the top, else 0 (brief Sec. 5). probs: (q, A); returns (q,)."""
    probs, gold = _check_probs_gold(probs, gold)
    top = probs.max(axis=1, keepdims=True)
    tied = np.isclose(probs, top, rtol=0, atol=1e-12)
    return tied[np.arange(len(gold)), gold] / tied.sum(axis=1)


def _check_probs_gold(probs: object, gold: object) -> tuple[np.ndarray, np.ndarray]:
    """probs (q, A) rows summing to 1 (within 1e-6) and gold (q,) labels in [0, A)."""
    p = as_probabilities(probs, "probs", ndim=2, rows_sum_to_one=True)
    if p.shape[1] < 2:
        raise ValueError(f"probs: needs at least 2 answer options (columns), got shape {p.shape}")
    g = as_labels(gold, "gold", n_classes=p.shape[1])
    if len(g) != p.shape[0]:
        raise ValueError(f"gold: has {len(g)} entries but probs has {p.shape[0]} questions (rows)")
    return p, g
