import io
import sys
from pathlib import Path

import pytest

from icml2026.core.plotting import DPI, FIGSIZE, compact_png, new_figure, save_figure
from icml2026.core.progress import plain_lines, track
from icml2026.core.rng import make_rng, spawn


def test_track_yields_everything_and_prints_plain_lines_when_not_a_terminal(capsys: pytest.CaptureFixture) -> None:
    assert list(track(range(25), "loop")) == list(range(25))
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[loop] start (25 steps)"
    assert err[-1].startswith("[loop] done 25 steps")
    assert any(line.startswith("[loop] 10/25") for line in err)  # about every 10%
    assert capsys.readouterr().out == ""  # progress never pollutes stdout


def test_track_handles_unsized_iterables(capsys: pytest.CaptureFixture) -> None:
    assert list(track((i for i in range(3)), "gen")) == [0, 1, 2]
    assert "(? steps)" in capsys.readouterr().err


class _FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_hides_the_terminal_so_track_writes_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    # fails if track drew a live bar (nothing but bar escapes on the fake terminal) or stderr were not restored
    fake = _FakeTerminal()
    monkeypatch.setattr(sys, "stderr", fake)
    with plain_lines():
        assert not sys.stderr.isatty()
        assert list(track(range(3), "job")) == [0, 1, 2]
    assert sys.stderr is fake
    assert fake.getvalue().splitlines()[0] == "[job] start (3 steps)"


def test_figures_are_saved(tmp_path: Path) -> None:
    fig, ax = new_figure("t", "x (units)", "y (units)", logy=True)
    ax.plot([1, 2], [1, 10])
    save_figure(fig, tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(tmp_path / "f.png") as im:  # screen size, 256-colour palette
        assert im.mode == "P" and im.size == (int(FIGSIZE[0] * DPI), int(FIGSIZE[1] * DPI))


def test_compact_png_shrinks_large_rgba_and_keeps_compact_ones(tmp_path: Path) -> None:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    big = np.zeros((880, 1320, 4), dtype=np.uint8)
    big[..., 3] = 255
    big[100:400, 200:900, :3] = (31, 119, 180)  # a matplotlib-blue bar on black
    big[500:510] = rng.integers(0, 256, size=(10, 1320, 4))
    Image.fromarray(big, "RGBA").save(tmp_path / "big.png")
    compact_png(tmp_path / "big.png", tmp_path / "small.png")
    with Image.open(tmp_path / "small.png") as im:
        assert im.mode == "P" and im.size == (660, 440)  # scaled by 1/2, aspect kept
        rgb = np.asarray(im.convert("RGB"))
    assert tuple(rgb[125, 275]) == (31, 119, 180)  # a flat colour survives the palette exactly
    assert (tmp_path / "small.png").stat().st_size < (tmp_path / "big.png").stat().st_size
    compact_png(tmp_path / "small.png", tmp_path / "again.png")  # already compact: copied unchanged
    assert (tmp_path / "again.png").read_bytes() == (tmp_path / "small.png").read_bytes()
    (tmp_path / "fake.png").write_bytes(b"GIF89a not a png")
    with pytest.raises(ValueError, match="not a PNG"):
        compact_png(tmp_path / "fake.png", tmp_path / "out.png")


def test_rng_streams() -> None:
    a, b = make_rng(3), make_rng(3)
    assert a.integers(1 << 30) == b.integers(1 << 30)
    kids = spawn(make_rng(3), 3)
    draws = [k.integers(1 << 30) for k in kids]
    assert len(set(draws)) == 3
    assert draws == [k.integers(1 << 30) for k in spawn(make_rng(3), 3)]
    for bad in (-1, 1.5, True, "0"):
        with pytest.raises(ValueError, match="non-negative integer"):
            make_rng(bad)  # type: ignore[arg-type]


def test_torch_seeded_makes_module_init_depend_on_the_stream_alone() -> None:
    """Would fail if the global generator were not seeded from the stream (weights then follow whatever ran
    before in the process) or not restored afterwards (code after the block would see a changed stream)."""
    import torch

    from icml2026.core.rng import torch_seeded

    def build(burn: int) -> torch.Tensor:
        torch.randn(burn)  # a different history of the process's global generator
        with torch_seeded(make_rng(5)):
            return torch.nn.Linear(4, 3).weight.detach().clone()

    assert torch.equal(build(0), build(17))
    with torch_seeded(make_rng(6)):
        other = torch.nn.Linear(4, 3).weight
    assert not torch.equal(build(0), other)
    state = torch.random.get_rng_state()
    with torch_seeded(make_rng(5)):
        torch.randn(10)
    assert torch.equal(torch.random.get_rng_state(), state)
