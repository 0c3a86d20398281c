"""The training regimes of the paper (Sec. 4) and our equal-step control, run from shared stages.

Regimes (brief numbering):

1. ``text-only``        text until the end of stage 1 (S1 steps).
2. ``text-long``        text-only + S2 + S3 further text steps (our control: equal optimisation steps).
3. ``image-text``       text-only -> image-only (S2) -> 20% image / 80% text (S3).
4. ``noise-text``       text-only -> noise-text (S2) -> 20% noise-text / 80% text (S3).
5. ``noise-image-text`` noise-text (S1) -> image-only (S2) -> 20% image / 80% noise-text (S3).

Regimes 1-4 branch off one shared stage-1 model per seed (a copy of the weights and AdamW state), so
they differ only in what follows; 2-5 have S1 + S2 + S3 steps each. ``image-text-random-encoder`` repeats
regime 3 with the random-init frozen encoder (the paper's "encoder type does not matter" ablation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from icml2026.core.training import TrainingOptions

from .data import Vocab
from .model import BindingLM, CellEncoder
from .train import Curriculum, Mode, Trainer

__all__ = ["REGIMES", "Schedule", "Stage", "schedules", "train_regimes"]

REGIMES = ("text-only", "text-long", "image-text", "noise-text", "noise-image-text", "image-text-random-encoder")


@dataclass(frozen=True)
class Stage:
    """``steps`` optimisation steps drawing the prompt format from ``mix``."""

    steps: int
    mix: dict[Mode, float]


@dataclass(frozen=True)
class Schedule:
    """Sizes of the three stages (brief: S1 ~ 8k, S2 ~ 4k, S3 ~ 4k at batch 128)."""

    s1: int
    s2: int
    s3: int
    # Deviation: stage 3 draws the format per step (a step is an image batch with probability 0.2), not per sample
    image_share: float = 0.2  # stage 3: 20% image (or noise) / 80% text


def schedules(s: Schedule) -> dict[str, list[Stage]]:
    """Stages after the shared stage 1 for each regime (stage 1 itself: text, or noise-text for regime 5)."""
    p = s.image_share
    return {
        "text-only": [],
        "text-long": [Stage(s.s2, {"text": 1.0}), Stage(s.s3, {"text": 1.0})],
        "image-text": [Stage(s.s2, {"image": 1.0}), Stage(s.s3, {"image": p, "text": 1 - p})],
        "noise-text": [Stage(s.s2, {"noise": 1.0}), Stage(s.s3, {"noise": p, "text": 1 - p})],
        "noise-image-text": [Stage(s.s2, {"image": 1.0}), Stage(s.s3, {"image": p, "noise": 1 - p})],
        "image-text-random-encoder": [Stage(s.s2, {"image": 1.0}), Stage(s.s3, {"image": p, "text": 1 - p})],
    }


def train_regimes(
    regimes: tuple[str, ...],
    schedule: Schedule,
    vocab: Vocab,
    encoder: CellEncoder,
    random_encoder: CellEncoder | None,
    model_kwargs: dict[str, int],
    n_range: tuple[int, int],
    batch_size: int,
    lr: float,
    rng: np.random.Generator,
    on_step: Callable[[], None] | None = None,
    device: str | torch.device = "cpu",
    options: TrainingOptions | None = None,
    curriculum: Curriculum | None = None,
) -> dict[str, BindingLM]:
    """Train the requested regimes for one seed; returns the final model of each.

    ``rng`` drives the initial weights (one init shared by every regime, as "same seeds" in the brief) and
    the data of each stage (independent children per branch). The models are built on the CPU (the same
    initial weights everywhere) and moved to ``device``. ``options`` (precision, gradient accumulation,
    clipping; default fp32, none, norm 1.0) go to every :class:`Trainer`. ``curriculum`` (a
    :class:`~.train.Curriculum` over N) applies to stage 1 (text, or noise-text for regime 5); the later stages
    draw N from the whole ``n_range``.
    """
    unknown = [r for r in regimes if r not in REGIMES]
    if unknown:
        raise ValueError(f"regimes: unknown {unknown}; choose from {REGIMES}")
    if "image-text-random-encoder" in regimes and random_encoder is None:
        raise ValueError("random_encoder is needed for the image-text-random-encoder regime")
    init_seed = int(rng.integers(2**62))
    plan = schedules(schedule)
    children = dict(
        zip(
            ("stage1", "stage1-noise", *REGIMES),
            [np.random.default_rng(s) for s in rng.bit_generator.seed_seq.spawn(2 + len(REGIMES))],  # type: ignore[attr-defined]
            strict=True,
        )
    )
    tick = (lambda _k: on_step()) if on_step is not None else None

    def fresh(enc: CellEncoder) -> Trainer:
        model = BindingLM(vocab, enc, torch.Generator().manual_seed(init_seed), **model_kwargs).to(device)
        if options is None:
            return Trainer(model, lr=lr)
        return Trainer(model, lr=lr, options=options)

    out: dict[str, BindingLM] = {}
    text_first = [r for r in regimes if r != "noise-image-text"]
    if text_first:
        base = fresh(encoder)
        base.run_stage(schedule.s1, {"text": 1.0}, n_range, batch_size, children["stage1"], tick, curriculum)
        for r in text_first:
            tr = base.clone()
            if r == "image-text-random-encoder":
                assert random_encoder is not None
                tr.model.set_encoder(random_encoder)  # same LM weights and AdamW state, other frozen encoder
            for st in plan[r]:
                tr.run_stage(st.steps, st.mix, n_range, batch_size, children[r], tick)
            out[r] = tr.model
    if "noise-image-text" in regimes:
        tr = fresh(encoder)
        tr.run_stage(schedule.s1, {"noise": 1.0}, n_range, batch_size, children["stage1-noise"], tick, curriculum)
        for st in plan["noise-image-text"]:
            tr.run_stage(st.steps, st.mix, n_range, batch_size, children["noise-image-text"], tick)
        out["noise-image-text"] = tr.model
    return out
