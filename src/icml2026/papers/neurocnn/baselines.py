"""Baselines the paper compares against, implemented for real.

* :class:`FixedCNN` -- a conventional 1-D CNN whose kernels are fixed in *samples* (global average pooling);
  it ignores ``fs``, so a new rate changes what every kernel sees. :class:`ResampleBack` wraps any model
  and linearly interpolates a new-rate input back to the training rate first (the paper's second protocol).
* :class:`FNOClassifier` -- ``neuraloperator``'s 1-D ``FNO`` (grid positional embedding) followed by the
  *same* Fourier projection pooling and attention head as NeurOCNN.
* :func:`ckconv_model` -- NeurOCNN's backbone and head with CKConv kernels (weight-normalised SIREN
  KernelNet) instead of splines.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from icml2026.core.validate import positive_int

from .model import NeurOCNN, TokenHead, as_model_dtype, seeded_init
from .pooling import FourierProjectionPool
from .spline_conv import Spacing, check_fs, check_signal

__all__ = ["FixedCNN", "ResampleBack", "FNOClassifier", "ckconv_model"]


class FixedCNN(nn.Module):
    """Conventional 1-D CNN: [conv(k samples) -> GELU -> GroupNorm -> max-pool 2] x L -> GAP -> MLP.

    Parameters
    ----------
    in_channels, n_classes : input channels and classes.
    channels : widths of the conv layers.
    kernel_size : taps per kernel, in samples (fixed whatever the rate).
    dropout : dropout before the last linear layer.
    generator : torch.Generator for the initialisation.
    """

    def __init__(
        self,
        in_channels: int,
        n_classes: int,
        channels: Sequence[int] = (16, 32, 32, 16),
        kernel_size: int = 9,
        dropout: float = 0.2,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if isinstance(kernel_size, bool) or not isinstance(kernel_size, int) or kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be a positive odd integer, got {kernel_size}")
        self.in_channels = in_channels
        self.kernel_size = kernel_size
        widths = [in_channels, *channels]
        with seeded_init(generator):
            self.convs = nn.ModuleList(
                nn.Conv1d(a, b, kernel_size, padding=kernel_size // 2)
                for a, b in zip(widths[:-1], widths[1:], strict=True)
            )
            self.norms = nn.ModuleList(nn.GroupNorm(1, c) for c in channels)
            d = channels[-1]
            self.mlp = nn.Sequential(
                nn.Linear(d, 2 * d), nn.GELU(), nn.Dropout(dropout), nn.Linear(2 * d, n_classes)
            )

    def forward(self, x: torch.Tensor, fs: float | None = None) -> torch.Tensor:
        """Logits (B, n_classes); ``fs`` is validated but, by design, not used."""
        fs = check_fs(fs)
        x = as_model_dtype(x, self)
        check_signal(x, fs, in_channels=self.in_channels, min_length=self.kernel_size)
        h = x
        for conv, norm in zip(self.convs, self.norms, strict=True):
            h = norm(F.gelu(conv(h)))
            if h.shape[-1] >= 2:
                h = F.max_pool1d(h, 2)
        return self.mlp(h.mean(dim=-1))


class ResampleBack(nn.Module):
    """Resample a new-rate input back to ``train_fs`` by linear interpolation, then call ``model``.

    Interpolation is ``F.interpolate(mode="linear", align_corners=False)`` to ``round(N * train_fs / fs)``
    samples, as the paper makes its new-rate test signals.
    """

    def __init__(self, model: nn.Module, train_fs: float) -> None:
        super().__init__()
        self.model = model
        self.train_fs = check_fs(train_fs)

    def forward(self, x: torch.Tensor, fs: float | None = None) -> torch.Tensor:
        fs = check_fs(fs)
        check_signal(x, fs)
        if fs != self.train_fs:
            n_out = max(1, int(round(x.shape[-1] * self.train_fs / fs)))
            x = F.interpolate(x, size=n_out, mode="linear", align_corners=False)
        return self.model(x, self.train_fs)


class FNOClassifier(nn.Module):
    """neuraloperator ``FNO`` (1-D, grid embedding) -> Fourier projection pooling -> head (as released).

    Parameters
    ----------
    in_channels, n_classes : input channels and classes.
    n_modes : Fourier modes kept by each spectral convolution (paper: 150 over 30 s windows).
    hidden : FNO width (paper: 128).
    n_layers : FNO blocks (paper: 4).
    d : output channels of the FNO = token dimension of the shared head (paper: 32).
    pool_modes, segment_s : the Fourier pooling settings (as NeurOCNN).
    n_heads, n_head_layers, dropout : head settings (as NeurOCNN).
    generator : torch.Generator for the initialisation.
    """

    def __init__(
        self,
        in_channels: int,
        n_classes: int,
        n_modes: int = 128,
        hidden: int = 32,
        n_layers: int = 4,
        d: int = 16,
        pool_modes: int = 16,
        segment_s: float = 2.0,
        n_heads: int = 4,
        n_head_layers: int = 2,
        dropout: float = 0.2,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        positive_int(d, "d")
        try:
            from neuralop.models import FNO
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "the FNO baseline needs the 'neuraloperator' package (pip install icml2026[neurocnn])"
            ) from exc
        self.in_channels = in_channels
        self.n_modes = n_modes
        with seeded_init(generator):
            self.fno = FNO(
                n_modes=(n_modes,),
                in_channels=in_channels,
                out_channels=d,
                hidden_channels=hidden,
                n_layers=n_layers,
                positional_embedding="grid",
            )
            self.pool = FourierProjectionPool(pool_modes, segment_s)
            self.head = TokenHead(d, n_classes, n_heads, n_head_layers, dropout)

    def forward(self, x: torch.Tensor, fs: float | None = None) -> torch.Tensor:
        """Logits (B, n_classes) for x (B, C_in, N) at ``fs`` Hz."""
        fs = check_fs(fs)
        x = as_model_dtype(x, self)
        check_signal(x, fs, in_channels=self.in_channels, min_length=2)
        if x.shape[-1] // 2 + 1 < self.n_modes // 2 + 1:
            raise ValueError(
                f"a signal of {x.shape[-1]} samples has fewer Fourier modes than the FNO keeps "
                f"({self.n_modes})"
            )
        return self.head(self.pool(self.fno(x), fs))


def ckconv_model(
    in_channels: int,
    n_classes: int,
    channels: Sequence[int] = (16, 32, 32, 16),
    duration_s: float = 0.5,
    n_modes: int = 16,
    segment_s: float = 2.0,
    window_s: float | None = None,
    siren_hidden: int = 32,
    spacing: Spacing = "exact",
    dropout: float = 0.2,
    generator: torch.Generator | None = None,
) -> NeurOCNN:
    """The CKConv-style variant: NeurOCNN's backbone and head with SIREN-generated kernels."""
    return NeurOCNN(
        in_channels,
        n_classes,
        channels,
        duration_s=duration_s,
        n_modes=n_modes,
        segment_s=segment_s,
        window_s=window_s,
        dropout=dropout,
        spacing=spacing,
        kernel="siren",
        siren_hidden=siren_hidden,
        generator=generator,
    )
