"""Concept erasers: LEACE (with a concept-signal test), QLEACE and a trained adversarial eraser.

- :class:`LeaceConceptEraser` wraps ``concept_erasure.LeaceEraser`` (Belrose et al. 2023): the minimal
  affine edit x -> x - W^+ u u^T W (x - mean) that makes the concept linearly unpredictable (class means
  equal). Before erasing it runs a permutation test of "no linear concept signal" on the statistic
  T = ||Sigma_xz||_F (the cross-covariance of X and the centred one-hot concept; brief, pitfalls); with no
  significant signal it warns (or, if asked, leaves X unchanged) rather than silently projecting out a
  direction fitted to noise. The permutation test is exact under exchangeability for any d and n, including
  d >= n (LLM activations), where the earlier chi-square score test (n R^2) was invalid.
- :func:`leace_reference`: our closed-form LEACE in numpy, used to cross-check the package (criterion 4).
- :class:`QuadraticConceptEraser` wraps ``concept_erasure.QuadraticEraser`` (QLEACE): optimal transport of
  each concept class to the Gaussian barycenter (equal means and covariances); needs the concept labels
  at transform time (oracle erasure).
- :class:`AdversarialEraser`: an encoder-decoder trained to reconstruct R while an MLP adversary,
  connected through a gradient-reversal layer, tries to predict the concept; ``strength`` is lambda.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml2026.core import torch_generator
from icml2026.core.config import config, param
from icml2026.core.validate import finite_number, positive_int

from .probes import _mlp
from .validation import check_features_labels

__all__ = [
    "AdversarialEraser",
    "AdversarialEraserConfig",
    "ConceptSignalTest",
    "ConceptSignalWarning",
    "LeaceConceptEraser",
    "QuadraticConceptEraser",
    "concept_signal_test",
    "leace_reference",
]


class ConceptSignalWarning(UserWarning):
    """LEACE was asked to erase a concept with no significant linear signal (it would remove noise)."""


def _one_hot(concept: np.ndarray) -> np.ndarray:
    """Concept labels as LEACE's Z: one column for a binary concept, one-hot columns otherwise."""
    classes, idx = np.unique(concept, return_inverse=True)
    if len(classes) == 2:
        return idx.astype(np.float64)[:, None]
    return np.eye(len(classes))[idx]


@dataclass(frozen=True)
class ConceptSignalTest:
    """Permutation test of H0: X and the concept are exchangeable (no linear signal).

    ``statistic`` = ||Sigma_xz||_F; ``p_value`` = (1 + #{permuted statistic >= observed}) / (1 + B).
    """

    statistic: float
    n_permutations: int
    p_value: float


def concept_signal_test(
    X: np.ndarray, concept: np.ndarray, *, n_permutations: int = 999, rng: np.random.Generator
) -> ConceptSignalTest:
    """Permutation test for a linear concept signal on T = ||Sigma_xz||_F (brief, pitfalls).

    Sigma_xz = X_c^T Z_c / n is the cross-covariance of the centred activations ``X`` (n, d) and the centred
    one-hot concept (n, k - 1). Permuting the labels ``n_permutations`` times (draws from ``rng``) gives the
    null distribution of T without any assumption on d / n, so the test is valid for d >= n.
    """
    X, concept = check_features_labels(X, concept, name="X")
    n_permutations = positive_int(n_permutations, "n_permutations", minimum=1, maximum=100_000)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: expected a numpy Generator, got {type(rng).__name__}")
    idx = np.unique(concept, return_inverse=True)[1]
    z = np.eye(int(idx.max()) + 1)[idx][:, 1:]
    xc = X - X.mean(0)
    zc = z - z.mean(0)
    n = len(X)

    def stat(zz: np.ndarray) -> float:
        return float(np.linalg.norm(xc.T @ zz) / n)

    observed = stat(zc)
    exceed = 0
    for start in range(0, n_permutations, 64):  # blocks of permutations: (n, k-1, 64) at most
        m = min(64, n_permutations - start)
        perms = np.stack([rng.permutation(n) for _ in range(m)])  # (m, n)
        cross = np.einsum("nd,mnk->mdk", xc, zc[perms])  # (m, d, k-1)
        null = np.sqrt((cross**2).sum(axis=(1, 2))) / n
        # a relative tolerance so that a permutation equal to the identity counts as "as extreme"
        exceed += int(np.sum(null >= observed * (1 - 1e-12)))
    return ConceptSignalTest(observed, n_permutations, (1 + exceed) / (1 + n_permutations))


class LeaceConceptEraser:
    """LEACE through ``concept_erasure`` with a significance gate on the concept signal.

    Parameters
    ----------
    alpha : significance level of :func:`concept_signal_test`.
    n_permutations : permutations of that test. seed : seeds the permutations (``fit`` may pass ``rng``).
    on_insignificant : what to do when the test does not reject H0 (p >= alpha):
        ``"warn"`` erase anyway and emit :class:`ConceptSignalWarning` (LEACE's own behaviour, made visible);
        ``"identity"`` warn and leave X unchanged; ``"raise"`` raise ValueError.
    **leace_kwargs : passed to ``LeaceEraser.fit`` (e.g. ``shrinkage=False``).

    Fitted attributes: ``signal_`` (ConceptSignalTest), ``significant_``, ``erased_`` (whether the
    transform edits X), ``eraser_`` (the package's ``LeaceEraser``).
    """

    def __init__(
        self,
        alpha: float = 0.01,
        on_insignificant: str = "warn",
        n_permutations: int = 999,
        seed: int = 0,
        **leace_kwargs: Any,
    ) -> None:
        self.alpha, self.on_insignificant, self.leace_kwargs = alpha, on_insignificant, leace_kwargs
        self.n_permutations, self.seed = n_permutations, seed

    def fit(
        self, X: np.ndarray, concept: np.ndarray, *, rng: np.random.Generator | None = None
    ) -> LeaceConceptEraser:
        """Fit on activations ``X`` (n, d) and concept labels ``concept`` (n,) (training split only).

        ``rng`` draws the permutations of the signal test; by default a generator seeded with ``seed``.
        """
        import torch
        from concept_erasure import LeaceEraser

        finite_number(self.alpha, "alpha", lo=0, hi=1, lo_open=True, hi_open=True)
        positive_int(self.seed, "seed", minimum=0)
        if self.on_insignificant not in ("warn", "identity", "raise"):
            raise ValueError(
                f"on_insignificant must be 'warn', 'identity' or 'raise', got {self.on_insignificant!r}"
            )
        X, concept = check_features_labels(X, concept, name="X")
        self.d_ = X.shape[1]
        gen = rng if rng is not None else np.random.default_rng(self.seed)
        self.signal_ = concept_signal_test(X, concept, n_permutations=self.n_permutations, rng=gen)
        self.significant_ = self.signal_.p_value < self.alpha
        self.erased_ = True
        if not self.significant_:
            msg = (
                f"no significant linear concept signal (permutation test p = {self.signal_.p_value:.3g} >= "
                f"alpha = {self.alpha}); LEACE would project out a direction estimated from noise"
            )
            if self.on_insignificant == "raise":
                raise ValueError(msg)
            if self.on_insignificant == "identity":
                warnings.warn(
                    msg + "; leaving the representation unchanged", ConceptSignalWarning, stacklevel=2
                )
                self.erased_ = False
            else:
                warnings.warn(msg + "; erasing anyway", ConceptSignalWarning, stacklevel=2)
        self.eraser_ = LeaceEraser.fit(
            torch.as_tensor(X), torch.as_tensor(_one_hot(concept)), **self.leace_kwargs
        )
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """The erased representation, shape (n, d)."""
        import torch

        if not hasattr(self, "d_"):
            raise ValueError("this LeaceConceptEraser is not fitted yet: call fit first")
        X = check_features_labels(X, None, name="X")[0]
        if X.shape[1] != self.d_:
            raise ValueError(f"X has {X.shape[1]} features, the eraser was fitted on {self.d_}")
        if not self.erased_:
            return X.copy()
        return self.eraser_(torch.as_tensor(X)).numpy().astype(np.float64)


def leace_reference(
    X: np.ndarray, concept: np.ndarray, svd_tol: float = 0.01
) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form LEACE (Belrose et al. 2023, Thm 3.1) in numpy: r(x) = x - W^+ P_{W S_xz} W (x - mean).

    W = S_xx^{-1/2} (pseudo-inverse square root), P the orthogonal projector onto the column space of
    W S_xz (left singular vectors with singular value > ``svd_tol``). Covariances use Bessel's correction
    and no shrinkage. Returns (P_leace, bias): erased = mean + (x - mean) @ (I - W^+ P W)^T, i.e.
    ``erased = X @ P_leace.T + bias``.
    """
    X, concept = check_features_labels(X, concept, name="X")
    svd_tol = finite_number(svd_tol, "svd_tol", lo=0)
    z = _one_hot(concept)
    mean = X.mean(0)
    xc = X - mean
    n, d = X.shape
    sxx = xc.T @ xc / (n - 1)
    sxz = xc.T @ (z - z.mean(0)) / (n - 1)
    lam, vec = np.linalg.eigh((sxx + sxx.T) / 2)
    keep = lam > lam[-1] * d * np.finfo(np.float64).eps
    lam = np.clip(lam, 0.0, None)
    w = (vec * np.where(keep, 1 / np.sqrt(np.where(keep, lam, 1.0)), 0.0)) @ vec.T
    w_inv = (vec * np.where(keep, np.sqrt(lam), 0.0)) @ vec.T
    u, s, _ = np.linalg.svd(w @ sxz, full_matrices=False)
    u = u[:, s > svd_tol]
    p = np.eye(d) - w_inv @ u @ u.T @ w
    return p, mean - mean @ p.T


class QuadraticConceptEraser:
    """QLEACE via ``concept_erasure.QuadraticEraser``: moves every class to the barycenter Gaussian.

    Deviation: like the package, it needs the concept labels at transform time (oracle erasure), which is
    fine for measuring what information survives but is not usable as a deployed intervention.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def fit(self, X: np.ndarray, concept: np.ndarray) -> QuadraticConceptEraser:
        import torch
        from concept_erasure import QuadraticEraser

        X, concept = check_features_labels(X, concept, name="X")
        self.classes_, idx = np.unique(concept, return_inverse=True)
        if np.min(np.bincount(idx)) < 2:
            raise ValueError("every concept class needs at least two samples to estimate a covariance")
        self.d_ = X.shape[1]
        self.eraser_ = QuadraticEraser.fit(torch.as_tensor(X), torch.as_tensor(idx), **self.kwargs)
        return self

    def transform(self, X: np.ndarray, concept: np.ndarray) -> np.ndarray:
        """Erase with the oracle concept labels ``concept`` (n,); returns (n, d)."""
        import torch

        if not hasattr(self, "d_"):
            raise ValueError("this QuadraticConceptEraser is not fitted yet: call fit first")
        X, concept = check_features_labels(X, concept, name="X", min_classes=1)
        if X.shape[1] != self.d_:
            raise ValueError(f"X has {X.shape[1]} features, the eraser was fitted on {self.d_}")
        if not np.all(np.isin(concept, self.classes_)):
            raise ValueError("concept holds a class that was not seen in fit")
        idx = np.searchsorted(self.classes_, concept)
        return self.eraser_(torch.as_tensor(X), torch.as_tensor(idx)).numpy().astype(np.float64)


@config
class AdversarialEraserConfig:
    """Encoder-decoder with gradient reversal (Ganin & Lempitsky 2015) against an MLP concept adversary."""

    strength: float = param(1.0, 0.0, 1e3, help="lambda: weight of the reversed adversary gradient")
    hidden: int = param(64, 1, 4096)
    n_epochs: int = param(30, 1, 10_000)
    batch_size: int = param(256, 1, 100_000)
    lr: float = param(3e-3, 0.0, 1.0, lo_open=True)


def _grad_reverse(x: Any, lam: float) -> Any:
    import torch

    class _Rev(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, inp: Any) -> Any:
            return inp.view_as(inp)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return -lam * grad

    return _Rev.apply(x)


class AdversarialEraser:
    """A trained non-linear eraser: R' = dec(enc(R)) minimising ||R' - R||^2 - lambda * CE(adv(R'), C).

    Inputs are standardised with training statistics; the output is mapped back to the input scale.
    """

    def __init__(self, config: AdversarialEraserConfig | None = None) -> None:
        self.config = config or AdversarialEraserConfig()

    def fit(
        self, X: np.ndarray, concept: np.ndarray, *, rng: np.random.Generator, device: Any = "cpu"
    ) -> AdversarialEraser:
        """Train the eraser on ``device`` (initial weights and batch orders are drawn on the CPU and moved)."""
        import torch

        cfg = self.config
        if not isinstance(cfg, AdversarialEraserConfig):
            raise ValueError(f"config: expected an AdversarialEraserConfig, got {type(cfg).__name__}")
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng: expected a numpy Generator, got {type(rng).__name__}")
        X, concept = check_features_labels(X, concept, name="X")
        self.classes_, idx = np.unique(concept, return_inverse=True)
        self.mean_, self.scale_ = X.mean(0), X.std(0)
        self.scale_[self.scale_ < 1e-12] = 1.0
        d = X.shape[1]
        Xs = torch.as_tensor((X - self.mean_) / self.scale_).to(device)
        zt = torch.as_tensor(idx, dtype=torch.long).to(device)
        gen = torch_generator(rng)
        self.net_ = _mlp(d, (cfg.hidden, cfg.hidden), d, gen).to(device)  # encoder-decoder d -> h -> h -> d
        adversary = _mlp(d, (cfg.hidden, cfg.hidden), len(self.classes_), gen).to(device)
        opt = torch.optim.Adam([*self.net_.parameters(), *adversary.parameters()], lr=cfg.lr)
        self.losses_ = []
        for _ in range(cfg.n_epochs):
            order = torch.randperm(len(Xs), generator=gen).to(device)
            total = 0.0
            for s in range(0, len(order), cfg.batch_size):
                b = order[s : s + cfg.batch_size]
                out = self.net_(Xs[b])
                recon = ((out - Xs[b]) ** 2).sum(-1).mean()
                adv = torch.nn.functional.cross_entropy(adversary(_grad_reverse(out, cfg.strength)), zt[b])
                loss = recon + adv  # the adversary minimises adv; the eraser sees -lambda * d adv
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(recon.detach()) * len(b)
            self.losses_.append(total / len(Xs))
        self.net_.eval()
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """The erased representation R' = dec(enc(R)), shape (n, d)."""
        import torch

        if not hasattr(self, "net_"):
            raise ValueError("this AdversarialEraser is not fitted yet: call fit first")
        X = check_features_labels(X, None, name="X")[0]
        if X.shape[1] != len(self.mean_):
            raise ValueError(f"X has {X.shape[1]} features, the eraser was fitted on {len(self.mean_)}")
        device = next(self.net_.parameters()).device
        with torch.no_grad():
            out = self.net_(torch.as_tensor((X - self.mean_) / self.scale_).to(device)).cpu().numpy()
        return out * self.scale_ + self.mean_
