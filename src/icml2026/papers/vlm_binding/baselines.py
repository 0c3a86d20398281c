"""The baselines the paper compares against: the text-only model and our equal-step text-long control.

Both are regimes of :func:`~.regimes.train_regimes` (they share its stage 1); these wrappers train only them.
"""

from __future__ import annotations

import numpy as np

from .data import Vocab
from .model import BindingLM, CellEncoder
from .regimes import Schedule, train_regimes

__all__ = ["train_text_only", "train_text_long"]


def train_text_only(
    schedule: Schedule,
    vocab: Vocab,
    encoder: CellEncoder,
    model_kwargs: dict[str, int],
    n_range: tuple[int, int],
    batch_size: int,
    lr: float,
    rng: np.random.Generator,
) -> BindingLM:
    """``M_text-only``: S1 steps of text prompts (the paper's baseline; brief ~8k steps)."""
    return train_regimes(("text-only",), schedule, vocab, encoder, None, model_kwargs, n_range, batch_size, lr, rng)[
        "text-only"
    ]


def train_text_long(
    schedule: Schedule,
    vocab: Vocab,
    encoder: CellEncoder,
    model_kwargs: dict[str, int],
    n_range: tuple[int, int],
    batch_size: int,
    lr: float,
    rng: np.random.Generator,
) -> BindingLM:
    """``M_text-long``: text-only plus S2 + S3 more text steps (equal steps to image-text; not in the paper)."""
    return train_regimes(("text-long",), schedule, vocab, encoder, None, model_kwargs, n_range, batch_size, lr, rng)[
        "text-long"
    ]
