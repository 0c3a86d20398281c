"""Training and zero-shot evaluation across sampling rates (the released code's protocol, CPU-scale).

AdamW, cross-entropy, a fixed number of epochs with the best-validation checkpoint kept; evaluation at
each test rate with its own batches (one rate per batch).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml2026.core.progress import track

__all__ = ["TrainResult", "train_classifier", "predict", "accuracy", "macro_f1"]


@dataclass
class TrainResult:
    """Outcome of :func:`train_classifier`: the per-epoch history and the chosen epoch."""

    train_loss: list[float]
    val_accuracy: list[float]
    best_epoch: int


def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Fraction of correct predictions."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    return float(np.mean(y_true == y_pred)) if y_true.size else float("nan")


def macro_f1(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> float:
    """Unweighted mean over classes of F1 = 2 TP / (2 TP + FP + FN) (a class absent from both counts 0)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
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
    was_training = model.training
    model.eval()
    xt = torch.as_tensor(x, dtype=torch.float32)
    preds = [model(xt[i : i + batch_size], fs).argmax(dim=-1) for i in range(0, xt.shape[0], batch_size)]
    model.train(was_training)
    return torch.cat(preds).numpy()


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
) -> TrainResult:
    """AdamW + cross-entropy for ``epochs`` epochs at rate ``fs``; keeps the best-validation weights.

    Parameters
    ----------
    model : called as ``model(x, fs)`` -> logits.
    x, y : (n, C, N) training signals at ``fs`` and (n,) labels.
    x_val, y_val : validation set at ``fs``.
    generator : torch.Generator for shuffling and dropout (the global RNG is forked and restored).
    progress : if given, the label of a per-epoch progress bar.

    Returns
    -------
    TrainResult; ``model`` is left holding the best-validation weights, in eval mode.
    """
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    xt = torch.as_tensor(x, dtype=torch.float32)
    yt = torch.as_tensor(y, dtype=torch.long)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses: list[float] = []
    val_acc: list[float] = []
    # Best weights are kept as tensor copies restored in place, not via state_dict(): neuraloperator's models
    # add a non-tensor "_metadata" entry to their state_dict that their load_state_dict then rejects.
    tensors = [*model.parameters(), *model.buffers()]
    best = (-1.0, 0, [t.detach().clone() for t in tensors])
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
                loss = F.cross_entropy(model(xt[idx], fs), yt[idx])
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
    with torch.no_grad():
        for t, saved in zip(tensors, best[2], strict=True):
            t.copy_(saved)
    model.eval()
    return TrainResult(train_loss=losses, val_accuracy=val_acc, best_epoch=best[1])
