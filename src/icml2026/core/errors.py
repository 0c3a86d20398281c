"""Errors, exit statuses and the one-line messages that the command line and sweeps share.

Exit status of a run: 0 reproduced, 1 not reproduced, 4 undecided (a precondition failed), 2 bad arguments
or input, 3 an internal error or a missing dependency or system tool. Of several runs, the worst counts, in
the order 0 < 4 < 1 < 2 < 3 (:func:`worst_status`).
"""

from __future__ import annotations

import errno
import shutil

__all__ = [
    "MissingDependency",
    "BadInput",
    "require_tool",
    "require_module",
    "classify_exception",
    "one_line",
    "worst_status",
    "status_of_verdict",
    "EXIT_OK",
    "EXIT_FAILED",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "EXIT_UNDECIDED",
]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_UNDECIDED = 0, 1, 2, 3, 4
#: How bad each status is: an error outranks any verdict, and a claim that fails outranks one left undecided.
_SEVERITY = {EXIT_OK: 0, EXIT_UNDECIDED: 1, EXIT_FAILED: 2, EXIT_BAD_INPUT: 3, EXIT_INTERNAL: 4}


def worst_status(*codes: int) -> int:
    """The worst of exit statuses (``0 < 4 < 1 < 2 < 3``); an unknown status counts as an internal error."""
    return max(codes, key=lambda c: _SEVERITY.get(c, 5), default=EXIT_OK)


def status_of_verdict(verdict: str) -> int:
    """0 for ``reproduced``, 1 for ``not reproduced``, 4 for ``undecided``."""
    try:
        return {"reproduced": EXIT_OK, "not reproduced": EXIT_FAILED, "undecided": EXIT_UNDECIDED}[verdict]
    except KeyError:
        raise ValueError(f"unknown verdict {verdict!r}") from None


class BadInput(Exception):
    """Bad arguments or input: reported as one line, exit status 2."""


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


def one_line(exc: BaseException, limit: int = 400) -> str:
    """The exception's message on one line, at most ``limit`` characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def classify_exception(exc: BaseException, where: str) -> tuple[int, str]:
    """(exit status, one-line message) for an exception raised while running ``where``."""
    if isinstance(exc, BadInput):
        return EXIT_BAD_INPUT, f"{where}: {one_line(exc)}"
    if isinstance(exc, MissingDependency):
        return EXIT_INTERNAL, f"{where}: missing dependency: {exc}"
    if isinstance(exc, ModuleNotFoundError) and exc.name and not exc.name.startswith("icml2026"):
        slug = where.split(".", 1)[0]
        return EXIT_INTERNAL, (f"{where}: the Python package {exc.name.split('.')[0]!r} is not installed: "
                               f"pip install 'icml2026[{slug}]'")
    if isinstance(exc, MemoryError):
        return EXIT_INTERNAL, f"{where}: out of memory (try smaller sizes with --set, or a smaller preset)"
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return EXIT_INTERNAL, f"{where}: no space left on the device while writing ({one_line(exc)})"
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
        return EXIT_BAD_INPUT, f"{where}: cannot write: {one_line(exc)}"
    return EXIT_INTERNAL, (f"{where}: internal error: {type(exc).__name__}: {one_line(exc)} "
                           "(rerun with --debug for the traceback)")
