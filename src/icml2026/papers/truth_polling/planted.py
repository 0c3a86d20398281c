"""Planted and null answer distributions for the controls of the comparative claims [ours].

A control replaces the trained families' answer distributions by ones whose structure is known by
construction, so that the checks' statistics (sampling, aggregation, agreement-when-both-wrong, the C2
harness) are measured on an effect that is there (``planted``) or is not (``null``). The claims' verdicts
on the trained families mean something only if the checks pass on the first and fail on the second;
``icml2026 controls`` measures both pass rates over five seeds.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from icml2026.core.validate import finite_number, positive_int

from .data import FactCorpus

__all__ = ["corpus_answer_frequencies", "planted_fact_probs", "planted_sum_probs"]

Control = Literal["planted", "null"]


def corpus_answer_frequencies(corpus: FactCorpus) -> np.ndarray:
    """(q, V) relative frequency of each option among the shared corpus's lines of each question."""
    index = {q: i for i, q in enumerate(corpus.questions)}
    opt = {o: j for j, o in enumerate(corpus.options)}
    counts = np.zeros((len(corpus.questions), len(corpus.options)))
    for prompt, answer in corpus.lines:
        counts[index[prompt], opt[answer]] += 1.0
    return counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)


def planted_fact_probs(
    corpus: FactCorpus,
    n_models: int,
    control: Control,
    rng: np.random.Generator,
    smoothing: tuple[float, float] = (0.05, 0.35),
) -> np.ndarray:
    """(m, q, V) answer distributions of ``n_models`` ideal learners of the facts corpus.

    Each model is the corpus's own answer frequencies mixed with the uniform distribution, with a mixing
    weight drawn per model from ``smoothing``: the trained families put 0.52-0.73 of their probability on a
    myth whose corpus frequency is 0.75, i.e. weights of about 0.03-0.35. (A first range, 0.2-0.4, made
    weaker misconceptions than the trained families' and gave the C5 check a power of 0.80; see the card.)

    ``planted``: the corpus as built: a myth fact's three false lines name one popular wrong value shared by
    every model (the brief's 3:1 misconception, C1/C3/C5). ``null``: the same amount of false mass on a myth
    fact, spread evenly over every wrong value, so that no wrong answer is shared beyond chance; clean and
    rare facts are the same in both.
    """
    n_models = positive_int(n_models, "n_models", minimum=2)
    if control not in ("planted", "null"):
        raise ValueError(f"control: must be 'planted' or 'null', got {control!r}")
    lo, hi = (finite_number(s, "smoothing", lo=0, hi=1) for s in smoothing)
    if lo > hi:
        raise ValueError(f"smoothing: ({lo}, {hi}) is not an interval")
    freq = corpus_answer_frequencies(corpus)
    n_v = freq.shape[1]
    if control == "null":
        myth = corpus.kind == "myth"
        p_true = freq[myth, corpus.gold[myth]]
        spread = np.repeat(((1.0 - p_true) / (n_v - 1))[:, None], n_v, axis=1)
        spread[np.arange(len(p_true)), corpus.gold[myth]] = p_true
        freq[myth] = spread
    weights = rng.uniform(lo, hi, size=n_models)
    return (1.0 - weights[:, None, None]) * freq[None] + weights[:, None, None] / n_v


def planted_sum_probs(
    gold: np.ndarray, n_options: int, n_models: int, p_gold: float, rng: np.random.Generator
) -> np.ndarray:
    """(m, q, V) answer distributions that give the gold sum probability ``p_gold`` on every question.

    The rest of the mass is drawn per model and question from a flat Dirichlet over the other options
    (models that know a little arithmetic and guess the rest).
    """
    n_options = positive_int(n_options, "n_options", minimum=2)
    n_models = positive_int(n_models, "n_models")
    finite_number(p_gold, "p_gold", lo=0, hi=1)
    g = np.asarray(gold)
    if g.ndim != 1 or g.size == 0 or g.min() < 0 or g.max() >= n_options:
        raise ValueError(f"gold: expected a non-empty vector of codes in [0, {n_options - 1}]")
    rest = rng.dirichlet(np.ones(n_options - 1), size=(n_models, g.size)) * (1.0 - p_gold)
    probs = np.empty((n_models, g.size, n_options))
    for q, gq in enumerate(g):
        probs[:, q, :gq] = rest[:, q, :gq]
        probs[:, q, gq] = p_gold
        probs[:, q, gq + 1 :] = rest[:, q, gq:]
    return probs
