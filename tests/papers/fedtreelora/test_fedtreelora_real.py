"""Real backbones: attention masks and variable lengths, LoRA on W_q / W_v of any AutoModel (BERT, RoBERTa,
Llama-class) read from a local folder through icml2026.core.loaders, equal to peft's LoRA per client, and
two federated rounds on tiny RoBERTa-class and Llama-class checkpoints saved here (also from the CLI)."""

from __future__ import annotations

import copy
import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.papers.fedtreelora import (  # noqa: E402
    ClientModel,
    FedTreeLoRA,
    TrainConfig,
    make_clients,
    simulate,
)
from icml2026.papers.fedtreelora.model import load_backbone, tokenize_clients  # noqa: E402

from ._tiny_models import save_tiny  # noqa: E402

TC = TrainConfig(local_steps=2, batch_size=4, eval_every=1)


@pytest.fixture(scope="module", params=["roberta", "llama"])
def checkpoint(request, tmp_path_factory) -> tuple[str, Path]:  # type: ignore[no-untyped-def]
    return request.param, save_tiny(request.param, tmp_path_factory.mktemp(request.param))


def _clients(backbone, n: int = 4, seed: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    tasks = ["polarity", "topic", "register", "domain"][:n]
    return tokenize_clients(make_clients(tasks, 16, 8, 12, 0.5, rng), backbone.tokenizer, backbone.max_len)


def test_padding_is_masked_out(tiny) -> None:  # type: ignore[no-untyped-def]
    # fails if the model attended to padding or pooled over it: three more masked [PAD]s change nothing
    backbone, clients = tiny
    m = ClientModel(backbone, 2, 4, 8.0, 2, torch.Generator().manual_seed(0))
    with torch.no_grad():
        for v in m.B_c.values():
            v.normal_(0, 0.1, generator=torch.Generator().manual_seed(1))
    x = torch.as_tensor(np.stack([c.x_test[:4] for c in clients[:2]]))
    mask = torch.as_tensor(np.stack([c.mask_test[:4] for c in clients[:2]]))
    assert (mask == 0).any()  # the synthetic sequences have variable length
    # other tokens in the padded positions (still masked out)
    xp = torch.where(mask == 0, torch.randint(4, 90, x.shape, generator=torch.Generator().manual_seed(2)), x)
    with torch.no_grad():
        a, b = m(x, mask), m(xp, mask)
        c = m(xp)  # no mask: the padding is attended to
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(a, c, atol=1e-4)


def test_checkpoint_loads_through_core_loader(checkpoint) -> None:  # type: ignore[no-untyped-def]
    kind, folder = checkpoint
    backbone = load_backbone(folder)
    assert backbone.tokenizer is not None and not any(p.requires_grad for p in backbone.model.parameters())
    model = ClientModel(backbone, 3, 2, 4.0, 2, torch.Generator().manual_seed(0))
    want = ("query", "value") if kind == "roberta" else ("q_proj", "v_proj")
    assert model.targets == want and len(model.keys) == 2 * backbone.n_layers
    if kind == "llama":  # grouped-query attention: W_v maps 16 -> 8, its B is (N, 8, r)
        assert tuple(model.B_c["0_v_proj"].shape) == (3, 8, 2) and tuple(model.B_c["0_q_proj"].shape) == (3, 16, 2)


def test_client_lora_matches_peft_on_checkpoint(checkpoint) -> None:  # type: ignore[no-untyped-def]
    # each client's adapters in our batched module give peft's LoRA output (masks and padding included)
    peft = pytest.importorskip("peft")
    kind, folder = checkpoint
    backbone = load_backbone(folder)
    g = torch.Generator().manual_seed(0)
    m = ClientModel(backbone, 3, 4, 8.0, 2, g)
    with torch.no_grad():
        for v in [*m.A_c.values(), *m.B_c.values()]:
            v.normal_(0, 0.1, generator=g)
    clients = _clients(backbone, 3)
    t = max(c.x_test.shape[1] for c in clients)
    x = torch.zeros((3, 5, t), dtype=torch.long)
    mask = torch.zeros((3, 5, t), dtype=torch.long)
    for k, c in enumerate(clients):
        x[k, :, : c.x_test.shape[1]] = torch.as_tensor(c.x_test[:5])
        mask[k, :, : c.x_test.shape[1]] = torch.as_tensor(c.mask_test[:5])
    with torch.no_grad():
        hs = m.encoder(input_ids=x.reshape(15, t), attention_mask=mask.reshape(15, t)).last_hidden_state
    hs = hs.reshape(3, 5, t, -1)
    names = {n.rsplit(".", 1)[-1]: None for n in m.targets}
    for k in range(3):
        pm = peft.get_peft_model(
            copy.deepcopy(backbone.model), peft.LoraConfig(r=4, lora_alpha=8, target_modules=list(names))
        )
        sd = {}
        for name, mod in pm.named_modules():
            last = name.rsplit(".", 1)[-1]
            if last in names and hasattr(mod, "lora_A"):
                layer = int(next(p for p in name.split(".") if p.isdigit()))
                key = f"{layer}_{last}"
                sd[f"{name}.lora_A.weight"] = m.A_c[key][k].detach()
                sd[f"{name}.lora_B.weight"] = m.B_c[key][k].detach()
        assert len(sd) == 2 * len(m.keys)
        peft.set_peft_model_state_dict(pm, sd)
        pm.eval()
        with torch.no_grad():
            ref = pm(input_ids=x[k], attention_mask=mask[k]).last_hidden_state
        real = mask[k].bool()
        torch.testing.assert_close(hs[k][real], ref[real], atol=1e-5, rtol=1e-5)


def test_two_federated_rounds_on_checkpoint(checkpoint) -> None:  # type: ignore[no-untyped-def]
    # acceptance (issue 62): a RoBERTa-class and a Llama-class checkpoint each run two federated rounds
    kind, folder = checkpoint
    backbone = load_backbone(folder)
    clients = _clients(backbone)
    assert len({c.x_train.shape[1] for c in clients}) >= 1 and any((c.mask_train == 0).any() for c in clients)
    run = simulate(FedTreeLoRA(warmup_rounds=1), clients, 2, np.random.default_rng(0), backbone=backbone, train=TC)
    assert run.eval_rounds == [1, 2] and np.all(np.isfinite(run.acc))
    assert all(a <= b for a, b in zip(run.cuts, run.cuts[1:], strict=False))
    model = ClientModel(backbone, 1, TC.rank, TC.alpha, 2, torch.Generator().manual_seed(0))
    full = sum(model.layer_floats(layer) for layer in range(backbone.n_layers)) * 4
    assert np.all(run.bytes_up == full)  # every client uploads its whole cluster expert (A and B), nothing else


def _cli(argv: list[str]) -> tuple[int, str]:
    from icml2026.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


# the CLI on a tiny checkpoint (~5 s of CPU each): RoBERTa-class in the default suite, Llama-class slow
@pytest.mark.parametrize("kind", ["roberta", pytest.param("llama", marks=pytest.mark.slow)])
def test_cli_runs_headline_on_a_tiny_checkpoint(kind: str, tmp_path: Path) -> None:
    folder = save_tiny(kind, tmp_path / kind)
    code, text = _cli(
        [
            "run",
            "fedtreelora.headline",
            "--preset",
            "smoke",
            "--set",
            f"model={folder}",
            "--set",
            "rounds=2",
            "--threads",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    assert code in (0, 1, 4), text
    assert "Traceback" not in text
    assert list(tmp_path.glob("fedtreelora.headline/smoke-seed0-*/results.json"))


def test_cli_refuses_a_bad_model_path(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code, text = _cli(
        [
            "run",
            "fedtreelora.headline",
            "--preset",
            "smoke",
            "--set",
            f"model={tmp_path / 'nope'}",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 2 and "model" in text and "nope" in text
    (tmp_path / "empty").mkdir()
    code, text = _cli(
        [
            "run",
            "fedtreelora.headline",
            "--preset",
            "smoke",
            "--set",
            f"model={tmp_path / 'empty'}",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 2 and "model" in text
    assert not list(tmp_path.glob("fedtreelora.headline/*"))
