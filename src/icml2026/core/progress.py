"""Progress for long loops: a rich bar on a terminal, plain line-buffered lines otherwise.

Progress goes to stderr so that stdout stays clean for results.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

T = TypeVar("T")

__all__ = ["track", "plain_lines"]


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate over ``items`` while showing progress.

    On a terminal a rich progress bar is drawn; otherwise one plain line is written (flushed) at the
    start, about every 10% or 5 s, and at the end.
    """
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    if sys.stderr.isatty():
        from rich.progress import track as rich_track

        yield from rich_track(items, description=description, total=total, transient=True)
        return
    start = last = time.monotonic()
    step = max(1, (total or 10) // 10)
    print(f"[{description}] start ({total if total is not None else '?'} steps)", file=sys.stderr, flush=True)
    i = 0
    for i, item in enumerate(items, 1):
        yield item
        now = time.monotonic()
        if i % step == 0 or now - last > 5.0:
            last = now
            of = f"/{total}" if total is not None else ""
            print(f"[{description}] {i}{of} ({now - start:.1f}s)", file=sys.stderr, flush=True)
    print(f"[{description}] done {i} steps in {time.monotonic() - start:.1f}s", file=sys.stderr, flush=True)


class _NoTerminal:
    """``stream`` that says it is not a terminal, so that :func:`track` writes plain lines."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def plain_lines() -> Iterator[None]:
    """Plain progress lines on stderr for the ``with`` body, even where stderr is a terminal: several worker
    processes drawing live bars on one terminal would overwrite each other (and the parent's bar)."""
    old = sys.stderr
    sys.stderr = cast(Any, _NoTerminal(old))
    try:
        yield
    finally:
        sys.stderr = old
