"""A user's pretrained diffusers pipeline as PROBE's seen generator (``--set model=PATH``), through core.loaders."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")

from icml2026.cli import main  # noqa: E402
from icml2026.papers.probe.generators import DiffusionGenerator  # noqa: E402


def _pipeline(folder: Path, size: int = 8, channels: int = 1, prediction: str = "epsilon") -> Path:
    """A tiny DDPMPipeline saved with save_pretrained (random weights: what matters is the path, not quality)."""
    torch.manual_seed(0)
    unet = diffusers.UNet2DModel(sample_size=size, in_channels=channels, out_channels=channels,
                                 block_out_channels=(8, 16), layers_per_block=1, norm_num_groups=4,
                                 down_block_types=("DownBlock2D", "DownBlock2D"),
                                 up_block_types=("UpBlock2D", "UpBlock2D"))
    sched = diffusers.DDPMScheduler(num_train_timesteps=200, beta_schedule="linear", prediction_type=prediction)
    diffusers.DDPMPipeline(unet=unet, scheduler=sched).save_pretrained(folder)
    return folder


def test_a_saved_pipeline_is_the_generator_with_its_own_forward_process(tmp_path: Path) -> None:
    folder = _pipeline(tmp_path / "ddpm")
    gen = DiffusionGenerator.from_pipeline(str(folder), "ddim", 4)
    ref = diffusers.DDPMPipeline.from_pretrained(folder)
    assert (gen.size, gen.channels) == (8, 1)
    # the forward process is the pipeline's (linear betas, T = 200), not the default squared cosine
    assert torch.equal(gen.train_scheduler.betas, ref.scheduler.betas)
    assert gen.train_scheduler.config.num_train_timesteps == 200
    for a, b in zip(gen.unet.parameters(), ref.unet.parameters(), strict=True):
        assert torch.equal(a, b) and not a.requires_grad  # frozen, as a generator after fit()
    x = gen.sample(3, np.random.default_rng(0))
    assert x.shape == (3, 1, 8, 8) and np.isfinite(x).all() and np.abs(x).max() <= 1.0


def test_a_pipeline_that_does_not_predict_noise_is_refused(tmp_path: Path) -> None:
    from icml2026.core.errors import BadInput

    folder = _pipeline(tmp_path / "v", prediction="v_prediction")
    with pytest.raises(BadInput, match="epsilon"):
        DiffusionGenerator.from_pipeline(str(folder))


@pytest.mark.slow
def test_the_headline_runs_on_a_users_pipeline_from_the_command_line(tmp_path: Path) -> None:
    folder = _pipeline(tmp_path / "ddpm")
    out = tmp_path / "runs"
    code = main(["run", "probe.headline", "--preset", "smoke", "--set", f"model={folder}", "--threads", "1",
                 "--out", str(out)])
    assert code in (0, 1, 4)  # a verdict (a random-weight generator need not reproduce anything)
    (res,) = out.glob("probe.headline/smoke-seed0-*/results.json")
    assert json.loads(res.read_text())["config"]["model"] == str(folder)


def test_a_bad_model_path_or_a_pipeline_of_another_size_exits_2(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "runs"
    assert main(["run", "probe.headline", "--preset", "smoke", "--set", f"model={tmp_path / 'nope'}",
                 "--out", str(out)]) == 2
    assert "model" in capsys.readouterr().err and not out.exists()
    folder = _pipeline(tmp_path / "big", size=16)  # smoke's digits are 1x8x8
    assert main(["run", "probe.headline", "--preset", "smoke", "--set", f"model={folder}", "--threads", "1",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "1x16x16" in err and "model" in err and len(err.strip().splitlines()) == 1
