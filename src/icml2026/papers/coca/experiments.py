"""Registered experiments of coca: linear erasure works (T1), XOR erasure/utility frontier (T2), COCA toy."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.plotting import new_figure

from .data import linear_world, xor_of_quadrant, xor_world
from .erasure import (
    AdversarialEraser,
    AdversarialEraserConfig,
    ConceptSignalWarning,
    LeaceConceptEraser,
    QuadraticConceptEraser,
    leace_reference,
)
from .probes import ProbeConfig, fit_probe
from .toy import ToyConfig, run_toy

__all__ = ["LinearErasureConfig", "ToyExperimentConfig", "XorFrontierConfig"]


def _split(n: int, frac: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    perm = rng.permutation(n)
    k = int(round(frac * n))
    return perm[:k], perm[k:]


# ------------------------------------------------------------------------------------ linear world
@dataclass(frozen=True)
class LinearErasureConfig:
    d: int = 16  # brief criterion 1: d = 16
    n: int = 8000  # brief criterion 1: n = 8000
    world_seed: int = 0  # brief: seed 0
    train_fraction: float = 0.75
    probe_epochs: int = 40

    def __post_init__(self) -> None:
        if self.d < 3 or self.n < 100 or not 0.1 <= self.train_fraction <= 0.9 or self.probe_epochs < 1:
            raise ValueError("need d >= 3, n >= 100, train_fraction in [0.1, 0.9], probe_epochs >= 1")


@experiment(
    "coca.linear_erasure",
    claim="With a linearly encoded concept, LEACE removes all linear and MLP-probe information about it "
    "while benign accuracy is unchanged (T1).",
    presets={"quick": LinearErasureConfig(n=3000, probe_epochs=15), "full": LinearErasureConfig()},
)
def linear_erasure(cfg: LinearErasureConfig, rng: np.random.Generator) -> Outcome:
    w = linear_world(cfg.d, cfg.n, cfg.world_seed)
    tr, te = _split(cfg.n, cfg.train_fraction, rng)
    pc = ProbeConfig(max_epochs=cfg.probe_epochs)
    eraser = LeaceConceptEraser().fit(w.X[tr], w.concept[tr])
    Xe = eraser.transform(w.X)
    acc: dict[str, float] = {}
    for tag, X in (("before", w.X), ("after", Xe)):
        for lab, y in (("concept", w.concept), ("benign", w.benign)):
            for kind in ("linear", "mlp"):
                probe = fit_probe(X[tr], y[tr], kind, rng=rng, config=pc)
                acc[f"{lab}_{kind}_{tag}"] = probe.accuracy(X[te], y[te])
    drop = max(
        acc["benign_linear_before"] - acc["benign_linear_after"],
        acc["benign_mlp_before"] - acc["benign_mlp_after"],
    )
    # criterion 4: package LEACE (no shrinkage, no trace constraint) equals our closed form
    ref = LeaceConceptEraser(shrinkage=False, constrain_cov_trace=False).fit(w.X[tr], w.concept[tr])
    p, b = leace_reference(w.X[tr], w.concept[tr])
    xcheck = float(np.max(np.abs(w.X @ p.T + b - ref.transform(w.X))))
    metrics = {
        **acc,
        "benign_drop": drop,
        "signal_p_value": eraser.signal_.p_value,
        "leace_vs_reference": xcheck,
    }
    checks = [
        Check("concept_linear_after", acc["concept_linear_after"], "<= 0.53", paper="prototype 0.503"),
        Check("concept_mlp_after", acc["concept_mlp_after"], "<= 0.55", paper="prototype 0.493"),
        Check("benign_drop", drop, "<= 0.01", paper="prototype 0.001"),
        Check("concept_linear_before", acc["concept_linear_before"], ">= 0.9"),  # the concept was there
        Check("leace_vs_reference", xcheck, "< 1e-5"),  # criterion 4
    ]
    rows = [{"probe": k, "accuracy": round(v, 4)} for k, v in acc.items()]
    return Outcome(metrics=metrics, checks=checks, tables={"probes": rows})


# --------------------------------------------------------------------------------------- XOR world
@dataclass(frozen=True)
class XorFrontierConfig:
    d: int = 4  # brief criterion 2: d = 4
    n: int = 20000  # brief criterion 2: n = 20000
    world_seed: int = 1  # brief: seed 1
    train_fraction: float = 0.75
    strengths: tuple[float, ...] = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)  # brief: 6 values of lambda
    eraser_epochs: int = 30
    probe_epochs: int = 60
    probe_patience: int = 8

    def __post_init__(self) -> None:
        if self.d < 2 or self.n < 100 or not 0.1 <= self.train_fraction <= 0.9:
            raise ValueError("need d >= 2, n >= 100, train_fraction in [0.1, 0.9]")
        if any(not s >= 0 for s in self.strengths) or self.eraser_epochs < 1 or self.probe_epochs < 1:
            raise ValueError("strengths must be >= 0, eraser_epochs and probe_epochs >= 1")


@experiment(
    "coca.xor_frontier",
    claim="When the concept is a non-linear function of the benign label, LEACE leaves it recoverable and "
    "every eraser trades concept removal one-for-one against benign accuracy (T2).",
    presets={
        "quick": XorFrontierConfig(strengths=(0.0, 10.0), eraser_epochs=4, probe_epochs=15, probe_patience=4),
        "full": XorFrontierConfig(),
    },
)
def xor_frontier(cfg: XorFrontierConfig, rng: np.random.Generator) -> Outcome:
    w = xor_world(cfg.d, cfg.n, cfg.world_seed)
    tr, te = _split(cfg.n, cfg.train_fraction, rng)
    pc = ProbeConfig(max_epochs=cfg.probe_epochs, patience=cfg.probe_patience)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        leace = LeaceConceptEraser().fit(w.X[tr], w.concept[tr])
    warned = any(issubclass(c.category, ConceptSignalWarning) for c in caught)
    reps: dict[str, np.ndarray] = {"none": w.X, "leace": leace.transform(w.X)}
    reps["qleace"] = QuadraticConceptEraser().fit(w.X[tr], w.concept[tr]).transform(w.X, w.concept)
    for lam, sub in zip(cfg.strengths, spawn(rng, len(cfg.strengths)), strict=True):
        adv = AdversarialEraser(AdversarialEraserConfig(strength=lam, n_epochs=cfg.eraser_epochs))
        reps[f"adv_{lam:g}"] = adv.fit(w.X[tr], w.concept[tr], rng=sub).transform(w.X)
    rows: list[dict[str, Any]] = []
    for name, X in reps.items():
        lin = fit_probe(X[tr], w.concept[tr], "linear", rng=rng, config=pc).accuracy(X[te], w.concept[te])
        mlp = fit_probe(X[tr], w.concept[tr], "mlp", rng=rng, config=pc).accuracy(X[te], w.concept[te])
        yhat = fit_probe(X[tr], w.benign[tr], "mlp", rng=rng, config=pc).predict(X[te])
        benign = float(np.mean(yhat == w.benign[te]))
        via_g = float(np.mean(xor_of_quadrant(yhat) == w.concept[te]))  # concept recovered as g(Y_hat)
        rows.append(
            {
                "eraser": name,
                "concept_linear": lin,
                "concept_mlp": mlp,
                "benign": benign,
                "concept_via_g": via_g,
            }
        )
    by = {r["eraser"]: r for r in rows}
    gap_g = max(r["benign"] - r["concept_via_g"] for r in rows)  # <= 0 by construction
    gap_probe = max(r["benign"] - r["concept_mlp"] for r in rows)
    low = [r["benign"] for r in rows if r["concept_mlp"] <= 0.60]
    worst_low = max(low) if low else 0.0
    fig, ax = new_figure(
        "Concept erasure vs benign utility (XOR world)", "MLP concept-probe accuracy", "benign 4-way accuracy"
    )
    ax.plot([0.5, 1.0], [0.5, 1.0], "k--", lw=1, label="bound: benign <= concept recovery")
    for r in rows:
        ax.scatter(r["concept_mlp"], r["benign"], s=30)
        ax.annotate(r["eraser"], (r["concept_mlp"], r["benign"]), fontsize=7)
    ax.legend(loc="lower right")
    metrics = {
        f"{r['eraser']}_{k}": float(r[k]) for r in rows for k in ("concept_linear", "concept_mlp", "benign")
    }
    metrics.update(
        {
            "bound_gap_via_g": gap_g,
            "bound_gap_probe": gap_probe,
            "max_benign_when_erased": worst_low,
            "leace_signal_p_value": leace.signal_.p_value,
            "leace_warned": float(warned),
        }
    )
    checks = [
        Check("concept_linear_before", by["none"]["concept_linear"], "<= 0.55", paper="prototype 0.51"),
        Check("concept_mlp_before", by["none"]["concept_mlp"], ">= 0.95", paper="prototype 0.99"),
        Check("concept_mlp_after_leace", by["leace"]["concept_mlp"], ">= 0.85", paper="prototype 0.91"),
        Check("bound_gap_via_g", gap_g, "<= 0"),  # exact: Y_hat = Y implies g(Y_hat) = C
        Check("bound_gap_probe", gap_probe, "<= 0.03"),
        Check("max_benign_when_erased", worst_low, "<= 0.63"),
        Check("leace_warned", float(warned), "== 1"),  # no linear signal in the XOR world: LEACE warns
    ]
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"frontier": fig},
        tables={
            "frontier": [
                {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in rows
            ]
        },
    )


# ------------------------------------------------------------------------------------------ COCA toy
@dataclass(frozen=True)
class ToyExperimentConfig:
    toy: ToyConfig = ToyConfig()
    n_seeds: int = 3  # brief criterion 5: 3 seeds

    def __post_init__(self) -> None:
        if self.n_seeds < 1:
            raise ValueError(f"n_seeds must be >= 1, got {self.n_seeds}")


@experiment(
    "coca.toy_coca",
    claim="Training a linear (LoReFT) intervention on COCA-refactored data concentrates harmfulness into a "
    "linearly decodable direction and lowers held-out jailbreak ASR at equal benign accuracy.",
    presets={
        "quick": ToyExperimentConfig(n_seeds=1),
        "full": ToyExperimentConfig(),
    },
)
def toy_coca(cfg: ToyExperimentConfig, rng: np.random.Generator) -> Outcome:
    runs = [run_toy(cfg.toy, sub).metrics for sub in spawn(rng, cfg.n_seeds)]
    keys = runs[0].keys()
    metrics = {k: float(np.mean([r[k] for r in runs])) for k in keys}
    wins = sum(
        # "at benign accuracy within 0.02": COCA's benign accuracy is not more than 0.02 below plain's
        r["coca_asr_ood"] < r["plain_asr_ood"] and r["coca_benign_acc"] >= r["plain_benign_acc"] - 0.02
        for r in runs
    )
    metrics["ood_wins"] = float(wins)
    checks = [
        Check("coca_probe_linear", min(r["coca_probe_linear"] for r in runs), ">= 0.95"),
        Check("plain_probe_linear", max(r["plain_probe_linear"] for r in runs), "<= 0.75"),
        Check("ood_win_fraction", wins / cfg.n_seeds, ">= 0.66", paper="COCA lowers OOD ASR"),
        # COCA is not worse in distribution (mean over seeds)
        Check("coca_asr_id", metrics["coca_asr_id"], f"<= {metrics['plain_asr_id']:.6g}"),
    ]
    rows = [{"seed_index": i, **{k: round(v, 4) for k, v in r.items()}} for i, r in enumerate(runs)]
    return Outcome(metrics=metrics, checks=checks, tables={"per_seed": rows})
