"""The shared core: registry, outcomes, runner, reports, seeding, plotting and progress.

Core knows no paper by name; papers import from here, never from each other.
"""

from .outcome import Check, Outcome, evaluate_target
from .registry import Experiment, experiment
from .rng import make_rng, spawn, torch_generator

__all__ = ["Check", "Outcome", "evaluate_target", "Experiment", "experiment", "make_rng", "spawn", "torch_generator"]
