"""Baselines: what the paper's bound is compared against.

* :func:`sgd_step` — the noise-free optimiser (the ``beta -> infinity`` limit of SGLD without the
  prior term); used by the benchmark to price the Langevin noise.
* :func:`training_error_prediction` — predicting the test error by the training error, which the
  interpolation regime defeats (random labels reach ~0 training error at 1/2 test error).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["sgd_step", "training_error_prediction"]


def sgd_step(params: Sequence[torch.Tensor], *, lr: float) -> None:
    """Plain gradient step ``theta <- theta - (lr/2) grad`` (SGLD's drift with no prior and no noise)."""
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                raise ValueError("a parameter has no gradient; call backward() before sgd_step")
            p.add_(p.grad, alpha=-lr / 2.0)


def training_error_prediction(train01: np.ndarray) -> np.ndarray:
    """The naive predictor of the test error: the training error itself, (K+1,) -> (K+1,)."""
    t = np.asarray(train01, dtype=float)
    if np.any(t < 0) or np.any(t > 1):
        raise ValueError("training errors must lie in [0, 1]")
    return t.copy()
