"""Tests of the NeurOCNN model, baselines, data generators, metrics and the registered experiments."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from icml2026.core import make_rng  # noqa: E402
from icml2026.core.registry import get_experiment  # noqa: E402
from icml2026.papers.neurocnn import (  # noqa: E402
    FixedCNN,
    NeurOCNN,
    ResampleBack,
    ckconv_model,
    linear_resample,
    macro_f1,
    make_sleep_bank,
)

torch.set_num_threads(1)


def _small(seed: int, **kw) -> NeurOCNN:
    return NeurOCNN(
        1,
        5,
        (8, 8),
        n_knots=12,
        duration_s=0.25,
        n_modes=8,
        segment_s=2.0,
        window_s=10.0,
        generator=torch.Generator().manual_seed(seed),
        **kw,
    )


def test_sleep_bank_is_one_function_of_time_at_every_rate():
    bank = make_sleep_bank(10, np.random.default_rng(0))
    x100, x200, x300 = bank.sample(100.0), bank.sample(200.0), bank.sample(300.0)
    assert x100.shape == (10, 1, 1000) and x300.shape == (10, 1, 3000)
    # t = n/100 lies on the 200 and 300 Hz grids too: the analytic signal agrees there (float32 round-off)
    np.testing.assert_allclose(x200[..., ::2], x100, atol=1e-4)
    np.testing.assert_allclose(x300[..., ::3], x100, atol=1e-4)
    assert sorted(np.bincount(bank.labels)) == [2, 2, 2, 2, 2]  # balanced over the 5 stages


def test_sleep_bank_band_limited_below_30hz():
    x = make_sleep_bank(20, np.random.default_rng(1)).sample(500.0)[:, 0]
    spec = np.abs(np.fft.rfft(x, axis=-1)) ** 2
    freqs = np.fft.rfftfreq(x.shape[-1], 1 / 500.0)
    # everything is built below 30 Hz, so 75 Hz sampling does not alias; envelopes leak a tiny fraction
    assert spec[:, freqs > 31].sum() / spec.sum() < 1e-4


def test_data_determinism():
    a = make_sleep_bank(8, np.random.default_rng(3)).sample(100.0)
    b = make_sleep_bank(8, np.random.default_rng(3)).sample(100.0)
    c = make_sleep_bank(8, np.random.default_rng(4)).sample(100.0)
    assert np.array_equal(a, b) and not np.allclose(a, c)


def test_linear_resample_matches_torch_interpolate():
    x = np.random.default_rng(0).standard_normal((2, 1, 1000)).astype(np.float32)
    for n_out in (750, 2000, 5000):
        ref = F.interpolate(torch.as_tensor(x), size=n_out, mode="linear", align_corners=False).numpy()
        # torch computes the source coordinate in float32 (scale 4/3 is inexact): ~2e-4 differences
        np.testing.assert_allclose(linear_resample(x, n_out), ref, atol=5e-4)


def test_macro_f1_matches_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 4, 200), rng.integers(0, 4, 200)
    assert macro_f1(y, p, 4) == pytest.approx(metrics.f1_score(y, p, average="macro"), abs=1e-12)


def test_model_determinism_and_seed_dependence():
    x = torch.as_tensor(make_sleep_bank(4, np.random.default_rng(0)).sample(100.0))
    with torch.no_grad():
        a, b, c = _small(0).eval()(x, 100.0), _small(0).eval()(x, 100.0), _small(1).eval()(x, 100.0)
    assert torch.equal(a, b) and not torch.allclose(a, c)
    state = torch.random.get_rng_state()
    _small(2)
    assert torch.equal(state, torch.random.get_rng_state())  # construction leaves the global RNG untouched


def test_neurocnn_runs_at_any_rate_and_cnn_depends_on_rate():
    bank = make_sleep_bank(6, np.random.default_rng(2))
    model = _small(3).eval()
    cnn = FixedCNN(1, 5, (8, 8), generator=torch.Generator().manual_seed(3)).eval()
    with torch.no_grad():
        z = {fs: model(torch.as_tensor(bank.sample(fs)), fs) for fs in (75.0, 100.0, 333.0)}
        c = {fs: cnn(torch.as_tensor(bank.sample(fs)), fs) for fs in (100.0, 333.0)}
    assert all(v.shape == (6, 5) for v in z.values())
    rel = float(torch.linalg.norm(z[333.0] - z[100.0]) / torch.linalg.norm(z[100.0]))
    rel_cnn = float(torch.linalg.norm(c[333.0] - c[100.0]) / torch.linalg.norm(c[100.0]))
    assert rel < rel_cnn  # the continuous model changes less than the fixed-kernel CNN across rates


def test_resample_back_feeds_the_training_rate():
    seen = {}

    class Spy(torch.nn.Module):
        def forward(self, x, fs):
            seen["shape"], seen["fs"] = tuple(x.shape), fs
            return x.mean(-1)

    ResampleBack(Spy(), 100.0)(torch.randn(2, 1, 5000), 500.0)
    assert seen == {"shape": (2, 1, 1000), "fs": 100.0}


def test_ckconv_and_fno_baselines_forward():
    x = torch.as_tensor(make_sleep_bank(2, np.random.default_rng(0)).sample(150.0))
    ck = ckconv_model(1, 5, (8, 8), n_modes=8, window_s=10.0, generator=torch.Generator().manual_seed(0))
    assert ck(x, 150.0).shape == (2, 5)
    pytest.importorskip("neuralop")
    from icml2026.papers.neurocnn import FNOClassifier

    fno = FNOClassifier(
        1, 5, n_modes=32, hidden=8, d=8, pool_modes=8, generator=torch.Generator().manual_seed(0)
    )
    with torch.no_grad():
        assert fno(x, 150.0).shape == (2, 5)
    with pytest.raises(ValueError, match="sampling rate"):
        fno(x, -1.0)


def test_train_classifier_is_deterministic_and_learns_an_easy_task():
    from icml2026.papers.neurocnn import accuracy, predict, train_classifier

    rng = np.random.default_rng(0)
    # two classes: 3 Hz vs 9 Hz sinusoids in noise (easy, so 3 epochs suffice)
    t = np.arange(1000) / 100.0
    y = np.arange(60) % 2
    x = np.sin(2 * np.pi * np.where(y == 0, 3.0, 9.0)[:, None] * t + rng.uniform(0, 6, (60, 1)))
    x = (x + 0.3 * rng.standard_normal(x.shape)).astype(np.float32)[:, None]
    accs = []
    for _ in range(2):
        model = FixedCNN(1, 2, (8, 8), generator=torch.Generator().manual_seed(0))
        train_classifier(model, x, y, 100.0, x, y, torch.Generator().manual_seed(1), epochs=3, batch_size=16)
        accs.append(accuracy(y, predict(model, x, 100.0)))
        first = next(model.parameters()).detach().clone() if len(accs) == 1 else first  # noqa: F821
    assert accs[0] == accs[1] and accs[0] > 0.9  # well above chance 0.5 on a separable task
    assert torch.equal(first, next(model.parameters()).detach())


def test_train_classifier_restores_best_weights_of_an_fno():
    """Regression: neuraloperator's FNO puts a non-tensor '_metadata' entry in its state_dict."""
    pytest.importorskip("neuralop")
    from icml2026.papers.neurocnn import FNOClassifier, train_classifier

    x = np.random.default_rng(0).standard_normal((8, 1, 400)).astype(np.float32)
    y = np.arange(8) % 2
    model = FNOClassifier(1, 2, n_modes=16, hidden=8, d=8, pool_modes=4, generator=torch.Generator().manual_seed(0))
    hist = train_classifier(model, x, y, 100.0, x, y, torch.Generator().manual_seed(1), epochs=2, batch_size=4)
    assert len(hist.val_accuracy) == 2 and hist.best_epoch in (0, 1)


def test_cheap_experiments_pass_quick_preset():
    import dataclasses

    for name, changes in (("neurocnn.spline_basis", {}), ("neurocnn.layer_invariance", {"n_draws": 48})):
        exp = get_experiment(name)
        out = exp(dataclasses.replace(exp.config("quick"), **changes), make_rng(0))
        assert out.passed, [c for c in out.checks if not c.passed]


def test_layer_checks_can_fail():
    """The order-of-convergence check reads ~0 for an error that does not shrink, ~1 for 1/fs; the released
    taps at 90 Hz (D * fs not an integer) miss the brief's 10% bound that the exact taps meet."""
    import dataclasses

    from icml2026.papers.neurocnn.studies import _convergence_order

    rates = np.array([80.0, 100.0, 200.0, 500.0, 1000.0])
    assert abs(_convergence_order(rates, 0.05 + 0 * rates)) < 1e-9
    assert abs(_convergence_order(rates, 8.0 / rates) - 1.0) < 1e-9
    exp = get_experiment("neurocnn.layer_invariance")
    out = exp(dataclasses.replace(exp.config("quick"), n_draws=16, rates=(90.0, 200.0)), make_rng(1))
    assert out.metrics["rel_l2_released_90hz"] > 0.10 > out.metrics["rel_l2_exact_90hz"]


def test_model_invariance_is_a_statement_over_models():
    """Each model draws its own initialisation and windows: the per-model spread is reported, not hidden."""
    exp = get_experiment("neurocnn.model_invariance")
    out = exp(exp.config("smoke"), make_rng(0))
    rows = out.tables["per_rate"]
    assert all(r["neurocnn_min"] <= r["neurocnn_median"] <= r["neurocnn_max"] for r in rows)
    assert {c.name for c in out.checks} == {"neurocnn_over_cnn_200hz", "cnn_rel_diff_200hz",
                                             "neurocnn_over_cnn_300hz", "cnn_rel_diff_300hz"}


def test_bad_configs_raise():
    from icml2026.papers.neurocnn.studies import EcgConfig, ZeroShotConfig

    with pytest.raises(ValueError, match="train_fs"):
        ZeroShotConfig(test_rates=(200.0,))
    with pytest.raises(ValueError, match="models"):
        ZeroShotConfig(models=())
    with pytest.raises(ValueError, match="models"):
        ZeroShotConfig(models=("resnet",))
    exp = get_experiment("neurocnn.sleep_zero_shot")
    with pytest.raises(ValueError, match="must include 'neurocnn'"):
        exp(ZeroShotConfig(models=("cnn",)), make_rng(0))
    with pytest.raises(ValueError, match="n_recordings_per_class"):
        EcgConfig(n_recordings_per_class=1)


@pytest.mark.slow
def test_ecg_bank_is_one_function_of_time():
    pytest.importorskip("neurokit2")
    from icml2026.papers.neurocnn import make_ecg_bank

    bank = make_ecg_bank(1, 2, np.random.default_rng(0), window_s=8.0, recording_s=12.0)
    x100, x200 = bank.sample(100.0), bank.sample(200.0)
    assert x100.shape == (8, 1, 800)
    np.testing.assert_allclose(x200[..., ::2], x100, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["model_invariance", "sleep_zero_shot", "ecg_zero_shot"])
def test_quick_presets(name):
    exp = get_experiment(f"neurocnn.{name}")
    out = exp(exp.config("quick"), make_rng(0))
    assert out.passed, [c for c in out.checks if not c.passed]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sleep_zero_shot", "ecg_zero_shot"])
def test_full_presets_criteria_4_to_6(name):
    """Brief criteria 4-6 (training-heavy: ~tens of minutes on 2 cores)."""
    exp = get_experiment(f"neurocnn.{name}")
    out = exp(exp.config("full"), make_rng(0))
    assert out.passed, [c for c in out.checks if not c.passed]
