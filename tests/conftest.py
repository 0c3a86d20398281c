"""Suite-wide settings: one BLAS thread and one torch thread, so tests are fast and repeatable on 2 cores."""

from __future__ import annotations

from icml2026.core.runner import limit_blas_threads

limit_blas_threads(1)
try:
    import torch
except ImportError:  # torch is an optional extra
    pass
else:
    torch.set_num_threads(1)
