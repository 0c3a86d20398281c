"""Criterion 1: the spline basis (the kernel P @ A^T against scipy's natural cubic spline)."""

from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicSpline

from icml2026.core import Check, Outcome, torch_generator
from icml2026.core.config import config, param

from ..spline_conv import SplineConv1d, kernel_length, natural_spline_basis, tap_positions

__all__ = ["BasisConfig", "spline_basis"]


@config
class BasisConfig:
    rates: tuple[float, ...] = param((30, 50, 75, 80, 90, 100, 128, 150, 200, 256, 300, 500, 1000), 1.0, 10_000.0,
                                     min_len=1, max_len=64, help="Hz")
    n_knots: int = param(15, 2, 100, help="paper: 15")
    duration_s: float = param(0.5, 0.01, 5.0, help="paper: 0.5 s")
    in_channels: int = param(2, 1, 64)
    out_channels: int = param(3, 1, 64)

    def __post_init__(self) -> None:
        entries = self.in_channels * self.out_channels * kernel_length(self.duration_s, max(self.rates))
        if entries > 5_000_000:
            raise ValueError(f"in_channels = {self.in_channels}: with out_channels = {self.out_channels} the kernel "
                             f"at {max(self.rates):g} Hz has {entries:,} taps (at most 5,000,000)")


def spline_basis(cfg: BasisConfig, rng: np.random.Generator) -> Outcome:
    layer = SplineConv1d(
        cfg.in_channels, cfg.out_channels, cfg.n_knots, cfg.duration_s, generator=torch_generator(rng)
    )
    p = layer.control.detach().double().numpy()
    knots = np.linspace(-0.5, 0.5, cfg.n_knots)
    max_err, n_bad_len, n_even = 0.0, 0, 0
    rows = []
    for spacing in ("exact", "released"):
        layer.spacing = spacing
        for fs in cfg.rates:
            u = tap_positions(cfg.duration_s, fs, spacing)
            ref = CubicSpline(knots, p, axis=-1, bc_type="natural")(u)
            ref[..., np.abs(u) > 0.5 + 1e-12] = 0.0  # compact support
            ker = layer.kernel(fs).detach().double().numpy()
            own = p @ natural_spline_basis(knots, u).T
            err = max(float(np.abs(ker - ref).max()), float(np.abs(own - ref).max()))
            max_err = max(max_err, err)
            n_taps = kernel_length(cfg.duration_s, fs)
            base = max(1, round(cfg.duration_s * fs))
            n_even += int(n_taps % 2 == 0)
            n_bad_len += int(n_taps not in (base, base + 1) or ker.shape[-1] != n_taps)
            rows.append({"spacing": spacing, "fs_hz": fs, "taps": n_taps, "max_abs_err": err})
    return Outcome(
        metrics={"max_abs_err": max_err, "n_even_kernels": n_even, "n_bad_lengths": n_bad_len},
        checks=[
            Check("max_abs_err_vs_scipy", max_err, "< 1e-6"),
            Check("n_even_kernels", n_even, "== 0", paper="0 (always odd)"),
            Check("n_bad_lengths", n_bad_len, "== 0", paper="0"),
        ],
        tables={"per_rate": rows},
    )
