"""The text pipeline: prompt any :class:`~icml2026.core.textgen.TextModel`, parse its free-text answers.

A model is asked ``"Question: <q>\\n"`` and is expected to write ``"Answer: X\\nConfidence: NN%"``; a
meta-prompt asks for the predicted share of the other models' answers as a JSON object. The same code runs
on a local ``transformers`` model (:class:`HFLocalBackend`) and on a vLLM server
(:class:`OpenAICompatBackend`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml2026.core.textgen import TextModel
from icml2026.core.validate import finite_number, positive_int

from .aggregate import normalize_answer

__all__ = [
    "Poll",
    "format_meta_prompt",
    "format_prompt",
    "parse_answer",
    "parse_confidence",
    "parse_meta_prediction",
    "poll_models",
]

_ANSWER = re.compile(r"\banswer\s*[:\uff1a]\s*([^\n]*)", re.IGNORECASE)
# another field on the same line ends the answer: "Answer: Paris. Confidence: 90%"
_NEXT_FIELD = re.compile(r"[\s.,;|(\[]*\b(?:confidence|probability|certainty)\b.*$", re.IGNORECASE)
_TRAILING = " \t.,;:|-([{*_"  # separators and markdown left at the end of an answer
_CONF = re.compile(r"\bconfidence(?:\s+level)?\s*(?:[:\uff1a=]|is|of)?\s*([0-9]+(?:\.[0-9]+)?)\s*(%?)", re.IGNORECASE)


def format_prompt(question: str) -> str:
    """The answer prompt (the model continues with ``Answer: ...``)."""
    return f"Question: {question}\n"


def format_meta_prompt(question: str) -> str:
    """The social-prediction prompt (the model continues with a JSON object of shares)."""
    return f"Others on: {question}\n"


def parse_answer(text: str) -> str | None:
    """The first ``Answer: X``: the rest of that line up to another field (``Confidence``...), without
    trailing separators; None if absent or empty. ``"Answer: Paris. Confidence: 90%"`` gives ``"Paris"``;
    a full stop inside an answer (``"St. Louis"``, ``"3.14"``) is kept."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"text: expected a string, got {type(text).__name__}")
    m = _ANSWER.search(text)
    if not m:
        return None
    ans = _NEXT_FIELD.sub("", m.group(1)).strip().rstrip(_TRAILING).lstrip(" \t*_:").strip()
    return ans or None


def parse_confidence(text: str) -> float | None:
    """``Confidence: NN%`` -> NN / 100; ``Confidence: 0.NN`` (no %) -> 0.NN; None if absent or above 100%.

    Also reads ``confidence 80%``, ``Confidence level: 80%`` and ``confidence is 0.8``."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"text: expected a string, got {type(text).__name__}")
    m = _CONF.search(text)
    if not m:
        return None
    v = float(m.group(1))
    if m.group(2) == "%" or v > 1:
        v /= 100.0
    return v if 0.0 <= v <= 1.0 else None


def parse_meta_prediction(text: str, options: Sequence[str]) -> np.ndarray | None:
    """The first JSON object in ``text`` mapping answers to shares, as a distribution over ``options``.

    Keys are normalised like answers; values may be fractions or percentages (rescaled to sum 1). Keys that
    are not options are ignored. None when there is no valid object or it puts no mass on any option.
    """
    m = re.search(r"\{[^{}]*\}", text or "")
    if not m:
        return None
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    index = {normalize_answer(o): i for i, o in enumerate(options)}
    out = np.zeros(len(options))
    for key, val in obj.items():
        i = index.get(normalize_answer(key))
        if i is None or isinstance(val, bool) or not isinstance(val, (int, float)) or not np.isfinite(val) or val < 0:
            continue
        out[i] += float(val)
    return out / out.sum() if out.sum() > 0 else None


@dataclass
class Poll:
    """Answers of m models, s samples each, on q questions, parsed from text.

    answers : (m, s, q) object, parsed answer strings (None when unparseable).
    confidences : (m, s, q) float, parsed confidence (NaN when absent).
    meta : (m, q, V) predicted shares over ``options`` (uniform when unparseable) or None.
    parse_rate : fraction of completions with a parseable answer.
    """

    answers: np.ndarray
    confidences: np.ndarray
    meta: np.ndarray | None
    parse_rate: float
    meta_parse_rate: float


def poll_models(
    models: Sequence[TextModel],
    questions: Sequence[str],
    rng: np.random.Generator,
    *,
    n_samples: int = 5,
    temperature: float = 1.0,
    max_new_tokens: int = 40,
    options: Sequence[str] | None = None,
) -> Poll:
    """Sample ``n_samples`` answers per question from every model and parse them (brief Sec. 3 input).

    With ``options``, each model is also asked once per question for a meta-prediction (its cost is
    counted by ``aggregate``'s ``surprisingly_popular``).
    """
    if len(models) == 0 or len(questions) == 0:
        raise ValueError("poll_models needs at least one model and one question")
    if isinstance(questions, str) or not all(isinstance(q, str) for q in questions):
        raise ValueError("questions: must be a sequence of strings")
    n_samples = positive_int(n_samples, "n_samples")
    max_new_tokens = positive_int(max_new_tokens, "max_new_tokens")
    finite_number(temperature, "temperature", lo=0)
    if options is not None and (isinstance(options, str) or len(set(options)) != len(options)):
        raise ValueError("options: must be a sequence of distinct answers")
    n_m, n_q = len(models), len(questions)
    answers = np.empty((n_m, n_samples, n_q), dtype=object)
    conf = np.full((n_m, n_samples, n_q), np.nan)
    meta = np.full((n_m, n_q, len(options)), 1.0 / len(options)) if options else None
    parsed = meta_parsed = 0
    for m, model in enumerate(models):
        outs = model.sample(
            [format_prompt(q) for q in questions],
            n=n_samples,
            temperature=temperature,
            max_new_tokens=max_new_tokens,
            stop=("\n\n",),
            rng=rng,
        )
        for q, row in enumerate(outs):
            for s, text in enumerate(row):
                answers[m, s, q] = parse_answer(text)
                c = parse_confidence(text)
                conf[m, s, q] = np.nan if c is None else c
                parsed += answers[m, s, q] is not None
        if options:
            assert meta is not None
            metas = model.sample(
                [format_meta_prompt(q) for q in questions],
                n=1,
                temperature=0.0,
                max_new_tokens=max_new_tokens,
                stop=("\n",),
                rng=rng,
            )
            for q, row in enumerate(metas):
                vec = parse_meta_prediction(row[0], options)
                if vec is not None:
                    meta[m, q] = vec
                    meta_parsed += 1
    return Poll(answers, conf, meta, parsed / answers.size, meta_parsed / (n_m * n_q) if options else float("nan"))
