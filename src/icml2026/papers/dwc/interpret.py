"""Interpretability report: which observation dimensions and thermometer thresholds the first layer reads."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .policy import DWCPolicy

__all__ = ["FirstLayerReport", "first_layer_report"]


@dataclass(frozen=True)
class FirstLayerReport:
    """Reads of the first LUT layer.

    reads_per_dim : (obs_dim,) int, LUT inputs (of N*n) that read a bit of each observation dimension.
    bits_used : (obs_dim, B) bool, which (dimension, threshold) bits are read at all.
    thresholds : (B,) thresholds; ``thresholds[m]`` is the cut of bit m.
    """

    reads_per_dim: np.ndarray
    bits_used: np.ndarray
    thresholds: np.ndarray

    @property
    def n_distinct_bits(self) -> int:
        return int(self.bits_used.sum())

    @property
    def n_input_bits(self) -> int:
        return int(self.bits_used.size)

    def rows(self) -> list[dict[str, float]]:
        """One table row per observation dimension."""
        out = []
        for j in range(self.bits_used.shape[0]):
            used = np.flatnonzero(self.bits_used[j])
            out.append({"obs_dim": j, "lut_inputs_reading": int(self.reads_per_dim[j]),
                        "distinct_thresholds": int(used.size),
                        "min_threshold": float(self.thresholds[used].min()) if used.size else float("nan"),
                        "max_threshold": float(self.thresholds[used].max()) if used.size else float("nan")})
        return out


def first_layer_report(policy: DWCPolicy) -> FirstLayerReport:
    """Count, per observation dimension, the first-layer LUT inputs reading it (bit ``j*B + m`` -> dim j)."""
    idx = policy.lut_layers[0].indices().reshape(-1).numpy()
    b = policy.bits
    dims = idx // b
    used = np.zeros((policy.obs_dim, b), dtype=bool)
    used[dims, idx % b] = True
    return FirstLayerReport(np.bincount(dims, minlength=policy.obs_dim), used, policy.thresholds.numpy().copy())
