"""Training stages and evaluation: next-token cross-entropy on the answer token only (Sec. 3).

A stage is a number of optimisation steps whose batches are drawn from a mixture of prompt formats
(``text``, ``noise`` = noise-text, ``image``); each step draws one format with the mixture weights and a batch of
``batch_size`` samples with N uniform in the stage's object range.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from torch import nn

from icml2026.core.training import TrainingOptions, train_steps
from icml2026.core.validate import positive_int

from .data import Batch, RetrievalSample, Vocab, image_batch, noise_text_batch, sample_task, text_batch
from .model import BindingLM

__all__ = ["Curriculum", "Mode", "Trainer", "make_batch", "sample_batch", "accuracy", "accuracy_per_n"]

Mode = Literal["text", "noise", "image"]


def make_batch(samples: list[RetrievalSample], mode: Mode, rng: np.random.Generator) -> Batch:
    """The prompts of ``samples`` in format ``mode``."""
    if mode == "text":
        return text_batch(samples)
    if mode == "noise":
        return noise_text_batch(samples, rng)
    if mode == "image":
        return image_batch(samples, rng, render=False)  # cached cell features (exact, tested)
    raise ValueError(f"mode = {mode!r}: must be 'text', 'noise' or 'image'")


def sample_batch(
    batch_size: int, n_range: tuple[int, int], vocab: Vocab, rng: np.random.Generator, n_fixed: int | None = None
) -> list[RetrievalSample]:
    """``batch_size`` samples, N uniform in ``n_range`` (inclusive) unless ``n_fixed`` is given."""
    lo, hi = n_range
    ns = np.full(batch_size, n_fixed) if n_fixed is not None else rng.integers(lo, hi + 1, size=batch_size)
    return [sample_task(int(n), rng, vocab) for n in ns]


@dataclass(frozen=True)
class Curriculum:
    """A curriculum over the number of objects N (a remedy for the "answer with any item of the prompt" plateau).

    The stage starts with N drawn from ``[lo, start]`` and raises the largest N by one, up to the stage's own
    largest N, each time the running mean of the training loss (exponential, weight ``smoothing`` on the past)
    falls below ``loss_threshold``; earlier N stay in the mix. Deterministic for a given seed.
    """

    start: int = 2
    loss_threshold: float = 0.1
    smoothing: float = 0.95

    def __post_init__(self) -> None:
        positive_int(self.start, "start", minimum=1, maximum=64)
        if not 0.0 < self.loss_threshold < 10.0:
            raise ValueError(f"loss_threshold = {self.loss_threshold}: must be in (0, 10)")
        if not 0.0 <= self.smoothing < 1.0:
            raise ValueError(f"smoothing = {self.smoothing}: must be in [0, 1)")


@dataclass
class Trainer:
    """A model with its AdamW state; :meth:`clone` branches a regime off a shared stage.

    The steps run through the core training loop (:func:`icml2026.core.training.train_steps`): ``options``
    sets the precision (``bf16`` mixed precision on a GPU), gradient accumulation (each optimizer step then
    sees ``grad_accum`` micro-batches of ``batch_size``) and the gradient clipping (norm 1.0, as before). With
    the default options a step computes exactly what the plain PyTorch step did.
    """

    model: BindingLM
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: int = 100
    steps_done: int = 0
    losses: list[float] = field(default_factory=list)
    opt: torch.optim.Optimizer | None = None
    options: TrainingOptions = field(default_factory=lambda: TrainingOptions(max_grad_norm=1.0))
    n_hi_now: int | None = None  # the curriculum's current largest N (None: no curriculum run yet)
    curriculum_log: list[tuple[int, int]] = field(default_factory=list)  # (step, largest N from that step on)
    _ema: float | None = None

    def __post_init__(self) -> None:
        if self.opt is None:
            params = [p for p in self.model.parameters() if p.requires_grad]
            self.opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)

    def clone(self) -> Trainer:
        return copy.deepcopy(self)

    def _loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """The answer-token cross-entropy over the full vocabulary."""
        logits, _ = model(batch)
        target = torch.from_numpy(batch.answer + self.model.vocab.item0).to(logits.device)
        return nn.functional.cross_entropy(logits.float(), target)

    def _set_lr(self) -> None:
        assert self.opt is not None
        scale = min(1.0, (self.steps_done + 1) / max(self.warmup, 1))  # linear warm-up, then constant
        for g in self.opt.param_groups:
            g["lr"] = self.lr * scale

    def _train(self, batches: Iterable[Batch], curriculum: Curriculum | None = None, n_hi: int = 0) -> None:
        assert self.opt is not None
        self._set_lr()

        def after(_step: int, loss: float) -> None:
            self.steps_done += 1
            self.losses.append(loss)
            self._set_lr()
            if curriculum is not None and self.n_hi_now is not None and self.n_hi_now < n_hi:
                a = curriculum.smoothing
                self._ema = loss if self._ema is None else a * self._ema + (1 - a) * loss
                if self._ema < curriculum.loss_threshold:
                    self.n_hi_now += 1
                    self._ema = None
                    self.curriculum_log.append((self.steps_done, self.n_hi_now))

        train_steps(self.model, self.opt, batches, self._loss, options=self.options,
                    device=str(self.model.device), on_step=after)

    def step(self, batch: Batch) -> float:
        """One AdamW step on ``batch`` (one micro-batch: a step of ``grad_accum`` micro-batches is
        :meth:`run_stage`'s); returns its loss."""
        self._train([batch])
        return self.losses[-1]

    def run_stage(
        self,
        steps: int,
        mix: dict[Mode, float],
        n_range: tuple[int, int],
        batch_size: int,
        rng: np.random.Generator,
        progress: Callable[[int], None] | None = None,
        curriculum: Curriculum | None = None,
    ) -> None:
        """``steps`` optimizer steps; each draws its prompt format from ``mix`` (weights summing to 1) and
        ``options.grad_accum`` micro-batches of ``batch_size`` in that format. With a ``curriculum`` the largest
        N of the batches grows from ``curriculum.start`` to ``n_range[1]`` (see :class:`Curriculum`)."""
        steps = positive_int(steps, "steps", minimum=0, maximum=10**7)
        modes = list(mix)
        w = np.array([mix[m] for m in modes], float)
        if (w < 0).any() or not np.isclose(w.sum(), 1.0):
            raise ValueError(f"mix = {mix}: weights must be >= 0 and sum to 1")
        if steps == 0:
            return

        lo, hi = n_range
        if curriculum is not None and self.n_hi_now is None:
            self.n_hi_now = max(lo, min(hi, curriculum.start))
            self.curriculum_log.append((self.steps_done, self.n_hi_now))

        def batches() -> Iterator[Batch]:
            for k in range(steps):
                mode = modes[int(rng.choice(len(modes), p=w))]
                top = hi if curriculum is None or self.n_hi_now is None else min(hi, self.n_hi_now)
                for _ in range(self.options.grad_accum):
                    samples = sample_batch(batch_size, (lo, top), self.model.vocab, rng)
                    yield make_batch(samples, mode, rng)
                if progress is not None:
                    progress(k)  # runs once step k's last micro-batch has been trained on

        self._train(batches(), curriculum, hi)


@torch.no_grad()
def accuracy(
    model: BindingLM, samples: list[RetrievalSample], mode: Mode, rng: np.random.Generator, batch_size: int = 256
) -> np.ndarray:
    """Per-sample correctness (argmax over item tokens equals i*), ``(len(samples),)`` bool."""
    model.eval()
    out = []
    for k in range(0, len(samples), batch_size):
        chunk = samples[k : k + batch_size]
        # a Hugging Face LM (.hf.HFBindingModel) writes the prompts through its own tokenizer
        own = getattr(model, "make_batch", None)
        b = own(chunk, mode, rng) if callable(own) else make_batch(chunk, mode, rng)
        out.append(model.item_logits(b).argmax(1).cpu().numpy() == b.answer)
    return np.concatenate(out) if out else np.zeros(0, bool)


def accuracy_per_n(
    model: BindingLM, ns: list[int], n_eval: int, mode: Mode, rng: np.random.Generator
) -> dict[int, float]:
    """Accuracy for each N in ``ns`` on ``n_eval`` fresh samples each."""
    return {n: float(accuracy(model, sample_batch(n_eval, (n, n), model.vocab, rng), mode, rng).mean()) for n in ns}
