"""``icml2026 report --html``: a static site over the run folders, readable straight from the file system.

Pages: ``index.html`` (every experiment, preset and override set, seeds aggregated), one page per paper (its
card, rendered from the card's Markdown, and its experiments) and one page per experiment group (claim, the
paper's figure beside ours for every check, pass counts over seeds, metric summaries with bootstrap
intervals, config, and every seed's figures inline). No JavaScript, no resource from outside: styles are
inline, figures are copied next to the pages. Every string from a run folder is HTML-escaped; links in a
card that would not resolve inside the site are turned into plain text.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .report import (
    GroupKey,
    RunRecord,
    Skipped,
    _fmt,
    _is_real_dir,
    _is_regular_file,
    check_summaries,
    collect_runs,
    group_runs,
    group_verdict,
    metric_summaries,
)

__all__ = ["write_site"]

_STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;
color:#1d1d1f;line-height:1.45}
table{border-collapse:collapse;margin:1rem 0;font-size:.92rem}th,td{border:1px solid #ccc;padding:.3rem .5rem;
vertical-align:top;text-align:left}th{background:#f3f3f3}
.pass{color:#0a7a2f;font-weight:600}.fail{color:#b3261e;font-weight:600}.some{color:#a15c00;font-weight:600}
.undecided{color:#555;font-weight:600;font-style:italic}
img{max-width:100%;border:1px solid #ddd;margin:.3rem 0}code,pre{background:#f6f6f6;padding:.1rem .3rem}
nav a{margin-right:1rem}.figs{display:flex;flex-wrap:wrap;gap:1rem}.figs figure{margin:0;max-width:34rem}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _page(title: str, body: str, depth_links: str = "") -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<style>{_STYLE}</style></head><body><nav><a href=\"index.html\">index</a>{depth_links}</nav>\n"
            f"{body}\n</body></html>\n")


def _slug_page(slug: str) -> str:
    return f"paper-{slug}.html"


def _group_page(key: GroupKey) -> str:
    exp, _, preset, h = key
    return f"exp-{exp}-{preset}" + (f"-{h}" if h else "") + ".html"


def _card_html(card: Path | None, known: set[str]) -> str:
    """The card's Markdown as HTML; links and images that do not resolve inside the site become text."""
    if card is None or not _is_regular_file(card):
        return "<p>(no paper card)</p>"
    import markdown

    text = card.read_text(encoding="utf-8")
    out = markdown.markdown(text, extensions=["tables", "fenced_code"], output_format="html")

    def fix_link(m: re.Match[str]) -> str:
        href, inner = m.group(1), m.group(2)
        if href.startswith(("http://", "https://")) or href in known or href.startswith("#"):
            return f'<a href="{href}">{inner}</a>'
        return f"<span>{inner}</span>"

    out = re.sub(r'<a href="([^"]*)">(.*?)</a>', fix_link, out, flags=re.S)
    out = re.sub(r"<img [^>]*>", "", out)  # card images are not part of the site
    return out


def _cards() -> dict[str, Path]:
    from .catalog import paper_dirs

    return {slug: d / "README.md" for slug, d in paper_dirs().items()}


def _verdict_html(verdict: str) -> str:
    cls = {"reproduced": "pass", "not reproduced": "fail"}.get(verdict, "undecided")
    return f'<span class="{cls}">{_e(verdict)}</span>'


def _mark(k: int, n: int) -> str:
    if k == n:
        return f'<span class="pass">✓ {k}/{n}</span>' if n > 1 else '<span class="pass">✓</span>'
    if k == 0:
        return f'<span class="fail">✗ {k}/{n}</span>' if n > 1 else '<span class="fail">✗</span>'
    return f'<span class="some">{k}/{n}</span>'


def _value(s: dict[str, Any], n: int) -> str:
    if n == 1:
        return _e(_fmt(s["mean"]))
    return (f"{_e(_fmt(s['mean']))} ± {_e(_fmt(s['sd']))}<br><small>95% CI [{_e(_fmt(s['ci95'][0]))}, "
            f"{_e(_fmt(s['ci95'][1]))}]</small>")


def _group_body(key: GroupKey, group: list[RunRecord], figs: dict[tuple[str, str], list[str]]) -> str:
    first = group[0]
    exp = key[0]
    slug = exp.split(".", 1)[0]
    over = first.results.get("overrides") or {}
    parts = [f"<h1>{_e(exp)} <small>({_e(key[2])}, {len(group)} seed(s))</small></h1>",
             f"<p><a href=\"{_slug_page(slug)}\">paper: {_e(slug)}</a></p>",
             f"<p><b>Claim.</b> {_e(first.results['claim'])}</p>"]
    if over:
        parts.append("<p><b>Overrides:</b> " + ", ".join(f"<code>{_e(k)}={_e(_fmt(v))}</code>" for k, v in over.items())
                     + "</p>")
    verdict, counts = group_verdict(group)
    parts.append(f"<p><b>Verdict:</b> {_verdict_html(verdict)} <small>("
                 + ", ".join(f"{n} {_e(v)}" for v, n in counts.items() if n) + ")</small></p>")
    parts.append("<h2>Checks</h2><table><tr><th>check</th><th>role</th><th>ours</th><th>target</th><th>paper</th>"
                 "<th>passed</th><th>failed on seeds</th><th>power / false-positive rate</th></tr>")
    for row in check_summaries(group):
        parts.append(f"<tr><td>{_e(row['name'])}</td><td>{_e(row['role'])}</td>"
                     f"<td>{_value(row['summary'], row['n'])}</td>"
                     f"<td><code>{_e(row['target'])}</code></td><td>{_e(_fmt(row['paper']))}</td>"
                     f"<td>{_mark(row['passed'], row['n'])}</td>"
                     f"<td>{_e(', '.join(map(str, row['failed'])) or '-')}</td><td>{_e(row['power'])}</td></tr>")
    parts.append("</table><h2>Metrics</h2><table><tr><th>metric</th><th>mean ± sd</th><th>min</th><th>max</th>"
                 "<th>n</th></tr>")
    for k, s in metric_summaries(group).items():
        parts.append(f"<tr><td>{_e(k)}</td><td>{_value(s, s['n'])}</td><td>{_e(_fmt(s['min']))}</td>"
                     f"<td>{_e(_fmt(s['max']))}</td><td>{s['n']}</td></tr>")
    parts.append("</table><h2>Config</h2><table><tr><th>key</th><th>value</th></tr>")
    for k, v in first.results["config"].items():
        parts.append(f"<tr><td>{_e(k)}</td><td>{_e(_fmt(v))}</td></tr>")
    parts.append("</table><h2>Runs</h2>")
    for r in group:
        parts.append(f"<h3>seed {r.seed}: {_verdict_html(r.verdict)}</h3><div class=\"figs\">")
        for src in figs.get((exp, r.folder.name), []):
            parts.append(f'<figure><img src="{_e(src)}" alt="{_e(Path(src).name)}">'
                         f"<figcaption>{_e(Path(src).name)}</figcaption></figure>")
        parts.append("</div>")
    return "\n".join(parts)


def write_site(runs: Path, out: Path) -> tuple[Path, list[Skipped]]:
    """Build the site in ``out`` (replaced atomically) from the run folders in ``runs``; return its index."""
    runs, out = Path(runs), Path(out)
    records, skipped = collect_runs(runs)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        figs: dict[tuple[str, str], list[str]] = {}
        for r in records:
            for name in r.results.get("figures", []):
                src = r.folder / name
                if re.fullmatch(r"[A-Za-z0-9_.-]+\.png", name) and _is_regular_file(src):
                    rel = f"figures/{r.experiment}/{r.folder.name}/{name}"
                    (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                    with open(src, "rb") as a, open(tmp / rel, "xb") as b:
                        shutil.copyfileobj(a, b)
                    figs.setdefault((r.experiment, r.folder.name), []).append(rel)
                else:
                    skipped.append(Skipped(src, "figure is missing or not a regular file (links are not followed)"))
        groups = group_runs(records)
        cards = _cards()
        slugs = sorted(set(cards) | {k[0].split(".", 1)[0] for k in groups})
        known = {"index.html", *(_slug_page(s) for s in slugs)}
        rows = []
        for key, group in groups.items():
            page = _group_page(key)
            (tmp / page).write_text(_page(key[0], _group_body(key, group, figs)), encoding="utf-8")
            verdict, counts = group_verdict(group)
            checks = "<br>".join(f"{_mark(c['passed'], c['n'])} "
                                 + ("" if c["role"] == "claim" else f"<i>{_e(c['role'])}</i> ")
                                 + f"{_e(c['name'])} = {_value(c['summary'], c['n'])} "
                                 f"(<code>{_e(c['target'])}</code>)"
                                 + (f" <small>{_e(c['power'])}</small>" if c["power"] != "-" else "")
                                 + (f" [paper: {_e(_fmt(c['paper']))}]" if c["paper"] else "")
                                 for c in check_summaries(group))
            seeds_note = (" <small>(" + ", ".join(f"{k}/{len(group)} {_e(v)}" for v, k in counts.items() if k)
                          + ")</small>") if len(group) > 1 else ""
            slug = key[0].split(".", 1)[0]
            preset = _e(key[2]) + (f" <small>(overrides {_e(key[3])})</small>" if key[3] else "")
            rows.append(f"<tr><td><a href=\"{_slug_page(slug)}\">{_e(slug)}</a></td><td><a href=\"{page}\">"
                        f"{_e(key[0].split('.', 1)[1])}</a></td><td>{preset}</td>"
                        f"<td>{_e(', '.join(str(r.seed) for r in group))}</td>"
                        f"<td>{_e(group[0].results['claim'])}</td><td>{checks}</td>"
                        f"<td>{_verdict_html(verdict)}{seeds_note}</td></tr>")
        for slug in slugs:
            exps = [key for key in groups if key[0].split(".", 1)[0] == slug]
            body = [f"<h1>{_e(slug)}</h1>", "<h2>Experiments</h2><ul>"]
            body += [f"<li><a href=\"{_group_page(key)}\">{_e(key[0])} ({_e(key[2])}"
                     + (f", overrides {_e(key[3])}" if key[3] else "") + f", {len(groups[key])} seed(s))</a></li>"
                     for key in exps] or ["<li>no runs</li>"]
            body += ["</ul><h2>Paper card</h2>", _card_html(cards.get(slug), known)]
            (tmp / _slug_page(slug)).write_text(_page(slug, "\n".join(body)), encoding="utf-8")
        skipped_html = "".join(f"<li><code>{_e(s.path)}</code>: {_e(s.reason)}</li>" for s in skipped)
        index = ["<h1>icml2026 reproduction report</h1>",
                 "<p>One row per experiment, preset and override set; several seeds aggregated (mean ± sample "
                 "standard deviation, bootstrap 95% interval, seeds passing each check). Verdicts are recomputed "
                 "from each check's value, target and role: <b>reproduced</b> (every precondition and claim "
                 "passes), <b>not reproduced</b> (preconditions pass, a claim fails), <b>undecided</b> (a "
                 "precondition fails: the claims are shown, not counted). Preconditions and controls are in "
                 "italics; a comparative claim shows its power and false-positive rate.</p>",
                 "<p>Papers: " + " ".join(f"<a href=\"{_slug_page(s)}\">{_e(s)}</a>" for s in slugs) + "</p>",
                 "<table><tr><th>paper</th><th>experiment</th><th>preset</th><th>seeds</th><th>claim</th>"
                 "<th>checks: ours (target) [paper]</th><th>verdict</th></tr>", *rows, "</table>"]
        if skipped_html:
            index.append(f"<h2>Skipped</h2><ul>{skipped_html}</ul>")
        (tmp / "index.html").write_text(_page("icml2026 report", "\n".join(index)), encoding="utf-8")
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o777 & ~mask)
        old = None
        if os.path.lexists(out):
            if not _is_real_dir(out):
                os.unlink(out)  # a planted link: remove the link, never its target
            else:
                old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
                os.rename(out, old / "x")
        os.rename(tmp, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out / "index.html", skipped
