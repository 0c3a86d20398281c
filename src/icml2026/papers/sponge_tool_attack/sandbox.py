"""The Python tool's sandbox: an AST allow-list checked twice, run in a separate, resource-limited process.

Layers (each tried by a test):

1. The parent parses the code and rejects any node outside :data:`ALLOWED_NODES`, any attribute access,
   any name starting with ``_`` and any call whose callee is not a plain allowed name. There is no
   ``import``, no ``open``, no ``__import__``, no attribute access (so no ``().__class__`` escapes).
2. The child re-checks the same allow-list (the parent's check is not trusted) and executes with a
   builtins table holding only pure functions (:data:`SAFE_BUILTINS`): no file, process or network API
   exists in the namespace at all.
3. The child runs in its own session with ``RLIMIT_CPU`` (CPU seconds), ``RLIMIT_AS`` (address space),
   ``RLIMIT_FSIZE = 0`` (no file writes), ``RLIMIT_NPROC = 0`` (no fork, for non-root users) and a
   wall-clock deadline enforced by the parent, which kills the whole process group.

Every failure comes back as text (``"error: ..."``), never as an exception into the agent.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys

__all__ = ["ALLOWED_NODES", "SAFE_BUILTINS", "SandboxViolation", "check_code", "run_sandboxed"]

MAX_CODE_CHARS = 4000
MAX_RESULT_CHARS = 2000

ALLOWED_NODES: tuple[str, ...] = (
    "Module", "Expr", "Assign", "AugAssign", "Name", "Load", "Store", "Constant",
    "BinOp", "UnaryOp", "BoolOp", "Compare", "IfExp", "Call", "keyword",
    "List", "Tuple", "Set", "Dict", "Subscript", "Slice",
    "ListComp", "SetComp", "DictComp", "GeneratorExp", "comprehension",
    "For", "While", "If", "Break", "Continue", "Pass",
    "Add", "Sub", "Mult", "Div", "FloorDiv", "Mod", "Pow", "USub", "UAdd", "Not", "Invert",
    "And", "Or", "Eq", "NotEq", "Lt", "LtE", "Gt", "GtE", "In", "NotIn", "Is", "IsNot",
    "BitAnd", "BitOr", "BitXor", "LShift", "RShift",
)

# Pure functions only; math functions are exposed as plain names (no attribute access is allowed).
SAFE_BUILTINS: tuple[str, ...] = (
    "abs", "all", "any", "bool", "divmod", "enumerate", "float", "int", "len", "list", "max", "min",
    "pow", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip", "dict",
    "sqrt", "log", "exp", "floor", "ceil", "gcd", "factorial", "pi", "e",
)


class SandboxViolation(ValueError):
    """The code uses a construct outside the allow-list."""


def check_code(code: str) -> ast.Module:
    """Parse ``code`` and enforce the allow-list; raise :class:`SandboxViolation` naming the construct."""
    if not isinstance(code, str):
        raise SandboxViolation(f"code must be a string, got {type(code).__name__}")
    if not code.strip():
        raise SandboxViolation("code is empty")
    if len(code) > MAX_CODE_CHARS:
        raise SandboxViolation(f"code has {len(code)} characters; at most {MAX_CODE_CHARS} are allowed")
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError as exc:
        raise SandboxViolation(f"syntax error: {exc.msg}") from None
    for node in ast.walk(tree):
        kind = type(node).__name__
        if kind not in ALLOWED_NODES:
            raise SandboxViolation(f"{kind} is not allowed")
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            raise SandboxViolation(f"name {node.id!r} is not allowed (no underscore names)")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in SAFE_BUILTINS
        ):
            raise SandboxViolation("only calls of the allowed functions by plain name are allowed")
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
            raise SandboxViolation("bytes literals are not allowed")
    return tree


# The child program: it receives {"code", "cpu_s", "mem_mb", "check"} as JSON on stdin. It is run with
# ``python -I -S`` (isolated mode, no site), so nothing from the environment or site-packages is loaded.
_CHILD = r"""
import ast, json, math, resource, sys
req = json.loads(sys.stdin.read())
mem = int(req["mem_mb"]) * 2**20
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
resource.setrlimit(resource.RLIMIT_CPU, (int(req["cpu_s"]), int(req["cpu_s"]) + 1))
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
ALLOWED = set(req["allowed"]); SAFE = set(req["safe"])
def out(d):
    sys.stdout.write(json.dumps(d)); sys.stdout.flush()
try:
    tree = ast.parse(req["code"], mode="exec")
    if req["check"]:
        for node in ast.walk(tree):
            k = type(node).__name__
            if k not in ALLOWED: raise ValueError(k + " is not allowed")
            if isinstance(node, ast.Name) and node.id.startswith("_"): raise ValueError("underscore name")
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in SAFE):
                raise ValueError("call not allowed")
    import builtins
    table = {k: getattr(builtins, k) for k in SAFE if hasattr(builtins, k)}
    for k in ("sqrt", "log", "exp", "floor", "ceil", "gcd", "factorial", "pi", "e"):
        table[k] = getattr(math, k)
    env = {"__builtins__": table}
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<tool>", "exec"), env)
    if last is not None:
        value = eval(compile(last, "<tool>", "eval"), env)
    else:
        value = env.get("result")
    out({"ok": True, "result": repr(value)[: int(req["max_chars"])]})
except MemoryError:
    out({"ok": False, "error": "memory limit exceeded"})
except RecursionError:
    out({"ok": False, "error": "recursion limit exceeded"})
except BaseException as exc:
    out({"ok": False, "error": type(exc).__name__ + ": " + str(exc)[:300]})
"""


def run_sandboxed(
    code: str, *, cpu_s: int = 2, mem_mb: int = 256, wall_s: float = 5.0, _skip_check: bool = False
) -> str:
    """Evaluate ``code`` in the sandbox; the value of its last expression (or of ``result``) as text.

    Returns ``"error: ..."`` for any violation, exception, time-out or memory overrun. ``_skip_check``
    skips the parent's allow-list check only (tests use it to show the child's own layers hold).
    """
    if not (isinstance(cpu_s, int) and 1 <= cpu_s <= 60):
        raise ValueError(f"cpu_s must be an integer in [1, 60], got {cpu_s!r}")
    if not (isinstance(mem_mb, int) and 32 <= mem_mb <= 4096):
        raise ValueError(f"mem_mb must be an integer in [32, 4096], got {mem_mb!r}")
    if not (isinstance(wall_s, (int, float)) and 0 < wall_s <= 120):
        raise ValueError(f"wall_s must be in (0, 120], got {wall_s!r}")
    if not _skip_check:
        try:
            check_code(code)
        except SandboxViolation as exc:
            return f"error: {exc}"
    req = json.dumps({
        "code": code, "cpu_s": cpu_s, "mem_mb": mem_mb, "check": True, "max_chars": MAX_RESULT_CHARS,
        "allowed": list(ALLOWED_NODES), "safe": list(SAFE_BUILTINS),
    })
    if _skip_check:
        req = json.dumps({**json.loads(req), "check": False})
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _CHILD],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True, cwd="/", env={}, close_fds=True,
    )
    try:
        stdout, _ = proc.communicate(req.encode(), timeout=wall_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return "error: wall-clock time limit exceeded"
    if proc.returncode is not None and proc.returncode < 0:
        sig = -proc.returncode
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return "error: CPU time limit exceeded"
        return f"error: sandbox process killed by signal {sig}"
    try:
        data = json.loads(stdout.decode() or "{}")
    except (ValueError, UnicodeDecodeError):
        return "error: sandbox returned no result"
    if not isinstance(data, dict) or "ok" not in data:
        return "error: sandbox returned no result"
    return str(data["result"]) if data["ok"] else f"error: {data['error']}"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
