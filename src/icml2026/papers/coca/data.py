"""Synthetic worlds of the erasure study (brief Sec. 5, Part A): a linear and an XOR concept.

Both draw latent factors ``z`` and observe ``R = z @ A.T`` through a random well-conditioned mixing matrix
``A`` (singular values in [1, 3]), so the concept is not axis-aligned in the representation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml2026.core.validate import as_labels, finite_number

__all__ = ["World", "as_generator", "linear_world", "xor_world", "xor_of_quadrant"]


@dataclass
class World:
    """A synthetic representation with a concept and a benign label.

    Attributes
    ----------
    X : (n, d) float64, the representation R = A z.
    concept : (n,) int64 in {0, 1}, the (harmful) concept C.
    benign : (n,) int64, the benign label Y (2 classes in the linear world, 4 quadrants in the XOR world).
    mixing : (d, d), the matrix A.
    latent : (n, d), the factors z.
    n_benign_classes : number of benign classes.
    """

    X: np.ndarray
    concept: np.ndarray
    benign: np.ndarray
    mixing: np.ndarray
    latent: np.ndarray
    n_benign_classes: int


def as_generator(seed: int | np.random.Generator) -> np.random.Generator:
    """A numpy generator from a seed (non-negative int) or the generator itself."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or a numpy Generator, got {seed!r}")
    return np.random.default_rng(int(seed))


def _check_sizes(d: int, n: int, d_min: int) -> None:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < d_min:
        raise ValueError(f"d must be an integer >= {d_min}, got {d!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 8:
        raise ValueError(f"n must be an integer >= 8, got {n!r}")
    if d > 4096 or n > 10**7 or d * n > 10**8:
        raise ValueError(f"n = {n}, d = {d}: at most d <= 4096, n <= 1e7 and n * d <= 1e8 (memory)")


def _mixing(d: int, rng: np.random.Generator) -> np.ndarray:
    """A = U diag(s) V^T with Haar-random U, V and singular values s uniform in [1, 3] (condition <= 3)."""
    u, _ = np.linalg.qr(rng.standard_normal((d, d)))
    v, _ = np.linalg.qr(rng.standard_normal((d, d)))
    s = rng.uniform(1.0, 3.0, size=d)
    return (u * s) @ v.T


def linear_world(d: int, n: int, seed: int | np.random.Generator, *, concept_shift: float = 2.0) -> World:
    """T1 setting: the concept moves E[R | C] along one direction only; Y lives in the other directions.

    z_1 = (2C - 1) * concept_shift + N(0, 1) carries the concept, C ~ Bernoulli(1/2);
    z_2..z_d ~ N(0, 1) independent of C; the benign label is Y = 1[z_2 + z_3 > 0] (so Y is independent
    of C and predictable only from the whitened complement of the concept direction).

    Parameters
    ----------
    d : dimension (>= 3). n : number of samples. seed : int seed or numpy Generator.
    concept_shift : half the distance between the class means along z_1.
    """
    _check_sizes(d, n, 3)
    concept_shift = finite_number(concept_shift, "concept_shift", lo=0)
    rng = as_generator(seed)
    concept = rng.integers(0, 2, size=n)
    z = rng.standard_normal((n, d))
    z[:, 0] += (2 * concept - 1) * concept_shift
    benign = (z[:, 1] + z[:, 2] > 0).astype(np.int64)
    a = _mixing(d, rng)
    return World(z @ a.T, concept.astype(np.int64), benign, a, z, 2)


def xor_of_quadrant(benign: np.ndarray) -> np.ndarray:
    """g(Y): the concept as a function of the quadrant label Y = 2 * 1[z_1 > 0] + 1[z_2 > 0] (an XOR)."""
    benign = as_labels(benign, "benign", n_classes=4)
    return ((benign >> 1) ^ (benign & 1)).astype(np.int64)


def xor_world(d: int, n: int, seed: int | np.random.Generator, *, margin: float = 0.0) -> World:
    """T2 setting: C = XOR(sign z_1, sign z_2) is a deterministic function g of the quadrant label Y.

    z ~ N(0, I_d) (``margin`` pushes |z_1|, |z_2| away from 0), Y = 2 * 1[z_1 > 0] + 1[z_2 > 0] in {0..3},
    C = g(Y). The class-conditional means of R given C are equal, so there is no linear concept signal.
    """
    _check_sizes(d, n, 2)
    margin = finite_number(margin, "margin", lo=0)
    rng = as_generator(seed)
    z = rng.standard_normal((n, d))
    z[:, :2] += np.sign(z[:, :2]) * margin
    benign = (2 * (z[:, 0] > 0) + (z[:, 1] > 0)).astype(np.int64)
    a = _mixing(d, rng)
    return World(z @ a.T, xor_of_quadrant(benign), benign, a, z, 4)
