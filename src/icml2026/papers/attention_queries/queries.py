"""The query primitives shared by every method: value queries and the two-token bilinear identity.

Method 1, steps 1, 2 and 4 of the brief (our reconstruction of the paper's query construction):

* step 1: a single-token sequence (s e_i) returns s v_i, since softmax over one token is 1;
* step 2: for X = (s a, s b) with a = b + c (b last),
  alpha_1 = sigmoid(s^2 b^T A c) and f = s v^T b + alpha_1 s v^T c, hence
  alpha_1 = (f - s v^T b) / (s v^T c) and logit(alpha_1) / s^2 = b^T A c;
* step 4: if alpha_1 leaves [sat, 1 - sat] the query saturates the softmax; shrink s and ask again
  (each retry is counted by the oracle and reported apart as a rescale query).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .oracle import CountingOracle

__all__ = [
    "learn_value",
    "choose_directions",
    "measure_bilinear",
    "Measurements",
    "MAX_RESCALE_ROUNDS",
    "SaturationError",
]

MAX_RESCALE_ROUNDS = 60  # 4^-60 ~ 1e-36: far beyond any finite logit; reaching it means a broken oracle


class SaturationError(RuntimeError):
    """Queries stayed saturated after every rescaling: the answers do not behave like one attention head
    (a broken oracle, or noise so large that no query scale gives a usable softmax weight)."""


def _ask(oracle: CountingOracle, X: np.ndarray, batch: bool) -> np.ndarray:
    if batch:
        return oracle.batch(X)
    return np.array([oracle(x) for x in X], dtype=np.float64)


def _ask_repeated(oracle: CountingOracle, X: np.ndarray, batch: bool, n_repeats: int) -> np.ndarray:
    """Ask every sequence n_repeats times and keep the median answer (Method 3, repeated queries)."""
    if n_repeats == 1:
        return _ask(oracle, X, batch)
    answers = _ask(oracle, np.repeat(X, n_repeats, axis=0), batch)
    return np.median(answers.reshape(X.shape[0], n_repeats), axis=1)


def learn_value(
    oracle: CountingOracle, d: int, *, scale: float = 1.0, batch: bool = True, n_repeats: int = 1
) -> np.ndarray:
    """Method 1, step 1: v_i = f((s e_i)) / s from d single-token queries (d * n_repeats calls).

    Returns
    -------
    v : (d,) array.
    """
    X = scale * np.eye(d)[:, None, :]  # (d, 1, d): one token each
    return _ask_repeated(oracle, X, batch, n_repeats) / scale


def choose_directions(v: np.ndarray, threshold: float = 1e-3) -> np.ndarray:
    """Method 1, step 3: a basis C = [c_1..c_d] (columns) with |v^T c_j| bounded away from zero.

    c_j = e_j if |v_j| >= threshold * max|v|, else e_j + e_{j*} with j* = argmax |v_j|, so that
    |v^T c_j| >= (1 - threshold) max|v|. C is unit upper/lower bidiagonal-like and well conditioned.

    Returns
    -------
    C : (d, d) array whose columns are the directions c_j.
    """
    d = v.shape[0]
    C = np.eye(d)
    j_star = int(np.argmax(np.abs(v)))
    small = np.abs(v) < threshold * np.abs(v[j_star])
    C[j_star, small] = 1.0
    return C


@dataclass
class Measurements:
    """Bilinear measurements y_t = b_t^T A c_t, with the scales finally used and the retries made."""

    y: np.ndarray  # (k,)
    scales: np.ndarray  # (k,) the s of the accepted query
    n_rescale: int  # oracle calls spent on retries (times n_repeats)


def measure_bilinear(
    oracle: CountingOracle,
    v: np.ndarray,
    B: np.ndarray,
    C: np.ndarray,
    *,
    scale: float | np.ndarray = 1.0,
    saturation: float = 1e-9,
    shrink: float = 4.0,
    batch: bool = True,
    n_repeats: int = 1,
) -> Measurements:
    """Method 1, steps 2 and 4: y_t = b_t^T A c_t from the two-token queries (s (b_t + c_t), s b_t).

    Parameters
    ----------
    oracle : counting oracle of the target.
    v : (d,) the value vector (learned from step 1).
    B, C : (k, d) the directions b_t (last token) and c_t (with v^T c_t != 0).
    scale : initial s, scalar or (k,).
    saturation : accept alpha_1 only in [saturation, 1 - saturation] (brief: 1e-9).
    shrink : divide s by this after a saturated answer (brief: 4).
    batch : send each round of queries as one batch (all first-round queries are non-adaptive).
    n_repeats : ask each query this many times and use the median answer (Method 3).

    Returns
    -------
    Measurements with y of shape (k,).
    """
    B = np.asarray(B, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    k = B.shape[0]
    vb, vc = B @ v, C @ v
    if np.any(vc == 0.0):
        raise ValueError("every direction c_t needs v^T c_t != 0 (the two-token identity divides by it)")
    s = np.broadcast_to(np.asarray(scale, dtype=np.float64), (k,)).copy()
    y = np.full(k, np.nan)
    pending = np.arange(k)
    n_rescale = 0
    for round_ in range(MAX_RESCALE_ROUNDS):
        if pending.size == 0:
            break
        sp = s[pending]
        X = np.empty((pending.size, 2, B.shape[1]))
        X[:, 0, :] = sp[:, None] * (B[pending] + C[pending])  # token a = b + c
        X[:, 1, :] = sp[:, None] * B[pending]  # last token b acts as the attention query
        f = _ask_repeated(oracle, X, batch, n_repeats)
        if round_ > 0:
            n_rescale += pending.size * n_repeats
        denom = sp * vc[pending]
        alpha = (f - sp * vb[pending]) / denom  # weight on the first token
        one_minus = (sp * (vb[pending] + vc[pending]) - f) / denom  # weight on the last token
        ok = (alpha >= saturation) & (alpha <= 1 - saturation)
        ok &= (one_minus >= saturation) & (one_minus <= 1 - saturation)
        done = pending[ok]
        y[done] = (np.log(alpha[ok]) - np.log(one_minus[ok])) / sp[ok] ** 2  # logit / s^2 = b^T A c
        s[pending[~ok]] /= shrink
        pending = pending[~ok]
    if pending.size:
        raise SaturationError(
            f"{pending.size} queries stayed saturated after {MAX_RESCALE_ROUNDS} rescaling rounds; "
            "the oracle does not behave like single-head attention"
        )
    return Measurements(y=y, scales=s, n_rescale=n_rescale)
