"""The affine head: attention with the biases of a real layer, and what the learner identifies of it.

A real attention head (a Hugging Face layer's query, key and value projections) has biases:

    s_j = (W_q x_n + b_q)^T (W_k x_j + b_k) * scaling,   f(X) = sum_j softmax_j(s) u^T (W_v x_j + b_v) + u_0.

Expanding the logit, the terms that do not depend on x_j (x_n^T W_q^T b_k and b_q^T b_k) are the same for
every position j and cancel in the softmax, so the key bias is not identifiable and the head is

    s_j = x_n^T A x_j + w^T x_j (+ const in j),   A = scaling W_q^T W_k,   w = scaling W_k^T b_q,
    f(X) = sum_j alpha_j v^T x_j + c_0,           v = W_v^T u,               c_0 = u^T b_v + u_0,

since the softmax weights sum to one. This is the paper's affine reduction (a constant coordinate appended to
every token, x' = (x, 1)) written out: the bias row and column of the (d+1) x (d+1) form reduce to w (the
column on the key side is constant in j and cancels). The learner identifies (A, w, v, c_0): d^2 + 2d + 1
numbers, learned with d^2 + 2d + 1 queries by :func:`exact.recover_exact` with ``affine=True``:

* c_0 = f((0)): one single-token query at the zero token;
* v_i = f((e_i)) - c_0: d single-token queries;
* w^T c_j from the pairs (s c_j, 0) (last token 0, so the query is b_q alone): logit = s w^T c_j; d queries;
* e_i^T A c_j from the pairs (s (e_i + c_j), s e_i), whose logit s^2 e_i^T A c_j + s w^T c_j has the
  learned w term removed (``queries.measure_bilinear``'s ``w``): d^2 queries, as in Method 1.

The low-rank method (2b) does the same with (2r + 3) d + 1 queries (the extra d + 1 for c_0 and w).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .oracle import CountingOracle
from .precision import PRECISION_SAFETY, NoiseModel
from .queries import learn_value, measure_bilinear

__all__ = ["AffineTerms", "learn_value_affine", "learn_query_bias"]


@dataclass
class AffineTerms:
    """What the affine head's single-token queries give: v, c_0, and the raw answers (for the precision)."""

    v: np.ndarray  # (d,) v_i = f((e_i)) - c_0
    value_offset: float  # c_0 = f((0))
    answers: np.ndarray  # (d + 1,) the raw answers f((0)), f((e_1)), ..., f((e_d))


def learn_value_affine(counter: CountingOracle, d: int, *, batch: bool = True) -> AffineTerms:
    """c_0 = f((0)) and v_i = f((e_i)) - c_0: d + 1 single-token queries (the softmax over one token is 1)."""
    c0 = float(counter(np.zeros((1, d))))
    raw = learn_value(counter, d, batch=batch)
    return AffineTerms(v=raw - c0, value_offset=c0, answers=np.concatenate([[c0], raw]))


def offset_noise(noise: NoiseModel, value_offset: float) -> NoiseModel:
    """The answer error model with the offset's share: every answer carries c_0 (rounded with it), and the
    subtracted c_0 is itself an answer, so 2 eps PRECISION_SAFETY |c_0| joins the absolute tolerance."""
    return NoiseModel(
        tau=noise.tau + 2.0 * noise.eps * PRECISION_SAFETY * abs(value_offset), eps=noise.eps, source=noise.source
    )


def learn_query_bias(
    counter: CountingOracle, v: np.ndarray, C: np.ndarray, kw: dict[str, object]
) -> tuple[np.ndarray, float, int]:
    """w from the d pairs (s c_j, 0): with the zero token last, the logit is s w^T c_j (affine head).

    ``kw`` are the recovery's measure_bilinear settings (with ``value_offset``, without ``w``); ``C`` holds
    the directions c_j as columns. Returns (w, bound on each coordinate's error, retries).
    """
    d = v.shape[0]
    meas = measure_bilinear(counter, v, np.zeros((d, d)), C.T, **kw)  # type: ignore[arg-type]
    # measure_bilinear returns logit / s^2 = w^T c / s with b = 0
    wc = meas.y * meas.scales
    w = np.linalg.solve(C.T, wc)
    assert meas.dy is not None
    dwc = meas.dy * meas.scales
    w_err = float(np.linalg.norm(np.linalg.inv(C), 2)) * float(np.linalg.norm(dwc))
    return w, w_err if math.isfinite(w_err) else float("inf"), meas.n_rescale
