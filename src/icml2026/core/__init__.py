"""The shared core: registry, outcomes, runner, reports, seeding, plotting and progress.

Core knows no paper by name; papers import from here, never from each other. The names below are loaded on
first use, so that importing a light part of core (the source catalog behind ``icml2026 list``) does not
import numpy or anything heavier.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .outcome import Check, Outcome, evaluate_target
    from .registry import Experiment, experiment
    from .rng import make_rng, spawn, torch_generator

__all__ = ["Check", "Outcome", "evaluate_target", "Experiment", "experiment", "make_rng", "spawn", "torch_generator"]

_WHERE = {
    "Check": "outcome",
    "Outcome": "outcome",
    "evaluate_target": "outcome",
    "Experiment": "registry",
    "experiment": "registry",
    "make_rng": "rng",
    "spawn": "rng",
    "torch_generator": "rng",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
