"""The Differentiable Weightless Controller: thermometer -> LUT layers -> popcount head (brief, steps 1-4).

``DWCPolicy`` is the trainable torch module; ``IntegerDWC`` is the frozen numpy integer reference model of
its deterministic inference path (what the Verilog circuit computes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import torch
from torch import nn

from icml2026.core.validate import as_array, positive_int

from .encoding import CLIP, EPS, ObsNormalizer, thermometer_encode, thermometer_thresholds
from .lut import LUTLayer

__all__ = ["DWCPolicy", "IntegerDWC", "PolicyError", "head_affine", "check_action_affine"]


def check_action_affine(action_scale: object, action_bias: object, act_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``action_scale`` (finite, > 0) and ``action_bias`` (finite) broadcast to shape (act_dim,), float64."""
    out = []
    for name, v, lo in (("action_scale", action_scale, 0.0), ("action_bias", action_bias, None)):
        arr = as_array(v, name, ndim=(0, 1))
        if arr.ndim == 1 and arr.shape[0] not in (1, act_dim):
            raise ValueError(f"{name}: expected a number or shape ({act_dim},), got shape {arr.shape}")
        if lo is not None and np.any(arr <= lo):
            raise ValueError(f"{name}: must be > 0, found {arr.min():g}")
        out.append(np.broadcast_to(arr, (act_dim,)).copy())
    return out[0], out[1]

_P_CLIP = 1e-6  # clip of the normalised popcount in the head (brief, step 4)


class PolicyError(ValueError):
    """An untrained or internally inconsistent policy (raised before anything is exported)."""


def head_affine(
    pop: np.ndarray, group_size: int, log_alpha: np.ndarray, beta: np.ndarray, scale: np.ndarray, bias: np.ndarray
) -> np.ndarray:
    """Action head post-step: ``tanh(exp(log_alpha) (clip(p/G, 1e-6, 1-1e-6) - 0.5) + beta) * scale + bias``."""
    group_size = positive_int(int(group_size) if isinstance(group_size, np.integer) else group_size, "group_size")
    pop = as_array(pop, "pop", lo=0.0, hi=float(group_size), min_size=0)
    frac = np.clip(pop / group_size, _P_CLIP, 1.0 - _P_CLIP)
    n_act = pop.shape[-1] if pop.ndim else 1
    for name, v in (("log_alpha", log_alpha), ("beta", beta), ("scale", scale), ("bias", bias)):
        arr = as_array(v, name, ndim=(0, 1), min_size=0)
        if arr.ndim and arr.size != n_act:
            raise ValueError(f"{name}: expected {n_act} value(s), one per action (last axis of pop), got {arr.size}")
    return np.tanh(np.exp(log_alpha) * (frac - 0.5) + beta) * scale + bias


class DWCPolicy(nn.Module):
    """Differentiable weightless controller pi(obs) -> action (mean head of the SAC actor).

    Parameters
    ----------
    obs_dim, act_dim : observation and action sizes.
    n_luts : LUTs per layer, an int (with ``n_layers``) or a sequence of per-layer counts (paper: 2 x 1024).
    n_layers : number of LUT layers when ``n_luts`` is an int (paper: 2).
    bits : B, thermometer bits per observation dimension (odd; paper: 63).
    lut_inputs : n, inputs per LUT (paper: 6).
    mapping : ``"learnable"`` (paper) or ``"random"``.
    action_scale, action_bias : the env's ``(high - low) / 2`` and ``(high + low) / 2``, shape (act_dim,).
    generator : torch.Generator for the initialisation.
    """

    thresholds: torch.Tensor
    action_scale: torch.Tensor
    action_bias: torch.Tensor
    train_steps: torch.Tensor

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        n_luts: int | Sequence[int] = 256,
        n_layers: int = 2,
        bits: int = 63,
        lut_inputs: int = 6,
        mapping: str = "learnable",
        action_scale: float | Sequence[float] | np.ndarray = 1.0,
        action_bias: float | Sequence[float] | np.ndarray = 0.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        for name, v in (("obs_dim", obs_dim), ("act_dim", act_dim), ("n_layers", n_layers)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        sizes = [int(n_luts)] * n_layers if isinstance(n_luts, (int, np.integer)) else [int(s) for s in n_luts]
        if not sizes or min(sizes) < 1:
            raise ValueError(f"n_luts must be positive, got {n_luts!r}")
        if sizes[-1] < act_dim:
            raise ValueError(f"the last layer needs at least act_dim={act_dim} LUTs, got {sizes[-1]}")
        # Like the official code, the last layer is widened to a multiple of act_dim with *trainable* LUTs
        # (e.g. 256 -> 258 for Hopper's 3 actions: groups of 86), so every popcount group is full.
        sizes[-1] = -(-sizes[-1] // int(act_dim)) * int(act_dim)
        scale_arr, bias_arr = check_action_affine(action_scale, action_bias, int(act_dim))
        self.obs_dim, self.act_dim, self.bits, self.lut_inputs = int(obs_dim), int(act_dim), bits, lut_inputs
        self.register_buffer("thresholds", torch.from_numpy(thermometer_thresholds(bits)))
        self.normalizer = ObsNormalizer(obs_dim)
        layers, in_bits = [], self.obs_dim * bits
        for n in sizes:
            layers.append(LUTLayer(in_bits, n, lut_inputs, mapping, generator=generator))
            in_bits = n
        self.layers = nn.ModuleList(layers)
        self.group_size = sizes[-1] // int(act_dim)
        self.log_alpha = nn.Parameter(torch.full((act_dim,), -0.6931))
        self.beta = nn.Parameter(torch.zeros(act_dim))
        self.register_buffer("action_scale", torch.as_tensor(scale_arr, dtype=torch.float32))
        self.register_buffer("action_bias", torch.as_tensor(bias_arr, dtype=torch.float32))
        self.register_buffer("train_steps", torch.zeros((), dtype=torch.long))

    @property
    def lut_layers(self) -> list[LUTLayer]:
        """The LUT layers, typed."""
        return [cast(LUTLayer, m) for m in self.layers]

    # ----- differentiable path (training) -----
    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """Thermometer bits of the normalised observation, (batch, obs_dim * B), float32 in {0, 1}."""
        return thermometer_encode(self.normalizer.normalize(obs), self.thresholds).to(torch.float32)

    def popcounts_from_bits(self, bits: torch.Tensor) -> torch.Tensor:
        """Popcount per action group of the last layer (differentiable through EFD), (batch, act_dim)."""
        h = bits
        for layer in self.lut_layers:
            h = layer(h)
        pad = self.group_size * self.act_dim - h.shape[1]
        if pad:
            h = torch.cat([h, h.new_zeros(h.shape[0], pad)], dim=1)
        return h.reshape(h.shape[0], self.act_dim, self.group_size).sum(-1)

    def pre_tanh(self, obs: torch.Tensor) -> torch.Tensor:
        """``z_a = exp(log_alpha_a) (clip(p_a / G, 1e-6, 1-1e-6) - 0.5) + beta_a`` (brief, step 4)."""
        pop = self.popcounts_from_bits(self.encode(obs))
        frac = torch.clamp(pop / self.group_size, _P_CLIP, 1.0 - _P_CLIP)
        return torch.exp(self.log_alpha) * (frac - 0.5) + self.beta

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action ``tanh(z) * scale + bias`` through the differentiable path, (batch, act_dim)."""
        return torch.tanh(self.pre_tanh(obs)) * self.action_scale + self.action_bias

    @torch.no_grad()
    def clamp_tables_(self) -> None:
        for layer in self.lut_layers:
            layer.clamp_tables_()

    def mark_trained(self, n_steps: int = 1) -> None:
        """Count optimiser steps; exporting requires at least one."""
        self.train_steps.add_(int(n_steps))

    # ----- integer inference path -----
    def _check_obs(self, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
        if isinstance(obs, torch.Tensor):
            obs = obs.detach().cpu().numpy()
        try:
            x = torch.as_tensor(np.asarray(obs, dtype=np.float64))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"observation: cannot be read as an array of numbers: {exc}") from None
        if x.ndim not in (1, 2) or x.shape[-1] != self.obs_dim:
            raise ValueError(f"observation must have shape ({self.obs_dim},) or (batch, {self.obs_dim}), "
                             f"got {tuple(x.shape)}")
        if x.shape[0] == 0:
            raise ValueError(f"observation: empty batch, shape {tuple(x.shape)}")
        if not torch.isfinite(x).all():
            raise ValueError("observation contains NaN or inf")
        return x.reshape(-1, self.obs_dim)

    @torch.no_grad()
    def integer_popcounts(self, bits: torch.Tensor) -> torch.Tensor:
        """Popcounts from thermometer bits with integer/boolean ops only: (batch, in_bits) -> (batch, act_dim)."""
        bits = _check_bits(bits, self.lut_layers[0].in_bits)
        dev = self.thresholds.device
        h = bits.to(device=dev, dtype=torch.bool)
        for layer in self.lut_layers:
            idx = layer.indices()  # (N, n)
            powers = torch.tensor([1 << i for i in range(layer.lut_inputs)], dtype=torch.long, device=dev)
            addr = (h[:, idx].to(torch.long) * powers).sum(-1)  # (batch, N)
            tb = layer.table_bits()
            h = tb[torch.arange(layer.n_luts, device=dev).unsqueeze(0), addr]
        pad = self.group_size * self.act_dim - h.shape[1]
        hl = torch.cat([h.to(torch.long), torch.zeros(h.shape[0], pad, dtype=torch.long, device=dev)], dim=1)
        return hl.reshape(h.shape[0], self.act_dim, self.group_size).sum(-1)

    @torch.no_grad()
    def act(self, obs: np.ndarray | torch.Tensor) -> np.ndarray:
        """Deterministic action: thermometer (float compare), then only integer/boolean ops to popcounts.

        Parameters
        ----------
        obs : (obs_dim,) or (batch, obs_dim), finite.

        Returns
        -------
        np.ndarray, (act_dim,) or (batch, act_dim), float64.
        """
        single = np.ndim(obs) == 1
        x = self._check_obs(obs).to(self.thresholds.device)
        bits = thermometer_encode(self.normalizer.normalize(x), self.thresholds)
        pop = self.integer_popcounts(bits).cpu().numpy()
        a = head_affine(pop, self.group_size, *(p.detach().double().cpu().numpy() for p in
                                                (self.log_alpha, self.beta, self.action_scale, self.action_bias)))
        return a[0] if single else a

    def validate(self, require_trained: bool = True) -> None:
        """Raise :class:`PolicyError` if the policy is untrained or inconsistent (before any export)."""
        if require_trained and int(self.train_steps) == 0:
            raise PolicyError("policy is untrained (no optimiser step recorded); train it before exporting")
        n_last = self.lut_layers[-1].n_luts
        if self.group_size * self.act_dim != n_last:
            raise PolicyError(f"inconsistent action groups: group_size={self.group_size} x act_dim={self.act_dim} "
                              f"does not cover {n_last} last-layer LUTs in equal groups")
        in_bits = self.obs_dim * self.bits
        for i, layer in enumerate(self.lut_layers):
            if layer.in_bits != in_bits:
                raise PolicyError(f"layer {i} reads {layer.in_bits} bits but receives {in_bits}")
            if not torch.isfinite(layer.tables).all() or layer.tables.abs().max() > 1.0:
                raise PolicyError(f"layer {i} tables are not finite values in [-1, 1]")
            in_bits = layer.n_luts
        if not (torch.isfinite(self.normalizer.mean).all() and (self.normalizer.var >= 0).all()):
            raise PolicyError("observation normaliser statistics are not finite / non-negative")

    def to_integer_model(self) -> IntegerDWC:
        """Freeze into the numpy integer reference model."""
        self.validate(require_trained=False)
        return IntegerDWC(
            mean=self.normalizer.mean.numpy().copy(),
            var=self.normalizer.var.numpy().copy(),
            thresholds=self.thresholds.numpy().copy(),
            maps=[layer.indices().numpy().astype(np.int64) for layer in self.lut_layers],
            tables=[layer.table_bits().numpy().copy() for layer in self.lut_layers],
            group_size=self.group_size,
            act_dim=self.act_dim,
            log_alpha=self.log_alpha.detach().double().numpy().copy(),
            beta=self.beta.detach().double().numpy().copy(),
            action_scale=self.action_scale.double().numpy().copy(),
            action_bias=self.action_bias.double().numpy().copy(),
        )


@dataclass(frozen=True)
class IntegerDWC:
    """Numpy integer reference model of the deployed circuit (frozen normaliser, maps and binary tables).

    ``maps[l]`` is (N_l, n) int64 indices into the previous layer's bits; ``tables[l]`` is (N_l, 2^n) bool.
    """

    mean: np.ndarray
    var: np.ndarray
    thresholds: np.ndarray
    maps: list[np.ndarray]
    tables: list[np.ndarray]
    group_size: int
    act_dim: int
    log_alpha: np.ndarray
    beta: np.ndarray
    action_scale: np.ndarray
    action_bias: np.ndarray

    @property
    def in_bits(self) -> int:
        return int(self.mean.shape[0] * self.thresholds.shape[0])

    def encode(self, obs: np.ndarray) -> np.ndarray:
        """Thermometer bits (batch, obs_dim * B) bool of observations (batch, obs_dim)."""
        obs = as_array(obs, "obs", ndim=2)
        if obs.shape[1] != self.mean.shape[0]:
            raise ValueError(f"obs: expected shape (batch, {self.mean.shape[0]}), got {obs.shape}")
        x_hat = np.clip((obs - self.mean) / np.sqrt(self.var + EPS), -CLIP, CLIP)
        return (x_hat[..., None] > self.thresholds).reshape(x_hat.shape[0], -1)

    def popcounts(self, bits: np.ndarray) -> np.ndarray:
        """Integer forward: bits (batch, in_bits) -> popcounts (batch, act_dim) int64."""
        h = np.asarray(bits)
        if h.ndim != 2 or h.shape[1] != self.in_bits or h.shape[0] == 0:
            raise ValueError(f"bits must have shape (batch, {self.in_bits}) with batch >= 1, got {h.shape}")
        if h.dtype != bool and not np.all((h == 0) | (h == 1)):
            raise ValueError("bits: values must be 0 or 1")
        h = h.astype(np.int64)
        for m, t in zip(self.maps, self.tables, strict=True):
            addr = np.zeros((h.shape[0], m.shape[0]), dtype=np.int64)
            for i in range(m.shape[1]):
                addr |= h[:, m[:, i]] << i
            h = t[np.arange(m.shape[0])[None, :], addr].astype(np.int64)
        sums = np.zeros((h.shape[0], self.act_dim), dtype=np.int64)
        for a in range(self.act_dim):
            sums[:, a] = h[:, a * self.group_size:(a + 1) * self.group_size].sum(1)
        return sums

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic actions (batch, act_dim)."""
        pop = self.popcounts(self.encode(np.atleast_2d(obs)))
        return head_affine(pop, self.group_size, self.log_alpha, self.beta, self.action_scale, self.action_bias)


def _check_bits(bits: torch.Tensor | np.ndarray, in_bits: int) -> torch.Tensor:
    """A (batch >= 1, in_bits) tensor of 0/1 values (bool or numbers), else ValueError naming ``bits``."""
    b = torch.as_tensor(bits)
    if b.ndim != 2 or b.shape[1] != in_bits or b.shape[0] == 0:
        raise ValueError(f"bits must have shape (batch, {in_bits}) with batch >= 1, got {tuple(b.shape)}")
    if b.dtype != torch.bool and not bool(((b == 0) | (b == 1)).all()):
        raise ValueError("bits: values must be 0 or 1")
    return b
