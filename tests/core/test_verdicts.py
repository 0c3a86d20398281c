"""Three-valued verdicts, check roles, and the power / false-positive rate of comparative claims.

A hand-made experiment whose precondition fails must read ``undecided`` everywhere a verdict is shown
(results.json, report.md, reports/index.md, the HTML page) and exit with status 4; one whose precondition
passes and whose claim fails reads ``not reproduced`` and exits 1.
"""

from __future__ import annotations

import dataclasses
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from icml2026.cli import main
from icml2026.core import controls, registry
from icml2026.core.errors import EXIT_FAILED, EXIT_OK, EXIT_UNDECIDED, worst_status
from icml2026.core.outcome import Check, Outcome, verdict_of

from .conftest import PRESETS, ToyConfig


def _undecided(cfg: ToyConfig, rng: np.random.Generator) -> Outcome:
    # the base "model" scores at chance, so the claim below cannot be expressed: a precondition fails
    return Outcome(metrics={"base_acc": 0.5},
                   checks=[Check("base_task_learned", 0.5, ">= 0.9", role="precondition"),
                           Check("method_beats_baseline", 1.0, "> 0")])


def _claim_fails(cfg: ToyConfig, rng: np.random.Generator) -> Outcome:
    return Outcome(metrics={"base_acc": 0.95},
                   checks=[Check("base_task_learned", 0.95, ">= 0.9", role="precondition"),
                           Check("method_beats_baseline", -1.0, "> 0")])


def _compared(cfg: ToyConfig, rng: np.random.Generator) -> Outcome:
    """Two arms on 200 paired items; ``label`` plants an effect of 0.3 in arm A ("planted") or none ("null")."""
    effect = {"planted": 0.3, "null": 0.0}.get(cfg.label, 0.1)
    a = rng.normal(size=200) + effect
    b = rng.normal(size=200)
    diff = float(np.mean(a - b))
    se = float(np.std(a - b, ddof=1) / np.sqrt(a.size))
    return Outcome(metrics={"diff": diff},
                   checks=[Check("oracle_scores_one", 1.0, "== 1", role="precondition"),
                           Check("a_minus_b_lower_95", diff - 1.96 * se, "> 0", comparative=True),
                           Check("planted_fraction", 0.0, "== 0", role="control")])


@pytest.fixture()
def verdict_registry(toy_registry: dict[str, registry.Experiment]) -> dict[str, registry.Experiment]:
    registry.experiment("toy.undecided", claim="a claim the setup cannot express", presets=PRESETS)(_undecided)
    registry.experiment("toy.claimfails", claim="a claim that fails", presets=PRESETS)(_claim_fails)
    presets = {**PRESETS, "planted": dataclasses.replace(PRESETS["quick"], label="planted"),
               "null": dataclasses.replace(PRESETS["quick"], label="null")}
    registry.experiment("toy.compared", claim="arm A beats arm B", presets=presets)(_compared)
    return toy_registry


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_verdict_of_closed_forms() -> None:
    assert verdict_of([("precondition", True), ("claim", True), ("control", False)]) == "reproduced"
    assert verdict_of([("precondition", True), ("claim", False)]) == "not reproduced"
    assert verdict_of([("precondition", False), ("claim", True)]) == "undecided"
    assert verdict_of([("precondition", False), ("claim", False)]) == "undecided"  # never counted against
    assert verdict_of([("claim", True)]) == "reproduced"  # runs stored before roles: every check a claim
    assert verdict_of([("precondition", True)]) == "undecided"  # nothing was claimed
    assert verdict_of([]) == "undecided"
    with pytest.raises(ValueError, match="role"):
        verdict_of([("claims", True)])


def test_check_refuses_bad_roles_and_rates() -> None:
    with pytest.raises(ValueError, match="role"):
        Check("x", 1, "> 0", role="assumption")
    with pytest.raises(ValueError, match="only a claim"):
        Check("x", 1, "> 0", role="precondition", comparative=True)
    with pytest.raises(ValueError, match="power"):
        Check("x", 1, "> 0", comparative=True, power=1.5)
    with pytest.raises(ValueError, match="false_positive_rate"):
        Check("x", 1, "> 0", comparative=True, false_positive_rate=-0.1)
    with pytest.raises(ValueError, match="unique"):
        Outcome(checks=[Check("x", 1, "> 0"), Check("x", 2, "> 0")])


def test_worst_status_orders_errors_over_verdicts() -> None:
    assert worst_status(EXIT_OK, EXIT_UNDECIDED) == EXIT_UNDECIDED
    assert worst_status(EXIT_UNDECIDED, EXIT_FAILED) == EXIT_FAILED
    assert worst_status(EXIT_FAILED, 2, EXIT_UNDECIDED) == 2
    assert worst_status(3, 2) == 3
    assert worst_status() == EXIT_OK


def test_failed_precondition_is_undecided_everywhere(verdict_registry: dict, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    code, out, _ = _cli(["run", "toy.undecided", "--out", str(runs)])
    assert code == EXIT_UNDECIDED == 4
    assert "UNDECIDED toy.undecided" in out and "failed precondition: base_task_learned" in out
    folder = runs / "toy.undecided" / "quick-seed0"
    res = json.loads((folder / "results.json").read_text())
    assert res["verdict"] == "undecided"
    assert [c["role"] for c in res["checks"]] == ["precondition", "claim"]
    report = (folder / "report.md").read_text()
    assert "**Verdict: UNDECIDED**" in report and "count neither for nor against" in report
    assert _cli(["report", "--runs", str(runs), "--out", str(tmp_path / "reports"), "--html"])[0] == 0
    index = (tmp_path / "reports" / "index.md").read_text()
    row = next(line for line in index.splitlines() if "toy.undecided" in line)
    assert "**undecided**" in row and "*precondition* base\\_task\\_learned" in row
    assert "1 undecided" in index
    html = (tmp_path / "reports" / "html" / "index.html").read_text()
    assert '<span class="undecided">undecided</span>' in html


def test_failed_claim_with_preconditions_met_is_not_reproduced(verdict_registry: dict, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    code, out, _ = _cli(["run", "toy.claimfails", "--out", str(runs)])
    assert code == EXIT_FAILED == 1
    res = json.loads((runs / "toy.claimfails" / "quick-seed0" / "results.json").read_text())
    assert res["verdict"] == "not reproduced"
    assert "**Verdict: NOT REPRODUCED**" in (runs / "toy.claimfails" / "quick-seed0" / "report.md").read_text()
    _cli(["report", "--runs", str(runs), "--out", str(tmp_path / "reports"), "--html"])
    assert "**not reproduced**" in (tmp_path / "reports" / "index.md").read_text()
    assert '<span class="fail">not reproduced</span>' in (tmp_path / "reports" / "html" / "index.html").read_text()


def test_worst_of_several_runs(verdict_registry: dict, tmp_path: Path) -> None:
    assert _cli(["run", "toy.undecided", "toy.passes", "--out", str(tmp_path)])[0] == EXIT_UNDECIDED
    assert _cli(["run", "toy.undecided", "toy.claimfails", "--out", str(tmp_path)])[0] == EXIT_FAILED
    assert _cli(["run", "toy.passes", "--seed", "0-1", "--out", str(tmp_path)])[0] == EXIT_OK


def test_controls_measure_power_and_false_positive_rate(verdict_registry: dict, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "controls.json"
    monkeypatch.setattr(controls, "controls_path", lambda slug: store)
    exp = registry.get_experiment("toy.compared")
    recs = controls.measure_controls(exp, range(5), out=tmp_path / "runs")
    (rec,) = recs.values()
    # an effect of 0.3 sd on 200 paired items: the lower 95% bound is > 0 with power ~0.85 per draw; the
    # null passes with probability 0.025 per draw. Five seeds: the figures below are what these draws give.
    assert rec.n_seeds == 5 and rec.target == "> 0"
    assert rec.power == sum(rec.planted_passed) / 5 and rec.false_positive_rate == sum(rec.null_passed) / 5
    assert rec.power >= 0.8 and rec.false_positive_rate == 0.0
    assert all(v > 0 for v, ok in zip(rec.planted_values, rec.planted_passed, strict=True) if ok)
    controls.store_controls("toy.compared", recs)
    assert controls.load_controls("toy.compared")["a_minus_b_lower_95"] == rec
    # the runner attaches the stored figures; the report shows them beside the verdict
    code, _, _ = _cli(["run", "toy.compared", "--out", str(tmp_path / "r2")])
    res = json.loads((tmp_path / "r2" / "toy.compared" / "quick-seed0" / "results.json").read_text())
    comp = next(c for c in res["checks"] if c["comparative"])
    assert (comp["power"], comp["false_positive_rate"]) == (rec.power, rec.false_positive_rate)
    assert comp["controls"]["n_seeds"] == 5
    assert next(c for c in res["checks"] if c["role"] == "control")["power"] is None
    report = (tmp_path / "r2" / "toy.compared" / "quick-seed0" / "report.md").read_text()
    assert f"power {rec.power:.4g}, FPR 0 (5 seeds)" in report


def test_controls_refuse_too_few_seeds_and_missing_presets(verdict_registry: dict, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 5 seeds"):
        controls.measure_controls(registry.get_experiment("toy.compared"), range(4), out=tmp_path)
    with pytest.raises(ValueError, match="no preset 'planted'"):
        controls.measure_controls(registry.get_experiment("toy.passes"), range(5), out=tmp_path)
    code, _, err = _cli(["controls", "toy.compared", "--seeds", "0-2", "--out", str(tmp_path)])
    assert code == 2 and "--seeds" in err and "at least 5" in err
    code, _, err = _cli(["controls", "toy.passes", "--out", str(tmp_path)])
    assert code == 2 and "'planted'" in err


def test_controls_command_prints_and_stores(verdict_registry: dict, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "controls.json"
    monkeypatch.setattr(controls, "controls_path", lambda slug: store)
    code, out, _ = _cli(["controls", "toy.compared", "--out", str(tmp_path / "runs"), "--store"])
    assert code == 0, out
    assert "OK toy.compared / a_minus_b_lower_95: power" in out and "over 5 seeds" in out
    assert "toy.compared" in json.loads(store.read_text())


def test_comparative_check_without_figures_says_not_measured(verdict_registry: dict, tmp_path: Path) -> None:
    _cli(["run", "toy.compared", "--out", str(tmp_path)])
    report = (tmp_path / "toy.compared" / "quick-seed0" / "report.md").read_text()
    assert "not measured" in report


def test_report_refuses_unknown_roles_and_bad_rates(toy_registry: dict, tmp_path: Path) -> None:
    from icml2026.core.report import collect_runs

    runs = tmp_path / "runs"
    _cli(["run", "toy.passes", "--seed", "0-1", "--out", str(runs)])
    for seed, change in ((0, {"role": "hunch"}), (1, {"power": 2.0})):
        f = runs / "toy.passes" / f"quick-seed{seed}" / "results.json"
        data = json.loads(f.read_text())
        data["checks"][0].update(change)
        f.write_text(json.dumps(data))
    records, skipped = collect_runs(runs)
    assert not records
    reasons = sorted(s.reason for s in skipped)
    assert "unknown role" in reasons[1] and "not a rate" in reasons[0]


def test_runs_from_before_roles_are_marked(toy_registry: dict, tmp_path: Path) -> None:
    from icml2026.core.report import write_index

    runs = tmp_path / "runs"
    _cli(["run", "toy.passes", "toy.fails", "--out", str(runs)])
    f = runs / "toy.fails" / "quick-seed0" / "results.json"
    data = json.loads(f.read_text())
    for c in data["checks"]:
        for key in ("role", "comparative", "power", "false_positive_rate"):
            c.pop(key)
    data["verdict"] = "failed"  # the old vocabulary: the report recomputes and never reads it
    f.write_text(json.dumps(data))
    text = write_index(runs, tmp_path / "reports", log=io.StringIO()).read_text()
    row = next(line for line in text.splitlines() if "toy.fails" in line)
    assert "**not reproduced** †" in row
    assert "† 1 row(s) hold runs recorded before checks had roles" in text
    assert "†" not in next(line for line in text.splitlines() if "toy.passes" in line)


def test_concurrent_stores_of_one_paper_lose_no_entry(tmp_path) -> None:  # noqa: ANN001
    """Several `controls --store` of one paper at once: every experiment's entry survives."""
    import threading

    from icml2026.core.controls import ControlRecord, _read, store_controls

    path = tmp_path / "controls.json"
    rec = ControlRecord(power=1.0, false_positive_rate=0.0, seeds=[0, 1, 2, 3, 4], planted_passed=[True] * 5,
                        null_passed=[False] * 5, planted_values=[1.0] * 5, null_values=[0.0] * 5, target="> 0.5")
    names = [f"paper.exp{i}" for i in range(12)]
    threads = [threading.Thread(target=store_controls, args=(n, {"check": rec}, path)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(_read(path)) == sorted(names)
