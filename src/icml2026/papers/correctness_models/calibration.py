"""Post-hoc calibrators fitted on the 5% calibration split (brief Sec. 2, official ``posthoc_calibration``).

===========  ================================================================================
platt        the official code's Platt scaling: ``LogisticRegression(C=1e11)`` on the raw p, i.e.
             sigmoid(a p + b) with (a, b) the (effectively unregularised) maximum-likelihood fit
platt_logit  classic Platt on the logit of p, sigmoid(a logit(p) + b) (C = 1e6); not the official
             formula, kept beside it (it inverts a temperature-scaled CM exactly)
isotonic     ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip")`` on p
beta         ``betacal.BetaCalibration(parameters="abm")`` (Kull et al. 2017)
spline       ``ml_insights.SplineCalib`` (Lucena 2018), random_state=42, 3-fold CV over 5 penalties
===========  ================================================================================

Calibrators are fitted on the calibration split only; the caller never shows them the eval split.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np

from icml2026.core.validate import as_labels, as_probabilities, same_length

__all__ = ["CALIBRATORS", "PLATT_C", "Calibrator", "fit_calibrator"]

CalibratorKind = Literal["platt", "platt_logit", "isotonic", "beta", "spline"]
CALIBRATORS: tuple[CalibratorKind, ...] = ("platt", "platt_logit", "isotonic", "beta", "spline")
#: sklearn's C of the official Platt fit (effectively no penalty)
PLATT_C = 1e11
_EPS = 1e-6  # p is clipped to [eps, 1 - eps] before a logit, so p = 0 or 1 stays finite


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, _EPS, 1 - _EPS)
    return np.log(q / (1 - q))


class Calibrator:
    """A fitted map p -> calibrated p; ``predict(probs)`` accepts any (n,) array of probabilities."""

    def __init__(self, kind: str, model: Any) -> None:
        self.kind = kind
        self.model_ = model

    def predict(self, probs: object) -> np.ndarray:
        p = as_probabilities(probs, "probs", ndim=1)
        if self.kind == "platt":
            out = self.model_.predict_proba(p[:, None])[:, 1]
        elif self.kind == "platt_logit":
            out = self.model_.predict_proba(_logit(p)[:, None])[:, 1]
        elif self.kind == "isotonic":
            out = self.model_.predict(p)
        elif self.kind == "beta":
            out = self.model_.predict(p)
        else:  # spline
            out = self.model_.calibrate(p)
        return np.clip(np.asarray(out, dtype=np.float64), 0.0, 1.0)

    def __repr__(self) -> str:
        return f"Calibrator(kind={self.kind!r})"


def fit_calibrator(kind: CalibratorKind, probs: object, labels: object) -> Calibrator:
    """Fit a post-hoc calibrator of ``kind`` on (p(yes), label) pairs of the calibration split.

    Raises ValueError on an unknown kind, probabilities outside [0, 1], NaN, mismatched lengths, an empty
    split or labels of one class only (no calibrator can be fitted to a single class).
    """
    if kind not in CALIBRATORS:
        raise ValueError(f"kind: must be one of {', '.join(CALIBRATORS)}, got {kind!r}")
    p = as_probabilities(probs, "probs", ndim=1)
    y = as_labels(labels, "labels", binary=True)
    same_length(probs=p, labels=y)
    if y.min() == y.max():
        raise ValueError(f"labels: all {y.size} calibration labels are {int(y[0])}; need both classes to fit")
    if kind == "platt":
        from sklearn.linear_model import LogisticRegression

        # the official posthoc calibration: an (effectively) unregularised logistic regression on raw p
        model: Any = LogisticRegression(C=PLATT_C, max_iter=1000).fit(p[:, None], y)
    elif kind == "platt_logit":
        from sklearn.linear_model import LogisticRegression

        # Deviation (kept as an option, not the default since issue 58): Platt on logit(p)
        model = LogisticRegression(C=1e6, max_iter=1000).fit(_logit(p)[:, None], y)
    elif kind == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(p, y)
    elif kind == "beta":
        from betacal import BetaCalibration

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = BetaCalibration(parameters="abm").fit(np.clip(p, _EPS, 1 - _EPS), y)
    else:
        from ml_insights import SplineCalib

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # Deviation: 3-fold CV over 5 penalties (1e-2..1e2) instead of the library's 5 folds x 17
            # penalties: ~8x faster (the default takes ~1 min per 1000 points on our shared CPU).
            model = SplineCalib(random_state=42, cv_spline=3, reg_param_vec=np.logspace(-2, 2, 5))
            model.fit(p, y)
    return Calibrator(kind, model)
