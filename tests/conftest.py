"""Suite-wide settings: one BLAS thread and one torch thread, so tests are fast and repeatable on 2 cores."""

from __future__ import annotations

import pytest

from icml2026.core import runner
from icml2026.core.runner import limit_blas_threads

limit_blas_threads(1)
try:
    import torch
except ImportError:  # torch is an optional extra
    pass
else:
    torch.set_num_threads(1)

# Hypothesis draws the same examples on every run and machine, so that a CI verdict never depends on which
# random examples a run happened to draw (a counterexample found once is kept as a test instead).
from hypothesis import settings  # noqa: E402

settings.register_profile("icml2026", derandomize=True, print_blob=True)
settings.load_profile("icml2026")


@pytest.fixture(autouse=True)
def _one_core_for_threads_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--threads auto`` means one thread in the suite. A process that once ran torch with two threads keeps
    kernel choices that make its later one-thread results differ in the last bits from a fresh process's, and
    several tests compare in-process runs with runs in spawned worker processes bit for bit."""
    monkeypatch.setattr(runner, "available_cores", lambda: 1)
