"""Render the docstrings' Sphinx roles (``:func:`name```) as links of the documentation site.

The docstrings are numpy-style and name other objects the Sphinx way (``:func:`check_model_path```,
``:class:`~icml2026.core.outcome.Check```). mkdocstrings renders Markdown, where such a role would show as raw
text; this griffe extension rewrites each role, once the whole package is loaded, into an optional
cross-reference of mkdocs-autorefs: a link where the object has a page, its name in code font where it has none
(a private helper, an object of another library). A short name is looked up beside the object that mentions it
(its class, its module, the modules above it), as Sphinx does.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const|type):`([~.]?)([\w.]+)(?:\(\))?`")


def _walk(obj: Any, seen: set[str], out: list[Any]) -> None:
    if obj.path in seen:
        return
    seen.add(obj.path)
    out.append(obj)
    if obj.is_alias:
        return
    for member in obj.members.values():
        _walk(member, seen, out)


def _scopes(obj: Any) -> list[str]:
    """Where a short name is looked up from ``obj``: itself, then each enclosing object up to the top package."""
    parts = obj.path.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


class SphinxRoles(griffe.Extension):
    """Rewrite ``:role:`name``` in every docstring into an optional mkdocs-autorefs cross-reference."""

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        objects: list[Any] = []
        _walk(pkg, set(), objects)
        known = {o.path for o in objects}

        def resolve(name: str, scopes: list[str]) -> str:
            if name in known:
                return name
            for scope in scopes:
                if f"{scope}.{name}" in known:
                    return f"{scope}.{name}"
            return name

        for obj in objects:
            if obj.is_alias or obj.docstring is None or ":" not in obj.docstring.value:
                continue
            scopes = _scopes(obj)

            def link(m: re.Match[str], scopes: list[str] = scopes) -> str:
                tilde, name = m.group(1), m.group(2)
                shown = name.rsplit(".", 1)[-1] if tilde == "~" else name
                target = resolve(name, scopes)
                return (f'<autoref identifier="{html.escape(target)}" optional>'
                        f"<code>{html.escape(shown)}</code></autoref>")

            obj.docstring.value = ROLE.sub(link, obj.docstring.value)
