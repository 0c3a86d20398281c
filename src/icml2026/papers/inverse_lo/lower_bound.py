"""The Omega(d) lower-bound instance family on M-convex sets (disjoint comparison pairs).

Deviation: the paper states an Omega(d) lower bound for M-convex action sets, but its construction and
constant were not retrievable with our tools. We use the standard comparison-pair construction, which is
M-convex and gives the constant directly:

* split [d] by a random permutation into m = floor(d/2) disjoint pairs {a_k, b_k};
* round k (k < m) offers X_k = {e_{a_k}, e_{b_k}}, the bases of the rank-one uniform matroid on {a_k, b_k}
  (M-convex); the remaining rounds are ordinary random instances (family ``env``);
* ``oblivious``: w* ~ N(0, I) normalised, drawn before the run. The events w*(a_k) > w*(b_k) are
  independent fair coins, and before round k no feedback involved a_k or b_k, so *any* learner's
  recommendation in round k is independent of that coin: it is wrong with probability exactly 1/2 and
  E[#wrong rounds] >= m / 2 = floor(d/2) / 2 (about d / 4: c = 1/4 in expectation);
* ``adaptive``: the adversary fixes the order inside pair k only after seeing the recommendation
  (swapping the two values of w* so the recommended item is the worse one). The pairs are disjoint and the
  random rounds come last, so the final w* is consistent with every observation; every learner whose
  recommendation does not depend on w* is then wrong in all m pair rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml2026.core.validate import positive_int

from .data import make_instances, sample_w_star
from .feasible_sets import FeasibleSet, UniformMatroidBases
from .learner import Learner, PlayTrace, play

__all__ = ["LowerBoundInstance", "lower_bound_instance", "play_adaptive", "expected_lower_bound"]


def expected_lower_bound(d: int) -> float:
    """E[#wrong rounds] of any learner on the oblivious pair family: floor(d/2) / 2."""
    d = positive_int(d, "d")
    return (d // 2) / 2.0


@dataclass(frozen=True)
class LowerBoundInstance:
    """One draw of the family: ``pairs`` (m, 2), the pair rounds first, then ``tail`` random rounds."""

    d: int
    w_star: np.ndarray
    pairs: np.ndarray
    instances: list[FeasibleSet]

    @property
    def n_pairs(self) -> int:
        return int(self.pairs.shape[0])


def lower_bound_instance(d: int, n_tail: int, env: str, rng: np.random.Generator) -> LowerBoundInstance:
    """Draw w* and the rounds: floor(d/2) disjoint pair rounds, then ``n_tail`` rounds of family ``env``."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")
    if isinstance(n_tail, bool) or not isinstance(n_tail, (int, np.integer)) or n_tail < 0:
        raise ValueError(f"n_tail must be a non-negative integer, got {n_tail!r}")
    d = int(d)
    w_star = sample_w_star(d, rng)
    perm = rng.permutation(d)
    pairs = perm[: 2 * (d // 2)].reshape(-1, 2).astype(np.int64)
    instances: list[FeasibleSet] = [UniformMatroidBases(d, p.tolist(), 1) for p in pairs]
    if n_tail:
        instances.extend(make_instances(env, d, int(n_tail), rng))
    return LowerBoundInstance(d=d, w_star=w_star, pairs=pairs, instances=instances)


def play_adaptive(learner: Learner, inst: LowerBoundInstance) -> tuple[PlayTrace, np.ndarray]:
    """Play ``inst`` against the adaptive adversary; returns (trace, the final w*).

    In pair round k the adversary looks at the recommendation and, if the recommended item a has
    w*(a) > w*(b), swaps the two values, so the recommendation is the worse item, and shows the truly
    optimal item. The pair rounds come first, so the remaining rounds are played (:func:`play`) with the
    final w*, which is consistent with every observation.
    """
    if learner.d != inst.d:
        raise ValueError(f"learner has d={learner.d}, the instance has d={inst.d}")
    w = inst.w_star.copy()
    m = inst.n_pairs
    regret = np.zeros(len(inst.instances))
    wrong = np.zeros(len(inst.instances), dtype=bool)
    reset = np.zeros(len(inst.instances), dtype=bool)
    for k in range(m):
        fs = inst.instances[k]
        a, b = (int(v) for v in inst.pairs[k])
        x_hat = np.asarray(learner.recommend(fs))
        chosen = a if x_hat[a] == 1 else b
        other = b if chosen == a else a
        if w[chosen] > w[other]:
            w[chosen], w[other] = w[other], w[chosen]
        x_best = fs.maximize(w)
        learner.observe(fs, x_best)
        regret[k] = float(w @ (x_best - x_hat))
        wrong[k] = not np.array_equal(x_hat, x_best)
    if len(inst.instances) > m:
        tail = play(learner, w, inst.instances[m:])
        regret[m:] = tail.regret
        wrong[m:] = tail.wrong
        reset[m:] = tail.reset
    n = len(inst.instances)
    trace = PlayTrace(
        regret=regret,
        cumulative_regret=np.cumsum(regret),
        wrong=wrong,
        suboptimal=regret > 1e-12,
        corrupted=np.zeros(n, dtype=bool),
        reset=reset,
    )
    return trace, w
