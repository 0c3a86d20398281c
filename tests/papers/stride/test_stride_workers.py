"""Seeds trained side by side in processes (``workers``) give the results of the same seeds trained one after
the other, and ``workers`` is refused where it cannot work."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.core.registry import get_experiment  # noqa: E402
from icml2026.core.rng import make_rng  # noqa: E402
from icml2026.papers.stride.experiments import MoleculeConfig, ProteinConfig  # noqa: E402


def _metrics(name: str, **changes: object) -> dict[str, float]:
    exp = get_experiment(name)
    cfg = dataclasses.replace(exp.config("smoke"), **changes)
    return exp(cfg, make_rng(7)).metrics


@pytest.mark.slow  # ~1 min: four smoke runs of each experiment with the Stage 0 checkpoint
@pytest.mark.parametrize("name", ["stride.protein_stress_test", "stride.molecule_editing"])
def test_two_workers_give_the_metrics_of_one(name: str) -> None:
    one = _metrics(name, n_seeds=2, workers=1)
    two = _metrics(name, n_seeds=2, workers=2)
    assert one.keys() == two.keys()
    for k in one:  # seed-wise equal: each seed carries its own generator into its process
        assert np.isclose(one[k], two[k], rtol=0, atol=0, equal_nan=True), k
    # the two seeds differ, so equality above is not two copies of one seed
    assert any(one[k.replace(".seed0", ".seed1")] != v for k, v in one.items() if k.endswith(".seed0"))


@pytest.mark.parametrize("cls", [ProteinConfig, MoleculeConfig])
def test_workers_on_an_accelerator_or_below_one_are_refused(cls: type) -> None:
    with pytest.raises(ValueError, match="workers = 2"):
        cls(workers=2, device="cuda")
    with pytest.raises(ValueError, match="workers"):
        cls(workers=0)
    assert cls(workers=1, device="cuda").workers == 1


@pytest.mark.slow  # ~1 min: both smoke presets, two seeds each, in worker processes
def test_module_cli_runs_both_experiments_side_by_side_into_run_folders(tmp_path) -> None:
    import json
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "icml2026.papers.stride.experiments", "--preset", "smoke", "--n-seeds", "2",
           "--workers", "2", "--out", str(tmp_path)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    for name in ("stride.protein_stress_test", "stride.molecule_editing"):
        (folder,) = (tmp_path / name).glob("smoke-seed0-*")  # the overrides are hashed into the name
        r = json.loads((folder / "results.json").read_text())
        assert r["overrides"] == {"n_seeds": 2, "workers": 2} and r["config"]["n_seeds"] == 2
        assert f"{name} [smoke]" in res.stdout and "seed1.sft_s" in r["timing"]
    bad = subprocess.run(cmd[:3] + ["--workers", "0", "--out", str(tmp_path / "no")], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "--workers 0: must be >= 1" in bad.stderr and not (tmp_path / "no").exists()
