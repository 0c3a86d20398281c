"""Size limits shared by the experiments' configs (2-core CPU, a few GB of memory)."""

from __future__ import annotations

# Size limits shared by the configs (2-core CPU, a few GB of memory). The head attends over every token, so
# its memory grows with tokens^2 (paper: 6 segments x 50 modes = 300 tokens); the Fourier pooling matrix is
# dense (tokens x samples); signals and activations are held whole.
_MAX_TOKENS = 512
_MAX_POOL_ENTRIES = 50_000_000     # tokens x samples of one window (float32 + float64 copies)
_MAX_SIGNAL_FLOATS = 50_000_000    # windows x samples of one sampled bank
_MAX_ACTIVATIONS = 250_000_000     # windows x samples x widest layer, one untrained forward pass


def _n_tokens(window_s: float, segment_s: float, n_modes: int) -> int:
    return max(1, int(round(window_s / segment_s))) * n_modes


def _check_model_sizes(cfg: object, rates: tuple[float, ...], n_modes_field: str = "n_modes",
                       segment_field: str = "segment_s", attention: bool = True) -> None:
    """Rules between the model fields of ``cfg`` (each error message starts with the field it names)."""
    window_s, segment_s = cfg.window_s, getattr(cfg, segment_field)  # type: ignore[attr-defined]
    n_modes, duration_s = getattr(cfg, n_modes_field), getattr(cfg, "duration_s", None)
    if segment_s > window_s:
        raise ValueError(f"{segment_field} = {segment_s}: must be <= window_s ({window_s}), one pooling segment "
                         f"at least")
    if duration_s is not None and duration_s > window_s / 2:
        raise ValueError(f"duration_s = {duration_s}: the kernel must fit twice in the window ({window_s} s)")
    channels = getattr(cfg, "channels", None)
    if attention and channels is not None and channels[-1] % 4:
        raise ValueError(f"channels = {channels}: the last width must be divisible by the 4 attention heads")
    tokens = _n_tokens(window_s, segment_s, n_modes)
    if attention and tokens > _MAX_TOKENS:
        raise ValueError(f"{n_modes_field} = {n_modes}: with {segment_field} = {segment_s} and window_s = "
                         f"{window_s} the head attends over {tokens} tokens (at most {_MAX_TOKENS})")
    n_max = int(round(window_s * max(rates)))
    if tokens * n_max > _MAX_POOL_ENTRIES:
        raise ValueError(f"{n_modes_field} = {n_modes}: the pooling matrix at {max(rates):g} Hz has "
                         f"{tokens * n_max:,} entries (at most {_MAX_POOL_ENTRIES:,})")


def _check_bank(n_field: str, n_windows: int, window_s: float, fs: float, value: int | None = None) -> None:
    if n_windows * window_s * fs > _MAX_SIGNAL_FLOATS:
        raise ValueError(f"{n_field} = {n_windows if value is None else value}: {n_windows} windows of {window_s} s "
                         f"at {fs:g} Hz hold "
                         f"{n_windows * window_s * fs:,.0f} samples (at most {_MAX_SIGNAL_FLOATS:,})")


def _check_sleep_basis(window_s: float, fs: float) -> None:
    # SignalBank.sample builds the whole (2F, N) Fourier basis of a window, F = 30 Hz * T frequencies and
    # N = T * fs samples, in float64 (8 bytes an entry); 40M entries = 320 MB
    entries = 2 * 30 * window_s * window_s * fs
    if entries > 40_000_000:
        raise ValueError(f"window_s = {window_s}: sampling the sleep-like windows at {fs:g} Hz builds a Fourier "
                         f"basis of {entries:,.0f} entries (at most 40,000,000)")




_RATE_LO, _RATE_HI = 10.0, 2000.0  # Hz; the synthetic sleep EEG and ECG are band-limited to 30 Hz
