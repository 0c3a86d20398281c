"""Training and zero-shot evaluation across sampling rates (the released code's protocol, CPU-scale).

AdamW, cross-entropy, the best-validation checkpoint kept; evaluation at each test rate with its own
batches (one rate per batch). The released code trains a fixed number of epochs (40); with ``patience`` set,
training stops once the validation accuracy has not improved for ``patience`` epochs (``epochs`` is then the
cap), so that every model is compared at its plateau rather than at an arbitrary epoch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml2026.core.progress import track
from icml2026.core.validate import as_array, as_labels, finite_number, positive_int, same_length

from .spline_conv import check_fs

__all__ = ["TrainResult", "train_classifier", "predict", "accuracy", "macro_f1"]


@dataclass
class TrainResult:
    """Outcome of :func:`train_classifier`: the per-epoch history and the chosen epoch.

    ``best_epoch`` is 0-based (the checkpoint kept); ``len(val_accuracy)`` epochs were run, ``max_epochs`` was
    the cap and ``stopped_early`` says whether the patience rule fired (``patience`` epochs without a higher
    validation accuracy: a plateau), which ends training at or before the cap.
    """

    train_loss: list[float]
    val_accuracy: list[float]
    best_epoch: int
    max_epochs: int = 0
    stopped_early: bool = False

    @property
    def n_epochs(self) -> int:
        """Epochs actually run."""
        return len(self.val_accuracy)


def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Fraction of correct predictions."""
    y_true, y_pred = as_labels(y_true, "y_true"), as_labels(y_pred, "y_pred")
    same_length(y_true=y_true, y_pred=y_pred)
    return float(np.mean(y_true == y_pred))


def macro_f1(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> float:
    """Unweighted mean over classes of F1 = 2 TP / (2 TP + FP + FN) (a class absent from both counts 0)."""
    n_classes = positive_int(n_classes, "n_classes", minimum=2)
    y_true = as_labels(y_true, "y_true", n_classes=n_classes)
    y_pred = as_labels(y_pred, "y_pred", n_classes=n_classes)
    same_length(y_true=y_true, y_pred=y_pred)
    scores = []
    for c in range(n_classes):
        tp = np.sum((y_pred == c) & (y_true == c))
        fp = np.sum((y_pred == c) & (y_true != c))
        fn = np.sum((y_pred != c) & (y_true == c))
        denom = 2 * tp + fp + fn
        scores.append(2 * tp / denom if denom else 0.0)
    return float(np.mean(scores))


@torch.no_grad()
def predict(model: nn.Module, x: np.ndarray | torch.Tensor, fs: float, batch_size: int = 64) -> np.ndarray:
    """Class predictions (n,) for signals x (n, C, N) at ``fs`` Hz, in eval mode."""
    check_fs(fs)
    batch_size = positive_int(batch_size, "batch_size")
    xt = _as_signals(x, "x")
    dev = _device_of(model)
    was_training = model.training
    model.eval()
    preds = [
        model(xt[i : i + batch_size].to(dev), fs).argmax(dim=-1).cpu() for i in range(0, xt.shape[0], batch_size)
    ]
    model.train(was_training)
    return torch.cat(preds).numpy()


def _device_of(model: nn.Module) -> torch.device:
    """Where ``model``'s parameters live (batches are moved there; results come back to the CPU)."""
    first = next(model.parameters(), None)
    return first.device if first is not None else torch.device("cpu")


def train_classifier(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    fs: float,
    x_val: np.ndarray,
    y_val: np.ndarray,
    generator: torch.Generator,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 1e-3,
    weight_decay: float = 1e-2,
    progress: str | None = None,
    patience: int | None = None,
) -> TrainResult:
    """AdamW + cross-entropy at rate ``fs`` for at most ``epochs`` epochs; keeps the best-validation weights.

    Parameters
    ----------
    model : called as ``model(x, fs)`` -> logits.
    x, y : (n, C, N) training signals at ``fs`` and (n,) labels.
    x_val, y_val : validation set at ``fs``.
    generator : torch.Generator for shuffling and dropout (the global RNG is forked and restored).
    progress : if given, the label of a per-epoch progress bar.
    patience : stop after this many epochs without a higher validation accuracy (None: run all ``epochs``,
        as the released code does).

    Returns
    -------
    TrainResult; ``model`` is left holding the best-validation weights, in eval mode.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    check_fs(fs)
    batch_size = positive_int(batch_size, "batch_size")
    if patience is not None:
        patience = positive_int(patience, "patience")
    lr = finite_number(lr, "lr", lo=0.0, lo_open=True)
    weight_decay = finite_number(weight_decay, "weight_decay", lo=0.0)
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator: expected a torch.Generator, got {type(generator).__name__}")
    xt = _as_signals(x, "x")
    y_lab = as_labels(y, "y", n_classes=None)
    same_length(x=xt, y=y_lab)
    xv = _as_signals(x_val, "x_val")
    same_length(x_val=xv, y_val=as_labels(y_val, "y_val"))
    if xv.shape[1:] != xt.shape[1:]:
        raise ValueError(f"x_val: windows of shape {tuple(xv.shape[1:])}, but x has {tuple(xt.shape[1:])}")
    if y_lab.min() < 0:
        raise ValueError("y: labels must be >= 0")
    yt = torch.as_tensor(y_lab, dtype=torch.long)
    dev = _device_of(model)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses: list[float] = []
    val_acc: list[float] = []
    # Best weights are kept as tensor copies restored in place, not via state_dict(): neuraloperator's models
    # add a non-tensor "_metadata" entry to their state_dict that their load_state_dict then rejects.
    tensors = [*model.parameters(), *model.buffers()]
    best = (-1.0, 0, [t.detach().clone() for t in tensors])
    stopped_early = False
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator).item()))  # dropout stream
        epoch_iter: Iterable[int] = range(epochs)
        if progress is not None:
            epoch_iter = track(epoch_iter, progress, total=epochs)
        for epoch in epoch_iter:
            model.train()
            perm = torch.randperm(xt.shape[0], generator=generator)
            total, count = 0.0, 0
            for i in range(0, xt.shape[0], batch_size):
                idx = perm[i : i + batch_size]
                loss = F.cross_entropy(model(xt[idx].to(dev), fs), yt[idx].to(dev))
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * idx.numel()
                count += idx.numel()
            losses.append(total / count)
            acc = accuracy(y_val, predict(model, x_val, fs, batch_size))
            val_acc.append(acc)
            if acc > best[0]:
                best = (acc, epoch, [t.detach().clone() for t in tensors])
            elif patience is not None and epoch - best[1] >= patience:
                stopped_early = True
                break
    with torch.no_grad():
        for t, saved in zip(tensors, best[2], strict=True):
            t.copy_(saved)
    model.eval()
    return TrainResult(
        train_loss=losses, val_accuracy=val_acc, best_epoch=best[1], max_epochs=int(epochs),
        stopped_early=stopped_early,
    )


def _as_signals(x: np.ndarray | torch.Tensor, name: str) -> torch.Tensor:
    """A non-empty (n, C, N) batch of finite signals as float32 (the models' dtype)."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = as_array(x, name, ndim=3)
    if min(arr.shape) < 1:
        raise ValueError(f"{name}: expected a non-empty (n, channels, samples) array, got shape {arr.shape}")
    return torch.as_tensor(arr, dtype=torch.float32)
