"""Environments for SAC: any gymnasium id or an environment factory, single or vectorised.

An environment is named by a string or given as a factory:

* a registered gymnasium id (``"InvertedPendulum-v4"``, ``"Pendulum-v1"``, ``"MountainCarContinuous-v0"``, ...);
* ``"module:EnvId"``: gymnasium's own convention, the module is imported (it registers ``EnvId``) and the id made;
* ``"module:factory"``: a callable of an importable module that returns a ``gymnasium.Env`` (no arguments);
* in Python, any zero-argument callable returning a ``gymnasium.Env``.

SAC needs a 1-D continuous observation and a 1-D continuous action with finite bounds (:func:`env_dims` checks both
and names the key in its error). :func:`make_vector_env` builds the ``gymnasium.vector.SyncVectorEnv`` that SAC
collects data with (CleanRL's ``envs``), with same-step autoreset: a finished episode's last observation is in
``infos["final_obs"]`` and the returned observation is already the next episode's first.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["EnvSpec", "env_factory", "env_dims", "make_env", "make_vector_env", "env_name"]

#: What names an environment: a gymnasium id, ``"module:EnvId"``, ``"module:factory"``, or a factory.
EnvSpec = str | Callable[[], Any]


def env_name(env: EnvSpec) -> str:
    """A printable name of ``env`` (the string itself, or the factory's qualified name)."""
    if isinstance(env, str):
        return env
    return f"{getattr(env, '__module__', '?')}:{getattr(env, '__qualname__', type(env).__name__)}"


def env_factory(env: EnvSpec, key: str = "env_id") -> Callable[[], Any]:
    """A zero-argument callable that builds a fresh ``gymnasium.Env`` for ``env``.

    Raises ValueError whose message starts with ``key`` for an id that is neither registered nor importable.
    """
    import gymnasium as gym

    if callable(env) and not isinstance(env, str):
        return env
    if not isinstance(env, str) or not env.strip():
        raise ValueError(f"{key} = {env!r}: expected a gymnasium id, 'module:EnvId', 'module:factory' or a callable")
    if env in gym.registry:
        return lambda: _quiet_make(env)
    if ":" not in env:
        raise ValueError(f"{key} = {env!r}: not a registered gymnasium environment (see gymnasium.pprint_registry(); "
                         f"or give 'module:EnvId' / 'module:factory')")
    mod_name, attr = env.split(":", 1)
    try:
        module = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ValueError(f"{key} = {env!r}: cannot import module {mod_name!r} ({exc})") from exc
    if attr in gym.registry:  # gymnasium's "module:EnvId": importing the module registered the id
        return lambda: _quiet_make(attr)
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"{key} = {env!r}: {mod_name!r} registers no environment {attr!r} and has no callable "
                         f"{attr!r}")
    return factory


def _quiet_make(env_id: str) -> Any:
    import gymnasium as gym

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # -v4 deprecation warning: v4 is what the paper used
        return gym.make(env_id)


def make_env(env: EnvSpec, key: str = "env_id") -> Any:
    """One fresh environment for ``env`` (MuJoCo ids need ``gymnasium[mujoco]``)."""
    import gymnasium as gym

    made = env_factory(env, key)()
    if not isinstance(made, gym.Env):
        raise ValueError(f"{key} = {env_name(env)!r}: the factory returned a {type(made).__name__}, not a "
                         f"gymnasium.Env")
    return made


def _dims_of(made: Any, name: str, key: str) -> tuple[int, int]:
    import gymnasium as gym

    obs_space, act_space = made.observation_space, made.action_space
    if not isinstance(act_space, gym.spaces.Box) or len(act_space.shape) != 1:
        raise ValueError(f"{key} = {name!r}: SAC here needs a continuous (Box, 1-D) action space, got {act_space}")
    if not (np.all(np.isfinite(act_space.low)) and np.all(np.isfinite(act_space.high))):
        raise ValueError(f"{key} = {name!r}: the action space must have finite bounds (tanh-squashed actions), got "
                         f"{act_space}")
    if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise ValueError(f"{key} = {name!r}: the DWC encodes a flat (Box, 1-D) observation, got {obs_space}")
    return int(obs_space.shape[0]), int(act_space.shape[0])


@lru_cache(maxsize=64)
def _dims_by_name(env: str, key: str) -> tuple[int, int]:
    made = make_env(env, key)
    try:
        return _dims_of(made, env, key)
    finally:
        made.close()


def env_dims(env: EnvSpec, key: str = "env_id") -> tuple[int, int]:
    """(observation size, action size) of ``env``, after checking that SAC can run on it (ValueError naming
    ``key`` otherwise). Ids are built once and cached."""
    if isinstance(env, str):
        return _dims_by_name(env, key)
    made = make_env(env, key)
    try:
        return _dims_of(made, env_name(env), key)
    finally:
        made.close()


def make_vector_env(env: EnvSpec, num_envs: int, key: str = "env_id") -> Any:
    """``gymnasium.vector.SyncVectorEnv`` of ``num_envs`` copies of ``env``, same-step autoreset."""
    import gymnasium as gym

    factory = env_factory(env, key)

    def thunk() -> Any:
        made = factory()
        if not isinstance(made, gym.Env):
            raise ValueError(f"{key} = {env_name(env)!r}: the factory returned a {type(made).__name__}, not a "
                             f"gymnasium.Env")
        return made

    return gym.vector.SyncVectorEnv([thunk for _ in range(num_envs)],
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
