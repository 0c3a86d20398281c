"""Real crops: shapes, range, and the train/test region split (no shared pixels, no shared crop)."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.probe import digit_images, load_reals, real_crops


def test_real_crops_shapes_and_range() -> None:
    tr, te = real_crops(16, "train"), real_crops(16, "test")
    assert tr.dtype == np.float32 and tr.shape[1:] == (3, 16, 16) and te.shape[1:] == (3, 16, 16)
    assert tr.min() >= -1 and tr.max() <= 1 and len(tr) > 4 * len(te) > 0
    # JPEG pixels are integers 0..255: the crops keep that grid (no resampling, brief pitfall 5)
    np.testing.assert_allclose((tr[:50] + 1) * 127.5, np.round((tr[:50] + 1) * 127.5), atol=1e-4)


def test_train_and_test_crops_never_coincide() -> None:
    # exact byte match of any test crop against any train crop would reveal overlapping regions
    tr, te = real_crops(8, "train"), real_crops(8, "test")
    train_keys = {c.tobytes() for c in tr}
    shared = sum(c.tobytes() in train_keys for c in te)
    assert shared <= 2  # flat-colour patches (sky) can coincide by content; regions themselves are disjoint
    from icml2026.papers.probe import data

    w = 640
    assert int(data.TRAIN_FRACTION * w) + data.SPLIT_GAP > int(data.TRAIN_FRACTION * w)


def test_digits_and_bad_arguments() -> None:
    tr, te = load_reals("digits")
    assert tr.shape[1:] == (1, 8, 8) and len(tr) + len(te) == len(digit_images("train")) + len(te)
    with pytest.raises(ValueError, match="size"):
        real_crops(3)
    with pytest.raises(ValueError, match="split"):
        real_crops(8, "val")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dataset"):
        load_reals("cifar")  # type: ignore[arg-type]
