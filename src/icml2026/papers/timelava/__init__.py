"""TimeLAVA: learning-agnostic valuation of time-series segments by unbalanced wavelet OT.

W. Liu, W. Quan, A. Zuo, E. Gao, V. Nguyen, D. Sejdinovic, H. Bondell, M. Gong, "TimeLAVA: Learning-Agnostic
Valuation for Time Series Data", ICML 2026, arXiv:2606.18729. No official code confirmed; see README.md.

Symbols (paper -> code)
-----------------------
X, X'                  ``series`` (T, d), ``reference`` (T', d)
L, S                   ``window``, ``stride`` (``reference_stride`` for X')
x_i, s_i               ``segment_series(...)`` segments, ``SegmentValues.starts``
Psi(x) (Def. 4.1)      ``wavelet_features`` (db4, level 2, periodization, channels concatenated)
d_wav (Eq. 4)          L1 (``cityblock``) distance of wavelet features
c, W(mu(.|y), mu'(.|y'))  ``label_weight``, ``label_cost_table`` (Eq. 6)
kappa, eps, rho        ``kappa``, ``eps``, ``kappa / (kappa + eps)`` (Def. 4.4, Eq. 5)
f, g                   dual potentials ``SegmentValues.f``, ``.g``; ``UOTResult``
psi_kappa(f) = phi     ``SegmentValues.phi`` (Thm 4.5)
v(x_i) (Eq. 7)         ``SegmentValues.values`` (high = valuable, sum 0)
v(t) (Eq. 8)           ``SegmentValues.pointwise()``; anomaly score ``pointwise_scores`` = -v(t)
"""

from .baselines import (
    PYOD_DETECTORS,
    LavaValues,
    lava_sample_values,
    lava_values,
    pyod_segment_scores,
    timeinf_scores,
)
from .data import (
    ANOMALY_SERIES,
    AnomalySeries,
    ClassificationSet,
    load_anomaly_series,
    load_ecg_diff_count3,
    load_internal_bleeding16,
    load_mitdb,
    load_ucr_classification,
    load_yahoo,
    make_regime_shift_series,
    make_spike_series,
    synthetic_base,
)
from .solver import UOTResult, sinkhorn_log_unbalanced, solve_uot_truncated, transport_plan, uot_objective
from .valuation import (
    SegmentValues,
    calibrated_values,
    label_cost_table,
    pointwise_scores,
    pointwise_values,
    rank_segments,
    segment_labels,
    segment_series,
    segment_starts,
    value_samples,
    value_segments,
    wavelet_features,
)

__all__ = [
    "ANOMALY_SERIES",
    "AnomalySeries",
    "ClassificationSet",
    "LavaValues",
    "PYOD_DETECTORS",
    "SegmentValues",
    "UOTResult",
    "calibrated_values",
    "label_cost_table",
    "lava_sample_values",
    "lava_values",
    "load_anomaly_series",
    "load_ecg_diff_count3",
    "load_internal_bleeding16",
    "load_mitdb",
    "load_ucr_classification",
    "load_yahoo",
    "make_regime_shift_series",
    "make_spike_series",
    "pointwise_scores",
    "pointwise_values",
    "pyod_segment_scores",
    "rank_segments",
    "segment_labels",
    "segment_series",
    "segment_starts",
    "sinkhorn_log_unbalanced",
    "solve_uot_truncated",
    "synthetic_base",
    "timeinf_scores",
    "transport_plan",
    "uot_objective",
    "value_samples",
    "value_segments",
    "wavelet_features",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
