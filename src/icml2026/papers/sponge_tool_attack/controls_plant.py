"""Planted and null controls of the comparative claims (issue 66): effects of the paper's size built by
construction, so that each comparative check's power and false-positive rate can be measured.

A planted arm runs the *same* victim with :class:`PlantedPlanner`: the victim's own episode, followed by a
known number of extra real tool calls (``string_ops`` on the last observation) before its final answer;
``extra >= T_max`` pushes the episode to the budget (a cap hit). :func:`planted_extras` draws the per-query
extra calls so that, in expectation, the arm gains the paper's Delta steps and cap-hit increase over the
clean arm. A null arm is the clean method again (the query unchanged), which the checks must not call a gain.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from .agent import Planner, Step

__all__ = ["PAPER_CAP_INCREASE", "PAPER_DELTA_STEPS", "PlantedPlanner", "planted_extras"]

#: the paper's headline sizes (brief Sec. 4): +3.33 steps (Qwen2-VL-7B, T_max=15), +13.35 cap-hit points
#: (gpt-4o-mini)
PAPER_DELTA_STEPS = 3.33
PAPER_CAP_INCREASE = 0.1335
_MARK = "length: planted extra call"


def _is_planted(s: Step) -> bool:
    return s.tool == "string_ops" and (s.argument or "").startswith(_MARK)


class PlantedPlanner:
    """The base planner's episode, then ``extra`` extra real tool calls before its final answer.

    The base planner sees only its own steps, so its plan and answer are unchanged; with ``extra`` at
    least the budget the runtime stops at ``T_max`` and asks the base planner for its forced answer.
    """

    def __init__(self, base: Planner, extra: int) -> None:
        if not isinstance(base, Planner):
            raise ValueError("base must be a Planner")
        if isinstance(extra, bool) or not isinstance(extra, (int, np.integer)) or extra < 0:
            raise ValueError(f"extra must be an integer >= 0, got {extra!r}")
        self.base, self.extra = base, int(extra)

    def propose(self, query: str, steps: Sequence[Step], force_final: bool) -> str:
        own = [s for s in steps if not _is_planted(s)]
        done = len(steps) - len(own)
        reply = self.base.propose(query, own, force_final)
        if force_final or done >= self.extra:
            return reply
        try:
            is_final = "final_answer" in json.loads(reply)
        except ValueError:
            is_final = False
        return json.dumps({"tool": "string_ops", "argument": f"{_MARK} {done + 1}"}) if is_final else reply


def planted_extras(clean_steps: Sequence[int], t_max: int, rng: np.random.Generator,
                   delta: float = PAPER_DELTA_STEPS, cap_rate: float = PAPER_CAP_INCREASE) -> list[int]:
    """Extra calls per query: with probability ``cap_rate`` the budget (a cap hit), else a randomised
    rounding of ``e`` chosen so that the expected gain over the clean steps is ``delta``."""
    s0 = np.asarray(clean_steps, float)
    if s0.size == 0:
        raise ValueError("clean_steps must be non-empty")
    if not (0 <= cap_rate < 1) or not np.isfinite(delta) or delta < 0:
        raise ValueError(f"need 0 <= cap_rate < 1 and delta >= 0, got {cap_rate!r}, {delta!r}")
    cap_gain = float(np.mean(np.maximum(t_max - s0, 0)))
    e = max(0.0, (delta - cap_rate * cap_gain) / (1 - cap_rate))
    capped = rng.random(s0.size) < cap_rate
    base = np.floor(e) + (rng.random(s0.size) < e - np.floor(e))
    return [int(t_max) if c else int(b) for c, b in zip(capped, base, strict=True)]
