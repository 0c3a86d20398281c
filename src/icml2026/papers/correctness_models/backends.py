"""p(yes) of an LLM correctness model through ``icml2026.core.textgen`` backends (brief Sec. 2, criterion 8).

- :func:`prob_yes_local`: a local ``transformers`` model behind :class:`~icml2026.core.textgen.HFLocalBackend`;
  softmax of the last position's logits read at the "yes" token (and "no" for ``renorm=True``).
- :class:`YesNoHTTPBackend`: an :class:`~icml2026.core.textgen.OpenAICompatBackend` that asks the server
  for one token with ``logprobs=k`` and reads "yes"/"no" from ``top_logprobs`` (what vLLM returns); a token
  missing from the top k counts as probability 0 (it is below the k-th), both missing is an error.
- :func:`serve_yes_no_model`: a loopback server answering such requests from a local backend, so that the
  HTTP route is tested offline against the local one.

The official code reads the softmax at "yes" without renormalising (``renorm=False``); the default here
renormalises over {yes, no}.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from icml2026.core.textgen import BackendResponseError, HFLocalBackend, OpenAICompatBackend
from icml2026.core.textgen.stub import serve_json
from icml2026.core.validate import positive_int

from .cms import yes_no_token_ids

__all__ = ["YesNoHTTPBackend", "next_token_distribution", "prob_yes_local", "serve_yes_no_model"]


def _check_prompts(prompts: Sequence[str]) -> list[str]:
    if isinstance(prompts, str):
        raise ValueError("prompts: expected a sequence of strings, not one string")
    prompts = list(prompts)
    if not prompts:
        raise ValueError("prompts: is empty")
    if not all(isinstance(p, str) and p for p in prompts):
        raise ValueError("prompts: every prompt must be a non-empty string")
    return prompts


def next_token_distribution(backend: HFLocalBackend, prompts: Sequence[str]) -> np.ndarray:
    """(n, vocab) next-token probabilities after each prompt (BOS prepended when the tokenizer has one)."""
    import torch

    prompts = _check_prompts(prompts)
    tok = backend.tokenizer
    out = []
    with torch.no_grad():
        for start in range(0, len(prompts), backend.batch_size):
            seqs = [([tok.bos_id] if tok.bos_id is not None else []) + list(tok.encode(p))
                    for p in prompts[start : start + backend.batch_size]]
            width = max(len(s) for s in seqs)
            if backend.max_positions is not None and width > backend.max_positions:
                raise ValueError(f"prompts: {width} tokens exceed the model's {backend.max_positions} positions")
            ids = torch.tensor([[tok.pad_id] * (width - len(s)) + s for s in seqs], device=backend.device)
            mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], device=backend.device)
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            logits = backend.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False).logits
            out.append(torch.softmax(logits[:, -1, :].double(), -1).cpu().numpy())
    return np.concatenate(out)


def prob_yes_local(backend: HFLocalBackend, prompts: Sequence[str], *, renorm: bool = True,
                   yes: str = "yes", no: str = "no") -> np.ndarray:
    """p(yes) of a local HF model for each prompt; shape ``(len(prompts),)``."""
    y_id, n_id = yes_no_token_ids(backend.tokenizer, yes, no)
    probs = next_token_distribution(backend, prompts)
    py, pn = probs[:, y_id], probs[:, n_id]
    return py / (py + pn) if renorm else py


class YesNoHTTPBackend(OpenAICompatBackend):
    """:class:`OpenAICompatBackend` plus :meth:`prob_yes` from the completions API's ``top_logprobs``."""

    def prob_yes(self, prompts: Sequence[str], *, renorm: bool = True, top_logprobs: int = 20,
                 yes: str = "yes", no: str = "no") -> np.ndarray:
        """p(yes) per prompt from one generated token's ``top_logprobs`` (vLLM: ``logprobs=k``).

        Token strings are compared after stripping whitespace (" yes" and "yes" are the same answer to a
        prompt ending in ": "); when both variants occur their probabilities add.
        """
        prompts = _check_prompts(prompts)
        k = positive_int(top_logprobs, "top_logprobs", maximum=100)
        out = np.zeros(len(prompts))
        for start in range(0, len(prompts), self.prompts_per_request):
            chunk = prompts[start : start + self.prompts_per_request]
            payload = {"model": self.model, "prompt": chunk, "max_tokens": 1, "temperature": 0.0, "logprobs": k}
            # _post is OpenAICompatBackend's request helper (deadline, retries, key handling); core.textgen
            # has no public "one token with top_logprobs" call yet.
            choices = _ordered_choices(self._post("/completions", payload), len(chunk))
            for j, ch in enumerate(choices):
                top = _first_top_logprobs(ch)
                py = sum(math.exp(v) for t, v in top.items() if t.strip() == yes)
                pn = sum(math.exp(v) for t, v in top.items() if t.strip() == no)
                if renorm:
                    if py + pn == 0.0:
                        raise BackendResponseError(
                            f"neither {yes!r} nor {no!r} is among the top {k} tokens of prompt {start + j}"
                        )
                    out[start + j] = py / (py + pn)
                else:
                    out[start + j] = py
        return out


def _ordered_choices(data: dict[str, Any], expected: int) -> list[dict[str, Any]]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise BackendResponseError("response from /completions has no 'choices' list")
    if len(choices) != expected:
        raise BackendResponseError(f"/completions returned {len(choices)} choices, expected {expected}")
    if all("index" in c for c in choices):
        if sorted(c["index"] for c in choices) != list(range(expected)):
            raise BackendResponseError("/completions returned choice indices that are not 0..n-1")
        choices = sorted(choices, key=lambda c: c["index"])
    return choices


def _first_top_logprobs(choice: dict[str, Any]) -> dict[str, float]:
    lp = choice.get("logprobs")
    top = lp.get("top_logprobs") if isinstance(lp, dict) else None
    if not isinstance(top, list) or not top or not isinstance(top[0], dict):
        raise BackendResponseError("choice has no logprobs.top_logprobs list; does the server return logprobs?")
    first = top[0]
    for t, v in first.items():
        numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
        if not isinstance(t, str) or not numeric or not math.isfinite(v) or v > 1e-9:
            raise BackendResponseError(f"top_logprobs entry {t!r}: {v!r} is not a finite log-probability")
    return {t: float(v) for t, v in first.items()}


@contextmanager
def serve_yes_no_model(backend: HFLocalBackend, *, port: int = 0) -> Iterator[str]:
    """Loopback ``/v1/completions`` answering ``max_tokens=1, logprobs=k`` from ``backend``; yields the URL.

    The reply has vLLM's shape: ``choices[i].text`` (the greedy token) and ``choices[i].logprobs`` with
    ``tokens``, ``token_logprobs`` and ``top_logprobs`` (a list with one dict of the k best tokens).
    """
    def answer(req: dict[str, Any]) -> dict[str, Any]:
        prompts = req["prompt"] if isinstance(req["prompt"], list) else [req["prompt"]]
        k = int(req.get("logprobs") or 1)
        probs = next_token_distribution(backend, prompts)
        choices = []
        for i, p in enumerate(probs):
            best = np.argsort(-p, kind="stable")[:k]
            top: dict[str, float] = {}
            for t in best:
                text = backend.tokenizer.decode([int(t)])
                top[text] = top.get(text, 0.0) + float(p[t])
            tok0 = backend.tokenizer.decode([int(best[0])])
            choices.append({
                "index": i, "text": tok0, "finish_reason": "length",
                "logprobs": {"tokens": [tok0], "token_logprobs": [math.log(p[best[0]])],
                             "top_logprobs": [{t: math.log(v) for t, v in top.items()}], "text_offset": [0]},
            })
        return {"object": "text_completion", "model": req.get("model"), "choices": choices}

    with serve_json(answer, port=port) as url:
        yield url
