"""Security of the Python tool and the tools (issue 19: each layer tried by a test)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icml2026.papers.sponge_tool_attack import (
    SandboxViolation,
    check_code,
    default_tools,
    run_sandboxed,
    safe_arithmetic,
)


def test_sandbox_computes_plain_python() -> None:
    assert run_sandboxed("x = [i * i for i in range(10)]\nsum(x)") == "285"  # closed form: sum of squares 0..9
    assert run_sandboxed("result = max(3, 7) - min(2, 5)") == "5"
    assert run_sandboxed("sqrt(16) + factorial(4)") == "28.0"


@pytest.mark.parametrize("code,what", [
    ("import os", "Import"),
    ("from os import system", "ImportFrom"),
    ("open('/etc/passwd').read()", "call"),
    ("__import__('socket')", "call"),
    ("().__class__.__bases__", "Attribute"),
    ("lambda: 1", "Lambda"),
    ("def f():\n    return 1", "FunctionDef"),
    ("x = _secret", "underscore"),
    ("exec('1')", "call"),
    ("getattr(1, 'real')", "call"),
])
def test_allow_list_rejects(code: str, what: str) -> None:
    with pytest.raises(SandboxViolation, match=what):
        check_code(code)
    assert run_sandboxed(code).startswith("error:")


def test_child_has_no_file_process_or_network_api_even_without_the_parent_check(tmp_path: Path) -> None:
    # the parent's allow-list is skipped: the child's own builtins table must still lack these
    target = tmp_path / "written.txt"
    assert "NameError" in run_sandboxed(f"open({str(target)!r}, 'w')", _skip_check=True)
    assert not target.exists()
    assert "NameError" in run_sandboxed("__import__('os').fork()", _skip_check=True)
    assert "NameError" in run_sandboxed("__import__('socket').create_connection(('127.0.0.1', 80))",
                                        _skip_check=True)
    assert "NameError" in run_sandboxed("eval('1')", _skip_check=True)


def test_time_limit() -> None:
    out = run_sandboxed("while True:\n    pass", cpu_s=1, wall_s=2.0)
    assert out.startswith("error:") and "time limit" in out


def test_memory_limit() -> None:
    assert run_sandboxed("x = [0] * (10 ** 9)", mem_mb=128) == "error: memory limit exceeded"


def test_output_is_truncated_and_recursion_is_contained() -> None:
    assert len(run_sandboxed("'a' * 100000")) <= 2000
    assert run_sandboxed("x = [[]]\nfor i in range(100000):\n    x = [x]\nstr(x)").startswith("error:")


def test_sandbox_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="cpu_s"):
        run_sandboxed("1", cpu_s=0)
    with pytest.raises(ValueError, match="mem_mb"):
        run_sandboxed("1", mem_mb=10**9)


def test_twelve_tools_with_unique_names() -> None:
    tools = default_tools()
    assert len(tools) == 12 and len({t.name for t in tools}) == 12
    assert all(t.description for t in tools)
    assert not any("web" in t.name or "http" in t.name for t in tools)  # no network tool


def test_tools_closed_forms() -> None:
    t = {tool.name: tool for tool in default_tools()}
    assert t["calculator"].run("50 - 12 * 3") == "14"
    assert t["unit_converter"].run("1 mi to km") == "1.6093"  # 1 mile = 1.609344 km exactly
    assert t["unit_converter"].run("10 kilometres to metres") == "10000"
    assert t["date_calculator"].run("2024-02-28 + 2 days") == "2024-03-01"  # leap year
    assert t["date_calculator"].run("days between 2024-01-01 and 2025-01-01") == "366"
    assert t["statistics"].run("median: 3, 1, 2") == "2"
    assert t["equation_checker"].run("2 * (3 + 4) = 14") == "true"
    assert t["verifier"].run("7 * 6 => 41") == "mismatch: 7 * 6 = 42"
    assert t["string_ops"].run("reverse: abc") == "cba"
    assert t["regex_extractor"].run("dates: from 2024-01-02 to 2024-03-04") == "2024-01-02, 2024-03-04"
    assert t["python"].run("sum(range(101))") == "5050"


def test_hostile_arguments_come_back_as_text(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = [f"__import__('os').system('touch {marker}')", "9 ** 9 ** 9", "1 / 0", "(" * 400, "",
               "x" * 5000, "\x00\x01", "{'a': 1}", "1e308 * 10"]
    for tool in default_tools():
        for arg in hostile:
            out = tool.run(arg)
            assert isinstance(out, str)
        assert tool.run(123).startswith("error:")  # type: ignore[arg-type]
    assert not marker.exists()
    assert default_tools()[0].run("9 ** 9 ** 9").startswith("error:")


def test_safe_arithmetic_rejects_non_arithmetic() -> None:
    assert safe_arithmetic("2 ** 10") == 1024.0
    for bad in ("abs(-1)", "a + 1", "[1][0]", "'1' + '2'", "True + 1"):
        with pytest.raises(ValueError):
            safe_arithmetic(bad)


def test_sandbox_leaves_no_process_behind() -> None:
    before = set(os.listdir("/proc"))
    run_sandboxed("while True:\n    pass", cpu_s=1, wall_s=1.0)
    after = set(os.listdir("/proc"))
    # any new pid must not be a python sandbox child still running
    for pid in sorted(after - before):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        assert b"RLIMIT_AS" not in cmd
