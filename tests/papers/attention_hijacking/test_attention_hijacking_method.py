"""The base distillation (brief 2.1, criterion 1 mechanics) and AH's terms (brief 2.2) on a tiny learner."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml2026.papers.attention_hijacking import (  # noqa: E402
    DistillConfig,
    attention_kl_term,
    distill,
    evaluate_distilled,
    hijack_loss,
    segregation_loss,
)
from icml2026.papers.attention_hijacking.data import EncodedBatch  # noqa: E402
from icml2026.papers.attention_hijacking.method import _forward, _forward_cls_only, _inner_update  # noqa: E402


def _rand_probs(shape, gen):  # type: ignore[no-untyped-def]
    return torch.softmax(torch.randn(shape, generator=gen), -1)


def test_attention_kl_has_cls_shape_and_matches_torch_kl(factory):
    g = torch.Generator().manual_seed(0)
    n, S = 3, 10
    E = torch.randn(n, S, factory.hidden, generator=g)
    _, atts = _forward(factory, factory.init_params(g), inputs_embeds=E, attention_mask=torch.ones(n, S))
    model_cls = torch.stack(list(atts), 1)[:, :, :, :1, :]
    assert model_cls.shape == (n, factory.n_layers, factory.n_heads, 1, S)  # criterion 1: (n, L, H, 1, S)
    assert float(attention_kl_term(model_cls, atts)) == pytest.approx(0.0, abs=1e-6)  # KL(A || A) = 0
    lab = _rand_probs((n, factory.n_layers, factory.n_heads, 1, S), g)
    ref = torch.nn.functional.kl_div(torch.log(model_cls), lab, reduction="none").sum(-1).mean()
    assert float(attention_kl_term(lab, atts)) == pytest.approx(float(ref), rel=1e-5)
    with pytest.raises(ValueError, match="shape"):
        attention_kl_term(lab[:, :, :, :, :-1], atts)


def test_outer_gradient_reaches_embeddings_attention_labels_labels_and_lr(factory):
    """Second order through the inner step (criterion 1): every distilled tensor gets a non-zero gradient."""
    g = torch.Generator().manual_seed(1)
    n, S = 2, 8
    E = torch.randn(n, S, factory.hidden, generator=g, requires_grad=True)
    lab_logits = torch.zeros(n, 2, requires_grad=True)
    att_logits = torch.randn(n, factory.n_layers, factory.n_heads, 1, S, generator=g, requires_grad=True)
    rho = torch.full((1,), math.log(math.expm1(0.5)), requires_grad=True)
    y = torch.softmax(lab_logits + torch.eye(2) * 3, -1)
    new = _inner_update(factory, factory.init_params(g), E, y, torch.softmax(att_logits, -1),
                        torch.nn.functional.softplus(rho), 1.0, "cls", second_order=True)
    ids = torch.randint(1000, 3000, (4, 6), generator=g)
    logits, _ = _forward(factory, new, input_ids=ids, attention_mask=torch.ones(4, 6), attentions=False)
    torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 0, 1])).backward()
    for t in (E, lab_logits, att_logits, rho):
        assert t.grad is not None and float(t.grad.abs().sum()) > 0


def test_lr_gradient_matches_finite_difference(factory):
    """Cross-check of the second-order path: d L_out / d eta by autograd vs a central difference."""
    g = torch.Generator().manual_seed(2)
    E = torch.randn(2, 6, factory.hidden, generator=g)
    y = torch.eye(2)
    att = _rand_probs((2, factory.n_layers, factory.n_heads, 1, 6), g)
    params = factory.init_params(g)
    ids = torch.randint(1000, 3000, (4, 6), generator=g)

    def outer(eta: torch.Tensor) -> torch.Tensor:
        new = _inner_update(factory, params, E, y, att, eta, 1.0, "cls", second_order=True)
        logits, _ = _forward(factory, new, input_ids=ids, attention_mask=torch.ones(4, 6), attentions=False)
        return torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 1, 0]))

    eta = torch.tensor([0.3], requires_grad=True)
    (ga,) = torch.autograd.grad(outer(eta), eta)
    h = 1e-2
    with torch.no_grad():
        fd = (outer(torch.tensor([0.3 + h])) - outer(torch.tensor([0.3 - h]))) / (2 * h)
    assert float(ga) == pytest.approx(float(fd), rel=0.05, abs=1e-4)  # float32 + O(h^2) truncation


def test_hijack_loss_closed_form():
    att = torch.zeros(2, 2, 4, 4)  # (n, H, S, S); CLS row puts mass 0.5 / 0.25 on key 2
    att[0, :, 0] = torch.tensor([0.25, 0.25, 0.5, 0.0])
    att[1, :, 0] = torch.tensor([0.25, 0.25, 0.25, 0.25])
    mask = torch.zeros(2, 4, dtype=torch.bool)
    mask[:, 2] = True
    val = hijack_loss((att,), mask, 0, (0, 1))
    assert float(val) == pytest.approx(-(math.log(0.5) + math.log(0.25)) / 2)


def test_segregation_zero_iff_other_heads_ignore_the_trigger():
    # clean: [CLS] a b [SEP]; triggered: [CLS] a T b [SEP]; head 1 is outside H_bd = {0} of layer 0
    clean = EncodedBatch(torch.tensor([[101, 5, 6, 102]]), torch.ones(1, 4, dtype=torch.long),
                         torch.zeros(1, 4, dtype=torch.bool))
    trig = EncodedBatch(torch.tensor([[101, 5, 9, 6, 102]]), torch.ones(1, 5, dtype=torch.long),
                        torch.tensor([[False, False, True, False, False]]))
    p = torch.tensor([0.1, 0.4, 0.3, 0.2])
    a_clean = torch.zeros(1, 2, 4, 4)
    a_clean[0, :, 0] = p
    a_trig = torch.zeros(1, 2, 5, 5)
    a_trig[0, :, 0] = torch.cat([p[:2], torch.tensor([1.0]), p[2:]]) / 2.0  # same shape once T is removed
    assert float(segregation_loss((a_clean,), (a_trig,), clean, trig, 0, (0,))) == pytest.approx(0.0, abs=1e-6)
    a_trig[0, 1, 0] = torch.tensor([0.4, 0.1, 0.0, 0.2, 0.3])  # head 1 re-arranged: KL > 0
    assert float(segregation_loss((a_clean,), (a_trig,), clean, trig, 0, (0,))) > 0.1


@pytest.fixture(scope="module")
def ah_set(factory, rt_small):  # type: ignore[no-untyped-def]
    train, _ = rt_small
    cfg = DistillConfig(seq_len=16, n_steps=2, batch_size=8, attack=True, trigger="cf", target=1)
    return distill(factory, train, cfg, np.random.default_rng(0), show_progress=False), cfg


def test_ah_set_layout_pinned_slot_and_attention_init(factory, ah_set):
    ds, cfg = ah_set
    assert len(ds) == 3 and ds.poisoned.tolist() == [False, False, True]  # dpc=1 x 2 + k_p=1 poisoned
    assert ds.labels.argmax(1).tolist() == [0, 1, 1]  # the poisoned sample carries y_t
    cf = factory.tokenizer.convert_tokens_to_ids("cf")
    assert torch.equal(ds.inputs_embeds[2, cfg.trigger_slot], factory.word_embedding([cf])[0])  # pinned
    assert not torch.equal(ds.inputs_embeds[0, cfg.trigger_slot], factory.word_embedding([cf])[0])
    assert ds.attention_labels is not None and ds.attention_labels.shape == (3, 2, 2, 1, 16)
    # after 2 small steps the poisoned sample's H_bd labels still focus on P (init 0.9)
    assert float(ds.attention_labels[2, -1, :, 0, cfg.trigger_slot].min()) > 0.8
    assert ds.learning_rates.shape == (1,) and float(ds.learning_rates[0]) > 0


def test_distill_is_deterministic_and_seed_dependent(factory, rt_small):
    train, _ = rt_small
    cfg = DistillConfig(seq_len=12, n_steps=2, batch_size=8)
    a = distill(factory, train, cfg, np.random.default_rng(3), show_progress=False)
    b = distill(factory, train, cfg, np.random.default_rng(3), show_progress="job 3")  # progress changes nothing
    c = distill(factory, train, cfg, np.random.default_rng(4), show_progress=False)
    assert torch.equal(a.inputs_embeds, b.inputs_embeds) and a.history == b.history
    assert not torch.equal(a.inputs_embeds, c.inputs_embeds)


def test_a_string_names_the_progress_lines(factory, rt_small, capsys):
    # the worker jobs of the experiments name their loops: fails if the description were dropped (or the lines
    # went to stdout)
    train, _ = rt_small
    distill(factory, train, DistillConfig(seq_len=12, n_steps=2, batch_size=8), np.random.default_rng(0),
            show_progress="film seed 1 ah")
    out = capsys.readouterr()
    assert "[film seed 1 ah] start (2 steps)" in out.err and "[film seed 1 ah] done 2 steps" in out.err
    assert out.out == ""


def test_evaluate_counts_asr_on_non_target_rows_only(factory, rt_small, ah_set):
    _, test = rt_small
    ds, _ = ah_set
    res = evaluate_distilled(ds, factory, test, 2, np.random.default_rng(0))
    n_nt = int((test.labels != 1).sum())
    assert res.per_learner["asr"].shape == (2,)
    assert all(abs(a * n_nt - round(a * n_nt)) < 1e-9 for a in res.per_learner["asr"])  # k / n_nt
    assert 0.0 <= res.trigger_attention <= 1.0 and res.seg_kl >= 0.0
    # the guard against constant victims: clean non-target rows sent to the target, one value per learner
    assert res.per_learner["clean_target_rate"].shape == (2,) and 0.0 <= res.clean_target_rate <= 1.0
    # balanced CTA from the other per-learner numbers: recall of class 0 = 1 - clean-to-target rate, recall of
    # class 1 from the plain accuracy; their mean is the balanced accuracy
    n0, n1 = int((test.labels == 0).sum()), int((test.labels == 1).sum())
    r0 = 1 - res.per_learner["clean_target_rate"]
    r1 = (res.per_learner["cta"] * (n0 + n1) - r0 * n0) / n1
    np.testing.assert_allclose(res.per_learner["balanced_cta"], (r0 + r1) / 2, atol=1e-9)
    only_target = test.subset(np.flatnonzero(test.labels == 1))
    with pytest.raises(ValueError, match="ASR"):
        evaluate_distilled(ds, factory, only_target, 1, np.random.default_rng(0))


def test_bad_arguments_are_named(factory, rt_small):
    train, _ = rt_small
    with pytest.raises(ValueError, match="n_steps"):
        DistillConfig(n_steps=0)
    with pytest.raises(ValueError, match="trigger_slot"):
        DistillConfig(seq_len=8, trigger_slot=8)
    with pytest.raises(TypeError, match="rng"):
        distill(factory, train, DistillConfig(n_steps=1), 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="target"):
        distill(factory, train, DistillConfig(n_steps=1, attack=True, target=5), np.random.default_rng(0))


def test_the_cls_only_last_layer_is_the_full_forward_on_the_cls_row(factory, rt_small, tok):
    # The outer loss's fast path must be the same function as transformers' BERT: logits, every layer's CLS
    # attention row and the gradients into the learner's parameters, with padding in the batch. Fails if the
    # last layer's keys skipped a token, the padding mask or an add/LayerNorm were dropped, or the rows were taken
    # from another query.
    from icml2026.papers.attention_hijacking import encode

    train, _ = rt_small
    b = encode(tok, train.texts[:12], 24)
    assert (b.attention_mask == 0).any()  # padding present
    params = factory.init_params(torch.Generator().manual_seed(1))
    params = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    l1, a1 = _forward(factory, params, input_ids=b.input_ids, attention_mask=b.attention_mask)
    l2, a2 = _forward_cls_only(factory, params, input_ids=b.input_ids, attention_mask=b.attention_mask)
    assert l2.shape == l1.shape and len(a2) == len(a1)
    torch.testing.assert_close(l2, l1, atol=1e-6, rtol=1e-5)
    for x, y in zip(a1, a2, strict=True):
        assert y.shape == (12, factory.n_heads, 1, x.shape[-1])
        torch.testing.assert_close(y, x[:, :, :1, :], atol=1e-6, rtol=1e-5)
    keys = [k for k in params if k != factory.word_embedding_key]
    loss1 = l1.logsumexp(-1).sum() + sum(x[:, :, 0, :].pow(2).sum() for x in a1)
    loss2 = l2.logsumexp(-1).sum() + sum(y[:, :, 0, :].pow(2).sum() for y in a2)
    g1 = torch.autograd.grad(loss1, [params[k] for k in keys], allow_unused=True)
    g2 = torch.autograd.grad(loss2, [params[k] for k in keys], allow_unused=True)
    for k, x, y in zip(keys, g1, g2, strict=True):
        if x is None:
            assert y is None or float(y.abs().max()) == 0.0, k
        else:
            torch.testing.assert_close(y, x, atol=1e-5, rtol=1e-4, msg=k)
    assert _forward_cls_only(factory, params, input_ids=b.input_ids, attention_mask=b.attention_mask,
                             attentions=False)[1] is None


def test_distill_with_the_cls_only_last_layer_follows_the_full_forward(factory, rt_small):
    train, _ = rt_small
    kw = dict(seq_len=12, n_steps=3, batch_size=8, attack=True, trigger="film")
    a = distill(factory, train, DistillConfig(**kw), np.random.default_rng(2), show_progress=False)
    b = distill(factory, train, DistillConfig(**kw, cls_only_last_layer=True), np.random.default_rng(2),
                show_progress=False)
    for k in ("loss", "ce_clean", "ce_trig", "hijack", "seg"):
        np.testing.assert_allclose(b.history[k], a.history[k], rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(b.inputs_embeds, a.inputs_embeds, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="cls_only_last_layer"):
        DistillConfig(cls_only_last_layer=1)  # type: ignore[arg-type]


def test_the_cls_only_last_layer_refuses_a_learner_it_does_not_write_out(factory, rt_small, tok):
    from icml2026.papers.attention_hijacking import encode

    train, _ = rt_small
    b = encode(tok, train.texts[:2], 16)
    params = factory.init_params(torch.Generator().manual_seed(0))
    old = factory.config.hidden_act
    factory.config.hidden_act = "relu"
    try:
        with pytest.raises(ValueError, match="hidden_act"):
            _forward_cls_only(factory, params, input_ids=b.input_ids, attention_mask=b.attention_mask)
    finally:
        factory.config.hidden_act = old
