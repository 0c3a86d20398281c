"""The twelve offline, deterministic tools of the brief (Sec. 5), each ``.run(argument: str) -> str``.

No tool evaluates model output as code outside the sandbox: the calculator walks an arithmetic-only AST,
the Python tool runs in :mod:`.sandbox`, and the extractor uses fixed, linear-time patterns (a model-supplied
regular expression could hang the agent, so none is accepted). Errors come back as text starting with
``"error:"``; nothing is raised into the agent. There is no network tool.
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import operator
import re
import statistics as pystats
from collections.abc import Callable
from dataclasses import dataclass, field

from .data import UNIT_BY_WORD, UNIT_FACTORS, KnowledgeBase, _fmt, make_knowledge_base
from .sandbox import run_sandboxed

__all__ = ["MAX_ARGUMENT_CHARS", "Tool", "default_tools", "safe_arithmetic"]

MAX_ARGUMENT_CHARS = 2000

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}


def safe_arithmetic(expression: str) -> float:
    """Evaluate ``+ - * / // % **`` and parentheses over numbers; anything else raises ValueError."""
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError("expression must be a non-empty string")
    if len(expression) > 500:
        raise ValueError("expression is longer than 500 characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"not an arithmetic expression: {expression[:60]!r}") from None

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
            node.value, bool
        ):
            return float(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and (abs(b) > 64 or abs(a) > 1e6):
                raise ValueError("exponent too large")
            return _BINOPS[type(node.op)](a, b)
        raise ValueError(f"{type(node).__name__} is not allowed in arithmetic")

    value = ev(tree.body)
    if not math.isfinite(value):
        raise ValueError("result is not finite")
    return value


@dataclass(frozen=True)
class Tool:
    """A named tool. ``run`` never raises: bad arguments and failures come back as ``"error: ..."``."""

    name: str
    description: str
    fn: Callable[[str], str] = field(repr=False)

    def run(self, argument: str) -> str:
        if not isinstance(argument, str):
            return f"error: the argument must be a string, got {type(argument).__name__}"
        if len(argument) > MAX_ARGUMENT_CHARS:
            return f"error: the argument has {len(argument)} characters (at most {MAX_ARGUMENT_CHARS})"
        try:
            return self.fn(argument)
        except (ValueError, KeyError, ZeroDivisionError, OverflowError, TypeError, IndexError,
                RecursionError) as exc:
            return f"error: {exc}"
        except Exception as exc:  # the contract: a tool failure is text in the trajectory, never a crash
            return f"error: internal failure of {self.name}: {type(exc).__name__}"


# ------------------------------------------------------------------------------------------- the tools
def _calculator(arg: str) -> str:
    return _fmt(safe_arithmetic(arg))


def _unit(arg: str) -> str:
    m = re.fullmatch(r"\s*([-+]?\d+(?:\.\d+)?)\s*([A-Za-z]+)\s+(?:to|in)\s+([A-Za-z]+)\s*", arg)
    if not m:
        raise ValueError("expected '<value> <unit> to <unit>', e.g. '12.5 km to mi'")
    v, u1, u2 = float(m.group(1)), m.group(2).lower(), m.group(3).lower()
    u1, u2 = UNIT_BY_WORD.get(u1, u1), UNIT_BY_WORD.get(u2, u2)
    if u1 not in UNIT_FACTORS or u2 not in UNIT_FACTORS:
        raise ValueError(f"unknown unit; known: {', '.join(UNIT_FACTORS)}")
    (d1, f1), (d2, f2) = UNIT_FACTORS[u1], UNIT_FACTORS[u2]
    if d1 != d2:
        raise ValueError(f"cannot convert {d1} to {d2}")
    return _fmt(round(v * f1 / f2, 4))


def _date(arg: str) -> str:
    s = arg.strip()
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2})\s*([+-])\s*(\d{1,5})\s*days?", s)
    if m:
        d = dt.date.fromisoformat(m.group(1))
        n = int(m.group(3)) * (1 if m.group(2) == "+" else -1)
        return (d + dt.timedelta(days=n)).isoformat()
    m = re.fullmatch(r"days between (\d{4}-\d{2}-\d{2}) and (\d{4}-\d{2}-\d{2})", s)
    if m:
        return str(abs((dt.date.fromisoformat(m.group(2)) - dt.date.fromisoformat(m.group(1))).days))
    raise ValueError("expected 'YYYY-MM-DD + N days' or 'days between YYYY-MM-DD and YYYY-MM-DD'")


def _make_wiki(kb: KnowledgeBase) -> Callable[[str], str]:
    def wiki(arg: str) -> str:
        if "|" not in arg:
            raise ValueError("expected '<entity> | <attribute>', e.g. 'Veltria | capital'")
        entity, attribute = (p.strip() for p in arg.split("|", 1))
        value = kb.lookup(entity, attribute)
        if value is None:
            return f"no entry for {entity!r} / {attribute!r}"
        return value
    return wiki


def _make_corpus(kb: KnowledgeBase) -> Callable[[str], str]:
    sentences = []
    for (entity, attribute), value in sorted(kb.facts.items()):
        sentences.append(f"The {attribute.replace('_', ' ')} of {entity.capitalize()} is {value}.")
    index = [set(re.findall(r"\w+", s.lower())) for s in sentences]

    def corpus(arg: str) -> str:
        words = set(re.findall(r"\w+", arg.lower())) - {"the", "of", "is", "a", "what"}
        if not words:
            raise ValueError("give one or more keywords")
        scored = sorted(((len(words & ix), -i) for i, ix in enumerate(index)), reverse=True)[:3]
        hits = [sentences[-i] for s, i in scored if s > 0]
        return " ".join(hits) if hits else "no matching passage"
    return corpus


def _make_table(kb: KnowledgeBase) -> Callable[[str], str]:
    columns = ("population", "river", "founded")

    def table(arg: str) -> str:
        if "|" not in arg:
            raise ValueError(f"expected '<city> | <column>' with column one of {columns}")
        row, col = (p.strip().lower() for p in arg.split("|", 1))
        if col not in columns:
            raise ValueError(f"unknown column {col!r}; columns: {columns}")
        value = kb.lookup(row, col)
        return value if value is not None else f"no row {row!r}"
    return table


_EXTRACT = {  # fixed, linear-time patterns only
    "numbers": r"[-+]?\d+(?:\.\d+)?",
    "dates": r"\d{4}-\d{2}-\d{2}",
    "capitalized": r"\b[A-Z][a-z]+\b",
    "emails": r"[\w.+-]+@[\w-]+\.[\w.]+",
}


def _extract(arg: str) -> str:
    kind, _, text = arg.partition(":")
    kind = kind.strip().lower()
    if kind not in _EXTRACT or not _:
        raise ValueError(f"expected '<kind>: <text>' with kind one of {tuple(_EXTRACT)}")
    return ", ".join(re.findall(_EXTRACT[kind], text)) or "none"


def _string(arg: str) -> str:
    op, _, text = arg.partition(":")
    op = op.strip().lower()
    ops: dict[str, Callable[[str], str]] = {
        "upper": str.upper, "lower": str.lower, "reverse": lambda t: t[::-1],
        "length": lambda t: str(len(t)), "words": lambda t: str(len(t.split())), "strip": str.strip,
    }
    if op not in ops or not _:
        raise ValueError(f"expected '<op>: <text>' with op one of {tuple(ops)}")
    return ops[op](text.strip() if op != "length" else text)


def _stats(arg: str) -> str:
    op, _, rest = arg.partition(":")
    op = op.strip().lower()
    fns: dict[str, Callable[[list[float]], float]] = {
        "mean": pystats.fmean, "median": pystats.median, "sum": math.fsum, "min": min, "max": max,
        "std": lambda v: pystats.pstdev(v),
    }
    if op not in fns or not _:
        raise ValueError(f"expected '<op>: x1, x2, ...' with op one of {tuple(fns)}")
    values = [float(x) for x in re.split(r"[,\s]+", rest.strip()) if x]
    if not values or len(values) > 1000 or not all(math.isfinite(v) for v in values):
        raise ValueError("give 1 to 1000 finite numbers")
    return _fmt(round(fns[op](values), 6))


def _equation(arg: str) -> str:
    if arg.count("=") != 1:
        raise ValueError("expected '<lhs> = <rhs>'")
    lhs, rhs = arg.split("=")
    return "true" if math.isclose(safe_arithmetic(lhs), safe_arithmetic(rhs), rel_tol=1e-9, abs_tol=1e-9) \
        else "false"


def _verifier(arg: str) -> str:
    if "=>" not in arg:
        raise ValueError("expected '<expression> => <claimed value>'")
    expr, claimed = (p.strip() for p in arg.split("=>", 1))
    value = safe_arithmetic(expr)
    ok = math.isclose(value, safe_arithmetic(claimed), rel_tol=1e-6, abs_tol=1e-6)
    return "verified" if ok else f"mismatch: {expr} = {_fmt(value)}"


def _python(arg: str) -> str:
    return run_sandboxed(arg, cpu_s=1, mem_mb=256, wall_s=4.0)


def default_tools(kb: KnowledgeBase | None = None) -> list[Tool]:
    """The 12 offline tools, in a fixed order (the KB defaults to :func:`make_knowledge_base`)."""
    kb = kb or make_knowledge_base()
    return [
        Tool("calculator", "Evaluate an arithmetic expression, e.g. '50 - 12 * 3'.", _calculator),
        Tool("python", "Run a short pure Python snippet in a sandbox (no imports, no I/O); returns the "
             "value of the last expression.", _python),
        Tool("unit_converter", "Convert a quantity, e.g. '12.5 km to mi'.", _unit),
        Tool("date_calculator", "Date arithmetic: '2024-03-10 + 45 days' or "
             "'days between 2024-01-01 and 2024-03-01'.", _date),
        Tool("corpus_search", "Keyword search over the local encyclopaedia corpus.", _make_corpus(kb)),
        Tool("wiki_lookup", "Look up one fact: '<entity> | <attribute>', e.g. 'Veltria | capital'.",
             _make_wiki(kb)),
        Tool("regex_extractor", "Extract 'numbers', 'dates', 'capitalized' words or 'emails' from a "
             "text: '<kind>: <text>'.", _extract),
        Tool("table_lookup", "Read the city table: '<city> | population|river|founded'.", _make_table(kb)),
        Tool("string_ops", "String operations: '<upper|lower|reverse|length|words|strip>: <text>'.",
             _string),
        Tool("statistics", "Statistics of numbers: '<mean|median|sum|min|max|std>: 1, 2, 3'.", _stats),
        Tool("equation_checker", "Check an equality of two arithmetic expressions: '<lhs> = <rhs>'.",
             _equation),
        Tool("verifier", "Recompute an expression and compare with a claimed value: "
             "'<expression> => <value>'.", _verifier),
    ]
