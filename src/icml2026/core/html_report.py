"""``icml2026 report --html``: a static site over the run folders, readable straight from the file system.

Pages: ``index.html`` (a front page with one row per paper, then every experiment, preset and override set,
seeds aggregated), one page per paper (its card, rendered from the card's Markdown, and its experiments) and one
page per experiment group (claim, the paper's figure beside ours for every check, pass counts over seeds,
metric summaries with bootstrap intervals, config, and every seed's figures inline). No JavaScript, no resource
from outside: styles are inline, figures are copied next to the pages. Every string from a run folder is
HTML-escaped exactly once (:func:`_h`; the Markdown formatter ``report._fmt`` escapes for Markdown and is never
used here for text); links in a card that would not resolve inside the site are turned into plain text.

The front page gives each paper its verdict at our scale: for each experiment, the group of runs at its
largest-scale preset (``paper`` over ``full`` over ``quick`` over ``smoke`` over any other name; the control
presets ``planted`` and ``null`` never count; runs without ``--set`` overrides before runs with them), that
group's verdict, its claims beside the paper's own figure, and the power and false-positive rate of its
comparative claims.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .report import (
    BEFORE_ROLES_NOTE,
    CONTROL_PRESETS,
    GroupKey,
    RunRecord,
    Skipped,
    _fmt,
    _is_regular_file,
    check_summaries,
    collect_runs,
    group_runs,
    group_verdict,
    is_before_roles,
    metric_summaries,
)

__all__ = ["write_site", "headline_groups"]

_STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;
color:#1d1d1f;line-height:1.45}
table{border-collapse:collapse;margin:1rem 0;font-size:.92rem}th,td{border:1px solid #ccc;padding:.3rem .5rem;
vertical-align:top;text-align:left}th{background:#f3f3f3}
.pass{color:#0a7a2f;font-weight:600}.fail{color:#b3261e;font-weight:600}.some{color:#a15c00;font-weight:600}
.undecided{color:#555;font-weight:600;font-style:italic}
.front{width:100%}.front>tbody>tr>td{padding:.5rem .6rem}.front>tbody>tr>td:first-child{width:15rem}
.exp{display:grid;grid-template-columns:8.2rem 1fr;gap:0 .4rem;margin:.1rem 0 .3rem}.exp small{color:#555}
details{font-size:.85rem;color:#444}details table{margin:.3rem 0;font-size:.85rem;color:#1d1d1f}
summary{cursor:pointer}
img{max-width:100%;border:1px solid #ddd;margin:.3rem 0}code,pre{background:#f6f6f6;padding:.1rem .3rem}
nav a{margin-right:1rem}.figs{display:flex;flex-wrap:wrap;gap:1rem}.figs figure{margin:0;max-width:34rem}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _plain(x: Any) -> str:
    """A value as plain text: numbers formatted as in the Markdown report, strings as they are (unescaped)."""
    if isinstance(x, str):
        return x
    if isinstance(x, (dict, list)):
        return json.dumps(x, sort_keys=True)
    if x is None or isinstance(x, (bool, int, float)):
        return _fmt(x)  # digits, signs, "e", "nan", "inf", "yes", "no", "-": nothing md() would escape
    return str(x)


def _h(x: Any) -> str:
    """A value from a run folder as HTML text, escaped once."""
    return _e(_plain(x))


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
        return _h(s["mean"])
    return (f"{_h(s['mean'])} ± {_h(s['sd'])}<br><small>95% CI [{_h(s['ci95'][0])}, "
            f"{_h(s['ci95'][1])}]</small>")


def _group_body(key: GroupKey, group: list[RunRecord], figs: dict[tuple[str, str], list[str]]) -> str:
    first = group[0]
    exp = key[0]
    slug = exp.split(".", 1)[0]
    over = first.results.get("overrides") or {}
    parts = [f"<h1>{_e(exp)} <small>({_e(key[2])}, {len(group)} seed(s))</small></h1>",
             f"<p><a href=\"{_slug_page(slug)}\">paper: {_e(slug)}</a></p>",
             f"<p><b>Claim.</b> {_e(first.results['claim'])}</p>"]
    if over:
        parts.append("<p><b>Overrides:</b> " + ", ".join(f"<code>{_e(k)}={_h(v)}</code>" for k, v in over.items())
                     + "</p>")
    verdict, counts = group_verdict(group)
    parts.append(f"<p><b>Verdict:</b> {_verdict_html(verdict)} <small>("
                 + ", ".join(f"{n} {_e(v)}" for v, n in counts.items() if n) + ")</small></p>")
    parts.append("<h2>Checks</h2><table><tr><th>check</th><th>role</th><th>ours</th><th>target</th><th>paper</th>"
                 "<th>passed</th><th>failed on seeds</th><th>power / false-positive rate</th></tr>")
    for row in check_summaries(group):
        parts.append(f"<tr><td>{_e(row['name'])}</td><td>{_e(row['role'])}</td>"
                     f"<td>{_value(row['summary'], row['n'])}</td>"
                     f"<td><code>{_e(row['target'])}</code></td><td>{_h(row['paper'])}</td>"
                     f"<td>{_mark(row['passed'], row['n'])}</td>"
                     f"<td>{_e(', '.join(map(str, row['failed'])) or '-')}</td><td>{_e(row['power'])}</td></tr>")
    parts.append("</table><h2>Metrics</h2><table><tr><th>metric</th><th>mean ± sd</th><th>min</th><th>max</th>"
                 "<th>n</th></tr>")
    for k, s in metric_summaries(group).items():
        parts.append(f"<tr><td>{_e(k)}</td><td>{_value(s, s['n'])}</td><td>{_h(s['min'])}</td>"
                     f"<td>{_h(s['max'])}</td><td>{s['n']}</td></tr>")
    parts.append("</table><h2>Config</h2><table><tr><th>key</th><th>value</th></tr>")
    for k, v in first.results["config"].items():
        parts.append(f"<tr><td>{_e(k)}</td><td>{_h(v)}</td></tr>")
    parts.append("</table><h2>Runs</h2>")
    for r in group:
        parts.append(f"<h3>seed {r.seed}: {_verdict_html(r.verdict)}</h3><div class=\"figs\">")
        for src in figs.get((exp, r.folder.name), []):
            parts.append(f'<figure><img src="{_e(src)}" alt="{_e(Path(src).name)}">'
                         f"<figcaption>{_e(Path(src).name)}</figcaption></figure>")
        parts.append("</div>")
    return "\n".join(parts)


# ------------------------------------------------------------------------------------------------ front page
_CONTROL_PRESETS = CONTROL_PRESETS
_NO_FIGURE = {"", "-", "\u2014", "\u2013"}  # a paper field holding only a dash states no figure of the paper
_BEFORE_ROLES_NOTE = BEFORE_ROLES_NOTE


def headline_groups(groups: dict[GroupKey, list[RunRecord]]) -> dict[str, GroupKey]:
    """For each experiment, the group that gives its verdict at our scale.

    Parameters
    ----------
    groups : the groups of :func:`icml2026.core.report.group_runs`, keyed (experiment, preset rank, preset,
        overrides hash).

    Returns
    -------
    dict
        Experiment name -> key of its headline group: the largest-scale preset that has runs (the rank of
        ``report._PRESET_ORDER``: ``paper``, ``full``, ``quick``, ``smoke``, then any other preset name,
        alphabetically), a group without ``--set`` overrides always before one with them (overrides change
        the preset's config); the control presets ``planted`` and ``null`` are never chosen, so an experiment
        with only control runs has no entry.
    """
    best: dict[str, GroupKey] = {}
    for key in groups:
        exp, rank, preset, h = key
        if preset in _CONTROL_PRESETS:
            continue
        cur = best.get(exp)
        if cur is None or (h != "", rank, preset, h) < (cur[3] != "", cur[1], cur[2], cur[3]):
            best[exp] = key
    return best


def _card_title(card: Path | None) -> str:
    """The card's first heading as plain text (inline Markdown links, code and emphasis marks removed)."""
    if card is None or not _is_regular_file(card):
        return ""
    for line in card.read_text(encoding="utf-8").splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            title = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
            return re.sub(r"[`*]|(?<!\w)_|_(?!\w)", "", title).strip()
    return ""


def _has_figure(paper: Any) -> bool:
    return paper is not None and _plain(paper).strip() not in _NO_FIGURE


def _scale_text(key: GroupKey, group: list[RunRecord]) -> str:
    return (_e(key[2]) + (f", overrides {_e(key[3])}" if key[3] else "")
            + f", {len(group)} seed{'s' if len(group) != 1 else ''}")


def _powers(claims: list[dict[str, Any]]) -> list[str]:
    """``"name: power 0.9, FPR 0 (5 seeds)"`` (HTML) for each comparative claim among ``check_summaries`` rows."""
    return [f"{_e(c['name'])}: {_e(c['power'])}" for c in claims if c["power"] != "-"]


def _experiment_entry(key: GroupKey, group: list[RunRecord], others: list[tuple[GroupKey, list[RunRecord]]]) -> str:
    """One experiment on the front page: verdict, scale, claim and precondition counts, power, paper vs ours."""
    verdict, counts = group_verdict(group)
    rows = check_summaries(group)
    claims = [c for c in rows if c["role"] == "claim"]
    pre = [c for c in rows if c["role"] == "precondition"]
    old = any(is_before_roles(r) for r in group)
    parts = [f"<a href=\"{_group_page(key)}\" title=\"{_e(group[0].results['claim'])}\">"
             f"{_e(key[0].split('.', 1)[1])}</a> <small>({_scale_text(key, group)}{' †' if old else ''})</small>"]
    if len(group) > 1 and counts[verdict] != len(group):
        parts.append("<small>(" + ", ".join(f"{n}/{len(group)} {_e(v)}" for v, n in counts.items() if n) + ")</small>")
    full = "" if len(group) == 1 else " on every seed"
    parts.append(f"· claims passing{full}: {sum(c['passed'] == c['n'] for c in claims)}/{len(claims)}")
    if pre:
        failed = [c["name"] for c in pre if c["passed"] < c["n"]]
        parts.append(f"· preconditions: {len(pre) - len(failed)}/{len(pre)}"
                     + (f" <small>(failed: {_e(', '.join(failed))})</small>" if failed else ""))
    parts += [f"· <small>{p}</small>" for p in _powers(claims)]
    for k, g in others:
        powers = _powers([c for c in check_summaries(g) if c["role"] == "claim"])
        parts.append(f"· <small>also {_scale_text(k, g)}: {_verdict_html(group_verdict(g)[0])}"
                     + (f" ({'; '.join(powers)})" if powers else "") + "</small>")
    n_fig = sum(_has_figure(c["paper"]) for c in claims)
    table = ["<table><tr><th>claim check</th><th>ours</th><th>target</th><th>paper</th><th>passed</th></tr>"]
    for c in claims:
        table.append(f"<tr><td>{_e(c['name'])}</td><td>{_value(c['summary'], c['n'])}</td>"
                     f"<td><code>{_e(c['target'])}</code></td>"
                     f"<td>{_h(c['paper']) if _has_figure(c['paper']) else '-'}</td>"
                     f"<td>{_mark(c['passed'], c['n'])}</td></tr>")
    details = (f"<details><summary>ours beside the paper ({len(claims)} claim check{'s' if len(claims) != 1 else ''}"
               f"; the paper gives a figure for {n_fig})</summary><p><b>Claim.</b> "
               f"{_e(group[0].results['claim'])}</p>{''.join(table)}</table></details>")
    return f"<div class=\"exp\"><div>{_verdict_html(verdict)}</div><div>{' '.join(parts)}{details}</div></div>"


def _front_page(slugs: list[str], groups: dict[GroupKey, list[RunRecord]], cards: dict[str, Path]) -> list[str]:
    """The front page's paragraphs and its table: one row per paper, with its footnote."""
    heads = headline_groups(groups)
    totals = dict.fromkeys(("reproduced", "not reproduced", "undecided"), 0)
    n_old = 0
    rows = []
    for slug in slugs:
        exps = sorted(e for e in heads if e.split(".", 1)[0] == slug)
        entries, mine = [], dict.fromkeys(totals, 0)
        for exp in exps:
            key = heads[exp]
            others = [(k, g) for k, g in groups.items() if k[0] == exp and k != key and k[2] not in _CONTROL_PRESETS]
            entries.append(_experiment_entry(key, groups[key], others))
            mine[group_verdict(groups[key])[0]] += 1
            n_old += any(is_before_roles(r) for r in groups[key])
        for v, n in mine.items():
            totals[v] += n
        title = _card_title(cards.get(slug))
        summary = ", ".join(f"{n} {_verdict_html(v)}" for v, n in mine.items() if n) or "no runs"
        rows.append(f"<tr class=\"paper\"><td><a href=\"{_slug_page(slug)}\"><b>{_e(slug)}</b></a>"
                    + (f"<br><small>{_e(title)}</small>" if title else "") + f"<br><small>{summary}</small></td>"
                    f"<td>{''.join(entries) or 'no runs'}</td></tr>")
    n_exp = sum(totals.values())
    out = [f"<p>{len(slugs)} papers, {n_exp} experiments, each at the largest scale it has been run at: "
           + ", ".join(f"{n} {_verdict_html(v)}" for v, n in totals.items()) + ". The verdict of an experiment is "
           "that of its runs at its largest-scale preset (<code>paper</code> over <code>full</code> over "
           "<code>quick</code> over <code>smoke</code>; the control presets <code>planted</code> and "
           "<code>null</code> never count); several seeds give <i>reproduced</i> only when every seed does. "
           "Open <i>ours beside the paper</i> for each claim check, our value beside the paper's own figure.</p>",
           "<table class=\"front\"><tr><th>paper</th><th>experiments: verdict at our scale (preset, seeds) · "
           "claims · preconditions · power of comparative claims</th></tr>", *rows, "</table>"]
    if n_old:
        out.append(f"<p><small>† {n_old} experiment(s) {_e(_BEFORE_ROLES_NOTE)}</small></p>")
    return out


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
        n_old_rows = 0
        for key, group in groups.items():
            page = _group_page(key)
            (tmp / page).write_text(_page(key[0], _group_body(key, group, figs)), encoding="utf-8")
            verdict, counts = group_verdict(group)
            checks = "<br>".join(f"{_mark(c['passed'], c['n'])} "
                                 + ("" if c["role"] == "claim" else f"<i>{_e(c['role'])}</i> ")
                                 + f"{_e(c['name'])} = {_value(c['summary'], c['n'])} "
                                 f"(<code>{_e(c['target'])}</code>)"
                                 + (f" <small>{_e(c['power'])}</small>" if c["power"] != "-" else "")
                                 + (f" [paper: {_h(c['paper'])}]" if c["paper"] else "")
                                 for c in check_summaries(group))
            seeds_note = (" <small>(" + ", ".join(f"{k}/{len(group)} {_e(v)}" for v, k in counts.items() if k)
                          + ")</small>") if len(group) > 1 else ""
            if any(is_before_roles(r) for r in group):
                seeds_note += " †"
                n_old_rows += 1
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
        index = ["<h1>icml2026 reproduction report</h1>", *_front_page(slugs, groups, cards),
                 "<h2>Every experiment, preset and override set</h2>",
                 "<p>One row per experiment, preset and override set; several seeds aggregated (mean ± sample "
                 "standard deviation, bootstrap 95% interval, seeds passing each check). Verdicts are recomputed "
                 "from each check's value, target and role: <b>reproduced</b> (every precondition and claim "
                 "passes), <b>not reproduced</b> (preconditions pass, a claim fails), <b>undecided</b> (a "
                 "precondition fails: the claims are shown, not counted). Preconditions and controls are in "
                 "italics; a comparative claim shows its power and false-positive rate.</p>",
                 "<table><tr><th>paper</th><th>experiment</th><th>preset</th><th>seeds</th><th>claim</th>"
                 "<th>checks: ours (target) [paper]</th><th>verdict</th></tr>", *rows, "</table>"]
        if n_old_rows:
            index.append(f"<p><small>† {n_old_rows} row(s) {_e(_BEFORE_ROLES_NOTE)}</small></p>")
        if skipped_html:
            index.append(f"<h2>Skipped</h2><ul>{skipped_html}</ul>")
        (tmp / "index.html").write_text(_page("icml2026 report", "\n".join(index)), encoding="utf-8")
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o777 & ~mask)
        from .atomic import replace_dir

        if os.path.islink(out):
            os.unlink(out)  # a planted link: remove the link, never its target
        replace_dir(tmp, out)  # a crash or a refusal at any moment leaves the old or the new site
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out / "index.html", skipped
