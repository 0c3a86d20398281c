"""Errors the command line maps to exit status 3 with one line that says what to install."""

from __future__ import annotations

import shutil

__all__ = ["MissingDependency", "require_tool", "require_module"]


class MissingDependency(RuntimeError):
    """A Python package or system tool is missing; ``install`` is the command that provides it."""

    def __init__(self, what: str, install: str) -> None:
        super().__init__(f"{what} is not installed: {install}")
        self.what, self.install = what, install


def require_tool(name: str, *, apt: str | None = None) -> str:
    """The path of the executable ``name``; :class:`MissingDependency` (naming the Debian package) if absent."""
    path = shutil.which(name)
    if path is None:
        raise MissingDependency(f"the system tool {name!r}", f"apt-get install {apt or name}")
    return path


def require_module(module: str, extra: str) -> None:
    """Import-check ``module``; :class:`MissingDependency` naming ``pip install 'icml2026[extra]'`` if absent."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingDependency(f"the Python package {module!r}", f"pip install 'icml2026[{extra}]'")
