"""Stochastic-gradient Langevin dynamics (SGLD) for the Gibbs posterior of a torch model.

Target density on the weights theta (brief, "Sampler"):
``Q_beta(theta) ∝ exp(-beta L_S(theta)) N(theta; 0, s^2 I)``. One SGLD step (Welling & Teh 2011) with
the minibatch gradient of the mean loss:

    theta <- theta - (lr/2) (grad L_B(theta) + theta / (s^2 beta)) + sqrt(lr / beta) xi,   xi ~ N(0, I),

which is the unadjusted Langevin algorithm (ULA, full batch) with step ``h = lr / (2 beta)`` for the
potential ``beta L_S(theta) + ||theta||^2 / (2 s^2)``. Burn-in follows the official code: run until the
exponential moving average (EMA) of the minibatch loss stops decreasing and at least ``min_burn_in``
steps; then run as many steps again and average the evaluation metrics over the iterates (ergodic
average).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from icml2026.core.config import config, param
from icml2026.core.progress import track

__all__ = ["SGLDConfig", "ChainResult", "ChainDivergedError", "sgld_update", "sgld_step", "run_sgld_chain"]


class ChainDivergedError(RuntimeError):
    """The chain's weights became NaN or infinite (step size too large for the target's curvature)."""


@config
class SGLDConfig:
    """Hyper-parameters of one SGLD chain.

    Attributes
    ----------
    lr : learning rate ``lr`` of the update (official: 0.01 for MNIST with the raw bounded BCE).
    prior_std : prior standard deviation ``s`` (paper: 5).
    batch_size : minibatch size (paper: 100); ``>= n_train`` gives full-batch ULA.
    min_burn_in : minimum burn-in steps (paper: 2000).
    max_burn_in : cap on the burn-in length.
    ema_smoothing : EMA weight of the newest minibatch loss (paper: 0.00025).
    ema_tol : burn-in ends once the EMA increment is ``>= -ema_tol`` (paper: 1e-7).
    eval_every : evaluate the metrics every this many sampling steps (paper: every step).
    """

    # Ranges: what the update is defined for, with sizes capped at 10^6 steps (hours of CPU per chain);
    # experiment configs narrow them to what runs in minutes.
    lr: float = param(0.01, 0.0, 100.0, lo_open=True)
    prior_std: float = param(5.0, 0.0, 1e4, lo_open=True)
    batch_size: int = param(100, 1, 10**6)
    min_burn_in: int = param(2000, 1, 10**6)
    max_burn_in: int = param(20000, 1, 10**6)  # Deviation: the official code has no cap; this bounds CPU time.
    ema_smoothing: float = param(0.00025, 0.0, 1.0, lo_open=True)
    ema_tol: float = param(1e-7, 0.0, 1.0)
    eval_every: int = param(1, 1, 10**6)

    def __post_init__(self) -> None:
        if self.min_burn_in > self.max_burn_in:
            raise ValueError(f"min_burn_in = {self.min_burn_in}: must be <= max_burn_in ({self.max_burn_in})")


@dataclass(frozen=True)
class ChainResult:
    """Ergodic averages of one chain.

    Attributes
    ----------
    beta : inverse temperature of the target.
    averages : metric name -> average over the evaluated sampling iterates.
    n_burn_in : burn-in steps taken; n_sample_steps : sampling steps; n_evals : evaluations averaged.
    """

    beta: float
    averages: dict[str, float]
    n_burn_in: int
    n_sample_steps: int
    n_evals: int


def sgld_update(
    theta: torch.Tensor, grad: torch.Tensor, noise: torch.Tensor, *, lr: float, beta: float, prior_std: float
) -> torch.Tensor:
    """The SGLD update of the brief:
    ``theta - (lr/2) (grad + theta / (s^2 beta)) + sqrt(lr / beta) noise`` (any shape; returns a new tensor).
    """
    if not (beta > 0 and math.isfinite(beta)):
        raise ValueError(f"SGLD needs a finite beta > 0 (beta = 0 is the prior; sample it directly), got {beta}")
    if not (lr > 0 and math.isfinite(lr)):
        raise ValueError(f"lr must be a positive finite number, got {lr}")
    if not (prior_std > 0 and math.isfinite(prior_std)):
        raise ValueError(f"prior_std must be a positive finite number, got {prior_std}")
    if not theta.shape == grad.shape == noise.shape:
        raise ValueError(
            f"theta, grad and noise need one shape, got {tuple(theta.shape)}, {tuple(grad.shape)}, "
            f"{tuple(noise.shape)}"
        )
    return theta - (lr / 2.0) * (grad + theta / (prior_std**2 * beta)) + math.sqrt(lr / beta) * noise


def sgld_step(
    params: Sequence[torch.Tensor], *, lr: float, beta: float, prior_std: float, generator: torch.Generator
) -> None:
    """Apply :func:`sgld_update` in place to every parameter, using its ``.grad`` and fresh noise."""
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                raise ValueError("a parameter has no gradient; call backward() before sgld_step")
            # The noise is drawn from the (CPU) generator and moved to the parameter's device: the same stream
            # on every device; on the CPU ``.to`` is a no-op (results unchanged bit for bit).
            noise = torch.randn(p.shape, generator=generator, dtype=p.dtype).to(p.device)
            p.copy_(sgld_update(p, p.grad, noise, lr=lr, beta=beta, prior_std=prior_std))


def run_sgld_chain(
    params: Sequence[torch.Tensor],
    minibatch_loss: Callable[[torch.Tensor], torch.Tensor],
    n_train: int,
    beta: float,
    cfg: SGLDConfig,
    generator: torch.Generator,
    evaluate: Callable[[], dict[str, float]],
) -> ChainResult:
    """Run one SGLD chain targeting ``Q_beta`` and return ergodic averages of ``evaluate()``.

    Parameters
    ----------
    params : the leaf tensors (``requires_grad=True``) that are the weights theta.
    minibatch_loss : maps an index tensor of shape (b,) to the scalar mean loss ``L_B(theta)`` on those
        training examples.
    n_train : number of training examples; minibatches are consecutive slices of a fresh random
        permutation each epoch (sampling without replacement, as a shuffled data loader does).
    beta : inverse temperature (> 0).
    cfg : :class:`SGLDConfig`.
    generator : the torch generator for the permutations and the Langevin noise.
    evaluate : called (under ``torch.no_grad``) every ``cfg.eval_every`` sampling steps; returns the
        metrics to average (e.g. full-sample train loss, train/test 0-1 error).
    """
    if n_train < 1:
        raise ValueError(f"n_train must be >= 1, got {n_train}")
    params = list(params)
    batch = min(cfg.batch_size, n_train)
    perm = torch.randperm(n_train, generator=generator)
    pos = 0

    def one_step() -> float:
        nonlocal perm, pos
        if pos + batch > n_train:
            perm = torch.randperm(n_train, generator=generator)
            pos = 0
        idx = perm[pos : pos + batch]
        pos += batch
        for p in params:
            p.grad = None
        loss = minibatch_loss(idx)
        loss.backward()
        sgld_step(params, lr=cfg.lr, beta=beta, prior_std=cfg.prior_std, generator=generator)
        if not all(bool(torch.isfinite(p).all()) for p in params):
            raise ChainDivergedError(
                f"SGLD at beta = {beta:g} diverged (non-finite weights) with lr = {cfg.lr:g}, "
                f"prior_std = {cfg.prior_std:g}"
            )
        return float(loss.detach())

    # Burn-in: EMA rule of the official code.
    ema = one_step()
    n_burn = 1  # stays 1 when max_burn_in = 1 (the loop does not run)
    burn_steps = range(2, cfg.max_burn_in + 1)
    for n_burn in track(burn_steps, f"SGLD beta = {beta:g}, burn-in", total=len(burn_steps)):
        loss = one_step()
        increment = cfg.ema_smoothing * (loss - ema)
        ema += increment
        if n_burn >= cfg.min_burn_in and increment >= -cfg.ema_tol:
            break

    # Sampling: as many steps again, ergodic average of the evaluations.
    n_sample = n_burn
    sums: dict[str, float] = {}
    n_evals = 0
    for t in track(range(1, n_sample + 1), f"SGLD beta = {beta:g}, sampling", total=n_sample):
        one_step()
        if t % cfg.eval_every == 0 or (t == n_sample and n_evals == 0):
            with torch.no_grad():
                vals = evaluate()
            for k, v in vals.items():
                sums[k] = sums.get(k, 0.0) + float(v)
            n_evals += 1
    return ChainResult(
        beta=float(beta),
        averages={k: v / n_evals for k, v in sums.items()},
        n_burn_in=n_burn,
        n_sample_steps=n_sample,
        n_evals=n_evals,
    )
