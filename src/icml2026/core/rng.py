"""Seeds to generators: the only place where a seed becomes random state.

Library code takes a ``numpy.random.Generator`` (or a ``torch.Generator``) as an argument and never touches
global random state; independent streams come from ``SeedSequence.spawn``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["make_rng", "spawn", "torch_generator", "torch_seeded"]


def make_rng(seed: int) -> np.random.Generator:
    """The experiment's generator for ``seed`` (a non-negative int)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(np.random.SeedSequence(int(seed)))


def spawn(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """``n`` independent child generators (for clients, workers, repeats)."""
    if n < 0:
        raise ValueError(f"cannot spawn {n} generators")
    return [np.random.default_rng(s) for s in rng.bit_generator.seed_seq.spawn(n)]  # type: ignore[attr-defined]


def torch_generator(rng: np.random.Generator) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded from ``rng`` (advances ``rng`` by one draw)."""
    import torch

    g = torch.Generator()
    g.manual_seed(int(rng.integers(0, 2**63 - 1)))
    return g


@contextmanager
def torch_seeded(rng: np.random.Generator, *, high: int = 2**63 - 1) -> Iterator[None]:
    """Inside the block torch's global CPU generator is seeded from ``rng`` (one draw in [0, high)); outside it
    is left as it was. For code that draws from the global generator and takes none (``nn.Module``
    initialisers), so that what it builds depends on ``rng`` alone, not on what ran before in the process.
    ``high = 2**31 - 1`` keeps the seeds of callers that drew them that way before this helper existed."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.integers(0, high)))
        yield
