"""Replace a folder so that a crash at any moment leaves either the old or the new one in place.

The runner (run folders), the report (one folder per experiment) and the HTML site all write a complete new
folder beside the old one and then put it in place. Two renames (old aside, new in) leave a moment with no
folder at all; on Linux the two are swapped in one step instead (``renameat2`` with ``RENAME_EXCHANGE``), and
where the system cannot (another OS, a file system without it) the old folder is moved aside under a name that
:func:`restore_interrupted` recognises and puts back.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import shutil
import stat
import time
from pathlib import Path

__all__ = ["exchange_paths", "replace_dir", "restore_interrupted", "old_name", "is_real_dir"]

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _libc() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    return lib if hasattr(lib, "renameat2") else None


_LIBC = _libc()


def exchange_paths(a: Path, b: Path) -> bool:
    """Swap two existing paths in one atomic step; ``False`` (nothing changed) where the system cannot."""
    if _LIBC is None:
        return False
    res = _LIBC.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if res == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False  # not supported here (file system, kernel, sandbox): the caller falls back
    raise OSError(err, os.strerror(err), str(a))


def old_name(final: Path) -> Path:
    """Where the fallback moves an old ``final`` aside: ``.<name>.old-<pid>-<ns>`` beside it."""
    return final.with_name(f".{final.name}.old-{os.getpid()}-{time.monotonic_ns()}")


def is_real_dir(p: Path) -> bool:
    """A folder that is not a symbolic link."""
    try:
        return stat.S_ISDIR(os.lstat(p).st_mode)
    except OSError:
        return False


def replace_dir(tmp: Path, final: Path) -> None:
    """Put the folder ``tmp`` at ``final``; an old ``final`` (a folder) is replaced and then deleted.

    Raises ``OSError`` (``EEXIST``) when ``final`` is a symbolic link or a file: neither is replaced. On any
    failure ``final`` is left as it was and ``tmp`` is left for the caller to remove.
    """
    if os.path.lexists(final) and not is_real_dir(final):
        kind = "a symbolic link" if os.path.islink(final) else "not a folder"
        raise OSError(errno.EEXIST, f"{final} is {kind}; refusing to replace it")
    if not os.path.lexists(final):
        os.rename(tmp, final)
        return
    if exchange_paths(tmp, final):
        shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the old folder
        return
    old = old_name(final)
    os.rename(final, old)
    try:
        os.rename(tmp, final)
    except BaseException:
        os.rename(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


def restore_interrupted(final: Path) -> bool:
    """Put back an old ``final`` that the two-rename fallback moved aside when the process died before the
    new folder was in place (``final`` missing, ``.<name>.old-<pid>-*`` present). Returns whether it did."""
    if os.path.lexists(final):
        return False
    prefix = f".{final.name}.old-"
    olds = sorted((e for e in final.parent.iterdir() if e.name.startswith(prefix) and is_real_dir(e)),
                  key=lambda e: (e.stat().st_mtime_ns, e.name))
    if not olds:
        return False
    os.rename(olds[-1], final)
    return True
