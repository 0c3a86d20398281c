"""Baseline actors: the FP32 SAC MLP actor (CleanRL), and the DWC actor that wraps :class:`DWCPolicy`.

Both expose the same interface to :mod:`.sac`: ``normalizer``, ``dist_params(obs) -> (mean_pre_tanh,
log_std)``, ``deterministic(obs) -> action`` (numpy), ``action_scale``/``action_bias`` and
``after_step()`` (called after every optimiser step).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .encoding import ObsNormalizer
from .policy import DWCPolicy, check_action_affine

__all__ = ["LOG_STD_MIN", "LOG_STD_MAX", "MLPActor", "QuantMLPActor", "DWCActor", "squash_log_std"]

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0  # CleanRL sac_continuous_action


def squash_log_std(raw: torch.Tensor) -> torch.Tensor:
    """``tanh`` squash of a raw log-std into [LOG_STD_MIN, LOG_STD_MAX]."""
    return LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (torch.tanh(raw) + 1.0)


def check_bit_width(name: str, value: object) -> None:
    """A quantiser bit width: an int in [2, 16] (brevitas' practical range), else ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 16:
        raise ValueError(f"{name} must be an int in [2, 16], got {value!r}")


def _check_obs(obs: np.ndarray | torch.Tensor, obs_dim: int) -> torch.Tensor:
    if isinstance(obs, torch.Tensor):
        obs = obs.detach().cpu().numpy()
    try:
        x = torch.as_tensor(np.asarray(obs, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"observation: cannot be read as an array of numbers: {exc}") from None
    if x.ndim not in (1, 2) or x.shape[-1] != obs_dim:
        raise ValueError(f"observation must have shape ({obs_dim},) or (batch, {obs_dim}), got {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise ValueError(f"observation: empty batch, shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError("observation contains NaN or inf")
    return x.reshape(-1, obs_dim)


class MLPActor(nn.Module):
    """FP32 SAC actor: normalised obs -> 256 -> 256 (ReLU) -> mean and log-std heads (CleanRL)."""

    action_scale: torch.Tensor
    action_bias: torch.Tensor

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 256, action_scale: np.ndarray | float = 1.0,
                 action_bias: np.ndarray | float = 0.0, generator: torch.Generator | None = None) -> None:
        super().__init__()
        for name, v in (("obs_dim", obs_dim), ("act_dim", act_dim), ("hidden", hidden)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        scale_arr, bias_arr = check_action_affine(action_scale, action_bias, int(act_dim))
        self.obs_dim, self.act_dim = obs_dim, act_dim
        self.normalizer = ObsNormalizer(obs_dim)
        self.fc1, self.fc2 = nn.Linear(obs_dim, hidden), nn.Linear(hidden, hidden)
        self.fc_mean, self.fc_logstd = nn.Linear(hidden, act_dim), nn.Linear(hidden, act_dim)
        _reinit(self, generator)
        self.register_buffer("action_scale", torch.as_tensor(scale_arr, dtype=torch.float32))
        self.register_buffer("action_bias", torch.as_tensor(bias_arr, dtype=torch.float32))

    def dist_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Pre-tanh mean and log-std, each (batch, act_dim)."""
        h = torch.relu(self.fc2(torch.relu(self.fc1(self.normalizer.normalize(obs).float()))))
        return self.fc_mean(h), squash_log_std(self.fc_logstd(h))

    @torch.no_grad()
    def deterministic(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic action ``tanh(mean) * scale + bias`` (act_dim,) or (batch, act_dim)."""
        x = _check_obs(obs, self.obs_dim).to(self.action_scale.device)
        a = torch.tanh(self.dist_params(x)[0]) * self.action_scale + self.action_bias
        out = a.double().cpu().numpy()
        return out[0] if np.ndim(obs) == 1 else out

    def after_step(self) -> None:
        """Nothing to do after an optimiser step."""


class QuantMLPActor(MLPActor):
    """Quantisation-aware-trained SAC actor (brevitas): the FP32 actor's 256-256 ReLU MLP with quantised
    input, weights and activations and an 8-bit output (the authors' earlier QAT baseline, arXiv 2511.07046).

    Parameters
    ----------
    weight_bits, act_bits : bit widths of the hidden and mean-head weights and of the hidden ReLU outputs
        (paper sweeps 2, 3, 8).
    input_bits : bit width of the normalised observation (paper sweeps 2..8).
    output_bits : bit width of the pre-tanh mean (paper: 8).

    Biases stay in float (brevitas' default); the log-std head is a float layer on the quantised trunk and,
    like the DWC's side network, is not part of the deterministic inference path.
    """

    # Deviation: differences from the released QAT model (official quantized_models.py), each declared in the
    # card: (1) biases are float here, Int32Bias-quantised there; (2) our log-std head reads the quantised
    # trunk, the official SAC actor takes it from a separate float network; (3) the official model starts with
    # quantisation disabled (a warm-up that only collects activation statistics) and enables it later, ours
    # quantises from the first step; (4) our 8-bit output quantiser is brevitas' Int8ActPerTensorFloat, theirs
    # a QuantIdentity with their own constant-scale injectors; (5) no weight clipping to [-1, 1].

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 256, action_scale: np.ndarray | float = 1.0,
                 action_bias: np.ndarray | float = 0.0, weight_bits: int = 8, act_bits: int = 8,
                 input_bits: int = 8, output_bits: int = 8, generator: torch.Generator | None = None) -> None:
        for name, v in (("weight_bits", weight_bits), ("act_bits", act_bits), ("input_bits", input_bits),
                        ("output_bits", output_bits)):
            check_bit_width(name, v)
        try:
            import brevitas.nn as qnn
            from brevitas.quant import Int8ActPerTensorFloat
        except ImportError as exc:  # pragma: no cover - the dwc extra installs brevitas
            raise ImportError("the quantised baseline needs brevitas: pip install 'icml2026[dwc]'") from exc
        super().__init__(obs_dim, act_dim, hidden, action_scale, action_bias, generator=None)
        self.bits = {"weight": weight_bits, "act": act_bits, "input": input_bits, "output": output_bits}
        self.q_in = qnn.QuantIdentity(bit_width=input_bits)
        self.fc1 = qnn.QuantLinear(obs_dim, hidden, bias=True, weight_bit_width=weight_bits)
        self.fc2 = qnn.QuantLinear(hidden, hidden, bias=True, weight_bit_width=weight_bits)
        self.relu1, self.relu2 = qnn.QuantReLU(bit_width=act_bits), qnn.QuantReLU(bit_width=act_bits)
        self.fc_mean = qnn.QuantLinear(hidden, act_dim, bias=True, weight_bit_width=weight_bits,
                                       output_quant=Int8ActPerTensorFloat, output_bit_width=output_bits)
        _reinit(self, generator)

    def dist_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Quantised pre-tanh mean and float log-std, each (batch, act_dim)."""
        x = self.q_in(self.normalizer.normalize(obs).float())
        h = self.relu2(self.fc2(self.relu1(self.fc1(x))))
        return self.fc_mean(h), squash_log_std(self.fc_logstd(h))


class DWCActor(nn.Module):
    """SAC actor whose mean head is a :class:`DWCPolicy`; log-std from a float side network (dropped at
    inference): normalised obs -> 64 tanh -> act_dim, squashed to [-5, 2] (brief, Training)."""

    def __init__(self, policy: DWCPolicy, side_hidden: int = 64, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if not isinstance(policy, DWCPolicy):
            raise ValueError(f"policy: expected a DWCPolicy, got {type(policy).__name__}")
        if isinstance(side_hidden, bool) or not isinstance(side_hidden, int) or side_hidden < 1:
            raise ValueError(f"side_hidden must be a positive int, got {side_hidden!r}")
        self.policy = policy
        self.obs_dim, self.act_dim = policy.obs_dim, policy.act_dim
        self.side = nn.Sequential(nn.Linear(policy.obs_dim, side_hidden), nn.Tanh(), nn.Linear(side_hidden,
                                                                                                policy.act_dim))
        _reinit(self.side, generator)

    @property
    def normalizer(self) -> ObsNormalizer:
        return self.policy.normalizer

    @property
    def action_scale(self) -> torch.Tensor:
        return self.policy.action_scale

    @property
    def action_bias(self) -> torch.Tensor:
        return self.policy.action_bias

    def dist_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Pre-tanh mean from the DWC, log-std from the side network, each (batch, act_dim)."""
        z = self.policy.pre_tanh(obs)
        return z, squash_log_std(self.side(self.normalizer.normalize(obs).float()))

    def deterministic(self, obs: np.ndarray) -> np.ndarray:
        """The DWC's integer inference path :meth:`DWCPolicy.act`."""
        return self.policy.act(obs)

    def after_step(self) -> None:
        """Clamp the LUT tables to [-1, 1] and count the optimiser step."""
        self.policy.clamp_tables_()
        self.policy.mark_trained()


@torch.no_grad()
def _reinit(module: nn.Module, generator: torch.Generator | None) -> None:
    """PyTorch's default Linear init (Kaiming-uniform bounds), drawn from ``generator``."""
    if generator is None:
        return
    for m in module.modules():
        if isinstance(m, nn.Linear):
            bound = 1.0 / np.sqrt(m.in_features)
            m.weight.copy_(torch.rand(m.weight.shape, generator=generator) * 2 * bound - bound)
            m.bias.copy_(torch.rand(m.bias.shape, generator=generator) * 2 * bound - bound)
