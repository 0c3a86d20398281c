"""Figures for reports: Agg backend, fixed size and dpi, labelled axes."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["new_figure", "save_figure", "range_yerr", "FIGSIZE", "DPI"]

FIGSIZE = (6.0, 4.0)
DPI = 110


def new_figure(
    title: str, xlabel: str, ylabel: str, *, logx: bool = False, logy: bool = False
) -> tuple[Figure, Axes]:
    """One figure with one labelled axes (not registered with pyplot's global state)."""
    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    return fig, ax


def range_yerr(center: object, lo: object, hi: object) -> np.ndarray:
    """``yerr`` (2, n) for bars from ``lo`` to ``hi`` around ``center``; a mean of equal draws can sit an ulp
    outside its min / max, and matplotlib refuses negative half-bars, so those are clipped to 0."""
    c, a, b = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (center, lo, hi))
    return np.maximum(np.stack([c - a, b - c]), 0.0)


def save_figure(fig: Figure, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
