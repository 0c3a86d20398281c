"""Data whose underlying signal is a function of time, so it can be sampled at any rate.

* :func:`make_sleep_bank` -- synthetic sleep-like EEG (5 classes W, N1, N2, N3, REM), defined analytically
  in continuous time: a stationary part (random Fourier coefficients on the 1/T frequency grid, shaped by
  a class spectrum: 1/f background, alpha / theta / delta bands, EMG-like 15-28 Hz) plus localized
  transients (spindles, K-complexes, vertex sharp waves, sawtooth bursts, eye movements). Everything
  lies below 30 Hz, i.e. below 0.4x the lowest test rate (75 Hz), so sampling at 75 Hz does not alias.
  ``bank.sample(fs)`` evaluates the function exactly on ``n / fs``.
* :func:`make_ecg_bank` -- 4 ECG classes mimicking CinC 2017 (Normal, AF-like, Other, Noisy) from
  ``neurokit2.ecg_simulate(method="ecgsyn")``, simulated at 500 Hz in memory, low-passed at 30 Hz
  (zero-phase Butterworth), turned into a function of time by cubic-spline interpolation, plus analytic
  fibrillatory waves / noise / baseline wander.

Both banks also offer ``sample_linear(fs, base_fs)``: the paper's way of making a new-rate test signal,
linear interpolation (``align_corners=False``) of the signal stored at ``base_fs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.signal import butter, sosfiltfilt

__all__ = [
    "SLEEP_CLASSES",
    "ECG_CLASSES",
    "SignalBank",
    "make_sleep_bank",
    "make_ecg_bank",
    "linear_resample",
]

SLEEP_CLASSES = ("W", "N1", "N2", "N3", "REM")
ECG_CLASSES = ("Normal", "AF", "Other", "Noisy")
F_MAX = 30.0  # Hz: every synthetic component stays below this (0.4 x the lowest test rate, 75 Hz)

# Event type codes of the sleep-like generator.
_SPINDLE, _KCOMPLEX, _VERTEX, _SAWTOOTH, _EYE, _MOTION = range(6)


def linear_resample(x: np.ndarray, n_out: int) -> np.ndarray:
    """Linear interpolation along the last axis to ``n_out`` samples, ``align_corners=False`` convention.

    Output sample ``i`` sits at input coordinate ``(i + 0.5) * N / n_out - 0.5`` (clamped), as in
    ``torch.nn.functional.interpolate(mode="linear", align_corners=False)``.
    """
    x = np.asarray(x)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"x must have at least one sample along its last axis, got shape {x.shape}")
    if isinstance(n_out, bool) or not isinstance(n_out, (int, np.integer)) or n_out < 1:
        raise ValueError(f"n_out must be a positive integer, got {n_out!r}")
    n_in = x.shape[-1]
    pos = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0.0, n_in - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = pos - lo
    return x[..., lo] * (1 - frac) + x[..., hi] * frac


@dataclass
class SignalBank:
    """A labelled set of windows, each a function of time on ``[0, window_s)``.

    Attributes
    ----------
    labels : (n,) int class indices.
    groups : (n,) int recording / subject ids (for group-wise splits).
    window_s : window length T in seconds.
    class_names : names of the classes.
    coef : (n, 2F) Fourier coefficients of the stationary part on the grid ``f_k = k / T``
        (cosine then sine), or None.
    events : (n, E, 6) transient parameters (type, centre s, amplitude, width s, frequency Hz, phase),
        type -1 marks padding.
    recordings, offsets : for spline-defined signals (ECG): per-recording CubicSpline and the window start.
    """

    labels: np.ndarray
    groups: np.ndarray
    window_s: float
    class_names: tuple[str, ...]
    coef: np.ndarray | None = None
    events: np.ndarray | None = None
    recordings: list[CubicSpline] = field(default_factory=list)
    rec_index: np.ndarray | None = None
    offsets: np.ndarray | None = None
    scale: float = 1.0

    def __len__(self) -> int:
        return int(self.labels.size)

    def n_samples(self, fs: float) -> int:
        """Window length in samples at ``fs``: ``round(T * fs)``."""
        return int(round(self.window_s * fs))

    def subset(self, index: np.ndarray) -> SignalBank:
        """The windows at ``index`` (a new bank sharing the recordings)."""
        idx = np.asarray(index)
        return SignalBank(
            labels=self.labels[idx],
            groups=self.groups[idx],
            window_s=self.window_s,
            class_names=self.class_names,
            coef=None if self.coef is None else self.coef[idx],
            events=None if self.events is None else self.events[idx],
            recordings=self.recordings,
            rec_index=None if self.rec_index is None else self.rec_index[idx],
            offsets=None if self.offsets is None else self.offsets[idx],
            scale=self.scale,
        )

    def sample(self, fs: float, chunk: int = 256) -> np.ndarray:
        """The windows sampled exactly at ``t_n = n / fs``: (n, 1, round(T fs)) float32."""
        if isinstance(fs, bool) or not isinstance(fs, (int, float, np.integer, np.floating)) or not (
            np.isfinite(fs) and fs > 0
        ):
            raise ValueError(f"the sampling rate must be positive, got {fs!r}")
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
            raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
        n_t = self.n_samples(fs)
        t = np.arange(n_t) / fs
        out = np.zeros((len(self), n_t))
        if self.coef is not None:
            n_f = self.coef.shape[1] // 2
            freqs = np.arange(1, n_f + 1) / self.window_s
            arg = 2 * np.pi * freqs[:, None] * t[None, :]
            basis = np.concatenate([np.cos(arg), np.sin(arg)])  # (2F, N)
            out += (self.coef.astype(np.float32) @ basis.astype(np.float32)).astype(np.float64)
        if self.events is not None:
            for start in range(0, len(self), chunk):
                ev = self.events[start : start + chunk]
                out[start : start + chunk] += _render_events(ev, t)
        if self.recordings:
            assert self.rec_index is not None and self.offsets is not None
            for i in range(len(self)):
                out[i] += self.recordings[self.rec_index[i]](self.offsets[i] + t)
        return (out / self.scale).astype(np.float32)[:, None, :]

    def sample_linear(self, fs: float, base_fs: float) -> np.ndarray:
        """Paper-style new-rate signal: sample at ``base_fs``, then linear interpolation to ``fs``."""
        return linear_resample(self.sample(base_fs), self.n_samples(fs)).astype(np.float32)


def _render_events(ev: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Sum of transients: ev (n, E, 6) -> (n, N); only real events (type >= 0) are evaluated."""
    out = np.zeros((ev.shape[0], t.size))
    rows, cols = np.nonzero(ev[..., 0] >= 0)
    if rows.size == 0:
        return out
    e = ev[rows, cols]
    kind = e[:, 0].astype(int)
    contrib = np.empty((rows.size, t.size))
    for code in np.unique(kind):
        sel = np.nonzero(kind == code)[0]
        tau, amp, width, freq, phase = (e[sel, j][:, None] for j in range(1, 6))
        dt = t[None, :] - tau
        z = dt / np.maximum(width, 1e-6)
        gauss = np.exp(-0.5 * z**2)
        if code == _SPINDLE:  # Gaussian envelope x sinusoid (11-16 Hz)
            wave = gauss * np.sin(2 * np.pi * freq * dt + phase)
        elif code == _KCOMPLEX:  # biphasic: derivative of a Gaussian, peak |value| 1
            wave = z * np.exp(0.5) * gauss
        elif code == _SAWTOOTH:  # band-limited sawtooth (harmonics <= 25 Hz) under a Gaussian envelope
            saw = np.zeros_like(dt)
            for h in range(1, int(25.0 // max(float(freq.min()), 1e-3)) + 1):
                ok = h * freq <= 25.0
                saw += np.where(
                    ok, (-1.0) ** (h + 1) * np.sin(2 * np.pi * h * freq * dt + h * phase) / h, 0.0
                )
            wave = gauss * saw
        else:  # vertex sharp wave, eye movement, motion artefact: Gaussian deflections
            wave = gauss
        contrib[sel] = amp * wave
    for j in np.unique(cols):  # within one event slot the rows are distinct, so += is safe
        sel_j = cols == j
        out[rows[sel_j]] += contrib[sel_j]
    return out


def _band(freqs: np.ndarray, centre: float, width: float) -> np.ndarray:
    return np.exp(-0.5 * ((freqs - centre) / width) ** 2)


def make_sleep_bank(
    n_windows: int, rng: np.random.Generator, window_s: float = 10.0, difficulty: float = 1.0
) -> SignalBank:
    """Synthetic sleep-like EEG windows, balanced over W, N1, N2, N3, REM.

    Parameters
    ----------
    n_windows : number of windows (classes cycle, so the bank is balanced).
    rng : numpy Generator (all randomness).
    window_s : T, window length in seconds.
    difficulty : scales the class-overlap knobs (1.0 is the calibrated task; see the card).

    Returns
    -------
    SignalBank with ``coef`` and ``events`` set, amplitude in units of 50 uV.
    """
    if isinstance(n_windows, bool) or not isinstance(n_windows, (int, np.integer)) or n_windows < 1:
        raise ValueError(f"n_windows must be positive, got {n_windows}")
    if not (isinstance(window_s, (int, float)) and np.isfinite(window_s) and window_s > 0):
        raise ValueError(f"window_s must be positive, got {window_s}")
    # event counts are Poisson(c / difficulty): 0 divides by zero, a tiny value draws millions of events
    if not (isinstance(difficulty, (int, float)) and np.isfinite(difficulty) and 0.01 <= difficulty <= 100):
        raise ValueError(f"difficulty must be a number in [0.01, 100], got {difficulty!r}")
    n_f = int(np.floor(F_MAX * window_s)) - 1  # grid f_k = k / T, k = 1..n_f (< 30 Hz)
    freqs = np.arange(1, n_f + 1) / window_s
    labels = np.arange(n_windows) % 5
    rng.shuffle(labels)
    coef = np.zeros((n_windows, 2 * n_f))
    max_events = 8
    events = np.full((n_windows, max_events, 6), -1.0)
    events[..., 1:] = 0.0
    df = 1.0 / window_s
    for i, y in enumerate(labels):
        # power spectral density (uV^2/Hz); 1/f background shared by all classes (~24 uV rms)
        psd = 100.0 / np.maximum(freqs, 0.5) * rng.uniform(0.6, 1.4)
        # Overlap knobs: every class has some residual rhythm of its neighbours (drowsiness, transitions).
        alpha = rng.uniform(0.0, 0.35 * difficulty)
        theta = rng.uniform(0.0, 0.35 * difficulty)
        delta = rng.uniform(0.0, 0.35 * difficulty)
        emg = rng.uniform(0.0, 0.25 * difficulty)
        evs: list[tuple[float, float, float, float, float, float]] = []

        def place() -> float:
            return float(rng.uniform(0.75, window_s - 0.75))

        if y == 0:  # W: alpha 8-12 Hz + EMG-like broadband
            alpha = rng.uniform(0.25, 1.0)
            emg = rng.uniform(0.2, 1.0)
            for _ in range(rng.poisson(0.8)):
                evs.append(
                    (_EYE, place(), rng.choice([-1, 1]) * rng.uniform(40, 90), rng.uniform(0.1, 0.25), 0, 0)
                )
        elif y == 1:  # N1: theta + vertex sharp waves
            theta = rng.uniform(0.3, 1.0)
            for _ in range(rng.poisson(1.0 / difficulty)):
                evs.append((_VERTEX, place(), -rng.uniform(60, 120), rng.uniform(0.04, 0.07), 0, 0))
        elif y == 2:  # N2: theta + spindles + K-complexes
            theta = rng.uniform(0.2, 0.8)
            for _ in range(rng.poisson(1.3 / difficulty)):
                evs.append(
                    (
                        _SPINDLE,
                        place(),
                        rng.uniform(25, 50),
                        rng.uniform(0.5, 2.0) / 4,
                        rng.uniform(11, 16),
                        rng.uniform(0, 2 * np.pi),
                    )
                )
            for _ in range(rng.poisson(0.6 / difficulty)):
                evs.append((_KCOMPLEX, place(), rng.uniform(80, 160), rng.uniform(0.5, 1.0) / 6, 0, 0))
        elif y == 3:  # N3: high-amplitude delta 0.5-2 Hz
            delta = rng.uniform(0.5, 1.5)
        else:  # REM: sawtooth theta bursts + slow eye movements, low-amplitude mixed frequency
            theta = rng.uniform(0.1, 0.5)
            for _ in range(rng.poisson(0.9 / difficulty)):
                evs.append(
                    (
                        _SAWTOOTH,
                        place(),
                        rng.uniform(25, 50),
                        rng.uniform(0.4, 0.9),
                        rng.uniform(2, 6),
                        rng.uniform(0, 2 * np.pi),
                    )
                )
            for _ in range(rng.poisson(0.9 / difficulty)):
                evs.append(
                    (_EYE, place(), rng.choice([-1, 1]) * rng.uniform(50, 110), rng.uniform(0.2, 0.35), 0, 0)
                )
        # band amplitudes: alpha = 1 gives ~30 uV rms, theta = 1 ~30 uV, delta = 1 ~75 uV, emg = 1 ~10 uV
        psd = psd + 450.0 * alpha**2 * _band(freqs, rng.uniform(8.5, 11.5), 0.8)
        psd = psd + 400.0 * theta**2 * _band(freqs, rng.uniform(4.5, 6.5), 0.9)
        psd = psd + 4500.0 * delta**2 * _band(freqs, rng.uniform(0.8, 1.6), 0.5)
        psd = psd + 8.0 * emg**2 * ((freqs >= 15) & (freqs <= 28))
        std = np.sqrt(psd * df)
        coef[i] = np.concatenate([std, std]) * rng.standard_normal(2 * n_f)
        for j, e in enumerate(evs[:max_events]):
            events[i, j] = e
    return SignalBank(
        labels=labels,
        groups=np.arange(n_windows),
        window_s=window_s,
        class_names=SLEEP_CLASSES,
        coef=coef,
        events=events,
        scale=50.0,
    )


def make_ecg_bank(
    n_recordings_per_class: int,
    windows_per_recording: int,
    rng: np.random.Generator,
    window_s: float = 8.0,
    recording_s: float = 60.0,
    base_fs: float = 500.0,
) -> SignalBank:
    """Synthetic 4-class ECG (Normal / AF-like / Other / Noisy) from neurokit2's ECGSYN simulator.

    Each recording is one ``ecg_simulate`` call (random heart rate and morphology per class) at
    ``base_fs``, low-passed at 30 Hz (8th-order Butterworth, zero phase) and made a function of time by
    cubic-spline interpolation; analytic class components are added on top (AF: fibrillatory 4-9 Hz
    waves; Noisy: strong band-limited noise, baseline wander and motion artefacts). Windows start at
    random offsets inside their recording; ``groups`` holds the recording id (split by it).

    Returns
    -------
    SignalBank with ``recordings`` set (amplitudes in mV).
    """
    try:
        import neurokit2 as nk
    except ImportError as exc:  # pragma: no cover - environment dependent
        raise ImportError("the ECG task needs 'neurokit2' (pip install icml2026[neurocnn])") from exc
    for name, v in (("n_recordings_per_class", n_recordings_per_class), ("windows_per_recording",
                                                                         windows_per_recording)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    for name, f in (("window_s", window_s), ("recording_s", recording_s), ("base_fs", base_fs)):
        if not (isinstance(f, (int, float)) and np.isfinite(f) and f > 0):
            raise ValueError(f"{name} must be a positive finite number, got {f!r}")
    if base_fs <= 2 * F_MAX:
        raise ValueError(f"base_fs must exceed twice the 30 Hz low-pass ({2 * F_MAX:g} Hz), got {base_fs!r}")
    if recording_s < window_s + 1:
        raise ValueError("recording_s must exceed window_s by at least 1 s")
    sos = butter(8, F_MAX, btype="low", fs=base_fs, output="sos")
    splines: list[CubicSpline] = []
    labels, groups, rec_index, offsets = [], [], [], []
    t_rec = np.arange(int(round(recording_s * base_fs))) / base_fs
    rec_id = 0
    for _ in range(n_recordings_per_class):
        for y in range(4):
            hr = float(rng.uniform(55, 100))
            hrstd = float(rng.uniform(1, 4))
            ti = np.array([-70.0, -15, 0, 15, 100])
            ai = np.array([1.2, -5, 30, -7.5, 0.75]) * rng.uniform(0.85, 1.15, 5)
            bi = np.array([0.25, 0.1, 0.1, 0.1, 0.4]) * rng.uniform(0.85, 1.15, 5)
            if y == 1:  # AF-like: irregular RR, no P wave
                hr = float(rng.uniform(75, 120))
                hrstd = float(rng.uniform(12, 25))
                ai[0] = 0.0
            elif y == 2:  # Other: widened QRS and inverted T
                bi[1:4] *= rng.uniform(1.8, 2.6)
                ai[4] = -abs(ai[4]) * rng.uniform(0.8, 1.5)
            sig = nk.ecg_simulate(
                duration=recording_s,
                sampling_rate=int(base_fs),
                noise=0.0,
                heart_rate=hr,
                heart_rate_std=hrstd,
                method="ecgsyn",
                random_state=int(rng.integers(2**31)),
                ti=tuple(ti),
                ai=tuple(ai),
                bi=tuple(bi),
            )
            sig = np.asarray(sig, dtype=np.float64)[: t_rec.size]
            sig = sosfiltfilt(sos, sig)
            sig = sig + _ecg_extras(y, t_rec, rng)
            splines.append(CubicSpline(t_rec, sig))
            for _ in range(windows_per_recording):
                labels.append(y)
                groups.append(rec_id)
                rec_index.append(rec_id)
                offsets.append(rng.uniform(0.0, recording_s - window_s - 1.0 / base_fs))
            rec_id += 1
    return SignalBank(
        labels=np.array(labels),
        groups=np.array(groups),
        window_s=window_s,
        class_names=ECG_CLASSES,
        recordings=splines,
        rec_index=np.array(rec_index),
        offsets=np.array(offsets),
    )


def _ecg_extras(label: int, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Analytic additions (all < 30 Hz): light noise for every class, class-specific components."""

    def tones(lo: float, hi: float, n: int, amp: float) -> np.ndarray:
        f = rng.uniform(lo, hi, n)
        ph = rng.uniform(0, 2 * np.pi, n)
        a = amp * rng.uniform(0.3, 1.0, n) / np.sqrt(n)
        return (a[:, None] * np.sin(2 * np.pi * f[:, None] * t[None, :] + ph[:, None])).sum(0)

    out = tones(0.5, 28.0, 40, 0.02) + tones(0.05, 0.4, 3, 0.05)
    if label == 1:  # fibrillatory waves, 4-9 Hz
        out += tones(4.0, 9.0, 12, rng.uniform(0.08, 0.15))
    elif label == 3:  # noisy: broadband noise, baseline wander, motion artefacts
        out += tones(0.5, 28.0, 120, rng.uniform(0.3, 0.6)) + tones(0.05, 0.6, 4, rng.uniform(0.4, 0.8))
        n_art = rng.poisson(0.2 * t[-1])
        for c in rng.uniform(0, t[-1], n_art):
            out += (
                rng.choice([-1, 1])
                * rng.uniform(0.3, 1.0)
                * np.exp(-0.5 * ((t - c) / rng.uniform(0.05, 0.2)) ** 2)
            )
    return out
