import pytest
import torch

from icml2026.core import make_rng
from icml2026.core.registry import get_experiment
from icml2026.papers.dwc import have_iverilog

torch.set_num_threads(1)  # shared 2-core machine


def _tiny():
    exp = get_experiment("dwc.sanity_fit")
    return exp, exp.config_type(n_luts=16, bits=15, steps=20, n_train=512, n_test=100, n_random_vectors=100)


@pytest.mark.skipif(not have_iverilog(), reason="iverilog/vvp not on PATH (apt-get install iverilog)")
def test_sanity_fit_is_deterministic_per_seed():
    exp, cfg = _tiny()
    a, b, c = exp(cfg, make_rng(3)), exp(cfg, make_rng(3)), exp(cfg, make_rng(4))
    assert a.metrics == b.metrics                      # same seed: identical metrics
    assert a.metrics["r2_dwc"] != c.metrics["r2_dwc"]  # new seed: different data and init
    for out in (a, c):                                 # circuit agreement holds even after 20 steps
        assert out.metrics["mismatch_torch_numpy"] == 0 and out.metrics["mismatch_intpath_numpy"] == 0


@pytest.mark.parametrize("field, value", [("bits", 4), ("steps", 0), ("lr", -1.0)])
def test_sanity_config_rejects_bad_values(field, value):
    exp, _ = _tiny()
    with pytest.raises(ValueError, match=field if field != "lr" else "lr"):
        exp.config_type(**{field: value})
