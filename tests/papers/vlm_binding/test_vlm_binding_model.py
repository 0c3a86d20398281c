"""Criterion 2 (noise only shifts positions), the image path, the encoder, and the analysis tools."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml2026.core.errors import BadInput
from icml2026.papers.vlm_binding import (
    BindingLM,
    CellEncoder,
    Trainer,
    Vocab,
    attention_knockout,
    classify_patched,
    counterfactual_sample,
    image_batch,
    interchange_fractions,
    interchange_intervention,
    noise_text_batch,
    pretrain_encoder,
    probe_layers,
    sample_task,
    sym_pos_ratio,
    text_batch,
)
from icml2026.papers.vlm_binding.experiments import _strip_noise
from icml2026.papers.vlm_binding.mechanism import InterchangeResult, _patched_predictions

V = Vocab(16, 16, 16, 8)


def _model(n_layer: int = 2, encoder: CellEncoder | None = None, seed: int = 0) -> BindingLM:
    return BindingLM(V, encoder, torch.Generator().manual_seed(seed), n_layer=n_layer, d_model=32, n_head=4).eval()


def test_noise_tokens_only_shift_positions() -> None:
    rng = np.random.default_rng(0)
    m = _model()
    samples = [sample_task(n, rng, V) for n in (2, 4, 6, 8)]
    noisy = noise_text_batch(samples, rng)
    with torch.no_grad():
        a, b = m(noisy)[0], m(_strip_noise(noisy))[0]
        c = m(text_batch(samples))[0]
    assert float((a - b).abs().max()) < 1e-5  # brief criterion 2: equal to 1e-5
    assert float((a - c).abs().max()) > 1e-3  # the positions do matter (else the check tests nothing)


def test_noise_identity_is_invisible() -> None:
    rng = np.random.default_rng(1)
    m = _model()
    b = noise_text_batch([sample_task(5, rng, V) for _ in range(4)], rng)
    b2 = type(b)(**{**b.__dict__, "ids": b.ids.copy()})
    noise = ~b.key_mask & (b.ids != V.pad)
    b2.ids[noise] = V.noise0 + (b.ids[noise] - V.noise0 + 1) % V.n_noise
    with torch.no_grad():
        assert torch.equal(m(b)[0], m(b2)[0])


def test_feature_cache_equals_encoding_the_rendered_scene() -> None:
    rng = np.random.default_rng(2)
    enc = CellEncoder(16, 4)
    pretrain_encoder(enc, V, 1, rng)
    m = _model(encoder=enc)
    b = image_batch([sample_task(n, rng, V) for n in (1, 5, 12)], rng)
    with torch.no_grad():
        rendered = m(b)[0]
        b.images = None  # -> the cached cell-feature table
        cached = m(b)[0]
    assert float((rendered - cached).abs().max()) < 1e-5
    assert b.ids.shape[1] - b.image_start[0] == 64 + 2 * 1 + 3


def test_encoder_is_frozen_inside_the_lm() -> None:
    enc = CellEncoder(16, 4)
    m = _model(encoder=enc)
    tr = Trainer(m)
    rng = np.random.default_rng(3)
    before = [p.clone() for p in m.encoder.parameters()]  # type: ignore[union-attr]
    proj = m.projector.weight.clone()  # type: ignore[union-attr]
    tr.step(image_batch([sample_task(3, rng, V) for _ in range(4)], rng, render=False))
    assert all(torch.equal(a, b) for a, b in zip(before, m.encoder.parameters(), strict=True))  # type: ignore[union-attr]
    assert not torch.equal(proj, m.projector.weight)  # type: ignore[union-attr]


def test_untrained_encoder_is_at_chance_and_training_improves_it() -> None:
    rng = np.random.default_rng(4)
    r0 = pretrain_encoder(CellEncoder(16, 8), V, 0, rng, n_eval=300)
    r1 = pretrain_encoder(CellEncoder(16, 8), V, 80, rng, batch_size=64, n_eval=300)
    assert r0.colour_accuracy < 0.3 and r0.shape_accuracy < 0.3  # 16 classes: chance ~ 1/16
    assert r1.colour_accuracy > r0.colour_accuracy + 0.3


@pytest.mark.slow
def test_encoder_pretraining_reaches_99_percent() -> None:
    rep = pretrain_encoder(CellEncoder(32, 16), Vocab(), 600, np.random.default_rng(5))
    assert rep.colour_accuracy >= 0.99 and rep.shape_accuracy >= 0.99  # brief criterion 1


def test_patching_after_the_last_layer_returns_the_counterfactual_prediction() -> None:
    # after the last block the final residual alone fixes the logits: the patched run must predict what x' does
    rng = np.random.default_rng(6)
    m = _model(n_layer=2)
    xs = [sample_task(5, rng, V) for _ in range(16)]
    cfs = [counterfactual_sample(x, rng)[0] for x in xs]
    patched = _patched_predictions(m, xs, cfs, 1, rng)
    with torch.no_grad():
        own = m.item_logits(text_batch(cfs)).argmax(1).numpy()
    np.testing.assert_array_equal(patched, own)
    with torch.no_grad():
        clean = m.item_logits(text_batch(xs)).argmax(1).numpy()
    assert not np.array_equal(clean, own)  # x and x' differ, so the identity above is not trivial


def test_classify_patched_names_each_outcome() -> None:
    rng = np.random.default_rng(7)
    x = sample_task(6, rng, V)
    xp, p_prime = counterfactual_sample(x, rng)
    sym = x.item_of_shape(x.shape_of_colour(xp.query_colour))
    pos = x.item_of_shape(x.objects[p_prime][1])
    other = next(i for i in range(V.n_items) if i not in {sym, pos, xp.answer, x.answer})
    got = [classify_patched(i, x, xp) for i in (sym, pos, xp.answer, x.answer, other)]
    assert got == ["symbolic", "positional", "x'-answer", "original", "other"]
    assert interchange_intervention(_model(), x, xp, 0) in got


def test_sym_pos_ratio_picks_the_dominant_layer_and_skips_a_final_copy_layer() -> None:
    zero = dict.fromkeys(("symbolic", "positional", "x'-answer", "original", "other"), 0.0)
    fr = [
        {**zero, "original": 1.0},
        {**zero, "symbolic": 0.2, "positional": 0.6, "original": 0.2},
        {**zero, "x'-answer": 1.0},
    ]
    ratio, layer = sym_pos_ratio(InterchangeResult(fr, 100))
    assert layer == 1 and ratio == pytest.approx(21 / 61)


def test_knockout_at_the_only_layer_cuts_the_context() -> None:
    # one layer, query blocked from the context: the logits cannot depend on which objects are in the context
    rng = np.random.default_rng(8)
    m = _model(n_layer=1)
    x = sample_task(4, rng, V)
    y = type(x)(
        [(c, s) for c, s in reversed(x.objects)],
        x.associations,
        x.query_colour,
        x.answer,
        x.n_objects - 1 - x.query_slot,
        V,
    )
    from icml2026.papers.vlm_binding.mechanism import _knockout

    outs = []
    for s in (x, y):
        b = text_batch([s])
        with torch.no_grad(), _knockout(m, 0, b.is_context):
            outs.append(m(b)[0])
    assert torch.equal(outs[0], outs[1])
    with torch.no_grad():
        assert not torch.equal(m(text_batch([x]))[0], m(text_batch([y]))[0])
    assert 0.0 <= attention_knockout(m, [x, y], 0, rng) <= 1.0


def test_probe_and_interchange_outputs_are_well_formed() -> None:
    rng = np.random.default_rng(9)
    m = _model(n_layer=2)
    samples = [sample_task(int(rng.integers(2, 6)), rng, V) for _ in range(40)]
    pr = probe_layers(m, samples, rng)
    assert len(pr.slot) == len(pr.shape) == 2
    assert 0.0 <= pr.slot_chance <= 1.0 and 0.0 <= pr.shape_chance <= 1.0
    assert all(0.0 <= a <= 1.0 for a in pr.slot + pr.shape)
    res = interchange_fractions(m, 8, (3, 5), rng)
    assert all(abs(sum(f.values()) - 1.0) < 1e-9 for f in res.fractions)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: attention_knockout(
                _model(), [sample_task(3, np.random.default_rng(0), V)], 5, np.random.default_rng(0)
            ),
            "layer",
        ),
        (
            lambda: probe_layers(_model(), [sample_task(3, np.random.default_rng(0), V)] * 5, np.random.default_rng(0)),
            "samples",
        ),
        (lambda: BindingLM(V, None, torch.Generator(), d_model=30, n_head=4), "d_model"),
        (lambda: interchange_fractions(_model(), 5, (2, 4), np.random.default_rng(0)), "n_range"),
    ],
)
def test_bad_inputs_name_the_argument(call, match) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=match):
        call()


def test_save_and_from_pretrained_round_trip(tmp_path) -> None:  # noqa: ANN001
    # the real loading path (transformers from_pretrained on a local folder) on a tiny model saved here
    rng = np.random.default_rng(10)
    enc = CellEncoder(16, 4)
    m = _model(encoder=enc)
    m.save_pretrained(tmp_path)
    m2 = BindingLM.from_pretrained(tmp_path)
    b = image_batch([sample_task(4, rng, V) for _ in range(3)], rng)
    t = text_batch([sample_task(5, rng, V) for _ in range(3)])
    with torch.no_grad():
        assert torch.equal(m(b)[0], m2(b)[0]) and torch.equal(m(t)[0], m2(t)[0])
    with pytest.raises(BadInput, match="path"):
        BindingLM.from_pretrained(tmp_path / "missing")
    import shutil

    shutil.rmtree(tmp_path / "lm")
    (tmp_path / "lm").mkdir()  # an lm folder without a model: the core loader's one line names it
    with pytest.raises(BadInput, match="path = .*lm"):
        BindingLM.from_pretrained(tmp_path)


def test_trainer_steps_through_the_core_loop_equal_the_plain_pytorch_step() -> None:
    """The Trainer runs on core.training: with its default options (fp32, no accumulation, clip 1.0) three
    steps give the same weights, bit for bit, as the plain AdamW step with warm-up and clipping."""
    from icml2026.papers.vlm_binding.train import Trainer, make_batch, sample_batch

    rng = np.random.default_rng(3)
    batches = [make_batch(sample_batch(8, (2, 4), V, rng), "text", rng) for _ in range(3)]
    a, b = _model(), _model()
    tr = Trainer(a, lr=1e-3, warmup=2)
    for batch in batches:
        tr.step(batch)
    opt = torch.optim.AdamW([p for p in b.parameters() if p.requires_grad], lr=1e-3, weight_decay=0.01)
    for k, batch in enumerate(batches):
        for g in opt.param_groups:
            g["lr"] = 1e-3 * min(1.0, (k + 1) / 2)
        b.train()
        logits, _ = b(batch)
        loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(batch.answer + V.item0))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(b.parameters(), 1.0)
        opt.step()
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert tr.steps_done == 3 and len(tr.losses) == 3


def test_trainer_accumulates_micro_batches_and_trains_in_bf16() -> None:
    from icml2026.core.training import TrainingOptions
    from icml2026.papers.vlm_binding.train import Trainer

    seen: list[int] = []
    tr = Trainer(_model(), lr=1e-3, options=TrainingOptions(precision="bf16", grad_accum=2, max_grad_norm=1.0))
    tr.run_stage(3, {"text": 1.0}, (2, 4), 4, np.random.default_rng(0), progress=seen.append)
    assert tr.steps_done == 3 and seen == [0, 1, 2]  # three optimizer steps of two micro-batches each
    assert all(p.dtype == torch.float32 for p in tr.model.parameters())
    assert all(np.isfinite(tr.losses))
