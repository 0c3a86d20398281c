"""What every experiment returns: an :class:`Outcome` holding metrics, figures and :class:`Check` s.

A :class:`Check` is one machine-checkable statement of a paper: our measured value, the target it must
meet (a small expression such as ``"< 1e-10"``, ``">= 0.9"``, ``"== 272"`` or ``"in [0.8, 1.2]"``), the
paper's own figure where there is one, and whether it passed. ``passed`` is always *computed* from the
value and the target, never given, so a check cannot claim to pass what it did not measure.

A check has a **role**:

- ``claim`` (the default): a statement of the paper;
- ``precondition``: the setup can express the claims (the base task is learned, the ground truth scores as
  it should, an oracle passes the check). Its target is fixed before the run, relative to a reference where
  one exists;
- ``control``: shown beside the claims (e.g. a planted effect measured in the same run), never counted.

The verdict of a run is three-valued (:func:`verdict_of`): ``reproduced`` (every precondition and every claim
passes), ``not reproduced`` (every precondition passes, a claim fails) or ``undecided`` (a precondition fails:
the claims are still measured and shown, never counted for or against the paper; also when there is no
claim at all).

A claim that compares two methods or conditions is marked ``comparative=True``. It carries its **power** (the
pass rate on a planted effect of the paper's size) and its **false-positive rate** (the pass rate on a null
where both arms are the same method), each measured over >= 5 seeds: given here when the experiment measures
them itself, otherwise attached by the runner from the paper's stored ``controls.json``
(:mod:`icml2026.core.controls`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "Check",
    "Outcome",
    "evaluate_target",
    "verdict_of",
    "ROLES",
    "VERDICTS",
    "REPRODUCED",
    "NOT_REPRODUCED",
    "UNDECIDED",
]

#: The roles a check can have; see the module docstring.
ROLES = ("claim", "precondition", "control")
REPRODUCED, NOT_REPRODUCED, UNDECIDED = "reproduced", "not reproduced", "undecided"
#: The three verdicts, from best to worst for the paper's claim as we measured it.
VERDICTS = (REPRODUCED, NOT_REPRODUCED, UNDECIDED)

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
    """One statement of the paper (or of the setup), measured.

    Parameters
    ----------
    name : what is checked, e.g. ``"rel_err_A"``.
    value : our measured number (bools count as 0/1).
    target : the condition it must meet, see :func:`evaluate_target`.
    paper : the paper's own figure or statement for this quantity, as text (``"exact"``, ``"0.93"``), or None.
    role : ``"claim"`` (default), ``"precondition"`` or ``"control"``; see the module docstring.
    comparative : True for a claim that compares two methods or conditions; such a claim needs its power
        and false-positive rate (given here or stored in the paper's ``controls.json``).
    power : pass rate of this check on a planted effect of the paper's size (>= 5 seeds), or None.
    false_positive_rate : pass rate of this check on a null (both arms one method, other seeds), or None.
    """

    name: str
    value: float
    target: str
    paper: str | None = None
    role: str = "claim"
    comparative: bool = False
    power: float | None = None
    false_positive_rate: float | None = None
    passed: bool = field(init=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a Check needs a name")
        if self.role not in ROLES:
            raise ValueError(f"check {self.name!r}: role must be one of {', '.join(ROLES)}, got {self.role!r}")
        if self.comparative and self.role != "claim":
            raise ValueError(f"check {self.name!r}: only a claim can be comparative (role is {self.role!r})")
        for what in ("power", "false_positive_rate"):
            rate = getattr(self, what)
            if rate is not None and not (isinstance(rate, (int, float)) and 0.0 <= float(rate) <= 1.0):
                raise ValueError(f"check {self.name!r}: {what} must be a rate in [0, 1] or None, got {rate!r}")
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
            "role": self.role,
            "comparative": self.comparative,
            "power": self.power,
            "false_positive_rate": self.false_positive_rate,
            "passed": self.passed,
        }


def verdict_of(checks: list[tuple[str, bool]]) -> str:
    """The three-valued verdict of ``(role, passed)`` pairs.

    ``undecided`` when a precondition fails or there is no claim; else ``reproduced`` when every claim
    passes, ``not reproduced`` when one fails. Controls are never counted.
    """
    for role, _ in checks:
        if role not in ROLES:
            raise ValueError(f"unknown check role {role!r}; roles: {', '.join(ROLES)}")
    if any(role == "precondition" and not ok for role, ok in checks):
        return UNDECIDED
    claims = [ok for role, ok in checks if role == "claim"]
    if not claims:
        return UNDECIDED
    return REPRODUCED if all(claims) else NOT_REPRODUCED


@dataclass
class Outcome:
    """What an experiment returns.

    Attributes
    ----------
    metrics : name -> number; deterministic for a fixed seed (no timings here).
    checks : the paper's claims, the run's preconditions and its controls, as :class:`Check` s.
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

        names = [c.name for c in self.checks]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"check names must be unique in one outcome; repeated: {', '.join(dup)}")

    @property
    def verdict(self) -> str:
        """``reproduced``, ``not reproduced`` or ``undecided`` (:func:`verdict_of`)."""
        return verdict_of([(c.role, c.passed) for c in self.checks])

    @property
    def passed(self) -> bool:
        """True when the verdict is ``reproduced``."""
        return self.verdict == REPRODUCED
