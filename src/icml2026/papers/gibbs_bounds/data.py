"""Data: a procedural MNIST-1D-style generator, scikit-learn's digits, binary tasks and random labels.

Nothing is downloaded. The MNIST-1D generator follows the recipe of Greydanus (2020) — ten short 1-D
"digit" templates, zero padding, random translation, amplitude scaling, shear, correlated and i.i.d.
noise, and linear interpolation to 40 points — written here from that description and driven by a
``numpy.random.Generator``.

# Deviation: the ``mnist1d`` package's own templates and global-seeded generator are not used (its
# ``get_dataset`` downloads a pickle and its ``make_dataset`` seeds numpy's global state); our templates
# are our own hand-designed shapes, so the data are MNIST-1D-*style*, not bit-identical to the package.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml2026.core.validate import positive_int

__all__ = [
    "BinaryTask",
    "MNIST1D_TEMPLATES",
    "make_mnist1d",
    "mnist1d_binary_task",
    "digits_binary_task",
    "randomize_labels",
]

_T = np.linspace(0.0, 1.0, 12)

# Ten 12-point templates (our own designs, one per class), amplitudes of order 1.
MNIST1D_TEMPLATES: np.ndarray = np.stack(
    [
        np.array([0, 1, 2, 2.8, 3.2, 3.3, 3.3, 3.2, 2.8, 2, 1, 0], dtype=float) / 3.3,  # 0: wide hump
        np.array([0, 0, 0.3, 3, 3, 0.3, 0, 0, 0, 0, 0, 0], dtype=float) / 3.0,  # 1: early spike
        1.0 - _T,  # 2: falling ramp
        np.array([0, 1.5, 2.5, 1.5, 0, 0, 0, 1.5, 2.5, 1.5, 0, 0], dtype=float) / 2.5,  # 3: two humps
        np.concatenate([np.linspace(0, 1, 9), [0.5, 0.0, 0.0]]),  # 4: rising ramp, then drop
        -np.array([0, 1, 2, 2.8, 3.2, 3.3, 3.3, 3.2, 2.8, 2, 1, 0], dtype=float) / 3.3,  # 5: wide valley
        np.sin(2 * np.pi * 1.5 * _T),  # 6: oscillation
        np.concatenate([np.zeros(6), np.ones(6)]),  # 7: step up
        np.concatenate([np.ones(6), -0.5 * np.ones(6)]),  # 8: step down below zero
        np.array([0, 0, 0, 0, -1, -1, 0, 0, 0, 2, 2, 0], dtype=float) / 2.0,  # 9: dip, then late spike
    ]
)


@dataclass(frozen=True)
class BinaryTask:
    """A binary classification sample split into train and test.

    Attributes
    ----------
    x_train : (n_train, d) float32 features.
    y_train : (n_train,) labels in {0, 1}.
    x_test : (n_test, d) float32 features.
    y_test : (n_test,) labels in {0, 1}.
    name : short description.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    name: str

    @property
    def n_train(self) -> int:
        return int(self.x_train.shape[0])


def make_mnist1d(
    n_samples: int,
    rng: np.random.Generator,
    *,
    final_length: int = 40,
    padding: tuple[int, int] = (36, 60),
    max_translation: int = 48,
    scale_coeff: float = 0.4,
    shear_scale: float = 0.75,
    corr_noise_scale: float = 0.25,
    iid_noise_scale: float = 2e-2,
) -> tuple[np.ndarray, np.ndarray]:
    """Generate MNIST-1D-style sequences (Greydanus 2020 recipe, our templates).

    Each example: pick a class c uniformly; pad template c with a random number of zeros (split randomly
    left/right); roll it by a random translation; scale its amplitude by ``1 + scale_coeff * u``; add a
    shear ``shear_scale * v * (t - 1/2)``; add Gaussian-smoothed noise and i.i.d. noise; interpolate
    linearly to ``final_length`` points. Defaults are the MNIST-1D defaults.

    Returns
    -------
    x : (n_samples, final_length) float32, standardised to zero mean and unit variance overall.
    y : (n_samples,) int64 class labels in 0..9.
    """
    n_samples = positive_int(n_samples, "n_samples")
    lo, hi = padding
    if not 0 <= lo <= hi:
        raise ValueError(f"padding must be (lo, hi) with 0 <= lo <= hi, got {padding}")
    y = rng.integers(0, 10, size=n_samples)
    x = np.empty((n_samples, final_length))
    kernel = np.exp(-0.5 * (np.arange(-6, 7) / 2.0) ** 2)
    kernel /= kernel.sum()
    for i in range(n_samples):
        template = MNIST1D_TEMPLATES[y[i]]
        pad = int(rng.integers(lo, hi + 1))
        left = int(rng.integers(0, pad + 1))
        seq = np.concatenate([np.zeros(left), template, np.zeros(pad - left)])
        seq = np.roll(seq, int(rng.integers(-max_translation, max_translation + 1)) % seq.size)
        seq = seq * (1.0 + scale_coeff * rng.uniform(-1.0, 1.0))
        t = np.linspace(0.0, 1.0, seq.size)
        seq = seq + shear_scale * rng.uniform(-1.0, 1.0) * (t - 0.5)
        seq = seq + corr_noise_scale * np.convolve(rng.standard_normal(seq.size), kernel, mode="same") * 3.0
        seq = seq + iid_noise_scale * rng.standard_normal(seq.size)
        x[i] = np.interp(np.linspace(0.0, 1.0, final_length), t, seq)
    x = (x - x.mean()) / x.std()
    return x.astype(np.float32), y.astype(np.int64)


def _to_binary(y: np.ndarray) -> np.ndarray:
    """Classes {0..4} -> 0 and {5..9} -> 1 (the paper's MNIST split)."""
    return (y >= 5).astype(np.int64)


def _balanced_indices(y: np.ndarray, per_group: int, rng: np.random.Generator) -> np.ndarray:
    idx = []
    for g in (0, 1):
        pool = np.flatnonzero(y == g)
        if pool.size < per_group:
            raise ValueError(f"only {pool.size} examples in group {g}, need {per_group}")
        idx.append(rng.choice(pool, size=per_group, replace=False))
    out = np.concatenate(idx)
    return out[rng.permutation(out.size)]


def mnist1d_binary_task(n_train: int, n_test: int, rng: np.random.Generator) -> BinaryTask:
    """MNIST-1D-style binary task {0-4} vs {5-9}, balanced train and test (brief: 4000 / 4000).

    Parameters
    ----------
    n_train, n_test : even sizes; each half comes from one group.
    """
    for name, v in (("n_train", n_train), ("n_test", n_test)):
        if v < 2 or v % 2:
            raise ValueError(f"{name} must be an even integer >= 2, got {v}")
    total = int(1.3 * (n_train + n_test)) + 100  # margin so both groups have enough examples
    x, y10 = make_mnist1d(total, rng)
    y = _to_binary(y10)
    tr = _balanced_indices(y, n_train // 2, rng)
    rest = np.setdiff1d(np.arange(y.size), tr)
    te = rest[_balanced_indices(y[rest], n_test // 2, rng)]
    return BinaryTask(x[tr], y[tr], x[te], y[te], name=f"mnist1d-style {{0-4}} vs {{5-9}}, n={n_train}")


def digits_binary_task(n_train: int, rng: np.random.Generator) -> BinaryTask:
    """scikit-learn's bundled 8x8 digits, {0-4} vs {5-9}; the remaining images form the test set.

    Features are pixels standardised with the training set's per-pixel mean and standard deviation
    (constant pixels are left at 0), 64-dimensional. 1797 images in all.
    """
    from sklearn.datasets import load_digits

    data = load_digits()
    x = np.asarray(data.data, dtype=np.float64)
    y = _to_binary(np.asarray(data.target))
    if not 2 <= n_train <= x.shape[0] - 2:
        raise ValueError(f"n_train must be in [2, {x.shape[0] - 2}], got {n_train}")
    perm = rng.permutation(x.shape[0])
    tr, te = perm[:n_train], perm[n_train:]
    # Deviation: standardised features (the brief does not say); raw pixels/16 did not let SGLD
    # interpolate random labels within the quick budget (measured train error 0.26-0.36 after 1000 steps).
    mean, std = x[tr].mean(axis=0), x[tr].std(axis=0)
    std[std == 0] = 1.0
    x = ((x - mean) / std).astype(np.float32)
    return BinaryTask(x[tr], y[tr], x[te], y[te], name=f"digits {{0-4}} vs {{5-9}}, n={n_train}")


def randomize_labels(task: BinaryTask, rng: np.random.Generator) -> BinaryTask:
    """Replace train *and* test labels by i.i.d. fair coin flips, so the true test error of any
    classifier independent of the test labels is exactly 1/2 (brief pitfall: test labels too)."""
    return BinaryTask(
        task.x_train,
        np.asarray(rng.integers(0, 2, size=task.y_train.shape[0]), dtype=np.int64),
        task.x_test,
        np.asarray(rng.integers(0, 2, size=task.y_test.shape[0]), dtype=np.int64),
        name=task.name + ", random labels",
    )


def real_mnist1d_binary_task(n_train: int, n_test: int, rng: np.random.Generator) -> BinaryTask:
    """The real MNIST-1D generator (``mnist1d`` package, ``make_dataset``: built offline, no download),
    {0-4} vs {5-9}, balanced train and test.

    ``make_dataset`` seeds Python's and numpy's *global* generators (``set_seed``) and draws from them; the
    seed is taken from ``rng`` and both global states are saved before and restored after the call, so the
    caller's global random state is untouched and the data depend only on ``rng``.
    """
    import random as _random

    from icml2026.core.errors import require_module

    require_module("mnist1d", "gibbs_bounds")
    from mnist1d.data import get_dataset_args, make_dataset

    for name, v in (("n_train", n_train), ("n_test", n_test)):
        if v < 2 or v % 2:
            raise ValueError(f"{name} must be an even integer >= 2, got {v}")
    args = get_dataset_args()
    args.num_samples = 10 * ((int(1.3 * (n_train + n_test)) + 100) // 10 + 1)
    args.seed = int(rng.integers(0, 2**31 - 1))
    np_state, py_state = np.random.get_state(), _random.getstate()
    try:
        ds = make_dataset(args)
    finally:
        np.random.set_state(np_state)
        _random.setstate(py_state)
    x = np.concatenate([ds["x"], ds["x_test"]]).astype(np.float32)
    y = _to_binary(np.concatenate([ds["y"], ds["y_test"]]))
    tr = _balanced_indices(y, n_train // 2, rng)
    rest = np.setdiff1d(np.arange(y.size), tr)
    te = rest[_balanced_indices(y[rest], n_test // 2, rng)]
    return BinaryTask(x[tr], y[tr], x[te], y[te], name=f"mnist1d (package) {{0-4}} vs {{5-9}}, n={n_train}")
