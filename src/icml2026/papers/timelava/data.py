"""Series for TimeLAVA: synthetic generators and loaders of series shipped inside PyPI packages.

Shipped files are read from the installed ``aeon`` and ``sktime`` packages by path (the packages are located
with ``importlib.util.find_spec``, which does not import them); nothing is downloaded.

* aeon 1.6: ``datasets/data/KDD-TSAD_135/135_UCR_Anomaly_InternalBleeding16_{TRAIN,TEST}.csv`` (UCR anomaly
  archive), ``datasets/data/UnitTest/ecg-diff-count-3_{TRAIN_NA,TRAIN_A,TEST}.csv``, UCR classification sets
  ``datasets/data/<Name>/<Name>_{TRAIN,TEST}.ts``.
* sktime 1.2: ``datasets/data/mitdb/mitdb.csv`` and ``datasets/data/yahoo/yahoo.csv``.
"""

from __future__ import annotations

import csv
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml2026.core.validate import finite_number, positive_int

__all__ = [
    "AnomalySeries",
    "ClassificationSet",
    "package_data_path",
    "load_internal_bleeding16",
    "load_ecg_diff_count3",
    "load_mitdb",
    "load_yahoo",
    "load_anomaly_series",
    "load_ucr_classification",
    "ANOMALY_SERIES",
    "synthetic_base",
    "make_spike_series",
    "make_regime_shift_series",
]


@dataclass
class AnomalySeries:
    """An evaluated series with per-step anomaly labels and a clean reference series.

    Attributes
    ----------
    name : data set name.
    series : (T,) evaluated series.
    labels : (T,) 0/1 anomaly labels.
    reference : (T',) clean reference series (no labelled anomaly).
    source : where the data came from (package and file).
    """

    name: str
    series: np.ndarray
    labels: np.ndarray
    reference: np.ndarray
    source: str


@dataclass
class ClassificationSet:
    """A UCR classification problem: ``x_train`` (n, L), ``y_train`` (n,), ``x_test`` (m, L), ``y_test``."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def package_data_path(package: str, relative: str) -> Path:
    """Path of a data file shipped inside an installed package (the package is not imported).

    Raises
    ------
    FileNotFoundError
        If the package is not installed or the file is not shipped in it.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"package {package!r} is not installed; install the extra: pip install 'icml2026[timelava]'"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise FileNotFoundError(f"{relative!r} is not shipped in the installed {package!r}")
    return path


def _read_csv_columns(path: Path, value_cols: list[str], label_col: str) -> tuple[np.ndarray, np.ndarray]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise ValueError(f"{path.name} is empty")
    values = np.array([[float(r[c]) for c in value_cols] for r in rows])
    labels = np.array([int(float(r[label_col])) for r in rows], dtype=np.int64)
    return values.squeeze(axis=1) if values.shape[1] == 1 else values, labels


def load_internal_bleeding16() -> AnomalySeries:
    """UCR anomaly archive series 135 (InternalBleeding16) shipped in aeon: TEST 7,501 points, TRAIN 1,200.

    The UCR convention: TRAIN (the first 1,200 points, anomaly-free) is the reference; TEST is the whole
    series, with 12 labelled anomalous points.
    """
    base = "datasets/data/KDD-TSAD_135/135_UCR_Anomaly_InternalBleeding16_"
    x, y = _read_csv_columns(package_data_path("aeon", base + "TEST.csv"), ["value"], "is_anomaly")
    r, ry = _read_csv_columns(package_data_path("aeon", base + "TRAIN.csv"), ["value"], "is_anomaly")
    if ry.any():
        raise ValueError("InternalBleeding16 TRAIN holds labelled anomalies; it cannot be the reference")
    return AnomalySeries("InternalBleeding16", x, y, r, "aeon " + base + "{TEST,TRAIN}.csv")


def load_ecg_diff_count3() -> AnomalySeries:
    """ecg-diff-count-3 shipped in aeon: TEST 10,000 points (300 anomalous), TRAIN_NA (clean) as reference."""
    base = "datasets/data/UnitTest/ecg-diff-count-3_"
    x, y = _read_csv_columns(package_data_path("aeon", base + "TEST.csv"), ["value-0"], "is_anomaly")
    r, ry = _read_csv_columns(package_data_path("aeon", base + "TRAIN_NA.csv"), ["value-0"], "is_anomaly")
    if ry.any():
        raise ValueError("ecg-diff-count-3 TRAIN_NA holds labelled anomalies")
    return AnomalySeries("ecg-diff-count-3", x, y, r, "aeon " + base + "{TEST,TRAIN_NA}.csv")


def _prefix_reference(name: str, x: np.ndarray, y: np.ndarray, n_ref: int, source: str) -> AnomalySeries:
    # These sets ship no clean split; the anomaly-free prefix plays the UCR TRAIN role (the evaluated series
    # is the whole series, as in the UCR convention). Never the series itself: values would collapse.
    if y[:n_ref].any():
        raise ValueError(f"{name}: the first {n_ref} points hold labelled anomalies; pick a shorter prefix")
    return AnomalySeries(name, x, y, x[:n_ref].copy(), source)


def load_mitdb(n_reference: int = 2000) -> AnomalySeries:
    """MIT-BIH ECG excerpt shipped in sktime (7,500 points, 352 anomalous at 6936-7287).

    The reference is the anomaly-free prefix of ``n_reference`` points (sktime ships no clean split).
    """
    x, y = _read_csv_columns(package_data_path("sktime", "datasets/data/mitdb/mitdb.csv"), ["data"], "label")
    return _prefix_reference("mitdb", x, y, n_reference, "sktime datasets/data/mitdb/mitdb.csv")


def load_yahoo(n_reference: int = 400) -> AnomalySeries:
    """Yahoo Webscope series shipped in sktime (1,000 points, 7 anomalies, the first at 431).

    The reference is the anomaly-free prefix of ``n_reference`` points.
    """
    x, y = _read_csv_columns(package_data_path("sktime", "datasets/data/yahoo/yahoo.csv"), ["data"], "label")
    return _prefix_reference("yahoo", x, y, n_reference, "sktime datasets/data/yahoo/yahoo.csv")


ANOMALY_SERIES = {
    "InternalBleeding16": load_internal_bleeding16,
    "ecg-diff-count-3": load_ecg_diff_count3,
    "mitdb": load_mitdb,
    "yahoo": load_yahoo,
}


def load_anomaly_series(name: str) -> AnomalySeries:
    """One of :data:`ANOMALY_SERIES` by name."""
    if name not in ANOMALY_SERIES:
        raise ValueError(f"unknown anomaly series {name!r}; choose from {sorted(ANOMALY_SERIES)}")
    return ANOMALY_SERIES[name]()


def _read_ts(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Equal-length ``.ts`` file (rows ``dim1:dim2:...:label``); returns (n, L) or (n, L, d), and (n,)."""
    xs: list[list[list[float]]] = []
    ys: list[str] = []
    in_data = False
    with path.open() as fh:
        for line in fh:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if not in_data:
                in_data = line.lower().startswith("@data")
                continue
            parts = line.split(":")
            dims = [[float(v) for v in p.split(",")] for p in parts[:-1]]
            xs.append(dims)
            ys.append(parts[-1].strip())
    lengths = {len(d) for dims in xs for d in dims}
    if len(lengths) != 1:
        raise ValueError(f"{path.name}: series of unequal length are not supported")
    arr = np.array(xs)  # (n, d, L)
    arr = arr[:, 0, :] if arr.shape[1] == 1 else arr.transpose(0, 2, 1)
    return arr, np.array(ys)


def load_ucr_classification(name: str) -> ClassificationSet:
    """UCR classification set shipped in aeon (``datasets/data/<name>/<name>_{TRAIN,TEST}.ts``).

    Labels are mapped to integers 0..k-1 (sorted by their text).
    """
    tr = package_data_path("aeon", f"datasets/data/{name}/{name}_TRAIN.ts")
    te = package_data_path("aeon", f"datasets/data/{name}/{name}_TEST.ts")
    x_tr, y_tr = _read_ts(tr)
    x_te, y_te = _read_ts(te)
    classes = np.unique(np.concatenate([y_tr, y_te]))
    return ClassificationSet(name, x_tr, np.searchsorted(classes, y_tr), x_te, np.searchsorted(classes, y_te))


# ------------------------------------------------------------------------------------------------------------
# Synthetic suite (brief: controlled ground truth)
# ------------------------------------------------------------------------------------------------------------


def synthetic_base(length: int, rng: np.random.Generator, noise: float = 0.05) -> np.ndarray:
    """``x(t) = sin(2 pi t/100) + 0.5 sin(2 pi t/25) + N(0, noise^2)``, shape (length,)."""
    length = positive_int(length, "length")
    noise = finite_number(noise, "noise", lo=0.0)
    t = np.arange(length)
    return np.sin(2 * np.pi * t / 100) + 0.5 * np.sin(2 * np.pi * t / 25) + rng.normal(0.0, noise, length)


def make_spike_series(
    length: int, frac: float, magnitude: tuple[float, float], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Base signal with isolated spikes at ``round(frac * length)`` random points.

    Spike sizes are uniform in ``magnitude`` with a random sign. Returns ``(series, labels)``, both (length,).
    """
    length = positive_int(length, "length")
    finite_number(frac, "frac")
    if not 0 < frac < 1:
        raise ValueError(f"frac must be in (0, 1), got {frac}")
    if len(magnitude) != 2:
        raise ValueError(f"magnitude must be (lo, hi), got {magnitude}")
    lo, hi = (finite_number(v, "magnitude") for v in magnitude)
    if not 0 <= lo <= hi:
        raise ValueError(f"magnitude must be (lo, hi) with 0 <= lo <= hi, got {magnitude}")
    x = synthetic_base(length, rng)
    k = max(1, int(round(frac * length)))
    idx = rng.choice(length, size=k, replace=False)
    x[idx] += rng.choice([-1.0, 1.0], size=k) * rng.uniform(lo, hi, size=k)
    labels = np.zeros(length, dtype=np.int64)
    labels[idx] = 1
    return x, labels


def make_regime_shift_series(length: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Base signal whose second half is ``1.8 sin(2 pi t/40) + 0.5 sin(2 pi t/15)`` (plus noise).

    Returns ``(series, labels)`` with labels 1 on the shifted half.
    """
    length = positive_int(length, "length", minimum=2)
    x = synthetic_base(length, rng)
    half = length // 2
    t = np.arange(half, length)
    x[half:] = (
        1.8 * np.sin(2 * np.pi * t / 40) + 0.5 * np.sin(2 * np.pi * t / 15) + rng.normal(0, 0.05, t.size)
    )
    labels = np.zeros(length, dtype=np.int64)
    labels[half:] = 1
    return x, labels
