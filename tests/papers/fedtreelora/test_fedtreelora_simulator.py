"""Engine: reductions to FedIT / Local (criterion 2), communication (criterion 5), determinism, peft parity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml2026.papers.fedtreelora import (
    PAYLOAD_KEYS,
    FedALTScalar,
    FedIT,
    FedPerLoRA,
    FedTreeLoRA,
    LocalOnly,
    Structure,
    TrainConfig,
    payload_floats,
    simulate,
)
from icml2026.papers.fedtreelora.method import Strategy

TC = TrainConfig(local_steps=2, batch_size=4, eval_every=1)


class _FixedTree(FedTreeLoRA):
    """FedTreeLoRA whose post-warm-up structure is forced (for the reduction tests)."""

    def __init__(self, parts: list[np.ndarray], external: bool, warmup_rounds: int = 1) -> None:
        super().__init__(warmup_rounds=warmup_rounds)
        self._parts, self._ext = parts, external

    def build(self, B_per_layer):  # type: ignore[no-untyped-def]
        return Structure([p.copy() for p in self._parts], external=self._ext, learn_lambda=False)


class _WarmFedIT(FedIT):
    """FedIT whose first round is local (same schedule as a warm-up of one round)."""

    warmup_rounds = 1

    def initial(self, n_clients: int, n_layers: int) -> Structure:
        return Strategy.initial(self, n_clients, n_layers)

    def build(self, B_per_layer):  # type: ignore[no-untyped-def]
        return FedIT().initial(len(B_per_layer[0]), len(B_per_layer))


def _same(a, b) -> bool:  # type: ignore[no-untyped-def]
    return (
        np.array_equal(a.acc, b.acc)
        and a.final_state.keys() == b.final_state.keys()
        and all(np.array_equal(a.final_state[k], b.final_state[k]) for k in a.final_state)
    )


def test_all_cuts_one_equals_fedit_bit_for_bit(tiny) -> None:  # type: ignore[no-untyped-def]
    # criterion 2: fails if the one-block layer applied lambda to the cluster branch or mixed in an external
    backbone, clients = tiny
    n, n_layers = len(clients), backbone.n_layers
    ones = [np.zeros(n, int)] * n_layers
    a = simulate(_FixedTree(ones, external=True), clients, 3, np.random.default_rng(5), backbone=backbone, train=TC)
    b = simulate(_WarmFedIT(), clients, 3, np.random.default_rng(5), backbone=backbone, train=TC)
    assert _same(a, b)
    # the end-of-warm-up aggregation with one block is FedIT's first aggregation: the whole run equals FedIT
    assert _same(a, simulate(FedIT(), clients, 3, np.random.default_rng(5), backbone=backbone, train=TC))
    two = [np.repeat([0, 1], n // 2)] * n_layers
    c = simulate(_FixedTree(two, external=False), clients, 3, np.random.default_rng(5), backbone=backbone, train=TC)
    assert not _same(a, c)  # two blocks do change the run (the comparison can fail)


def test_singletons_without_external_equal_local(tiny) -> None:  # type: ignore[no-untyped-def]
    backbone, clients = tiny
    n, n_layers = len(clients), backbone.n_layers
    singles = [np.arange(n)] * n_layers
    a = simulate(_FixedTree(singles, external=False), clients, 3, np.random.default_rng(2), backbone=backbone, train=TC)
    b = simulate(LocalOnly(), clients, 3, np.random.default_rng(2), backbone=backbone, train=TC)
    assert _same(a, b)
    assert b.bytes_up.sum() == 0 and b.bytes_down.sum() == 0
    c = simulate(_FixedTree(singles, external=True), clients, 3, np.random.default_rng(2), backbone=backbone, train=TC)
    assert not _same(a, c)  # with the external expert on, the run differs


def test_uploads_equal_fedit_and_lambda_never_sent(tiny) -> None:  # type: ignore[no-untyped-def]
    # criterion 5 / issue: per-client upload bytes per round equal FedIT's; lambda and head never leave
    backbone, clients = tiny
    rounds = 4
    tree = simulate(
        FedTreeLoRA(warmup_rounds=1), clients, rounds, np.random.default_rng(0), backbone=backbone, train=TC
    )
    fedit = simulate(FedIT(), clients, rounds, np.random.default_rng(0), backbone=backbone, train=TC)
    full = payload_floats(backbone.n_layers, backbone.d_model, TC.rank) * 4
    assert np.all(fedit.bytes_up == full)
    assert np.array_equal(tree.bytes_up[1:], fedit.bytes_up[1:])  # every post-warm-up round
    assert np.all(tree.bytes_up[0] == full)  # the end of warm-up: the upload the tree is built from
    assert tree.sent_keys <= set(PAYLOAD_KEYS) and not any("theta" in k or "lam" in k for k in tree.sent_keys)
    # lambdas moved away from their init (they are trained) yet stayed local
    assert np.any(np.abs(tree.lambdas - 1 / (1 + np.exp(-2.0))) > 1e-6)
    per = simulate(FedPerLoRA(1), clients, 2, np.random.default_rng(0), backbone=backbone, train=TC)
    assert np.all(per.bytes_up == full // backbone.n_layers)  # one of two layers shared


def test_extra_local_params_are_L_scalars(tiny) -> None:  # type: ignore[no-untyped-def]
    backbone, clients = tiny
    run = simulate(FedALTScalar(), clients, 2, np.random.default_rng(0), backbone=backbone, train=TC)
    assert run.lambdas.shape == (backbone.n_layers, len(clients))


def test_same_seed_same_run_new_seed_differs(tiny) -> None:  # type: ignore[no-untyped-def]
    backbone, clients = tiny
    a = simulate(FedTreeLoRA(warmup_rounds=1), clients, 3, np.random.default_rng(7), backbone=backbone, train=TC)
    b = simulate(FedTreeLoRA(warmup_rounds=1), clients, 3, np.random.default_rng(7), backbone=backbone, train=TC)
    c = simulate(FedTreeLoRA(warmup_rounds=1), clients, 3, np.random.default_rng(8), backbone=backbone, train=TC)
    assert _same(a, b) and not _same(a, c)
    assert all(x <= y for x, y in zip(a.cuts, a.cuts[1:], strict=False))


def test_simulate_rejects_bad_input(tiny) -> None:  # type: ignore[no-untyped-def]
    backbone, clients = tiny
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="at least 3 clients"):
        simulate(FedIT(), clients[:2], 2, rng, backbone=backbone, train=TC)
    with pytest.raises(ValueError, match="rounds"):
        simulate(FedIT(), clients, 0, rng, backbone=backbone, train=TC)
    with pytest.raises(ValueError, match="warm-up"):
        simulate(FedTreeLoRA(warmup_rounds=3), clients, 3, rng, backbone=backbone, train=TC)
    with pytest.raises(TypeError, match="strategy"):
        simulate("FedIT", clients, 2, rng, backbone=backbone, train=TC)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="warmup_rounds"):
        FedTreeLoRA(warmup_rounds=0)
    with pytest.raises(ValueError, match="tau"):
        FedTreeLoRA(tau=1.5)
    with pytest.raises(ValueError, match="K"):
        FedTreeLoRA(K=0)


def test_client_lora_matches_peft(tiny) -> None:  # type: ignore[no-untyped-def]
    # the batched module equals peft's LoRA (r, alpha on query/value) for each client's own adapters
    peft = pytest.importorskip("peft")
    import copy

    from icml2026.papers.fedtreelora import ClientModel

    backbone, clients = tiny
    g = torch.Generator().manual_seed(0)
    m = ClientModel(backbone, 3, 4, 8.0, 2, g)
    with torch.no_grad():
        for v in m.B_c.values():
            v.normal_(0, 0.1, generator=g)
        for v in m.A_c.values():
            v.normal_(0, 0.1, generator=g)
    x = torch.as_tensor(np.stack([c.x_test[:5] for c in clients[:3]]))
    hs = m.encoder(input_ids=x.reshape(15, -1)).last_hidden_state.reshape(3, 5, *x.shape[2:], -1)
    for k in range(3):
        pm = peft.get_peft_model(
            copy.deepcopy(backbone.model), peft.LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"])
        )
        sd = {}
        for key in m.keys:
            layer, t = key.split("_")
            base = f"base_model.model.encoder.layer.{layer}.attention.self.{t}"
            sd[f"{base}.lora_A.weight"] = m.A_c[key][k].detach()
            sd[f"{base}.lora_B.weight"] = m.B_c[key][k].detach()
        peft.set_peft_model_state_dict(
            pm, {kk.replace("base_model.model.", "base_model.model."): v for kk, v in sd.items()}
        )
        pm.eval()
        ref = pm(input_ids=x[k]).last_hidden_state
        torch.testing.assert_close(hs[k], ref, atol=1e-5, rtol=1e-5)


def test_backbone_save_and_load_roundtrip(tiny, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # our own backbone saved without a tokenizer reads back through core.loaders with the token ids as they are
    from icml2026.core.errors import BadInput
    from icml2026.papers.fedtreelora.model import load_backbone

    backbone, clients = tiny
    backbone.save_pretrained(tmp_path / "bb")
    loaded = load_backbone(tmp_path / "bb")
    assert loaded.tokenizer is None
    x = torch.as_tensor(clients[0].x_test[:3])
    m = torch.as_tensor(clients[0].mask_test[:3])
    with torch.no_grad():
        torch.testing.assert_close(
            loaded.model(input_ids=x, attention_mask=m).last_hidden_state,
            backbone.model(input_ids=x, attention_mask=m).last_hidden_state,
        )
    assert not any(p.requires_grad for p in loaded.model.parameters())
    with pytest.raises(BadInput, match="^model = .*missing"):
        load_backbone(tmp_path / "missing")
