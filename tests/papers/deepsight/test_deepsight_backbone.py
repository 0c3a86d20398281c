"""The planner on a user's causal LM and the BEV encoder from a pretrained ViT folder (issue 59): tiny Qwen2 and
DINOv3 checkpoints saved here with ``save_pretrained``, loaded through ``icml2026.core.loaders``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from icml2026.papers.deepsight.method import N_TEXT, PlannerConfig, constant_velocity_waypoints
from icml2026.papers.deepsight.training import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    build_planner,
    load_bev_encoder,
)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from transformers import DINOv3ViTConfig, DINOv3ViTModel, Qwen2Config, Qwen2ForCausalLM

    root = tmp_path_factory.mktemp("deepsight_ckpt")
    torch.manual_seed(0)
    lm = Qwen2ForCausalLM(Qwen2Config(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512))
    lm.save_pretrained(root / "qwen2")
    vit = DINOv3ViTModel(DINOv3ViTConfig(image_size=32, patch_size=16, hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2, num_register_tokens=4))
    vit.save_pretrained(root / "dinov3")
    return root / "qwen2", root / "dinov3"


def _batch(n: int) -> dict[str, torch.Tensor]:
    r = np.random.default_rng(0)
    ego = r.normal(size=(n, 14)).astype(np.float32)
    ego[:, 8] = 0.8  # 24 m/s
    return {"kin": torch.as_tensor(r.normal(size=(n, 15, 28)).astype(np.float32)), "ego": torch.as_tensor(ego)}


def test_planner_on_a_local_causal_lm(checkpoints: tuple[Path, Path]) -> None:
    from icml2026.papers.deepsight.experiments import _dummy_batch

    qwen, _ = checkpoints
    pc = PlannerConfig(variant="C", patches=4, registers=4, d_latent=32, backbone_path=str(qwen))
    p = build_planner(pc, np.random.default_rng(0))
    assert p.d_model == 32 and p._offset == 50  # our tokens appended after the LM's 50
    assert p.lm.get_input_embeddings().weight.shape[0] == 50 + N_TEXT + pc.n_bev
    q = p.query_embeddings().detach()
    assert torch.unique(q, dim=0).shape[0] == pc.n_bev  # distinct BEV queries (no mean-resizing)
    b = _batch(3)
    batch = _dummy_batch(b["kin"], b["ego"])
    batch.latents = torch.zeros(3, 5, 5, 32)
    before = p.lm.get_input_embeddings().weight.detach().clone()
    loss = p.losses(batch)
    loss.total.backward()
    torch.optim.SGD(p.parameters(), lr=0.1).step()
    assert not torch.equal(before, p.lm.get_input_embeddings().weight.detach())  # the LM itself is trained
    p.eval()
    plan = p.plan({"kin": b["kin"][0].numpy(), "ego": b["ego"][0].numpy()})
    assert plan.waypoints.shape == (4, 2) and plan.latents is not None and plan.latents.shape == (5, 5, 32)
    assert plan.world_model_passes == 1 and not any(t.startswith("<bev") for t in plan.reasoning)


def test_untrained_planner_plans_at_constant_velocity(checkpoints: tuple[Path, Path]) -> None:
    p = build_planner(PlannerConfig(variant="A", d_model=32, n_layers=1), np.random.default_rng(0))
    b = _batch(2)
    wp, _, _, _ = p.plan_batch(b["kin"], b["ego"])
    np.testing.assert_allclose(wp.numpy(), constant_velocity_waypoints(b["ego"]).numpy(), atol=1e-6)
    np.testing.assert_allclose(wp[0, :, 0].numpy(), [12.0, 24.0, 36.0, 48.0], atol=1e-5)


def test_pretrained_encoder_uses_the_official_preprocessing(checkpoints: tuple[Path, Path]) -> None:
    _, dino = checkpoints
    enc = load_bev_encoder(str(dino))
    assert (enc.image_size, enc.registers, enc.n_patches, enc.hidden) == (32, 4, 4, 32)
    x = torch.rand(2, 3, 64, 64)
    z = enc.latents(x)
    assert z.shape == (2, 1 + 4, 32)  # CLS + patches, the 4 registers masked out
    # by hand: bilinear resize to 32 x 32, ImageNet normalisation, then the ViT
    ref = torch.nn.functional.interpolate(x, size=(32, 32), mode="bilinear", align_corners=False)
    ref = (ref - torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)) / torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    h = enc.vit(pixel_values=ref).last_hidden_state
    torch.testing.assert_close(z, torch.cat([h[:, :1], h[:, 5:]], 1))
    raw = enc.vit(pixel_values=x[:, :, ::2, ::2]).last_hidden_state  # without it: different latents
    assert not torch.allclose(z[:, 0], raw[:, 0], atol=1e-3)


@pytest.mark.parametrize("key", ["planner", "encoder"])
def test_bad_model_folder_is_refused_naming_the_key(key: str, tmp_path: Path) -> None:
    from icml2026.cli import main

    code = main(["run", "deepsight.world_model", "--preset", "smoke", "--set", f"{key}={tmp_path / 'nope'}",
                 "--threads", "1", "--out", str(tmp_path / "runs")])
    assert code == 2 and not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_cli_trains_and_drives_on_local_checkpoints(checkpoints: tuple[Path, Path], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from icml2026.cli import main

    qwen, dino = checkpoints
    monkeypatch.chdir(tmp_path)
    code = main(["run", "deepsight.world_model", "--preset", "smoke", "--set", f"planner={qwen}",
                 "--set", f"encoder={dino}", "--set", "train_steps=1", "--set", "n_eval=1", "--threads", "1",
                 "--out", str(tmp_path / "runs")])
    assert code in (0, 1, 4)  # a verdict (a one-step planner is not expected to learn)
    (res,) = (tmp_path / "runs" / "deepsight.world_model").glob("smoke-seed0-*/results.json")
    r = json.loads(res.read_text())
    assert r["config"]["planner"] == str(qwen) and r["config"]["encoder"] == str(dino)
    assert r["config"]["train_steps"] == 1 and r["config"]["n_eval"] == 1
    assert {"A_l2_2s", "C_l2_2s", "C0_l2_2s", "C_ds", "C0_ds"} <= set(r["metrics"])
