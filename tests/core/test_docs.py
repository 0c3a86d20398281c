"""The documentation site builds with mkdocs in strict mode (every warning an error) and holds every paper."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_docs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    res = subprocess.run([sys.executable, str(ROOT / "docs" / "build.py"), "--out", str(tmp_path / "site")],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    site = tmp_path / "site"
    slugs = [d.name for d in (ROOT / "src" / "icml2026" / "papers").iterdir() if (d / "README.md").is_file()]
    for slug in slugs:
        assert (site / "papers" / f"{slug}.html").is_file(), slug
        api = (site / "api" / f"{slug}.html").read_text()
        assert "doc-function" in api or "doc-class" in api, f"{slug}: the API page documents nothing"
    assert "Exit status" in (site / "index.html").read_text()
    assert "icml2026 sweep" in (site / "cli.html").read_text()
    # Sphinx roles in docstrings (``:func:`check_model_path```) are links on the site, never raw text: the
    # loaders' summary table links to check_model_path's entry on the same page
    assert 'href="#icml2026.core.loaders.check_model_path"' in (site / "api" / "core.html").read_text()
    for page in sorted((site / "api").glob("*.html")):
        text = page.read_text()
        assert ":func:`" not in text and ":class:`" not in text, page.name

