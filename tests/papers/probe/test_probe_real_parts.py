"""The paper's pipeline on real parts (issue 60): a tiny StableDiffusionPipeline and a tiny DINOv2 backbone saved
with save_pretrained, and a folder of PNGs written here, run through one PROBE round from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")
transformers = pytest.importorskip("transformers")

from icml2026.cli import main  # noqa: E402
from icml2026.papers.probe.detector import Detector  # noqa: E402
from icml2026.papers.probe.method import ProbeConfig, probe_generator  # noqa: E402
from icml2026.papers.probe.real_parts import (  # noqa: E402
    PretrainedDetector,
    StableDiffusionGenerator,
    load_image_folder,
)


def _tokenizer(folder: Path) -> object:
    words = ["a", "photo", "of", "dog", "cat", "car", "bird", "city", "street", "mountain", "landscape", "bowl",
             "fruit", "portrait", "person", "flower", "garden", "beach", "at", "sunset"]
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1, "!": 2}
    for w in words:
        vocab[w + "</w>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return transformers.CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=8)


def sd_pipeline(folder: Path) -> Path:
    """A tiny text-to-image latent pipeline (random weights: the path, not the quality, is tested): 16x16 images,
    4x8x8 latents."""
    torch.manual_seed(0)
    unet = diffusers.UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, block_out_channels=(8, 16), layers_per_block=1,
        norm_num_groups=4, cross_attention_dim=16, attention_head_dim=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
    )
    vae = diffusers.AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8, 8), layers_per_block=1,
        norm_num_groups=4, down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        sample_size=16,
    )
    text = transformers.CLIPTextModel(transformers.CLIPTextConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        max_position_embeddings=8, projection_dim=16, bos_token_id=0, eos_token_id=1, pad_token_id=1))
    sched = diffusers.DDIMScheduler(num_train_timesteps=100, beta_schedule="scaled_linear", beta_start=0.00085,
                                    beta_end=0.012, clip_sample=False, set_alpha_to_one=False,
                                    steps_offset=1)
    pipe = diffusers.StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=_tokenizer(folder / "_tok"),
                                             unet=unet, scheduler=sched, safety_checker=None,
                                             feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(folder / "sd")
    return folder / "sd"


def dinov2(folder: Path) -> Path:
    torch.manual_seed(1)
    cfg = transformers.Dinov2Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                                    image_size=16, patch_size=4, num_channels=3)
    transformers.Dinov2Model(cfg).save_pretrained(folder / "dinov2")
    return folder / "dinov2"


def png_folder(folder: Path, n: int = 12) -> Path:
    """data/train (real), data/bench_a/{0_real,1_fake} and data/bench_b/{real,fake}: smooth reals, noisy fakes."""
    from PIL import Image

    rng = np.random.default_rng(0)

    def write(sub: str, fake: bool) -> None:
        d = folder / "data" / sub
        d.mkdir(parents=True, exist_ok=True)
        for i in range(n):
            base = np.linspace(0, 255, 24)[None, :, None] * rng.uniform(0.3, 1, (1, 1, 3))
            img = np.broadcast_to(base, (24, 24, 3)).copy()
            if fake:
                img += rng.normal(0, 40, img.shape)
            Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(d / f"{i}.png")

    write("train", False)
    write("bench_a/0_real", False)
    write("bench_a/1_fake", True)
    write("bench_b/real", False)
    write("bench_b/fake", True)
    return folder / "data"


def test_image_folder_follows_the_real_in_path_convention(tmp_path: Path) -> None:
    train, benches = load_image_folder(str(png_folder(tmp_path, n=3)), 16)
    assert train.shape == (3, 3, 16, 16) and np.abs(train).max() <= 1.0
    assert set(benches) == {"bench_a", "bench_b"}
    for x, y in benches.values():
        assert x.shape == (6, 3, 16, 16) and sorted(y.tolist()) == [0, 0, 0, 1, 1, 1]


def test_stage1_steers_lora_on_the_sd_unet_and_leaves_the_base_unchanged(tmp_path: Path) -> None:
    gen = StableDiffusionGenerator.from_folder(str(sd_pipeline(tmp_path)), n_sample_steps=3)
    x = gen.sample(2, np.random.default_rng(0))
    assert x.shape == (2, 3, 16, 16) and np.isfinite(x).all()
    rng = np.random.default_rng(1)
    det = Detector(width=4, epochs=1).fit(x, gen.sample(2, rng), rng)
    base = {k: v.clone() for k, v in gen.unet.state_dict().items()}
    res = probe_generator(gen, det, ProbeConfig(n_restarts=1, n_updates=2, dump_every=1, n_dump=2, batch_size=2,
                                                lr=0.05), rng)
    assert res.buffer.shape == (4, 3, 16, 16) and res.dump_norms[-1] > 0  # the LoRA moved
    assert all(torch.equal(base[k], v) for k, v in gen.unet.state_dict().items())


def test_a_dinov2_folder_is_the_detector(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    real = rng.uniform(-1, 1, (8, 3, 16, 16)).astype(np.float32) * 0.1
    fake = rng.uniform(-1, 1, (8, 3, 16, 16)).astype(np.float32)
    det = PretrainedDetector(str(dinov2(tmp_path)), epochs=1).fit(real, fake, rng)
    p = det.predict_proba(np.concatenate([real, fake]))
    assert p.shape == (16,) and np.isfinite(p).all()


@pytest.mark.slow
def test_one_probe_round_on_real_parts_from_the_command_line(tmp_path: Path) -> None:
    sd, det, data = sd_pipeline(tmp_path), dinov2(tmp_path), png_folder(tmp_path)
    out = tmp_path / "runs"
    code = main(["run", "probe.headline", "--preset", "smoke", "--set", f"generator={sd}", "--set",
                 f"detector={det}", "--set", f"data={data}", "--threads", "1",
                 "--out", str(out)])
    assert code in (0, 1, 4)  # a verdict (random weights need not reproduce anything)
    (res,) = out.glob("probe.headline/smoke-seed0-*/results.json")
    r = json.loads(res.read_text())
    assert {"bacc_bench_a_PROBE", "bacc_bench_b_B1", "frozen_acc_PROBE"} <= set(r["metrics"])


def test_real_parts_keys_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "runs"
    assert main(["run", "probe.headline", "--preset", "smoke", "--set", f"generator={tmp_path}",
                 "--out", str(out)]) == 2
    assert "data" in capsys.readouterr().err
    sd = sd_pipeline(tmp_path)
    assert main(["run", "probe.headline", "--preset", "smoke", "--set", f"generator={sd}", "--set",
                 f"data={tmp_path / 'none'}", "--out", str(out)]) == 2
    assert "data" in capsys.readouterr().err and not out.exists()
