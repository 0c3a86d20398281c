"""Training a model the user brings: bf16 mixed precision, gradient accumulation and several GPUs.

One loop for the papers whose training is a standard one (a loss on a batch, an optimizer step), run through
Hugging Face ``accelerate``, so that the same code trains a tiny model on the CPU here and a real checkpoint
on one or several GPUs:

==================================  ==================================================================
:class:`TrainingOptions`            precision (``fp32``, ``bf16``, ``fp16``), gradient accumulation,
                                    gradient clipping; checked on construction
:func:`make_accelerator`            the ``accelerate.Accelerator`` for those options on a device
:func:`train_steps`                 the loop: micro-batches in, one optimizer step every ``grad_accum``
                                    of them, the mean loss of each step out
==================================  ==================================================================

Several GPUs: launch the same command under ``accelerate launch`` (``accelerate launch --num_processes 4 -m
icml2026 run <slug>.<exp> --set device=cuda ...``); ``accelerate`` then wraps the model for data-parallel
training, and a ``torch.utils.data.DataLoader`` passed as ``batches`` is split across the processes. Run in one
process, as every experiment is here, nothing is distributed and ``fp32`` with ``grad_accum = 1`` computes what a
plain ``loss.backward(); optimizer.step(); optimizer.zero_grad()`` loop computes, bit for bit (a test pins it).

What this module writes is the loop; mixed precision (``torch.autocast``), the loss scaling for accumulation and
the distributed wrapping are ``accelerate``'s.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .device import resolve_device
from .errors import BadInput, require_module

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["PRECISIONS", "fp16_device_problem", "TrainingOptions", "TrainResult", "make_accelerator", "train_steps"]

#: Precisions a training run may use: ``fp32`` everywhere; ``bf16`` / ``fp16`` mixed precision (weights and
#: optimizer state stay float32, the forward pass runs under ``torch.autocast``). ``fp16`` needs a GPU.
PRECISIONS = ("fp32", "bf16", "fp16")
_MIXED = {"fp32": "no", "bf16": "bf16", "fp16": "fp16"}


def fp16_device_problem(precision: str, device: str) -> str | None:
    """Why ``precision`` cannot train on ``device`` (``cpu``, ``cuda``, ``cuda:<n>``, ``mps``), or ``None``:
    float16 autocast is a GPU feature. Configs call it before a run; :func:`make_accelerator` before training."""
    if precision == "fp16" and str(device).split(":")[0] == "cpu":
        return "precision = 'fp16' needs a GPU (float16 autocast); on the CPU use 'bf16' or 'fp32'"
    return None


@dataclass(frozen=True)
class TrainingOptions:
    """How a model is trained, beside what it is trained on.

    Attributes
    ----------
    precision : ``"fp32"``, ``"bf16"`` or ``"fp16"`` (mixed precision; ``fp16`` only on a GPU).
    grad_accum : micro-batches per optimizer step (>= 1); the step's gradient is their mean, as for one batch
        ``grad_accum`` times larger.
    max_grad_norm : clip the gradient's global norm to this before each step (> 0), or ``None`` for no clipping.
    """

    precision: str = "fp32"
    grad_accum: int = 1
    max_grad_norm: float | None = None

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise BadInput(f"precision = {self.precision!r}: must be one of {', '.join(PRECISIONS)}")
        accum = self.grad_accum
        if isinstance(accum, bool) or not isinstance(accum, int) or not 1 <= accum <= 65536:
            raise BadInput(f"grad_accum = {self.grad_accum!r}: must be an integer in [1, 65536]")
        if self.max_grad_norm is not None and (
                isinstance(self.max_grad_norm, bool) or not isinstance(self.max_grad_norm, (int, float))
                or not math.isfinite(self.max_grad_norm) or self.max_grad_norm <= 0):
            raise BadInput(f"max_grad_norm = {self.max_grad_norm!r}: must be a finite number > 0, or None")


@dataclass
class TrainResult:
    """What :func:`train_steps` did.

    Attributes
    ----------
    losses : the mean micro-batch loss of each optimizer step, in order (float32 values of the autocast loss).
    n_steps : optimizer steps taken (a last, incomplete group of micro-batches also steps).
    n_micro_batches : micro-batches seen.
    """

    losses: list[float] = field(default_factory=list)
    n_steps: int = 0
    n_micro_batches: int = 0


def _reset_single_process_state() -> None:
    """Let one process build accelerators with different options one after the other (experiments run in turn).

    ``accelerate`` keeps its state in process-wide singletons and refuses to change the precision once set; in
    a single, non-distributed process nothing is shared with other processes, so the state is reset. Under
    ``accelerate launch`` the state is the launcher's and is left alone.
    """
    from accelerate.state import AcceleratorState, PartialState
    from accelerate.utils import DistributedType

    if not PartialState._shared_state:
        return
    if PartialState().distributed_type == DistributedType.NO:
        AcceleratorState._reset_state(reset_partial_state=True)


def make_accelerator(options: TrainingOptions, device: str = "cpu") -> Any:
    """The ``accelerate.Accelerator`` that trains with ``options`` on ``device``.

    Parameters
    ----------
    options : precision, accumulation, clipping.
    device : ``cpu``, ``cuda``, ``cuda:<n>``, ``mps`` (as :func:`icml2026.core.device.resolve_device` reads it).
        Under ``accelerate launch`` each process takes the GPU the launcher gives it.

    Raises
    ------
    BadInput
        ``fp16`` on the CPU (autocast to float16 is a GPU feature; use ``bf16``), or a bad device.
    MissingDependency
        accelerate is not installed.
    """
    if not isinstance(options, TrainingOptions):
        raise BadInput(f"options = {options!r}: must be a TrainingOptions")
    require_module("accelerate", extra="loaders")
    import accelerate

    dev = resolve_device(device)
    problem = fp16_device_problem(options.precision, dev.type)
    if problem:
        raise BadInput(problem)
    _reset_single_process_state()
    return accelerate.Accelerator(mixed_precision=_MIXED[options.precision],
                                  gradient_accumulation_steps=options.grad_accum, cpu=dev.type == "cpu")


def train_steps(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batches: Iterable[Any],
                loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor], *, options: TrainingOptions | None = None,
                device: str = "cpu", scheduler: Any = None,
                on_step: Callable[[int, float], None] | None = None) -> TrainResult:
    """Train ``model`` on ``batches``: one optimizer step every ``options.grad_accum`` micro-batches.

    Parameters
    ----------
    model : the module whose parameters ``optimizer`` holds; trained in place (left in train mode).
    optimizer : any torch optimizer over ``model``'s parameters.
    batches : micro-batches, each passed to ``loss_fn`` as it is (tensors are the caller's to place; a
        ``DataLoader`` is handed to ``accelerate``, which places its tensors and splits it across processes).
    loss_fn : ``loss_fn(model, batch)`` -> a scalar tensor, the mean loss of the micro-batch; it runs under
        the precision's autocast.
    options : precision, accumulation and clipping (default: ``TrainingOptions()``: fp32, no accumulation).
    device : where the model trains (see :func:`make_accelerator`).
    scheduler : a learning-rate scheduler stepped after each optimizer step, or ``None``.
    on_step : called as ``on_step(step, loss)`` after each optimizer step (progress, logging).

    Returns
    -------
    TrainResult : the mean loss of each optimizer step, the number of steps and of micro-batches.

    Raises
    ------
    BadInput
        A bad ``options`` or ``device``; ``loss_fn`` returning something other than a finite scalar tensor.
    """
    import torch

    options = options if options is not None else TrainingOptions()
    accelerator = make_accelerator(options, device)
    model, optimizer = accelerator.prepare(model, optimizer)
    if isinstance(batches, torch.utils.data.DataLoader):
        batches = accelerator.prepare(batches)
    model.train()
    result = TrainResult()
    group: list[float] = []

    def finish_step() -> None:
        if options.max_grad_norm is not None:
            accelerator.clip_grad_norm_(model.parameters(), options.max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        optimizer.zero_grad()
        result.n_steps += 1
        result.losses.append(sum(group) / len(group))
        group.clear()
        if on_step is not None:
            on_step(result.n_steps, result.losses[-1])

    for batch in batches:
        last_of_group = len(group) + 1 == options.grad_accum
        # gradients are synchronised across processes only on a group's last micro-batch (a no-op in one process)
        with contextlib.nullcontext() if last_of_group else accelerator.no_sync(model):
            with accelerator.autocast():
                loss = loss_fn(model, batch)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise BadInput(f"loss_fn returned {type(loss).__name__}: it must return a scalar tensor")
            value = float(loss.detach().float())
            if not math.isfinite(value):
                raise BadInput(f"loss_fn returned a non-finite loss ({value}) at micro-batch {result.n_micro_batches}")
            # the step's gradient is the mean over its micro-batches: accelerate divides each loss by grad_accum
            accelerator.backward(loss)
        group.append(value)
        result.n_micro_batches += 1
        if len(group) == options.grad_accum:
            finish_step()
    if group:  # a last, incomplete group still steps (its gradient is scaled as a full group's would be)
        finish_step()
    return result
