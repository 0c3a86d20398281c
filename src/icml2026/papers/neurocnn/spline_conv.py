"""Continuous-time convolution layers defined in seconds (Sec. "spline-parameterised convolution").

A kernel is a function ``w(s)`` of the physical lag ``s`` (seconds) on ``[-D/2, D/2]``. At sampling rate
``fs`` it is sampled on ``L_k`` odd taps and the convolution integral ``y(t) = int w(s) x(t + s) ds`` is
approximated by the Riemann sum ``(1/fs) * sum_j w(s_j) x[n + j - (L_k - 1)/2]``; the ``1/fs`` factor keeps
the output on the same scale at every rate.

Two kernel families share the machinery:

* :class:`SplineConv1d` -- the paper's layer: a natural cubic spline through ``K`` learned control values
  ``P[o, c, k]`` at fixed knots ``u_k = linspace(-0.5, 0.5, K)`` (kernel-normalised time ``u = s / D``).
  The spline is linear in ``P``, so ``kernel = P @ A^T`` with a cached basis matrix ``A`` (``L_k x K``).
* :class:`SirenConv1d` -- the CKConv-style baseline: the kernel is the output of a small SIREN MLP of ``u``.
"""

from __future__ import annotations

import abc
import math
import warnings
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from scipy.fft import next_fast_len
from torch import nn

__all__ = [
    "natural_spline_basis",
    "kernel_length",
    "tap_positions",
    "check_fs",
    "check_signal",
    "ContinuousConv1d",
    "SplineConv1d",
    "SirenConv1d",
]

Spacing = Literal["exact", "released"]
ConvMethod = Literal["auto", "direct", "fft", "unfold"]

# From this many taps on, "auto" uses the FFT route (measured on a 2-core CPU: at 51 taps direct conv1d is
# as fast or faster, forward + backward; at 251 taps and 5000 samples the FFT route is several times faster).
_FFT_MIN_TAPS = 101
# Up to this many input channels, "auto" uses an explicit unfold + matmul: measured on a loaded 2-core CPU, the
# oneDNN conv1d backward with one input channel took 50x longer with 2 threads than with 1 (3.7 s vs 74 ms for
# a (64, 1, 1000) batch and 16 x 25 taps), while unfold + matmul took 0.4 s with either.
_UNFOLD_MAX_IN = 4


def natural_spline_basis(knots: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Basis matrix of the natural cubic spline (second derivative 0 at both ends).

    Column ``k`` is the natural spline through the ``k``-th unit vector at ``knots``, evaluated at
    ``points``; so for control values ``P`` (..., K) the spline at ``points`` is ``P @ A.T``. Points
    outside ``[knots[0], knots[-1]]`` get 0 (the kernel has compact support).

    Parameters
    ----------
    knots : (K,) strictly increasing knot positions, K >= 2.
    points : (L,) evaluation points.

    Returns
    -------
    A : (L, K) float64 basis matrix.
    """
    x = np.asarray(knots, dtype=np.float64)
    u = np.asarray(points, dtype=np.float64)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(u))):
        raise ValueError("knots and points must be finite (no NaN or inf)")
    if u.ndim != 1:
        raise ValueError(f"points must be a 1-D array, got shape {u.shape}")
    if x.ndim != 1 or x.size < 2 or np.any(np.diff(x) <= 0):
        raise ValueError("knots must be a strictly increasing 1-D array with at least 2 entries")
    n_knots = x.size
    h = np.diff(x)
    # Second derivatives M = Q y (natural: M_0 = M_{K-1} = 0); tridiagonal system for the interior ones.
    q = np.zeros((n_knots, n_knots))
    if n_knots > 2:
        m = n_knots - 2
        tri = np.zeros((m, m))
        rhs = np.zeros((m, n_knots))
        for i in range(1, n_knots - 1):
            r = i - 1
            tri[r, r] = 2.0 * (h[i - 1] + h[i])
            if r > 0:
                tri[r, r - 1] = h[i - 1]
            if r < m - 1:
                tri[r, r + 1] = h[i]
            rhs[r, i - 1] += 6.0 / h[i - 1]
            rhs[r, i] += -6.0 / h[i - 1] - 6.0 / h[i]
            rhs[r, i + 1] += 6.0 / h[i]
        q[1:-1] = np.linalg.solve(tri, rhs)
    eye = np.eye(n_knots)
    seg = np.clip(np.searchsorted(x, u, side="right") - 1, 0, n_knots - 2)
    x0, x1, hs = x[seg], x[seg + 1], h[seg]
    a = (x1 - u)[:, None]
    b = (u - x0)[:, None]
    hh = hs[:, None]
    m0, m1 = q[seg], q[seg + 1]
    y0, y1 = eye[seg], eye[seg + 1]
    basis = (
        m0 * a**3 / (6 * hh)
        + m1 * b**3 / (6 * hh)
        + (y0 / hh - m0 * hh / 6) * a
        + (y1 / hh - m1 * hh / 6) * b
    )
    outside = (u < x[0] - 1e-12) | (u > x[-1] + 1e-12)
    basis[outside] = 0.0
    return basis


def kernel_length(duration_s: float, fs: float) -> int:
    """Number of taps ``L_k = round(D * fs)``, at least 1, made odd (+1 if even)."""
    fs = check_fs(fs)
    if isinstance(duration_s, bool) or not isinstance(duration_s, (int, float, np.integer, np.floating)) or not (
        math.isfinite(duration_s) and duration_s > 0
    ):
        raise ValueError(f"duration_s must be a positive number of seconds, got {duration_s!r}")
    n = max(1, int(round(duration_s * fs)))
    return n + 1 if n % 2 == 0 else n


def tap_positions(duration_s: float, fs: float, spacing: Spacing = "exact") -> np.ndarray:
    """Kernel-normalised tap positions ``u_j`` (lag ``s_j = u_j * D``) for sampling rate ``fs``.

    ``"released"``: ``linspace(-0.5, 0.5, L_k)``, spaced ``D / (L_k - 1)`` (equals ``1/fs`` only when
    ``round(D*fs)`` is even, otherwise the kernel is slightly time-stretched). ``"exact"``: taps at
    ``(j - (L_k - 1)/2) / (fs * D)``, spaced exactly ``1/fs``; the outermost tap may fall just outside
    ``[-0.5, 0.5]``, where the kernel is 0.
    """
    n_taps = kernel_length(duration_s, fs)
    if spacing == "released":
        return np.linspace(-0.5, 0.5, n_taps) if n_taps > 1 else np.zeros(1)
    if spacing == "exact":
        return (np.arange(n_taps) - (n_taps - 1) / 2) / (fs * duration_s)
    raise ValueError(f"spacing must be 'exact' or 'released', got {spacing!r}")


def check_fs(fs: float | None) -> float:
    """Validate a sampling rate in Hz (one per batch) and return it as a float.

    Raises
    ------
    ValueError
        ``fs`` missing (None), not a number, non-positive or non-finite.
    """
    if fs is None:
        raise ValueError("the sampling rate fs (Hz) is required: call forward(x, fs)")
    if isinstance(fs, torch.Tensor):
        if fs.numel() != 1:
            raise ValueError("one sampling rate per batch is required (fs must be a scalar)")
        fs = float(fs.item())
    if isinstance(fs, bool) or not isinstance(fs, (int, float, np.integer, np.floating)):
        raise ValueError(f"the sampling rate fs must be a positive number of Hz, got {fs!r}")
    fs = float(fs)
    if not math.isfinite(fs) or fs <= 0:
        raise ValueError(f"the sampling rate fs must be positive and finite, got {fs} Hz")
    return fs


def check_signal(
    x: torch.Tensor,
    fs: float | None,
    *,
    in_channels: int | None = None,
    min_length: int = 1,
    what: str = "signal",
) -> float:
    """Validate a batch ``x`` (B, C, N) and its sampling rate; return ``fs`` as a float.

    Raises
    ------
    ValueError
        Missing / non-positive / non-finite ``fs``, wrong shape or channel count, a signal shorter than
        ``min_length`` samples (one kernel), or NaN / inf in ``x``.
    TypeError
        ``x`` is not a tensor.
    """
    fs = check_fs(fs)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"the {what} must be a torch.Tensor of shape (batch, channels, samples)")
    if x.ndim != 3:
        raise ValueError(f"the {what} must have shape (batch, channels, samples), got {tuple(x.shape)}")
    if in_channels is not None and x.shape[1] != in_channels:
        raise ValueError(f"the {what} has {x.shape[1]} channels, expected {in_channels}")
    if x.shape[-1] < min_length:
        raise ValueError(
            f"the {what} has {x.shape[-1]} samples, shorter than one kernel ({min_length} taps at {fs:g} Hz)"
        )
    if x.device.type != "meta" and not bool(torch.isfinite(x).all()):  # meta tensors carry no values
        raise ValueError(f"the {what} contains NaN or inf values")
    return fs


def _same_conv(x: torch.Tensor, kernel: torch.Tensor, stride: int, method: ConvMethod) -> torch.Tensor:
    """Cross-correlation with TF-style "same" padding; direct conv1d or an exact FFT route (stride 1)."""
    n = x.shape[-1]
    n_taps = kernel.shape[-1]
    pad = max((math.ceil(n / stride) - 1) * stride + n_taps - n, 0)
    left = pad // 2
    use_fft = method == "fft" or (method == "auto" and n_taps >= _FFT_MIN_TAPS)
    use_unfold = method == "unfold" or (method == "auto" and not use_fft and x.shape[1] <= _UNFOLD_MAX_IN)
    if use_unfold:  # y[b, o, n] = sum_{c, j} x_pad[b, c, n * stride + j] w[o, c, j]
        windows = F.pad(x, (left, pad - left)).unfold(-1, n_taps, stride)  # (B, C_in, N_out, L)
        return torch.einsum("bcnl,ocl->bon", windows, kernel)
    if stride != 1 or not use_fft:
        return F.conv1d(F.pad(x, (left, pad - left)), kernel, stride=stride)
    # y[n] = sum_j w[j] x[n + j - left] = (x * flip(w))[n + L - 1 - left]   (linear convolution)
    n_fft = next_fast_len(n + n_taps - 1, real=True)  # no wrap-around: linear, not circular, convolution
    xf = torch.fft.rfft(x, n=n_fft)
    wf = torch.fft.rfft(torch.flip(kernel, dims=(-1,)), n=n_fft)
    yf = torch.einsum("bcf,ocf->bof", xf, wf)
    y = torch.fft.irfft(yf, n=n_fft)
    start = n_taps - 1 - left
    return y[..., start : start + n]


class ContinuousConv1d(nn.Module, abc.ABC):
    """Shared machinery of a convolution whose kernel is a function of physical lag (seconds).

    Subclasses implement :meth:`kernel` (``(C_out, C_in, L_k)`` at rate ``fs``).
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        duration_s: float = 0.5,
        spacing: Spacing = "exact",
        stride_s: float | None = None,
        bias: bool = True,
        method: ConvMethod = "auto",
    ) -> None:
        super().__init__()
        for name, val in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ValueError(f"{name} must be a positive integer, got {val!r}")
        if not (isinstance(duration_s, (int, float)) and math.isfinite(duration_s) and duration_s > 0):
            raise ValueError(f"duration_s must be a positive number of seconds, got {duration_s!r}")
        if spacing not in ("exact", "released"):
            raise ValueError(f"spacing must be 'exact' or 'released', got {spacing!r}")
        if stride_s is not None and not (math.isfinite(stride_s) and stride_s > 0):
            raise ValueError(f"stride_s must be a positive number of seconds or None, got {stride_s!r}")
        if method not in ("auto", "direct", "fft", "unfold"):
            raise ValueError(f"method must be 'auto', 'direct', 'fft' or 'unfold', got {method!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.duration_s = float(duration_s)
        self.spacing: Spacing = spacing
        self.stride_s = stride_s
        self.method: ConvMethod = method
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None

    @abc.abstractmethod
    def kernel(self, fs: float) -> torch.Tensor:
        """The sampled kernel (C_out, C_in, L_k) at rate ``fs``; each subclass defines its kernel family."""

    def n_taps(self, fs: float) -> int:
        """``L_k`` at rate ``fs``."""
        return kernel_length(self.duration_s, fs)

    def stride(self, fs: float) -> int:
        """Stride in samples: ``round(stride_s * fs)``, at least 1 (1 sample when ``stride_s`` is None)."""
        return 1 if self.stride_s is None else max(1, int(round(self.stride_s * fs)))

    def forward(self, x: torch.Tensor, fs: float | None = None) -> tuple[torch.Tensor, float]:
        """Riemann sum of the continuous convolution, ``y = (1/fs) conv1d(x, kernel)``, "same" padding.

        Parameters
        ----------
        x : (B, C_in, N) signal sampled at ``fs`` Hz.
        fs : sampling rate in Hz (one per batch).

        Returns
        -------
        y : (B, C_out, ceil(N / stride)) output.
        fs_out : output sampling rate ``fs / stride``.
        """
        fs = check_fs(fs)
        check_signal(x, fs, in_channels=self.in_channels, min_length=self.n_taps(fs))
        w = self.kernel(fs).to(x.dtype)
        stride = self.stride(fs)
        y = _same_conv(x, w, stride, self.method) / fs  # the 1/fs quadrature weight
        if self.bias is not None:
            y = y + self.bias.to(x.dtype)[None, :, None]
        return y, fs / stride

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, duration_s={self.duration_s}, spacing={self.spacing!r}"
        )


class SplineConv1d(ContinuousConv1d):
    """Spline-parameterised continuous-time convolution (the paper's layer).

    Parameters
    ----------
    in_channels, out_channels : C_in, C_out.
    n_knots : K, control points per kernel (paper: 15).
    duration_s : D, kernel support in seconds (paper: 0.5).
    spacing : ``"exact"`` (taps 1/fs apart) or ``"released"`` (the released code's linspace taps).
    stride_s : stride in seconds (None = 1 sample).
    bias : add a learned bias per output channel (off, as in the released layer).
    generator : torch.Generator for the N(0, 1) initialisation of the control values.

    Attributes
    ----------
    control : (C_out, C_in, K) parameter P.
    knots : (K,) buffer u_k = linspace(-0.5, 0.5, K).
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        n_knots: int = 15,
        duration_s: float = 0.5,
        spacing: Spacing = "exact",
        stride_s: float | None = None,
        bias: bool = False,
        method: ConvMethod = "auto",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(in_channels, out_channels, duration_s, spacing, stride_s, bias, method)
        if isinstance(n_knots, bool) or not isinstance(n_knots, int) or n_knots < 2:
            raise ValueError(f"n_knots must be an integer >= 2, got {n_knots!r}")
        self.n_knots = n_knots
        self.control = nn.Parameter(torch.randn(out_channels, in_channels, n_knots, generator=generator))
        knots = torch.linspace(-0.5, 0.5, n_knots, dtype=torch.float64)
        self.register_buffer("knots", knots, persistent=False)
        self._knots_host = knots.numpy().copy()  # the basis is built on the host whatever the module's device
        self._basis_cache: dict[tuple[str, int, float], torch.Tensor] = {}

    def basis(self, fs: float) -> torch.Tensor:
        """Cached basis ``A`` (L_k, K) at rate ``fs`` (float32; no gradient, the kernel is linear in P)."""
        key = (self.spacing, self.n_taps(fs), round(float(fs), 9) if self.spacing == "exact" else 0.0)
        if key not in self._basis_cache:
            if self.n_taps(fs) < self.n_knots:
                warnings.warn(
                    f"SplineConv1d at {fs:g} Hz: the {self.duration_s:g} s kernel has {self.n_taps(fs)} taps for "
                    f"{self.n_knots} knots, so the spline is under-sampled (its shape between taps is lost); "
                    f"use a rate of at least {self.n_knots / self.duration_s:g} Hz or fewer knots",
                    UserWarning,
                    stacklevel=4,
                )
            u = tap_positions(self.duration_s, fs, self.spacing)
            a = natural_spline_basis(self._knots_host, u)
            self._basis_cache[key] = torch.as_tensor(a, dtype=torch.float32)
        return self._basis_cache[key].to(self.control.device)

    def kernel(self, fs: float) -> torch.Tensor:
        """Sampled kernel ``P @ A^T``: (C_out, C_in, L_k)."""
        return torch.einsum("ock,lk->ocl", self.control, self.basis(fs).to(self.control.dtype))

    def extra_repr(self) -> str:
        return super().extra_repr() + f", n_knots={self.n_knots}"


class _Sine(nn.Module):
    def __init__(self, omega: float) -> None:
        super().__init__()
        self.omega = omega

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(self.omega * x)


class SirenConv1d(ContinuousConv1d):
    """CKConv continuous kernel (the KernelNet of the CKConv reference code, as the released NeurOCNN uses it).

    A SIREN MLP ``r -> hidden -> hidden -> C_out * C_in`` of the relative position ``r in [-1, 1]`` (``r = 2u``,
    ``u = s / D`` the kernel-normalised lag), each linear layer weight-normalised, ``sin(omega_0 * .)`` after
    both hidden layers (``omega_0 = 30``). SIREN initialisation: first layer U(-1, 1), later layers
    U(-sqrt(6/h)/omega_0, sqrt(6/h)/omega_0), every bias U(-1, 1); the weight-norm gain starts at the norm of
    the initial weight, so the layer starts at exactly that init. The kernel is 0 outside ``|u| <= 0.5``, as
    for the spline layer. The output bias is a parameter per output channel (CKConv has one), starting at 0.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        hidden: int = 32,
        duration_s: float = 0.5,
        omega_0: float = 30.0,
        spacing: Spacing = "exact",
        stride_s: float | None = None,
        bias: bool = True,
        method: ConvMethod = "auto",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(in_channels, out_channels, duration_s, spacing, stride_s, bias, method)
        self.hidden = hidden
        self.omega_0 = omega_0
        layers = [nn.Linear(1, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, out_channels * in_channels)]
        with torch.no_grad():
            # Deviation: the reference code writes this init into the weight-normalised layers' computed
            # `weight`, which PyTorch recomputes from (g, v) at the first forward, so there only its bias init
            # takes effect; we initialise v itself (and g = |v|), i.e. the SIREN init the CKConv paper states.
            layers[0].weight.uniform_(-1.0, 1.0, generator=generator)  # U(-1/fan_in, 1/fan_in), fan_in = 1
            for layer in layers[1:]:
                bound = math.sqrt(6.0 / layer.in_features) / omega_0
                layer.weight.uniform_(-bound, bound, generator=generator)
            for layer in layers:
                layer.bias.uniform_(-1.0, 1.0, generator=generator)
        wn = nn.utils.parametrizations.weight_norm
        self.net = nn.Sequential(
            wn(layers[0]), _Sine(omega_0), wn(layers[1]), _Sine(omega_0), wn(layers[2])
        )

    def kernel(self, fs: float) -> torch.Tensor:
        """Kernel from the SIREN at the tap positions: (C_out, C_in, L_k)."""
        u = torch.as_tensor(tap_positions(self.duration_s, fs, self.spacing), dtype=torch.float32)
        u = u.to(self.net[0].bias.device)  # type: ignore[arg-type]  # nn.Module attribute typing
        # CKConv's relative positions span [-1, 1] over the kernel: r = 2u
        w = self.net(2.0 * u[:, None])  # (L, C_out * C_in)
        w = w * (u.abs() <= 0.5 + 1e-9).to(w.dtype)[:, None]
        return w.T.reshape(self.out_channels, self.in_channels, -1)
