"""The ``device`` field of gibbs_bounds' torch experiment (SGLD chains): CPU by default, bad names refused, a
missing CUDA device is a missing dependency (exit 3) before any chain runs, not a crash."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from icml2026.cli import main  # noqa: E402
from icml2026.papers.gibbs_bounds.experiments import LangevinBoundsConfig  # noqa: E402


def test_device_field_defaults_to_cpu_and_refuses_nonsense():
    assert LangevinBoundsConfig().device == "cpu"
    with pytest.raises(ValueError, match="^device = 'gpu0'"):
        LangevinBoundsConfig(device="gpu0")


def test_cuda_without_a_gpu_is_a_missing_dependency(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    code = main(["run", "gibbs_bounds.langevin_bounds", "--preset", "smoke", "--device", "cuda",
                 "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 3 and "CUDA" in err and "Traceback" not in err
    assert not any(tmp_path.rglob("results.json"))
