"""The HTML report's front page (one row per paper, its verdict at our scale) and escaping done exactly once."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from icml2026.cli import main
from icml2026.core import html_report, registry, runner
from icml2026.core.outcome import Check, Outcome
from icml2026.core.report import collect_runs, group_runs
from tests.core.conftest import QUICK
from tests.core.test_html_report import _chromium

TARGET = ">= 2000"
PAPER = "R&D: >= 2000 <b>x</b> (a_b)"  # HTML and Markdown specials: shown as written, escaped once in the source


def _undecided(cfg: object, rng: np.random.Generator) -> Outcome:
    return Outcome(metrics={"acc": 0.3}, checks=[
        Check("base_task_learned", 0.3, ">= 0.9", role="precondition"),
        Check("gap", 0.2, ">= 0.1", paper="0.25", comparative=True, power=0.9, false_positive_rate=0.1)])


def _edit(path: Path, change: object) -> None:
    data = json.loads(path.read_text())
    change(data)  # type: ignore[operator]
    path.write_text(json.dumps(data))


@pytest.fixture()
def site(toy_registry: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture) -> Path:
    """Three papers: toy (full fails, quick passes; a check with HTML specials), other (runs before roles),
    third (a failed precondition, a comparative claim with power); cards with HTML in their first heading."""
    registry.experiment("third.gap", claim="a gap between two arms", presets=toy_registry["toy.passes"].presets)(
        _undecided)
    runs = tmp_path / "runs"
    for seed in (0, 1):
        runner.run_experiment(toy_registry["toy.passes"], QUICK, preset="quick", seed=seed, out=runs)
    full = runner.run_experiment(toy_registry["toy.passes"], QUICK, preset="full", seed=0, out=runs).path
    _edit(full / "results.json", lambda d: d["checks"][0].update(target="< 0"))  # fails at full scale only
    planted = runner.run_experiment(toy_registry["toy.passes"], QUICK, preset="planted", seed=0, out=runs).path
    _edit(planted / "results.json", lambda d: d["checks"][0].update(target="< 0"))  # a control run: never counted
    fails = runner.run_experiment(toy_registry["toy.fails"], QUICK, preset="quick", seed=0, out=runs).path

    def specials(d: dict) -> None:
        d["checks"][0].update(target=TARGET, paper=PAPER)
        d["config"]["label"] = "a_b & <c>"

    _edit(fails / "results.json", specials)
    old = runner.run_experiment(toy_registry["other.passes"], QUICK, preset="quick", seed=0, out=runs).path
    _edit(old / "results.json", lambda d: [c.pop("role") for c in d["checks"]])
    runner.run_experiment(toy_registry["third.gap"], QUICK, preset="quick", seed=0, out=runs)
    cards = {}
    for slug, title in (("toy", "Toy & co: <b>bold</b> `code`"), ("other", "Other paper"), ("third", "Third")):
        cards[slug] = tmp_path / "cards" / slug / "README.md"
        cards[slug].parent.mkdir(parents=True)
        cards[slug].write_text(f"# {title}\n\nBody.\n")
    monkeypatch.setattr(html_report, "_cards", lambda: cards)
    assert main(["report", "--runs", str(runs), "--out", str(tmp_path / "reports"), "--html"]) == 0
    capsys.readouterr()
    return tmp_path / "reports" / "html"


def _front_rows(index: str) -> dict[str, str]:
    rows = re.findall(r'<tr class="paper">(.*?)</tr>\n', index, flags=re.S)
    return {re.search(r'href="paper-([a-z_]+)\.html"', r).group(1): r for r in rows}  # type: ignore[union-attr]


def test_front_page_has_one_row_per_paper_with_its_verdict_at_our_scale(site: Path) -> None:
    index = (site / "index.html").read_text()
    assert index.index('class="front"') < index.index("Every experiment, preset and override set")
    rows = _front_rows(index)
    assert list(rows) == ["other", "third", "toy"]
    toy, other, third = rows["toy"], rows["other"], rows["third"]
    assert "Toy &amp; co: &lt;b&gt;bold&lt;/b&gt; code" in toy  # the card's first heading, escaped once
    # toy.passes: full (fails) outranks quick (passes, 2 seeds); the planted run never counts
    entry = next(e for e in toy.split('<div class="exp">') if "passes</a>" in e)
    assert entry.startswith('<div><span class="fail">not reproduced</span></div>')
    assert "(full, 1 seed)" in entry and "also quick, 2 seeds: <span class=\"pass\">reproduced</span>" in entry
    assert "planted" not in toy
    assert "1 <span class=\"fail\">not reproduced</span>" not in toy  # two experiments, both not reproduced
    assert "2 <span class=\"fail\">not reproduced</span>" in toy
    # third.gap: a failed precondition makes it undecided; its comparative claim shows power and FPR
    assert '<span class="undecided">undecided</span>' in third
    assert "preconditions: 0/1" in third and "failed: base_task_learned" in third
    assert "gap: power 0.9, FPR 0.1" in third and "<td>0.25</td>" in third
    # other.passes: recorded before roles -> marked, with the Markdown index's footnote
    assert '<span class="pass">reproduced</span>' in other and "†" in other and "†" not in third
    assert "† 1 experiment(s) hold runs recorded before checks had roles" in index
    md_index = (site.parent / "index.md").read_text()
    assert "hold runs recorded before checks had roles" in md_index


def test_run_data_is_escaped_exactly_once(site: Path) -> None:
    pages = {p.name: p.read_text() for p in site.glob("*.html")}
    once_target, once_paper = "&gt;= 2000", "R&amp;D: &gt;= 2000 &lt;b&gt;x&lt;/b&gt; (a_b)"
    group = pages["exp-toy.fails-quick.html"]
    assert once_target in group and once_paper in group and "a_b &amp; &lt;c&gt;" in group
    assert once_paper in pages["index.html"] and once_target in pages["index.html"]
    for name, text in pages.items():
        assert "&amp;gt;" not in text and "&amp;lt;" not in text and "&amp;amp;" not in text, name
        assert "a\\_b" not in text, name  # no Markdown escapes in HTML


def test_headline_group_is_the_largest_scale_preset_without_overrides() -> None:
    def key(exp: str, preset: str, h: str = "") -> tuple[str, int, str, str]:
        return (exp, {"paper": 0, "full": 1, "quick": 2, "smoke": 3}.get(preset, 9), preset, h)

    keys = (key("a.x", "quick"), key("a.x", "full", "ab12"), key("a.x", "smoke"), key("a.x", "planted"),
            key("b.y", "null"), key("b.y", "planted"), key("c.z", "card"), key("c.z", "smoke"),
            key("d.w", "full", "ff00"), key("e.v", "paper"), key("e.v", "full"))
    groups: dict[tuple[str, int, str, str], list[Any]] = {k: [] for k in keys}
    heads = html_report.headline_groups(groups)
    assert heads == {"a.x": key("a.x", "quick"), "c.z": key("c.z", "smoke"), "d.w": key("d.w", "full", "ff00"),
                     "e.v": key("e.v", "paper")}


def test_headline_groups_of_real_runs(site: Path) -> None:
    records, _ = collect_runs(site.parent.parent / "runs")
    heads = html_report.headline_groups(group_runs(records))
    assert {e: k[2] for e, k in heads.items()} == {"toy.passes": "full", "toy.fails": "quick",
                                                   "other.passes": "quick", "third.gap": "quick"}


def test_front_page_in_a_headless_browser(site: Path) -> None:
    exe = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        ctx = browser.new_context(java_script_enabled=True)
        ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
        page = ctx.new_page()
        page.goto((site / "index.html").as_uri())
        rows = page.eval_on_selector_all("table.front > tbody > tr.paper",
                                         "els => els.map(e => e.querySelector('a').textContent)")
        assert rows == ["other", "third", "toy"]
        styled = page.eval_on_selector_all(
            "table.front span.pass, table.front span.fail, table.front span.undecided",
            "els => els.map(e => { const s = getComputedStyle(e);"
            " return [e.textContent, s.color, s.fontWeight]; })")
        words = [(text, colour, weight) for text, colour, weight in styled if not text.startswith(("✓", "✗"))]
        colours = {text: {c for t, c, _ in words if t == text} for text, _, _ in words}
        assert set(colours) == {"reproduced", "not reproduced", "undecided"}
        assert all(len(c) == 1 for c in colours.values())  # one colour per verdict word ...
        assert len({c for cs in colours.values() for c in cs}) == 3  # ... and its own
        assert all(int(weight) >= 600 for _, _, weight in words)
        for name in ("index.html", "exp-toy.fails-quick.html"):
            page.goto((site / name).as_uri())
            for text in (page.text_content("body") or "", page.inner_text("body")):
                assert "&amp;" not in text and "&gt;" not in text and "&lt;" not in text, name
                assert "\\_" not in text, name
            body = page.text_content("body") or ""
            assert TARGET in body and PAPER in body, name
        page.goto((site / "index.html").as_uri())
        assert PAPER not in page.inner_text("table.front")  # inside a closed <details> ...
        page.click("tr.paper:has(a[href='paper-toy.html']) details:has-text('the paper gives a figure for 1')"
                   " summary")
        assert PAPER in page.inner_text("table.front")  # ... and shown when it is opened, without script
        assert page.title() == "icml2026 report"
        browser.close()
