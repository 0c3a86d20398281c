"""The HTML report, opened in a real headless Chromium from the file system with the network cut off."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from icml2026.cli import main
from icml2026.core import registry, runner
from tests.core.conftest import QUICK


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine (make test installs Debian's chromium where apt-get works)")


def _build(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    exp = registry.get_experiment("toy.passes")
    for seed in (0, 1):
        runner.run_experiment(exp, QUICK, preset="quick", seed=seed, out=runs)
    runner.run_experiment(registry.get_experiment("toy.fails"), QUICK, preset="quick", seed=0, out=runs)
    res = runs / "toy.fails" / "quick-seed0" / "results.json"
    data = json.loads(res.read_text())
    data["claim"] = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"
    res.write_text(json.dumps(data))
    assert main(["report", "--runs", str(runs), "--out", str(tmp_path / "reports"), "--html"]) == 0
    return tmp_path / "reports" / "html"


def test_site_pages_escape_run_data(toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    site = _build(tmp_path)
    capsys.readouterr()
    for page in site.glob("*.html"):
        text = page.read_text()
        assert "<script" not in text and "onerror=alert" not in text.replace("onerror=alert(1)&gt;", "")
        assert 'src="http' not in text and "<link" not in text  # no resource from outside
    index = (site / "index.html").read_text()
    assert "toy.passes".split(".")[1] in index and "2/2" in index


def test_site_in_a_headless_browser(toy_registry: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    exe = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api")
    site = _build(tmp_path)
    capsys.readouterr()
    pages = sorted(site.glob("*.html"))
    assert len(pages) >= 3
    broken: list[str] = []
    outside: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        ctx = browser.new_context(java_script_enabled=True)

        def route(r):  # type: ignore[no-untyped-def]
            if r.request.url.startswith("file://"):
                r.continue_()
            else:
                outside.append(r.request.url)
                r.abort()

        ctx.route("**/*", route)
        page = ctx.new_page()
        for p in pages:
            page.goto(p.as_uri())
            assert page.title() != "pwned"
            text = page.text_content("body") or ""
            if "&amp;" in text or "&gt;" in text or "&lt;" in text:  # escaped twice: the entity shows as text
                broken.append(f"{p.name}: an HTML entity is visible in the rendered text")
            images = page.eval_on_selector_all("img", "els => els.map(e => [e.src, e.complete && e.naturalWidth > 0])")
            for src, ok in images:
                if not ok:
                    broken.append(f"{p.name}: image {src}")
            for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
                u = urlparse(href)
                if u.scheme == "file" and not Path(unquote(u.path)).is_file():
                    broken.append(f"{p.name}: link {href}")
        page.goto((site / "index.html").as_uri())
        shot = tmp_path / "index.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert not broken, broken
    assert not outside, outside
    assert shot.stat().st_size > 5000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
