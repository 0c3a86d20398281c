"""NeurOCNN: spline-conv backbone -> Fourier projection pooling -> attention head (Secs. 2-4 of the brief).

Backbone: spline convolutions C_in -> c_1 -> ... -> c_L (paper: 64-128-64-32, D = 0.5 s, K = 15); GELU
then GroupNorm(1 group) after every layer but the last, GroupNorm only after the last (GroupNorm's
statistics are time averages, hence rate-invariant). Pooling: S*M Fourier tokens of dimension d = c_L.
Head: self-attention over the tokens, a 2-layer pre-norm Transformer encoder, attention pooling with one
learned query + LayerNorm, MLP d -> 2d -> GELU -> dropout -> n_classes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from icml2026.core.validate import positive_int

from .pooling import FourierProjectionPool
from .spline_conv import ContinuousConv1d, SirenConv1d, Spacing, SplineConv1d, check_fs, check_signal

__all__ = ["seeded_init", "TokenHead", "NeurOCNN", "as_model_dtype"]


def as_model_dtype(x: torch.Tensor, model: nn.Module) -> torch.Tensor:
    """``x`` cast to the dtype of ``model``'s parameters (a float64 or integer batch would fail deep inside
    the first convolution or GroupNorm); other input is returned unchanged for :func:`check_signal` to judge."""
    if not isinstance(x, torch.Tensor) or x.is_complex():
        return x
    dtype = next(model.parameters()).dtype
    return x if x.dtype == dtype else x.to(dtype)


@contextlib.contextmanager
def seeded_init(generator: torch.Generator | None) -> Iterator[None]:
    """Build modules under a seed drawn from ``generator`` without touching the global torch RNG.

    The global state is forked and restored afterwards, so module initialisers (which draw from the
    global generator) are deterministic given ``generator`` and leave no trace.
    """
    with torch.random.fork_rng(devices=[]):
        if generator is not None:
            torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator).item()))
        yield


class TokenHead(nn.Module):
    """The attention head over Fourier tokens, shared by NeurOCNN and the FNO / CKConv baselines.

    Parameters
    ----------
    d : token dimension.
    n_classes : number of classes.
    n_heads : attention heads (paper: 4).
    n_layers : pre-norm Transformer encoder layers (paper: 2).
    dropout : dropout in the encoder and the MLP (paper: 0.2).
    n_tokens : S*M, only needed with ``positional=True``.
    positional : add a learned embedding per (segment, basis index) token (rate-invariant extension; the
        released code adds none).
    """

    def __init__(
        self,
        d: int,
        n_classes: int,
        n_heads: int = 4,
        n_layers: int = 2,
        dropout: float = 0.2,
        n_tokens: int | None = None,
        positional: bool = False,
    ) -> None:
        super().__init__()
        positive_int(d, "d")
        if d % n_heads != 0:
            raise ValueError(f"token dimension {d} must be divisible by n_heads={n_heads}")
        if n_classes < 2:
            raise ValueError(f"n_classes must be at least 2, got {n_classes}")
        self.positional = positional
        if positional:
            if n_tokens is None:
                raise ValueError("positional=True needs the number of tokens (give window_s)")
            self.pos = nn.Parameter(torch.zeros(1, n_tokens, d))
            nn.init.normal_(self.pos, std=0.02)
        # Deviation: our reconstruction -- a LayerNorm before the first self-attention, which is residual.
        self.norm_in = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, n_heads, batch_first=True)
        layer = nn.TransformerEncoderLayer(
            d,
            n_heads,
            dim_feedforward=4 * d,
            dropout=dropout,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.query = nn.Parameter(torch.zeros(1, 1, d))
        nn.init.normal_(self.query, std=0.02)
        self.pool = nn.MultiheadAttention(d, n_heads, batch_first=True)
        self.norm_out = nn.LayerNorm(d)
        self.mlp = nn.Sequential(
            nn.Linear(d, 2 * d), nn.GELU(), nn.Dropout(dropout), nn.Linear(2 * d, n_classes)
        )

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (B, T, d) -> logits (B, n_classes)."""
        if self.positional:
            if tokens.shape[1] != self.pos.shape[1]:
                raise ValueError(f"expected {self.pos.shape[1]} tokens, got {tokens.shape[1]}")
            tokens = tokens + self.pos
        z = self.norm_in(tokens)
        z = tokens + self.attn(z, z, z, need_weights=False)[0]
        z = self.encoder(z)
        q = self.query.expand(z.shape[0], -1, -1)
        pooled = self.norm_out(self.pool(q, z, z, need_weights=False)[0][:, 0])
        return self.mlp(pooled)


class NeurOCNN(nn.Module):
    """NeurOCNN classifier; ``forward(x, fs)`` works at any sampling rate without retraining.

    Parameters
    ----------
    in_channels : C_in.
    n_classes : number of classes.
    channels : backbone widths (paper: (64, 128, 64, 32)).
    n_knots : K spline control points (paper: 15).
    duration_s : D kernel duration in seconds (paper: 0.5).
    n_modes : M Fourier basis functions per segment (paper: 50).
    segment_s : T_seg (paper: 5 s).
    window_s : T_total; if given, every input must last this long (paper: 30 s). Needed for ``positional``.
    n_heads, n_head_layers, dropout : head settings (paper: 4, 2, 0.2).
    spacing : tap spacing of the spline kernel, ``"exact"`` or ``"released"``.
    kernel : ``"spline"`` (NeurOCNN) or ``"siren"`` (the CKConv-style baseline).
    positional : learned token embedding (optional extension, off in the released code).
    generator : torch.Generator for the initialisation.
    """

    def __init__(
        self,
        in_channels: int,
        n_classes: int,
        channels: Sequence[int] = (64, 128, 64, 32),
        n_knots: int = 15,
        duration_s: float = 0.5,
        n_modes: int = 50,
        segment_s: float = 5.0,
        window_s: float | None = None,
        n_heads: int = 4,
        n_head_layers: int = 2,
        dropout: float = 0.2,
        spacing: Spacing = "exact",
        kernel: Literal["spline", "siren"] = "spline",
        siren_hidden: int = 32,
        positional: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if len(channels) < 1:
            raise ValueError("channels must list at least one backbone width")
        if kernel not in ("spline", "siren"):
            raise ValueError(f"kernel must be 'spline' or 'siren', got {kernel!r}")
        if window_s is not None and not window_s > 0:
            raise ValueError(f"window_s must be positive, got {window_s!r}")
        self.in_channels = in_channels
        self.window_s = window_s
        widths = [in_channels, *channels]
        with seeded_init(generator):
            convs: list[ContinuousConv1d] = []
            for c_in, c_out in zip(widths[:-1], widths[1:], strict=True):
                if kernel == "spline":
                    convs.append(SplineConv1d(c_in, c_out, n_knots, duration_s, spacing))
                else:
                    convs.append(SirenConv1d(c_in, c_out, siren_hidden, duration_s, spacing=spacing))
            self.convs = nn.ModuleList(convs)
            self.norms = nn.ModuleList(nn.GroupNorm(1, c) for c in channels)
            self.pool = FourierProjectionPool(n_modes, segment_s)
            n_tokens = None if window_s is None else int(round(window_s / segment_s)) * n_modes
            self.head = TokenHead(
                channels[-1], n_classes, n_heads, n_head_layers, dropout, n_tokens, positional
            )

    @property
    def spacing(self) -> Spacing:
        return self.convs[0].spacing  # type: ignore[return-value]  # nn.Module attribute typing

    def set_spacing(self, spacing: Spacing) -> None:
        """Switch every layer's tap spacing (identical at rates where round(D*fs) is even, e.g. 100 Hz)."""
        if spacing not in ("exact", "released"):
            raise ValueError(f"spacing must be 'exact' or 'released', got {spacing!r}")
        for conv in self.convs:
            conv.spacing = spacing  # type: ignore[assignment]  # nn.Module attribute typing

    def features(self, x: torch.Tensor, fs: float | None = None) -> tuple[torch.Tensor, float]:
        """Backbone features (B, d, N') and their rate."""
        fs = check_fs(fs)
        x = as_model_dtype(x, self)
        check_signal(x, fs, in_channels=self.in_channels, min_length=self.convs[0].n_taps(fs))  # type: ignore[operator]  # nn.Module attribute typing
        if self.window_s is not None and abs(x.shape[-1] / fs - self.window_s) > 1.0 / fs + 1e-9:
            raise ValueError(
                f"the window lasts {x.shape[-1] / fs:g} s ({x.shape[-1]} samples at {fs:g} Hz), "
                f"expected {self.window_s:g} s"
            )
        h = x
        last = len(self.convs) - 1
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms, strict=True)):
            h, fs = conv(h, fs)
            h = norm(h if i == last else F.gelu(h))
        return h, fs

    def forward(self, x: torch.Tensor, fs: float | None = None) -> torch.Tensor:
        """Logits (B, n_classes) for signals x (B, C_in, N) sampled at ``fs`` Hz."""
        h, fs_h = self.features(x, fs)
        return self.head(self.pool(h, fs_h))
