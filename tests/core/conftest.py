"""Fixtures for core tests: an isolated registry holding a few toy experiments (no paper involved)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from icml2026.core import catalog, registry
from icml2026.core.catalog import ExperimentInfo
from icml2026.core.outcome import Check, Outcome
from icml2026.core.plotting import new_figure


@dataclass(frozen=True)
class ToyConfig:
    n: int = 4
    scale: float = 1.0
    label: str = "a"
    flag: bool = False
    threshold: float | None = None
    sizes: tuple[int, ...] = (1, 2)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")


def toy_pass(cfg: ToyConfig, rng: np.random.Generator) -> Outcome:
    x = rng.normal(size=cfg.n) * cfg.scale
    fig, ax = new_figure("toy", "i", "x")
    ax.plot(x)
    return Outcome(metrics={"mean": float(x.mean()), "n": cfg.n}, checks=[Check("n", cfg.n, ">= 1")],
                   figures={"toy": fig}, tables={"rows": [{"i": 0, "x": float(x[0])}]})


def toy_fail(cfg: ToyConfig, rng: np.random.Generator) -> Outcome:
    return Outcome(metrics={"n": cfg.n}, checks=[Check("impossible", cfg.n, "< 0", paper="-1")])


def toy_torch(cfg: ToyConfig, rng: np.random.Generator) -> Outcome:
    import torch

    from icml2026.core.rng import torch_generator

    g = torch_generator(rng)
    x = torch.randn(cfg.n, generator=g)
    lin = torch.nn.Linear(cfg.n, 1)  # initialised from torch's global generator, seeded by the runner
    metrics = {"x": float(x.sum()), "w": float(lin.weight.detach().sum())}
    return Outcome(metrics=metrics, checks=[Check("ok", 1, "== 1")])


QUICK = ToyConfig()
PRESETS = {"quick": QUICK, "full": dataclasses.replace(QUICK, n=8)}


@pytest.fixture()
def toy_registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, registry.Experiment]:
    """Replace the global registry by one with toy experiments, and switch discovery off."""
    table: dict[str, registry.Experiment] = {}
    monkeypatch.setattr(registry, "_REGISTRY", table)
    monkeypatch.setattr(registry, "discover", lambda slugs=None: None)
    monkeypatch.setattr(registry, "import_paper", lambda slug: None)

    def toy_catalog() -> dict[str, ExperimentInfo]:  # the CLI lists from source; here, from the toy table
        return {n: ExperimentInfo(n, e.claim, tuple(e.presets), Path(__file__)) for n, e in sorted(table.items())}

    monkeypatch.setattr(catalog, "catalog", toy_catalog)
    monkeypatch.setattr(registry, "catalog", toy_catalog)
    registry.experiment("toy.passes", claim="toy claim that passes", presets=PRESETS)(toy_pass)
    registry.experiment("toy.fails", claim="toy claim that fails", presets=PRESETS)(toy_fail)
    registry.experiment("toy.torchy", claim="toy claim using torch", presets=PRESETS)(toy_torch)
    registry.experiment("other.passes", claim="another paper", presets=PRESETS)(toy_pass)
    return table
