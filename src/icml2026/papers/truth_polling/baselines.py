"""Unsupervised truth inference from crowdsourcing, with models as workers (brief Sec. 3).

Dawid & Skene (1979): each worker m has a confusion matrix pi_m[j, l] = P(answers l | truth j); EM
alternates the posterior over the truth per question and the confusion matrices. Implemented here in
numpy (the brief names ``crowd-kit``; it is not a dependency, so this is our own implementation).
"""

from __future__ import annotations

import numpy as np

from icml2026.core.validate import finite_number, positive_int

__all__ = ["dawid_skene"]


def dawid_skene(
    codes: np.ndarray, n_vocab: int, n_iter: int = 50, smoothing: float = 0.01, tol: float = 1e-8
) -> np.ndarray:
    """Posterior over the true answer per question (Dawid & Skene 1979, EM), shape (q, V).

    Parameters
    ----------
    codes : (m, s, q) answer codes in [0, V), -1 = no answer; each sample of worker m is one label.
    n_vocab : V.
    n_iter, tol : EM iterations and stopping tolerance on the posterior.
    smoothing : pseudo-count added to each confusion-matrix cell (keeps log-probabilities finite).

    The posterior is initialised with the (pooled) vote shares, which fixes the label permutation.
    """
    codes = np.asarray(codes)
    if codes.ndim != 3 or codes.size == 0:
        raise ValueError(f"codes: must have shape (m, s, q) with no empty axis, got {codes.shape}")
    n_vocab = positive_int(n_vocab, "n_vocab")
    if not np.issubdtype(codes.dtype, np.integer) or codes.min() < -1 or codes.max() >= n_vocab:
        raise ValueError(f"codes: must be integer answer codes in [-1, {n_vocab - 1}] (-1 = no answer)")
    n_iter = positive_int(n_iter, "n_iter")
    smoothing = finite_number(smoothing, "smoothing", lo=0, lo_open=True)
    tol = finite_number(tol, "tol", lo=0)
    n_m, _, n_q = codes.shape
    n = np.zeros((n_m, n_q, n_vocab))  # n[m, q, l]: how often worker m said l on question q
    for m in range(n_m):
        for s in range(codes.shape[1]):
            c = codes[m, s]
            ok = c >= 0
            np.add.at(n[m], (np.nonzero(ok)[0], c[ok]), 1.0)
    total = n.sum(axis=0)
    post = np.where(total.sum(1, keepdims=True) > 0, total / np.maximum(total.sum(1, keepdims=True), 1), 1.0 / n_vocab)
    for _ in range(n_iter):
        prior = post.mean(axis=0) + 1e-12
        pi = np.einsum("qj,mql->mjl", post, n) + smoothing
        pi /= pi.sum(axis=2, keepdims=True)
        log_post = np.log(prior)[None, :] + np.einsum("mql,mjl->qj", n, np.log(pi))
        log_post -= log_post.max(axis=1, keepdims=True)
        new = np.exp(log_post)
        new /= new.sum(axis=1, keepdims=True)
        done = np.max(np.abs(new - post)) < tol
        post = new
        if done:
            break
    return post
