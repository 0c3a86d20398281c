"""Linear and MLP probes: how much (linear / non-linear) information about a label a representation keeps.

Both standardise with training statistics. The linear probe is multinomial logistic regression (L-BFGS,
tiny L2); the MLP probe is MLP(64, 64) trained by Adam with early stopping on a held-out part of the
training set (brief, pitfalls: "MLP probes need early stopping").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml2026.core import torch_generator
from icml2026.core.config import config as config_class
from icml2026.core.config import param
from icml2026.core.validate import as_array, as_labels, same_length

from .validation import check_features_labels

__all__ = ["Probe", "ProbeConfig", "fit_probe", "probe_accuracy"]


@config_class
class ProbeConfig:
    """Probe hyper-parameters (CPU scale)."""

    hidden: tuple[int, ...] = param((64, 64), 1, 4096, min_len=1, max_len=8)  # brief: MLP(64, 64)
    max_epochs: int = param(40, 1, 10_000)
    batch_size: int = param(256, 1, 100_000)
    lr: float = param(3e-3, 0.0, 1.0, lo_open=True)
    patience: int = param(5, 1, 10_000, help="epochs without validation improvement before stopping")
    val_fraction: float = param(0.2, 0.0, 1.0, lo_open=True, hi_open=True)
    l2: float = param(1e-4, 0.0, 1e3, help="linear probe ridge penalty (per sample)")


class Probe:
    """A fitted probe: ``predict(X) -> labels``; ``kind`` is ``"linear"`` or ``"mlp"``."""

    def __init__(self, kind: str, net: Any, mean: np.ndarray, scale: np.ndarray, classes: np.ndarray):
        self.kind, self.net, self.mean_, self.scale_, self.classes_ = kind, net, mean, scale, classes

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted labels, shape (n,)."""
        import torch

        X = check_features_labels(X, None, name="X")[0]
        if X.shape[1] != self.mean_.shape[0]:
            raise ValueError(f"X has {X.shape[1]} features, the probe was fitted on {self.mean_.shape[0]}")
        device = next(self.net.parameters()).device
        with torch.no_grad():
            logits = self.net(torch.as_tensor((X - self.mean_) / self.scale_).to(device))
        return self.classes_[logits.argmax(-1).cpu().numpy()]

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> float:
        """Fraction of ``y`` predicted correctly."""
        X, y = check_features_labels(X, y, name="X", min_classes=1)
        return float(np.mean(self.predict(X) == y))


def _mlp(d_in: int, hidden: tuple[int, ...], d_out: int, gen: Any) -> Any:
    import torch

    layers: list[torch.nn.Module] = []
    prev = d_in
    for h in hidden:
        layers += [torch.nn.Linear(prev, h, dtype=torch.float64), torch.nn.ReLU()]
        prev = h
    layers.append(torch.nn.Linear(prev, d_out, dtype=torch.float64))
    net = torch.nn.Sequential(*layers)
    with torch.no_grad():
        for m in net:
            if isinstance(m, torch.nn.Linear):
                bound = 1.0 / np.sqrt(m.in_features)
                m.weight.uniform_(-bound, bound, generator=gen)
                m.bias.uniform_(-bound, bound, generator=gen)
    return net


def fit_probe(
    X: np.ndarray,
    y: np.ndarray,
    kind: str = "linear",
    *,
    rng: np.random.Generator,
    config: ProbeConfig | None = None,
    device: Any = "cpu",
) -> Probe:
    """Fit a linear (logistic regression) or MLP probe predicting ``y`` (n,) from ``X`` (n, d).

    The probe is trained on ``device`` (a torch device or its name); its initial weights and mini-batch
    orders are drawn on the CPU and moved, so they do not depend on the device.
    """
    import torch

    if kind not in ("linear", "mlp"):
        raise ValueError(f"kind must be 'linear' or 'mlp', got {kind!r}")
    cfg = config or ProbeConfig()
    if not isinstance(cfg, ProbeConfig):
        raise ValueError(f"config: expected a ProbeConfig, got {type(cfg).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: expected a numpy Generator, got {type(rng).__name__}")
    X, y = check_features_labels(X, y, name="X")
    if kind == "mlp" and len(y) < 4:
        raise ValueError(f"X: an MLP probe needs at least 4 samples (train + validation), got {len(y)}")
    classes, y_idx = np.unique(y, return_inverse=True)
    mean = X.mean(0)
    scale = X.std(0)
    scale[scale < 1e-12] = 1.0
    Xs = torch.as_tensor((X - mean) / scale).to(device)
    yt = torch.as_tensor(y_idx, dtype=torch.long).to(device)
    gen = torch_generator(rng)
    k = len(classes)
    if kind == "linear":
        net = torch.nn.Linear(X.shape[1], k, dtype=torch.float64).to(device)
        with torch.no_grad():
            net.weight.zero_()
            net.bias.zero_()
        opt = torch.optim.LBFGS(net.parameters(), lr=1.0, max_iter=200, line_search_fn="strong_wolfe")

        def closure() -> Any:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(Xs), yt) + cfg.l2 * (net.weight**2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        net.eval()
        return Probe(kind, net, mean, scale, classes)
    n = len(y)
    perm = torch.randperm(n, generator=gen)
    n_val = max(1, int(round(cfg.val_fraction * n)))
    val, tr = perm[:n_val], perm[n_val:]
    val = val.to(device)
    net = _mlp(X.shape[1], cfg.hidden, k, gen).to(device)
    adam = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    best, best_state, bad = -1.0, None, 0
    for _ in range(cfg.max_epochs):
        order = tr[torch.randperm(len(tr), generator=gen)].to(device)
        for s in range(0, len(order), cfg.batch_size):
            b = order[s : s + cfg.batch_size]
            loss = torch.nn.functional.cross_entropy(net(Xs[b]), yt[b])
            adam.zero_grad()
            loss.backward()
            adam.step()
        with torch.no_grad():
            acc = float((net(Xs[val]).argmax(-1) == yt[val]).double().mean())
        if acc > best + 1e-9:
            best, bad = acc, 0
            best_state = {key: v.clone() for key, v in net.state_dict().items()}
        else:
            bad += 1
            if bad >= cfg.patience:
                break
    assert best_state is not None
    net.load_state_dict(best_state)
    net.eval()
    return Probe(kind, net, mean, scale, classes)


def probe_accuracy(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    kind: str = "linear",
    *,
    rng: np.random.Generator,
    config: ProbeConfig | None = None,
) -> float:
    """Held-out accuracy of a probe fitted on the training split."""
    for name, X, y in (("X_train", X_train, y_train), ("X_test", X_test, y_test)):
        X = as_array(X, name, ndim=2)
        y = as_labels(y, "y" + name[1:])
        same_length(**{name: X, "y" + name[1:]: y})
    return fit_probe(X_train, y_train, kind, rng=rng, config=config).accuracy(X_test, y_test)
