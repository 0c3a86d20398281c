"""Baselines of the TimeLAVA comparisons, implemented for real.

* :func:`lava_values` -- LAVA (Just et al., ICLR 2023): exact balanced OT (``ot.emd``) on raw segments with a
  Euclidean ground cost (plus the same class-pair label term), calibrated gradient of the dual.
* :func:`timeinf_scores` -- TimeInf-style self-influence of time blocks under a ridge autoregressive model
  (closed form for linear least squares).
* :func:`pyod_segment_scores` -- classic detectors from ``pyod`` (IsolationForest, LOF, kNN distance to the
  reference) on segment vectors, averaged per time point.

Ablations of TimeLAVA itself (raw segments instead of wavelets, balanced OT via a large ``kappa``) are
options of :func:`~icml2026.papers.timelava.valuation.value_segments`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist

from icml2026.core.validate import as_array, finite_number

from .valuation import (
    _as_series,
    _check_int,
    label_cost_table,
    pointwise_values,
    segment_series,
    wavelet_features,
)

__all__ = [
    "LavaValues",
    "lava_values",
    "lava_sample_values",
    "timeinf_scores",
    "pyod_segment_scores",
    "PYOD_DETECTORS",
]


@dataclass
class LavaValues:
    """LAVA values: ``starts`` (n,), ``values`` (n,) (high = valuable), ``dual`` (n,) the EMD dual ``u``."""

    starts: np.ndarray
    values: np.ndarray
    dual: np.ndarray
    window: int
    length: int

    def pointwise(self) -> np.ndarray:
        """Point-wise values (mean over covering segments, as Eq. 8), shape (T,)."""
        return pointwise_values(self.values, self.starts, self.window, self.length)


def lava_sample_values(
    samples: np.ndarray,
    reference: np.ndarray,
    labels: np.ndarray | None = None,
    reference_labels: np.ndarray | None = None,
    label_weight: float = 1.0,
    normalize: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """LAVA on pre-cut samples: balanced exact OT, Euclidean cost on raw vectors, calibrated dual gradient.

    ``grad_i = u_i - sum_{j != i} u_j / (n - 1)`` (high = harmful); values are ``-grad`` (sum to 0).

    Parameters
    ----------
    samples : (n, L) or (n, L, d); reference : (m, L) or (m, L, d).
    labels, reference_labels : optional class labels (n,), (m,) for the label term of LAVA.

    Returns
    -------
    values (n,), dual u (n,).
    """
    import ot

    x = as_array(samples, "samples", ndim=(2, 3))
    r = as_array(reference, "reference", ndim=(2, 3))
    if x.ndim == 2:
        x = x[:, :, None]
    if r.ndim == 2:
        r = r[:, :, None]
    if x.shape[1:] != r.shape[1:]:
        raise ValueError(f"samples {x.shape[1:]} and reference {r.shape[1:]} differ in (length, channels)")
    n, m = x.shape[0], r.shape[0]
    label_weight = finite_number(label_weight, "label_weight", lo=0.0)
    if (labels is None) != (reference_labels is None):
        raise ValueError("give both labels and reference_labels, or neither")
    if n < 2:
        raise ValueError("LAVA's calibrated gradient needs at least 2 samples")
    fx = wavelet_features(x, None, normalize=normalize)
    fr = wavelet_features(r, None, normalize=normalize)
    cost = cdist(fx, fr, "euclidean")
    if labels is not None and reference_labels is not None:
        table, inv, rinv = label_cost_table(
            fx, np.asarray(labels), fr, np.asarray(reference_labels), "euclidean"
        )
        cost += label_weight * table[inv[:, None], rinv[None, :]]
    _, log = ot.emd(np.full(n, 1.0 / n), np.full(m, 1.0 / m), cost, numItermax=100_000_000, log=True)
    u = np.asarray(log["u"], dtype=np.float64)
    grad = u - (u.sum() - u) / (n - 1)
    values = -(grad - grad.mean())
    return values, u


def lava_values(
    series: np.ndarray,
    reference: np.ndarray,
    window: int = 64,
    stride: int = 4,
    *,
    reference_stride: int | None = None,
    normalize: bool = False,
) -> LavaValues:
    """LAVA (i.i.d. data valuation) on raw sliding-window segments of a series.

    Parameters
    ----------
    series : (T,) or (T, d); reference : (T',) or (T', d) clean series.
    window, stride, reference_stride : segmentation as in TimeLAVA.
    normalize : per-segment z-normalisation (off: LAVA works on raw vectors).

    Returns
    -------
    LavaValues (values high = valuable; anomaly score = ``-values``).
    """
    x = _as_series(series, "series")
    r = _as_series(reference, "reference")
    window = _check_int(window, "window", 1)
    stride = _check_int(stride, "stride", 1)
    rstride = stride if reference_stride is None else _check_int(reference_stride, "reference_stride", 1)
    if x.shape[1] != r.shape[1]:
        raise ValueError(f"series has {x.shape[1]} channel(s) but reference has {r.shape[1]}")
    starts, segs = segment_series(x, window, stride)
    _, rsegs = segment_series(r, window, rstride)
    values, u = lava_sample_values(segs, rsegs, normalize=normalize)
    return LavaValues(starts=starts, values=values, dual=u, window=window, length=x.shape[0])


def timeinf_scores(series: np.ndarray, window: int = 64, ridge: float = 1e-2) -> np.ndarray:
    """TimeInf-style anomaly scores: self-influence of time blocks under a ridge AR model.

    Block ``t`` is the sample ``(z_t, x_t)`` with ``z_t = (x_{t-p}, ..., x_{t-1}, 1)``, ``p = window - 1``
    (all channels predicted from all channels' lags). With the ridge fit ``W``, residual ``e_t`` and
    ``H = Z^T Z / N``, the self-influence is ``g_t^T (H + ridge I)^{-1} g_t`` with ``g_t = e_t z_t`` (per
    channel, summed), i.e. ``||e_t||^2 z_t^T (H + ridge I)^{-1} z_t``. The point score is the mean
    influence over the blocks covering the point (block ``t`` covers ``t-p..t``).

    Parameters
    ----------
    series : (T,) or (T, d).
    window : block length ``L`` (``p = L - 1`` lags).
    ridge : ``lambda`` of the ridge penalty and of the influence.

    Returns
    -------
    (T,) scores, high = anomalous.
    """
    x = _as_series(series, "series")
    window = _check_int(window, "window", 2)
    ridge = finite_number(ridge, "ridge", lo=0.0, lo_open=True)
    t_len, d = x.shape
    p = window - 1
    if t_len <= window:
        raise ValueError(f"TimeInf needs a series longer than the window ({t_len} <= {window})")
    mu, sd = x.mean(0), x.std(0)
    xs = (x - mu) / np.where(sd > 1e-12, sd, 1.0)
    lags = np.lib.stride_tricks.sliding_window_view(xs[:-1], p, axis=0)  # (N, d, p)
    z = np.concatenate([lags.reshape(lags.shape[0], -1), np.ones((lags.shape[0], 1))], axis=1)
    y = xs[p:]
    n_blocks = z.shape[0]
    h = z.T @ z / n_blocks + ridge * np.eye(z.shape[1])
    w = np.linalg.solve(h, z.T @ y / n_blocks)
    resid = y - z @ w
    lev = np.einsum("ij,ij->i", z, np.linalg.solve(h, z.T).T)
    infl = (resid**2).sum(axis=1) * lev
    starts = np.arange(n_blocks)  # block t (target index t + p) covers points t .. t + p
    return pointwise_values(infl, starts, window, t_len)


PYOD_DETECTORS = ("iforest", "lof", "knn_ref")


def pyod_segment_scores(
    series: np.ndarray,
    reference: np.ndarray,
    detector: str,
    rng: np.random.Generator,
    window: int = 64,
    stride: int = 4,
    reference_stride: int | None = None,
    normalize: bool = True,
) -> np.ndarray:
    """Classic detectors from pyod on (optionally z-normalised) segment vectors, averaged per point.

    ``iforest`` (IsolationForest) and ``lof`` (LocalOutlierFactor) are fitted on the evaluated segments
    (unsupervised); ``knn_ref`` is pyod's KNN detector fitted on the reference segments and scoring the
    evaluated ones (largest-neighbour distance to the clean reference).

    Returns
    -------
    (T,) scores, high = anomalous.
    """
    from pyod.models.iforest import IForest
    from pyod.models.knn import KNN
    from pyod.models.lof import LOF

    if detector not in PYOD_DETECTORS:
        raise ValueError(f"unknown detector {detector!r}; choose from {PYOD_DETECTORS}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")
    x = _as_series(series, "series")
    r = _as_series(reference, "reference")
    window = _check_int(window, "window", 1)
    stride = _check_int(stride, "stride", 1)
    rstride = stride if reference_stride is None else _check_int(reference_stride, "reference_stride", 1)
    if x.shape[1] != r.shape[1]:
        raise ValueError(f"series has {x.shape[1]} channel(s) but reference has {r.shape[1]}")
    starts, segs = segment_series(x, window, stride)
    if len(starts) < 2:
        raise ValueError(f"series: yields {len(starts)} segment(s) with window={window}, stride={stride}; need >= 2")
    _, rsegs = segment_series(r, window, rstride)
    fx = wavelet_features(segs, None, normalize=normalize)
    fr = wavelet_features(rsegs, None, normalize=normalize)
    if detector == "iforest":
        model = IForest(n_estimators=200, random_state=int(rng.integers(2**31 - 1)))
        model.fit(fx)
        seg_scores = model.decision_scores_
    elif detector == "lof":
        model = LOF(n_neighbors=min(20, len(fx) - 1))
        model.fit(fx)
        seg_scores = model.decision_scores_
    else:
        model = KNN(n_neighbors=min(5, len(fr)), method="largest")
        model.fit(fr)
        seg_scores = model.decision_function(fx)
    return pointwise_values(np.asarray(seg_scores, dtype=np.float64), starts, window, x.shape[0])
