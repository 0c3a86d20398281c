"""Baselines: the brief's fixed-order construction, and a float32 MLP fitted by Sobolev training.

* :func:`construct_fixed_order` is the brief's "reference construction" (exact cancellation of three
  terms under left-to-right summation).  It is exact for the fixed-order semantics that the paper
  line of work assumes, but its sums have three non-zero terms, so another order (or BLAS) breaks it:
  this is the negative control that makes the order assumption visible.
* :func:`sobolev_fit` is what one would do without the theory: train a standard MLP on values and
  gradients (Sobolev training).  It gets close but is not bit-exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from icml2026.core.validate import as_array, finite_number, positive_int, same_length

from .floats import round_f32
from .losses import PhiLike, phi_seeds, resolve_phi
from .semantics import Layer
from .solver import solve_scaling

__all__ = [
    "construct_fixed_order",
    "layers_to_sequential",
    "output_value_first_orders",
    "SobolevFit",
    "sobolev_fit",
]


def construct_fixed_order(
    xs: np.ndarray, values: np.ndarray, grads: np.ndarray, phi: PhiLike, delta: float
) -> list[Layer]:
    """The brief's reference construction (ReLU, scalar in/out, float32), exact under left-to-right sums.

    Domain: multiples of delta/4 (delta a power of two), spacing >= delta, |x| <= 2^20 delta;
    sigma = 4/delta.  Layer 1 (6K): U, V at centres x_k, x_k + delta/4, x_k - delta/4.  Layer 2 (3K,
    per point in the order q+, q-, s).  Layer 3 (3K): G_k = ReLU(a q+ - a q- + s), Gt_k = ReLU(a q- -
    a q+ + s), S_k = ReLU(s), laid out [G_1, Gt_1, ..., G_K, Gt_K, S_1, ..., S_K].  Output:
    y = sum_k (z_k G_k - z_k Gt_k) + sum_k g_k S_k.  D^AD(phi o f)(x_k) = 4 sigma fl(a fl(rho z)).

    Returns
    -------
    list of reference layers (use :func:`layers_to_sequential` for torch).
    """
    xs = as_array(xs, "xs", ndim=1, dtype=np.float32)
    g = as_array(values, "values", ndim=1, dtype=np.float32)
    h = as_array(grads, "grads", ndim=1, dtype=np.float32)
    same_length(xs=xs, values=g, grads=h)
    k = xs.size
    delta = finite_number(delta, "delta", lo=0.0, lo_open=True)
    if np.log2(delta) != np.round(np.log2(delta)):
        raise ValueError(f"delta must be a power of two, got {delta!r}")
    q = xs.astype(np.float64) / (delta / 4)
    srt = np.sort(xs.astype(np.float64))
    if np.any(q != np.round(q)) or (k > 1 and np.min(np.diff(srt)) < delta) or np.max(np.abs(xs)) > 2**20 * delta:
        raise ValueError("xs must be multiples of delta/4, at least delta apart, within 2^20 delta")
    sigma = 4.0 / delta
    rho = phi_seeds(phi, g)
    z = np.zeros(k)
    a = np.ones(k)
    for i in range(k):
        if h[i] != 0:
            t = round_f32(float(h[i]) / (4 * sigma))
            if t * 4 * sigma != float(h[i]):
                raise ValueError(f"point {i}: h/(4 sigma) is not exact")
            sol = solve_scaling(float(rho[i]), t)
            z[i], a[i] = sol.z, sol.a
    idx = np.arange(k)
    centres = np.stack([xs, xs + delta / 4, xs - delta / 4], 1).astype(np.float64)  # exact (grid)
    w1 = np.zeros((6 * k, 1))
    b1 = np.zeros(6 * k)
    for c in range(3):
        w1[6 * idx + 2 * c, 0], b1[6 * idx + 2 * c] = sigma, -sigma * centres[:, c]
        w1[6 * idx + 2 * c + 1, 0], b1[6 * idx + 2 * c + 1] = -sigma, sigma * centres[:, c]
    w2 = np.zeros((3 * k, 6 * k))
    b2 = np.zeros(3 * k)
    # q+ (centre x_k + delta/4: units 2, 3), q- (units 4, 5), s (units 0, 1)
    for row, (u, v), bias in ((0, (2, 3), 2.0), (1, (4, 5), 2.0), (2, (0, 1), 1.0)):
        w2[3 * idx + row, 6 * idx + u] = -1
        w2[3 * idx + row, 6 * idx + v] = -1
        b2[3 * idx + row] = bias
    w3 = np.zeros((3 * k, 3 * k))
    w3[2 * idx, 3 * idx], w3[2 * idx, 3 * idx + 1], w3[2 * idx, 3 * idx + 2] = a, -a, 1
    w3[2 * idx + 1, 3 * idx], w3[2 * idx + 1, 3 * idx + 1], w3[2 * idx + 1, 3 * idx + 2] = -a, a, 1
    w3[2 * k + idx, 3 * idx + 2] = 1
    w4 = np.zeros((1, 3 * k))
    w4[0, 2 * idx], w4[0, 2 * idx + 1], w4[0, 2 * k + idx] = z, -z, g
    f32 = np.float32
    return [
        Layer(w1.astype(f32), b1.astype(f32), True),
        Layer(w2.astype(f32), b2.astype(f32), True),
        Layer(w3.astype(f32), np.zeros(3 * k, f32), True),
        Layer(w4.astype(f32), np.zeros(1, f32), False),
    ]


def output_value_first_orders(layers: list[Layer]) -> list[np.ndarray]:
    """Summation orders for the negative control: left to right, except the output layer, whose value
    terms S_1..S_K are added first (then the G, Gt pairs)."""
    orders = [np.arange(layer.weight.shape[1]) for layer in layers]
    n = layers[-1].weight.shape[1]
    k = n // 3
    orders[-1] = np.r_[np.arange(2 * k, 3 * k), np.arange(2 * k)]
    return orders


def layers_to_sequential(layers: list[Layer]) -> nn.Sequential:
    """The same weights as a torch nn.Sequential (nn.Linear summation order is BLAS's, not ours)."""
    mods: list[nn.Module] = []
    for layer in layers:
        lin = torch.nn.utils.skip_init(nn.Linear, layer.weight.shape[1], layer.weight.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(layer.weight))
            lin.bias.copy_(torch.from_numpy(layer.bias))
        mods.append(lin)
        if layer.relu:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


@dataclass
class SobolevFit:
    """A trained MLP and its final training loss."""

    net: nn.Sequential
    final_loss: float


def sobolev_fit(
    xs: np.ndarray,
    values: np.ndarray,
    grads: np.ndarray,
    phi: PhiLike,
    generator: torch.Generator,
    *,
    width: int = 64,
    n_hidden: int = 3,
    steps: int = 2000,
    lr: float = 3e-3,
) -> SobolevFit:
    """Sobolev training: minimise mean (f(x)-g)^2 + mean (D(phi o f)(x) - h)^2 with Adam (float32 MLP).

    Parameters
    ----------
    xs, values, grads : (K,) targets.
    phi : the loss whose AD gradient is fitted.
    generator : torch.Generator for the initial weights.
    width, n_hidden, steps, lr : MLP size and optimiser settings.
    """
    _, fn = resolve_phi(phi)
    xs_ = as_array(xs, "xs", ndim=1, dtype=np.float32)
    gs_ = as_array(values, "values", ndim=1, dtype=np.float32)
    hs_ = as_array(grads, "grads", ndim=1, dtype=np.float32)
    same_length(xs=xs_, values=gs_, grads=hs_)
    width, n_hidden = positive_int(width, "width"), positive_int(n_hidden, "n_hidden", minimum=0)
    steps = positive_int(steps, "steps")
    lr = finite_number(lr, "lr", lo=0.0, lo_open=True)
    mods: list[nn.Module] = []
    d_in = 1
    for _ in range(n_hidden):
        lin = torch.nn.utils.skip_init(nn.Linear, d_in, width)  # initialised below from `generator`
        mods += [lin, nn.ReLU()]
        d_in = width
    mods.append(torch.nn.utils.skip_init(nn.Linear, d_in, 1))
    net = nn.Sequential(*mods)
    with torch.no_grad():
        for m in net:
            if isinstance(m, nn.Linear):
                bound = 1.0 / np.sqrt(m.in_features)
                m.weight.copy_(torch.empty_like(m.weight).uniform_(-bound, bound, generator=generator))
                m.bias.copy_(torch.empty_like(m.bias).uniform_(-bound, bound, generator=generator))
    x = torch.tensor(xs_.reshape(-1, 1))
    gt = torch.tensor(gs_.reshape(-1, 1))
    ht = torch.tensor(hs_.reshape(-1, 1))
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    loss_value = float("nan")
    for _ in range(steps):
        xr = x.clone().requires_grad_(True)
        y = net(xr)
        (dx,) = torch.autograd.grad(fn(y).sum(), xr, create_graph=True)
        loss = ((y - gt) ** 2).mean() + ((dx - ht) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_value = float(loss.detach())
    return SobolevFit(net=net, final_loss=loss_value)
