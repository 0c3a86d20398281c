"""Two evaluators of f and D^AD(phi o f): a numpy float32 reference and torch autograd, and `verify`.

Reference semantics (brief, "Problem setting"): every affine unit is
    pre_u = ((..((w_u1 a_1 + w_u2 a_2) + w_u3 a_3)..) + w_un a_n) + b_u
with each product and each sum rounded to float32 (numpy ufuncs: no fused multiply-add), and the
reverse pass is delta_a[j] = sum_u fl(w_uj * delta_pre[u]) in the same fixed order, then
delta_pre = where(pre > 0, delta_a, 0) (the ReLU'(0) = 0 convention of PyTorch, applied with `where`
so that an infinite delta is masked instead of producing NaN).

Two modes compute it: "dense" adds every term, zeros included, exactly as written; "sparse" skips the
terms whose weight is exactly zero.  Adding fl(0 * a) = +-0 to a partial sum changes at most the sign of
a zero partial sum (when every activation is finite, which the sparse mode checks), so both modes give
the same values up to the sign of zeros; the tests check this on small networks.  An optional
permutation of each layer's inputs changes the summation order (the negative control).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from icml2026.core.validate import as_array

from .floats import count_mismatches
from .losses import PhiLike, phi_seeds

__all__ = [
    "Layer",
    "Verification",
    "layers_from_sequential",
    "reference_values_and_grads",
    "torch_values_and_grads",
    "verify",
]

_AUTO_DENSE_LIMIT = 3e8  # batch * sum(in * out) up to which "auto" uses the dense (term-by-term) mode


@dataclass(frozen=True)
class Layer:
    """An affine layer W a + b (W: (out, in) float32), followed by ReLU when ``relu``."""

    weight: np.ndarray
    bias: np.ndarray
    relu: bool


@dataclass
class Verification:
    """Mismatch counts of f(x_k) against g_k and D^AD(phi o f)(x_k) against h_k (bitwise, +0 == -0)."""

    n_points: int
    value_mismatches_torch: int
    grad_mismatches_torch: int
    value_mismatches_reference: int
    grad_mismatches_reference: int
    reference_mode: str
    values_torch: np.ndarray = field(repr=False)
    grads_torch: np.ndarray = field(repr=False)
    values_reference: np.ndarray = field(repr=False)
    grads_reference: np.ndarray = field(repr=False)

    @property
    def total(self) -> int:
        return (
            self.value_mismatches_torch
            + self.grad_mismatches_torch
            + self.value_mismatches_reference
            + self.grad_mismatches_reference
        )

    @property
    def ok(self) -> bool:
        return self.total == 0


def layers_from_sequential(net: nn.Sequential) -> list[Layer]:
    """Read the weights of a Linear/ReLU ``nn.Sequential`` (float32) as reference layers.

    Raises
    ------
    TypeError
        If the network holds anything but nn.Linear and nn.ReLU, or is not float32.
    """
    if not isinstance(net, nn.Sequential):
        raise TypeError(f"expected an nn.Sequential, got {type(net).__name__}")
    layers: list[Layer] = []
    for mod in net:
        if isinstance(mod, nn.Linear):
            if mod.weight.dtype != torch.float32:
                raise TypeError(f"only float32 networks are supported, got {mod.weight.dtype}")
            bias = (
                mod.bias.detach().cpu().numpy().copy()
                if mod.bias is not None
                else np.zeros(mod.out_features, dtype=np.float32)
            )
            layers.append(Layer(mod.weight.detach().cpu().numpy().copy(), bias, False))
        elif isinstance(mod, nn.ReLU):
            if not layers or layers[-1].relu:
                raise TypeError("an nn.ReLU must follow an nn.Linear")
            last = layers[-1]
            layers[-1] = Layer(last.weight, last.bias, True)
        else:
            raise TypeError(f"the network may hold only nn.Linear and nn.ReLU, found {type(mod).__name__}")
    if not layers:
        raise TypeError("the network has no nn.Linear layer")
    return layers


def _dense_forward(w: np.ndarray, b: np.ndarray, a: np.ndarray, order: np.ndarray) -> np.ndarray:
    acc: np.ndarray | None = None
    for j in order:
        term = a[:, j : j + 1] * w[None, :, j]
        acc = term if acc is None else acc + term
    assert acc is not None
    return acc + b[None, :]


def _dense_backward(w: np.ndarray, d_pre: np.ndarray) -> np.ndarray:
    acc: np.ndarray | None = None
    for u in range(w.shape[0]):
        term = d_pre[:, u : u + 1] * w[u][None, :]
        acc = term if acc is None else acc + term
    assert acc is not None
    return acc


def _slots(  # type: ignore[no-untyped-def]
    major: np.ndarray, minor: np.ndarray, vals: np.ndarray, n_major: int, rank: np.ndarray
):
    """Per major index, its non-zero entries sorted by rank[minor], as padded slot arrays."""
    order = np.lexsort((rank[minor], major))
    major, minor, vals = major[order], minor[order], vals[order]
    counts = np.bincount(major, minlength=n_major)
    n_slots = int(counts.max()) if counts.size else 0
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    pos = np.arange(major.size) - starts[major]
    idx = np.zeros((n_major, max(n_slots, 1)), dtype=np.int64)
    val = np.zeros((n_major, max(n_slots, 1)), dtype=np.float32)
    valid = np.zeros((n_major, max(n_slots, 1)), dtype=bool)
    idx[major, pos], val[major, pos], valid[major, pos] = minor, vals, True
    return idx, val, valid


def _sparse_sum(a: np.ndarray, idx: np.ndarray, val: np.ndarray, valid: np.ndarray) -> np.ndarray:
    acc = np.zeros((a.shape[0], idx.shape[0]), dtype=np.float32)
    for s in range(idx.shape[1]):
        term = a[:, idx[:, s]] * val[None, :, s]
        acc = np.where(valid[None, :, s], acc + term, acc)
    return acc


def reference_values_and_grads(
    layers: list,
    xs: np.ndarray,
    phi: PhiLike,
    *,
    mode: str = "dense",
    orders: list[np.ndarray] | None = None,
    chunk: int = 1024,
) -> tuple[np.ndarray, np.ndarray]:
    """f(x) and D^AD(phi o f)(x) under the fixed-order float32 semantics (module docstring).

    Parameters
    ----------
    layers : :class:`Layer` list (from :func:`layers_from_sequential`), or the coordinate layers of a
        construction (``Construction.layers``, sparse mode only); input width 1, output width 1.
    xs : (N,) float32 inputs.
    phi : the loss; its seed D^AD phi(f(x)) comes from :func:`phi_seeds`.
    mode : "dense" (every term) or "sparse" (zero-weight terms skipped).
    orders : optional per-layer permutation of the input indices: the order of each forward sum.
    chunk : points evaluated together (memory only; points are independent).

    Returns
    -------
    (values (N,), grads (N,)) float32.
    """
    if mode not in ("dense", "sparse"):
        raise ValueError(f"mode must be 'dense' or 'sparse', got {mode!r}")
    mats = [_as_coords(layer, mode) for layer in layers]
    d_in = int(mats[0][4])
    if mats[-1][3] != 1:
        raise ValueError("the network must have one output")
    if orders is not None and len(orders) != len(layers):
        raise ValueError(f"orders needs one permutation per layer ({len(layers)}), got {len(orders)}")
    plans = []
    for li, (w, coords, bias, n_out, n_in, relu) in enumerate(mats):
        order = np.arange(n_in) if orders is None else np.asarray(orders[li])
        if order.shape != (n_in,) or not np.array_equal(np.sort(order), np.arange(n_in)):
            raise ValueError(f"orders[{li}] is not a permutation of the layer's {n_in} inputs")
        fwd = bwd = None
        if mode == "sparse":
            rows, cols, vals = coords
            rank = np.empty_like(order)
            rank[order] = np.arange(n_in)
            fwd = _slots(rows, cols, vals, n_out, rank)
            bwd = _slots(cols, rows, vals, n_in, np.arange(n_out))
        plans.append((w, bias, relu, order, fwd, bwd))
    x_arr = as_array(xs, "xs", dtype=np.float32)
    vector = x_arr.ndim == 2
    if (vector and x_arr.shape[1] != d_in) or (not vector and d_in != 1):
        raise ValueError(f"xs has shape {x_arr.shape} but the network takes {d_in} input(s)")
    x_all = x_arr.reshape(-1, d_in)
    values = np.empty(x_all.shape[0], dtype=np.float32)
    grads = np.empty_like(x_all)
    for start in range(0, x_all.shape[0], chunk):
        sl = slice(start, start + chunk)
        values[sl], grads[sl] = _reference_chunk(plans, x_all[sl], phi, mode)
    return values, (grads if vector else grads[:, 0].copy())


def _as_coords(layer, mode: str):  # type: ignore[no-untyped-def]
    """(dense W or None, (rows, cols, vals) or None, bias, n_out, n_in, relu) of a layer."""
    if hasattr(layer, "rows"):  # coordinate layer of a construction
        if mode == "dense":
            w = layer.dense()
            return w, None, layer.bias.astype(np.float32), w.shape[0], w.shape[1], layer.relu
        return (
            None,
            (layer.rows, layer.cols, layer.vals.astype(np.float32)),
            layer.bias.astype(np.float32),
            layer.n_out,
            layer.n_in,
            layer.relu,
        )
    w = layer.weight.astype(np.float32)
    coords: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    if mode == "sparse":
        rows, cols = np.nonzero(w)
        coords = (rows, cols, w[rows, cols])
    return w, coords, layer.bias.astype(np.float32), w.shape[0], w.shape[1], layer.relu


def _reference_chunk(plans, x, phi, mode):  # type: ignore[no-untyped-def]
    a = x
    pres = []
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for w, b, relu, order, fwd, _ in plans:
            if mode == "dense":
                pre = _dense_forward(w, b, a, order)
            else:
                # Deviation: zero-weight terms skipped (same values up to the sign of zeros).
                if not np.all(np.isfinite(a)):
                    raise ValueError("sparse mode needs finite activations (0 * inf would be NaN); use dense")
                pre = _sparse_sum(a, *fwd) + b[None, :]
            pres.append(pre)
            a = np.maximum(pre, np.float32(0)) if relu else pre
        values = a[:, 0].copy()
        delta = phi_seeds(phi, values).reshape(-1, 1).astype(np.float32)
        for li in range(len(plans) - 1, -1, -1):
            w, _, relu, _, _, bwd = plans[li]
            d_pre = np.where(pres[li] > 0, delta, np.float32(0)) if relu else delta
            if mode == "dense":
                delta = _dense_backward(w, d_pre)
            else:
                if not np.all(np.isfinite(d_pre)):
                    raise ValueError("sparse mode needs finite deltas (0 * inf would be NaN); use dense")
                delta = _sparse_sum(d_pre, *bwd)
    return values, delta.copy()


def torch_values_and_grads(net: nn.Module, xs: np.ndarray, phi: PhiLike) -> tuple[np.ndarray, np.ndarray]:
    """f(x) and D^AD(phi o f)(x) by torch: one batched forward, seeds by autograd on phi, autograd back.

    The seed of each point is computed by :func:`phi_seeds` (per point), then ``torch.autograd.grad`` of
    the network output with that seed gives exactly what ``phi(net(x)).backward()`` gives for the
    single input x (reverse mode is seed-then-backpropagate).
    """
    x_arr = as_array(xs, "xs", dtype=np.float32)
    vector = x_arr.ndim == 2
    x = torch.tensor(x_arr if vector else x_arr.reshape(-1, 1), requires_grad=True)
    y = net(x)
    values = y.detach().numpy()[:, 0].copy()
    seeds = torch.from_numpy(phi_seeds(phi, values).reshape(-1, 1))
    (grad,) = torch.autograd.grad(y, x, grad_outputs=seeds)
    g = grad.detach().numpy()
    return values, (g.copy() if vector else g[:, 0].copy())


def verify(
    net: nn.Sequential,
    xs: np.ndarray,
    values: np.ndarray,
    grads: np.ndarray,
    phi: PhiLike,
    *,
    reference: str = "auto",
) -> Verification:
    """Count bitwise mismatches (+0 == -0) of f and D^AD(phi o f) against the targets on all of xs.

    Parameters
    ----------
    net : the network (nn.Linear / nn.ReLU only).
    xs, values, grads : (K,) float32 points and targets.
    phi : the loss (built-in name or callable).
    reference : "dense", "sparse" or "auto" (dense while batch * sum(in * out) <= 3e8).

    Returns
    -------
    Verification with the four mismatch counts (torch / reference, values / gradients).
    """
    x_arr = as_array(xs, "xs", dtype=np.float32)
    if x_arr.ndim == 2:  # vector inputs: grads (K, d), compared coordinate by coordinate
        xs32 = x_arr
        g32 = as_array(values, "values", dtype=np.float32).reshape(-1)
        h32 = as_array(grads, "grads", dtype=np.float32)
        if g32.shape != (xs32.shape[0],) or h32.shape != xs32.shape:
            raise ValueError(
                f"for xs of shape {xs32.shape}, values need shape ({xs32.shape[0]},) and grads "
                f"{xs32.shape}; got {g32.shape} and {h32.shape}"
            )
    else:
        xs32 = x_arr.reshape(-1)
        g32 = as_array(values, "values", dtype=np.float32).reshape(-1)
        h32 = as_array(grads, "grads", dtype=np.float32).reshape(-1)
        if not (xs32.size == g32.size == h32.size):
            raise ValueError(f"xs, values and grads need equal lengths, got {xs32.size}, {g32.size}, {h32.size}")
    layers = layers_from_sequential(net)
    if reference == "auto":
        cost = xs32.shape[0] * sum(layer.weight.size for layer in layers)
        reference = "dense" if cost <= _AUTO_DENSE_LIMIT else "sparse"
    yt, dt = torch_values_and_grads(net, xs32, phi)
    yr, dr = reference_values_and_grads(layers, xs32, phi, mode=reference)
    return Verification(
        n_points=int(xs32.shape[0]),
        value_mismatches_torch=count_mismatches(yt, g32),
        grad_mismatches_torch=count_mismatches(dt, h32),
        value_mismatches_reference=count_mismatches(yr, g32),
        grad_mismatches_reference=count_mismatches(dr, h32),
        reference_mode=reference,
        values_torch=yt,
        grads_torch=dt,
        values_reference=yr,
        grads_reference=dr,
    )
