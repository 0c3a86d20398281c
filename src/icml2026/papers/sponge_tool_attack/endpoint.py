"""The victim behind an OpenAI-compatible endpoint (issue 66): what the ``endpoint`` experiment attacks.

Three ways to get a victim, all reached through the same HTTP client
(:class:`~icml2026.core.textgen.OpenAICompatBackend` with ``chat=True``) so that every token is counted
as the server counts it (its ``usage``):

- ``victim_url`` (+ ``victim_model``): a server the user runs (``vllm serve <model>``, or an API);
- ``model=PATH``: a local checkpoint (Hugging Face folder or GGUF file) read by
  :func:`icml2026.core.loaders.load_causal_lm`, put behind the project's loopback server
  (:func:`~icml2026.core.textgen.serve_text_model`), which renders the chat with the tokenizer's template
  and reports the tokens the model read and generated;
- neither: :class:`SimChatModel`, the simulated compliant planner answering chat requests behind the same
  loopback server (a stand-in; it answers in multi-line JSON, sometimes inside a code fence, so the
  runtime's parsing is exercised too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from icml2026.core.textgen import OpenAICompatBackend, Samples, Usage, serve_text_model
from icml2026.core.textgen.protocol import RequestUsage

from .agent import Planner, Step, ToolCallError, count_tokens, extract_json_object
from .controls_plant import PlantedPlanner

__all__ = ["SimChatModel", "open_endpoint", "steps_from_messages"]

_OBS_RE = re.compile(r"^Observation \d+: ", re.DOTALL)


def steps_from_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[Step], bool]:
    """(query, steps so far, forced final?) read back from the runtime's chat messages (JSON format)."""
    msgs = list(messages)
    user = [m for m in msgs if m.get("role") == "user"]
    if not user:
        raise ValueError("the conversation has no user message")
    query = str(user[0]["content"])
    rest = msgs[msgs.index(user[0]) + 1:]
    force = bool(rest) and rest[-1].get("role") == "user" and "budget is used up" in str(rest[-1]["content"])
    if force:
        rest = rest[:-1]
    steps: list[Step] = []
    for k in range(0, len(rest) - 1, 2):
        raw = str(rest[k].get("content", ""))
        obs = _OBS_RE.sub("", str(rest[k + 1].get("content", "")), count=1)
        tool = arg = None
        try:
            obj = json.loads(extract_json_object(raw))
            tool, arg = obj.get("tool"), obj.get("argument")
        except (ToolCallError, ValueError, AttributeError):
            pass
        err = obs[len("error: "):] if obs.startswith("error: ") else None
        steps.append(Step(k // 2, raw, tool, arg, None if err else obs, err, 0, 0))
    return query, steps, force


class SimChatModel:
    """A simulated planner answering chat requests (a stand-in victim; see the module docstring).

    ``extra_of`` maps a query to a number of planted extra tool calls (:class:`PlantedPlanner`), for the
    planted control. Usage counts the rendered conversation and the reply with :func:`count_tokens`.
    """

    def __init__(self, planner: Planner, extra_of: Mapping[str, int] | None = None, name: str = "sim-chat") -> None:
        self.planner, self.extra_of, self._name = planner, dict(extra_of or {}), name

    @property
    def name(self) -> str:
        return self._name

    def sample_chat(self, conversations: Sequence[Sequence[Mapping[str, str]]], *, n: int = 1,
                    temperature: float = 1.0, max_new_tokens: int = 32, stop: Sequence[str] = (),
                    rng: np.random.Generator) -> Samples:
        rows, used = [], []
        for i, conv in enumerate(conversations):
            query, steps, force = steps_from_messages(conv)
            extra = self.extra_of.get(query, 0)
            planner = PlantedPlanner(self.planner, extra) if extra else self.planner
            obj = json.loads(planner.propose(query, steps, force))
            # multi-line JSON, every other turn inside a fenced block with a sentence before it
            body = json.dumps(obj, indent=2)
            reply = f"I will do this next.\n```json\n{body}\n```" if len(steps) % 2 else body
            prompt = "\n".join(str(m["content"]) for m in conv)
            rows.append([reply] * n)
            used.append(RequestUsage((i,), Usage.of(count_tokens(prompt), n * count_tokens(reply))))
        return Samples(rows, used)

    def sample(self, prompts: Sequence[str], **kw: Any) -> Samples:
        raise ValueError("the simulated chat model answers chat requests only")

    def score(self, prompts: Sequence[str], continuations: Sequence[str]) -> np.ndarray:
        raise ValueError("the simulated chat model does not score")


@contextmanager
def open_endpoint(*, url: str = "", served_name: str = "", model_path: str = "", sim: SimChatModel | None = None,
                  timeout_s: float = 120.0, api_key_env: str = "", dtype: str = "float32",
                  device: str = "cpu") -> Iterator[OpenAICompatBackend]:
    """An OpenAI-compatible chat client for the victim: the user's server, or a loopback server that serves
    a local checkpoint (``model_path``) or ``sim``."""
    if url:
        yield OpenAICompatBackend(url, served_name or "default", chat=True, timeout_s=timeout_s,
                                  api_key_env=api_key_env or None, max_retries=1)
        return
    if model_path:
        from icml2026.core.loaders import load_causal_lm
        from icml2026.core.textgen import HFLocalBackend, HFTokenizerAdapter

        loaded = load_causal_lm(model_path, dtype=dtype, device=device)
        # chat=False: the loopback server renders chat requests with the tokenizer's template itself
        local: Any = HFLocalBackend(loaded.model, HFTokenizerAdapter(loaded.tokenizer), device=device,
                                    name=Path(model_path).name)
    elif sim is not None:
        local = sim
    else:
        raise ValueError("open_endpoint needs url, model_path or sim")
    with serve_text_model(local) as base:
        yield OpenAICompatBackend(base, local.name, chat=True, timeout_s=timeout_s, max_retries=0)
