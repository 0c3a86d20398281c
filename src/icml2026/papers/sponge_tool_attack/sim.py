"""Simulated victims (brief Sec. 6): deterministic planners run through the real :class:`ToolAgent` runtime.

These are documented stand-ins for LLM agents; results on them validate the attack's *mechanics*, not the
phenomenon on real LLMs.

- ``SimAgent(kind="concise")`` parses the task and runs the minimal tool plan; it ignores every other
  sentence of the prompt.
- ``SimAgent(kind="compliant")`` runs the same core plan, and in addition embeds each sentence of the prompt
  with MiniLM; every sentence whose cosine similarity to one of the fixed "procedural requirement"
  prototypes of a group (decompose, verify, cross-check, convert, re-derive, restate) reaches
  ``threshold`` schedules that group's extra tool calls (real calls of real tools), all capped by
  ``T_max``. The extras are content-driven: no keyword list, and a paraphrase that asks for nothing
  procedural adds nothing. Decomposition sub-steps come *before* the core plan and verification is
  interleaved with it, so a prompt that asks for too much can push the core plan past the budget and
  lose the answer (the accuracy cost the attack's reward must avoid).

The number of extra calls per group (``EXTRA_CALLS``) is a fixed constant of this simulator, chosen before
any attack was run; ``n_core`` is the length of the task's minimal plan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .agent import Step, ToolAgent, Trajectory
from .embed import SentenceEncoder, split_sentences
from .tools import Tool, default_tools

__all__ = ["EXTRA_CALLS", "PROTOTYPES", "SimAgent", "core_plan"]

# "procedural requirement" prototypes, by group (brief Sec. 6: verify, decompose, cross-check, convert,
# re-derive; plus restating the result)
PROTOTYPES: dict[str, tuple[str, ...]] = {
    "decompose": ("Decompose the task into sub-steps.", "Break the problem into smaller steps and solve "
                  "each one.", "Split the work into separate sub-tasks first."),
    "verify": ("Verify each result with a tool.", "Check every intermediate value before continuing.",
               "Confirm each step is correct using a tool."),
    "cross_check": ("Cross-check the answer with a second tool.", "Compute the result a second, "
                    "independent way and compare.", "Double-check the answer using another source."),
    "convert": ("Express the result in another unit or format too.", "Convert the answer into a second "
                "representation and confirm both agree."),
    "rederive": ("Re-derive the final answer from scratch.", "Solve the whole problem again to make sure."),
    "restate": ("Restate the final answer in words as well.", "Summarise the result in a full sentence."),
}

# Deviation: simulated victims stand in for LLM agents (brief Sec. 6); extra tool calls per matched
# sentence: (constant, per core step), fixed before any attack was run
EXTRA_CALLS: dict[str, tuple[int, int]] = {
    "decompose": (2, 1), "verify": (0, 2), "cross_check": (2, 1), "convert": (2, 0),
    "rederive": (1, 1), "restate": (1, 0),
}

Arg = Callable[[list[str]], str]  # argument from the core observations so far


@dataclass(frozen=True)
class _Plan:
    core: tuple[tuple[str, Arg], ...]
    template: str


_KB_ATTR = (("population", "population"), ("river", "river"), ("founded", "founded"))


def core_plan(query: str) -> tuple[tuple[str, Arg], ...]:
    """The minimal tool plan the simulated agents read off the task text ( () when nothing parses)."""
    m = re.search(r"buys (\d+) \w+ at (\d+) dollars each and pays with a (\d+) dollar note", query)
    if m:
        a, b, c = m.groups()
        return (("calculator", lambda o: f"{c} - {a} * {b}"),)
    m = re.search(r"has (\d+) \w+, gives away (\d+) and then buys (\d+) more", query)
    if m:
        a, b, c = m.groups()
        return (("calculator", lambda o: f"{a} - {b} + {c}"),)
    m = re.search(r"travels (\d+) km in (\d+) hours", query)
    if m:
        a, b = m.groups()
        return (("calculator", lambda o: f"{a} / {b}"),)
    m = re.search(r"Convert (\d+(?:\.\d+)?) (\w+) to (\w+)", query) or None
    if m:
        v, u1, u2 = m.groups()
        return (("unit_converter", lambda o: f"{v} {u1} to {u2}"),)
    m = re.search(r"How many (\w+) are there in (\d+(?:\.\d+)?) (\w+)", query)
    if m:
        u2, v, u1 = m.groups()
        return (("unit_converter", lambda o: f"{v} {u1} to {u2}"),)
    m = re.search(r"(\d+) days after (\d{4}-\d{2}-\d{2})", query)
    if m:
        n, d = m.groups()
        return (("date_calculator", lambda o: f"{d} + {n} days"),)
    m = re.search(r"between (\d{4}-\d{2}-\d{2}) and (\d{4}-\d{2}-\d{2})", query)
    if m:
        d1, d2 = m.groups()
        return (("date_calculator", lambda o: f"days between {d1} and {d2}"),)
    m = re.search(r"capital of ([A-Z][a-z]+)", query)
    if m:
        country = m.group(1)
        for word, attr in _KB_ATTR:
            if word in query:
                return (("wiki_lookup", lambda o: f"{country} | capital"),
                        ("wiki_lookup", lambda o, a=attr: f"{o[0]} | {a}"))
    return ()


def _is_number(s: str) -> bool:
    return re.fullmatch(r"[-+]?\d+(?:\.\d+)?", s.strip()) is not None


def _extra(group: str, query: str, obs: list[str], j: int) -> tuple[str, str]:
    """The j-th extra call of a group, given the core observations (real calls with real arguments)."""
    last = obs[-1] if obs else ""
    if group == "decompose":
        return [("regex_extractor", f"numbers: {query}"), ("regex_extractor", f"capitalized: {query}"),
                ("string_ops", f"words: {query}")][j % 3]
    if group == "verify":
        return ("verifier", f"{last} => {last}") if _is_number(last) else ("corpus_search", last or query)
    if group == "cross_check":
        if _is_number(last):
            return [("equation_checker", f"{last} = {last}"), ("statistics", f"sum: {last}")][j % 2]
        return ("corpus_search", f"{last} {query[:80]}")
    if group == "convert":
        return ("string_ops", f"length: {last}") if j % 2 else ("regex_extractor", f"numbers: {last}")
    if group == "rederive":
        return ("calculator", last) if _is_number(last) else ("corpus_search", last or query)
    return ("string_ops", f"upper: {last}")


class _SimPlanner:
    def __init__(self, kind: str, encoder: SentenceEncoder | None, threshold: float) -> None:
        self.kind, self.encoder, self.threshold = kind, encoder, threshold
        self._protos: dict[str, np.ndarray] = {}
        self._plans: dict[str, list[tuple[str, str | None, int]]] = {}  # schedule is a function of the query

    def requirements(self, query: str) -> list[str]:
        """The procedural groups requested by the prompt's sentences (one entry per matching sentence)."""
        if self.kind == "concise" or self.encoder is None:
            return []
        if not self._protos:
            self._protos = {g: self.encoder.encode(list(p)) for g, p in PROTOTYPES.items()}
        sents = split_sentences(query)
        vecs = self.encoder.encode(sents)
        groups = []
        for v in vecs:
            for g, p in self._protos.items():
                if float((p @ v).max()) >= self.threshold:
                    groups.append(g)
        return groups

    def schedule(self, query: str) -> list[tuple[str, str | None, int]]:
        """Ordered plan: ("core", None, i) or (group, None, j) items."""
        if query not in self._plans:
            self._plans[query] = self._schedule(query)
        return self._plans[query]

    def _schedule(self, query: str) -> list[tuple[str, str | None, int]]:
        core = core_plan(query)
        n_core = len(core)
        reqs = self.requirements(query)
        n_of = {g: sum(EXTRA_CALLS[g][0] + EXTRA_CALLS[g][1] * n_core for r in reqs if r == g)
                for g in EXTRA_CALLS}
        plan: list[tuple[str, str | None, int]] = [("decompose", None, j) for j in range(n_of["decompose"])]
        per_verify = n_of["verify"] // max(n_core, 1)
        for i in range(n_core):
            plan.append(("core", None, i))
            plan += [("verify", None, j) for j in range(per_verify)]
        for g in ("cross_check", "convert", "rederive", "restate"):
            plan += [(g, None, j) for j in range(n_of[g])]
        return plan

    def propose(self, query: str, steps: Sequence[Step], force_final: bool) -> str:
        core = core_plan(query)
        plan = self.schedule(query)
        done = len(steps)
        core_obs: list[str] = []
        for s, item in zip(steps, plan, strict=False):
            if item[0] == "core" and s.observation is not None:
                core_obs.append(s.observation)
        if force_final or done >= len(plan):
            ans = core_obs[-1] if core and len(core_obs) == len(core) else "unknown"
            return json.dumps({"final_answer": ans})
        kind, _, j = plan[done]
        if kind == "core":
            tool, arg = core[j]
            return json.dumps({"tool": tool, "argument": arg(core_obs)})
        tool, arg_text = _extra(kind, query, core_obs, j)
        return json.dumps({"tool": tool, "argument": arg_text[:1500]})


class SimAgent:
    """A documented stand-in victim (see module docstring); ``.run(query) -> Trajectory``.

    Parameters
    ----------
    kind : ``"concise"`` (minimal plan, ignores procedural text) or ``"compliant"`` (follows it).
    encoder : MiniLM encoder (required for ``"compliant"``).
    max_steps : ``T_max``.
    threshold : cosine similarity at which a sentence counts as a procedural requirement.
    tools : the toolbox (default :func:`default_tools`).
    """

    def __init__(self, kind: Literal["concise", "compliant"] = "compliant",
                 encoder: SentenceEncoder | None = None, max_steps: int = 15, threshold: float = 0.5,
                 tools: list[Tool] | None = None) -> None:
        if kind not in ("concise", "compliant"):
            raise ValueError(f"kind must be 'concise' or 'compliant', got {kind!r}")
        if kind == "compliant" and encoder is None:
            raise ValueError("encoder is required for kind='compliant'")
        if not (isinstance(threshold, (int, float)) and 0 < threshold < 1):
            raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
        self.kind = kind
        self.planner = _SimPlanner(kind, encoder, float(threshold))
        self.agent = ToolAgent(self.planner, tools or default_tools(), max_steps)
        self.max_steps = int(max_steps)

    def run(self, query: str) -> Trajectory:
        return self.agent.run(query)
