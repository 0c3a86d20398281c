"""What every experiment returns: an :class:`Outcome` holding metrics, figures and :class:`Check` s.

A :class:`Check` is one machine-checkable statement of a paper: our measured value, the target it must
meet (a small expression such as ``"< 1e-10"``, ``">= 0.9"``, ``"== 272"`` or ``"in [0.8, 1.2]"``), the
paper's own figure where there is one, and whether it passed. ``passed`` is always *computed* from the
value and the target, never given, so a check cannot claim to pass what it did not measure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["Check", "Outcome", "evaluate_target"]

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf"
_CMP_RE = re.compile(rf"^\s*(<=|>=|<|>|==|!=)\s*({_NUM})\s*$")
_IN_RE = re.compile(rf"^\s*in\s*([\[(])\s*({_NUM})\s*,\s*({_NUM})\s*([\])])\s*$")


def evaluate_target(value: float, target: str) -> bool:
    """Decide whether ``value`` meets ``target``.

    Grammar: ``OP NUMBER`` with OP one of ``< <= > >= == !=``, or an interval ``in [a, b]`` whose
    brackets say whether the ends are included (``(`` / ``)`` exclude). NaN never passes.

    Raises
    ------
    ValueError
        If ``target`` is not in the grammar (a check must be machine-checkable).
    """
    v = float(value)
    m = _CMP_RE.match(target)
    if m:
        op, rhs = m.group(1), float(m.group(2))
        if math.isnan(v):
            return False
        return {
            "<": v < rhs,
            "<=": v <= rhs,
            ">": v > rhs,
            ">=": v >= rhs,
            "==": v == rhs,
            "!=": v != rhs,
        }[op]
    m = _IN_RE.match(target)
    if m:
        lo_b, lo, hi, hi_b = m.group(1), float(m.group(2)), float(m.group(3)), m.group(4)
        if math.isnan(v):
            return False
        ok_lo = v >= lo if lo_b == "[" else v > lo
        ok_hi = v <= hi if hi_b == "]" else v < hi
        return ok_lo and ok_hi
    raise ValueError(
        f"check target {target!r} is not machine-checkable; use e.g. '< 1e-10', '>= 0.9', "
        "'== 272' or 'in [0.8, 1.2]'"
    )


@dataclass(frozen=True)
class Check:
    """One claim of the paper, measured.

    Parameters
    ----------
    name : what is checked, e.g. ``"rel_err_A"``.
    value : our measured number (bools count as 0/1).
    target : the condition it must meet, see :func:`evaluate_target`.
    paper : the paper's own figure for this quantity, as text (``"exact"``, ``"0.93"``), or None.
    """

    name: str
    value: float
    target: str
    paper: str | None = None
    passed: bool = field(init=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a Check needs a name")
        try:
            value = float(self.value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"check {self.name!r}: value {self.value!r} is not a number") from exc
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "passed", evaluate_target(value, self.target))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "target": self.target,
            "paper": self.paper,
            "passed": self.passed,
        }


@dataclass
class Outcome:
    """What an experiment returns.

    Attributes
    ----------
    metrics : name -> number; deterministic for a fixed seed (no timings here).
    checks : the paper's claims as :class:`Check` s; the run passes when all pass.
    figures : name -> matplotlib Figure; saved as ``<name>.png``.
    tables : name -> list of rows (dicts of scalars); rendered in the report.
    timings : name -> seconds; kept apart from metrics because they are not deterministic.
    """

    metrics: dict[str, float] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    figures: dict[str, Figure] = field(default_factory=dict)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clean: dict[str, float] = {}
        for k, v in self.metrics.items():
            try:
                clean[str(k)] = float(v)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"metric {k!r} = {v!r} is not a number") from exc
        self.metrics = clean
        for c in self.checks:
            if not isinstance(c, Check):
                raise TypeError(f"Outcome.checks must hold Check objects, got {type(c).__name__}")
        for name in self.figures:
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                raise ValueError(f"figure name {name!r} must be a plain file stem")

    @property
    def passed(self) -> bool:
        """True when every check passed (and there is at least one check)."""
        return bool(self.checks) and all(c.passed for c in self.checks)
