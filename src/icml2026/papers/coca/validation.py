"""Input checks shared by the erasers and probes: clear errors for malformed activations and labels."""

from __future__ import annotations

import numpy as np

__all__ = ["check_features_labels"]


def check_features_labels(
    X: object, y: object | None, *, name: str = "X", min_classes: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Validate activations ``X`` (n, d), finite, and integer labels ``y`` (n,) with >= ``min_classes``.

    Returns float64 ``X`` and int64 ``y`` (an empty array when ``y`` is None).

    Raises
    ------
    ValueError
        On a wrong shape, NaN/inf activations, labels of the wrong length, non-integer labels, or fewer
        than ``min_classes`` distinct labels (e.g. a single-class concept, which cannot be erased).
    """
    arr = np.asarray(X)
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n_samples >= 2, n_features >= 1), got {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or infinite values")
    if y is None:
        return arr, np.zeros(0, dtype=np.int64)
    lab = np.asarray(y)
    if lab.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {lab.shape}")
    if len(lab) != arr.shape[0]:
        raise ValueError(f"labels have length {len(lab)} but {name} has {arr.shape[0]} rows")
    if lab.dtype == bool:
        lab = lab.astype(np.int64)
    if not np.issubdtype(lab.dtype, np.integer):
        if (
            np.issubdtype(lab.dtype, np.floating)
            and np.all(np.isfinite(lab))
            and np.all(lab == np.round(lab))
        ):
            lab = lab.astype(np.int64)
        else:
            raise ValueError(f"labels must be integer class ids, got dtype {lab.dtype}")
    lab = lab.astype(np.int64)
    n_classes = len(np.unique(lab))
    if n_classes < min_classes:
        raise ValueError(
            f"labels have {n_classes} distinct value(s); at least {min_classes} are needed "
            "(a single-class concept carries no information to erase or probe)"
        )
    return arr, lab
