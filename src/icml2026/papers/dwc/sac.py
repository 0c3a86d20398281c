"""Soft Actor-Critic with a DWC or MLP actor, structured as CleanRL's ``sac_continuous_action.py`` (our code).

The pieces and the loop follow CleanRL's script: ``make_env`` thunks collected in a ``gymnasium.vector.SyncVectorEnv``
(``envs``, ``cfg.num_envs`` copies, :mod:`.envs`), a ``SoftQNetwork`` pair with Polyak-averaged targets (twin
256-256 ReLU critics on the normalised observation), the ``Actor`` (here the paper's contribution: the DWC mean
head with its float log-std side net, :class:`.baselines.DWCActor`; or the FP32 / QAT MLP baselines), a
:class:`ReplayBuffer` of ``num_envs`` transitions per step, and one loop over ``global_step``: act in every env
(uniform random actions before ``learning_starts``), store ``real_next_obs`` (the final observation of an episode
that ended, from ``infos["final_obs"]``), one critic update per step, delayed actor updates (every
``policy_frequency`` steps, ``policy_frequency`` updates) and automatic entropy tuning (target ``-act_dim``).
Any gymnasium id, ``"module:factory"`` or (in Python) a factory names the environment (:mod:`.envs`).
Checkpoints hold everything but the env's internal state and are loaded with ``weights_only=True``; training
writes the full format, and a compact one (:mod:`.checkpoint`: 16-bit optimiser moments and target critics, a
subsampled buffer, compressed) also resumes.

Device: ``train_sac(..., device="cuda")`` puts the actor, the critics and their targets, the entropy parameter and
the replay buffer on that device. Every random draw stays on the CPU generators of the CPU path (drawn there,
then moved), so the CPU path is the same computation as before the option existed; the env runs on the CPU
(observations go to the device, actions come back with ``.cpu()``); evaluations and the returned actor are on
the CPU.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import numpy as np
import torch
from torch import nn

from icml2026.core import torch_generator
from icml2026.core.config import config, param
from icml2026.core.device import resolve_device
from icml2026.core.validate import positive_int

from .baselines import DWCActor, MLPActor, QuantMLPActor, _reinit
from .checkpoint import load_checkpoint, save_checkpoint
from .envs import EnvSpec, env_dims, env_name, make_env, make_vector_env
from .policy import DWCPolicy

__all__ = ["ENVS", "SACConfig", "SACResult", "ReplayBuffer", "make_actor", "train_sac", "evaluate", "make_env",
           "check_dwc_size", "module_device", "on_cpu"]

#: The paper's MuJoCo tasks (gymnasium 1.x, -v4) with their (observation, action) sizes: the ids the experiments'
#: presets use. Any other gymnasium id (or factory, :mod:`.envs`) works too; its sizes are read from the env.
#: Humanoid (376 observations) is left out: its 376 * B thermometer bits make the learnable mapping gigabytes large.
ENVS: dict[str, tuple[int, int]] = {
    "InvertedPendulum-v4": (4, 1),
    "InvertedDoublePendulum-v4": (11, 1),
    "Hopper-v4": (11, 3),
    "HalfCheetah-v4": (17, 6),
    "Walker2d-v4": (17, 6),
    "Ant-v4": (27, 8),
    "Swimmer-v4": (8, 2),
    "Reacher-v4": (11, 2),
}
#: An environment id in a config: any registered gymnasium id, "module:EnvId" or "module:factory" (checked by
#: :func:`.envs.env_dims` when the config is built)
EnvId = str

# Learnable-mapping weights of one DWC (floats); each is held 4 times (value, gradient, two Adam moments).
_MAX_MAPPING_WEIGHTS = 60_000_000


def check_dwc_size(env_id: EnvSpec, n_luts: int, n_layers: int, bits: int, lut_inputs: int,
                   key: str = "env_id") -> None:
    """Rules between the DWC size fields: odd ``bits``, ``n_luts >= act_dim``, mapping weights that fit memory.

    ``env_id``: any environment :mod:`.envs` accepts (an unknown one: ValueError naming ``key``). Raises ValueError
    whose message starts with the offending field's name.
    """
    obs_dim, act_dim = ENVS[env_id] if isinstance(env_id, str) and env_id in ENVS else env_dims(env_id, key)
    env_id = env_name(env_id)
    if bits % 2 == 0:
        raise ValueError(f"bits = {bits}: must be an odd integer >= 3 (thermometer with a threshold at 0)")
    if n_luts < act_dim:
        raise ValueError(f"n_luts = {n_luts}: the last layer needs at least act_dim = {act_dim} LUTs ({env_id})")
    weights = obs_dim * bits * n_luts * lut_inputs + (n_layers - 1) * n_luts * n_luts * lut_inputs
    if weights > _MAX_MAPPING_WEIGHTS:
        raise ValueError(f"n_luts = {n_luts}: with bits = {bits}, n_layers = {n_layers}, lut_inputs = {lut_inputs} "
                         f"on {env_id} the learnable mapping has {weights:,} weights (limit "
                         f"{_MAX_MAPPING_WEIGHTS:,}); use fewer LUTs or bits")

Actor = MLPActor | QuantMLPActor | DWCActor


class EvalPolicy(Protocol):
    """What :func:`evaluate` needs: a module with ``deterministic(obs) -> action`` (the actors, and the fixed
    controllers of :mod:`.controls`)."""

    def deterministic(self, obs: np.ndarray) -> np.ndarray: ...  # pragma: no cover


@config
class SACConfig:
    """SAC and actor hyper-parameters (paper values in comments)."""

    env_id: str = param("InvertedPendulum-v4", help="any gymnasium id with Box observations and actions, "
                        "'module:EnvId' or 'module:factory'")
    actor: Literal["dwc", "mlp", "qmlp"] = "dwc"  # DWC, the FP32 MLP baseline or the brevitas QAT baseline
    total_steps: int = param(30_000, 1, 1_000_000, help="paper: 1M (MuJoCo locomotion)")
    learning_starts: int = param(5_000, 0, 1_000_000, help="paper: 5000; < total_steps")
    batch_size: int = param(256, 1, 4096, help="paper: 256")
    buffer_size: int = param(1_000_000, 1, 1_000_000, help="paper: 1e6")
    gamma: float = param(0.99, 0.0, 1.0, lo_open=True, hi_open=True)
    polyak: float = param(0.005, 0.0, 1.0, lo_open=True)
    policy_lr: float = param(3e-4, 0.0, 1.0, lo_open=True, help="Adam eps 1e-5")
    q_lr: float = param(1e-3, 0.0, 1.0, lo_open=True)
    policy_frequency: int = param(2, 1, 100, help="paper: 2 (2 updates each time)")
    critic_hidden: int = param(256, 1, 4096)
    mlp_hidden: int = param(256, 1, 4096)
    qat_weight_bits: int = param(8, 2, 16, help="paper's QAT sweep: 2, 3, 8")
    qat_act_bits: int = param(8, 2, 16, help="paper's QAT sweep: 2, 3, 8")
    qat_input_bits: int = param(8, 2, 16, help="paper's QAT sweep: 2..8")
    n_luts: int = param(256, 1, 4096, help="paper: 1024 per layer")
    n_layers: int = param(2, 1, 8)
    bits: int = param(63, 3, 255, help="odd; paper: 63")
    lut_inputs: int = param(6, 1, 10, help="paper: 6")
    mapping: Literal["learnable", "random"] = "learnable"
    eval_episodes: int = param(20, 1, 1000, help="paper: 1000 deterministic episodes")
    checkpoint_every: int = param(5_000, 1, 1_000_000)
    eval_every: int = param(0, 0, 1_000_000, help="deterministic evaluation every this many steps (0: none)")
    curve_episodes: int = param(10, 1, 100, help="episodes per periodic evaluation (issue: 10)")
    log_last_obs: int = param(2_000, 0, 1_000_000, help="on-policy observations kept for circuit verification")
    # CleanRL's num_envs: every global step acts in num_envs envs and stores num_envs transitions (one update)
    num_envs: int = param(1, 1, 64, help="vector envs collecting data (SyncVectorEnv); transitions = steps x num_envs")

    def __post_init__(self) -> None:
        if self.learning_starts >= self.total_steps:
            raise ValueError(f"learning_starts = {self.learning_starts}: must be in [0, total_steps = "
                             f"{self.total_steps})")
        check_dwc_size(self.env_id, self.n_luts, self.n_layers, self.bits, self.lut_inputs)


@dataclass
class SACResult:
    """A trained actor, its training curve and final deterministic evaluation."""

    actor: Actor
    episode_returns: list[float]
    episode_end_steps: list[int]
    eval_returns: list[float]
    logged_obs: np.ndarray             # (n, obs_dim) recent on-policy observations
    steps_done: int
    wall_s: float
    resumed_from: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def make_actor(cfg: SACConfig, obs_dim: int, act_dim: int, scale: np.ndarray, bias: np.ndarray,
               generator: torch.Generator) -> Actor:
    """The DWC actor (DWC mean head + side log-std net), the FP32 MLP or the QAT MLP actor of ``cfg``."""
    if cfg.actor == "mlp":
        return MLPActor(obs_dim, act_dim, cfg.mlp_hidden, scale, bias, generator=generator)
    if cfg.actor == "qmlp":
        return QuantMLPActor(obs_dim, act_dim, cfg.mlp_hidden, scale, bias, weight_bits=cfg.qat_weight_bits,
                             act_bits=cfg.qat_act_bits, input_bits=cfg.qat_input_bits, generator=generator)
    pol = DWCPolicy(obs_dim, act_dim, n_luts=cfg.n_luts, n_layers=cfg.n_layers, bits=cfg.bits,
                    lut_inputs=cfg.lut_inputs, mapping=cfg.mapping, action_scale=scale, action_bias=bias,
                    generator=generator)
    return DWCActor(pol, generator=generator)


def module_device(module: nn.Module) -> torch.device:
    """The device of ``module``'s first parameter (or buffer); the CPU for a module without either."""
    for t in (*module.parameters(), *module.buffers()):
        return t.device
    return torch.device("cpu")


@contextmanager
def on_cpu(module: nn.Module) -> Iterator[nn.Module]:
    """Run the ``with`` body with ``module`` on the CPU (where the numpy paths need it), then move it back.

    A module already on the CPU is not touched.
    """
    dev = module_device(module)
    if dev.type == "cpu":
        yield module
        return
    module.to("cpu")
    try:
        yield module
    finally:
        module.to(dev)


def _sample(actor: Actor, obs: torch.Tensor, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Reparameterised tanh-Gaussian action and its log-probability (batch,).

    The noise is drawn from the CPU generator ``g`` and moved to ``obs``'s device (the CPU path is unchanged).
    """
    mean, log_std = actor.dist_params(obs)
    std = log_std.exp()
    u = mean + std * torch.randn(mean.shape, generator=g).to(mean.device)
    y = torch.tanh(u)
    act = y * actor.action_scale + actor.action_bias
    logp = (-0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi))
    logp = logp - torch.log(actor.action_scale * (1 - y.pow(2)) + 1e-6)
    return act, logp.sum(-1)


def evaluate(actor: Actor | EvalPolicy, env_id: EnvSpec, n_episodes: int, rng: np.random.Generator) -> list[float]:
    """Returns of ``n_episodes`` deterministic episodes (the actor's ``deterministic`` path) on one env.

    ``env_id``: any environment :mod:`.envs` accepts. An actor on another device is moved to the CPU for the
    episodes and back afterwards.
    """
    n_episodes = positive_int(n_episodes, "n_episodes")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")
    env = make_env(env_id)
    import gymnasium as gym

    if not isinstance(env.action_space, gym.spaces.Box):
        env.close()
        raise ValueError(f"env_id = {env_name(env_id)!r}: needs a continuous (Box) action space, got "
                         f"{env.action_space}")
    out = []
    with on_cpu(cast(nn.Module, actor)):
        for _ in range(n_episodes):
            obs, _ = env.reset(seed=int(rng.integers(2**31 - 1)))
            done, ret = False, 0.0
            while not done:
                obs, r, term, trunc, _ = env.step(actor.deterministic(obs).astype(np.float32))
                ret += float(r)
                done = bool(term or trunc)
            out.append(ret)
    env.close()
    return out


class SoftQNetwork(nn.Sequential):
    """CleanRL's ``SoftQNetwork``: Q(s, a) by an MLP over [normalised obs, action] (two hidden ReLU layers)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, generator: torch.Generator) -> None:
        super().__init__(nn.Linear(obs_dim + act_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 1))
        _reinit(self, generator)


def _critic(obs_dim: int, act_dim: int, hidden: int, g: torch.Generator) -> nn.Module:
    return SoftQNetwork(obs_dim, act_dim, hidden, g)


class ReplayBuffer:
    """A ring buffer of transitions on ``device`` (CleanRL uses Stable-Baselines3's ``ReplayBuffer``).

    ``data`` holds ``obs`` and ``next`` (float64: the observation normaliser's input), ``act``, ``rew`` and ``term``
    (terminated, not truncated: SAC bootstraps through a time limit). Transition ``t`` (counted over envs and
    steps: global step ``s`` of env ``j`` is ``t = s * num_envs + j``) lives in slot ``t % capacity``. ``data`` is
    the dict that checkpoints store under ``"buffer"``.
    """

    def __init__(self, capacity: int, obs_dim: int, act_dim: int, device: torch.device) -> None:
        self.capacity = positive_int(capacity, "capacity")
        self.device = device
        self.data = {"obs": torch.zeros(capacity, obs_dim, dtype=torch.float64, device=device),
                     "next": torch.zeros(capacity, obs_dim, dtype=torch.float64, device=device),
                     "act": torch.zeros(capacity, act_dim, device=device), "rew": torch.zeros(capacity, device=device),
                     "term": torch.zeros(capacity, device=device)}

    def add(self, t: int, obs: np.ndarray, next_obs: np.ndarray, action: np.ndarray, reward: float,
            terminated: bool) -> None:
        """Store transition number ``t``."""
        i = t % self.capacity
        self.data["obs"][i] = torch.as_tensor(obs, dtype=torch.float64, device=self.device)
        self.data["next"][i] = torch.as_tensor(next_obs, dtype=torch.float64, device=self.device)
        self.data["act"][i] = torch.as_tensor(action, dtype=torch.float32, device=self.device)
        self.data["rew"][i] = float(reward)
        self.data["term"][i] = float(terminated)

    def sample(self, n_stored: int, batch_size: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
        """A uniform batch (with replacement) over the first ``min(n_stored, capacity)`` slots (drawn with ``rng``)."""
        idx = torch.from_numpy(rng.integers(0, min(n_stored, self.capacity), size=batch_size)).to(self.device)
        return {k: v[idx] for k, v in self.data.items()}

    def last(self, n_stored: int, n: int) -> np.ndarray:
        """Observations of the last ``n`` stored transitions, newest first (n, obs_dim) on the CPU."""
        slots = [(n_stored - 1 - j) % self.capacity for j in range(n)]
        return self.data["obs"][torch.tensor(slots, dtype=torch.long, device=self.device)].cpu().numpy()


def train_sac(cfg: SACConfig, rng: np.random.Generator, checkpoint_path: str | Path | None = None,
              stop_at: int | None = None, progress: bool | str = False,
              device: str | torch.device = "cpu", env: EnvSpec | None = None) -> SACResult:
    """Train SAC (CleanRL's structure) with ``cfg.actor`` as the policy; resume from ``checkpoint_path`` if it exists.

    Parameters
    ----------
    cfg : hyper-parameters (``cfg.env_id`` and ``cfg.num_envs`` name the environment and the number of vector envs).
    rng : numpy generator (env seeds, warm-up actions, torch generator for init and sampling).
    checkpoint_path : where checkpoints are written every ``cfg.checkpoint_every`` steps and at the end;
        if the file exists training resumes from it (a fresh env episode starts at the resumed step). Full and
        compact files (:func:`.checkpoint.convert_checkpoint`) both resume; a finished run's file is read, not
        rewritten.
    stop_at : stop after this many total steps (simulated interruption; a checkpoint is written).
    progress : show progress (``core.progress.track``); a string is used as its description (default
        ``"SAC <actor> <env_id>"``).
    device : torch device of the networks, the entropy parameter and the replay buffer ("cpu", "cuda",
        "cuda:<n>", "mps"); a checkpoint written on one device resumes on any other. The returned actor is on
        the CPU.
    env : an environment factory (a zero-argument callable returning a ``gymnasium.Env``) or id used instead of
        ``cfg.env_id`` for training and the final evaluation.

    Steps: ``total_steps`` global steps (CleanRL's ``global_step``), each acting in all ``num_envs`` envs, so the
    buffer receives ``total_steps * num_envs`` transitions and the networks ``total_steps - learning_starts``
    critic updates. Episode ends and evaluation steps are reported in env transitions (``step * num_envs``).
    """
    if not isinstance(cfg, SACConfig):
        raise ValueError(f"cfg: expected a SACConfig, got {type(cfg).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")
    if stop_at is not None:
        stop_at = positive_int(stop_at, "stop_at")
    if not isinstance(progress, (bool, str)):
        raise ValueError(f"progress: expected a bool or a description string, got {type(progress).__name__}")
    if isinstance(device, str):
        dev = resolve_device(device)
    elif isinstance(device, torch.device):
        dev = device
    else:
        raise ValueError(f"device = {device!r}: expected a device name (cpu, cuda, cuda:<n>, mps) or a torch.device")
    if dev.type == "meta":
        raise ValueError("device = 'meta': SAC needs numbers (the meta device carries shapes only)")
    env_spec: EnvSpec = cfg.env_id if env is None else env
    key = "env_id" if env is None else "env"
    if env is not None:  # a factory or another id: its sizes checked against the DWC fields here
        check_dwc_size(env_spec, cfg.n_luts, cfg.n_layers, cfg.bits, cfg.lut_inputs, key=key)
    t0 = time.perf_counter()
    n_envs = cfg.num_envs
    envs = make_vector_env(env_spec, n_envs, key)
    import gymnasium as gym

    act_space, obs_space = envs.single_action_space, envs.single_observation_space
    if not isinstance(act_space, gym.spaces.Box) or len(act_space.shape) != 1:
        envs.close()
        raise ValueError(f"{key} = {env_name(env_spec)!r}: SAC here needs a continuous (Box, 1-D) action space, got "
                         f"{act_space}")
    obs_dim, act_dim = int(obs_space.shape[0]), int(act_space.shape[0])
    high, low = act_space.high.astype(np.float64), act_space.low.astype(np.float64)
    scale, bias = (high - low) / 2.0, (high + low) / 2.0
    g = torch_generator(rng)  # a CPU generator on every device: the same draws everywhere
    # built on the CPU (initial weights from g), then moved
    actor = make_actor(cfg, obs_dim, act_dim, scale, bias, g).to(dev)
    q1, q2 = _critic(obs_dim, act_dim, cfg.critic_hidden, g), _critic(obs_dim, act_dim, cfg.critic_hidden, g)
    q1t, q2t = _critic(obs_dim, act_dim, cfg.critic_hidden, g), _critic(obs_dim, act_dim, cfg.critic_hidden, g)
    q1, q2, q1t, q2t = q1.to(dev), q2.to(dev), q1t.to(dev), q2t.to(dev)
    q1t.load_state_dict(q1.state_dict())
    q2t.load_state_dict(q2.state_dict())
    opt_q = torch.optim.Adam([*q1.parameters(), *q2.parameters()], lr=cfg.q_lr)
    opt_pi = torch.optim.Adam(actor.parameters(), lr=cfg.policy_lr, eps=1e-5)
    log_ent = torch.zeros(1, device=dev, requires_grad=True)
    opt_ent = torch.optim.Adam([log_ent], lr=cfg.q_lr)
    target_entropy = -float(act_dim)
    rb = ReplayBuffer(min(cfg.buffer_size, cfg.total_steps * n_envs), obs_dim, act_dim, dev)
    buf = rb.data
    returns: list[float] = []
    ends: list[int] = []
    curve: list[tuple[int, float]] = []  # (step, mean deterministic return) of the periodic evaluations
    # The periodic evaluations draw from their own stream (drawn only when they are on, so runs without them
    # keep their old random streams) and do not perturb training.
    eval_rng = np.random.default_rng(int(rng.integers(2**63 - 1))) if cfg.eval_every else None
    start = 0
    ckpt = Path(checkpoint_path) if checkpoint_path is not None else None
    if ckpt is not None and ckpt.exists():
        # map_location: a checkpoint written on a GPU resumes on the CPU and vice versa
        # either format (full, or compact: expanded, see .checkpoint), read with torch.load(weights_only=True)
        state = load_checkpoint(ckpt, map_location=dev)
        for mod, name in ((actor, "actor"), (q1, "q1"), (q2, "q2"), (q1t, "q1t"), (q2t, "q2t")):
            mod.load_state_dict(state[name])
        opt_q.load_state_dict(state["opt_q"])
        opt_pi.load_state_dict(state["opt_pi"])
        opt_ent.load_state_dict(state["opt_ent"])
        with torch.no_grad():
            log_ent.copy_(state["log_ent"])
        for k in buf:
            buf[k].copy_(state["buffer"][k])
        returns, ends = list(state["returns"]), list(state["ends"])
        curve = [(int(a), float(b)) for a, b in state.get("curve", [])]
        if eval_rng is not None and "eval_rng_state" in state:
            eval_rng.bit_generator.state = state["eval_rng_state"]
        start = int(state["step"])
        rng.bit_generator.state = state["rng_state"]
        g.set_state(state["torch_rng"].cpu())  # generator states are CPU byte tensors

    def save(step: int) -> None:
        if ckpt is None:
            return
        state = {"step": step, "actor": actor.state_dict(), "q1": q1.state_dict(), "q2": q2.state_dict(),
                 "q1t": q1t.state_dict(), "q2t": q2t.state_dict(), "opt_q": opt_q.state_dict(),
                 "opt_pi": opt_pi.state_dict(), "opt_ent": opt_ent.state_dict(), "log_ent": log_ent.detach(),
                 "buffer": buf, "returns": returns, "ends": ends, "rng_state": rng.bit_generator.state,
                 "torch_rng": g.get_state(), "config": dataclasses.asdict(cfg),
                 "curve": [[a, b] for a, b in curve]}
        if eval_rng is not None:
            state["eval_rng_state"] = eval_rng.bit_generator.state
        save_checkpoint(state, ckpt)  # full format, atomic (an interruption never leaves a half-written file)

    ep_ret = np.zeros(n_envs)
    end = cfg.total_steps if stop_at is None else min(stop_at, cfg.total_steps)
    if start < end:  # a finished run reloaded from its last checkpoint draws nothing before its evaluation
        # SyncVectorEnv seeds env j with seed + j (one env: the seed itself, as a single gymnasium env)
        obs, _ = envs.reset(seed=int(rng.integers(2**31 - 1)))
    steps = range(start, end)
    if progress:
        from icml2026.core.progress import track

        desc = progress if isinstance(progress, str) else f"SAC {cfg.actor} {env_name(env_spec)}"
        steps = track(steps, desc, total=end - start)  # type: ignore[assignment]
    critics = [*q1.parameters(), *q2.parameters()]
    for global_step in steps:
        for j in range(n_envs):
            actor.normalizer.update(obs[j])  # parallel-variance update on every env step
        if global_step < cfg.learning_starts:
            # Deviation: CleanRL samples envs.single_action_space; we draw the uniform actions from the run's
            # generator (one stream for the whole run, saved in the checkpoint)
            actions = (rng.uniform(low, high)[None] if n_envs == 1
                       else rng.uniform(low, high, size=(n_envs, act_dim)))
        else:
            with torch.no_grad():
                o_t = torch.as_tensor(obs, dtype=torch.float64, device=dev)
                actions = _sample(actor, o_t, g)[0].double().cpu().numpy()
        next_obs, rewards, terms, truncs, infos = envs.step(actions.astype(np.float32))
        # same-step autoreset: an env whose episode ended returns the next episode's first observation; the
        # transition stores the real last one (CleanRL's real_next_obs)
        real_next_obs = next_obs.copy()
        for j in range(n_envs):
            done = bool(terms[j] or truncs[j])
            if done:
                real_next_obs[j] = infos["final_obs"][j]
            # bootstrap through truncation, not through termination
            rb.add(global_step * n_envs + j, obs[j], real_next_obs[j], actions[j], float(rewards[j]), bool(terms[j]))
            ep_ret[j] += float(rewards[j])
            if done:
                returns.append(float(ep_ret[j]))
                ends.append((global_step + 1) * n_envs)
                ep_ret[j] = 0.0
        obs = next_obs
        if global_step >= cfg.learning_starts:
            data = rb.sample((global_step + 1) * n_envs, cfg.batch_size, rng)
            o, o2 = data["obs"], data["next"]
            a, rw, tm = data["act"], data["rew"], data["term"]
            on, o2n = actor.normalizer.normalize(o).float(), actor.normalizer.normalize(o2).float()
            alpha = log_ent.exp().item()
            with torch.no_grad():
                a2, logp2 = _sample(actor, o2, g)
                x2 = torch.cat([o2n, a2], 1)
                qn = torch.min(q1t(x2), q2t(x2)).squeeze(-1) - alpha * logp2
                target = rw + (1 - tm) * cfg.gamma * qn
            x = torch.cat([on, a], 1)
            q_loss = ((q1(x).squeeze(-1) - target) ** 2).mean() + ((q2(x).squeeze(-1) - target) ** 2).mean()
            opt_q.zero_grad()
            q_loss.backward()
            opt_q.step()
            if global_step % cfg.policy_frequency == 0:  # TD3-style delayed update, compensated by repetition
                for _ in range(cfg.policy_frequency):
                    for p in critics:
                        p.requires_grad_(False)
                    pa, logp = _sample(actor, o, g)
                    xa = torch.cat([on, pa], 1)
                    pi_loss = (log_ent.exp().detach() * logp - torch.min(q1(xa), q2(xa)).squeeze(-1)).mean()
                    opt_pi.zero_grad()
                    pi_loss.backward()
                    opt_pi.step()
                    actor.after_step()
                    for p in critics:
                        p.requires_grad_(True)
                    # Deviation: CleanRL re-samples log pi after the actor step; we reuse this step's log pi
                    # (one actor forward fewer per update, which matters for the CPU-bound LUT layers).
                    ent_loss = (-log_ent.exp() * (logp.detach() + target_entropy)).mean()
                    opt_ent.zero_grad()
                    ent_loss.backward()
                    opt_ent.step()
            with torch.no_grad():  # target networks: Polyak averaging every step (target_network_frequency 1)
                for net, tgt in ((q1, q1t), (q2, q2t)):
                    for p, pt in zip(net.parameters(), tgt.parameters(), strict=True):
                        pt.mul_(1 - cfg.polyak).add_(cfg.polyak * p)
        if eval_rng is not None and (global_step + 1) % cfg.eval_every == 0:
            curve.append(((global_step + 1) * n_envs,
                          float(np.mean(evaluate(actor, env_spec, cfg.curve_episodes, eval_rng)))))
        if (global_step + 1) % cfg.checkpoint_every == 0:
            save(global_step + 1)
    if end > start:  # a run reloaded from its final checkpoint trained nothing: its file is left as it was
        save(end)
    envs.close()
    actor.to("cpu")  # the circuit export, the integer path and the final evaluation run on the CPU
    n_stored = end * n_envs
    n_log = min(cfg.log_last_obs, n_stored)
    logged = rb.last(n_stored, n_log) if n_log else np.zeros((0, obs_dim))
    evals = evaluate(actor, env_spec, cfg.eval_episodes, rng) if end == cfg.total_steps else []
    return SACResult(actor, returns, ends, evals, logged, end, time.perf_counter() - t0, resumed_from=start,
                     extra={"eval_curve": curve})
