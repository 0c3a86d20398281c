"""One BLAS thread for the small dense solves of this paper (a performance setting, not a method change).

The ALS solves are small (hundreds of rows); on a shared 2-core machine a multi-threaded BLAS spends
more time synchronising than computing (measured: 92 s against 6 s for the quick compressed-sensing
sweep) and may round differently from run to run. threadpoolctl ships with the paper's extra; without it
the context does nothing (same results up to rounding, only slower).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["single_blas_thread"]


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - depends on the environment
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
