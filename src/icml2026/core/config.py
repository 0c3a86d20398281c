"""Config dataclasses that validate every field: type, finiteness and declared range.

An experiment's config is a frozen dataclass decorated with :func:`config` (instead of
``@dataclass(frozen=True)``). Each numeric field declares its valid range with :func:`param`; the
generated ``__post_init__`` checks every field against its annotation and range *before* the class's own
``__post_init__`` (cross-field rules) runs, so a bad value never reaches the experiment::

    @config
    class ExactConfig:
        d_max: int = param(32, 1, 4096, help="largest dimension; paper: any d")
        scale: float = param(1.0, 0, 1e3, lo_open=True)
        method: Literal["a", "b"] = "a"

        def __post_init__(self) -> None:      # optional: rules between fields
            if self.d_min > self.d_max: raise ValueError("d_min must be <= d_max")

Every error message starts with the field's name, so the command line can say which ``--set`` key was
wrong. :func:`describe_config` feeds ``icml2026 show``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

__all__ = [
    "Spec",
    "param",
    "config",
    "validate_fields",
    "describe_config",
    "FieldInfo",
    "unbounded_numeric_fields",
    "is_validated_config",
    "build_config",
]

T = TypeVar("T")
C = TypeVar("C", bound=type)

_SPEC_KEY = "icml2026_spec"
_MARK = "__icml2026_validated__"


@dataclass(frozen=True)
class Spec:
    """The valid values of one config field (applied element-wise to tuples)."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    finite: bool = True  # False allows +-inf (never NaN)
    choices: tuple[Any, ...] | None = None
    min_len: int | None = None  # tuples and lists
    max_len: int | None = None
    help: str = ""

    def range_text(self) -> str:
        if self.lo is None and self.hi is None:
            return ""
        lo = "-inf" if self.lo is None else f"{self.lo:g}"
        hi = "inf" if self.hi is None else f"{self.hi:g}"
        return (f"{'(' if self.lo_open or self.lo is None else '['}{lo}, {hi}"
                f"{')' if self.hi_open or self.hi is None else ']'}")

    def describe(self) -> str:
        parts = [self.range_text()] if self.range_text() else []
        if self.choices is not None:
            parts.append("one of " + ", ".join(map(str, self.choices)))
        if self.min_len is not None or self.max_len is not None:
            parts.append(f"length {self.min_len or 0}..{'' if self.max_len is None else self.max_len}")
        if not self.finite:
            parts.append("inf allowed")
        return "; ".join(parts)

    def check_number(self, name: str, v: float) -> None:
        if math.isnan(v):
            raise ValueError(f"{name} = nan: must be a number")
        if math.isinf(v) and self.finite:
            raise ValueError(f"{name} = {v}: must be finite")
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            raise ValueError(f"{name} = {v!r}: must be in {self.range_text()}")
        if self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)):
            raise ValueError(f"{name} = {v!r}: must be in {self.range_text()}")


def param(
    default: T,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    finite: bool = True,
    choices: tuple[Any, ...] | None = None,
    min_len: int | None = None,
    max_len: int | None = None,
    help: str = "",
) -> T:
    """A config field with its valid range: ``n: int = param(8, 1, 4096)`` means 1 <= n <= 4096.

    ``lo``/``hi`` bound a number (or every element of a tuple); ``lo_open``/``hi_open`` exclude the ends;
    ``finite=False`` admits +-inf; ``choices`` lists the admissible values; ``min_len``/``max_len`` bound
    the length of a tuple.
    """
    spec = Spec(lo, hi, lo_open, hi_open, finite, tuple(choices) if choices is not None else None,
                min_len, max_len, help)
    return cast(T, dataclasses.field(default=default, metadata={_SPEC_KEY: spec}))


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _check_value(name: str, value: Any, tp: Any, spec: Spec) -> Any:
    """Return ``value`` (possibly converted: int -> float, list -> tuple) or raise ValueError naming ``name``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or tp is object:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _check_value(name, value, a, spec)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(errors[0] if errors else f"{name} = {value!r}: expected {_type_name(tp)}")
    if origin is typing.Literal:
        if value in args and type(value) in {type(a) for a in args}:
            return value
        raise ValueError(f"{name} = {value!r}: must be one of {', '.join(map(repr, args))}")
    if origin in (tuple, list):
        if not isinstance(value, (tuple, list)):
            raise ValueError(f"{name} = {value!r}: expected a {origin.__name__}")
        n = len(value)
        if spec.min_len is not None and n < spec.min_len:
            raise ValueError(f"{name}: needs at least {spec.min_len} entries, got {n}")
        if spec.max_len is not None and n > spec.max_len:
            raise ValueError(f"{name}: takes at most {spec.max_len} entries, got {n}")
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != n:
                raise ValueError(f"{name}: expected {len(args)} entries, got {n}")
            inner = list(args)
        else:
            inner = [args[0] if args else Any] * n
        out = [_check_value(f"{name}[{i}]", v, t, spec) for i, (v, t) in enumerate(zip(value, inner, strict=True))]
        return tuple(out) if origin is tuple else out
    if tp is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} = {value!r}: expected true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} = {value!r}: expected an integer")
        value = int(value)
        spec.check_number(name, value)
        _check_choices(name, value, spec)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{name} = {value!r}: expected a number")
        value = float(value)
        spec.check_number(name, value)
        _check_choices(name, value, spec)
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ValueError(f"{name} = {value!r}: expected a string")
        _check_choices(name, value, spec)
        return value
    if isinstance(tp, type) and not isinstance(value, tp):
        raise ValueError(f"{name} = {value!r}: expected {tp.__name__}")
    return value


def _check_choices(name: str, value: Any, spec: Spec) -> None:
    if spec.choices is not None and value not in spec.choices:
        raise ValueError(f"{name} = {value!r}: must be one of {', '.join(map(str, spec.choices))}")


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def validate_fields(obj: Any) -> None:
    """Check every init field of the dataclass ``obj`` against its annotation and :class:`Spec`.

    Converts in place where the type says so (an int given to a float field, a list to a tuple field).
    Raises ValueError whose message starts with the field's name.
    """
    hints = _hints(type(obj))
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        spec = f.metadata.get(_SPEC_KEY, Spec())
        value = getattr(obj, f.name)
        new = _check_value(f.name, value, hints.get(f.name, Any), spec)
        if new is not value:
            object.__setattr__(obj, f.name, new)


def _config(cls: C) -> C:
    """``@dataclass(frozen=True)`` whose ``__post_init__`` first validates every field (see module doc).

    May be stacked on an existing ``@dataclass(frozen=True)``; the class's own ``__post_init__`` (if any)
    runs after the field checks.
    """
    own: Callable[[Any], None] | None = cls.__dict__.get("__post_init__")
    if own is None:  # a parent's rules between fields still apply
        inherited = getattr(cls, "__post_init__", None)
        own = getattr(inherited, "__wrapped_own__", inherited)

    def __post_init__(self: Any) -> None:
        validate_fields(self)
        if own is not None:
            own(self)

    __post_init__.__wrapped_own__ = own  # type: ignore[attr-defined]
    __post_init__.__qualname__ = f"{cls.__qualname__}.__post_init__"
    cls.__post_init__ = __post_init__  # type: ignore[attr-defined]
    setattr(cls, _MARK, True)
    if "__dataclass_fields__" not in cls.__dict__:
        return cast(C, dataclass(frozen=True)(cls))
    return cls


if TYPE_CHECKING:  # type checkers see a plain dataclass: param(...) returns the field's default value
    from dataclasses import dataclass as config
else:
    config = _config


def is_validated_config(cls: type) -> bool:
    """True when ``cls`` (or a parent) was decorated with :func:`config`."""
    return bool(getattr(cls, _MARK, False))


@dataclass(frozen=True)
class FieldInfo:
    """One config field as ``icml2026 show`` prints it."""

    name: str
    type: str
    default: Any
    valid: str
    help: str


def describe_config(cls: type) -> list[FieldInfo]:
    """Name, type, default and valid range of every init field of the config dataclass ``cls``."""
    hints = _hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        spec = f.metadata.get(_SPEC_KEY, Spec())
        tp = hints.get(f.name, Any)
        valid = spec.describe()
        if typing.get_origin(tp) is typing.Literal:
            valid = "one of " + ", ".join(map(str, typing.get_args(tp)))
        elif tp is bool:
            valid = "true or false"
        default = f.default if f.default is not dataclasses.MISSING else None
        out.append(FieldInfo(f.name, _type_name(tp), default, valid or "any", spec.help))
    return out


def _is_numeric(tp: Any) -> bool:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType, tuple, list):
        return any(_is_numeric(a) for a in args if a is not type(None) and a is not Ellipsis)
    return tp in (int, float)


def unbounded_numeric_fields(cls: type) -> list[str]:
    """Numeric fields (int, float, tuples of them) of ``cls`` that declare no lower or no upper bound."""
    hints = _hints(cls)
    bad = []
    for f in dataclasses.fields(cls):
        if not f.init or not _is_numeric(hints.get(f.name, Any)):
            continue
        spec = f.metadata.get(_SPEC_KEY)
        if spec is None or (spec.choices is None and (spec.lo is None or spec.hi is None)):
            bad.append(f.name)
    return bad


def build_config(base: Any, overrides: dict[str, Any], exp_name: str) -> Any:
    """``base`` with ``overrides`` applied; a value the config rejects is :class:`BadInput` naming the key."""
    from .errors import BadInput, one_line

    try:
        return dataclasses.replace(base, **overrides)
    except (ValueError, TypeError, OverflowError) as exc:
        msg = one_line(exc)
        keys = [k for k in overrides if k in msg]
        named = "" if keys or not overrides else f" (--set {', '.join(overrides)})"
        raise BadInput(f"{exp_name}: invalid config: {msg}{named}") from None
