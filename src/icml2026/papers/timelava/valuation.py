"""TimeLAVA segment and point-wise values (Algorithms 1 and 2; Defs. 4.1-4.4, Thm 4.5, Eqs. 4-8).

Pipeline: sliding-window segments -> optional per-segment z-normalisation -> multi-level DWT features
``Psi`` (Def. 4.1) -> L1 wavelet ground cost ``d_wav`` (Eq. 4, plus the LAVA label term of Eq. 6 when labels
are given) -> entropic unbalanced OT dual ``f`` (Eq. 5) -> ``phi = psi_kappa(f)`` and the calibrated
gradient ``v`` (Thm 4.5, Eq. 7) -> point-wise values by averaging over covering segments (Eq. 8).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pywt
from scipy.spatial.distance import cdist

from icml2026.core.validate import as_array, positive_int, same_length

from .solver import UOTResult, solve_uot_truncated

__all__ = [
    "SegmentValues",
    "value_segments",
    "value_samples",
    "pointwise_scores",
    "pointwise_values",
    "rank_segments",
    "segment_starts",
    "segment_series",
    "wavelet_features",
    "calibrated_values",
    "label_cost_table",
    "segment_labels",
]

# Largest cost matrix (entries) kept in memory between the solver's passes; beyond it row chunks are
# recomputed on every pass. 2**22 float64 entries = 32 MiB.
CACHE_LIMIT = 1 << 22


@dataclass
class SegmentValues:
    """TimeLAVA values of the segments of an evaluated series.

    Attributes
    ----------
    starts : (n,) start index ``s_i`` of each evaluated segment.
    values : (n,) calibrated values ``v(x_i)`` (Eq. 7); high = valuable, they sum to 0.
    phi : (n,) sensitivities ``psi_kappa(f_i)`` (Thm 4.5); high = harmful.
    f, g : (n,), (m,) dual potentials of Eq. (5).
    window, stride : segment length ``L`` and evaluation stride ``S``.
    length : length ``T`` of the evaluated series.
    n_iter, converged, n_entries : solver diagnostics (see :class:`UOTResult`).
    """

    starts: np.ndarray
    values: np.ndarray
    phi: np.ndarray
    f: np.ndarray
    g: np.ndarray
    window: int
    stride: int
    length: int
    n_iter: int
    converged: bool
    n_entries: int

    def pointwise(self) -> np.ndarray:
        """Point-wise values ``v(t)`` (Eq. 8), shape (T,)."""
        return pointwise_values(self.values, self.starts, self.window, self.length)


# ------------------------------------------------------------------------------------------------------------
# Input validation and segmentation (Algorithm 1, step 1)
# ------------------------------------------------------------------------------------------------------------


def _as_series(x: object, name: str) -> np.ndarray:
    """(T,) or (T, d) finite float array -> (T, d)."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers: {exc}") from exc
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (T,) or (T, channels), got {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    bad = ~np.isfinite(arr)
    if bad.any():
        t = int(np.argwhere(bad)[0, 0])
        raise ValueError(f"{name} contains NaN or inf (first at time step {t}); clean or impute it first")
    return arr


def _check_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_pos(value: float, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number, got {value!r}") from exc
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return v


def segment_starts(length: int, window: int, stride: int) -> np.ndarray:
    """Start indices ``s_i = 0, S, 2S, ...`` with ``s_i + L <= T`` (Algorithm 1, step 1). Shape (n,)."""
    length = positive_int(length, "length")
    window = positive_int(window, "window")
    stride = positive_int(stride, "stride")
    if window > length:
        raise ValueError(f"window={window} is longer than the series (length {length})")
    return np.arange(0, length - window + 1, stride, dtype=np.int64)


def segment_series(series: np.ndarray, window: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Sliding-window segments ``x_i = X[s_i : s_i + L]``.

    Parameters
    ----------
    series : (T, d) array.

    Returns
    -------
    starts : (n,), segments : (n, L, d) (a copy).
    """
    series = as_array(series, "series", ndim=2)
    starts = segment_starts(series.shape[0], window, stride)
    view = np.lib.stride_tricks.sliding_window_view(series, window, axis=0)  # (T-L+1, d, L)
    segs = np.ascontiguousarray(view[starts].transpose(0, 2, 1))
    return starts, segs


# ------------------------------------------------------------------------------------------------------------
# Wavelet features (Def. 4.1) and ground cost (Def. 4.2, Eq. 4; label term Eq. 6)
# ------------------------------------------------------------------------------------------------------------


def _resolve_levels(window: int, wavelet: str | None, levels: int | None) -> int:
    if wavelet is None:
        return 0
    try:
        w = pywt.Wavelet(wavelet)
    except ValueError as exc:
        raise ValueError(f"unknown wavelet {wavelet!r}; see pywt.wavelist(kind='discrete')") from exc
    max_level = pywt.dwt_max_level(window, w.dec_len)
    if levels is None:
        # Paper default (App. C.1.3): level 2, capped so that short windows stay free of boundary effects.
        return min(2, max_level)
    lv = _check_int(levels, "levels", 0)
    if lv > max_level:
        raise ValueError(f"levels={lv} is too deep for window={window} with {wavelet} (maximum {max_level})")
    return lv


def wavelet_features(
    segments: np.ndarray, wavelet: str | None = "db4", levels: int | None = None, normalize: bool = True
) -> np.ndarray:
    """Multi-scale wavelet embedding ``Psi(x)`` of segments (Def. 4.1).

    Each channel is (optionally) z-normalised per segment, decomposed with
    ``pywt.wavedec(..., mode="periodization")`` (approximation + all details) and the coefficients of all
    channels are concatenated. ``wavelet=None`` returns the (normalised) raw samples (ablation).

    Parameters
    ----------
    segments : (n, L, d) array.

    Returns
    -------
    (n, p) float64 features, ``p ~ L * d``.
    """
    segs = as_array(segments, "segments", ndim=(2, 3))
    if segs.ndim == 2:
        segs = segs[:, :, None]
    n, window, d = segs.shape
    if window < 1 or d < 1:
        raise ValueError(f"segments: expected shape (n, L) or (n, L, d) with L, d >= 1, got {segs.shape}")
    x = segs.transpose(0, 2, 1)  # (n, d, L)
    if normalize:
        mu = x.mean(axis=2, keepdims=True)
        sd = x.std(axis=2, keepdims=True)
        # A constant segment has no shape: map it to zeros instead of dividing by 0.
        x = (x - mu) / np.where(sd > 1e-12, sd, 1.0)
    lv = _resolve_levels(window, wavelet, levels)
    if wavelet is None or lv == 0:
        return np.ascontiguousarray(x.reshape(n, d * window))
    coeffs = pywt.wavedec(x, wavelet, level=lv, mode="periodization", axis=2)
    return np.ascontiguousarray(np.concatenate(coeffs, axis=2).reshape(n, -1))


def segment_labels(labels: np.ndarray, starts: np.ndarray, window: int) -> np.ndarray:
    """Segment label by majority vote of its per-step labels (ties -> smallest label). Shape (n,)."""
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.size == 0:
        raise ValueError(f"labels: expected a non-empty 1-D array, got shape {lab.shape}")
    window = positive_int(window, "window", maximum=lab.size)
    starts = as_array(starts, "starts", ndim=1, dtype=np.int64, lo=0, hi=lab.size - window)
    view = np.lib.stride_tricks.sliding_window_view(lab, window)[starts]
    out = np.empty(len(starts), dtype=lab.dtype)
    for k, row in enumerate(view):
        vals, counts = np.unique(row, return_counts=True)
        out[k] = vals[np.argmax(counts)]
    return out


def label_cost_table(
    feats: np.ndarray,
    labels: np.ndarray,
    ref_feats: np.ndarray,
    ref_labels: np.ndarray,
    metric: str = "cityblock",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class-pair OT distances of the LAVA label term (Eq. 6).

    ``W[y, y'] = OT(mu(.|y), mu'(.|y'))``: exact balanced OT (``ot.emd2``, uniform weights) between the
    evaluated points of class ``y`` and the reference points of class ``y'`` with ground cost ``metric``.

    Returns
    -------
    table : (k, k') distances, classes : (k,) evaluated classes, ref_classes : (k',).
    """
    import ot

    feats = as_array(feats, "feats", ndim=2)
    ref_feats = as_array(ref_feats, "ref_feats", ndim=2)
    if feats.shape[1] != ref_feats.shape[1]:
        raise ValueError(f"feats and ref_feats must have the same width, got {feats.shape} and {ref_feats.shape}")
    labels, ref_labels = np.asarray(labels), np.asarray(ref_labels)
    if labels.ndim != 1 or ref_labels.ndim != 1:
        raise ValueError("labels and ref_labels must be 1-D")
    same_length(feats=feats, labels=labels)
    same_length(ref_feats=ref_feats, ref_labels=ref_labels)
    classes, inv = np.unique(labels, return_inverse=True)
    ref_classes, ref_inv = np.unique(ref_labels, return_inverse=True)
    table = np.zeros((classes.size, ref_classes.size))
    for p in range(classes.size):
        xa = feats[inv == p]
        for q in range(ref_classes.size):
            xb = ref_feats[ref_inv == q]
            c = cdist(xa, xb, metric)
            table[p, q] = ot.emd2(
                np.full(len(xa), 1 / len(xa)), np.full(len(xb), 1 / len(xb)), c, numItermax=10_000_000
            )
    return table, inv, ref_inv


# ------------------------------------------------------------------------------------------------------------
# Values (Thm 4.5, Eq. 7) and point-wise aggregation (Eq. 8, Algorithm 2)
# ------------------------------------------------------------------------------------------------------------


def calibrated_values(f: np.ndarray, kappa: float) -> tuple[np.ndarray, np.ndarray]:
    """Sensitivities ``phi_i = kappa (1 - exp(-f_i/kappa))``, values ``v_i = -(phi_i - mean_{j!=i} phi_j)``.

    Thm 4.5 / Eq. (7). Returns ``(values, phi)``, both (n,); the values sum to 0.
    """
    f = as_array(f, "f", ndim=1, min_size=0)
    kappa = _check_pos(kappa, "kappa")
    n = f.size
    if n < 2:
        raise ValueError("the calibrated gradient (Eq. 7) needs at least 2 evaluated segments")
    phi = -kappa * np.expm1(-f / kappa)
    values = -(phi - (phi.sum() - phi) / (n - 1))
    values -= values.mean()  # exact in exact arithmetic; removes float round-off so that sum(v) = 0
    return values, phi


def pointwise_values(values: np.ndarray, starts: np.ndarray, window: int, length: int) -> np.ndarray:
    """Point-wise values ``v(t)`` = mean of ``v(x_i)`` over the segments covering ``t`` (Eq. 8, Algorithm 2).

    Points that no segment covers (the tail when ``(T - L) % S != 0``, or gaps when ``S > L``) take the
    value of the nearest segment (by distance from ``t`` to the segment's span).

    Returns
    -------
    (T,) float array.
    """
    values = as_array(values, "values", ndim=1)
    length = positive_int(length, "length")
    window = positive_int(window, "window", maximum=length)
    starts = as_array(starts, "starts", ndim=1, dtype=np.int64, lo=0, hi=length - window)
    same_length(values=values, starts=starts)
    if np.any(np.diff(starts) < 0):
        raise ValueError("starts: must be sorted in increasing order")
    acc = np.zeros(length + 1)
    cnt = np.zeros(length + 1)
    np.add.at(acc, starts, values)
    np.add.at(acc, starts + window, -values)
    np.add.at(cnt, starts, 1.0)
    np.add.at(cnt, starts + window, -1.0)
    tot = np.cumsum(acc)[:length]
    num = np.rint(np.cumsum(cnt)[:length])
    out = np.empty(length)
    covered = num > 0
    out[covered] = tot[covered] / num[covered]
    if not covered.all():
        t = np.flatnonzero(~covered)
        ends = starts + window - 1
        # distance from t to [start, end]; nearest segment (earliest on ties)
        k_after = np.searchsorted(starts, t, side="left")  # first segment starting at or after t
        k_before = np.clip(k_after - 1, 0, len(starts) - 1)
        k_after = np.clip(k_after, 0, len(starts) - 1)
        d_before = np.maximum(t - ends[k_before], 0)
        d_after = np.maximum(starts[k_after] - t, 0)
        pick = np.where(d_after < d_before, k_after, k_before)
        out[t] = values[pick]
    return out


def rank_segments(values: np.ndarray) -> np.ndarray:
    """Indices of segments from most to least valuable (descending ``v``; stable on ties). Shape (n,)."""
    v = as_array(values, "values", ndim=1)
    return np.argsort(-v, kind="stable")


# ------------------------------------------------------------------------------------------------------------
# Public entry points
# ------------------------------------------------------------------------------------------------------------


def _solve(
    feats: np.ndarray,
    ref_feats: np.ndarray,
    kappa: float,
    eps: float,
    label_term: np.ndarray | None,
    inv: np.ndarray | None,
    ref_inv: np.ndarray | None,
    tol: float,
    max_iter: int,
) -> UOTResult:
    """Eq. (5) on the cost of Eqs. (4)/(6), through the certified truncated solver (exact to ~1e-22)."""
    n, m = feats.shape[0], ref_feats.shape[0]

    def cost_rows(s: int, e: int) -> np.ndarray:
        c = cdist(feats[s:e], ref_feats, "cityblock")  # Eq. (4)
        if label_term is not None:
            assert inv is not None and ref_inv is not None
            c += label_term[inv[s:e][:, None], ref_inv[None, :]]  # Eq. (6)
        return c

    if n * m <= CACHE_LIMIT:
        full = cost_rows(0, n)

        def cached_rows(s: int, e: int) -> np.ndarray:
            return full[s:e]

        return solve_uot_truncated(cached_rows, n, m, kappa=kappa, eps=eps, tol=tol, max_iter=max_iter)
    # Deviation: beyond CACHE_LIMIT the cost matrix is never held whole; each pass recomputes row chunks.
    return solve_uot_truncated(cost_rows, n, m, kappa=kappa, eps=eps, tol=tol, max_iter=max_iter)


def value_samples(
    samples: np.ndarray,
    reference: np.ndarray,
    kappa: float = 2.0,
    eps: float = 0.01,
    wavelet: str | None = "db4",
    levels: int | None = None,
    *,
    normalize: bool = True,
    labels: np.ndarray | None = None,
    reference_labels: np.ndarray | None = None,
    label_weight: float = 1.0,
    tol: float = 1e-9,
    max_iter: int = 100_000,
) -> SegmentValues:
    """TimeLAVA values of pre-cut segments (Algorithm 1 without step 1; Eqs. 4-7).

    Parameters
    ----------
    samples : (n, L) or (n, L, d) evaluated segments (e.g. one per series in classification).
    reference : (m, L) or (m, L, d) reference segments.
    labels, reference_labels : optional (n,), (m,) class labels; when given, the cost gets the LAVA label
        term ``label_weight * W[y_i, y'_j]`` (Eq. 6, ``c = 1`` for label-noise detection).

    Returns
    -------
    SegmentValues with ``starts = arange(n)`` and ``window = stride = L``.
    """
    kappa = _check_pos(kappa, "kappa")
    eps = _check_pos(eps, "eps")
    x = as_array(samples, "samples")
    r = as_array(reference, "reference")
    if x.ndim == 2:
        x = x[:, :, None]
    if r.ndim == 2:
        r = r[:, :, None]
    if x.ndim != 3 or r.ndim != 3:
        raise ValueError(f"samples and reference must be (n, L) or (n, L, d); got {x.shape} and {r.shape}")
    if x.shape[1:] != r.shape[1:]:
        raise ValueError(f"samples {x.shape[1:]} and reference {r.shape[1:]} differ in (length, channels)")
    if x.shape[0] < 2 or r.shape[0] < 1:
        raise ValueError(
            f"need >= 2 evaluated and >= 1 reference segments, got {x.shape[0]} and {r.shape[0]}"
        )
    for name, arr in (("samples", x), ("reference", r)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or inf")
    feats = wavelet_features(x, wavelet, levels, normalize)
    ref_feats = wavelet_features(r, wavelet, levels, normalize)
    table = inv = ref_inv = None
    if (labels is None) != (reference_labels is None):
        raise ValueError("give both labels and reference_labels, or neither")
    if labels is not None and reference_labels is not None:
        lab = np.asarray(labels)
        rlab = np.asarray(reference_labels)
        if lab.shape != (x.shape[0],) or rlab.shape != (r.shape[0],):
            raise ValueError(f"labels must have shapes ({x.shape[0]},) and ({r.shape[0]},)")
        for name, arr in (("labels", lab), ("reference_labels", rlab)):
            if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
                raise ValueError(f"{name}: contains NaN or inf")
        w = float(label_weight)
        if not (math.isfinite(w) and w >= 0):
            raise ValueError(f"label_weight must be >= 0 and finite, got {label_weight!r}")
        table, inv, ref_inv = label_cost_table(feats, lab, ref_feats, rlab)
        table = w * table
    res = _solve(feats, ref_feats, kappa, eps, table, inv, ref_inv, tol, max_iter)
    values, phi = calibrated_values(res.f, kappa)
    if np.ptp(values) <= 1e-12 * kappa:
        warnings.warn(
            "all values are equal: either the reference contains every evaluated segment, or every cost "
            "is so large relative to kappa that psi_kappa(f) saturates at kappa for all segments (rescale "
            "the series or raise kappa); the valuation carries no information",
            RuntimeWarning,
            stacklevel=2,
        )
    L = x.shape[1]
    return SegmentValues(
        starts=np.arange(x.shape[0], dtype=np.int64),
        values=values,
        phi=phi,
        f=res.f,
        g=res.g,
        window=L,
        stride=L,
        length=x.shape[0] * L,
        n_iter=res.n_iter,
        converged=res.converged,
        n_entries=res.n_entries,
    )


def value_segments(
    series: np.ndarray,
    reference: np.ndarray,
    window: int = 64,
    stride: int = 4,
    kappa: float = 2.0,
    eps: float = 0.01,
    wavelet: str | None = "db4",
    levels: int | None = None,
    *,
    reference_stride: int | None = None,
    normalize: bool = True,
    labels: np.ndarray | None = None,
    reference_labels: np.ndarray | None = None,
    label_weight: float = 1.0,
    tol: float = 1e-9,
    max_iter: int = 100_000,
) -> SegmentValues:
    """TimeLAVA segment values of an evaluated series against a clean reference (Algorithm 1).

    Parameters
    ----------
    series : (T,) or (T, d) evaluated series ``X``.
    reference : (T', ) or (T', d) clean reference series ``X'`` (never ``X`` itself: values collapse).
    window, stride : segment length ``L`` and stride ``S`` (``S < L`` for point-wise scores).
    kappa, eps : KL marginal penalty and entropic regularisation of Eq. (5) (paper: 2.0, 0.01).
    wavelet, levels : DWT of Def. 4.1 (paper: db4, level 2; ``levels=None`` -> 2, capped by the window);
        ``wavelet=None`` uses raw segments (ablation).
    reference_stride : stride of the reference segments (default: ``stride``).
    normalize : per-segment, per-channel z-normalisation (step 2).
    labels, reference_labels : optional per-step labels (T,), (T',); segment labels by majority vote and
        the LAVA label term of Eq. (6) weighted by ``label_weight``.
    tol, max_iter : Sinkhorn stopping rule.

    Returns
    -------
    SegmentValues (``values`` high = valuable; anomaly score of a segment = ``-values``).
    """
    x = _as_series(series, "series")
    r = _as_series(reference, "reference")
    window = _check_int(window, "window", 1)
    stride = _check_int(stride, "stride", 1)
    rstride = stride if reference_stride is None else _check_int(reference_stride, "reference_stride", 1)
    if x.shape[1] != r.shape[1]:
        raise ValueError(
            f"series has {x.shape[1]} channel(s) but reference has {r.shape[1]}; they must match"
        )
    if window > x.shape[0]:
        raise ValueError(f"window={window} is longer than the series (length {x.shape[0]})")
    if window > r.shape[0]:
        raise ValueError(f"window={window} is longer than the reference (length {r.shape[0]})")
    if x.shape == r.shape and np.array_equal(x, r):
        raise ValueError(
            "the reference is the evaluated series itself: every segment then has an exact twin in the "
            "reference, the dual potentials are constant and all values collapse to ~0 (AUC 0.5); use a "
            "clean split or a held-out part of the data as reference"
        )
    starts, segs = segment_series(x, window, stride)
    if len(starts) < 2:
        raise ValueError(
            f"the series yields {len(starts)} segment(s) with window={window}, stride={stride}; need >= 2"
        )
    _, ref_segs = segment_series(r, window, rstride)
    seg_lab = ref_lab = None
    if (labels is None) != (reference_labels is None):
        raise ValueError("give both labels and reference_labels, or neither")
    if labels is not None and reference_labels is not None:
        lab = np.asarray(labels)
        rlab = np.asarray(reference_labels)
        if lab.shape != (x.shape[0],) or rlab.shape != (r.shape[0],):
            raise ValueError("labels / reference_labels must have one entry per time step")
        for name, arr in (("labels", lab), ("reference_labels", rlab)):
            if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
                raise ValueError(f"{name}: contains NaN or inf")
        seg_lab = segment_labels(lab, starts, window)
        ref_lab = segment_labels(rlab, segment_starts(r.shape[0], window, rstride), window)
    sv = value_samples(
        segs,
        ref_segs,
        kappa,
        eps,
        wavelet,
        levels,
        normalize=normalize,
        labels=seg_lab,
        reference_labels=ref_lab,
        label_weight=label_weight,
        tol=tol,
        max_iter=max_iter,
    )
    return SegmentValues(
        starts=starts,
        values=sv.values,
        phi=sv.phi,
        f=sv.f,
        g=sv.g,
        window=window,
        stride=stride,
        length=x.shape[0],
        n_iter=sv.n_iter,
        converged=sv.converged,
        n_entries=sv.n_entries,
    )


def pointwise_scores(
    series: np.ndarray,
    reference: np.ndarray,
    window: int = 64,
    stride: int = 4,
    kappa: float = 2.0,
    eps: float = 0.01,
    wavelet: str | None = "db4",
    levels: int | None = None,
    **kwargs: object,
) -> np.ndarray:
    """Point-wise anomaly scores ``-v(t)`` (Eq. 8, Algorithm 2); one per time step, shape (T,).

    Same arguments as :func:`value_segments`; high score = anomalous / harmful.
    """
    res = value_segments(series, reference, window, stride, kappa, eps, wavelet, levels, **kwargs)  # type: ignore[arg-type]
    return -res.pointwise()
