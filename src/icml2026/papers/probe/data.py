"""Real images: native-resolution crops of the two photographs shipped with scikit-learn, or 8x8 digits.

Images everywhere in this paper are float32 arrays of shape (n, channels, size, size) in [-1, 1].
"""

from __future__ import annotations

import functools
from typing import Literal

import numpy as np

from icml2026.core.errors import require_module

__all__ = ["real_crops", "digit_images", "load_reals", "SPLIT_GAP"]

#: Pixels left unused between the train region (left) and the test region (right) of each photograph, so
#: that no train crop overlaps a test crop.
SPLIT_GAP = 16
#: Fraction of each photograph's width given to the train region.
TRAIN_FRACTION = 0.75


def _region_crops(img: np.ndarray, size: int, stride: int) -> np.ndarray:
    h, w, _ = img.shape
    out = [
        img[r : r + size, c : c + size] for r in range(0, h - size + 1, stride) for c in range(0, w - size + 1, stride)
    ]
    return np.stack(out) if out else np.zeros((0, size, size, img.shape[2]), img.dtype)


@functools.lru_cache(maxsize=1)
def _photos() -> tuple[np.ndarray, ...]:
    from sklearn.datasets import load_sample_images

    imgs = tuple(np.asarray(i) for i in load_sample_images().images)
    for i in imgs:
        i.setflags(write=False)
    return imgs


def real_crops(size: int = 16, split: Literal["train", "test"] = "train") -> np.ndarray:
    """RGB crops of ``china.jpg`` and ``flower.jpg`` (scikit-learn), no resampling.

    The left 75 % of each photograph's width gives the train crops (stride ``size // 2``), the right part,
    after a gap of :data:`SPLIT_GAP` pixels, the test crops (stride ``size``, no overlap); the two regions
    never share a pixel.

    Returns
    -------
    np.ndarray, float32, shape (n, 3, size, size), values in [-1, 1].
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 4 <= int(size) <= 64:
        raise ValueError(f"size: expected an integer in [4, 64], got {size!r}")
    if split not in ("train", "test"):
        raise ValueError(f"split: must be 'train' or 'test', got {split!r}")
    require_module("sklearn", "probe")
    size = int(size)
    crops = []
    for img in _photos():
        w = img.shape[1]
        cut = int(TRAIN_FRACTION * w)
        if split == "train":
            crops.append(_region_crops(img[:, :cut], size, max(1, size // 2)))
        else:
            crops.append(_region_crops(img[:, cut + SPLIT_GAP :], size, size))
    x = np.concatenate(crops).astype(np.float32)
    return np.ascontiguousarray((x / 127.5 - 1.0).transpose(0, 3, 1, 2))


def digit_images(split: Literal["train", "test"] = "train") -> np.ndarray:
    """The 8x8 grey digits of scikit-learn (the fast CI setting): first 70 % train, the rest test.

    Returns
    -------
    np.ndarray, float32, shape (n, 1, 8, 8), values in [-1, 1].
    """
    if split not in ("train", "test"):
        raise ValueError(f"split: must be 'train' or 'test', got {split!r}")
    require_module("sklearn", "probe")
    from sklearn.datasets import load_digits

    x = load_digits().images.astype(np.float32) / 8.0 - 1.0
    cut = int(0.7 * len(x))
    x = x[:cut] if split == "train" else x[cut:]
    return np.ascontiguousarray(x[:, None])


def load_reals(dataset: Literal["photos", "digits"], size: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) real images of ``dataset`` ("photos": :func:`real_crops`; "digits": 8x8 digits)."""
    if dataset == "photos":
        return real_crops(size, "train"), real_crops(size, "test")
    if dataset == "digits":
        return digit_images("train"), digit_images("test")
    raise ValueError(f"dataset: must be 'photos' or 'digits', got {dataset!r}")
