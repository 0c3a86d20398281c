import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from icml2026 import papers
from icml2026.core import registry
from tests.core.conftest import PRESETS, toy_pass


def test_names_and_slug_expansion(toy_registry: dict) -> None:
    exps = registry.all_experiments()
    assert list(exps) == ["other.passes", "toy.fails", "toy.passes", "toy.torchy"]
    assert [e.name for e in registry.resolve_names(["toy"])] == ["toy.fails", "toy.passes", "toy.torchy"]
    assert [e.name for e in registry.resolve_names(["toy.passes", "toy"])][0] == "toy.passes"
    assert registry.get_experiment("toy.passes").slug == "toy"


def test_unknown_name_suggests_closest(toy_registry: dict) -> None:
    with pytest.raises(registry.UnknownExperimentError, match="did you mean toy.passes"):
        registry.get_experiment("toy.pases")
    with pytest.raises(registry.UnknownExperimentError, match="icml2026 list"):
        registry.resolve_names(["zzzzzz"])


@pytest.mark.parametrize(
    ("name", "kwargs", "err"),
    [
        ("noslug", {"claim": "c", "presets": PRESETS}, ValueError),
        ("a.b.c", {"claim": "c", "presets": PRESETS}, ValueError),
        ("toy.x", {"claim": " ", "presets": PRESETS}, ValueError),
        ("toy.x", {"claim": "c", "presets": {"quick": PRESETS["quick"]}}, ValueError),
        ("toy.x", {"claim": "c", "presets": {"quick": 1, "full": 2}}, TypeError),
    ],
)
def test_bad_registrations_are_refused(toy_registry: dict, name: str, kwargs: dict, err: type) -> None:
    with pytest.raises(err):
        registry.experiment(name, **kwargs)(toy_pass)


def test_experiment_must_return_an_outcome(toy_registry: dict) -> None:
    registry.experiment("toy.bad", claim="c", presets=PRESETS)(lambda cfg, rng: 3)
    with pytest.raises(TypeError, match="not Outcome"):
        registry.get_experiment("toy.bad")(PRESETS["quick"], np.random.default_rng(0))


def test_discovery_imports_experiments_modules_without_naming_papers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new folder papers/<slug>/experiments.py is found by discovery alone."""
    pkg = tmp_path / "fakepaper_xyz"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "experiments.py").write_text(textwrap.dedent("""
        from tests.core.conftest import PRESETS, toy_pass
        from icml2026.core import experiment
        experiment("fakepaper_xyz.demo", claim="found by discovery", presets=PRESETS)(toy_pass)
    """))
    # Import the real papers first, into the real registry: modules stay imported after this test, so
    # importing them for the first time into the temporary table below would hide them from later tests.
    registry.discover()
    table: dict = {}
    monkeypatch.setattr(registry, "_REGISTRY", table)
    monkeypatch.setattr(papers, "__path__", [*papers.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "icml2026.papers.fakepaper_xyz.experiments", raising=False)
    try:
        assert "fakepaper_xyz.demo" in registry.all_experiments()
    finally:
        sys.modules.pop("icml2026.papers.fakepaper_xyz.experiments", None)
        sys.modules.pop("icml2026.papers.fakepaper_xyz", None)


def test_experiments_split_into_a_package_are_listed_and_discovered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """papers/<slug>/experiments/ (one module per claim) is read by the catalog and imported by discovery."""
    from icml2026.core import catalog as catalog_mod

    pkg = tmp_path / "fakepaper_split"
    (pkg / "experiments").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "experiments" / "__init__.py").write_text("from . import one, two  # noqa: F401\n")
    for mod, claim in (("one", "first claim"), ("two", "second claim")):
        (pkg / "experiments" / f"{mod}.py").write_text(textwrap.dedent(f"""
            from tests.core.conftest import PRESETS, toy_pass
            from icml2026.core import experiment

            @experiment("fakepaper_split.{mod}", claim="{claim}", presets={{"quick": PRESETS["quick"],
                        "full": PRESETS["full"]}})
            def run_{mod}(cfg, rng):
                return toy_pass(cfg, rng)
        """))
    registry.discover()
    table: dict = {}
    monkeypatch.setattr(registry, "_REGISTRY", table)
    monkeypatch.setattr(papers, "__path__", [*papers.__path__, str(tmp_path)])
    catalog_mod._catalog.cache_clear()
    try:
        listed = catalog_mod.catalog()
        assert listed["fakepaper_split.two"].claim == "second claim"
        assert listed["fakepaper_split.one"].source.name == "one.py"
        assert {"fakepaper_split.one", "fakepaper_split.two"} <= set(registry.all_experiments())
    finally:
        catalog_mod._catalog.cache_clear()
        for m in [m for m in sys.modules if m.startswith("icml2026.papers.fakepaper_split")]:
            sys.modules.pop(m, None)


def test_core_never_names_a_paper() -> None:
    core = Path(registry.__file__).parent
    slugs = [p.name for p in Path(papers.__file__).parent.iterdir() if p.is_dir() and not p.name.startswith("_")]
    for f in core.glob("*.py"):
        text = f.read_text()
        for slug in slugs:
            assert slug not in text, f"core/{f.name} names paper {slug}"
