"""The detector (a small ResNet-style CNN), balanced accuracy, and the Frechet distance (realism: ``realism.py``).

Label 1 = fake, 0 = real (the paper's convention); ``predict_proba`` returns p(fake).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from icml2026.core import spawn
from icml2026.core.progress import track
from icml2026.core.rng import torch_seeded
from icml2026.core.validate import as_array, as_labels, finite_number, positive_int, same_length

from .generators import check_images, to_tensor

__all__ = ["Detector", "balanced_accuracy", "frechet_distance"]


class _Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.skip: nn.Module = (
            nn.Identity()
            if stride == 1 and c_in == c_out
            else nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(h)) + self.skip(x))


class _ResNet(nn.Module):
    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        w = width
        self.stem = nn.Sequential(nn.Conv2d(channels, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU())
        self.stages = nn.Sequential(_Block(w, w, 1), _Block(w, 2 * w, 2), _Block(2 * w, 4 * w, 2))
        self.head = nn.Linear(4 * w, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(self.stem(x)).mean((2, 3))).squeeze(1)


Augment = Callable[[np.ndarray, np.random.Generator], np.ndarray]


class Detector:
    """A small ResNet-style binary detector D_theta(x) -> logit (stem + 3 residual stages + linear head).

    Parameters
    ----------
    width : channels of the first stage (then 2x, 4x); 16 gives ~75 k parameters on RGB.
    epochs, lr, batch_size : training schedule of :meth:`fit` (Adam, class-balanced batches).
    device : where the network is trained and run (built on the CPU from the seed, then moved; batches are cut
        on the CPU and moved, predictions come back as numpy).

    Attributes
    ----------
    net_ : the fitted ``torch.nn.Module`` (kept in eval mode outside training).
    """

    def __init__(
        self,
        width: int = 16,
        epochs: int = 8,
        lr: float = 2e-3,
        batch_size: int = 64,
        device: torch.device | str = "cpu",
    ) -> None:
        self.width, self.epochs, self.lr, self.batch_size = width, epochs, lr, batch_size
        self.device = device

    def fit(self, real: np.ndarray, fake: np.ndarray, rng: np.random.Generator) -> Detector:
        """Train from scratch on real (label 0) vs fake (label 1) images, class-balanced."""
        real, fake = check_images(real, "real"), check_images(fake, "fake")
        width = positive_int(self.width, "width", maximum=256)
        r_init, r_train = spawn(rng, 2)
        with torch_seeded(r_init, high=2**31 - 1):  # module init draws from torch's global RNG: isolate it
            self.net_ = _ResNet(real.shape[1], width).to(self.device)
        self.n_params_ = sum(p.numel() for p in self.net_.parameters())
        return self.partial_fit(real, fake, r_train, epochs=self.epochs, lr=self.lr)

    def partial_fit(
        self,
        real: np.ndarray,
        fake: np.ndarray,
        rng: np.random.Generator,
        epochs: int,
        lr: float,
        augment: Augment | None = None,
    ) -> Detector:
        """Continue training (Stage 2 of PROBE uses this): class-balanced BCE, Adam, ``epochs`` passes.

        An epoch draws ``2 * max(n_real, n_fake)`` images, half from each class (the smaller class cycles
        through several permutations). ``augment(images, rng)`` (CNNSpot-style) is applied per batch.
        """
        self._check_fitted()
        real, fake = check_images(real, "real"), check_images(fake, "fake")
        epochs = positive_int(epochs, "epochs", minimum=0)
        lr = finite_number(lr, "lr", lo=0.0, lo_open=True)
        half = max(1, positive_int(self.batch_size, "batch_size", minimum=2) // 2)
        n = max(len(real), len(fake))
        opt = torch.optim.Adam(self.net_.parameters(), lr=lr)
        dev = next(self.net_.parameters()).device
        self.net_.train()
        for _ in track(range(epochs), "train detector (epochs)", total=epochs):
            ir = np.concatenate([rng.permutation(len(real)) for _ in range(-(-n // len(real)))])[:n]
            i_f = np.concatenate([rng.permutation(len(fake)) for _ in range(-(-n // len(fake)))])[:n]
            for s in range(0, n, half):
                xb = np.concatenate([real[ir[s : s + half]], fake[i_f[s : s + half]]])
                if augment is not None:
                    xb = augment(xb, rng)
                yb = torch.cat([torch.zeros(len(ir[s : s + half])), torch.ones(len(i_f[s : s + half]))]).to(dev)
                loss = nn.functional.binary_cross_entropy_with_logits(self.net_(to_tensor(xb, dev)), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
        self.net_.eval()
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise ValueError("detector: not fitted; call fit(real, fake, rng) first")

    def logits(self, x: np.ndarray, batch_size: int = 512) -> np.ndarray:
        """Logits D_theta(x) in eval mode, shape (n,)."""
        self._check_fitted()
        x = check_images(x, "x")
        self.net_.eval()
        dev = next(self.net_.parameters()).device
        with torch.no_grad():
            return np.concatenate(
                [self.net_(to_tensor(x[i : i + batch_size], dev)).cpu().numpy() for i in range(0, len(x), batch_size)]
            ).astype(np.float64)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """p(fake | x), shape (n,)."""
        return 1.0 / (1.0 + np.exp(-self.logits(x)))

    def copy(self) -> Detector:
        return copy.deepcopy(self)


def balanced_accuracy(y_true: object, p_fake: object, threshold: float = 0.5) -> float:
    """Balanced accuracy (mean of the real and the fake accuracy) at ``threshold`` on p(fake)."""
    y = as_labels(y_true, "y_true", binary=True)
    p = as_array(p_fake, "p_fake", ndim=1, lo=0.0, hi=1.0)
    same_length(y_true=y, p_fake=p)
    threshold = finite_number(threshold, "threshold", lo=0.0, hi=1.0)
    if y.min() == y.max():
        raise ValueError("y_true: needs both classes (0 = real, 1 = fake)")
    pred = (p > threshold).astype(int)
    return float(0.5 * ((pred[y == 0] == 0).mean() + (pred[y == 1] == 1).mean()))


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Frechet distance between Gaussians fitted to the rows of ``a`` and ``b`` (FID formula)."""
    from scipy import linalg

    a = as_array(a, "a", ndim=2, min_size=4)
    b = as_array(b, "b", ndim=2, min_size=4)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a, b: feature dimensions differ ({a.shape[1]} vs {b.shape[1]})")
    if len(a) < 2 or len(b) < 2:
        raise ValueError("a, b: need at least 2 rows each")
    mu1, mu2 = a.mean(0), b.mean(0)
    # a ridge of 1e-6 keeps sqrtm defined when a feature is constant (a ReLU unit that never fires)
    eye = 1e-6 * np.eye(a.shape[1])
    s1, s2 = np.cov(a, rowvar=False) + eye, np.cov(b, rowvar=False) + eye
    covmean = linalg.sqrtm(s1 @ s2)
    covmean = np.real(covmean)
    return float(max(0.0, ((mu1 - mu2) ** 2).sum() + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean)))
