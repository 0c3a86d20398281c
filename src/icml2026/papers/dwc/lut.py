"""LUT layer with the Extended Finite Difference (EFD) gradient and the learnable mapping (DWN / DWC).

Pure PyTorch: ``torch-dwn`` is CUDA-only, so both custom backward rules are written as
``torch.autograd.Function`` s here (our reimplementation of the formulas stated in the brief).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = ["efd_constants", "efd_weights", "LUTLayer", "EFDLookup", "LearnableMapping", "MAPPING_TAU"]

#: Softmax temperature of the learnable mapping's backward pass (brief: tau = 0.001).
MAPPING_TAU = 1e-3


def efd_constants(lut_inputs: int) -> tuple[float, float]:
    """DWN's EFD defaults ``alpha = 0.5 * 0.75^(n-1)``, ``beta = 0.25 / 0.75``."""
    if isinstance(lut_inputs, bool) or not isinstance(lut_inputs, (int, np.integer)) or not 1 <= lut_inputs <= 10:
        raise ValueError(f"lut_inputs must be an int in [1, 10], got {lut_inputs!r}")
    return 0.5 * 0.75 ** (lut_inputs - 1), 0.25 / 0.75


@lru_cache(maxsize=16)
def _efd_weights_np(lut_inputs: int) -> np.ndarray:
    n = lut_inputs
    alpha, beta = efd_constants(n)
    size = 1 << n
    a = np.arange(size)
    w = np.empty((size, n, size), dtype=np.float64)
    for l_bit in range(n):
        mask = ~(1 << l_bit)
        x = (a[:, None] & mask) ^ (a[None, :] & mask)  # (a, a') differing bits, bit l cleared
        ham = np.array([bin(int(v)).count("1") for v in x.ravel()]).reshape(size, size)
        sign = np.where((a >> l_bit) & 1, 1.0, -1.0)  # +1 if bit l of a' is 1
        w[:, l_bit, :] = alpha * beta**ham * sign[None, :]
    return w


def efd_weights(lut_inputs: int) -> torch.Tensor:
    """The EFD kernel ``W[a, l, a'] = alpha * beta^H(a\\l, a'\\l) * (+1 if a'_l else -1)``.

    Returns
    -------
    torch.Tensor, shape (2^n, n, 2^n), float32; ``dY/dx_l`` at address ``a`` is ``sum_a' W[a,l,a'] T[a']``.
    """
    if isinstance(lut_inputs, bool) or not isinstance(lut_inputs, (int, np.integer)) or not 1 <= lut_inputs <= 10:
        raise ValueError(f"lut_inputs must be in [1, 10], got {lut_inputs}")
    return torch.from_numpy(_efd_weights_np(int(lut_inputs))).to(torch.float32)


class EFDLookup(torch.autograd.Function):
    """Table lookup ``y = [T[k, a] > 0]`` (STE) with the EFD gradient w.r.t. the input bits (DWN, Eq. EFD).

    Inputs: ``x`` (batch, N, n) bits in {0, 1}; ``tables`` (N, 2^n); ``w`` the EFD kernel (2^n, n, 2^n).
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, tables: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        n_luts, size = tables.shape
        powers = (1 << torch.arange(n, device=x.device)).to(x.dtype)
        addr = (x.round() @ powers).to(torch.long)  # (batch, N), a = sum_i bit_i 2^i (exact in float)
        # flat index of T[k, a] per (sample, LUT): one gather in the forward, reused by both gradients
        flat = (torch.arange(n_luts, device=x.device) * size).unsqueeze(0) + addr
        vals = tables.reshape(-1)[flat]
        ctx.save_for_backward(flat, tables, w)
        return (vals > 0).to(x.dtype)  # straight-through binarisation of the table entry

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None]:
        flat, tables, w = ctx.saved_tensors
        n_luts, size = tables.shape
        n = w.shape[1]
        grad_x = grad_t = None
        if ctx.needs_input_grad[0]:
            # M[k, a, l] = sum_a' W[a, l, a'] T[k, a'], then gather the row of each sample's address.
            m = (tables.to(w.dtype) @ w.permute(2, 0, 1).reshape(size, size * n)).reshape(n_luts * size, n)
            grad_x = g.unsqueeze(-1) * m.index_select(0, flat.reshape(-1)).reshape(*flat.shape, n)
        if ctx.needs_input_grad[1]:
            grad_t = torch.zeros(n_luts * size, dtype=tables.dtype, device=tables.device)
            grad_t.index_add_(0, flat.reshape(-1), g.reshape(-1).to(tables.dtype))
            grad_t = grad_t.reshape(n_luts, size)
        return grad_x, grad_t, None


class LearnableMapping(torch.autograd.Function):
    """Forward ``x[:, argmax_0(Wm)]``; backward ``dWm = (2x-1)^T g``, ``dx = g softmax(Wm/tau, 0)^T``.

    ``idx`` may be passed in when the caller already holds ``argmax_0(Wm)`` for the current ``Wm``.
    """

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, wm: torch.Tensor, tau: float, idx: torch.Tensor | None = None
    ) -> torch.Tensor:
        if idx is None:
            idx = torch.argmax(wm, dim=0)
        ctx.save_for_backward(x, wm)
        ctx.tau = tau
        return x[:, idx]

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None, None]:
        x, wm = ctx.saved_tensors
        grad_x = grad_wm = None
        if ctx.needs_input_grad[0]:
            grad_x = g @ torch.softmax(wm.to(torch.float32) / ctx.tau, dim=0).T.to(g.dtype)
        if ctx.needs_input_grad[1]:
            grad_wm = (2.0 * x - 1.0).T.to(g.dtype) @ g
        return grad_x, grad_wm, None, None


class LUTLayer(nn.Module):
    """One layer of ``n_luts`` n-input lookup tables reading ``in_bits`` bits (brief, step 3).

    Parameters
    ----------
    in_bits : length of the input bit-vector.
    n_luts : N, number of LUTs (outputs).
    lut_inputs : n, inputs per LUT (2^n table entries).
    mapping : ``"learnable"`` (parameter ``wm`` of shape (in_bits, N*n), init U(0, 1)) or ``"random"``
        (fixed indices, every input used before any is reused).
    generator : torch.Generator for the initialisation (tables U(-1, 1)).
    """

    tables: nn.Parameter
    wm: nn.Parameter
    fixed_idx: torch.Tensor
    efd: torch.Tensor

    def __init__(
        self,
        in_bits: int,
        n_luts: int,
        lut_inputs: int = 6,
        mapping: str = "learnable",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        for name, v in (("in_bits", in_bits), ("n_luts", n_luts), ("lut_inputs", lut_inputs)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not 1 <= lut_inputs <= 10:
            raise ValueError(f"lut_inputs must be in [1, 10], got {lut_inputs}")
        if mapping not in ("learnable", "random"):
            raise ValueError(f"mapping must be 'learnable' or 'random', got {mapping!r}")
        self.in_bits, self.n_luts, self.lut_inputs, self.mapping = int(in_bits), int(n_luts), int(lut_inputs), mapping
        g = generator if generator is not None else torch.Generator().manual_seed(0)
        size = 1 << lut_inputs
        self.tables = nn.Parameter(torch.rand(n_luts, size, generator=g) * 2.0 - 1.0)
        self.register_buffer("efd", efd_weights(lut_inputs), persistent=False)
        n_reads = n_luts * lut_inputs
        if mapping == "learnable":
            self.wm = nn.Parameter(torch.rand(in_bits, n_reads, generator=g))
        else:
            reps = -(-n_reads // in_bits)
            perm = torch.cat([torch.randperm(in_bits, generator=g) for _ in range(reps)])[:n_reads]
            self.register_buffer("fixed_idx", perm.to(torch.long))

    def _flat_indices(self) -> torch.Tensor:
        """argmax over the rows of Wm (cached until Wm changes in place or is replaced), or the fixed map."""
        if self.mapping != "learnable":
            return self.fixed_idx
        key = (id(self.wm), self.wm._version, self.wm.device)
        cached = getattr(self, "_idx_cache", None)
        if cached is None or cached[0] != key:
            cached = (key, torch.argmax(self.wm.detach(), dim=0))
            self._idx_cache = cached
        return cached[1]

    def indices(self) -> torch.Tensor:
        """The input bit read by each LUT input, shape (N, n), long (learnable: argmax over rows of Wm)."""
        return self._flat_indices().reshape(self.n_luts, self.lut_inputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Bits (batch, in_bits) in {0,1} -> bits (batch, N) in {0,1} (EFD backward, STE on the tables)."""
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"x: expected a torch.Tensor of bits, got {type(x).__name__}")
        if x.ndim != 2 or x.shape[1] != self.in_bits:
            raise ValueError(f"LUTLayer expects input of shape (batch, {self.in_bits}), got {tuple(x.shape)}")
        if not x.is_floating_point():
            raise ValueError(f"x: expected floating-point bits (0.0 / 1.0) to carry the EFD gradient, got {x.dtype}")
        # The forward rounds x to an address: any value other than 0 or 1 would address a wrong entry silently.
        # (the meta device carries shapes only: no values to check)
        if x.device.type != "meta" and not bool(((x == 0) | (x == 1)).all()):
            raise ValueError("x: LUTLayer inputs must be bits (every value 0 or 1); found other values or NaN")
        if self.mapping == "learnable":
            xm = LearnableMapping.apply(x, self.wm, MAPPING_TAU, self._flat_indices())
        else:
            xm = x[:, self.fixed_idx]
        xm = xm.reshape(x.shape[0], self.n_luts, self.lut_inputs)
        return EFDLookup.apply(xm, self.tables, self.efd)

    @torch.no_grad()
    def clamp_tables_(self) -> None:
        """Clamp the real tables to [-1, 1] (done after every optimiser step)."""
        self.tables.clamp_(-1.0, 1.0)

    @torch.no_grad()
    def table_bits(self) -> torch.Tensor:
        """The binarised tables ``T > 0``, shape (N, 2^n), bool."""
        return self.tables > 0
