"""Issue 31: training to a plateau (early stopping, the best-epoch-before-cap check) and the baselines' settings
as released (no spline-conv bias, CKConv's weight-normalised KernelNet on [-1, 1], no extra FNO GroupNorm)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml2026.papers.neurocnn import FixedCNN, SirenConv1d, SplineConv1d, train_classifier  # noqa: E402
from icml2026.papers.neurocnn.studies import (  # noqa: E402
    EcgConfig,
    ZeroShotConfig,
    _plateau_checks,
    _training_table,
)

torch.set_num_threads(1)


def _task(n: int = 24, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.arange(400) / 100.0
    y = np.arange(n) % 2
    x = np.sin(2 * np.pi * np.where(y == 0, 3.0, 9.0)[:, None] * t + rng.uniform(0, 6, (n, 1)))
    return x.astype(np.float32)[:, None], y


def test_patience_stops_training_after_the_best_epoch():
    x, y = _task()
    # lr so small that nothing changes: the validation accuracy never beats epoch 0, so training stops after
    # 1 + patience epochs, far before the cap of 50
    model = FixedCNN(1, 2, (4, 4), generator=torch.Generator().manual_seed(0))
    hist = train_classifier(model, x, y, 100.0, x, y, torch.Generator().manual_seed(1), epochs=50, batch_size=8,
                            lr=1e-12, patience=3)
    assert hist.best_epoch == 0 and hist.n_epochs == 4 and hist.stopped_early and hist.max_epochs == 50
    # without patience every epoch runs (the released code's fixed schedule)
    model = FixedCNN(1, 2, (4, 4), generator=torch.Generator().manual_seed(0))
    hist = train_classifier(model, x, y, 100.0, x, y, torch.Generator().manual_seed(1), epochs=5, batch_size=8,
                            lr=1e-12)
    assert hist.n_epochs == 5 and not hist.stopped_early


@pytest.mark.parametrize("patience", [0, -1, 2.5, True])
def test_patience_must_be_a_positive_integer(patience):
    x, y = _task(8)
    model = FixedCNN(1, 2, (4,), generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="patience"):
        train_classifier(model, x, y, 100.0, x, y, torch.Generator().manual_seed(1), epochs=2, patience=patience)


def test_plateau_check_fails_for_a_model_still_improving_at_the_cap():
    improving = [0.2 + 0.03 * e for e in range(20)]  # the run: best epoch 19-20 of 20
    plateaued = [0.2, 0.5, 0.7, 0.8, 0.8, 0.79, 0.8, 0.78, 0.8, 0.8]  # best epoch 4, then 6 flat epochs
    checks = {c.name: c for c in _plateau_checks({"a": improving, "b": plateaued}, epochs=20, patience=6)}
    assert not checks["a_best_epoch_before_cap"].passed and checks["a_best_epoch_before_cap"].value == 20
    assert checks["b_best_epoch_before_cap"].passed and checks["b_best_epoch_before_cap"].value == 4
    rows = {r["model"]: r for r in _training_table({"a": improving, "b": plateaued}, 20, 6)}
    assert rows["a"]["plateau"] == 0 and rows["b"]["plateau"] == 1 and rows["b"]["epochs_run"] == 10


@pytest.mark.parametrize("cls", [ZeroShotConfig, EcgConfig])
def test_plateau_check_needs_early_stopping_and_room_before_the_cap(cls):
    with pytest.raises(ValueError, match="^patience"):
        cls(patience=0, check_plateau=True)
    with pytest.raises(ValueError, match="^patience"):
        cls(epochs=10, patience=10, check_plateau=True)
    cls(epochs=10, patience=0, check_plateau=False)  # the released code's fixed schedule, no check


def test_spline_conv_has_no_bias_as_released_and_ckconv_has_its_bias():
    assert SplineConv1d(2, 3).bias is None
    assert "bias" not in dict(SplineConv1d(2, 3).named_parameters())
    assert SirenConv1d(2, 3).bias is not None


def test_ckconv_kernel_is_the_weight_normalised_siren_on_minus_one_one():
    layer = SirenConv1d(2, 3, hidden=16, generator=torch.Generator().manual_seed(0))
    linears = [m for m in layer.net if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 3 and all(torch.nn.utils.parametrize.is_parametrized(m, "weight") for m in linears)
    # the gain starts at |v|: the weight equals the SIREN init, later layers within sqrt(6/h)/omega_0
    bound = np.sqrt(6.0 / 16) / 30.0
    assert float(linears[1].weight.detach().abs().max()) <= bound + 1e-7
    # the released taps at 100 Hz with D = 0.5 s (51 taps) are linspace(-1, 1) in CKConv's positions
    with torch.no_grad():
        layer.spacing = "released"
        k = layer.kernel(100.0)
        ref = layer.net(torch.linspace(-1.0, 1.0, 51)[:, None]).T.reshape(3, 2, 51)
    torch.testing.assert_close(k, ref)


def test_fno_baseline_pools_the_fno_output_directly():
    pytest.importorskip("neuralop")
    from icml2026.papers.neurocnn import FNOClassifier

    fno = FNOClassifier(1, 2, n_modes=16, hidden=8, d=8, pool_modes=4, generator=torch.Generator().manual_seed(0))
    assert not any(isinstance(m, torch.nn.GroupNorm) for m in fno.modules())


def test_ecg_checks_are_statements_over_the_repeats(monkeypatch):
    """With n_repeats trainings per run the gap check and the learned-something guard use their mean (worst and
    spread reported), each training gets its own child stream, and a single repeat trains on the run's own
    generator (as before the field existed, so earlier runs stay reproducible)."""
    import dataclasses

    from icml2026.papers.neurocnn.studies import ecg as ex

    seen: list[np.random.Generator] = []
    # per training: macro-F1 at 100 Hz and at 200 Hz (accuracies are not checked here)
    f1s = iter([(0.80, 0.70), (0.60, 0.59), (0.40, 0.38)])

    def fake_once(cfg, rng, keep=None, bank=None):  # type: ignore[no-untyped-def]
        assert bank is None  # share_bank is off: each training simulates its own recordings
        seen.append(rng)
        f100, f200 = next(f1s)
        return {"neurocnn": {100.0: (f100, f100), 200.0: (f200, f200)}}, {"train_neurocnn_s": 1.0}, {"neurocnn": [0.5]}

    monkeypatch.setattr(ex, "_ecg_once", fake_once)
    from icml2026.core.registry import get_experiment

    smoke = dataclasses.replace(get_experiment("neurocnn.ecg_zero_shot").presets["smoke"], n_repeats=3)
    rng = np.random.default_rng(5)
    out = ex.ecg_zero_shot(smoke, rng)
    checks = {c.name: c.value for c in out.checks}
    assert checks["neurocnn_macro_f1_gap_200hz"] == pytest.approx((0.10 + 0.01 + 0.02) / 3)
    assert out.metrics["neurocnn_macro_f1_gap_200hz_max"] == pytest.approx(0.10)
    assert checks["neurocnn_macro_f1_train_rate"] == pytest.approx(0.60)
    assert out.metrics["neurocnn_macro_f1_train_rate_min"] == pytest.approx(0.40)
    assert len({id(g) for g in seen}) == 3 and all(g is not rng for g in seen)
    assert {r["repeat"] for r in out.tables["zero_shot"]} == {0, 1, 2}
    seen.clear()
    f1s = iter([(0.80, 0.70)])
    ex.ecg_zero_shot(dataclasses.replace(smoke, n_repeats=1), rng)
    assert seen == [rng]


def test_ecg_share_bank_simulates_once_and_splits_per_training(monkeypatch):
    """share_bank: one ECGSYN bank for every training of a run (the simulation is most of a quick run's cost),
    each training with its own split and init stream; without it every training simulates its own."""
    import dataclasses

    from icml2026.core.registry import get_experiment
    from icml2026.papers.neurocnn.studies import ecg as ex

    banks: list[object] = []
    simulated: list[object] = []  # one real smoke bank, simulated once and handed out for every request

    def counting_bank(cfg, rng):  # type: ignore[no-untyped-def]
        banks.append(rng)
        if not simulated:  # 4 classes x 3 recordings x 2 windows: only labels and groups are read here
            labels = np.repeat(np.arange(4), 6)
            simulated.append(ex.SignalBank(labels=labels, groups=np.arange(24) // 2, window_s=4.0,
                                           class_names=("N", "A", "O", "~"), coef=np.zeros((24, 2)),
                                           events=np.full((24, 1, 6), -1.0), scale=1.0))
        return simulated[0]

    got: list[tuple[object, object]] = []

    def fake_zero_shot(zcfg, train, val, test, r_mod, keep):  # type: ignore[no-untyped-def]
        got.append((r_mod, train))
        return {"neurocnn": {100.0: (0.8, 0.8), 200.0: (0.79, 0.79)}}, {"train_neurocnn_s": 1.0}, {"neurocnn": [0.5]}

    monkeypatch.setattr(ex, "_ecg_bank", counting_bank)
    monkeypatch.setattr(ex, "_zero_shot", fake_zero_shot)
    smoke = dataclasses.replace(get_experiment("neurocnn.ecg_zero_shot").presets["smoke"], n_repeats=2)
    ex.ecg_zero_shot(dataclasses.replace(smoke, share_bank=True), np.random.default_rng(0))
    assert len(banks) == 1 and len(got) == 2 and got[0][0] is not got[1][0]
    banks.clear()
    got.clear()
    ex.ecg_zero_shot(smoke, np.random.default_rng(0))
    assert len(banks) == 2 and len(got) == 2
