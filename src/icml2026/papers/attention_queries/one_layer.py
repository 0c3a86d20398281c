"""Method 4 (part 2): the one-layer Transformer reduction, given an FFN learner (assumed, as in the paper).

Model: f(X) = u^T FFN(x_n + Attn(X)), FFN(z) = W_2 ReLU(W_1 z + b_1) + b_2, Attn(X) = sum_j alpha_j V^T x_j,
alpha = softmax_j(x_n^T A x_j).

Reduction (brief, Method 4):
* single-token queries: f((x)) = g((I + V^T) x) with g = u^T FFN, itself a ReLU network in x;
* queries (a, 0): the last token is 0, every logit is 0, alpha = 1/2 exactly, and f((a, 0)) = g(V^T a / 2).
An exact ReLU-network query learner (Rolnick & Kording 2020; Carlini et al. 2020; Daniely & Granot 2021)
run on both maps returns their first layers W_1 (I + V^T) and W_1 V^T / 2 (with the shared b_1, W_2, b_2,
u). **That FFN-learning step is assumed, as in the paper**: :class:`FFNLearnerStub` returns what such a
learner would, read from the true weights, and only checks its answer against a few counted oracle queries.
From the two first layers: W_1 = G - 2F and V^T = 2 W_1^+ F (W_1 has full column rank). With g and V known,
a two-token query (s a, s b), a = b + c, moves z along the segment z(t) = s b + s V^T b + t s V^T c,
t = alpha_1; we pick s so that no ReLU switches on the segment (checked from the known weights, no
queries), so f = g(z(0)) + alpha_1 (g(z(1)) - g(z(0))) and logit(alpha_1) / s^2 = b^T A c as in Method 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .data import check_rng, random_single_head
from .exact import NotIdentifiableError
from .model import as_sequence, check_dim
from .oracle import as_counting
from .precision import FLOAT64_EPS, PRECISION_SAFETY
from .queries import MAX_RESCALE_ROUNDS, SaturationError, choose_directions

__all__ = [
    "OneLayerTransformer",
    "ReLUNetwork",
    "FFNLearnerStub",
    "OneLayerEstimate",
    "random_one_layer",
    "recover_one_layer",
]


@dataclass(frozen=True)
class ReLUNetwork:
    """x -> u^T (W_2 ReLU(W_1 x + b_1) + b_2); W_1 (m, d), b_1 (m,), W_2 (k, m), b_2 (k,), u (k,)."""

    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray
    u: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Outputs for x of shape (d,) or (batch, d)."""
        hidden = np.maximum(x @ self.W1.T + self.b1, 0.0)
        return (hidden @ self.W2.T + self.b2) @ self.u


class OneLayerTransformer:
    """f(X) = u^T FFN(x_n + sum_j alpha_j V^T x_j) with alpha = softmax_j(x_n^T A x_j) (brief, Method 4).

    Parameters
    ----------
    A : (d, d) attention matrix; V : (d, d) value-output matrix (token j contributes V^T x_j);
    ffn : the ReLU network g = u^T FFN acting on the residual stream z (its W1 has d columns).
    """

    def __init__(self, A: np.ndarray, V: np.ndarray, ffn: ReLUNetwork) -> None:
        self.A = np.asarray(A, dtype=np.float64)
        self.V = np.asarray(V, dtype=np.float64)
        d = self.A.shape[0]
        if self.A.shape != (d, d) or self.V.shape != (d, d):
            raise ValueError(f"A and V must both be square (d, d), got {self.A.shape} and {self.V.shape}")
        if ffn.W1.ndim != 2 or ffn.W1.shape[1] != d:
            raise ValueError(f"the FFN's W1 must have d={d} columns, got shape {ffn.W1.shape}")
        self.ffn = ffn
        self.d = d

    def residual(self, X: np.ndarray) -> np.ndarray:
        """z = x_n + Attn(X), shape (d,)."""
        X = as_sequence(X, self.d)
        s = X @ (X[-1] @ self.A)
        w = np.exp(s - s.max())
        alpha = w / w.sum()
        return X[-1] + (alpha @ X) @ self.V

    def __call__(self, X: np.ndarray) -> float:
        return float(self.ffn(self.residual(X)))


def random_one_layer(
    d: int, rng: np.random.Generator, *, width: int | None = None, rank: int | None = None, scale: float = 1.0
) -> OneLayerTransformer:
    """A planted one-layer Transformer: A as in :func:`random_single_head`, V ~ N(0, I/d),
    W_1 ~ N(0, I/d) of width m = 2d (>= d, full column rank), b_1 = +-U(0.5, 1.5) (bounded away from 0,
    so a neighbourhood of z = 0 lies in one linear region), W_2 ~ N(0, I/m), b_2 ~ N(0, 1), output dim 1."""
    d = check_dim(d)
    rng = check_rng(rng)
    m = 2 * d if width is None else check_dim(width, "width")
    if m < d:
        raise ValueError(f"width must be >= d={d} so that W_1 can have full column rank, got {m}")
    head = random_single_head(d, d if rank is None else rank, rng, scale=scale)
    V = rng.normal(0.0, 1.0 / np.sqrt(d), size=(d, d))
    W1 = rng.normal(0.0, 1.0 / np.sqrt(d), size=(m, d))
    b1 = rng.choice([-1.0, 1.0], size=m) * rng.uniform(0.5, 1.5, size=m)
    W2 = rng.normal(0.0, 1.0 / np.sqrt(m), size=(1, m))
    ffn = ReLUNetwork(W1=W1, b1=b1, W2=W2, b2=rng.standard_normal(1), u=np.ones(1))
    return OneLayerTransformer(head.A, V, ffn)


class FFNLearnerStub:
    """Stand-in for an exact ReLU-FFN query learner. ASSUMED, as in the paper: not a learning algorithm.

    ``learn(probe)`` returns the ReLU network that an exact extraction algorithm would return for
    ``probe = "single_token"`` (x -> f((x)), first layer W_1 (I + V^T)) or ``probe = "pair_with_zero"``
    (x -> f((x, 0)), first layer W_1 V^T / 2), up to no symmetry (hidden units kept in the model's order
    and scale). The answer is read from the true model; it is then compared with ``n_checks`` real
    oracle answers on random inputs (counted in ``n_check_queries``), so a wrong stub cannot go unnoticed.
    """

    PROBES = ("single_token", "pair_with_zero")

    def __init__(self, model: OneLayerTransformer, rng: np.random.Generator, n_checks: int = 4) -> None:
        self.model = model
        self.rng = check_rng(rng)
        self.n_checks = check_dim(n_checks, "n_checks")
        self.n_check_queries = 0

    def learn(self, probe: str, oracle: Callable[[np.ndarray], float]) -> ReLUNetwork:
        if probe not in self.PROBES:
            raise ValueError(f"unknown probe {probe!r}; use one of {', '.join(self.PROBES)}")
        ffn, d = self.model.ffn, self.model.d
        first = np.eye(d) + self.model.V.T if probe == "single_token" else self.model.V.T / 2.0
        net = ReLUNetwork(W1=ffn.W1 @ first, b1=ffn.b1, W2=ffn.W2, b2=ffn.b2, u=ffn.u)
        for _ in range(self.n_checks):
            x = self.rng.normal(0.0, 1.0 / np.sqrt(d), size=d)
            X = x[None, :] if probe == "single_token" else np.stack([x, np.zeros(d)])
            got = oracle(X)
            self.n_check_queries += 1
            if abs(got - float(net(x))) > 1e-9 * max(1.0, abs(got)):
                raise RuntimeError(f"the FFN stub's {probe} network disagrees with the oracle")
        return net


@dataclass
class OneLayerEstimate:
    """Recovered one-layer parameters and the oracle queries spent on the attention part."""

    A: np.ndarray
    V: np.ndarray
    W1: np.ndarray
    v_eff: np.ndarray  # value vector seen through the FFN's linear region at z = 0
    n_queries: int  # oracle calls of the attention step (d^2 + rescales)
    n_rescale_queries: int
    n_stub_check_queries: int  # the stub's consistency checks; the FFN learner's own cost is assumed
    error_bound_A: float | None = None  # ||A_hat - A||_F bound from float64 rounding of the answers


def recover_one_layer(
    oracle: Callable[[np.ndarray], float],
    d: int,
    ffn_learner: FFNLearnerStub,
    *,
    max_relative_error: float = 1e-3,
) -> OneLayerEstimate:
    """Method 4 reduction: recover A and V of a one-layer Transformer given an FFN learner (assumed).

    Parameters
    ----------
    oracle : callable f(X) -> float; d : token dimension; ffn_learner : the (assumed) FFN learner.
    max_relative_error : refuse (ValueError) when the error bar of A is not below this fraction of ||A||_F
        (tiny |b_1| shrink the usable linear region until the signal drowns in rounding).

    Returns
    -------
    OneLayerEstimate with A, V (d, d) and the query counts.
    """
    d = check_dim(d)
    counter = as_counting(oracle)
    G_net = ffn_learner.learn("single_token", counter)
    F_net = ffn_learner.learn("pair_with_zero", counter)
    W1 = G_net.W1 - 2.0 * F_net.W1  # W1 (I + V^T) - 2 W1 V^T / 2
    if np.linalg.matrix_rank(W1) < d:
        raise ValueError("the FFN's first layer W_1 must have full column rank d for the reduction")
    V = (2.0 * np.linalg.pinv(W1) @ F_net.W1).T  # V^T = 2 W_1^+ (W_1 V^T / 2)
    net = ReLUNetwork(W1=W1, b1=G_net.b1, W2=G_net.W2, b2=G_net.b2, u=G_net.u)
    if np.any(net.b1 == 0.0):
        raise ValueError("the reduction needs b_1 without zeros (z = 0 must be inside one linear region)")
    pattern0 = net.b1 > 0
    if not pattern0.any():
        raise NotIdentifiableError(
            "every hidden unit of the FFN is inactive at z = 0 (all b_1 < 0): f is constant on the linear "
            "region around the origin, where the reduction's queries live, so they carry no attention "
            "signal (f itself is not identically zero); the reduction needs at least one b_1 > 0"
        )
    k0 = net.W1.T @ (pattern0 * (net.W2.T @ net.u))  # gradient of g in the region of z = 0
    v_eff = V @ k0  # token j contributes alpha_j (V k0)^T x_j to f there
    if np.max(np.abs(v_eff)) <= 1e-12 * max(float(np.max(np.abs(V))), 1e-300) * max(float(np.max(np.abs(k0))), 1e-300):
        raise NotIdentifiableError(
            "the FFN's gradient at z = 0 is orthogonal to every value direction (V k_0 = 0): in the linear "
            "region around the origin the output does not depend on the attention weights, so the "
            "reduction cannot identify A there (f itself need not be zero)"
        )
    # The linear region of z = 0 has radius min_k |b_1k| / ||W_1k||: with tiny |b_1| the queries must be so
    # small that the logit signal s^2 b^T A c falls below float64 precision. Every measurement gets an error
    # bar; the reduction refuses (max_relative_error) rather than return an estimate it cannot trust.
    radius = float(np.min(np.abs(net.b1) / np.maximum(np.linalg.norm(net.W1, axis=1), 1e-300)))
    C = choose_directions(v_eff)
    start = counter.n_queries  # the stub's check queries above are reported apart
    M = np.empty((d, d))
    dM = np.empty((d, d))
    n_rescale = 0
    for i in range(d):
        for j in range(d):
            M[i, j], dM[i, j], retries = _logit_measurement(counter, net, V, pattern0, np.eye(d)[i], C[:, j])
            n_rescale += retries
    C_inv = np.linalg.inv(C)
    A = M @ C_inv  # A = M C^{-1}
    bound = float(np.linalg.norm(dM)) * float(np.linalg.norm(C_inv, 2))
    if not bound < max_relative_error * float(np.linalg.norm(A)):
        raise ValueError(
            f"the attention signal is below the oracle's precision: the linear region of the FFN around "
            f"z = 0 has radius {radius:.3g} (min |b_1k| / ||W_1k||), so the queries are scaled down to fit "
            f"in it and their logits s^2 b^T A c drown in rounding; the error bar of A ({bound:.3g}) is "
            f"not below {max_relative_error:g} x ||A_hat||_F = {float(np.linalg.norm(A)):.3g}. "
            "The reduction needs |b_1| bounded away from 0 (relative to ||W_1||)"
        )
    return OneLayerEstimate(
        error_bound_A=bound,
        A=A,
        V=V,
        W1=W1,
        v_eff=v_eff,
        n_queries=counter.n_queries - start,
        n_rescale_queries=n_rescale,
        n_stub_check_queries=ffn_learner.n_check_queries,
    )


def _logit_measurement(
    counter: Callable[[np.ndarray], float],
    net: ReLUNetwork,
    V: np.ndarray,
    pattern0: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    saturation: float = 1e-9,
) -> tuple[float, float, int]:
    """(b^T A c, its error bar, retries) from one query (s (b + c), s b), with s shrunk until the segment
    z(0)..z(1) stays in the linear region of z = 0 (no queries needed) and the softmax is not saturated
    (retries counted). The error bar propagates float64 rounding (PRECISION_SAFETY eps of each answer)."""
    s = 1.0
    for _ in range(4 * MAX_RESCALE_ROUNDS):
        z0 = s * (b + V.T @ b)
        z1 = z0 + s * (V.T @ c)
        if np.array_equal(z0 @ net.W1.T + net.b1 > 0, pattern0) and np.array_equal(
            z1 @ net.W1.T + net.b1 > 0, pattern0
        ):
            break
        s /= 2.0
    retries = -1
    eps = PRECISION_SAFETY * FLOAT64_EPS
    for _ in range(MAX_RESCALE_ROUNDS):
        retries += 1
        g0 = float(net(s * (b + V.T @ b)))
        g1 = float(net(s * (b + V.T @ b) + s * (V.T @ c)))
        f = counter(np.stack([s * (b + c), s * b]))
        alpha = (f - g0) / (g1 - g0)
        one_minus = (g1 - f) / (g1 - g0)
        if saturation <= alpha <= 1 - saturation and saturation <= one_minus <= 1 - saturation:
            y = (np.log(alpha) - np.log(one_minus)) / s**2
            da = eps * (abs(f) + abs(g0) + abs(g1)) / abs(g1 - g0)
            if da >= min(alpha, one_minus):
                return y, np.inf, retries
            hi = np.log(alpha + da) - np.log(one_minus - da)
            lo = np.log(alpha - da) - np.log(one_minus + da)
            return y, float(max(hi - y * s**2, y * s**2 - lo)) / s**2, retries
        s /= 4.0  # shrinking s keeps the segment inside the region (it is a star-shaped shrink towards 0)
    raise SaturationError(
        "a one-layer query stayed saturated after the maximum number of rescalings: the oracle does not "
        "match the one-layer model the FFN learner returned"
    )
