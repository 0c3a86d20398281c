"""Fixed controllers for the parity claims' preconditions and controls (none of this is in the paper).

The parity claims (``dwc_over_mlp``, ``dwc_over_qmlp``: the DWC's deterministic return >= 0.9 of the baseline's
at the same SAC budget) compare two trained actors. Two things make such a verdict mean something:

- a **precondition**: the baseline actually learned the task, measured against a fixed controller that holds the
  system up (:func:`reference_controller`): the LQR law on InvertedPendulum (return 1000, the maximum), a PD
  controller that keeps the Hopper standing (return ~1000 from the healthy reward alone). A baseline below 0.9 of
  that controller has not learned the task, and "the DWC matches it" says nothing;
- **controls** that measure the check's power and false-positive rate (:func:`control_returns`): the actors are
  replaced by the reference controller, and the DWC arm's episodes are replaced by the non-acting policy's
  (:class:`ZeroController`) on a known share of episodes. The check's statistic is then computed by the same
  code as in a trained run (``experiments._return_checks``).
"""

from __future__ import annotations

import abc

import numpy as np
import torch
from torch import nn

from icml2026.core import spawn

from .data import lqr_cartpole_law
from .sac import ENVS, evaluate

__all__ = [
    "PLANTED_RATIO",
    "NULL_RATIO",
    "FixedController",
    "LQRController",
    "StandController",
    "ZeroController",
    "reference_controller",
    "replaced_episodes",
    "control_returns",
]

#: The paper's least favourable task that it still calls parity: Walker2d, DWC 4707 vs FP32 4977 (ratio 0.946).
PLANTED_RATIO = 4707 / 4977
#: The paper's task where DWC does not match FP32 (capacity-limited): HalfCheetah, 7529 vs 11066 (ratio 0.680).
NULL_RATIO = 7529 / 11066


class FixedController(nn.Module, metaclass=abc.ABCMeta):
    """A controller without parameters, with the actors' ``deterministic(obs) -> action`` interface.

    It is an ``nn.Module`` (with no parameters) only so that :func:`.sac.evaluate` runs it unchanged.
    """

    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.obs_dim, self.act_dim = obs_dim, act_dim

    @abc.abstractmethod
    def _action(self, obs: np.ndarray) -> np.ndarray:
        """The action of one finite observation; each controller below defines it."""

    def deterministic(self, obs: np.ndarray | torch.Tensor) -> np.ndarray:
        """The action (act_dim,) for one observation (obs_dim,)."""
        x = np.asarray(obs, dtype=np.float64).reshape(-1)
        if x.shape != (self.obs_dim,) or not np.isfinite(x).all():
            raise ValueError(f"observation must be {self.obs_dim} finite numbers, got shape {x.shape}")
        return self._action(x)


class ZeroController(FixedController):
    """The non-acting policy (action 0): what an actor that learned nothing at all does."""

    def _action(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros(self.act_dim)


class LQRController(FixedController):
    """InvertedPendulum: the saturated LQR law of :func:`.data.lqr_cartpole_law` (return 1000 on every episode)."""

    def __init__(self) -> None:
        super().__init__(4, 1)
        self.law = lqr_cartpole_law()

    def _action(self, obs: np.ndarray) -> np.ndarray:
        return np.asarray(self.law(obs[None])[0], dtype=np.float64)


class StandController(FixedController):
    """Hopper: a PD controller holding the three joints at 0 (``a = clip(-kp q - kd q_dot, -1, 1)``).

    It stands still for the whole episode: return ~1000, the healthy reward alone, no forward progress.
    kp = 3, kd = 0.3 are ours (any kp in 1..10 with kd = kp / 10 stands for 1000 steps).
    """

    def __init__(self, kp: float = 3.0, kd: float = 0.3) -> None:
        super().__init__(11, 3)
        self.kp, self.kd = kp, kd

    def _action(self, obs: np.ndarray) -> np.ndarray:
        # Hopper-v4 observation: z, torso angle, 3 joint angles (2:5), 6 velocities of which joints are 8:11
        return np.clip(-self.kp * obs[2:5] - self.kd * obs[8:11], -1.0, 1.0)


def reference_controller(env_id: str) -> FixedController | None:
    """The fixed controller a learned baseline is measured against, or None where we have none."""
    if env_id == "InvertedPendulum-v4":
        return LQRController()
    if env_id == "Hopper-v4":
        return StandController()
    return None


def replaced_episodes(n_episodes: int, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """A boolean mask of ``round((1 - ratio) * n_episodes)`` episodes, at random positions.

    Replacing these episodes' returns by the non-acting policy's (~0 to 0.3 of the reference's) moves the
    arm's mean return to about ``ratio`` of the reference's: the known fraction of the planted effect.
    """
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"ratio must be in [0, 1], got {ratio}")
    n_replaced = int(round((1.0 - ratio) * n_episodes))
    mask = np.zeros(n_episodes, dtype=bool)
    mask[rng.choice(n_episodes, size=n_replaced, replace=False)] = True
    return mask


def control_returns(env_id: str, arms: list[str], n_seeds: int, n_episodes: int, control: str,
                    rng: np.random.Generator) -> dict[str, list[list[float]]]:
    """Per arm and seed, the deterministic returns of ``n_episodes`` episodes in a control run.

    Every arm is the reference controller of ``env_id``; the ``"dwc"`` arm has its episodes replaced by the
    non-acting policy's on the planted (:data:`PLANTED_RATIO`, the paper's parity) or the null
    (:data:`NULL_RATIO`, the paper's non-parity) share. Episodes run through :func:`.sac.evaluate`, each arm and
    seed on its own reset stream.

    Raises
    ------
    ValueError
        ``control`` is not ``"planted"`` or ``"null"``, or ``env_id`` has no reference controller.
    """
    if control not in ("planted", "null"):
        raise ValueError(f"control must be 'planted' or 'null', got {control!r}")
    ref = reference_controller(env_id)
    if ref is None:
        raise ValueError(f"env_id = {env_id!r}: the controls need a reference controller (InvertedPendulum-v4, "
                         "Hopper-v4)")
    obs_dim, act_dim = ENVS[env_id]
    zero = ZeroController(obs_dim, act_dim)
    ratio = PLANTED_RATIO if control == "planted" else NULL_RATIO
    r_mask, *streams = spawn(rng, 1 + len(arms) * n_seeds)
    mask = replaced_episodes(n_seeds * n_episodes, ratio, r_mask).reshape(n_seeds, n_episodes)
    out: dict[str, list[list[float]]] = {}
    for i, arm in enumerate(arms):
        out[arm] = []
        for s in range(n_seeds):
            r = streams[i * n_seeds + s]
            if arm != "dwc":
                out[arm].append(evaluate(ref, env_id, n_episodes, r))
                continue
            out[arm].append([evaluate(zero if mask[s, e] else ref, env_id, 1, r)[0] for e in range(n_episodes)])
    return out
