"""The realism check: a Frechet distance in the feature space of a network TRAINED to tell real crops from noise.

Issue 60: the earlier feature space (a random CNN's per-channel mean and SD) could not fail on the input it was
meant to catch (at lambda = 0 the buffer scored 0.95 of the standard samples' distance). Here the features are
the pooled last map of a small CNN trained, with a fixed seed of its own (never the run's), to separate the real
*train* crops (label 0) from four kinds of non-image (label 1) made from them: Gaussian noise matched to the
crops' per-pixel mean and SD, uniform noise, real crops plus Gaussian noise (SD 0.1-0.6), and real crops with
their pixels permuted. The space therefore separates real images from noise and from noise-like texture by
training, and the distances of three sets are compared in it:

* ``fd(x)``: Frechet distance of ``x`` to the real test crops;
* the seen generator passes the realism bar when ``fd(seen) <= SEEN_BAR * fd(noise)`` (noise = the matched
  Gaussian images above, freshly drawn), a precondition fixed before any run;
* a buffer is realistic when ``fd(buffer) <= 1.5 fd(standard seen samples)`` (the brief's criterion 1).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from icml2026.core.rng import torch_seeded
from icml2026.core.validate import positive_int

from .detector import frechet_distance
from .generators import check_images, to_tensor

__all__ = ["SEEN_BAR", "RealismSpace", "matched_noise"]

#: The seen generator's samples must be at most this fraction of matched noise's distance to the real test
#: crops (fixed before any run of the new space, issue 60).
SEEN_BAR = 0.2
#: The space's own seed: the same feature space for every run seed (a fixed instrument).
_SPACE_SEED = 20260101


def matched_noise(real: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` Gaussian images with the per-pixel mean and SD of ``real``, clipped to [-1, 1]."""
    real = check_images(real, "real")
    mu, sd = real.mean(0), real.std(0)
    return np.clip(mu + sd * rng.standard_normal((positive_int(n, "n"), *real.shape[1:])), -1, 1).astype(np.float32)


def _non_images(real: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = len(real)
    k = n // 4
    noisy = real[:k] + rng.uniform(0.1, 0.6, (k, 1, 1, 1)) * rng.standard_normal(real[:k].shape)
    flat = real[k : 2 * k].reshape(k, real.shape[1], -1)
    perm = np.stack([f[:, rng.permutation(f.shape[1])] for f in flat]).reshape(real[k : 2 * k].shape)
    uni = rng.uniform(-1, 1, real[2 * k : 3 * k].shape)
    gauss = matched_noise(real, n - 3 * k, rng)
    return np.clip(np.concatenate([noisy, perm, uni, gauss]), -1, 1).astype(np.float32)


class _Net(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, 32, 3, 1, 1), nn.ReLU(), nn.Conv2d(32, 32, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, 1, 1), nn.ReLU(),
        )
        self.head = nn.Linear(64, 1)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        h = self.body(x)
        return torch.cat([h.mean((2, 3)), h.std((2, 3))], 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x)).squeeze(1)


class RealismSpace:
    """The trained realism feature space (see the module docstring).

    Parameters
    ----------
    n_steps, batch_size : Adam steps (lr 2e-3) of the real-vs-non-image classifier.

    Attributes
    ----------
    train_accuracy_ : its accuracy on a fresh draw of real train crops and non-images (0.870 on 8x8 photos).
    """

    def __init__(self, n_steps: int = 150, batch_size: int = 64) -> None:
        self.n_steps, self.batch_size = n_steps, batch_size

    def fit(self, real_train: np.ndarray) -> RealismSpace:
        real = check_images(real_train, "real_train")
        n_steps = positive_int(self.n_steps, "n_steps")
        half = max(1, positive_int(self.batch_size, "batch_size", minimum=2) // 2)
        rng = np.random.default_rng(_SPACE_SEED)
        with torch_seeded(rng):
            self.net_ = _Net(real.shape[1])
        fake = _non_images(real[rng.permutation(len(real))], rng)
        opt = torch.optim.Adam(self.net_.parameters(), lr=2e-3)
        y = torch.cat([torch.zeros(half), torch.ones(half)])
        self.net_.train()
        for _ in range(n_steps):
            xb = np.concatenate([real[rng.integers(0, len(real), half)], fake[rng.integers(0, len(fake), half)]])
            loss = nn.functional.binary_cross_entropy_with_logits(self.net_(to_tensor(xb)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        self.net_.eval()
        for p in self.net_.parameters():
            p.requires_grad_(False)
        m = min(len(real), 512)
        xs = np.concatenate(
            [real[rng.integers(0, len(real), m)], _non_images(real[rng.integers(0, len(real), m)], rng)]
        )
        with torch.no_grad():
            pred = (self.net_(to_tensor(xs)) > 0).numpy()
        self.train_accuracy_ = float(np.mean(pred == np.r_[np.zeros(m), np.ones(m)]))
        return self

    def features(self, x: np.ndarray) -> np.ndarray:
        """(n, 64) features of ``x`` (float64)."""
        if not hasattr(self, "net_"):
            raise ValueError("RealismSpace: not fitted; call fit(real_train) first")
        x = check_images(x, "x")
        with torch.no_grad():
            return np.concatenate(
                [self.net_.features(to_tensor(x[i : i + 1024])).numpy() for i in range(0, len(x), 1024)]
            ).astype(np.float64)

    def distance(self, real: np.ndarray, fake: np.ndarray) -> float:
        """Frechet distance of the features of ``fake`` to those of ``real``."""
        return frechet_distance(self.features(real), self.features(fake))
