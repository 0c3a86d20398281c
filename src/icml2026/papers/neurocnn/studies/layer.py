"""Criterion 2: a spline-conv layer converges to the continuous convolution; Fourier pooling invariance."""

from __future__ import annotations

import numpy as np
import torch
from scipy.integrate import simpson

from icml2026.core import Check, Outcome, spawn, torch_generator
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, resolve_device
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track

from ..pooling import FourierProjectionPool
from ..spline_conv import SplineConv1d, natural_spline_basis
from ._limits import _RATE_HI, _RATE_LO, _check_model_sizes

__all__ = ["LayerInvarianceConfig", "layer_invariance"]


@config
class LayerInvarianceConfig:
    rates: tuple[float, ...] = param((80, 90, 100, 128, 200, 300, 500, 1000), _RATE_LO, _RATE_HI, min_len=1,
                                     max_len=32)
    ref_fs: float = param(4000.0, 100.0, 20_000.0, help="brief: 4 kHz reference; above every rate")
    # Deviation: the brief gives one number per rate; we check the median over many random (layer, signal)
    # draws, so that the verdict does not depend on one draw (single draws straddle the brief's bounds: about
    # one in five fails at 80 Hz); mean, 10th and 90th percentiles and the fraction of failing draws are reported.
    n_draws: int = param(256, 1, 4096, help="random (layer, signal) draws; quick 256, full 1024")
    n_sines: int = param(5, 1, 64)
    f_max: float = param(18.0, 0.5, 1000.0, help="Hz, brief: sinusoids <= 18 Hz")
    window_s: float = param(10.0, 1.0, 120.0)
    trim_s: float = param(0.5, 0.0, 60.0, help="less than half of window_s")
    n_knots: int = param(15, 2, 100)
    duration_s: float = param(0.5, 0.01, 5.0)
    pool_modes: int = param(16, 1, 256)
    pool_segment_s: float = param(2.0, 0.1, 60.0)
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.ref_fs <= max(self.rates):
            raise ValueError(f"rates = {self.rates}: must lie below ref_fs ({self.ref_fs:g} Hz)")
        if 2 * self.trim_s >= self.window_s:
            raise ValueError(f"trim_s = {self.trim_s}: must be less than half of window_s ({self.window_s})")
        _check_model_sizes(self, (1000.0,), "pool_modes", "pool_segment_s", attention=False)  # pooled at 1 kHz
        if self.n_sines * self.ref_fs * self.window_s > 20_000_000:
            raise ValueError(f"n_sines = {self.n_sines}: {self.n_sines} sinusoids over {self.window_s} s at "
                             f"{self.ref_fs:g} Hz exceed 20,000,000 samples")
        work = self.n_draws * self.n_sines * (self.ref_fs + sum(self.rates)) * self.window_s
        if work > 4e10:
            raise ValueError(f"n_draws = {self.n_draws}: {self.n_draws} draws of {self.n_sines} sinusoids over "
                             f"{self.window_s} s at every rate exceed 4e10 samples; use fewer draws")


def _sines(amp: np.ndarray, freq: np.ndarray, phase: np.ndarray, fs: float, window_s: float) -> torch.Tensor:
    t = np.arange(int(round(window_s * fs))) / fs
    x = (amp[..., None] * np.cos(2 * np.pi * freq[..., None] * t + phase[..., None])).sum(-2)
    return torch.as_tensor(x[None], dtype=torch.float32)


def _layer_bound(fs: float) -> float | None:
    """The brief's bound at ``fs``: <= 10% at 80-128 Hz, <= 4% at 200 Hz, <= 2% at >= 500 Hz (else none).

    90 Hz is shown for the spacing comparison only (its taps fall on the 4 kHz grid unevenly)."""
    if 80 <= fs <= 128 and fs != 90:
        return 0.10
    if fs == 200:
        return 0.04
    if fs >= 500:
        return 0.02
    return None


def _exact_response(control: np.ndarray, duration_s: float, amp: np.ndarray, freq: np.ndarray, phase: np.ndarray,
                    t: np.ndarray, n_grid: int = 4001) -> np.ndarray:
    """The continuous convolution ``y_o(t) = int w_oc(s) x_c(t + s) ds`` of a sum of sinusoids, in closed form.

    ``x_c(t) = sum_k a_ck cos(2 pi f_ck t + phi_ck)`` gives ``y_o(t) = sum_ck Re[a_ck W_oc(f_ck)
    exp(i (2 pi f_ck t + phi_ck))]`` with ``W_oc(f) = D int_{-1/2}^{1/2} w_oc(u) exp(i 2 pi f D u) du``, the
    natural spline ``w_oc`` through the control values at ``linspace(-0.5, 0.5, K)``; the integral by Simpson's
    rule on ``n_grid`` points (the integrand is a cubic times at most f_max D = 9 periods: error < 1e-10).

    Parameters
    ----------
    control : (C_out, C_in, K) control values P.  amp, freq, phase : (C_in, n_sines).  t : (T,) times in s.

    Returns
    -------
    (C_out, T) output, no edge effects (the layer's zero padding is outside the trimmed times it is compared on).
    """
    u = np.linspace(-0.5, 0.5, n_grid)
    w = control @ natural_spline_basis(np.linspace(-0.5, 0.5, control.shape[-1]), u).T  # (C_out, C_in, G)
    osc = np.exp(2j * np.pi * freq[..., None] * duration_s * u)  # (C_in, n_sines, G)
    big_w = duration_s * simpson(w[:, :, None, :] * osc[None], x=u, axis=-1)  # (C_out, C_in, n_sines)
    phasor = amp[..., None] * np.exp(1j * (2 * np.pi * freq[..., None] * t + phase[..., None]))  # (C_in, n_sines, T)
    return np.einsum("ock,ckt->ot", big_w, phasor).real


def _convergence_order(rates: np.ndarray, errors: np.ndarray) -> float:
    """``p`` of the least-squares fit ``log err = c - p log fs`` (1 for a first-order discretisation)."""
    slope = np.polyfit(np.log(rates), np.log(errors), 1)[0]
    return float(-slope)


def layer_invariance(cfg: LayerInvarianceConfig, rng: np.random.Generator) -> Outcome:
    device = resolve_device(cfg.device)
    errs = {sp: np.zeros((cfg.n_draws, len(cfg.rates))) for sp in ("exact", "released")}
    ref_errs = np.zeros(cfg.n_draws)  # the reference's own distance from the continuous convolution

    def sines(amp: np.ndarray, freq: np.ndarray, phase: np.ndarray, fs: float) -> torch.Tensor:
        return _sines(amp, freq, phase, fs, cfg.window_s).to(device)  # drawn and summed on the CPU, then moved

    for d, child in enumerate(track(spawn(rng, cfg.n_draws), "random layers", total=cfg.n_draws)):
        # initialised on the CPU from the draw's generator, then moved: CPU results do not depend on the device
        layer = SplineConv1d(2, 3, cfg.n_knots, cfg.duration_s, generator=torch_generator(child)).to(device)
        amp = child.standard_normal((2, cfg.n_sines))
        freq = child.uniform(0.5, cfg.f_max, (2, cfg.n_sines))
        phase = child.uniform(0, 2 * np.pi, (2, cfg.n_sines))
        with torch.no_grad():
            layer.spacing = "exact"
            y_ref_dev, _ = layer(sines(amp, freq, phase, cfg.ref_fs), cfg.ref_fs)
            y_ref = y_ref_dev.cpu()
            t_ref = np.arange(y_ref.shape[-1]) / cfg.ref_fs
            inner = (t_ref >= cfg.trim_s) & (t_ref <= cfg.window_s - cfg.trim_s)
            exact = _exact_response(layer.control.detach().cpu().double().numpy(), cfg.duration_s, amp, freq, phase,
                                    t_ref[inner])
            ref_errs[d] = np.linalg.norm(y_ref[0].numpy()[:, inner] - exact) / np.linalg.norm(exact)
            for spacing in ("exact", "released"):
                layer.spacing = spacing
                for j, fs in enumerate(cfg.rates):
                    y_dev, _ = layer(sines(amp, freq, phase, fs), fs)
                    y = y_dev.cpu()
                    t = np.arange(y.shape[-1]) / fs
                    keep = (t >= cfg.trim_s) & (t <= cfg.window_s - cfg.trim_s)
                    ref = np.stack([np.interp(t[keep], t_ref, y_ref[0, o].numpy()) for o in range(3)])
                    errs[spacing][d, j] = np.linalg.norm(y[0].numpy()[:, keep] - ref) / np.linalg.norm(ref)
    med = {sp: np.median(e, axis=0) for sp, e in errs.items()}
    mean = {sp: e.mean(axis=0) for sp, e in errs.items()}
    p10, p90 = np.percentile(errs["exact"], [10, 90], axis=0)
    # Fourier pooling of one smooth function at 100 vs 1000 Hz
    pool = FourierProjectionPool(cfg.pool_modes, cfg.pool_segment_s).to(device)
    amp = rng.standard_normal((4, 3))
    freq = rng.uniform(0.1, 3.0, (4, 3))
    phase = rng.uniform(0, 2 * np.pi, (4, 3))
    tok = {fs: pool(sines(amp, freq, phase, fs), fs)[0].cpu() for fs in (100.0, 1000.0)}
    pool_err = float(torch.linalg.norm(tok[100.0] - tok[1000.0]) / torch.linalg.norm(tok[1000.0]))

    metrics: dict[str, float] = {"pool_rel_err_100_vs_1000": pool_err}
    rows = []
    checks = []
    for j, fs in enumerate(cfg.rates):
        bound = _layer_bound(fs)
        fail_frac = float(np.mean(errs["exact"][:, j] > bound)) if bound is not None else float("nan")
        metrics[f"rel_l2_exact_{fs:g}hz"] = float(med["exact"][j])
        metrics[f"rel_l2_released_{fs:g}hz"] = float(med["released"][j])
        metrics[f"rel_l2_exact_mean_{fs:g}hz"] = float(mean["exact"][j])
        metrics[f"rel_l2_exact_p90_{fs:g}hz"] = float(p90[j])
        if bound is not None:
            metrics[f"draws_above_bound_{fs:g}hz"] = fail_frac
        rows.append(
            {
                "fs_hz": fs,
                "exact_median": float(med["exact"][j]),
                "exact_mean": float(mean["exact"][j]),
                "exact_p10": float(p10[j]),
                "exact_p90": float(p90[j]),
                "draws_above_bound": fail_frac,
                "released_median": float(med["released"][j]),
                "released_mean": float(mean["released"][j]),
            }
        )
        # Fails for taps that do not sample the kernel at 1/fs (the released linspace taps at 90 Hz, where
        # D * fs is not an integer: median 0.15 against 0.007 exact) or a layer that does not converge.
        if bound is not None:
            checks.append(Check(f"rel_l2_exact_{fs:g}hz", med["exact"][j], f"<= {bound}"))
    # 90 Hz divides the 4 kHz reference grid unevenly and is shown for the spacing comparison only.
    trend = [j for j in np.argsort(cfg.rates) if cfg.rates[j] != 90]
    exact_sorted = [med["exact"][j] for j in trend]
    n_increases = int(sum(b > a for a, b in zip(exact_sorted[:-1], exact_sorted[1:], strict=True)))
    metrics["n_increases_exact"] = n_increases
    checks.append(Check("n_increases_with_fs_exact", n_increases, "== 0", paper="decreasing"))
    if len(trend) >= 3:
        # The order of convergence: ~1 for the 1/fs Riemann sum (measured 1.1); fails for a layer that does
        # not converge (order ~0) or whose error grows with fs.
        order = _convergence_order(np.array(cfg.rates, dtype=float)[trend], np.array(exact_sorted))
        metrics["convergence_order_exact"] = order
        checks.append(Check("convergence_order_exact", order, ">= 0.7"))
    checks.append(Check("pool_rel_err_100_vs_1000", pool_err, "< 0.02"))
    # Precondition: the sampled reference is close to the continuous convolution it stands for (closed form for
    # sums of sinusoids), within a quarter of the tightest bound checked (2% at >= 500 Hz), so that no bound or
    # trend is decided by the reference's own discretisation (expected ~0.12% at 4 kHz from the 1/fs order)
    ref_med = float(np.median(ref_errs))
    metrics["reference_rel_l2_vs_exact"] = ref_med
    metrics["reference_rel_l2_vs_exact_max"] = float(ref_errs.max())
    checks.append(Check("reference_rel_l2_vs_exact", ref_med, "<= 0.005", paper="(precondition: closed form)",
                        role="precondition"))

    fig, ax = new_figure(
        "Spline-conv layer vs 4 kHz reference",
        "sampling rate fs (Hz)",
        f"relative L2 error (median, 10-90% band over {cfg.n_draws} draws)",
        logx=True,
        logy=True,
    )
    rates = np.array(cfg.rates, dtype=float)
    order_idx = np.argsort(rates)
    ax.fill_between(rates[order_idx], p10[order_idx], p90[order_idx], alpha=0.2, label="exact, 10-90%")
    ax.plot(rates[order_idx], med["exact"][order_idx], "o-", label="exact 1/fs taps")
    ax.plot(rates[order_idx], med["released"][order_idx], "s--", label="released linspace taps")
    if 100 in cfg.rates:
        ax.plot(rates[order_idx], med["exact"][list(cfg.rates).index(100)] * 100 / rates[order_idx], ":",
                color="gray", label="~1/fs")
    ax.legend()
    return Outcome(
        metrics=metrics, checks=checks, figures={"layer_error_vs_rate": fig}, tables={"per_rate": rows}
    )
