"""Correctness-model prompt formats and the verbalized-probability parser (brief Sec. 2).

The formats follow the structure of the official ``make_training_text`` (sections ``### Model Prompt``,
``### Model Response``, ``### Instruction`` and a yes/no instruction ending in ``": "``, after which the
target token ``yes``/``no`` is appended when training). The wording is our paraphrase.

=================  ==========================================================================
answerful          the CM sees question and response, grades "Model Alpha" (the default)
answerless         the response is withheld: will Model Alpha answer correctly?
agnostic           responses "could come from several LLMs"; no model identity at all
with_model_name    answerful, with "Model Alpha" replaced by the target's real name
in-context         :func:`history_prompt`: k retrieved past examples of the same target, each with its
                   embedding distance and yes/no label, before the current pair
verbalized         :func:`verbalized_prompt`: ask for ``ANSWER_CORRECT_PROBABILITY: xx.xx%``
=================  ==========================================================================
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "PROMPT_VARIANTS",
    "HistoryExample",
    "cm_prompt",
    "history_prompt",
    "parse_verbalized",
    "verbalized_prompt",
]

PROMPT_VARIANTS = ("answerful", "answerless", "agnostic", "with_model_name")
_ALPHA_NOTE = " Model Alpha's true identity is hidden, but the name always refers to one and the same model."
_INSTR_ANSWERFUL = "Answer only 'yes' or 'no' in lowercase: does the Model Response correctly answer the Model Prompt: "


def _check_text(value: object, name: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name}: expected a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{name}: must be a non-empty string")
    return value


def cm_prompt(
    question: str,
    response: str,
    *,
    variant: Literal["answerful", "answerless", "agnostic", "with_model_name"],
    model_name: str | None = None,
) -> str:
    """The binary CM input for one (question, response) pair; the label token follows the final ``": "``.

    ``with_model_name`` needs ``model_name`` (it replaces "Model Alpha"); the other variants refuse one,
    so that identity information never enters a prompt by accident.
    """
    question = _check_text(question, "question")
    if variant not in PROMPT_VARIANTS:
        raise ValueError(f"variant: must be one of {', '.join(PROMPT_VARIANTS)}, got {variant!r}")
    if variant == "with_model_name":
        model_name = _check_text(model_name, "model_name")
    elif model_name is not None:
        raise ValueError(f"model_name: only the 'with_model_name' variant takes a model name (variant={variant!r})")
    if variant == "answerless":
        return (
            "You are predicting whether Model Alpha will answer a prompt correctly." + _ALPHA_NOTE
            + "\n### Model Prompt\n" + question
            + "\n### Instruction\nAnswer only 'yes' or 'no' in lowercase: will Model Alpha answer the Model Prompt "
            "correctly: "
        )
    response = _check_text(response, "response", allow_empty=True)
    if variant == "agnostic":
        return (
            "You are grading responses to prompts for correctness; the responses could come from several LLMs."
            + "\n### Prompt\n" + question
            + "\n### Response\n" + response
            + "\n### Instruction\nAnswer only 'yes' or 'no' in lowercase: does the Response correctly answer the "
            "Prompt: "
        )
    text = (
        "You are grading Model Alpha's responses to prompts for correctness." + _ALPHA_NOTE
        + "\n### Model Prompt\n" + question
        + "\n### Model Response\n" + response
        + "\n### Instruction\n" + _INSTR_ANSWERFUL
    )
    if variant == "with_model_name":
        assert model_name is not None
        text = text.replace(_ALPHA_NOTE, "").replace("Model Alpha", model_name)
    return text


@dataclass(frozen=True)
class HistoryExample:
    """One retrieved past example of the target: question, its response, label and embedding distance."""

    question: str
    response: str
    is_correct: bool
    distance: float


def _history_block(examples: Sequence[HistoryExample]) -> str:
    out = "\n## Model Alpha's past performance\n"
    for i, ex in enumerate(examples):
        if not isinstance(ex, HistoryExample):
            raise ValueError(f"examples[{i}]: expected a HistoryExample, got {type(ex).__name__}")
        if not math.isfinite(ex.distance):
            raise ValueError(f"examples[{i}].distance: must be finite, got {ex.distance}")
        out += (
            f"\nExample {i} -- distance {ex.distance:.4f} (lower = more similar)"
            f"\n### Model Prompt\n{ex.question}\n### Model Response\n{ex.response}"
            f"\n### Correct\n{'yes' if ex.is_correct else 'no'}\n"
        )
    return out


def history_prompt(question: str, response: str, examples: Sequence[HistoryExample]) -> str:
    """In-context history prompt: k retrieved past examples (with distances and labels), then the pair.

    The current pair comes last, as in the official retrieval format, and the prompt ends in ``": "``.
    """
    question = _check_text(question, "question")
    response = _check_text(response, "response", allow_empty=True)
    return (
        "You are grading Model Alpha's response to a prompt for correctness." + _ALPHA_NOTE
        + " Before it you see some of Model Alpha's earlier responses to other prompts and whether they were "
        "correct; use them where they help, not all of them are related."
        + _history_block(examples)
        + "\n## Current Model Prompt\n" + question
        + "\n## Current Model Alpha Response\n" + response
        + "\n## Instruction\nAnswer only 'yes' or 'no' in lowercase: does the Current Model Alpha Response "
        "correctly answer the Current Model Prompt: "
    )


def verbalized_prompt(question: str, response: str, examples: Sequence[HistoryExample] = ()) -> str:
    """Ask for a verbalized probability in the exact format ``ANSWER_CORRECT_PROBABILITY: xx.xx%``."""
    question = _check_text(question, "question")
    response = _check_text(response, "response", allow_empty=True)
    text = (
        "You are judging whether Model Alpha answered correctly." + _ALPHA_NOTE
        + " Briefly analyse the question and the response, then give a calibrated percent probability that the "
        "response is correct."
    )
    if examples:
        text += _history_block(examples)
    return (
        text + "\n## Current Model Prompt\n" + question
        + "\n## Current Model Alpha Response\n" + response
        + "\n## Give your answer in the EXACT format 'ANSWER_CORRECT_PROBABILITY: xx.xx%'."
    )


_VERBAL_RE = re.compile(r"ANSWER_CORRECT_PROBABILITY:\s*([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*%")


def parse_verbalized(text: object) -> float | None:
    """``"ANSWER_CORRECT_PROBABILITY: 73.50%"`` -> 0.735; None on anything malformed, never an exception.

    The last occurrence of the tag counts (a model may restate the format before answering). A percentage
    outside [0, 100], a missing ``%``, a negative or non-numeric value, or a non-string input gives None.
    """
    if not isinstance(text, str):
        return None
    matches = _VERBAL_RE.findall(text)
    if not matches:
        return None
    try:
        value = float(matches[-1])
    except ValueError:  # pragma: no cover - the pattern admits only decimal numbers
        return None
    if not math.isfinite(value) or not 0.0 <= value <= 100.0:
        return None
    return value / 100.0
