"""Where torch experiments run: a config field ``device`` ("cpu" by default) resolved here.

``icml2026 run --device cuda`` sets the field for experiments that have one; an experiment without it runs on
the CPU only and the option is refused for it (exit 2). Asking for a device this machine lacks is a missing
dependency (exit 3) that says what is needed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .errors import MissingDependency

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["DEVICE_RE", "check_device_name", "check_workers", "resolve_device"]

#: cpu, cuda, cuda:<index> or mps (the meta device is refused: it carries shapes, not numbers).
DEVICE_RE = re.compile(r"^(cpu|cuda(:\d{1,2})?|mps)$")


def check_device_name(name: str) -> str:
    """``name`` if it is a device name torch understands here, else ValueError naming the valid ones."""
    if not isinstance(name, str) or not DEVICE_RE.match(name):
        # the meta device carries shapes only: no experiment can compute a number there
        raise ValueError(f"device = {name!r}: must be cpu, cuda, cuda:<n> or mps")
    return name


def check_workers(workers: int, device: str) -> int:
    """``workers`` if valid with ``device``: processes running seeds side by side are a CPU feature (each holds
    its own copy of the models), so more than one needs ``device == "cpu"``; else ValueError."""
    if workers > 1 and device != "cpu":
        raise ValueError(
            f"workers = {workers}: side-by-side seeds run on the CPU only (device = {device!r}); "
            "use workers = 1 on an accelerator"
        )
    return workers


def resolve_device(name: str) -> torch.device:
    """The ``torch.device`` for ``name``; :class:`MissingDependency` if this machine does not have it."""
    import torch

    check_device_name(name)
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise MissingDependency(
                "a CUDA device",
                "run on a GPU machine with the CUDA build of torch (see README, Installing), or use --device cpu",
            )
        index = int(name.split(":")[1]) if ":" in name else 0
        if index >= torch.cuda.device_count():
            raise MissingDependency(f"CUDA device {index}", f"this machine has {torch.cuda.device_count()}")
    if name == "mps" and not torch.backends.mps.is_available():
        raise MissingDependency("an MPS device", "run on Apple silicon, or use --device cpu")
    return torch.device(name)
