"""The ``device`` field, one contract for every experiment that has one: it defaults to "cpu", refuses a name
torch does not know, and on a machine without CUDA ``--device cuda`` is a missing dependency (exit 3, one
line, no traceback, nothing written). Per-paper device tests check only what is particular to each paper (that
its models run on the meta device)."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from icml2026.cli import main  # noqa: E402
from icml2026.core import registry  # noqa: E402

registry.discover()
WITH_DEVICE = sorted(
    name for name, exp in registry.all_experiments().items()
    if "device" in {f.name for f in dataclasses.fields(next(iter(exp.presets.values())))}
)


def test_every_torch_paper_has_experiments_with_a_device_field():
    papers = {name.split(".")[0] for name in WITH_DEVICE}
    # fails if a paper's device field is dropped (these papers train or run torch models)
    assert {"attention_hijacking", "coca", "cogeoad", "correctness_models", "deepsight", "dwc", "fedtreelora",
            "gibbs_bounds", "neurocnn", "probe", "specflow", "stride", "truth_polling", "vlm_binding"} <= papers


@pytest.mark.parametrize("name", WITH_DEVICE)
def test_device_field_defaults_to_cpu_and_refuses_nonsense(name):
    exp = registry.get_experiment(name)
    for cfg in exp.presets.values():
        assert cfg.device == "cpu"
    cls = type(next(iter(exp.presets.values())))
    with pytest.raises(ValueError, match="^device = 'gpu0'"):
        cls(device="gpu0")


@pytest.mark.parametrize("name", WITH_DEVICE)
def test_cuda_without_a_gpu_is_a_missing_dependency(name, tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    exp = registry.get_experiment(name)
    preset = "smoke" if "smoke" in exp.presets else next(iter(exp.presets))
    code = main(["run", name, "--preset", preset, "--device", "cuda", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 3 and "CUDA" in err and "Traceback" not in err
    assert not any(tmp_path.rglob("results.json"))
