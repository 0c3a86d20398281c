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
from .precision import NoiseModel

__all__ = [
    "learn_value",
    "choose_directions",
    "margin_directions",
    "measure_bilinear",
    "Measurements",
    "MAX_RESCALE_ROUNDS",
    "SaturationError",
    "NoisyConditionError",
    "L_STAR",
]

MAX_RESCALE_ROUNDS = 60  # 4^-60 ~ 1e-36: far beyond any finite logit; reaching it means a broken oracle


class SaturationError(RuntimeError):
    """Queries stayed saturated after every rescaling: the answers do not behave like one attention head
    (a broken oracle, or an oracle far less precise than the precision it was declared with)."""


class NoisyConditionError(ValueError):
    """The norm or margin condition of Method 3 fails: at every admissible query scale the oracle's error
    bound hides the softmax weight (the message names the violated condition and the numbers)."""


# SNR-optimal logit: the error of b^T A c from one answer is ~ delta_alpha / (s^2 alpha (1 - alpha)) with
# delta_alpha ~ 1 / s; with L = s^2 y that is ~ L^{-3/2} / sigma'(L), smallest where tanh(L/2) = 3/(2L).
L_STAR = 1.9925


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


def margin_directions(v: np.ndarray) -> np.ndarray:
    """Columns c_j = e_j + sign(v_j) v / ||v||: |v^T c_j| = |v_j| + ||v|| >= ||v||, ||c_j|| <= 2.

    The largest margin a basis of bounded directions can have (Method 1's e_j has margin |v_j|, which is
    ~1/d for the smallest coordinate). C = I + v_hat sigma^T is invertible (1 + sigma^T v_hat =
    1 + ||v||_1 / ||v||_2 > 0), with C^{-1} = I - v_hat sigma^T / (1 + ||v||_1 / ||v||_2).
    """
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        raise ValueError("margin_directions needs v != 0")
    sigma = np.where(v >= 0, 1.0, -1.0)
    return np.eye(v.shape[0]) + np.outer(v / norm, sigma)


@dataclass
class Measurements:
    """Bilinear measurements y_t = b_t^T A c_t, their error bars, the scales used and the retries made."""

    y: np.ndarray  # (k,)
    scales: np.ndarray  # (k,) the s of the accepted query
    n_rescale: int  # oracle calls spent on retries (times n_repeats)
    dy: np.ndarray | None = None  # (k,) bound on |y_hat - y| under the noise model (None: not computed)


def _sigmoid_prime(L: np.ndarray) -> np.ndarray:
    a = 0.5 * (1.0 + np.tanh(0.5 * L))
    return a * (1.0 - a)


@dataclass
class _Geometry:
    """Per-query quantities that do not depend on the answer."""

    vb: np.ndarray  # v_hat^T b
    vc: np.ndarray  # v_hat^T c
    b_l1: np.ndarray  # ||b||_1
    c_l1: np.ndarray  # ||c||_1
    s_max: np.ndarray  # largest admissible scale (norm budget), inf when unbounded


def _answer_error(
    geo: _Geometry, idx: np.ndarray, s: np.ndarray, L: np.ndarray, noise: NoiseModel, v_err: float
) -> tuple[np.ndarray, np.ndarray]:
    """(delta_N, delta_D): bounds on the errors of the numerator f - s v^T b and denominator s v^T c."""
    vb, vc = geo.vb[idx], geo.vc[idx]
    scale_f = s * (np.abs(vb) + np.abs(vb + vc) + np.abs(vc) * (1.0 + np.abs(L)) / 4.0)
    dN = noise.bound(scale_f) + s * v_err * geo.b_l1[idx]
    dD = s * v_err * geo.c_l1[idx]
    return dN, dD


def _predicted_dy(
    geo: _Geometry, idx: np.ndarray, s: np.ndarray, y: np.ndarray, noise: NoiseModel, v_err: float
) -> np.ndarray:
    """First-order error of y at scale s (rows of s broadcast against idx) if b^T A c = y."""
    L = s**2 * y
    dN, dD = _answer_error(geo, idx, s, L, noise, v_err)
    d_alpha = (dN + dD) / np.maximum(s * np.abs(geo.vc[idx]), 1e-300)
    return d_alpha / np.maximum(s**2 * _sigmoid_prime(L), 1e-300)


def _scale_grid(s_cur: np.ndarray, smax: np.ndarray) -> np.ndarray:
    """(grid, k) candidate scales: from the norm budget (or 16 s when unbounded) down by 2^(1/4) steps."""
    top = np.where(np.isfinite(smax), smax, np.maximum(16.0 * s_cur, 1.0))
    return top[None, :] * (2.0 ** (-np.arange(0, 161) / 4.0))[:, None]


def _best_scale(
    geo: _Geometry, idx: np.ndarray, s_cur: np.ndarray, y: np.ndarray, model: NoiseModel, v_err: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SNR-optimal admissible scale for queries idx if b^T A c = y: (s_opt, delta_alpha there, min(alpha,
    1 - alpha) there)."""
    S = _scale_grid(s_cur, geo.s_max[idx])
    I = np.broadcast_to(idx, S.shape)
    Y = np.broadcast_to(y, S.shape)
    pred = _predicted_dy(geo, I, S, Y, model, v_err)
    best = np.argmin(pred, axis=0)
    cols = np.arange(idx.size)
    s_opt = S[best, cols]
    L = s_opt**2 * y
    dN, dD = _answer_error(geo, idx, s_opt, L, model, v_err)
    d_alpha = (dN + dD) / (s_opt * np.abs(geo.vc[idx]))
    a = 0.5 * (1.0 + np.tanh(0.5 * L))
    return s_opt, d_alpha, np.minimum(a, 1.0 - a)


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
    noise: NoiseModel | None = None,
    v_err: float = 0.0,
    s_max: float | np.ndarray | None = None,
    adapt: bool = False,
    value_offset: float = 0.0,
    w: np.ndarray | None = None,
    w_err: float = 0.0,
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
    noise : error model of one answer (tolerance tau, relative precision eps); default: float64 rounding.
    v_err : bound on each coordinate's error in ``v`` (from the single-token answers).
    s_max : largest admissible scale per query (the norm budget B_x / max token norm); None: unbounded.
    adapt : after every query is accepted, re-ask (once, counted as a rescale) those whose error bar is
        more than twice the smallest one reachable at another admissible scale (SNR-optimal |logit| ~ 2).
    value_offset, w, w_err : the affine head's terms (biases, see ``affine.py``): every answer carries the
        constant ``value_offset`` (the value bias), and the logit of the pair at scale s is
        s^2 b^T A c + s w^T c (the query bias); the learned ``w`` (error ``w_err`` per coordinate) is
        removed from the logit, its error added to the error bar. Defaults: the homogeneous head.

    Returns
    -------
    Measurements with y and dy of shape (k,). An answer is accepted only when the error bound maps alpha
    into an interval inside (0, 1), so that dy is finite; dy bounds |y_hat - y| whenever every answer
    obeys the noise model (the interval is propagated exactly through the logit, not to first order).

    Raises
    ------
    NoisyConditionError when the error bound hides the softmax weight at every admissible scale (the norm
    or margin condition fails); SaturationError when noise-free answers stay saturated after every
    rescaling (not single-head attention, or less precise than declared).
    """
    B = np.asarray(B, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    k = B.shape[0]
    model = noise if noise is not None else NoiseModel()
    vb, vc = B @ v, C @ v
    if np.any(vc == 0.0):
        raise ValueError("every direction c_t needs v^T c_t != 0 (the two-token identity divides by it)")
    smax = np.full(k, np.inf) if s_max is None else np.broadcast_to(np.asarray(s_max, float), (k,)).copy()
    geo = _Geometry(vb, vc, np.abs(B).sum(axis=1), np.abs(C).sum(axis=1), smax)
    # Margin condition: the denominator s v^T c must be resolved despite the error of v.
    weak = np.abs(vc) <= 2.0 * v_err * geo.c_l1
    if np.any(weak):
        t = int(np.argmax(weak))
        raise NoisyConditionError(
            f"margin condition violated: |v^T c| = {abs(vc[t]):.3g} is within the value vector's error "
            f"({v_err:.3g} per coordinate, ||c||_1 = {geo.c_l1[t]:.3g}); the oracle's noise hides v. "
            "Raise norm_bound (B_x) or lower tau"
        )
    s = np.minimum(np.broadcast_to(np.asarray(scale, dtype=np.float64), (k,)), smax).copy()
    y = np.full(k, np.nan)
    dy = np.full(k, np.nan)
    shrunk = np.zeros(k, dtype=bool)
    n_noisy = np.zeros(k, dtype=int)
    pending = np.arange(k)
    n_rescale = 0

    def ask(idx: np.ndarray, sp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(alpha, 1 - alpha, logit, dy, resolved) for queries idx at scales sp."""
        X = np.empty((idx.size, 2, B.shape[1]))
        X[:, 0, :] = sp[:, None] * (B[idx] + C[idx])  # token a = b + c
        X[:, 1, :] = sp[:, None] * B[idx]  # last token b acts as the attention query
        f = _ask_repeated(oracle, X, batch, n_repeats) - value_offset
        denom = sp * vc[idx]
        alpha = (f - sp * vb[idx]) / denom  # weight on the first token
        one_minus = (sp * (vb[idx] + vc[idx]) - f) / denom  # weight on the last token
        with np.errstate(divide="ignore", invalid="ignore"):
            L = np.log(alpha) - np.log(one_minus)
            dN, dD = _answer_error(geo, idx, sp, np.nan_to_num(L, nan=0.0, posinf=50.0, neginf=-50.0), model, v_err)
            da = (dN + dD) / np.abs(denom)
            resolved = (alpha - da > 0) & (one_minus - da > 0)
            hi = np.log(alpha + da) - np.log(one_minus - da)
            lo = np.log(alpha - da) - np.log(one_minus + da)
            err = np.maximum(hi - L, L - lo) / sp**2
        if w is not None:  # the affine head's query-bias term s w^T c leaves the logit
            L = L - sp * (C[idx] @ w)
            err = err + w_err * geo.c_l1[idx] / sp
        return alpha, one_minus, L, np.where(resolved, err, np.inf), resolved

    for round_ in range(MAX_RESCALE_ROUNDS):
        if pending.size == 0:
            break
        sp = s[pending]
        alpha, one_minus, L, err, resolved = ask(pending, sp)
        if round_ > 0:
            n_rescale += pending.size * n_repeats
        in_window = (alpha >= saturation) & (alpha <= 1 - saturation)
        in_window &= (one_minus >= saturation) & (one_minus <= 1 - saturation)
        ok = in_window & resolved
        done = pending[ok]
        y[done] = L[ok] / sp[ok] ** 2  # logit / s^2 = b^T A c
        dy[done] = err[ok]
        # In the window but not resolved: the noise, not the softmax, is the problem. A smaller s only
        # makes the signal smaller; a larger one is allowed only up to the norm budget.
        noisy = in_window & ~resolved
        if np.any(noisy):
            idx = pending[noisy]
            n_noisy[idx] += 1
            y_now = L[noisy] / sp[noisy] ** 2
            s_opt, da_opt, room = _best_scale(geo, idx, s[idx], y_now, model, v_err)
            # Unresolvable even at the best admissible scale (or already moved there twice): the norm,
            # margin or precision condition fails.
            stuck = (da_opt >= 0.5 * room) | (n_noisy[idx] > 2)
            if np.any(stuck):
                t_loc = int(np.argmax(stuck))
                t = int(idx[t_loc])
                a_t = float(alpha[noisy][t_loc])
                da_t = min(a_t, 1 - a_t)
                what = (
                    f"the tolerance tau = {model.tau:.3g}"
                    if model.tau > 0
                    else f"the oracle's rounding (precision {model.eps:.3g}, {model.source})"
                )
                raise NoisyConditionError(
                    f"norm/margin condition violated: at query scale s = {s[t]:.3g} (largest admissible "
                    f"{smax[t]:.3g}) the error bar of the softmax weight alpha = {a_t:.3g} exceeds its "
                    f"distance {da_t:.3g} to 0 or 1: {what}, plus the value vector's error {v_err:.3g} per "
                    f"coordinate, is not small against the signal s |v^T c| = {s[t] * abs(vc[t]):.3g} "
                    f"(margin |v^T c| = {abs(vc[t]):.3g}); no admissible scale resolves the attention "
                    "weight. Raise norm_bound (B_x), lower tau, use a more precise oracle, or a head with a "
                    "larger margin"
                )
            s[idx] = s_opt
        sat = ~in_window
        s[pending[sat]] /= shrink
        shrunk[pending[sat]] = True
        pending = pending[~ok]
    if pending.size:
        raise SaturationError(
            f"{pending.size} queries stayed saturated (softmax weight outside [{saturation:.2g}, "
            f"{1 - saturation:.6g}]) after {MAX_RESCALE_ROUNDS} rescaling rounds, down to scale "
            f"{float(np.min(s[pending])):.3g}: the answers do not behave like single-head attention, or the "
            "oracle is less precise than declared (pass precision=...)"
        )
    if adapt:
        # SNR step: predicted error at a grid of admissible scales; re-ask where it halves (or better).
        idx_all = np.arange(k)
        s_opt, _, _ = _best_scale(geo, idx_all, s, y, model, v_err)
        now = _predicted_dy(geo, idx_all, s, y, model, v_err)
        then = _predicted_dy(geo, idx_all, s_opt, y, model, v_err)
        redo = np.flatnonzero(now > 2.0 * then)
        if redo.size:
            alpha, one_minus, L, err, resolved = ask(redo, s_opt[redo])
            n_rescale += redo.size * n_repeats
            ok = (alpha >= saturation) & (one_minus >= saturation) & resolved & (err < dy[redo])
            take = redo[ok]
            y[take] = L[ok] / s_opt[take] ** 2
            dy[take] = err[ok]
            s[take] = s_opt[take]
    return Measurements(y=y, scales=s, n_rescale=n_rescale, dy=dy)
