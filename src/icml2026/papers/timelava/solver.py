"""Entropic unbalanced optimal transport with KL marginal penalties (Def. 4.4, Eq. 5), in the log domain.

Two solvers of the same fixed-point equations:

* :func:`sinkhorn_log_unbalanced` works on a dense cost matrix (the brief's iteration verbatim, processed in
  row chunks so that no more than one chunk-sized temporary is alive at a time);
* :func:`solve_uot_truncated` never keeps more than a row chunk of the cost matrix: it runs the same
  iteration on a sparse set of candidate entries and then *certifies* the truncation with a chunked pass
  over the full cost, adding every entry whose relative weight in its row or column log-sum-exp exceeds
  ``exp(-theta)``, until none is missing (Schmitzer's sparse kernel truncation, used here as an exact
  accelerator: at the returned potentials every dropped entry weighs less than ``exp(-theta)`` of its
  row's and column's mass).

Symbols: ``a`` (n,), ``b`` (m,) the segment weights (uniform ``1/n``, ``1/m`` in the paper), ``D`` (n, m)
the ground cost, ``kappa`` the KL marginal penalty, ``eps`` the entropic regularisation,
``rho = kappa / (kappa + eps)``, ``f`` (n,), ``g`` (m,) the dual potentials; the plan is
``T_ij = a_i b_j exp((f_i + g_j - D_ij) / eps)``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

from icml2026.core.validate import as_array, finite_number, positive_int

__all__ = [
    "UOTResult",
    "sinkhorn_log_unbalanced",
    "solve_uot_truncated",
    "uot_objective",
    "transport_plan",
]

# Working-set size of one chunk of the cost matrix (entries); 2**21 float64 = 16 MiB per temporary.
_CHUNK_ENTRIES = 1 << 21


@dataclass
class UOTResult:
    """Dual solution of the entropic unbalanced OT problem (Eq. 5).

    Attributes
    ----------
    f : (n,) dual potential of the evaluated side (Eq. 7 uses it).
    g : (m,) dual potential of the reference side.
    n_iter : Sinkhorn iterations performed (summed over certification rounds for the truncated solver).
    converged : whether ``max|f_k - f_{k-1}| / (1 + max|f_k|) < tol`` was reached.
    n_entries : number of cost entries the iterations used (``n * m`` when dense).
    n_rounds : certification rounds (1 for the dense solver).
    """

    f: np.ndarray
    g: np.ndarray
    n_iter: int
    converged: bool
    n_entries: int
    n_rounds: int = 1
    n_newton: int = 0


def _check_solver_args(kappa: float, eps: float, tol: float, max_iter: int) -> float:
    if isinstance(kappa, bool) or not isinstance(kappa, (int, float, np.integer, np.floating)):
        raise ValueError(f"kappa must be a positive finite number, got {kappa!r}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)):
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    if not (np.isfinite(kappa) and kappa > 0):
        raise ValueError(f"kappa must be a positive finite number, got {kappa!r}")
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    finite_number(tol, "tol", lo=0.0, lo_open=True)
    if isinstance(max_iter, float) and float(max_iter).is_integer():
        max_iter = int(max_iter)  # 1e5 written as a float
    positive_int(max_iter, "max_iter")
    return kappa / (kappa + eps)


def _weights(w: np.ndarray | None, size: int, name: str) -> np.ndarray:
    if w is None:
        return np.full(size, 1.0 / size)
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"{name} must be positive and finite")
    return w


def _row_lse(cost: np.ndarray, g: np.ndarray, log_b: np.ndarray, eps: float) -> np.ndarray:
    """``LSE_j((g_j - D_ij)/eps + log b_j)`` for every row, one row chunk at a time."""
    n, m = cost.shape
    step = max(1, _CHUNK_ENTRIES // max(m, 1))
    out = np.empty(n)
    shift = g / eps + log_b
    for s in range(0, n, step):
        z = cost[s : s + step] / (-eps)
        z += shift
        out[s : s + step] = logsumexp(z, axis=1)
    return out


def _col_lse(cost: np.ndarray, f: np.ndarray, log_a: np.ndarray, eps: float) -> np.ndarray:
    """``LSE_i((f_i - D_ij)/eps + log a_i)`` for every column, accumulated over row chunks (online LSE)."""
    n, m = cost.shape
    step = max(1, _CHUNK_ENTRIES // max(m, 1))
    shift = f / eps + log_a
    run_max = np.full(m, -np.inf)
    run_sum = np.zeros(m)
    for s in range(0, n, step):
        z = cost[s : s + step] / (-eps)
        z += shift[s : s + step, None]
        cmax = z.max(axis=0)
        new_max = np.maximum(run_max, cmax)
        with np.errstate(invalid="ignore"):
            run_sum *= np.exp(run_max - new_max)
        run_sum = np.nan_to_num(run_sum, nan=0.0)
        z -= new_max
        np.exp(z, out=z)
        run_sum += z.sum(axis=0)
        run_max = new_max
    return run_max + np.log(run_sum)


def sinkhorn_log_unbalanced(
    cost: np.ndarray,
    kappa: float = 2.0,
    eps: float = 0.01,
    a: np.ndarray | None = None,
    b: np.ndarray | None = None,
    tol: float = 1e-9,
    max_iter: int = 100_000,
    init: tuple[np.ndarray, np.ndarray] | None = None,
) -> UOTResult:
    """Log-domain scaling iterations for entropic unbalanced OT (Def. 4.4, Eq. 5; brief step 5).

    ``f_i <- -rho*eps*LSE_j((g_j - D_ij)/eps + log b_j)``,
    ``g_j <- -rho*eps*LSE_i((f_i - D_ij)/eps + log a_i)``, ``rho = kappa/(kappa+eps)``, until
    ``max|Δf| / (1 + max|f|) < tol``.

    Parameters
    ----------
    cost : (n, m) ground cost ``D``.
    kappa, eps : marginal KL penalty and entropic regularisation (paper defaults 2.0 and 0.01).
    a, b : (n,), (m,) positive weights; uniform when None.
    tol, max_iter : stopping rule of the brief (tolerance 1e-9) and iteration cap.
    init : optional warm start ``(f, g)``.

    Returns
    -------
    UOTResult with ``f`` (n,), ``g`` (m,). A RuntimeWarning is issued when ``max_iter`` is reached.
    """
    rho = _check_solver_args(kappa, eps, tol, max_iter)
    max_iter = int(max_iter)
    cost = np.asarray(cost, dtype=np.float64)
    if cost.ndim != 2 or cost.shape[0] < 1 or cost.shape[1] < 1:
        raise ValueError(f"cost must be a non-empty 2-D array, got shape {cost.shape}")
    if not np.all(np.isfinite(cost)):
        raise ValueError("cost contains NaN or inf")
    n, m = cost.shape
    log_a = np.log(_weights(a, n, "a"))
    log_b = np.log(_weights(b, m, "b"))
    if init is None:
        f, g = np.zeros(n), np.zeros(m)
    else:
        if len(init) != 2:
            raise ValueError("init: expected a pair (f, g)")
        f, g = as_array(init[0], "init[0]", ndim=1).copy(), as_array(init[1], "init[1]", ndim=1).copy()
        if f.shape != (n,) or g.shape != (m,):
            raise ValueError(f"init: f and g must have shapes ({n},) and ({m},), got {f.shape} and {g.shape}")
    converged = False
    n_iter = 0
    for n_iter in range(1, int(max_iter) + 1):  # noqa: B007 (the count is returned)
        f_new = -rho * eps * _row_lse(cost, g, log_b, eps)
        g = -rho * eps * _col_lse(cost, f_new, log_a, eps)
        err = np.max(np.abs(f_new - f)) / (1.0 + np.max(np.abs(f_new)))
        f = f_new
        if err < tol:
            converged = True
            break
    if not converged:
        warnings.warn(
            f"unbalanced Sinkhorn stopped at max_iter={max_iter} before reaching tol={tol:g}",
            RuntimeWarning,
            stacklevel=2,
        )
    return UOTResult(f=f, g=g, n_iter=n_iter, converged=converged, n_entries=n * m)


def transport_plan(
    cost: np.ndarray,
    f: np.ndarray,
    g: np.ndarray,
    eps: float,
    a: np.ndarray | None = None,
    b: np.ndarray | None = None,
) -> np.ndarray:
    """Primal plan from the duals: ``T_ij = a_i b_j exp((f_i + g_j - D_ij)/eps)`` (Def. 4.4). Shape (n, m)."""
    cost = as_array(cost, "cost", ndim=2)
    n, m = cost.shape
    f = as_array(f, "f", ndim=1)
    g = as_array(g, "g", ndim=1)
    if f.shape != (n,) or g.shape != (m,):
        raise ValueError(f"f and g must have shapes ({n},) and ({m},) to match cost, got {f.shape} and {g.shape}")
    eps = finite_number(eps, "eps", lo=0.0, lo_open=True)
    a_ = _weights(a, n, "a")
    b_ = _weights(b, m, "b")
    return a_[:, None] * b_[None, :] * np.exp((f[:, None] + g[None, :] - cost) / eps)


def _gen_kl(p: np.ndarray, q: np.ndarray) -> float:
    """Generalised KL ``sum p log(p/q) - p + q`` (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    return float(np.sum(t - p + q))


def uot_objective(
    plan: np.ndarray, cost: np.ndarray, a: np.ndarray, b: np.ndarray, kappa: float, eps: float
) -> float:
    """Primal objective of Eq. (5): ``<D,T> + kappa KL(T1|a) + kappa KL(T^T 1|b) + eps KL(T|ab^T)``."""
    cost = as_array(cost, "cost", ndim=2)
    plan = as_array(plan, "plan", ndim=2, lo=0.0)
    if plan.shape != cost.shape:
        raise ValueError(f"plan {plan.shape} and cost {cost.shape} must have the same shape")
    a = _weights(a, cost.shape[0], "a")
    b = _weights(b, cost.shape[1], "b")
    kappa = finite_number(kappa, "kappa", lo=0.0, lo_open=True)
    eps = finite_number(eps, "eps", lo=0.0, lo_open=True)
    return (
        float(np.sum(cost * plan))
        + kappa * _gen_kl(plan.sum(axis=1), a)
        + kappa * _gen_kl(plan.sum(axis=0), b)
        + eps * _gen_kl(plan, a[:, None] * b[None, :])
    )


# ----------------------------------------------------------------------------------------------------------
# Truncated (sparse) solver with certification
# ----------------------------------------------------------------------------------------------------------


def _segment_lse(vals: np.ndarray, starts: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Log-sum-exp of consecutive groups ``vals[starts[k]:starts[k+1]]`` (every group non-empty).

    ``group`` (k,) gives the group of every entry. ``vals`` is overwritten.
    """
    mx = np.maximum.reduceat(vals, starts)
    vals -= mx[group]
    np.exp(vals, out=vals)
    return mx + np.log(np.add.reduceat(vals, starts))


def _translation(f: np.ndarray, g: np.ndarray, log_a: np.ndarray, log_b: np.ndarray, kappa: float) -> float:
    """Optimal dual translation ``lam`` for ``(f + lam, g - lam)`` (translation-invariant Sinkhorn).

    The entropic term of the dual of Eq. (5) is invariant under the translation, so the dual objective in
    ``lam`` is ``-kappa e^{-lam/kappa} A - kappa e^{lam/kappa} B`` with ``A = <a, e^{-f/kappa}>``,
    ``B = <b, e^{-g/kappa}>``, maximised at ``lam = kappa/2 log(A/B)`` (Sejourne, Vialard & Peyre 2022).
    At the fixed point of the iteration ``lam = 0``, so the solution is unchanged; only the slow
    translation mode (contraction factor ``rho^2`` per iteration) is removed.
    """
    return 0.5 * kappa * (logsumexp(log_a - f / kappa) - logsumexp(log_b - g / kappa))


@dataclass
class _Sparse:
    rows: np.ndarray  # (k,) sorted by row then column
    cols: np.ndarray
    cost: np.ndarray
    row_starts: np.ndarray  # (n,)
    col_order: np.ndarray  # permutation putting entries in column order
    col_starts: np.ndarray  # (m,)


def _build_sparse(rows: np.ndarray, cols: np.ndarray, cost: np.ndarray, n: int, m: int) -> _Sparse:
    order = np.lexsort((cols, rows))
    rows, cols, cost = rows[order], cols[order], cost[order]
    row_starts = np.searchsorted(rows, np.arange(n))
    col_order = np.lexsort((rows, cols))
    col_starts = np.searchsorted(cols[col_order], np.arange(m))
    return _Sparse(rows, cols, cost, row_starts, col_order, col_starts)


def _sparse_iterate(
    sp: _Sparse,
    f: np.ndarray,
    g: np.ndarray,
    log_a: np.ndarray,
    log_b: np.ndarray,
    rho: float,
    eps: float,
    kappa: float,
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """The iteration of :func:`sinkhorn_log_unbalanced` restricted to the candidate entries.

    Each sweep is followed by the optimal dual translation (:func:`_translation`), which leaves the fixed
    point unchanged and removes the slowly contracting constant mode.
    """
    neg_c = -sp.cost / eps
    neg_c_colsorted = neg_c[sp.col_order]
    rows_c = sp.rows[sp.col_order]
    cols_c = sp.cols[sp.col_order]
    it = 0
    for it in range(1, max_iter + 1):
        v = neg_c + (g / eps + log_b)[sp.cols]
        f_new = -rho * eps * _segment_lse(v, sp.row_starts, sp.rows)
        w = neg_c_colsorted + (f_new / eps + log_a)[rows_c]
        g = -rho * eps * _segment_lse(w, sp.col_starts, cols_c)
        lam = _translation(f_new, g, log_a, log_b, kappa)
        f_new += lam
        g -= lam
        err = np.max(np.abs(f_new - f)) / (1.0 + np.max(np.abs(f_new)))
        f = f_new
        if err < tol:
            return f, g, it, True
    return f, g, it, False


def _dual_parts(
    sp: _Sparse, f: np.ndarray, g: np.ndarray, log_a: np.ndarray, log_b: np.ndarray, kappa: float, eps: float
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Dual objective of Eq. (5) on the sparse support (up to a constant), with plan entries and marginals."""
    with np.errstate(over="ignore"):
        t = np.exp((f[sp.rows] + g[sp.cols] - sp.cost) / eps + log_a[sp.rows] + log_b[sp.cols])
        mf = np.exp(log_a - f / kappa)  # a_i e^{-f_i/kappa}: the row mass the KL term asks for
        mg = np.exp(log_b - g / kappa)
    val = float(-kappa * mf.sum() - kappa * mg.sum() - eps * t.sum())
    r = np.bincount(sp.rows, weights=t, minlength=f.size)
    c = np.bincount(sp.cols, weights=t, minlength=g.size)
    return val, t, mf, mg, r, c


def _newton_step(
    sp: _Sparse, off: np.ndarray, kl_f: np.ndarray, kl_g: np.ndarray, grad: np.ndarray, n: int, m: int
) -> np.ndarray:
    """Solve ``[[diag(kl_f + B1), B], [B^T, diag(kl_g + B^T 1)]] x = grad`` by a Schur complement.

    ``B`` is sparse with entries ``off`` (``T/eps``), ``kl_f = a e^{-f/kappa}/kappa``, ``kl_g`` likewise.
    The larger side (a diagonal block) is eliminated; the Schur complement of the smaller side is symmetric
    positive definite, assembled without cancellation, and factorised densely by Cholesky (small side
    <= 3000) or by sparse LU.
    """
    from scipy.linalg import cho_factor, cho_solve
    from scipy.sparse import coo_matrix, diags
    from scipy.sparse.linalg import spsolve

    if n >= m:  # eliminate f (rows)
        big, small, big_idx, small_idx, kl_big, kl_small = n, m, sp.rows, sp.cols, kl_f, kl_g
        r_big, r_small = grad[:n], grad[n:]
    else:  # eliminate g (columns)
        big, small, big_idx, small_idx, kl_big, kl_small = m, n, sp.cols, sp.rows, kl_g, kl_f
        r_big, r_small = grad[n:], grad[:n]
    sum_big = np.bincount(big_idx, weights=off, minlength=big)
    d_big = kl_big + sum_big
    b = coo_matrix((off, (big_idx, small_idx)), shape=(big, small)).tocsr()
    bw = diags(1.0 / d_big) @ b
    schur = (b.T @ bw).tocsr()
    schur.setdiag(0.0)
    rhs = r_small - bw.T @ r_big
    # Diagonal: kl_small_j + sum_i B_ij - sum_i B_ij^2/d_i = kl_small_j + sum_i B_ij (d_i - B_ij)/d_i, and
    # d_i - B_ij = kl_i + (other entries of row i) >= 0: no cancellation against the large B terms.
    rest = kl_big[big_idx] + np.maximum(sum_big[big_idx] - off, 0.0)
    s_diag = kl_small + np.bincount(small_idx, weights=off * rest / d_big[big_idx], minlength=small)
    if small <= 3000:
        s_mat = -schur.toarray()
        s_mat[np.diag_indices(small)] = s_diag
        scale = 1.0 / np.sqrt(s_diag)
        s_mat *= scale[:, None]
        s_mat *= scale[None, :]
        # Positive definite in exact arithmetic; far from the optimum round-off can break Cholesky, and
        # the caller then continues with the Sinkhorn iteration (LinAlgError propagates).
        x_small = scale * cho_solve(cho_factor(s_mat), scale * rhs)
    else:
        x_small = spsolve((diags(s_diag) - schur).tocsc(), rhs)
    x_big = (r_big - b @ x_small) / d_big
    return np.concatenate([x_big, x_small]) if n >= m else np.concatenate([x_small, x_big])


def _sparse_newton(
    sp: _Sparse,
    f: np.ndarray,
    g: np.ndarray,
    log_a: np.ndarray,
    log_b: np.ndarray,
    kappa: float,
    eps: float,
    tol: float,
    max_iter: int = 100,
) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Damped Newton ascent on the (strictly concave) dual of Eq. (5), restricted to the sparse support.

    Gradient ``a e^{-f/kappa} - T1`` and ``b e^{-g/kappa} - T^T 1``; the negative Hessian is
    ``[[diag(a e^{-f/kappa}/kappa + T1/eps), T/eps], [T^T/eps, diag(b e^{-g/kappa}/kappa + T^T 1/eps)]]``,
    solved through a Schur complement (:func:`_newton_step`), with Armijo backtracking. Its fixed point is the
    fixed point of the Sinkhorn iteration (zero gradient <=> the scaling equations hold).
    """
    n, m = f.size, g.size
    val, t, mf, mg, r, c = _dual_parts(sp, f, g, log_a, log_b, kappa, eps)
    for it in range(1, max_iter + 1):
        grad = np.concatenate([mf - r, mg - c])
        step = _newton_step(sp, t / eps, mf / kappa, mg / kappa, grad, n, m)
        slope = float(grad @ step)
        df, dg = step[:n], step[n:]
        size = max(np.max(np.abs(df)), np.max(np.abs(dg))) / (1.0 + np.max(np.abs(f)))
        tstep = 1.0
        while True:
            fn, gn = f + tstep * df, g + tstep * dg
            parts = _dual_parts(sp, fn, gn, log_a, log_b, kappa, eps)
            # Armijo test with a round-off allowance (the objective is O(kappa) and known to ~1e-15 of it).
            if np.isfinite(parts[0]) and parts[0] >= val + 1e-4 * tstep * slope - 1e-13 * abs(val):
                break
            tstep *= 0.5
            if tstep < 1e-12:
                return f, g, it, False
        f, g = fn, gn
        val, t, mf, mg, r, c = parts
        if tstep * size < tol:
            return f, g, it, True
    return f, g, max_iter, False


def solve_uot_truncated(
    cost_rows: Callable[[int, int], np.ndarray],
    n: int,
    m: int,
    kappa: float = 2.0,
    eps: float = 0.01,
    tol: float = 1e-9,
    max_iter: int = 100_000,
    n_neighbors: int = 8,
    theta: float = 40.0,
    max_rounds: int = 20,
    warmup_tol: float = 1e-5,
) -> UOTResult:
    """Eq. (5) with uniform weights, solved on a certified sparse support of the kernel.

    Candidates: nearest neighbours in ``D`` per row and per column. The log-domain Sinkhorn iteration runs
    on them to ``warmup_tol``, damped Newton on the dual finishes to ``tol``; a chunked pass over the full
    cost then collects every entry within ``theta`` of its row's or column's largest log-weight, and the
    solve is repeated on that set until it adds nothing (the support is then certified).

    Parameters
    ----------
    cost_rows : ``cost_rows(start, stop)`` returns the rows ``start:stop`` of the (n, m) cost ``D``.
    n, m : number of evaluated / reference segments.
    kappa, eps, tol, max_iter : as in :func:`sinkhorn_log_unbalanced`.
    n_neighbors : initial candidates per row and per column (nearest in ``D``).
    theta : an entry is kept when its log-weight is within ``theta`` of its row's or column's
        largest; ``exp(-40) ~ 4e-18``, below float64 resolution (``2**-53 ~ 1.1e-16``).
    max_rounds : certification rounds before giving up (a RuntimeWarning is issued).
    warmup_tol : the Sinkhorn iterations run until this relative step before Newton takes over.

    Returns
    -------
    UOTResult; ``n_entries`` is the size of the final certified support, ``n_iter`` counts Sinkhorn
    sweeps and ``n_newton`` Newton steps.
    """
    rho = _check_solver_args(kappa, eps, tol, max_iter)
    max_iter = int(max_iter)
    if not callable(cost_rows):
        raise ValueError("cost_rows: must be a function (start, stop) -> rows of the cost matrix")
    for name, v in (("n", n), ("m", m)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{name}: expected an integer, got {v!r}")
    if n < 1 or m < 1:
        raise ValueError(f"need at least one segment on each side, got n={n}, m={m}")
    n, m = int(n), int(m)
    n_neighbors = positive_int(n_neighbors, "n_neighbors")
    max_rounds = positive_int(max_rounds, "max_rounds")
    theta = finite_number(theta, "theta", lo=0.0, lo_open=True)
    warmup_tol = finite_number(warmup_tol, "warmup_tol", lo=0.0, lo_open=True)
    log_a = np.full(n, -math.log(n))
    log_b = np.full(m, -math.log(m))
    step = max(1, _CHUNK_ENTRIES // m)
    k_row = min(n_neighbors, m)
    k_col = min(n_neighbors, n)

    # Round 0: nearest neighbours in D along rows and columns (chunked over rows).
    cand_r: list[np.ndarray] = []
    cand_c: list[np.ndarray] = []
    cand_v: list[np.ndarray] = []
    col_best_val = np.full((k_col, m), np.inf)
    col_best_idx = np.zeros((k_col, m), dtype=np.int64)
    for s in range(0, n, step):
        chunk = np.asarray(cost_rows(s, min(n, s + step)), dtype=np.float64)
        if chunk.shape != (min(n, s + step) - s, m):
            raise ValueError(f"cost_rows({s}, {min(n, s + step)}) returned shape {chunk.shape}, expected "
                             f"({min(n, s + step) - s}, {m})")
        if not np.all(np.isfinite(chunk)):
            raise ValueError("cost contains NaN or inf")
        nr = chunk.shape[0]
        idx = (
            np.argpartition(chunk, k_row - 1, axis=1)[:, :k_row]
            if k_row < m
            else np.tile(np.arange(m), (nr, 1))
        )
        cand_r.append(np.repeat(np.arange(s, s + nr), idx.shape[1]))
        cand_c.append(idx.ravel())
        cand_v.append(np.take_along_axis(chunk, idx, axis=1).ravel())
        vals = np.vstack([col_best_val, chunk])
        inds = np.vstack([col_best_idx, np.broadcast_to(np.arange(s, s + nr)[:, None], chunk.shape)])
        keep = (
            np.argpartition(vals, k_col - 1, axis=0)[:k_col] if vals.shape[0] > k_col else np.argsort(vals, 0)
        )
        col_best_val = np.take_along_axis(vals, keep, axis=0)
        col_best_idx = np.take_along_axis(inds, keep, axis=0)
    finite = np.isfinite(col_best_val)
    cand_r.append(col_best_idx[finite])
    cand_c.append(np.broadcast_to(np.arange(m), col_best_idx.shape)[finite])
    cand_v.append(col_best_val[finite])
    rows0 = np.concatenate(cand_r)
    cols0 = np.concatenate(cand_c)
    keys, first = np.unique(rows0 * m + cols0, return_index=True)
    vals = np.concatenate(cand_v)[first]

    f = np.zeros(n)
    g = np.zeros(m)
    sp = _build_sparse(keys // m, keys % m, vals, n, m)
    # Sinkhorn warm-up (Eq. 5 scaling iterations) to a coarse tolerance, then Newton polish.
    f, g, total_it, _ = _sparse_iterate(
        sp, f, g, log_a, log_b, rho, eps, kappa, max(tol, warmup_tol), max_iter
    )
    total_newton = 0
    for rnd in range(1, max_rounds + 1):
        # Small dense factorisations: BLAS threads only add contention (measured 0.6 s vs 5 ms per step).
        if rnd > 1:  # the support changed: a few sweeps let the new entries settle before Newton
            f, g, it, _ = _sparse_iterate(sp, f, g, log_a, log_b, rho, eps, kappa, max(tol, warmup_tol), 50)
            total_it += it
        for attempt in range(2):
            with threadpool_limits(limits=1, user_api="blas"), np.errstate(all="ignore"):
                try:
                    f_n, g_n, k, converged = _sparse_newton(sp, f, g, log_a, log_b, kappa, eps, tol, 300)
                except (LinAlgError, ValueError):  # non-PD or non-finite Hessian far from the optimum
                    f_n, g_n, k, converged = f, g, 0, False
            total_newton += k
            if converged:
                f, g = f_n, g_n
                break
            # Newton needs a start near the optimum (the Hessian's conditioning degrades as exp(|error|/eps)):
            # first retry after Sinkhorn warm-up sweeps, then finish with the plain scaling iterations.
            wtol, cap = (max(tol, warmup_tol), min(max_iter, 2000)) if attempt == 0 else (tol, max_iter)
            f, g, it, converged = _sparse_iterate(sp, f, g, log_a, log_b, rho, eps, kappa, wtol, cap)
            total_it += it
            if attempt == 1:
                break
        # Certification: log-weights s_ij = (f_i + g_j - D_ij)/eps + log a_i + log b_j, compared with the
        # largest candidate log-weight of the row and of the column; every entry within theta of either is
        # relevant. The relevant set always holds each row's and column's largest candidate.
        s_sp = (f[sp.rows] + g[sp.cols] - sp.cost) / eps + log_a[sp.rows] + log_b[sp.cols]
        row_max = np.maximum.reduceat(s_sp, sp.row_starts)
        col_max = np.maximum.reduceat(s_sp[sp.col_order], sp.col_starts)
        hit_k: list[np.ndarray] = []
        hit_v: list[np.ndarray] = []
        for s in range(0, n, step):
            chunk = cost_rows(s, min(n, s + step))
            z = (f[s : s + step, None] + g[None, :] - chunk) / eps
            z += log_a[s : s + step, None] + log_b[None, :]
            hit = (z > row_max[s : s + step, None] - theta) | (z > col_max[None, :] - theta)
            r, c = np.nonzero(hit)
            hit_k.append((r + s) * m + c)
            hit_v.append(chunk[r, c])
        new_keys = np.concatenate(hit_k)
        if np.all(np.isin(new_keys, keys)):
            return UOTResult(
                f=f,
                g=g,
                n_iter=total_it,
                converged=converged,
                n_entries=int(keys.size),
                n_rounds=rnd,
                n_newton=total_newton,
            )
        # Deviation (exactness-preserving): the support is replaced by the relevant set, which both adds
        # the missing entries and drops the negligible ones; the next round re-solves from the warm start.
        keys, vals = new_keys, np.concatenate(hit_v)
        sp = _build_sparse(keys // m, keys % m, vals, n, m)
    warnings.warn(
        f"sparse support not certified after {max_rounds} rounds; potentials may be inexact",
        RuntimeWarning,
        stacklevel=2,
    )
    return UOTResult(
        f=f,
        g=g,
        n_iter=total_it,
        converged=False,
        n_entries=int(keys.size),
        n_rounds=max_rounds,
        n_newton=total_newton,
    )
