"""Concept erasers: LEACE (with a concept-signal test), QLEACE and a trained adversarial eraser.

- :class:`LeaceConceptEraser` wraps ``concept_erasure.LeaceEraser`` (Belrose et al. 2023): the minimal
  affine edit x -> x - W^+ u u^T W (x - mean) that makes the concept linearly unpredictable (class means
  equal). Before erasing it runs a score (Lagrange-multiplier) test of "no linear concept signal",
  T = n * tr(S_zz^-1 S_zx S_xx^-1 S_xz) ~ chi2(rank(S_xx) * (k - 1)); with no significant signal it warns
  (or, if asked, leaves X unchanged) rather than silently projecting out a direction fitted to noise
  (brief, pitfalls).
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
from scipy import stats

from icml2026.core import torch_generator

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
    """Score test of H0: Cov(X, Z) = 0. ``statistic`` = n * (sum of squared canonical correlations)."""

    statistic: float
    dof: int
    p_value: float


def concept_signal_test(X: np.ndarray, concept: np.ndarray) -> ConceptSignalTest:
    """Test for a linear concept signal: T = n tr(S_zz^-1 S_zx S_xx^+ S_xz), chi2 with rank(S_xx)(k-1) dof.

    Under H0 (X and the concept uncorrelated) T is asymptotically chi-squared; it equals n times the sum
    of squared canonical correlations between X and the one-hot concept (n R^2 for a binary concept).
    """
    X, concept = check_features_labels(X, concept, name="X")
    z = np.eye(len(np.unique(concept)))[np.unique(concept, return_inverse=True)[1]][:, 1:]
    xc, zc = X - X.mean(0), z - z.mean(0)
    n = len(X)
    sxx, szz, sxz = xc.T @ xc / n, zc.T @ zc / n, xc.T @ zc / n
    rank = int(np.linalg.matrix_rank(sxx))
    stat = float(n * np.trace(np.linalg.solve(szz, sxz.T @ np.linalg.pinv(sxx, hermitian=True) @ sxz)))
    dof = rank * z.shape[1]
    return ConceptSignalTest(stat, dof, float(stats.chi2.sf(stat, dof)))


class LeaceConceptEraser:
    """LEACE through ``concept_erasure`` with a significance gate on the concept signal.

    Parameters
    ----------
    alpha : significance level of :func:`concept_signal_test`.
    on_insignificant : what to do when the test does not reject H0 (p >= alpha):
        ``"warn"`` erase anyway and emit :class:`ConceptSignalWarning` (LEACE's own behaviour, made visible);
        ``"identity"`` warn and leave X unchanged; ``"raise"`` raise ValueError.
    **leace_kwargs : passed to ``LeaceEraser.fit`` (e.g. ``shrinkage=False``).

    Fitted attributes: ``signal_`` (ConceptSignalTest), ``significant_``, ``erased_`` (whether the
    transform edits X), ``eraser_`` (the package's ``LeaceEraser``).
    """

    def __init__(self, alpha: float = 0.01, on_insignificant: str = "warn", **leace_kwargs: Any) -> None:
        self.alpha, self.on_insignificant, self.leace_kwargs = alpha, on_insignificant, leace_kwargs

    def fit(self, X: np.ndarray, concept: np.ndarray) -> LeaceConceptEraser:
        """Fit on activations ``X`` (n, d) and concept labels ``concept`` (n,) (training split only)."""
        import torch
        from concept_erasure import LeaceEraser

        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.on_insignificant not in ("warn", "identity", "raise"):
            raise ValueError(
                f"on_insignificant must be 'warn', 'identity' or 'raise', got {self.on_insignificant!r}"
            )
        X, concept = check_features_labels(X, concept, name="X")
        self.d_ = X.shape[1]
        self.signal_ = concept_signal_test(X, concept)
        self.significant_ = self.signal_.p_value < self.alpha
        self.erased_ = True
        if not self.significant_:
            msg = (
                f"no significant linear concept signal (score test p = {self.signal_.p_value:.3g} >= "
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

        X, concept = check_features_labels(X, concept, name="X", min_classes=1)
        if X.shape[1] != self.d_:
            raise ValueError(f"X has {X.shape[1]} features, the eraser was fitted on {self.d_}")
        if not np.all(np.isin(concept, self.classes_)):
            raise ValueError("concept holds a class that was not seen in fit")
        idx = np.searchsorted(self.classes_, concept)
        return self.eraser_(torch.as_tensor(X), torch.as_tensor(idx)).numpy().astype(np.float64)


@dataclass(frozen=True)
class AdversarialEraserConfig:
    """Encoder-decoder with gradient reversal (Ganin & Lempitsky 2015) against an MLP concept adversary."""

    strength: float = 1.0  # lambda: weight of the reversed adversary gradient
    hidden: int = 64
    n_epochs: int = 30
    batch_size: int = 256
    lr: float = 3e-3

    def __post_init__(self) -> None:
        if not (self.strength >= 0) or self.hidden < 1 or self.n_epochs < 1 or self.batch_size < 1:
            raise ValueError("need strength >= 0, hidden >= 1, n_epochs >= 1, batch_size >= 1")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")


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

    def fit(self, X: np.ndarray, concept: np.ndarray, *, rng: np.random.Generator) -> AdversarialEraser:
        import torch

        cfg = self.config
        X, concept = check_features_labels(X, concept, name="X")
        self.classes_, idx = np.unique(concept, return_inverse=True)
        self.mean_, self.scale_ = X.mean(0), X.std(0)
        self.scale_[self.scale_ < 1e-12] = 1.0
        d = X.shape[1]
        Xs = torch.as_tensor((X - self.mean_) / self.scale_)
        zt = torch.as_tensor(idx, dtype=torch.long)
        gen = torch_generator(rng)
        self.net_ = _mlp(d, (cfg.hidden, cfg.hidden), d, gen)  # encoder-decoder d -> h -> h -> d
        adversary = _mlp(d, (cfg.hidden, cfg.hidden), len(self.classes_), gen)
        opt = torch.optim.Adam([*self.net_.parameters(), *adversary.parameters()], lr=cfg.lr)
        self.losses_ = []
        for _ in range(cfg.n_epochs):
            order = torch.randperm(len(Xs), generator=gen)
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
        import torch

        X = check_features_labels(X, None, name="X")[0]
        if X.shape[1] != len(self.mean_):
            raise ValueError(f"X has {X.shape[1]} features, the eraser was fitted on {len(self.mean_)}")
        with torch.no_grad():
            out = self.net_(torch.as_tensor((X - self.mean_) / self.scale_)).numpy()
        return out * self.scale_ + self.mean_
