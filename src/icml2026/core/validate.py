"""Argument checks for public functions: arrays of the right shape, finite, in range, of equal length.

Every public metric and estimator of every paper validates its inputs with these, so that bad input gives a
clear ``ValueError`` naming the argument, never a crash deep in numpy or a silently wrong number.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import enum
import functools
import inspect
import math
import numbers
import os
import re
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .errors import BadInput

__all__ = ["as_array", "as_probabilities", "as_labels", "same_length", "positive_int", "finite_number",
           "BadArgument", "check_argument", "checked", "check_public_api", "MAX_INT", "MAX_SEED"]


def as_array(
    x: Any,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    dtype: Any = float,
    finite: bool = True,
    lo: float | None = None,
    hi: float | None = None,
    min_size: int = 1,
) -> np.ndarray:
    """``x`` as a numpy array of ``dtype``; ValueError naming ``name`` on a wrong ndim, NaN/inf, a value
    outside ``[lo, hi]`` or fewer than ``min_size`` elements."""
    try:
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: cannot be read as an array of {np.dtype(dtype).name}: {exc}") from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if arr.ndim not in allowed:
            raise ValueError(f"{name}: expected {' or '.join(f'{d}-D' for d in allowed)}, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name}: needs at least {min_size} element(s), got {arr.size}")
    if np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.complexfloating):
        if finite and not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: contains NaN or inf")
        if not finite and np.any(np.isnan(arr)):
            raise ValueError(f"{name}: contains NaN")
    if lo is not None and arr.size and arr.min() < lo:
        raise ValueError(f"{name}: values must be >= {lo:g}, found {arr.min():g}")
    if hi is not None and arr.size and arr.max() > hi:
        raise ValueError(f"{name}: values must be <= {hi:g}, found {arr.max():g}")
    return arr


def as_probabilities(x: Any, name: str, *, ndim: int | tuple[int, ...] | None = None,
                     rows_sum_to_one: bool = False, atol: float = 1e-6) -> np.ndarray:
    """Probabilities in [0, 1] (rows summing to 1 when ``rows_sum_to_one``, within ``atol``)."""
    p = as_array(x, name, ndim=ndim, lo=0.0, hi=1.0)
    if rows_sum_to_one:
        s = p.sum(axis=-1)
        if not np.allclose(s, 1.0, atol=atol):
            worst = float(s.flat[int(np.argmax(np.abs(s - 1.0)))])
            raise ValueError(f"{name}: each row must sum to 1, found a row summing to {worst:g}")
    return p


def as_labels(x: Any, name: str, *, n_classes: int | None = None, binary: bool = False) -> np.ndarray:
    """Integer class labels (1-D); ``binary`` requires 0/1 (bools accepted)."""
    arr = np.asarray(x)
    if arr.dtype == bool:
        arr = arr.astype(np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected 1-D labels, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: is empty")
    if not np.issubdtype(arr.dtype, np.integer):
        f = np.asarray(arr, dtype=float)
        if not np.all(np.isfinite(f)) or not np.all(f == np.round(f)):
            raise ValueError(f"{name}: labels must be integers")
        arr = f.astype(np.int64)
    if binary and not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name}: labels must be 0 or 1")
    if n_classes is not None and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(f"{name}: labels must lie in 0..{n_classes - 1}")
    return arr


def same_length(**arrays: Any) -> int:
    """The common length of the named arrays; ValueError listing the lengths when they differ."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError("arguments must have the same length: " + ", ".join(f"{k}={n}" for k, n in lengths.items()))
    return next(iter(lengths.values()), 0)


def positive_int(x: Any, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An int >= ``minimum`` (and <= ``maximum``); bools and floats are refused."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise ValueError(f"{name}: expected an integer, got {x!r}")
    x = int(x)
    if x < minimum or (maximum is not None and x > maximum):
        hi = "" if maximum is None else f" and <= {maximum}"
        raise ValueError(f"{name}: must be >= {minimum}{hi}, got {x}")
    return x


def finite_number(x: Any, name: str, *, lo: float | None = None, hi: float | None = None,
                  lo_open: bool = False, hi_open: bool = False) -> float:
    """A finite real number in the given range."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(f"{name}: expected a number, got {x!r}")
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"{name}: must be finite, got {v}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ValueError(f"{name}: must be {'>' if lo_open else '>='} {lo:g}, got {v:g}")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise ValueError(f"{name}: must be {'<' if hi_open else '<='} {hi:g}, got {v:g}")
    return v


# ---------------------------------------------------------------------------------------------------------
# Checks at the boundary of a paper's public API, read from the annotations of each function.

#: The largest int argument accepted where no bound is given: a size of 1e12 typed by mistake is refused
#: instead of hanging the machine (seeds may go up to 2**63 - 1).
MAX_INT = 10**9
MAX_SEED = 2**63 - 1

#: Int arguments that may be negative (offsets, indices, exponents, labels); every other int is a count, a
#: size or a seed and must be >= 0.
_SIGNED = re.compile(
    r"^(layer|index|idx|pos|position|low|high|lo|hi|label|target|answer|pred|offset|shift|axis|dim|"
    r"start|stop|value|x|y|s\d|gain|event_step|\w+_log2|\w+_exponent|\w+_shift|\w+_offset|\w+_id|\w+_index|"
    r"\w+_slot|\w+_layer)$")
#: Int arguments that are widths of a network or a batch, never 0: they must be >= 1.
_POSITIVE = re.compile(r"^(heads|n_heads|\w+_heads|patch_size|image_size|batch_size|\w+_batch_size|vocab_size|hidden|"
                       r"width|d_model)$")
_SEED_NAME = re.compile(r"^(seed|\w+_seed)$")
#: Float arguments that are fractions or probability levels, in [0, 1].
_FRACTION = re.compile(r"^(level|confidence|coverage|quantile|dropout|fraction|\w+_fraction|\w+_frac)$")


class BadArgument(BadInput, TypeError, ValueError):
    """An argument of a public function refused at its boundary (a wrong type or a value out of range).

    Both a ``TypeError`` and a ``ValueError``, so that callers catching either see it, and a
    :class:`~icml2026.core.errors.BadInput`, so that the command line reports it in one line with exit 2."""


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if (typing.get_origin(tp) or tp) is cabc.Callable:
        return "a callable"
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _array_like(v: Any) -> bool:
    if isinstance(v, (str, bytes, cabc.Mapping)) or v is None:
        return False
    return isinstance(v, (np.ndarray, np.generic, list, tuple, numbers.Number)) or hasattr(v, "__array__")


def _accepts(tp: Any, v: Any) -> bool:
    """Whether ``v`` fits the annotation ``tp`` (loosely: containers are checked, not their items)."""
    if tp is Any or tp is object or isinstance(tp, (typing.TypeVar, str, typing.ForwardRef)):
        return True
    if tp is None or tp is type(None):
        return v is None
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _accepts(typing.get_args(tp)[0], v)
    if origin is typing.Union or origin is types.UnionType:
        return any(_accepts(a, v) for a in typing.get_args(tp))
    if origin is typing.Literal:
        return any(v == a and type(v) is type(a) for a in typing.get_args(tp))
    cls = origin if origin is not None else tp
    if cls is cabc.Callable:
        return callable(v)
    if cls in (cabc.Sequence, cabc.Collection, cabc.Iterable) and isinstance(v, str):
        return str in typing.get_args(tp)
    if cls in (list, tuple, set, frozenset, cabc.Sequence, cabc.MutableSequence, cabc.Collection,
               cabc.Iterable, cabc.Set):
        if isinstance(v, (str, bytes)) or v is None:
            return False
        if not isinstance(v, (list, tuple, set, frozenset, range, np.ndarray, cabc.Iterable)):
            return False
        return _items_fit(tp, v)
    if cls in (dict, cabc.Mapping, cabc.MutableMapping):
        return isinstance(v, cabc.Mapping)
    if not isinstance(cls, type):
        return True
    if cls is bool:
        return isinstance(v, (bool, np.bool_))
    if cls is int:
        return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
    if cls is float:
        return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
    if cls is complex:
        return isinstance(v, numbers.Number) and not isinstance(v, (bool, np.bool_))
    if cls is str:
        return isinstance(v, str)
    if cls is np.ndarray or (cls.__module__.startswith("torch") and cls.__name__ == "Tensor"):
        return _array_like(v)
    if issubclass(cls, os.PathLike) or cls.__name__ in ("Path", "PurePath"):
        return isinstance(v, (str, os.PathLike))
    if getattr(cls, "_is_protocol", False):
        return v is not None and all(hasattr(v, m) for m in _protocol_members(cls))
    return isinstance(v, cls)


def _protocol_members(cls: type) -> set[str]:
    """The public attributes and methods a :class:`typing.Protocol` asks for (its own and its protocol bases')."""
    names: set[str] = set()
    for base in cls.__mro__:
        if base is object or not getattr(base, "_is_protocol", False) or base.__module__ == "typing":
            continue
        names.update(n for n in vars(base).get("__annotations__", {}) if not n.startswith("_"))
        names.update(n for n, v in vars(base).items()
                     if not n.startswith("_") and (callable(v) or isinstance(v, property)))
    return names


def _items_fit(tp: Any, v: Any) -> bool:
    """The items of a list, tuple or set ``v`` fit the item annotation of ``tp`` (the first 1000 are looked at)."""
    if not isinstance(v, (list, tuple, set, frozenset)):
        return True
    args = typing.get_args(tp)
    if not args:
        return True
    if typing.get_origin(tp) is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        return len(v) == len(args) and all(_accepts(a, x) for a, x in zip(args, v, strict=True))
    item = args[0]
    return all(_accepts(item, x) for x in list(v)[:1000])


def check_argument(name: str, value: Any, tp: Any, *, allow_inf: bool = False) -> None:
    """TypeError or ValueError naming ``name`` when ``value`` does not fit the annotation ``tp`` or the
    library's conventions: a float finite (no NaN, no inf); an int >= 0 and <= :data:`MAX_INT` (a seed <=
    :data:`MAX_SEED`) unless its name marks it as signed (an index, an offset, an exponent), >= 1 for a
    width (``hidden``, ``n_heads``, ``batch_size``, ``patch_size``, ...); a fraction
    (``level``, ``quantile``, ``dropout``, ``*_fraction``, ...) in [0, 1]."""
    if not _accepts(tp, value):
        raise BadArgument(f"{name}: expected {_type_name(tp)}, got {type(value).__name__} {_short(value)}")
    if isinstance(value, (bool, np.bool_)) or value is None:
        return
    if isinstance(value, numbers.Integral):
        v = int(value)
        if _SEED_NAME.match(name):
            if not 0 <= v <= MAX_SEED:
                raise BadArgument(f"{name}: a seed must lie in 0..2**63-1, got {v}")
        elif _SIGNED.match(name):
            if abs(v) > MAX_INT:
                raise BadArgument(f"{name}: must lie in -{MAX_INT}..{MAX_INT}, got {v}")
        elif _POSITIVE.match(name) and not 1 <= v <= MAX_INT:
            raise BadArgument(f"{name}: must lie in 1..{MAX_INT}, got {v}")
        elif not 0 <= v <= MAX_INT:
            raise BadArgument(f"{name}: must lie in 0..{MAX_INT}, got {v}")
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        if math.isnan(float(value)):
            raise BadArgument(f"{name}: must be a number, got NaN")
        if math.isinf(float(value)) and not allow_inf:
            raise BadArgument(f"{name}: must be finite, got {float(value)}")
    if isinstance(value, numbers.Real) and _FRACTION.match(name) and not 0.0 <= float(value) <= 1.0:
        raise BadArgument(f"{name}: must lie in [0, 1], got {float(value):g}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _hints_of(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(func, include_extras=True)
    except Exception:  # noqa: BLE001 - an annotation that cannot be resolved is not checked
        hints = {}
        module = sys.modules.get(getattr(func, "__module__", ""), None)
        for key, ann in getattr(func, "__annotations__", {}).items():
            try:
                hints[key] = eval(ann, vars(module) if module else {}) if isinstance(ann, str) else ann  # noqa: S307
            except Exception:  # noqa: BLE001
                continue
        return hints


F = TypeVar("F", bound=Callable[..., Any])


def checked(func: F, *, allow_inf: bool = False) -> F:
    """``func`` with its arguments checked against its annotations by :func:`check_argument` on every call
    (``allow_inf``: float arguments may be infinite, for functions of floating-point values themselves)."""
    if getattr(func, "__checked__", False):
        return func
    sig = inspect.signature(func)
    hints: dict[str, Any] | None = None
    params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")
              and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal hints
        if hints is None:
            hints = _hints_of(func)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise BadArgument(f"{func.__qualname__}(): {exc}") from None
        arguments = bound.arguments
        for p in params:
            if p.name in arguments and p.name in hints:
                value = arguments[p.name]
                if value is p.default and p.default is not inspect.Parameter.empty:
                    continue
                check_argument(p.name, value, hints[p.name], allow_inf=allow_inf)
        return func(*args, **kwargs)

    wrapper.__checked__ = True  # type: ignore[attr-defined]
    return typing.cast(F, wrapper)


def _is_record(obj: type) -> bool:
    """A result record (a dataclass or named tuple that is not a config): built by the library, not checked."""
    named = obj.__name__.endswith(("Config", "Params"))
    return (dataclasses.is_dataclass(obj) or issubclass(obj, tuple)) and not named


def check_public_api(namespace: dict[str, Any], *, allow_inf: cabc.Collection[str] = ()) -> None:
    """Check the arguments of every public callable of a paper package (its ``__all__``) at each call.

    Functions are replaced in ``namespace`` by :func:`checked` wrappers; the ``__init__`` of every public class
    (config dataclasses included, records and exceptions left out) is wrapped in place, so that a config built
    anywhere is checked. Call it at the end of the package's ``__init__.py`` with ``globals()``; the functions
    named in ``allow_inf`` take infinite floats (functions of floating-point values themselves)."""
    for name in namespace.get("__all__", []):
        obj = namespace.get(name)
        if inspect.isclass(obj):
            if (issubclass(obj, (BaseException, enum.Enum)) or getattr(obj, "_is_protocol", False)
                    or _is_record(obj) or "__init__" not in vars(obj)):
                continue
            obj.__init__ = checked(vars(obj)["__init__"])  # type: ignore[method-assign]
        elif inspect.isfunction(obj) and not getattr(obj, "__checked__", False):
            wrapper = checked(obj, allow_inf=name in allow_inf)
            # pickled by reference as ``<package>.<name>`` (the wrapper), so that it goes to worker processes
            wrapper.__module__, wrapper.__qualname__ = namespace["__name__"], name
            namespace[name] = wrapper
