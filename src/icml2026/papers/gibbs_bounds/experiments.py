"""Registered experiments of P19 (Maurer, Mirzaei & Pontil, arXiv:2510.06028).

* ``gibbs_bounds.finite_class``: the exact finite-class check of the KL identity and of the bound's
  validity (Gibbs posterior by enumeration).
* ``gibbs_bounds.langevin_bounds``: SGLD over a doubling beta grid, true and random labels, the
  uncalibrated (lam = 1) and the calibrated bound against beta.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, resolve_device
from icml2026.core.errors import BadInput
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track
from icml2026.core.validate import finite_number

from .bounds import bound_curve, calibrate_lambda, gibbs_kl, pac_bayes_kl_bound
from .data import (
    BinaryTask,
    digits_binary_task,
    mnist1d_binary_task,
    randomize_labels,
    real_mnist1d_binary_task,
)
from .finite import (
    exact_gibbs_kl,
    gibbs_expected_curve,
    make_finite_linear_problem,
    sample_empirical_risks,
)
from .folder import check_model_spec, load_folder_task, model_factory
from .langevin import GridRow, run_beta_grid
from .sampler import ChainDivergedError, SGLDConfig
from .stability import exact_gibbs_linear, make_linear_sigmoid_problem, ula_linear_chains

__all__ = [
    "FiniteClassConfig",
    "LangevinBoundsConfig",
    "LangevinStabilityConfig",
    "finite_class",
    "langevin_bounds",
    "langevin_stability",
    "nonequilibrium_betas",
]


# ---------------------------------------------------------------------------------------------------
# Exact finite class
# ---------------------------------------------------------------------------------------------------


_MAX_CLASS_CELLS = 2 * 10**7  # hypotheses x domain points: the (H, P) prediction table (~160 MB as float64)


def _check_grid_from_zero(name: str, betas: tuple[float, ...]) -> None:
    b = np.asarray(betas, dtype=float)
    if b[0] != 0.0 or np.any(np.diff(b) <= 0):
        raise ValueError(f"{name} must start at 0 and be strictly increasing, got {betas}")


@config
class FiniteClassConfig:
    n_angles: int = param(50, 1, 1000, help="classifier angles; 50 x 40 = 2,000 linear classifiers (brief)")
    n_offsets: int = param(40, 1, 1000, help="classifier offsets")
    grid_size: int = param(20, 1, 200, help="domain grid side (400 points)")
    eta: float = param(0.1, 0.0, 0.5, hi_open=True, help="label noise")
    n_train: int = param(100, 1, 5000, help="training sample size")
    identity_betas: tuple[float, ...] = param(
        (1.0, 10.0, 100.0, 1000.0),
        0.0,
        1e5,
        lo_open=True,
        min_len=1,
        max_len=20,
        help="betas of the KL identity check (brief)",
    )
    n_quad: int = param(30000, 2, 10**6, help="trapezoid points (quadratically spaced); see tests")
    n_repeats: int = param(500, 1, 10_000, help="resampled training sets (brief: 500)")
    delta: float = param(0.05, 0.0, 1.0, lo_open=True, hi_open=True, help="confidence (brief: 0.05)")
    bound_betas: tuple[float, ...] = param(
        (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0),
        0.0,
        1e5,
        min_len=2,
        max_len=50,
        help="beta grid of the bound (starts at 0, increasing)",
    )

    def __post_init__(self) -> None:
        cells = self.n_angles * self.n_offsets * self.grid_size**2
        if cells > _MAX_CLASS_CELLS:
            raise ValueError(
                f"n_angles = {self.n_angles}: n_angles x n_offsets x grid_size^2 = {cells:,} exceeds "
                f"{_MAX_CLASS_CELLS:,} (the prediction table)"
            )
        _check_grid_from_zero("bound_betas", self.bound_betas)


@experiment(
    "gibbs_bounds.finite_class",
    claim="KL(Q_beta||pi) equals the integral of expected training losses over inverse temperature, "
    "and the resulting PAC-Bayes-kl bound holds with probability >= 1 - delta",
    presets={
        "quick": FiniteClassConfig(n_repeats=200, n_quad=30000),
        "full": FiniteClassConfig(n_repeats=2000, n_quad=100000),
        # smoke: the same code path in a few seconds (contract and CLI tests); its checks may fail.
        "smoke": FiniteClassConfig(n_angles=10, n_offsets=8, n_repeats=20, n_quad=2000),
    },
)
def finite_class(cfg: FiniteClassConfig, rng: np.random.Generator) -> Outcome:
    t0 = time.perf_counter()
    prob = make_finite_linear_problem(cfg.n_angles, cfg.n_offsets, cfg.grid_size, cfg.eta)
    # 1. identity, on one training sample
    emp = sample_empirical_risks(prob, cfg.n_train, rng)
    id_err = 0.0
    left_minus_exact = math.inf
    for beta in cfg.identity_betas:
        grid = beta * np.linspace(0.0, 1.0, cfg.n_quad) ** 2
        ex = gibbs_expected_curve(emp, emp, grid)
        exact = exact_gibbs_kl(emp, beta)
        id_err = max(id_err, abs(gibbs_kl(grid, ex, rule="trapezoid")[-1] - exact))
        coarse = np.concatenate([[0.0], np.geomspace(beta / 64, beta, 7)])  # a doubling grid
        left = gibbs_kl(coarse, gibbs_expected_curve(emp, emp, coarse))[-1]
        left_minus_exact = min(left_minus_exact, left - exact)
    # 3. validity over resampled training sets (exact KL and left-Riemann KL with exact expectations)
    b = np.asarray(cfg.bound_betas, dtype=float)
    holds_exact = np.zeros((cfg.n_repeats, b.size), dtype=bool)
    holds_left = np.zeros((cfg.n_repeats, b.size), dtype=bool)
    bound_values = np.zeros((cfg.n_repeats, b.size))
    train_below = 0
    for r, sub in enumerate(track(spawn(rng, cfg.n_repeats), "repeats", total=cfg.n_repeats)):
        e = sample_empirical_risks(prob, cfg.n_train, sub)
        lbar = gibbs_expected_curve(e, e, b)
        risk = gibbs_expected_curve(prob.true_risk, e, b)
        kls = np.array([exact_gibbs_kl(e, x) for x in b])
        kls_left = np.maximum(gibbs_kl(b, lbar), 0.0)
        bound_values[r] = _kl_bounds(lbar, kls, cfg.n_train, cfg.delta)
        holds_exact[r] = bound_values[r] >= risk
        holds_left[r] = np.array(_kl_bounds(lbar, kls_left, cfg.n_train, cfg.delta)) >= risk
        train_below += int(lbar[-1] < risk[-1])
    rate_exact = float(np.mean(np.all(holds_exact, axis=1)))
    rate_left = float(np.mean(np.all(holds_left, axis=1)))
    train_rate = train_below / cfg.n_repeats
    # the bound is informative: a vacuous bound (near 1) holds whatever the posterior, so its holding rate
    # would say nothing; its smallest mean over the betas must be below 1/2 (the risk of a coin flip)
    bound_min_mean = float(bound_values.mean(axis=0)[1:].min()) if b.size > 1 else float(bound_values.mean())
    # figure: one sample's exact KL vs left-Riemann estimate
    kl_exact = np.array([exact_gibbs_kl(emp, x) for x in b])
    kl_left = gibbs_kl(b, gibbs_expected_curve(emp, emp, b))
    fig, ax = new_figure("Finite class: KL(Q_beta || pi)", "beta", "KL (nats)", logx=True)
    ax.plot(b[1:], kl_exact[1:], "o-", label="exact (enumeration)")
    ax.plot(b[1:], kl_left[1:], "s--", label="left-Riemann integral (doubling grid)")
    ax.legend()
    return Outcome(
        metrics={
            "identity_max_abs_err": id_err,
            "left_riemann_minus_exact_min": left_minus_exact,
            "bound_holds_rate_exact_kl": rate_exact,
            "bound_holds_rate_left_riemann": rate_left,
            "train_error_below_risk_rate": train_rate,
            "exact_kl_bound_min_mean": bound_min_mean,
        },
        checks=[
            Check("identity_max_abs_err", id_err, "< 1e-6", paper="exact identity"),
            Check("left_riemann_minus_exact_min", left_minus_exact, ">= 0", paper="over-estimate"),
            Check("bound_holds_rate_exact_kl", rate_exact, f">= {1 - cfg.delta}", paper=f">= {1 - cfg.delta}"),
            Check("bound_holds_rate_left_riemann", rate_left, f">= {1 - cfg.delta}"),
            Check("exact_kl_bound_min_mean", bound_min_mean, "< 0.5", paper="non-trivial bound",
                  role="precondition"),
        ],
        figures={"finite_kl": fig},
        timings={"total_s": time.perf_counter() - t0},
    )


def _kl_bounds(train: np.ndarray, kls: np.ndarray, n: int, delta: float) -> list[float]:
    return [pac_bayes_kl_bound(float(p), float(k), n, delta) for p, k in zip(train, kls, strict=True)]


# ---------------------------------------------------------------------------------------------------
# Langevin bounds
# ---------------------------------------------------------------------------------------------------


def _doubling(first: float, count: int) -> tuple[float, ...]:
    return (0.0,) + tuple(first * 2.0**k for k in range(count))


_DIGITS_MAX_TRAIN = 1795  # 1797 bundled images, at least 2 left for the test set


@config
class LangevinBoundsConfig:
    # Bounds: sizes are capped where one chain still takes minutes on a CPU (steps x width x n).
    dataset: str = param(
        "digits",
        choices=("digits", "mnist1d", "mnist1d_real"),
        help="'digits' (quick), 'mnist1d' (our MNIST-1D-style generator, full) or 'mnist1d_real' (the mnist1d "
        "package's generator, offline; preset full_mnist1d_real); paper: MNIST, CIFAR-10, SVHN",
    )
    n_train: int = param(
        600,
        2,
        10_000,
        help="paper: 8000; brief: 4000 (mnist1d), ~1200 (digits); "
        "digits <= 1795, mnist1d even. Deviation: quick 600, see card",
    )
    n_test: int = param(4000, 2, 20_000, help="mnist1d only, even (digits: the remaining images)")
    width: int = param(64, 1, 1024, help="hidden width; paper: 1000 (MNIST); brief CPU plan: 512 or 256")
    n_hidden: int = param(2, 0, 4, help="hidden layers; paper: 2")
    # raw-BBCE units; paper: {0, 500, 1000, ..., 64000}. Quick: a quadrupling grid to save chains.
    betas: tuple[float, ...] = param(
        (0.0, 50.0, 200.0, 800.0, 3200.0, 12800.0),
        0.0,
        1e7,
        min_len=2,
        max_len=24,
        help="beta grid (starts at 0, increasing)",
    )
    lr: float = param(1.0, 0.0, 10.0, lo_open=True, help="SGLD step; paper: 0.01 (MNIST). Deviation: larger")
    prior_std: float = param(5.0, 1e-3, 1e3, help="prior standard deviation; paper: 5")
    batch_size: int = param(100, 1, 10_000, help="minibatch; paper: 100")
    min_burn_in: int = param(300, 1, 20_000, help="paper: 2000")
    max_burn_in: int = param(300, 1, 20_000, help="Deviation: cap (paper: none)")
    ema_smoothing: float = param(0.00025, 0.0, 1.0, lo_open=True, help="paper: 0.00025")
    eval_every: int = param(10, 1, 20_000, help="paper: 1. Deviation: thinned ergodic average")
    n_prior_draws: int = param(100, 1, 2000, help="Deviation: paper 1000")
    # l_max > ln 2: the bounded BCE's psi(p) = e^{-l_max} + (1 - 2 e^{-l_max}) p must increase in p.
    l_max: float = param(4.0, 1.0, 50.0, help="loss cap of the bounded BCE; paper: 4")
    delta: float = param(0.01, 0.0, 1.0, lo_open=True, hi_open=True, help="confidence; paper: 0.01")
    lam_range: tuple[float, float] = param((0.1, 100.0), 1e-6, 1e6, help="calibration range; paper")
    lam_tol: float = param(0.01, 1e-6, 10.0, help="bisection tolerance; paper: 0.01")
    kl_decrease_tol: float = param(1.0, 0.0, 1e4, help="nats: a KL decrease beyond it marks non-equilibrium")
    calibrate_on: str = param(
        "equilibrium",
        choices=("equilibrium", "all"),
        help="'equilibrium': calibrate lam only on the random-label betas before the first KL decrease "
        "(a chain out of equilibrium); 'all': every beta",
    )
    checkpoint_dir: str | None = None  # if set: per-beta checkpoints and CSVs are written there
    device: str = param("cpu", help="torch device of the chains: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    data: str = param(
        "",
        help="the user's data instead of `dataset`: a folder (train.npz + test.npz, one .npz, X.npy + y.npy, or "
        "an image folder with one subfolder per class) or one .npz file; see folder.py",
    )
    classes_one: str = param("", help="with data=: comma-separated labels mapped to 1 (default: upper half)")
    model: str = param(
        "mlp",
        help="classifier: 'mlp' (width x n_hidden), 'cnn' (images), or FILE.py:FUNCTION / module:FUNCTION, "
        "a function build(in_shape, generator) -> torch.nn.Module",
    )

    def __post_init__(self) -> None:
        check_device_name(self.device)
        _check_grid_from_zero("betas", self.betas)
        check_model_spec(self.model)
        if self.data:
            if not Path(self.data).exists():
                raise ValueError(f"data = {self.data!r}: no such file or folder")
            for tok in filter(None, self.classes_one.split(",")):
                if not tok.strip().lstrip("-").isdigit():
                    raise ValueError(f"classes_one = {self.classes_one!r}: must be comma-separated integer labels")
        elif self.classes_one:
            raise ValueError("classes_one: only with data= (the shipped data sets have their fixed split)")
        # with data=, n_train and n_test are checked against the folder's contents when it is read
        if not self.data and self.dataset == "digits" and self.n_train > _DIGITS_MAX_TRAIN:
            raise ValueError(f"n_train = {self.n_train}: the digits data allow at most {_DIGITS_MAX_TRAIN}")
        elif not self.data and self.dataset in ("mnist1d", "mnist1d_real"):
            for name in ("n_train", "n_test"):
                if getattr(self, name) % 2:
                    raise ValueError(f"{name} = {getattr(self, name)}: must be even for mnist1d (balanced)")
        if self.lam_range[0] >= self.lam_range[1]:
            raise ValueError(f"lam_range = {self.lam_range}: needs lo < hi")
        self.sgld()  # validates the chain settings (min_burn_in <= max_burn_in)

    def sgld(self) -> SGLDConfig:
        return SGLDConfig(
            lr=self.lr,
            prior_std=self.prior_std,
            batch_size=self.batch_size,
            min_burn_in=self.min_burn_in,
            max_burn_in=self.max_burn_in,
            ema_smoothing=self.ema_smoothing,
            eval_every=self.eval_every,
        )


QUICK = LangevinBoundsConfig()
FULL = LangevinBoundsConfig(
    dataset="mnist1d",
    n_train=4000,
    n_test=4000,
    width=256,
    betas=_doubling(250.0, 10),
    lr=0.5,
    min_burn_in=2000,
    max_burn_in=3000,
    eval_every=50,
    n_prior_draws=100,
)
# Supplementary preset: digits (n = 1200, the brief's size) with the full preset's chains; the beta grid
# is scaled with n as the brief advises (first beta ~ n/16, as 250 for n = 4000 and 500 for n = 8000).
FULL_DIGITS = dataclasses.replace(FULL, dataset="digits", n_train=1200, betas=_doubling(75.0, 10))
# Supplementary preset: the full preset on the mnist1d package's own generator (issue 32; needs `mnist1d`).
FULL_MNIST1D_REAL = dataclasses.replace(FULL, dataset="mnist1d_real")


def nonequilibrium_betas(betas: np.ndarray, mean_train_losses: np.ndarray, tol: float = 1.0) -> np.ndarray:
    """Flag the grid points where the KL estimate decreases: impossible at equilibrium.

    For exact Gibbs posteriors ``d KL(Q_beta || pi) / d beta = -beta d E_Q[L_S] / d beta >= 0``
    (``E_Q L_S`` is non-increasing in beta: its derivative is minus a variance). With the left-Riemann
    identity, ``Gamma_{k+1} - Gamma_k = beta_{k+1} (Lbar_k - Lbar_{k+1})``, so a decrease of the estimate
    is exactly an increase of the measured mean training loss: the chain at ``beta_{k+1}`` has not reached
    its Gibbs posterior. Flagged: a decrease by more than ``max(tol, 5% of Gamma_k)`` from an estimate
    ``Gamma_k > tol``. Near beta = 0 the KL is ~0 and the measured losses (prior draws, short chains)
    fluctuate, so a negative ``Gamma_1`` is noise, not a sign of a chain out of equilibrium; the case of
    issue 32 (9236 -> 5962 nats, -35%) is flagged.

    Returns
    -------
    (K+1,) bool array, True at ``k`` for a flagged decrease from ``k-1`` to ``k`` (never at k = 0).
    """
    tol = finite_number(tol, "tol", lo=0.0)
    gam = gibbs_kl(np.asarray(betas, dtype=float), np.asarray(mean_train_losses, dtype=float))
    prev, nxt = gam[:-1], gam[1:]
    drop = (prev > tol) & (nxt < prev - np.maximum(tol, 0.05 * prev))
    return np.concatenate([[False], drop])


def _equilibrium_mask(flagged: np.ndarray) -> np.ndarray:
    """The betas at which a bound is read: beta > 0 (index 0 is the prior, bound 0.5 by construction) and not
    flagged by :func:`nonequilibrium_betas` (there the KL estimate dropped, so the "bound" is too small)."""
    mask = ~np.asarray(flagged, dtype=bool)
    mask[0] = False
    return mask


def _curves(rows: list[GridRow], cfg: LangevinBoundsConfig, n: int, lam: float) -> np.ndarray:
    # The chains sample exp(-beta BBCE_S) pi with the raw bounded BCE in [0, l_max]; for the normalised loss
    # BBCE / l_max in [0, 1] that is inverse temperature l_max * beta. The product beta * loss in the KL
    # identity is the one of the released code, which records the raw bounded BCE with the raw beta: our
    # lam equals the official lam (no factor l_max).
    b = np.array([r.beta for r in rows]) * cfg.l_max
    lbar = np.array([r.train_loss for r in rows])
    t01 = np.array([r.train01 for r in rows])
    return bound_curve(b, lbar, t01, n, cfg.delta, lam=lam).bound01


@experiment(
    "gibbs_bounds.langevin_bounds",
    claim="Calibrated on random labels, the Gibbs-posterior PAC-Bayes-kl bound computed from SGLD is "
    "non-trivial and above the test error for true labels, and stays >= 1/2 for random labels that "
    "the chains interpolate",
    presets={
        "quick": QUICK,
        "full": FULL,
        "full_digits": FULL_DIGITS,
        "full_mnist1d_real": FULL_MNIST1D_REAL,
        # smoke: the same code path in a few seconds (contract and CLI tests); its checks may fail.
        "smoke": LangevinBoundsConfig(
            n_train=100,
            width=8,
            betas=(0.0, 50.0, 200.0),
            min_burn_in=20,
            max_burn_in=20,
            eval_every=5,
            n_prior_draws=5,
        ),
    },
)
def langevin_bounds(cfg: LangevinBoundsConfig, rng: np.random.Generator) -> Outcome:
    t0 = time.perf_counter()
    device = resolve_device(cfg.device)  # a device this machine lacks: MissingDependency before any work
    data_rng, label_rng, true_rng, rand_rng = spawn(rng, 4)
    factory = None
    if cfg.data:  # the user's data and classifier (issue 68); a bad folder or model is exit status 2
        try:
            task = load_folder_task(
                cfg.data, cfg.n_train, cfg.n_test, data_rng, classes_one=cfg.classes_one, flatten=cfg.model == "mlp"
            )
        except ValueError as exc:
            raise BadInput(str(exc)) from exc
    elif cfg.dataset == "mnist1d":
        task = mnist1d_binary_task(cfg.n_train, cfg.n_test, data_rng)
    elif cfg.dataset == "mnist1d_real":
        task = real_mnist1d_binary_task(cfg.n_train, cfg.n_test, data_rng)
    else:
        task = digits_binary_task(cfg.n_train, data_rng)
    if cfg.model != "mlp":
        try:
            factory = model_factory(cfg.model, tuple(task.x_train.shape[1:]), cfg.width, cfg.n_hidden)
        except ValueError as exc:
            raise BadInput(str(exc)) from exc
    rand_task = randomize_labels(task, label_rng)
    n = task.n_train
    ckpt = Path(cfg.checkpoint_dir) if cfg.checkpoint_dir is not None else None

    def grid(t: BinaryTask, r: np.random.Generator, label: str) -> list[GridRow]:
        return run_beta_grid(
            t,
            cfg.betas,
            width=cfg.width,
            n_hidden=cfg.n_hidden,
            sgld=cfg.sgld(),
            rng=r,
            l_max=cfg.l_max,
            n_prior_draws=cfg.n_prior_draws,
            checkpoint_dir=None if ckpt is None else ckpt / label,
            description=f"{label} labels",
            device=device,
            model_factory=factory,
            model_name=cfg.model,
        )

    try:
        rows_rand = grid(rand_task, rand_rng, "random")
        t_rand = time.perf_counter() - t0
        rows_true = grid(task, true_rng, "true")
        t_true = time.perf_counter() - t0 - t_rand
    except ChainDivergedError as exc:
        # A diverged chain (too large a step for the prior's curvature) leaves no bound to compute: the run
        # is a measured failure, reported as such, not an internal error.
        return Outcome(
            metrics={"chains_diverged": 1.0},
            checks=[Check("chains_diverged", 1.0, "== 0", paper="SGLD samples Q_beta", role="precondition")],
            tables={"divergence": [{"error": str(exc)}]},
            timings={"total_s": time.perf_counter() - t0},
        )

    b = np.array([r.beta for r in rows_rand]) * cfg.l_max  # see _curves
    noneq_rand = nonequilibrium_betas(b, np.array([r.train_loss for r in rows_rand]), cfg.kl_decrease_tol)
    noneq_true = nonequilibrium_betas(b, np.array([r.train_loss for r in rows_true]), cfg.kl_decrease_tol)
    n_cal = b.size
    if cfg.calibrate_on == "equilibrium" and np.any(noneq_rand):
        n_cal = max(int(np.argmax(noneq_rand)), 2)  # betas before the first decrease (at least 0 and one)
    lam = calibrate_lambda(
        b[:n_cal],
        np.array([r.train_loss for r in rows_rand[:n_cal]]),
        np.array([r.train01 for r in rows_rand[:n_cal]]),
        n,
        cfg.delta,
        target=0.5,
        lam_range=cfg.lam_range,
        tol=cfg.lam_tol,
    )
    curves = {
        ("true", "lam1"): _curves(rows_true, cfg, n, 1.0),
        ("true", "cal"): _curves(rows_true, cfg, n, lam),
        ("random", "lam1"): _curves(rows_rand, cfg, n, 1.0),
        ("random", "cal"): _curves(rows_rand, cfg, n, lam),
    }
    kl_true = np.maximum(gibbs_kl(b, np.array([r.train_loss for r in rows_true])), 0.0)
    kl_rand = np.maximum(gibbs_kl(b, np.array([r.train_loss for r in rows_rand])), 0.0)
    te_true = np.array([r.test01 for r in rows_true])
    te_rand = np.array([r.test01 for r in rows_rand])
    n_test = task.x_test.shape[0]

    table = []
    for k in range(len(rows_true)):
        table.append(
            {
                "beta": rows_true[k].beta,
                "true_train01": rows_true[k].train01,
                "true_test01": rows_true[k].test01,
                "true_bound_lam1": curves[("true", "lam1")][k],
                "true_bound_cal": curves[("true", "cal")][k],
                "true_kl": kl_true[k],
                "rand_train01": rows_rand[k].train01,
                "rand_test01": rows_rand[k].test01,
                "rand_bound_lam1": curves[("random", "lam1")][k],
                "rand_bound_cal": curves[("random", "cal")][k],
                "rand_kl": kl_rand[k],
                "true_kl_decreased": float(noneq_true[k]),
                "rand_kl_decreased": float(noneq_rand[k]),
                "used_in_calibration": float(k < n_cal),
            }
        )
    if ckpt is not None:  # the experiment writes files only when asked to
        import csv
        import io

        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(table[0]), lineterminator="\n")
        w.writeheader()
        w.writerows({k: repr(float(v)) for k, v in row.items()} for row in table)
        (ckpt / "bounds.csv").write_text(buf.getvalue())

    true_cal = curves[("true", "cal")]
    rand_cal = curves[("random", "cal")]
    # The true-label bound is read only at betas whose chain is in equilibrium: at a flagged beta the KL
    # estimate has dropped (impossible for the exact posterior), so the bound there is too small and not a
    # bound (the full preset's beta = 128000: KL 10530 -> 5926, bound 0.397 against 0.519-0.540 elsewhere).
    eq_true = _equilibrium_mask(noneq_true)

    def _eq_min(values: np.ndarray) -> float:  # nan (so the checks fail) when every beta > 0 is flagged
        return float(np.min(values[eq_true])) if np.any(eq_true) else math.nan
    metrics = {
        "lam": lam,
        "random_train01_at_max_beta": rows_rand[-1].train01,
        "random_max_abs_test01_minus_half": float(np.max(np.abs(te_rand[1:] - 0.5))),
        # over the betas used in calibration; a beta left out (non-equilibrium) is reported separately
        "random_min_calibrated_bound": float(np.min(rand_cal[1:n_cal])),
        "random_min_cal_bound_all_betas": float(np.min(rand_cal[1:])),
        "random_min_bound_lam1": float(np.min(curves[("random", "lam1")][1:])),
        "random_min_cal_bound_minus_test01": float(np.min(rand_cal[1:] - te_rand[1:])),
        "true_min_calibrated_bound": _eq_min(true_cal),
        "true_min_cal_bound_all_betas": float(np.min(true_cal[1:])),
        "true_min_bound_lam1": _eq_min(curves[("true", "lam1")]),
        "true_min_cal_bound_minus_test01": _eq_min(true_cal - te_true),
        "true_test01_at_best_bound": (
            float(te_true[eq_true][np.argmin(true_cal[eq_true])]) if np.any(eq_true) else math.nan
        ),
        "true_min_test01": float(np.min(te_true[1:])),
        # Equilibrium diagnostic: for exact Gibbs posteriors the KL is non-decreasing in beta; a decrease of
        # the estimate marks a chain out of equilibrium (see nonequilibrium_betas).
        "random_n_kl_decreases": float(np.sum(noneq_rand)),
        "true_n_kl_decreases": float(np.sum(noneq_true)),
        "calibration_max_beta": float(rows_rand[n_cal - 1].beta),
    }
    # sampling noise of a test error estimated on n_test labels: sd <= 1/(2 sqrt(n_test)); 4 sd allows
    # for the maximum over the grid (chance of a false alarm per beta ~6e-5).
    tol_half = 4.0 / (2.0 * math.sqrt(n_test))
    metrics["n_kl_decreases"] = metrics["random_n_kl_decreases"] + metrics["true_n_kl_decreases"]
    lo_lam, hi_lam = cfg.lam_range
    checks = [
        # Preconditions (issue 55): a bound is read only from chains that sample their Gibbs posterior (no
        # decrease of the KL estimate, impossible at equilibrium: see nonequilibrium_betas), that
        # interpolate the random labels (the regime of the paper), and from a calibration that found its
        # lam inside the searched range (at an end, lam is not pinned down by the random-label curve).
        Check("n_kl_decreases", metrics["n_kl_decreases"], "== 0", paper="SGLD samples Q_beta",
              role="precondition"),
        Check(
            "random_train01_at_max_beta", metrics["random_train01_at_max_beta"], "<= 0.1", paper="~0 (interpolation)",
            role="precondition",
        ),
        Check(
            "random_max_abs_test01_minus_half",
            metrics["random_max_abs_test01_minus_half"],
            f"<= {tol_half:.4f}",
            paper="test error 0.5",
        ),
        # random_min_calibrated_bound is reported, not checked: lambda is calibrated so that this curve's minimum
        # is 0.5, so ">= 0.5" held by construction and its verdict was decided by the solver's last bits (0.500).
        Check("lam_inside_range", lam, f"in ({lo_lam:g}, {hi_lam:g})", role="precondition"),
        Check("true_min_calibrated_bound", metrics["true_min_calibrated_bound"], "< 0.5", paper="non-trivial"),
        Check(
            "true_min_cal_bound_minus_test01",
            metrics["true_min_cal_bound_minus_test01"],
            ">= 0",
            paper="bound above test error",
        ),
    ]

    figs = {}
    for label, rows, key in (("true labels", rows_true, "true"), ("random labels", rows_rand, "random")):
        fig, ax = new_figure(
            f"{task.name.split(',')[0]}: {label}", "beta (raw bounded-BCE units)", "0-1 error", logx=True
        )
        bb = np.array([r.beta for r in rows])[1:]
        ax.plot(bb, [r.train01 for r in rows][1:], "o-", label="train error (SGLD)")
        ax.plot(bb, [r.test01 for r in rows][1:], "s-", label="test error (SGLD)")
        ax.plot(bb, curves[(key, "cal")][1:], "^-", label=f"calibrated bound (lam={lam:.2f}), prediction")
        ax.plot(bb, curves[(key, "lam1")][1:], "v--", label="uncalibrated bound (lam=1)")
        ax.axhline(0.5, color="grey", lw=0.8)
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7)
        figs[f"bounds_{key}"] = fig
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures=figs,
        tables={"per_beta": table},
        timings={"random_labels_s": t_rand, "true_labels_s": t_true, "total_s": time.perf_counter() - t0},
    )


# ---------------------------------------------------------------------------------------------------
# Langevin stability against the exact Gibbs posterior (enumerable class)
# ---------------------------------------------------------------------------------------------------


@config
class LangevinStabilityConfig:
    n_train: int = param(60, 2, 2000, help="training sample size")
    prior_std: float = param(1.5, 0.1, 10.0, help="prior standard deviation s")
    eta_noise: float = param(0.1, 0.0, 0.5, hi_open=True, help="label noise of the planted rule")
    beta_max: float = param(128.0, 1.0, 1e4, help="largest beta (betas: linear grid from 0)")
    n_betas: int = param(9, 2, 65, help="points of the linear beta grid (trapezoid rule for the KL)")
    step_etas: tuple[float, ...] = param(
        (1.0, 0.3, 0.1),
        0.0,
        2.0,
        lo_open=True,
        hi_open=True,
        min_len=1,
        max_len=8,
        help="ULA steps relative to the stability limit",
    )
    chain_lengths: tuple[int, ...] = param(
        (100, 500, 2000), 2, 20000, min_len=1, max_len=8, help="chain lengths compared (ergodic average over 2nd half)"
    )
    n_chains: int = param(100, 1, 2000, help="independent chains per beta")
    eval_every: int = param(10, 1, 1000, help="thinning of the ergodic average")
    n_seeds: int = param(3, 1, 20, help="independent training samples (sub-seeds)")
    n_grid: int = param(201, 11, 801, help="theta grid points per axis of the exact enumeration")
    delta: float = param(0.05, 0.0, 1.0, lo_open=True, hi_open=True, help="confidence")

    def __post_init__(self) -> None:
        if any(b <= a for a, b in zip(self.chain_lengths[:-1], self.chain_lengths[1:], strict=False)):
            raise ValueError(f"chain_lengths = {self.chain_lengths}: must be strictly increasing")
        if any(b >= a for a, b in zip(self.step_etas[:-1], self.step_etas[1:], strict=False)):
            raise ValueError(f"step_etas = {self.step_etas}: must be strictly decreasing (coarse to fine)")
        if self.chain_lengths[0] < 2 * self.eval_every:
            raise ValueError(f"chain_lengths[0] = {self.chain_lengths[0]}: needs >= 2 x eval_every ({self.eval_every})")


@experiment(
    "gibbs_bounds.langevin_stability",
    claim="The bounds are stable under approximation with Langevin Monte Carlo: on a class whose Gibbs "
    "posterior is known exactly, ULA estimates of the expected training loss, the KL and the bound converge "
    "to the exact values as the chains lengthen, for every step size below the stability limit",
    presets={
        "quick": LangevinStabilityConfig(),
        "full": LangevinStabilityConfig(
            n_betas=17, step_etas=(1.0, 0.3, 0.1, 0.03), chain_lengths=(100, 500, 2000, 8000), n_chains=200, n_seeds=5
        ),
        # smoke: the same code path in a few seconds (contract and CLI tests); its checks may fail.
        "smoke": LangevinStabilityConfig(
            n_betas=3, step_etas=(1.0,), chain_lengths=(20, 60), n_chains=10, n_seeds=1, n_grid=41, eval_every=5
        ),
    },
)
def langevin_stability(cfg: LangevinStabilityConfig, rng: np.random.Generator) -> Outcome:
    t0 = time.perf_counter()
    betas = np.linspace(0.0, cfg.beta_max, cfg.n_betas)
    n_eta, n_len = len(cfg.step_etas), len(cfg.chain_lengths)
    # errors[seed, eta, length]: max over beta of |ULA - exact|
    err_bound = np.zeros((cfg.n_seeds, n_eta, n_len))
    err_loss = np.zeros_like(err_bound)
    err_kl_rel = np.zeros_like(err_bound)
    margin = np.zeros_like(err_bound)  # min over beta of (ULA bound - exact posterior risk)
    rows = []
    n = cfg.n_train

    def bounds(lbar: np.ndarray, kl: np.ndarray) -> np.ndarray:
        return np.array([pac_bayes_kl_bound(float(a), float(k), n, cfg.delta) for a, k in zip(lbar, kl, strict=True)])

    work = [(s, e) for s in range(cfg.n_seeds) for e in range(n_eta)]
    seeds = spawn(rng, cfg.n_seeds)
    streams = [spawn(g, 1 + n_eta) for g in seeds]
    exact: dict[int, dict[str, np.ndarray]] = {}
    probs = {}
    grid_err = 0.0
    for s, e in track(work, "seeds x step sizes", total=len(work)):
        if s not in exact:
            probs[s] = make_linear_sigmoid_problem(n, streams[s][0], eta=cfg.eta_noise, prior_std=cfg.prior_std)
            exact[s] = exact_gibbs_linear(probs[s], betas, n_grid=cfg.n_grid)
        ex = exact[s]
        b_exact = bounds(ex["train_loss"], ex["kl"])
        if e == 0:  # the reference is converged: the bound from a grid of half the resolution is the same
            coarse = exact_gibbs_linear(probs[s], betas, n_grid=(cfg.n_grid + 1) // 2)
            grid_err = max(grid_err, float(np.max(np.abs(bounds(coarse["train_loss"], coarse["kl"]) - b_exact))))
        res = ula_linear_chains(
            probs[s],
            betas,
            eta=cfg.step_etas[e],
            n_steps=cfg.chain_lengths[-1],
            n_chains=cfg.n_chains,
            rng=streams[s][1 + e],
            eval_every=cfg.eval_every,
        )
        for j, length in enumerate(cfg.chain_lengths):
            win = (res["steps"] > length / 2) & (res["steps"] <= length)
            lbar = np.clip(res["train_loss"][win].mean(axis=0), 0.0, 1.0)
            # KL by the identity (trapezoid over the linear grid) from the ULA averages, as a user would
            kl = np.maximum(gibbs_kl(betas, lbar, rule="trapezoid"), 0.0)
            b_ula = bounds(lbar, kl)
            err_bound[s, e, j] = float(np.max(np.abs(b_ula - b_exact)))
            err_loss[s, e, j] = float(np.max(np.abs(lbar - ex["train_loss"])))
            # relative to the KL at beta_max: the small KLs near beta = 0 would inflate a pointwise ratio
            err_kl_rel[s, e, j] = float(np.max(np.abs(kl - ex["kl"])) / ex["kl"][-1])
            margin[s, e, j] = float(np.min(b_ula - ex["risk"]))
            rows.append(
                {
                    "seed": s,
                    "step_eta": cfg.step_etas[e],
                    "chain_length": length,
                    "max_abs_bound_err": err_bound[s, e, j],
                    "max_abs_train_loss_err": err_loss[s, e, j],
                    "max_rel_kl_err": err_kl_rel[s, e, j],
                    "min_bound_minus_exact_risk": margin[s, e, j],
                    "exact_bound_at_beta_max": float(b_exact[-1]),
                    "ula_bound_at_beta_max": float(b_ula[-1]),
                }
            )
    mean_b = err_bound.mean(axis=0)  # (eta, length)
    metrics = {
        "bound_err_finest_longest_mean": float(mean_b[-1, -1]),
        "bound_err_finest_longest_sd": float(err_bound[:, -1, -1].std()),
        "bound_err_finest_shortest_mean": float(mean_b[-1, 0]),
        "bound_err_longest_max_over_steps": float(np.max(err_bound[:, :, -1])),
        "train_loss_err_longest_max": float(np.max(err_loss[:, :, -1])),
        "kl_rel_err_longest_max": float(np.max(err_kl_rel[:, :, -1])),
        "min_ula_bound_minus_exact_risk": float(np.min(margin[:, :, -1])),
        "exact_kl_at_beta_max_mean": float(np.mean([exact[s]["kl"][-1] for s in exact])),
        "exact_bound_grid_err": grid_err,
    }
    checks = [
        # fails if ULA is biased at the finest step (a wrong gradient or noise scale) or too short chains
        Check(
            "bound_err_finest_longest_mean",
            metrics["bound_err_finest_longest_mean"],
            "< 0.01",
            paper="stable under Langevin approximation",
        ),
        # fails for a step size near the stability limit (e.g. step_etas=(1.9,)) whose bias moves the bound
        Check(
            "bound_err_longest_max_over_steps",
            metrics["bound_err_longest_max_over_steps"],
            "< 0.02",
            paper="stable under Langevin approximation",
        ),
        # fails if the shortest chains had already mixed (then the comparison shows no convergence), or if
        # longer chains did not reduce the error (a sampler not converging to Q_beta)
        Check(
            "bound_err_finest_shortest_over_longest",
            metrics["bound_err_finest_shortest_mean"] / max(metrics["bound_err_finest_longest_mean"], 1e-12),
            ">= 3",
            paper="bound converges with chain length",
        ),
        # fails if the ULA-based KL is far from the exact enumeration (e.g. a wrong identity or beta units)
        Check("kl_rel_err_longest_max", metrics["kl_rel_err_longest_max"], "< 0.1", paper="KL identity"),
        # the bound computed from ULA stays above the exact Gibbs posterior risk (fails for small n_train)
        Check("min_ula_bound_minus_exact_risk", metrics["min_ula_bound_minus_exact_risk"], ">= 0", paper="bound holds"),
        # Preconditions (issue 55). The exact reference is exact: halving the grid moves its bound by less
        # than a tenth of the 0.01 the claims allow ULA. The posterior at beta_max has left the prior (KL >=
        # 1 nat; 6.7-7.0 measured), so that ULA matching it is a test and not ULA matching its start.
        Check("exact_bound_grid_err", grid_err, "< 0.001", role="precondition"),
        Check("exact_kl_at_beta_max_mean", metrics["exact_kl_at_beta_max_mean"], ">= 1", role="precondition"),
    ]
    fig, ax = new_figure(
        "ULA vs exact Gibbs: bound error", "chain length (steps)", "max |bound(ULA) - bound(exact)|", logx=True
    )
    for e, eta in enumerate(cfg.step_etas):
        ax.errorbar(
            cfg.chain_lengths,
            mean_b[e],
            yerr=err_bound[:, e, :].std(axis=0),
            marker="o",
            label=f"step = {eta:g} x stability limit",
        )
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"stability": fig},
        tables={"errors": rows},
        timings={"total_s": time.perf_counter() - t0},
    )
