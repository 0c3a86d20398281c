"""The paper's baselines that are not themselves trained CMs (brief Sec. 3).

==========================  ====================================================================
self-confidence             the target's own max-prob / sequence probability (``target_confidence``)
calibrated self-confidence  the same, post-hoc calibrated on the 5% calibration split
in-context history          :class:`RetrievalCM`: the k nearest past examples of the same target,
                            no training (the paper's retrieval / in-context history without SFT)
==========================  ====================================================================

The trained baselines (SCM, GCM with the model name) are :class:`~.cms.FeatureCM` fitted on other data;
the experiments build them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from icml2026.core.validate import as_labels, as_probabilities, positive_int, same_length

from .calibration import CalibratorKind, fit_calibrator
from .cms import Embedder
from .prompts import HistoryExample

__all__ = ["RetrievalCM", "calibrated_self_confidence", "self_confidence"]


def self_confidence(records: Sequence[dict[str, object]]) -> np.ndarray:
    """The target's own confidence of each history record (no training): ``target_confidence``."""
    if isinstance(records, dict) or len(records) == 0:
        raise ValueError("records: expected a non-empty sequence of history records")
    try:
        vals = [float(r["target_confidence"]) for r in records]  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"records: every record needs a numeric target_confidence ({exc})") from None
    return as_probabilities(vals, "records.target_confidence", ndim=1)


def calibrated_self_confidence(kind: CalibratorKind, cal_confidence: object, cal_labels: object,
                               confidence: object) -> np.ndarray:
    """Post-hoc calibration alone applied to the target's raw confidence (fitted on the calibration split)."""
    y = as_labels(cal_labels, "cal_labels", binary=True)
    c = as_probabilities(cal_confidence, "cal_confidence", ndim=1)
    same_length(cal_confidence=c, cal_labels=y)
    return fit_calibrator(kind, c, y).predict(confidence)


class RetrievalCM:
    """In-context history without training: the k nearest past examples of the same target.

    Confidence for a query = ``(prior + sum_i w_i y_i) / (1 + sum_i w_i)`` with ``w_i = 1 / (d_i + 0.05)``,
    ``d_i = 1 - cos`` (Chroma's cosine distance) and ``prior`` the target's base rate in its history, so an
    isolated query falls back towards the base rate.

    :meth:`examples` returns the retrieved examples for an LLM prompt (:func:`prompts.history_prompt`).

    # Deviation: Chroma embeds the whole retrieval document; we embed question and response separately
    # (the vectors FeatureCM already computed) and use their normalised sum as the document vector.
    """

    def __init__(self, embedder: Embedder, k: int = 16) -> None:
        self.embedder = embedder
        self.k = positive_int(k, "k", maximum=10**4)

    def _docs(self, questions: Sequence[str], responses: Sequence[str]) -> np.ndarray:
        v = self.embedder.embed(questions) + self.embedder.embed(responses)
        return v / np.maximum(1e-12, np.linalg.norm(v, axis=1, keepdims=True))

    def fit(self, questions: Sequence[str], responses: Sequence[str], targets: Sequence[str],
            labels: object) -> RetrievalCM:
        y = as_labels(labels, "labels", binary=True)
        same_length(questions=questions, responses=responses, targets=targets, labels=y)
        self.store_: dict[str, tuple[np.ndarray, np.ndarray, list[str], list[str]]] = {}
        t_arr = np.asarray(targets)
        emb = self._docs(questions, responses)
        for t in sorted(set(targets)):
            m = np.flatnonzero(t_arr == t)
            self.store_[t] = (emb[m], y[m], [questions[i] for i in m], [responses[i] for i in m])
        return self

    def _neighbours(self, q: str, r: str, target: str) -> tuple[np.ndarray, np.ndarray]:
        if target not in self.store_:
            raise ValueError(f"targets: no history for target {target!r}")
        emb, _, _, _ = self.store_[target]
        d = 1.0 - emb @ self._docs([q], [r])[0]
        k = min(self.k, d.size)
        idx = np.argsort(d, kind="stable")[:k]
        return idx, d[idx]

    def predict(self, questions: Sequence[str], responses: Sequence[str], targets: Sequence[str]) -> np.ndarray:
        same_length(questions=questions, responses=responses, targets=targets)
        out = np.zeros(len(questions))
        for i, (q, r, t) in enumerate(zip(questions, responses, targets, strict=True)):
            idx, d = self._neighbours(q, r, t)
            ys = self.store_[t][1]
            w = 1.0 / (np.maximum(d, 0.0) + 0.05)
            out[i] = (ys.mean() + float(np.sum(w * ys[idx]))) / (1.0 + float(np.sum(w)))
        return out

    def examples(self, question: str, response: str, target: str) -> list[HistoryExample]:
        idx, d = self._neighbours(question, response, target)
        _, ys, qs, rs = self.store_[target]
        return [HistoryExample(qs[i], rs[i], bool(ys[i]), float(di)) for i, di in zip(idx, d, strict=True)]
