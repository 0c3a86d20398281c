"""Figures for reports: Agg backend, fixed size and dpi, labelled axes, compact PNG files.

Figures are written at screen size (660 x 440 pixels) as 256-colour palette PNGs: plots are drawn in a few flat
colours, so the palette keeps what a reader sees while the files take about 40 % of the RGBA ones (the
committed reports hold about a thousand of them).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["new_figure", "save_figure", "compact_png", "range_yerr", "FIGSIZE", "DPI"]

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


def _write_palette_png(image: object, path: Path) -> None:
    from PIL import Image

    assert isinstance(image, Image.Image)
    rgb = image.convert("RGB")  # report figures are opaque
    pal = rgb.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    pal.save(path, format="PNG", optimize=True)


def save_figure(fig: Figure, path: Path) -> None:
    """Write ``fig`` to ``path`` as a compact PNG (palette of 256 colours) at :data:`DPI`, and close it."""
    import io

    from PIL import Image

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    buf.seek(0)
    with Image.open(buf) as im:
        _write_palette_png(im, Path(path))


def compact_png(src: Path, dest: Path) -> None:
    """Write the PNG ``src`` to ``dest`` as a palette PNG, at most :data:`FIGSIZE` x :data:`DPI` pixels.

    A larger image is scaled down (aspect kept); an image that is already a palette PNG of screen size is
    copied unchanged. Raises ``ValueError`` when ``src`` is not a PNG image.
    """
    import shutil

    from PIL import Image, UnidentifiedImageError

    max_w, max_h = int(FIGSIZE[0] * DPI), int(FIGSIZE[1] * DPI)
    try:
        with Image.open(src) as im:
            if im.format != "PNG":
                raise ValueError(f"{src}: not a PNG image ({im.format})")
            if im.mode == "P" and im.width <= max_w and im.height <= max_h:
                shutil.copyfile(src, dest)
                return
            im.load()
            out: Image.Image = im
            if im.width > max_w or im.height > max_h:
                scale = min(max_w / im.width, max_h / im.height)
                out = im.convert("RGB").resize((max(1, round(im.width * scale)), max(1, round(im.height * scale))),
                                               Image.Resampling.LANCZOS)
            _write_palette_png(out, Path(dest))
    except UnidentifiedImageError:
        raise ValueError(f"{src}: not a PNG image") from None
