"""The agent runtime: a ReAct-style loop with a strict JSON tool-call format and a step budget ``T_max``.

Each turn the planner (an LLM behind :class:`~icml2026.core.textgen.TextModel`, or any object with
``propose``) emits exactly one JSON object:

- ``{"tool": "<name>", "argument": "<text>"}`` calls a tool (the argument is a string, passed to
  ``Tool.run``, never evaluated), or
- ``{"final_answer": "<text>"}`` ends the episode.

Anything else (not JSON, extra keys, duplicate keys, non-string values, unknown tool, oversized text) ends
*that step* with an error recorded in the trajectory; the loop goes on until the budget. When the budget
``max_steps`` (the paper's ``T_max``) is used up without an answer the trajectory is marked ``cap_hit``
and the planner is asked once for a final answer (OctoTools-style forced final output). Steps are
counted from this log (brief, pitfall 1), tokens from the prompts and completions the runtime built.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .tools import MAX_ARGUMENT_CHARS, Tool

__all__ = [
    "FinalAnswer",
    "Planner",
    "ScriptedBackend",
    "Step",
    "ToolAgent",
    "ToolCall",
    "ToolCallError",
    "Trajectory",
    "count_tokens",
    "parse_tool_call",
]

MAX_RAW_CHARS = 8000
MAX_ANSWER_CHARS = 1000
MAX_QUERY_CHARS = 10000


class ToolCallError(ValueError):
    """Model output that is not one well-formed tool call or final answer."""


@dataclass(frozen=True)
class ToolCall:
    tool: str
    argument: str


@dataclass(frozen=True)
class FinalAnswer:
    text: str


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ToolCallError("duplicate keys in the JSON object")
    return dict(pairs)


def parse_tool_call(text: str, tool_names: Sequence[str]) -> ToolCall | FinalAnswer:
    """Parse one turn strictly (see the module docstring); raise :class:`ToolCallError` saying why."""
    if not isinstance(text, str):
        raise ToolCallError(f"model output must be text, got {type(text).__name__}")
    if len(text) > MAX_RAW_CHARS:
        raise ToolCallError(f"model output has {len(text)} characters (at most {MAX_RAW_CHARS})")
    s = text.strip()
    if not (s.startswith("{") and s.endswith("}")):
        raise ToolCallError("model output is not a single JSON object")
    try:
        obj = json.loads(s, object_pairs_hook=_no_duplicates)
    except ToolCallError:
        raise
    except (ValueError, RecursionError) as exc:
        raise ToolCallError(f"invalid JSON: {str(exc)[:80]}") from None
    if not isinstance(obj, dict):
        raise ToolCallError("model output is not a JSON object")
    if set(obj) == {"final_answer"}:
        ans = obj["final_answer"]
        if not isinstance(ans, str):
            raise ToolCallError("final_answer must be a string")
        if len(ans) > MAX_ANSWER_CHARS:
            raise ToolCallError(f"final_answer longer than {MAX_ANSWER_CHARS} characters")
        return FinalAnswer(ans.strip())
    if set(obj) == {"tool", "argument"}:
        name, arg = obj["tool"], obj["argument"]
        if not isinstance(name, str) or not isinstance(arg, str):
            raise ToolCallError("tool and argument must be strings")
        if name not in tool_names:
            raise ToolCallError(f"unknown tool {name[:40]!r}")
        if len(arg) > MAX_ARGUMENT_CHARS:
            raise ToolCallError(f"argument longer than {MAX_ARGUMENT_CHARS} characters")
        return ToolCall(name, arg)
    raise ToolCallError(f"keys must be {{tool, argument}} or {{final_answer}}, got {sorted(obj)[:5]}")


def count_tokens(text: str) -> int:
    """Word-and-punctuation count, the token proxy used when the backend has no tokenizer."""
    return len(re.findall(r"\w+|[^\w\s]", text))


@dataclass(frozen=True)
class Step:
    """One turn: the raw model output, the parsed call, the tool's observation or the error."""

    index: int
    raw: str
    tool: str | None
    argument: str | None
    observation: str | None
    error: str | None
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Trajectory:
    """A full episode. ``n_steps`` counts tool-calling turns (failed ones too), not the final answer."""

    query: str
    steps: tuple[Step, ...]
    answer: str | None
    cap_hit: bool
    prompt_tokens: int
    completion_tokens: int
    max_steps: int
    wall_s: float = field(default=0.0, compare=False)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def n_tool_calls(self) -> int:
        return sum(1 for s in self.steps if s.error is None)

    @property
    def n_errors(self) -> int:
        return sum(1 for s in self.steps if s.error is not None)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("wall_s")
        d.update(n_steps=self.n_steps, n_tool_calls=self.n_tool_calls, tokens=self.tokens)
        return d


@runtime_checkable
class Planner(Protocol):
    """Anything that proposes the next turn's raw text from the query and the steps so far."""

    def propose(self, query: str, steps: Sequence[Step], force_final: bool) -> str: ...


class ScriptedBackend:
    """A deterministic :class:`~icml2026.core.textgen.TextModel` for tests: replies from a list or a function.

    ``replies`` is either a sequence (served in order, cycling) or a callable ``prompt -> reply``. Every
    prompt received is kept in ``prompts``.
    """

    def __init__(self, replies: Sequence[str] | Callable[[str], str], name: str = "scripted") -> None:
        if not callable(replies):
            replies = list(replies)
            if not replies or not all(isinstance(r, str) for r in replies):
                raise ValueError("replies must be a non-empty sequence of strings or a callable")
        self._replies = replies
        self._i = 0
        self._name = name
        self.prompts: list[str] = []

    @property
    def name(self) -> str:
        return self._name

    def sample(self, prompts: Sequence[str], *, n: int = 1, temperature: float = 1.0,
               max_new_tokens: int = 32, stop: Sequence[str] = (),
               rng: np.random.Generator | None = None) -> list[list[str]]:
        out = []
        for p in prompts:
            row = []
            for _ in range(n):
                self.prompts.append(p)
                if callable(self._replies):
                    r = self._replies(p)
                else:
                    r = self._replies[self._i % len(self._replies)]
                    self._i += 1
                row.append(r)
            out.append(row)
        return out

    def score(self, prompts: Sequence[str], continuations: Sequence[str]) -> np.ndarray:
        raise TypeError("ScriptedBackend does not score continuations")


def _tool_prompt(tools: Sequence[Tool], query: str, steps: Sequence[Step], force_final: bool) -> str:
    lines = ["You are an assistant that solves the user's query with tools. Tools:"]
    lines += [f"- {t.name}: {t.description}" for t in tools]
    lines += [
        'Reply with exactly one JSON object per turn: {"tool": "<name>", "argument": "<text>"} to call '
        'a tool, or {"final_answer": "<answer>"} when done.',
        f"Query: {query}",
    ]
    for s in steps:
        lines.append(f"Action {s.index + 1}: {s.raw.strip()}")
        lines.append(f"Observation {s.index + 1}: {s.observation if s.error is None else 'error: ' + s.error}")
    if force_final:
        lines.append('The step budget is used up. Reply now with {"final_answer": "<answer>"}.')
    lines.append("Next action:")
    return "\n".join(lines)


class _LLMPlanner:
    def __init__(self, backend: Any, tools: Sequence[Tool], temperature: float, max_new_tokens: int,
                 rng: np.random.Generator) -> None:
        self.backend, self.tools = backend, tools
        self.temperature, self.max_new_tokens, self.rng = temperature, max_new_tokens, rng

    def propose(self, query: str, steps: Sequence[Step], force_final: bool) -> str:
        prompt = _tool_prompt(self.tools, query, steps, force_final)
        return str(self.backend.sample([prompt], n=1, temperature=self.temperature,
                                       max_new_tokens=self.max_new_tokens, stop=("\n",),
                                       rng=self.rng)[0][0])


class ToolAgent:
    """Algorithm of the victim: planner + toolbox, at most ``max_steps`` tool-calling steps (``T_max``).

    Parameters
    ----------
    backend : a ``TextModel`` (``HFLocalBackend``, ``OpenAICompatBackend``, :class:`ScriptedBackend`) or a
        :class:`Planner`.
    tools : the toolbox (names must be unique).
    max_steps : ``T_max`` (paper's low budget: 15).
    temperature, max_new_tokens : sampling of the LLM planner (temperature 0 = greedy).
    """

    def __init__(self, backend: Any, tools: Sequence[Tool], max_steps: int = 15, *,
                 temperature: float = 0.0, max_new_tokens: int = 96) -> None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or not (
            1 <= max_steps <= 1000
        ):
            raise ValueError(f"max_steps must be an integer in [1, 1000], got {max_steps!r}")
        tools = list(tools)
        if not tools or not all(isinstance(t, Tool) for t in tools):
            raise ValueError("tools must be a non-empty sequence of Tool")
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            raise ValueError(f"tools must have unique names, got {names}")
        if not (isinstance(backend, Planner) or hasattr(backend, "sample")):
            raise ValueError("backend must be a TextModel (with .sample) or a Planner (with .propose)")
        if not (np.isfinite(temperature) and temperature >= 0):
            raise ValueError(f"temperature must be finite and >= 0, got {temperature!r}")
        self.backend, self.tools, self.max_steps = backend, tools, int(max_steps)
        self.temperature, self.max_new_tokens = float(temperature), int(max_new_tokens)
        self._by_name = {t.name: t for t in tools}
        tok = getattr(backend, "tokenizer", None)
        # Deviation: core.textgen reports no usage fields, so tokens are counted with the backend's own
        # tokenizer when it has one, else with a word/punctuation count (count_tokens).
        self._count: Callable[[str], int] = (
            (lambda t: len(tok.encode(t))) if tok is not None and hasattr(tok, "encode") else count_tokens
        )

    def run(self, query: str, rng: np.random.Generator | None = None) -> Trajectory:
        """Run one episode on ``query``; never raises for anything the model or a tool does."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"query has {len(query)} characters (at most {MAX_QUERY_CHARS})")
        t0 = time.perf_counter()
        rng = rng if rng is not None else np.random.default_rng(0)
        planner: Any = self.backend if isinstance(self.backend, Planner) else _LLMPlanner(
            self.backend, self.tools, self.temperature, self.max_new_tokens, rng)
        steps: list[Step] = []
        answer: str | None = None
        p_tok = c_tok = 0
        for i in range(self.max_steps):
            prompt_len = self._count(_tool_prompt(self.tools, query, steps, False))
            raw, err = self._propose(planner, query, steps, False)
            p_tok, c_tok = p_tok + prompt_len, c_tok + self._count(raw)
            if err is None:
                try:
                    act = parse_tool_call(raw, list(self._by_name))
                except ToolCallError as exc:
                    err = str(exc)
                else:
                    if isinstance(act, FinalAnswer):
                        answer = act.text
                        break
                    obs = self._by_name[act.tool].run(act.argument)
                    steps.append(Step(i, raw, act.tool, act.argument, obs, None, prompt_len, self._count(raw)))
                    continue
            steps.append(Step(i, raw, None, None, None, err, prompt_len, self._count(raw)))
        cap_hit = answer is None
        if cap_hit:  # forced final answer; not a tool-calling step
            prompt_len = self._count(_tool_prompt(self.tools, query, steps, True))
            raw, err = self._propose(planner, query, steps, True)
            p_tok, c_tok = p_tok + prompt_len, c_tok + self._count(raw)
            if err is None:
                try:
                    act = parse_tool_call(raw, list(self._by_name))
                    answer = act.text if isinstance(act, FinalAnswer) else None
                except ToolCallError:
                    answer = None
        return Trajectory(query, tuple(steps), answer, cap_hit, p_tok, c_tok, self.max_steps,
                          time.perf_counter() - t0)

    @staticmethod
    def _propose(planner: Any, query: str, steps: Sequence[Step], force: bool) -> tuple[str, str | None]:
        try:
            raw = planner.propose(query, tuple(steps), force)
        except Exception as exc:  # a failing backend ends the step with an error, never the agent
            return "", f"backend error: {type(exc).__name__}: {str(exc)[:200]}"
        if not isinstance(raw, str):
            return "", f"backend returned {type(raw).__name__}, not text"
        return raw, None
