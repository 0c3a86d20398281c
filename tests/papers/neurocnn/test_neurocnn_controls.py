"""Issue 55: preconditions, planted and null controls of the comparative claims, and the layer reference's
closed form. Every test here fakes the training (or uses tiny untrained models), so each runs in about a second."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml2026.core.registry import get_experiment  # noqa: E402
from icml2026.papers.neurocnn import SplineConv1d  # noqa: E402
from icml2026.papers.neurocnn.studies import ecg, sleep  # noqa: E402
from icml2026.papers.neurocnn.studies.controls import degrade, reshuffle, wrong_class  # noqa: E402
from icml2026.papers.neurocnn.studies.layer import _exact_response, _sines  # noqa: E402
from icml2026.papers.neurocnn.studies.protocol import EvalPredictions  # noqa: E402

torch.set_num_threads(1)


def _predictions(n: int, acc: float, n_classes: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.integers(0, n_classes, n)
    pred = np.where(rng.random(n) < acc, labels, wrong_class(labels, n_classes, rng))
    return labels, pred


def test_degrade_lowers_the_expected_accuracy_by_the_drop_and_reshuffle_keeps_it():
    rng = np.random.default_rng(0)
    labels, pred = _predictions(200_000, 0.6, 5, rng)
    acc = float(np.mean(pred == labels))
    # 200k items: the binomial standard error of an accuracy is ~0.001, so 0.005 is five of them
    assert float(np.mean(degrade(pred, labels, 0.1, 5, rng) == labels)) == pytest.approx(acc - 0.1, abs=0.005)
    shuffled = reshuffle(pred, labels, 0.1, 5, rng)
    assert float(np.mean(shuffled == labels)) == pytest.approx(acc, abs=0.005)
    # the per-item errors do move: 10% of the correct and as many of the wrong items
    assert float(np.mean(shuffled != pred)) == pytest.approx(2 * 0.1 * acc, abs=0.005)
    assert np.all(wrong_class(labels, 5, rng) != labels)
    # a drop larger than the accuracy empties the correct items; nothing else changes
    assert not np.any(degrade(pred, labels, 1.0, 5, rng) == labels)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_controls_refuse_a_rate_outside_0_1(bad):
    labels, pred = _predictions(10, 0.5, 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="drop"):
        degrade(pred, labels, bad, 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="fraction"):
        reshuffle(pred, labels, bad, 5, np.random.default_rng(0))


def test_config_refuses_an_unknown_control():
    quick = get_experiment("neurocnn.sleep_zero_shot").presets["quick"]
    with pytest.raises(ValueError, match="control"):
        dataclasses.replace(quick, control="oracle")


def _fake_zero_shot(acc_neuro: float, acc_cnn: float, cnn_high: float, acc_fno: float | None = None):
    """A stand-in for the protocol's training: predictions of the given accuracies on 500 test items.

    NeurOCNN keeps its accuracy at every rate; the raw CNN falls to ``cnn_high`` at >= 2x the training rate,
    the resample-back CNN keeps its accuracy."""

    def fake(cfg, train, val, test, rng, keep):  # type: ignore[no-untyped-def]
        r = np.random.default_rng(1)
        labels, base = _predictions(500, acc_neuro, 5, r)
        cnn0 = np.where(r.random(500) < acc_cnn, labels, wrong_class(labels, 5, r))
        rows: dict[str, dict[float, np.ndarray]] = {"neurocnn": {}, "cnn_raw": {}, "cnn_resample_back": {}}
        for fs in cfg.test_rates:
            rows["neurocnn"][fs] = base
            rows["cnn_raw"][fs] = (cnn0 if fs < 2 * cfg.train_fs else
                                   np.where(r.random(500) < cnn_high, labels, wrong_class(labels, 5, r)))
            rows["cnn_resample_back"][fs] = cnn0
        if acc_fno is not None:
            rows["fno"] = {fs: np.where(r.random(500) < acc_fno, labels, wrong_class(labels, 5, r))
                           for fs in cfg.test_rates}
        keep.append(EvalPredictions(labels, 5, rows))
        results = {row: {fs: (float(np.mean(p == labels)), 0.0) for fs, p in per.items()} for row, per in rows.items()}
        return results, {}, {name: [0.5] for name in ("neurocnn", "cnn")}

    return fake


def _run_sleep(monkeypatch, control: str, **accs) -> dict[str, object]:
    monkeypatch.setattr(sleep, "_zero_shot", _fake_zero_shot(**accs))
    smoke = get_experiment("neurocnn.sleep_zero_shot").presets["smoke"]
    cfg = dataclasses.replace(smoke, control=control, test_rates=(75.0, 100.0, 150.0, 200.0, 300.0))
    out = sleep.sleep_zero_shot(cfg, np.random.default_rng(3))
    return {"out": out, "checks": {c.name: c for c in out.checks}}


def test_sleep_planted_passes_and_null_fails_every_comparative_claim(monkeypatch):
    accs = {"acc_neuro": 0.7, "acc_cnn": 0.8, "cnn_high": 0.3}
    planted = _run_sleep(monkeypatch, "planted", **accs)["checks"]
    null = _run_sleep(monkeypatch, "null", **accs)["checks"]
    comparative = [n for n, c in planted.items() if c.comparative]  # type: ignore[attr-defined]
    # the gaps at 75-300 Hz, the CNN drop and the FNO margin (built even though no FNO is trained)
    assert len(comparative) == 6 and "neurocnn_minus_fno_acc_lower95" in comparative
    assert all(planted[n].passed for n in comparative), {n: planted[n].value for n in comparative}  # type: ignore[attr-defined]
    assert not any(null[n].passed for n in comparative), {n: null[n].value for n in comparative}  # type: ignore[attr-defined]


def test_sleep_real_arms_and_an_unlearned_model_is_undecided(monkeypatch):
    run = _run_sleep(monkeypatch, "none", acc_neuro=0.7, acc_cnn=0.8, cnn_high=0.3, acc_fno=0.5)
    checks = run["checks"]
    assert run["out"].verdict == "reproduced"  # type: ignore[attr-defined]
    assert checks["neurocnn_acc_gap_200hz"].value == 0.0  # type: ignore[attr-defined]
    assert checks["fno_learned_train_rate"].role == "precondition"  # type: ignore[attr-defined]
    assert checks["neurocnn_minus_fno_acc_lower95"].passed  # type: ignore[attr-defined]
    # NeurOCNN at chance: its (perfect) rate stability says nothing, so the run is undecided, not reproduced
    chance = _run_sleep(monkeypatch, "none", acc_neuro=0.2, acc_cnn=0.8, cnn_high=0.3)
    assert not chance["checks"]["neurocnn_learned_train_rate"].passed  # type: ignore[attr-defined]
    assert chance["out"].verdict == "undecided"  # type: ignore[attr-defined]
    # an FNO as good as NeurOCNN: the margin's interval reaches below 0 and the claim fails
    tie = _run_sleep(monkeypatch, "none", acc_neuro=0.7, acc_cnn=0.8, cnn_high=0.3, acc_fno=0.7)
    assert not tie["checks"]["neurocnn_minus_fno_acc_lower95"].passed  # type: ignore[attr-defined]
    assert tie["out"].verdict == "not reproduced"  # type: ignore[attr-defined]


def test_ecg_control_gap_is_small_when_planted_and_large_when_null():
    rng = np.random.default_rng(0)
    labels, pred = _predictions(320, 0.7, 4, rng)
    kept = EvalPredictions(labels, 4, {"neurocnn": {100.0: pred}})
    cfg = get_experiment("neurocnn.ecg_zero_shot").presets["planted"]
    from icml2026.papers.neurocnn import macro_f1

    f1 = macro_f1(labels, pred, 4)
    planted = [abs(ecg._control_gap_f1(cfg, kept, rng) - f1) for _ in range(20)]
    null = [abs(ecg._control_gap_f1(dataclasses.replace(cfg, control="null"), kept, rng) - f1) for _ in range(20)]
    assert max(planted) <= cfg.tol_f1 < min(null)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # 0 / 0 on the static input
def test_model_invariance_planted_passes_null_fails_and_a_static_input_is_undecided():
    exp = get_experiment("neurocnn.model_invariance")
    small = dict(n_models=2, rates=(200.0,))
    planted = exp(dataclasses.replace(exp.presets["planted"], **small), np.random.default_rng(0))
    null = exp(dataclasses.replace(exp.presets["null"], **small), np.random.default_rng(0))
    p, n = ({c.name: c for c in o.checks} for o in (planted, null))
    assert p["neurocnn_over_cnn_200hz"].comparative and p["neurocnn_over_cnn_200hz"].passed
    assert not n["neurocnn_over_cnn_200hz"].passed  # two fixed CNNs: ratio ~1
    # a "new" rate equal to the base rate: the CNN does not move, so the comparison cannot be made
    same = exp(dataclasses.replace(exp.presets["smoke"], n_models=1, rates=(100.0,)), np.random.default_rng(0))
    assert {c.name: c for c in same.checks}["cnn_rel_diff_100hz"].role == "precondition"
    assert same.verdict == "undecided"


def test_layer_reference_closed_form_agrees_with_a_fine_sampling_and_detects_a_wrong_sign():
    rng = np.random.default_rng(0)
    layer = SplineConv1d(2, 3, 15, 0.5, generator=torch.Generator().manual_seed(0))
    amp, freq, phase = rng.standard_normal((2, 5)), rng.uniform(0.5, 18, (2, 5)), rng.uniform(0, 6.3, (2, 5))
    fs, window = 8000.0, 4.0
    with torch.no_grad():
        y, _ = layer(_sines(amp, freq, phase, fs, window), fs)
    t = np.arange(y.shape[-1]) / fs
    inner = (t >= 0.5) & (t <= window - 0.5)
    p = layer.control.detach().double().numpy()
    exact = _exact_response(p, 0.5, amp, freq, phase, t[inner])
    err = np.linalg.norm(y[0].numpy()[:, inner] - exact) / np.linalg.norm(exact)
    # the 1/fs Riemann sum is first order: ~0.5% at 1 kHz (card), so ~0.06% at 8 kHz; 0.2% leaves room
    assert err < 2e-3
    # the mirrored kernel (lag sign flipped) is far from the layer's output
    mirrored = _exact_response(p[..., ::-1].copy(), 0.5, amp, freq, phase, t[inner])
    assert np.linalg.norm(y[0].numpy()[:, inner] - mirrored) / np.linalg.norm(exact) > 0.1
