"""Real recordings from a local folder: Sleep-EDF (EDF + hypnogram) and PhysioNet/CinC 2017 (WFDB), subject-wise folds.

* :func:`load_sleep_edf` -- every ``*-PSG.edf`` of a folder with its ``*-Hypnogram.edf`` (Sleep-EDF naming: the two
  share their first 7 characters, e.g. ``SC4001E0-PSG.edf`` / ``SC4001EC-Hypnogram.edf``); one EEG channel
  (default ``EEG Fpz-Cz``), low-passed at 35 Hz (4th-order Butterworth, zero phase), brought to the training rate
  (``scipy.signal.resample_poly``), cut into 30 s epochs aligned to the hypnogram's stage annotations and labelled
  with 5 classes: W, N1, N2, N3 (= S3 + S4), REM; ``?`` and movement epochs are dropped (the paper's protocol).
  The subject is the Sleep-EDF subject code (``SC4ss``: both nights of a subject share it).
* :func:`load_cinc2017` -- the PhysioNet/CinC 2017 layout: ``REFERENCE.csv`` (``record,label`` with labels N, A, O,
  ``~``) and one WFDB record per line (``A00001.hea`` + ``.mat``, read with ``wfdb.rdrecord``); low-passed,
  brought to the training rate and cut into non-overlapping 8 s frames (the paper's ECG frames). CinC 2017 gives
  one recording per patient and no patient ids, so the group of a frame is its record.
* :func:`subject_folds` -- k-fold cross-validation by subject (``sklearn.model_selection.StratifiedGroupKFold``,
  as the released code): fold k is the test set, the next fold the validation set, the rest training.

Both loaders return a :class:`RecordingBank`, which offers the interface of :class:`.data.SignalBank` that the
zero-shot protocol uses: ``sample(fs)`` at the stored (training) rate returns the stored windows; at any other rate
it returns their linear interpolation (``align_corners=False``), which is how the paper makes its test signals at
new rates from the stored ones.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy.signal import butter, resample_poly, sosfiltfilt

from icml2026.core.errors import BadInput

from .data import ECG_CLASSES, SLEEP_CLASSES, linear_resample

__all__ = ["RecordingBank", "SLEEP_EDF_STAGES", "EEG_CHANNELS", "CINC2017_LABELS", "check_data_config",
           "check_data_folder", "load_sleep_edf", "load_cinc2017", "subject_folds", "find_sleep_edf_pairs"]

#: Sleep-EDF hypnogram annotation -> class index in SLEEP_CLASSES (N3 = stages 3 and 4, R&K -> AASM)
SLEEP_EDF_STAGES = {"Sleep stage W": 0, "Sleep stage 1": 1, "Sleep stage 2": 2, "Sleep stage 3": 3,
                    "Sleep stage 4": 3, "Sleep stage R": 4}
#: CinC 2017 REFERENCE.csv label -> class index in ECG_CLASSES (Normal, AF, Other, Noisy)
CINC2017_LABELS = {"N": 0, "A": 1, "O": 2, "~": 3}
#: EEG channel labels of the paper's sleep datasets: Sleep-EDF, HMC (C4-M1 / C3-M2 in the paper) and ISRUC
EEG_CHANNELS = ("EEG Fpz-Cz", "EEG Pz-Oz", "EEG C4-M1", "EEG C3-M2", "EEG F4-M1", "EEG O2-M1", "C3-A2", "C4-A1",
                "F3-A2", "F4-A1", "O1-A2", "O2-A1")
_SLEEP_EDF_SUBJECT = re.compile(r"^(S[CT]\d{3})\d", re.IGNORECASE)


@dataclass
class RecordingBank:
    """Labelled windows of real recordings, stored at ``stored_fs`` (the training rate).

    Attributes
    ----------
    signals : (n, C, round(window_s * stored_fs)) float32 windows.
    labels : (n,) class indices; groups : (n,) subject indices (into ``subjects``).
    """

    signals: np.ndarray
    labels: np.ndarray
    groups: np.ndarray
    stored_fs: float
    window_s: float
    class_names: tuple[str, ...]
    subjects: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.labels.size)

    def n_samples(self, fs: float) -> int:
        """Window length in samples at ``fs``: ``round(T * fs)``."""
        return int(round(self.window_s * fs))

    def subset(self, index: np.ndarray) -> RecordingBank:
        idx = np.asarray(index)
        return RecordingBank(self.signals[idx], self.labels[idx], self.groups[idx], self.stored_fs, self.window_s,
                             self.class_names, self.subjects)

    def sample(self, fs: float) -> np.ndarray:
        """The windows at ``fs``: the stored ones at the stored rate, else their linear interpolation."""
        if isinstance(fs, bool) or not isinstance(fs, (int, float, np.integer, np.floating)) or not (
            np.isfinite(fs) and fs > 0
        ):
            raise ValueError(f"the sampling rate must be positive, got {fs!r}")
        if float(fs) == self.stored_fs:
            return self.signals
        return linear_resample(self.signals, self.n_samples(fs)).astype(np.float32)

    def sample_linear(self, fs: float, base_fs: float) -> np.ndarray:
        """Paper-style new-rate signal: the signal at ``base_fs`` linearly interpolated to ``fs``."""
        return linear_resample(self.sample(base_fs), self.n_samples(fs)).astype(np.float32)


def check_data_folder(path: str, key: str = "data") -> Path:
    """The ``--set data=DIR`` check: an existing folder (BadInput naming ``key`` otherwise)."""
    if not isinstance(path, str) or not path.strip():
        raise BadInput(f"{key}: empty path; expected a folder of recordings")
    p = Path(path).expanduser()
    if not p.is_dir():
        raise BadInput(f"{key} = {path!r}: no such folder")
    return p


def check_data_config(data: str, n_folds: int, max_folds: int) -> None:
    """A config's ``data`` / ``max_folds`` rules (ValueError naming the field): ``data`` is '' or a folder."""
    if data and not Path(data).expanduser().is_dir():
        raise ValueError(f"data = {data!r}: no such folder (a folder of recordings, or '' for the generated data)")
    if max_folds > n_folds:
        raise ValueError(f"max_folds = {max_folds}: more than n_folds ({n_folds})")


def _to_rate(x: np.ndarray, fs_in: float, fs_out: float, lowpass_hz: float) -> np.ndarray:
    """Zero-phase 4th-order Butterworth low-pass at ``lowpass_hz`` (if below Nyquist), then polyphase resampling."""
    if 0 < lowpass_hz < fs_in / 2:
        x = sosfiltfilt(butter(4, lowpass_hz, btype="low", fs=fs_in, output="sos"), x, axis=-1)
    if fs_in == fs_out:
        return x
    ratio = Fraction(fs_out / fs_in).limit_denominator(1000)
    return resample_poly(x, ratio.numerator, ratio.denominator, axis=-1)


def _robust_scale(x: np.ndarray) -> np.ndarray:
    """Per recording: subtract the median, divide by the interquartile range (the paper's HMC scaling)."""
    med = np.median(x, axis=-1, keepdims=True)
    q75, q25 = np.percentile(x, [75, 25], axis=-1, keepdims=True)
    return (x - med) / np.maximum(q75 - q25, 1e-12)


def find_sleep_edf_pairs(folder: Path) -> list[tuple[Path, Path]]:
    """(PSG, hypnogram) pairs of ``folder``: each ``*-PSG.edf`` with the ``*-Hypnogram.edf`` sharing its first 7
    characters (Sleep-EDF naming); BadInput naming ``data`` for a folder without any, or a PSG without its
    hypnogram."""
    psgs = sorted(p for p in folder.iterdir() if p.is_file() and p.name.lower().endswith("-psg.edf"))
    hyps = [p for p in folder.iterdir() if p.is_file() and p.name.lower().endswith("-hypnogram.edf")]
    if not psgs:
        raise BadInput(f"data = {str(folder)!r}: no *-PSG.edf recording (Sleep-EDF layout: <id>-PSG.edf with its "
                       f"<id>-Hypnogram.edf)")
    pairs = []
    for psg in psgs:
        match = [h for h in hyps if h.name[:7].lower() == psg.name[:7].lower()]
        if len(match) != 1:
            raise BadInput(f"data = {str(folder)!r}: {psg.name} has {len(match)} hypnograms sharing its first 7 "
                           f"characters (expected exactly one *-Hypnogram.edf)")
        pairs.append((psg, match[0]))
    return pairs


def _subject_of(name: str) -> str:
    m = _SLEEP_EDF_SUBJECT.match(name)
    return m.group(1).upper() if m else name.split("-")[0]


def load_sleep_edf(folder: str | Path, channel: str = "EEG Fpz-Cz", epoch_s: float = 30.0, fs: float = 100.0,
                   lowpass_hz: float = 35.0, wake_margin_min: float = 30.0, max_epochs_per_recording: int = 0,
                   rng: np.random.Generator | None = None) -> RecordingBank:
    """Sleep-EDF recordings of ``folder`` as 30 s epochs labelled W, N1, N2, N3, REM.

    Parameters
    ----------
    channel : the EEG channel's EDF label (case-insensitive).
    epoch_s : epoch length (paper: 30 s); each stage annotation of duration d gives floor(d / epoch_s) epochs.
    fs : the stored (training) rate; lowpass_hz : the low-pass before resampling (paper: 35 Hz).
    wake_margin_min : keep wake epochs only within this many minutes of the first and last sleep epoch (the usual
        Sleep-EDF cassette practice: the recordings hold many hours of wake); < 0 keeps every epoch.
    max_epochs_per_recording : > 0 keeps that many epochs per recording, drawn with ``rng`` (CPU-scale runs).
    """
    try:
        import pyedflib
    except ImportError as exc:  # pragma: no cover - environment dependent
        raise ImportError("reading EDF recordings needs 'pyedflib' (pip install icml2026[neurocnn])") from exc
    folder = check_data_folder(str(folder))
    windows, labels, groups, subjects = [], [], [], []
    n_win = int(round(epoch_s * fs))
    for psg, hyp in find_sleep_edf_pairs(folder):
        try:
            with pyedflib.EdfReader(str(psg)) as reader:
                names = [s.strip().lower() for s in reader.getSignalLabels()]
                if channel.strip().lower() not in names:
                    raise BadInput(f"channel = {channel!r}: not in {psg.name} (channels: {reader.getSignalLabels()})")
                ch = names.index(channel.strip().lower())
                fs_in = float(reader.getSampleFrequency(ch))
                x = np.asarray(reader.readSignal(ch), dtype=np.float64)
            with pyedflib.EdfReader(str(hyp)) as reader:
                onsets, durations, descriptions = reader.readAnnotations()
        except OSError as exc:
            raise BadInput(f"data = {str(folder)!r}: cannot read {psg.name} / {hyp.name} as EDF ({exc})") from exc
        x = _robust_scale(_to_rate(x, fs_in, fs, lowpass_hz))
        starts, stages = [], []
        for onset, dur, desc in zip(onsets, durations, descriptions, strict=True):
            stage = SLEEP_EDF_STAGES.get(str(desc).strip())
            if stage is None:  # "Sleep stage ?", "Movement time": not scored
                continue
            for k in range(int(float(dur) // epoch_s)):
                start = int(round((float(onset) + k * epoch_s) * fs))
                if start + n_win <= x.size:
                    starts.append(start)
                    stages.append(stage)
        st = np.asarray(stages, dtype=int)
        keep = np.ones(st.size, dtype=bool)
        sleep = np.nonzero(st != 0)[0]
        if wake_margin_min >= 0 and sleep.size:
            margin = int(round(wake_margin_min * 60 / epoch_s))
            pos = np.arange(st.size)
            keep = (pos >= sleep[0] - margin) & (pos <= sleep[-1] + margin)
        idx = np.nonzero(keep)[0]
        if max_epochs_per_recording > 0 and idx.size > max_epochs_per_recording:
            gen = rng if rng is not None else np.random.default_rng(0)
            idx = np.sort(gen.choice(idx, max_epochs_per_recording, replace=False))
        subject = _subject_of(psg.name)
        if subject not in subjects:
            subjects.append(subject)
        for i in idx:
            windows.append(x[starts[i]: starts[i] + n_win])
            labels.append(st[i])
            groups.append(subjects.index(subject))
    if not windows:
        raise BadInput(f"data = {str(folder)!r}: no scored {epoch_s:g} s epoch in its hypnograms")
    return RecordingBank(np.asarray(windows, dtype=np.float32)[:, None, :], np.asarray(labels), np.asarray(groups),
                         float(fs), float(epoch_s), SLEEP_CLASSES, tuple(subjects))


def load_cinc2017(folder: str | Path, window_s: float = 8.0, fs: float = 100.0, lowpass_hz: float = 30.0,
                  max_windows_per_record: int = 0) -> RecordingBank:
    """PhysioNet/CinC 2017 records of ``folder`` (``REFERENCE.csv`` + WFDB records) as non-overlapping frames.

    Records shorter than one frame are skipped; ``max_windows_per_record`` > 0 keeps the first that many frames of
    each record. The group of a frame is its record (CinC 2017: one recording per patient, no patient ids).
    """
    try:
        import wfdb
    except ImportError as exc:  # pragma: no cover - environment dependent
        raise ImportError("reading WFDB records needs 'wfdb' (pip install icml2026[neurocnn])") from exc
    folder = check_data_folder(str(folder))
    refs = [p for p in (folder / "REFERENCE.csv", folder / "REFERENCE-v3.csv") if p.is_file()]
    if not refs:
        raise BadInput(f"data = {str(folder)!r}: no REFERENCE.csv (CinC 2017 layout: lines 'record,label' with "
                       f"labels N, A, O, ~, and a WFDB record <record>.hea per line)")
    windows, labels, groups, records = [], [], [], []
    n_win = int(round(window_s * fs))
    with refs[0].open(newline="") as handle:
        rows = [r for r in csv.reader(handle) if r and r[0].strip()]
    for row in rows:
        if len(row) < 2 or row[1].strip() not in CINC2017_LABELS:
            raise BadInput(f"data = {str(folder)!r}: {refs[0].name} line {row!r}: expected 'record,label' with a "
                           f"label in {sorted(CINC2017_LABELS)}")
        name, label = row[0].strip(), CINC2017_LABELS[row[1].strip()]
        if not (folder / f"{name}.hea").is_file():
            raise BadInput(f"data = {str(folder)!r}: record {name!r} of {refs[0].name} has no {name}.hea")
        try:
            rec = wfdb.rdrecord(str(folder / name))
        except Exception as exc:  # wfdb raises plain Exceptions of several kinds on malformed records
            raise BadInput(f"data = {str(folder)!r}: cannot read WFDB record {name!r} ({exc})") from exc
        x = np.asarray(rec.p_signal, dtype=np.float64)[:, 0]
        x = _robust_scale(_to_rate(np.nan_to_num(x), float(rec.fs), fs, lowpass_hz))
        n_frames = x.size // n_win
        if max_windows_per_record > 0:
            n_frames = min(n_frames, max_windows_per_record)
        if n_frames == 0:
            continue
        records.append(name)
        for k in range(n_frames):
            windows.append(x[k * n_win: (k + 1) * n_win])
            labels.append(label)
            groups.append(len(records) - 1)
    if not windows:
        raise BadInput(f"data = {str(folder)!r}: no record holds a full {window_s:g} s frame")
    return RecordingBank(np.asarray(windows, dtype=np.float32)[:, None, :], np.asarray(labels), np.asarray(groups),
                         float(fs), float(window_s), ECG_CLASSES, tuple(records))


def subject_folds(labels: np.ndarray, groups: np.ndarray, n_folds: int, rng: np.random.Generator
                  ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Subject-wise k-fold splits (train, validation, test) of window indices.

    ``StratifiedGroupKFold(n_folds, shuffle=True)`` (seeded from ``rng``) assigns every subject to one fold; split k
    tests on fold k, validates on fold k + 1 (mod k) and trains on the others, so no subject is in two of the three
    sets. Raises BadInput naming ``n_folds`` when there are fewer subjects than folds.
    """
    from sklearn.model_selection import StratifiedGroupKFold

    n_subjects = len(np.unique(groups))
    if n_folds < 3:
        raise BadInput(f"n_folds = {n_folds}: need >= 3 (a training, a validation and a test fold)")
    if n_subjects < n_folds:
        raise BadInput(f"n_folds = {n_folds}: the data hold only {n_subjects} subjects (recordings); use fewer folds")
    skf = StratifiedGroupKFold(n_splits=n_folds, shuffle=True, random_state=int(rng.integers(2**31 - 1)))
    fold_of = np.empty(labels.size, dtype=int)
    for k, (_, test_idx) in enumerate(skf.split(np.zeros(labels.size), labels, groups)):
        fold_of[test_idx] = k
    out = []
    for k in range(n_folds):
        val_k = (k + 1) % n_folds
        out.append((np.nonzero((fold_of != k) & (fold_of != val_k))[0], np.nonzero(fold_of == val_k)[0],
                    np.nonzero(fold_of == k)[0]))
    return out
