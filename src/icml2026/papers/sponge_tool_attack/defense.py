"""The defence the paper's discussion implies: a per-user step-count anomaly alarm (brief, pitfall 6).

Fit on each user's clean traffic (mean and standard deviation of steps per query); raise an alarm on a
query whose step count exceeds ``mean + n_sigma * max(std, min_std)``. Users with fewer than ``min_history``
clean queries fall back to the pooled statistics of all users.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from icml2026.core.validate import as_array, finite_number

__all__ = ["StepAnomalyDetector"]


class StepAnomalyDetector:
    """Per-user alarm ``steps > mean_u + n_sigma * max(std_u, min_std)``.

    Parameters
    ----------
    n_sigma : alarm width in standard deviations (the brief: 2).
    min_std : floor of the standard deviation (a user whose clean queries all take the same number of
        steps would otherwise alarm at +1 step).
    min_history : clean queries a user needs for their own statistics.
    """

    def __init__(self, n_sigma: float = 2.0, min_std: float = 0.5, min_history: int = 5) -> None:
        self.n_sigma = finite_number(n_sigma, "n_sigma", lo=0.0)
        self.min_std = finite_number(min_std, "min_std", lo=0.0)
        if not (isinstance(min_history, int) and min_history >= 2):
            raise ValueError(f"min_history must be an integer >= 2, got {min_history!r}")
        self.min_history = min_history

    def fit(self, users: Sequence[str], steps: Sequence[float]) -> StepAnomalyDetector:
        s = as_array(steps, "steps", ndim=1)
        users = list(users)
        if len(users) != s.size or s.size < 2:
            raise ValueError(f"users and steps must have the same length >= 2, got {len(users)} and {s.size}")
        if (s < 0).any():
            raise ValueError("steps must be >= 0")
        self.pooled_ = (float(s.mean()), float(s.std()))
        self.stats_: dict[str, tuple[float, float]] = {}
        for u in sorted(set(users)):
            mine = s[[i for i, v in enumerate(users) if v == u]]
            if mine.size >= self.min_history:
                self.stats_[u] = (float(mine.mean()), float(mine.std()))
        return self

    def threshold(self, user: str) -> float:
        mean, std = self.stats_.get(user, self.pooled_)
        return mean + self.n_sigma * max(std, self.min_std)

    def predict(self, users: Sequence[str], steps: Sequence[float]) -> np.ndarray:
        """Boolean alarms, one per query."""
        if not hasattr(self, "stats_"):
            raise ValueError("call fit before predict")
        s = as_array(steps, "steps", ndim=1)
        users = list(users)
        if len(users) != s.size:
            raise ValueError(f"users and steps must have the same length, got {len(users)} and {s.size}")
        return np.array([v > self.threshold(u) for u, v in zip(users, s, strict=False)], dtype=bool)
