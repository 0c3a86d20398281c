"""What the preconditions measure: the sampled heads and models, and the oracles' noise and precision.

A precondition says that the setup can express a claim (ARCHITECTURE.md, "Experiments, outcomes and checks"):
a sampled head that is not identifiable, or an oracle whose noise is not the configured tolerance, would make
the claim's verdict say nothing about the paper. Nothing here asks the learner's oracle: the measurements read
the planted parameters or call the target directly, so no query count and no random stream of a run changes
(the runs' other metrics are bit for bit those of the experiments before the preconditions were added).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from icml2026.core import Check

from ..model import SingleHeadAttention
from ..oracle import NoisyOracle
from ..precision import LowPrecisionHead
from ..queries import choose_directions

__all__ = [
    "MIN_VALUE_NORM",
    "MIN_RANK_GAP",
    "SATURATION_LOGIT",
    "NOISE_ROUNDING_ALLOWANCE",
    "MIN_NOISE_REACH",
    "ROUNDING_WINDOW",
    "NoiseAudit",
    "value_norm_check",
    "rank_gap_check",
    "unsaturated_logit_check",
    "noise_checks",
    "rounding_over_eps",
    "rounding_check",
]

#: ||v|| / sqrt(d) is ~1 for v ~ N(0, I_d) (the planted heads). At v = 0 the head is the zero function and A is
#: not identifiable (brief, Method 1 step 1). At 1e-3 of the reference the rounding of an answer, amplified by
#: 1 / |v^T c|, stays ~1e3 eps ~ 2e-13, far below the 1e-10 exactness targets; 1e-3 is also the brief's margin
#: rule (|v^T c| >= 1e-3 ||v||).
MIN_VALUE_NORM = 1e-3
#: A planted rank-r head counts as rank r when sigma_r / sigma_1 is 100 times the method's relative rank
#: threshold (1e-8, brief: "singular-value gap with relative threshold 1e-8"); below it the rank to estimate
#: is not defined by the sample.
MIN_RANK_GAP = 1e-6
#: log((1 - w) / w) at the brief's acceptance w = 1e-9 (Method 1, step 4): a pair whose logit b^T A c at scale
#: s = 1 stays below it needs no retry, which is the regime of the brief's "exactly d^2 + d oracle calls (no
#: rescale needed at these scales)". Query scales never exceed 1 (``exact.pair_scale``).
SATURATION_LOGIT = math.log((1.0 - 1e-9) / 1e-9)
#: |answer - f(X)| <= tau up to the rounding of the subtraction: ulp(|f| <= 10) / tau <= 2e-15 / 1e-10 = 2e-5
#: at the smallest tolerance of the grids; 1e-3 leaves 50 times that.
NOISE_ROUNDING_ALLOWANCE = 1e-3
#: The largest |eta| of one recovery (>= d^2 + d >= 20 answers) reaches tau / 2 unless the oracle is quieter
#: than configured: sign adversaries always give tau, uniform noise misses tau / 2 with probability 2^-20.
MIN_NOISE_REACH = 0.5
#: On single-token probes (answer v^T x, no softmax) a float32 / float16 oracle deviates from the float64 head
#: by 0.23 to 1.3 of its dtype's eps, relative to the largest answer (30 heads each at d = 8..64, entries of
#: size 1 to 100, 64 tokens). A float64 oracle gives ~1e-9 float32 eps, a float16 one posing as float32 ~2000:
#: the window [0.05, 50] tells them apart. (Sequences of 1..4 tokens were tried first: their rounding grows
#: with the logits, to 90 eps at entries of size 100, so the probes are single tokens.)
ROUNDING_WINDOW = (0.05, 50.0)


def value_norm_check(heads: Iterable[SingleHeadAttention], name: str = "heads_min_value_norm") -> Check:
    """Precondition: every planted head's value vector is far from 0 (min ||v|| / sqrt(d), see MIN_VALUE_NORM)."""
    value = min(float(np.linalg.norm(h.v)) / math.sqrt(h.v.shape[0]) for h in heads)
    return Check(name, value, f">= {MIN_VALUE_NORM:g}", paper="v != 0 (identifiable)", role="precondition")


def rank_gap_check(heads: Iterable[tuple[SingleHeadAttention, int]], name: str = "heads_min_rank_gap") -> Check:
    """Precondition: each planted (head, r) has rank r, sigma_r / sigma_1 >= MIN_RANK_GAP (min over heads)."""
    gaps = []
    for head, r in heads:
        sv = np.linalg.svd(head.A, compute_uv=False)
        gaps.append(float(sv[r - 1] / sv[0]))
    return Check(name, min(gaps), f">= {MIN_RANK_GAP:g}", paper="rank r", role="precondition")


def unsaturated_logit_check(
    heads: Iterable[SingleHeadAttention], name: str = "heads_max_logit_over_saturation"
) -> Check:
    """Precondition of the exact count d^2 + d: every measured logit e_i^T A c_j at s = 1 is below the
    acceptance limit (max over heads of max |e_i^T A C| / SATURATION_LOGIT < 1)."""
    value = max(float(np.max(np.abs(h.A @ choose_directions(h.v)))) for h in heads) / SATURATION_LOGIT
    return Check(name, value, "< 1", paper="bounded logits (no rescale)", role="precondition")


class NoiseAudit:
    """A transparent wrapper of a :class:`NoisyOracle` that records the noise it really added.

    Answers are the noisy oracle's own (same calls, same batched path, same random stream); the clean value
    f(X) is recomputed from the target through the path the noisy oracle used, so ``max_abs_noise`` is
    max |answer - f(X)| over every answer given. ``tau`` is the tolerance the configuration asks for (the
    reference of the preconditions), not read from the oracle, so an oracle built with another one is caught.
    """

    def __init__(self, noisy: NoisyOracle, tau: float) -> None:
        self.noisy = noisy
        self.tau = float(tau)
        self.max_abs_noise = 0.0
        self.n_answers = 0

    def _record(self, answers: np.ndarray, clean: np.ndarray) -> None:
        if answers.size:
            self.max_abs_noise = max(self.max_abs_noise, float(np.max(np.abs(answers - clean))))
        self.n_answers += int(answers.size)

    def __call__(self, X: np.ndarray) -> float:
        answer = self.noisy(X)
        self._record(np.array([answer]), np.array([float(self.noisy.f(X))]))
        return answer

    def batch(self, X: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
        answers = np.asarray(self.noisy.batch(X), dtype=np.float64)
        inner: Callable[[np.ndarray], np.ndarray] | None = getattr(self.noisy.f, "batch", None)
        if isinstance(X, np.ndarray) and X.ndim == 3 and callable(inner):
            clean = np.asarray(inner(X), dtype=np.float64).reshape(-1)
        else:
            clean = np.array([float(self.noisy.f(x)) for x in X], dtype=np.float64)
        self._record(answers, clean)
        return answers


def noise_checks(bounded: Sequence[NoiseAudit], reaching: Sequence[NoiseAudit]) -> list[Check]:
    """Preconditions: the oracles' noise is the configured tolerance.

    ``bounded``: every audited oracle, whose noise must stay within tau (max |eta| / tau <= 1 + rounding);
    ``reaching``: the oracles of completed recoveries, whose noise must reach tau / 2 (min over oracles of
    max |eta| / tau): an oracle quieter than configured would make an error-vs-tau claim vacuous.
    """
    over = max((a.max_abs_noise / a.tau for a in bounded if a.tau > 0), default=math.nan)
    reach = min((a.max_abs_noise / a.tau for a in reaching if a.tau > 0 and a.n_answers), default=math.nan)
    return [
        Check("oracle_max_noise_over_tau", over, f"<= {1 + NOISE_ROUNDING_ALLOWANCE:g}",
              paper="|eta| <= tau", role="precondition"),
        Check("oracle_min_noise_reach_over_tau", reach, f">= {MIN_NOISE_REACH:g}",
              paper="additive tolerance tau", role="precondition"),
    ]


def rounding_over_eps(oracle: LowPrecisionHead, head: SingleHeadAttention, probes: Sequence[np.ndarray]) -> float:
    """max |oracle(X) - head(X)| / max |head(X)| over ``probes``, in units of the oracle's dtype eps."""
    dev = max(abs(oracle(x) - head(x)) for x in probes)
    ref = max(abs(head(x)) for x in probes)
    eps = float(np.finfo(np.dtype(oracle.dtype)).eps)  # type: ignore[arg-type]  # a float dtype (DTYPES)
    return float(dev / ref / eps) if ref > 0 else math.nan


def rounding_check(dtype: str, ratios: Sequence[float]) -> Check:
    """Precondition: a ``dtype`` oracle rounds like ``dtype`` (the ratio farthest from 1, in log scale, lies
    in ROUNDING_WINDOW)."""
    arr = np.asarray(ratios, dtype=np.float64)
    value = float(arr[np.argmax(np.abs(np.log(arr)))]) if arr.size and np.all(arr > 0) else math.nan
    lo, hi = ROUNDING_WINDOW
    return Check(f"oracle_{dtype}_rounding_over_eps", value, f"in [{lo:g}, {hi:g}]",
                 paper=f"a {dtype} oracle", role="precondition")
