"""Polling-style aggregation rules over answers[m, s, q] (models x samples x questions), Sec. 3 of the brief.

Every rule counts (weighted) votes per question and returns the plurality; what differs is which votes are
counted and how they are weighted. Ties are broken uniformly at random with the caller's generator, or, with
no generator, by the smallest answer (in sorted order): never by model or sample order.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml2026.core.validate import as_array, positive_int

__all__ = ["RULES", "Aggregation", "Rule", "aggregate", "encode_answers", "normalize_answer", "vote_counts"]

RULES = (
    "single",
    "majority_self",
    "majority_cross",
    "confidence_weighted",
    "log_odds_weighted",
    "surprisingly_popular",
    "verifier_filter",
    "dawid_skene",
)
_SELF_RULES = ("single", "majority_self", "verifier_filter")
LOG_ODDS_CLIP = 1e-3  # confidences are clipped to [1e-3, 1 - 1e-3] so that log(c / (1 - c)) stays finite


@dataclass(frozen=True)
class Rule:
    """An aggregation rule and its compute knobs.

    name : one of :data:`RULES`.
    k : samples used per model (None: all). ``single`` always uses sample 0 of one model.
    models : model indices whose samples are pooled (None: model 0 for the one-model rules ``single``,
        ``majority_self`` and ``verifier_filter``; all models otherwise).
    """

    name: str
    k: int | None = None
    models: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.name not in RULES:
            close = difflib.get_close_matches(str(self.name), RULES, n=2, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"unknown aggregation rule {self.name!r}{hint} (rules: {', '.join(RULES)})")
        if self.k is not None and (isinstance(self.k, bool) or int(self.k) != self.k or self.k < 1):
            raise ValueError(f"k must be a positive integer, got {self.k!r}")
        if self.models is not None:
            object.__setattr__(self, "models", tuple(int(m) for m in self.models))
            if len(self.models) == 0 or len(set(self.models)) != len(self.models):
                raise ValueError(f"models must be a non-empty tuple of distinct indices, got {self.models}")
            if self.name == "single" and len(self.models) != 1:
                raise ValueError("rule 'single' takes exactly one model")


@dataclass
class Aggregation:
    """What :func:`aggregate` returns.

    answers : (q,) object array, the chosen (normalised) answer per question, None when no valid vote.
    codes : (q,) int array, index of the answer in ``vocab`` (-1 for None).
    vocab : the answers seen, sorted (strings, or ints for integer input).
    cost : generated answers (plus meta-predictions) per question, in units of one sample.
    tie_rate : fraction of questions whose winner was drawn among tied answers.
    """

    answers: np.ndarray
    codes: np.ndarray
    vocab: list[Any]
    cost: float
    tie_rate: float


_ARTICLES = re.compile(r"\b(a|an|the)\b")
# punctuation becomes a space, except a decimal point or minus sign that belongs to a number
_PUNCT = re.compile(r"(?<!\d)\.|\.(?!\d)|-(?![\d.])|[^\w\s.\-]|_")


def normalize_answer(text: Any, aliases: Mapping[str, str] | None = None) -> str | None:
    """Canonical form of a free-text answer: NFKC, lower case, punctuation and articles removed,
    whitespace collapsed (an answer consisting only of an article, such as option "A", is kept), then
    mapped through ``aliases`` (keys are normalised the same way).

    Returns None for None or an answer that is empty after normalisation (it casts no vote).
    """
    if text is None:
        return None
    if isinstance(text, float) and np.isnan(text):
        return None
    s = unicodedata.normalize("NFKC", str(text)).lower()
    s = " ".join(_PUNCT.sub(" ", s).split())
    s = " ".join(_ARTICLES.sub(" ", s).split()) or s  # an answer that is only an article ("A") is kept
    if not s:
        return None
    if aliases:
        table = {normalize_answer(k): normalize_answer(v) for k, v in aliases.items()}
        s = table.get(s, s) or s
    return s


def _as_3d(answers: Any) -> np.ndarray:
    if isinstance(answers, np.ndarray) and answers.dtype != object and np.issubdtype(answers.dtype, np.integer):
        arr = answers
    else:
        try:
            arr = np.array(answers, dtype=object)
        except ValueError as exc:
            raise ValueError(
                "answers must be rectangular: answers[m][s][q] for every model, sample and question"
            ) from exc
    if arr.size == 0:
        raise ValueError(f"answers is empty (shape {arr.shape}); need at least one model, sample and question")
    if arr.ndim != 3:
        raise ValueError(f"answers must have shape (models, samples, questions), got {arr.ndim} dimensions {arr.shape}")
    return arr


def encode_answers(
    answers: Any, aliases: Mapping[str, str] | None = None, extra: Sequence[Any] = ()
) -> tuple[np.ndarray, list[Any]]:
    """Integer codes (m, s, q) into a sorted vocabulary; -1 marks an invalid (empty) answer.

    Integer arrays are taken as labels already (negative = invalid); anything else is normalised with
    :func:`normalize_answer`. ``extra`` answers (e.g. the options of meta-predictions) join the vocabulary.
    """
    arr = _as_3d(answers)
    if arr.dtype != object:
        labels = sorted({int(v) for v in np.unique(arr) if v >= 0} | {int(v) for v in extra})
        lookup = np.full(max(labels, default=0) + 2, -1, dtype=np.int64)
        lookup[labels] = np.arange(len(labels))
        codes = np.where(arr >= 0, lookup[np.clip(arr, 0, len(lookup) - 1)], -1)
        return codes.astype(np.int64), labels
    flat = [normalize_answer(a, aliases) for a in arr.ravel()]
    extra_norm = [normalize_answer(e, aliases) for e in extra]
    vocab = sorted({a for a in flat if a is not None} | {e for e in extra_norm if e is not None})
    index = {a: i for i, a in enumerate(vocab)}
    codes = np.array([index[a] if a is not None else -1 for a in flat], dtype=np.int64).reshape(arr.shape)
    return codes, vocab


def vote_counts(codes: np.ndarray, n_vocab: int, weights: np.ndarray | None = None) -> np.ndarray:
    """(q, V) sum of weights of the votes for each answer; ``codes`` has shape (..., q), -1 = no vote."""
    codes = np.asarray(codes)
    if codes.ndim < 1 or codes.size == 0:
        raise ValueError(f"codes: needs shape (..., q) with at least one entry, got shape {codes.shape}")
    if not np.issubdtype(codes.dtype, np.integer):
        raise ValueError(f"codes: must be integer answer codes, got dtype {codes.dtype}")
    n_vocab = positive_int(n_vocab, "n_vocab", minimum=0)
    if codes.min() < -1 or codes.max() >= n_vocab:
        raise ValueError(f"codes: must lie in [-1, {n_vocab - 1}] (-1 = no vote), found {codes.min()}..{codes.max()}")
    q = codes.shape[-1]
    c = codes.reshape(-1, q)
    if weights is not None:
        weights = as_array(weights, "weights")
        if weights.shape != codes.shape:
            raise ValueError(f"weights: shape {weights.shape} differs from codes' shape {codes.shape}")
    w = np.ones(c.shape) if weights is None else weights.reshape(-1, q).astype(float)
    valid = c >= 0
    flat = (np.arange(q)[None, :] * n_vocab + np.where(valid, c, 0))[valid]
    return np.bincount(flat, weights=w[valid], minlength=q * n_vocab).reshape(q, n_vocab)


def _plurality(scores: np.ndarray, has_vote: np.ndarray, rng: np.random.Generator | None) -> tuple[np.ndarray, float]:
    """Argmax per row with order-independent tie breaking; rows without a vote give -1."""
    scores = np.where(has_vote[:, None], scores, 0.0)
    top = scores.max(axis=1, keepdims=True)
    scale = np.maximum(1.0, np.abs(top))
    tied = scores >= top - 1e-12 * scale  # float weights: equal up to rounding counts as a tie
    n_tied = tied.sum(axis=1)
    if rng is None:
        winner = tied.argmax(axis=1)  # the first tied answer in the sorted vocabulary
    else:
        keys = np.where(tied, rng.random(scores.shape), -1.0)
        winner = keys.argmax(axis=1)
    winner = np.where(has_vote, winner, -1)
    tie_rate = float(np.mean((n_tied > 1) & has_vote))
    return winner, tie_rate


def aggregate(
    answers: Any,
    rule: str | Rule,
    confidences: Any = None,
    meta_predictions: Any = None,
    *,
    options: Sequence[Any] | None = None,
    verifier: Callable[[int, Any], bool] | None = None,
    rng: np.random.Generator | None = None,
    aliases: Mapping[str, str] | None = None,
) -> Aggregation:
    """Aggregate sampled answers with one polling rule (brief Sec. 3).

    Parameters
    ----------
    answers : (m, s, q) strings (None or "" = no answer) or integer labels (negative = no answer).
    rule : a rule name from :data:`RULES` (all defaults) or a :class:`Rule`.
    confidences : (m, s, q) self-reported confidence in [0, 1]; needed by the weighted rules.
    meta_predictions : (m, s, q, V) or (m, q, V) predicted share of the other respondents' answers over
        ``options`` (rows are normalised to sum 1); needed by ``surprisingly_popular``.
    options : the V answers the meta-predictions refer to.
    verifier : ``verifier(question_index, answer) -> bool``; needed by ``verifier_filter``.
    rng : breaks ties uniformly at random; without it the smallest tied answer wins.
    aliases : answer -> canonical answer, applied after normalisation.

    Rules (votes of models ``M`` = ``rule.models``, first ``k`` samples each):
    ``single`` sample 0 of one model (cost 1); ``majority_self`` plurality of one model's k samples
    (self-consistency, cost k); ``majority_cross`` plurality of the pooled samples (cost |M| k);
    ``confidence_weighted`` votes weighted by c; ``log_odds_weighted`` by log(c / (1 - c)) (can be
    negative); ``surprisingly_popular`` (Prelec et al. 2017) the answer maximising actual vote share minus
    the mean predicted share over respondents (cost adds one call per meta-prediction);
    ``verifier_filter`` plurality among candidates that pass the verifier, else plain plurality;
    ``dawid_skene`` EM truth inference with models as workers (see ``baselines.dawid_skene``).
    """
    rule = Rule(rule) if isinstance(rule, str) else rule
    if not isinstance(rule, Rule):
        raise ValueError(f"rule: must be a rule name or a Rule, got {type(rule).__name__}")
    extra = list(options) if options is not None else []
    codes, vocab = encode_answers(answers, aliases, extra=extra)
    n_models, n_samples, n_q = codes.shape
    models = rule.models if rule.models is not None else ((0,) if rule.name in _SELF_RULES else tuple(range(n_models)))
    if rule.name in ("majority_self",) and len(models) != 1:
        raise ValueError("majority_self pools one model's samples; use majority_cross for several models")
    if max(models) >= n_models or min(models) < 0:
        raise ValueError(f"model indices {models} out of range for {n_models} models")
    k = 1 if rule.name == "single" else (rule.k if rule.k is not None else n_samples)
    if k > n_samples:
        raise ValueError(f"rule asks for k={k} samples per model but answers hold only {n_samples}")
    sel = codes[list(models), :k, :]
    n_votes = len(models) * k
    weights: np.ndarray | None = None
    cost = float(n_votes)

    if rule.name in ("confidence_weighted", "log_odds_weighted"):
        if confidences is None:
            raise ValueError(f"rule {rule.name!r} needs confidences of shape {codes.shape}")
        conf = np.asarray(confidences, dtype=float)
        if conf.shape != codes.shape:
            raise ValueError(f"confidences have shape {conf.shape} but answers have shape {codes.shape}")
        c = conf[list(models), :k, :]
        finite = ~np.isnan(c)  # NaN marks an unparsed confidence
        if np.any(np.isinf(c)) or np.any((c[finite] < 0) | (c[finite] > 1)):
            raise ValueError("confidences must lie in [0, 1] (NaN marks an unparsed confidence)")
        c = np.where(finite, c, 0.0)  # an unparsed confidence gives the vote no weight
        if rule.name == "confidence_weighted":
            weights = c
        else:
            cc = np.clip(c, LOG_ODDS_CLIP, 1 - LOG_ODDS_CLIP)
            weights = np.where(finite, np.log(cc / (1 - cc)), 0.0)

    if rule.name == "surprisingly_popular" and (meta_predictions is None or options is None):
        raise ValueError("rule 'surprisingly_popular' needs meta_predictions and the options they refer to")
    if rule.name == "verifier_filter" and verifier is None:
        raise ValueError("rule 'verifier_filter' needs a verifier(question_index, answer) -> bool")
    if not vocab:  # no answer parsed anywhere (and no options): every question gets None
        return _result(np.full(n_q, -1, dtype=np.int64), vocab, cost, 0.0)

    if rule.name == "dawid_skene":
        from .baselines import dawid_skene

        post = dawid_skene(sel, len(vocab))
        has_vote = np.asarray((sel >= 0).any(axis=(0, 1)))
        winner, tie_rate = _plurality(post, has_vote, rng)
        return _result(winner, vocab, cost, tie_rate)

    present = vote_counts(sel, len(vocab)) > 0  # (q, V): answers that received at least one vote
    counts = vote_counts(sel, len(vocab), weights)
    has_vote = np.asarray(present.any(axis=1))

    if rule.name == "surprisingly_popular":
        scores, meta_cost = _surprisingly_popular_scores(
            sel,
            vote_counts(sel, len(vocab)),
            meta_predictions,
            options,
            vocab,
            codes.shape,
            models,
            k,
            aliases,
        )
        winner, tie_rate = _plurality(np.where(present, scores, -np.inf), has_vote, rng)
        return _result(winner, vocab, float(n_votes) + meta_cost, tie_rate)

    if rule.name == "verifier_filter":
        if verifier is None:
            raise ValueError("rule 'verifier_filter' needs a verifier(question_index, answer) -> bool")
        passes = np.zeros_like(present)
        for q, v in zip(*np.nonzero(present), strict=True):
            passes[q, v] = bool(verifier(int(q), vocab[v]))
        # keep only verified candidates where there is one; otherwise plain plurality
        present = np.where(passes.any(axis=1, keepdims=True), passes, present)

    winner, tie_rate = _plurality(np.where(present, counts, -np.inf), has_vote, rng)
    return _result(winner, vocab, cost, tie_rate)


def _result(winner: np.ndarray, vocab: list[Any], cost: float, tie_rate: float) -> Aggregation:
    ans = np.empty(len(winner), dtype=object)
    for i, w in enumerate(winner):
        ans[i] = vocab[w] if w >= 0 else None
    return Aggregation(answers=ans, codes=winner.astype(np.int64), vocab=vocab, cost=cost, tie_rate=tie_rate)


def _surprisingly_popular_scores(
    sel: np.ndarray,
    counts: np.ndarray,
    meta: Any,
    options: Sequence[Any] | None,
    vocab: list[Any],
    shape: tuple[int, ...],
    models: tuple[int, ...],
    k: int,
    aliases: Mapping[str, str] | None,
) -> tuple[np.ndarray, float]:
    """Actual vote share minus mean predicted share, (q, V); and the meta-prediction cost per question."""
    if meta is None or options is None:
        raise ValueError("rule 'surprisingly_popular' needs meta_predictions and the options they refer to")
    meta = np.asarray(meta, dtype=float)
    m_all, s_all, n_q = shape
    if meta.ndim == 4 and meta.shape[:3] == (m_all, s_all, n_q):
        per_sample = True
    elif meta.ndim == 3 and meta.shape[:2] == (m_all, n_q):
        per_sample = False
    else:
        raise ValueError(
            f"meta_predictions must have shape (m, s, q, V) or (m, q, V) with (m, s, q) = {shape}, got {meta.shape}"
        )
    if meta.shape[-1] != len(options):
        raise ValueError(f"meta_predictions have {meta.shape[-1]} columns but there are {len(options)} options")
    if not np.all(np.isfinite(meta)) or np.any(meta < 0):
        raise ValueError("meta_predictions must be finite and non-negative")
    if isinstance(vocab[0], int) if vocab else False:
        opt_codes = [vocab.index(int(o)) for o in options]
    else:
        opt_codes = [vocab.index(normalize_answer(o, aliases)) for o in options]
    if len(set(opt_codes)) != len(opt_codes):
        raise ValueError("options must be distinct after normalisation")
    sub = meta[list(models), :k] if per_sample else meta[list(models)]
    sums = sub.sum(axis=-1, keepdims=True)
    if np.any(sums <= 0):
        raise ValueError("every meta-prediction must put positive mass on some option")
    sub = sub / sums
    # respondents who gave no answer give no meta-prediction either
    if per_sample:
        answered = (sel >= 0)[..., None]
        pred = (sub * answered).sum(axis=(0, 1)) / np.maximum(answered.sum(axis=(0, 1)), 1)
        meta_cost = float(len(models) * k)
    else:
        pred = sub.mean(axis=0)
        meta_cost = float(len(models))
    predicted = np.zeros_like(counts)
    predicted[:, opt_codes] = pred
    total = counts.sum(axis=1, keepdims=True)
    actual = counts / np.maximum(total, 1)
    return actual - predicted, meta_cost
