"""Progress for long loops: a rich bar on a terminal, plain line-buffered lines otherwise.

Progress goes to stderr so that stdout stays clean for results.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

__all__ = ["track"]


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
