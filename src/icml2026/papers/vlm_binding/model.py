"""The controlled model of the paper: a causal transformer LM that reads text or image-tokenized prompts.

* :class:`BindingLM` is a Hugging Face ``GPT2LMHeadModel`` built from a config (pre-LN, **learned absolute
  position embeddings**, eager attention so that the key mask and attention weights are exposed). Prompts
  carry explicit ``position_ids`` and a ``key_mask``: padding and noise tokens are masked as keys for every
  query (``attention_mask`` of the HF model), so noise tokens only shift position indices.
* Image prompts enter through :class:`CellEncoder`, a frozen 3-layer CNN that maps each 8x8 cell of the 64x64
  scene to one feature (always 64 image tokens), and a trainable linear projector to ``d_model``.
* :func:`pretrain_encoder` trains the CNN to classify the colour and shape of single-object cells (our
  stand-in for a pretrained vision encoder), after which it is frozen.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from icml2026.core.progress import track
from icml2026.core.validate import positive_int

from .data import CELL, GLYPH, GRID, N_IMAGE_TOKENS, Batch, Vocab, draw_scene, glyphs, palette

__all__ = ["CellEncoder", "EncoderReport", "pretrain_encoder", "BindingLM", "init_parameters"]


def _device_of(module: nn.Module) -> torch.device:
    """The device of ``module``'s parameters (inputs are moved there)."""
    return next(module.parameters()).device


def init_parameters(module: nn.Module, gen: torch.Generator, std: float = 0.02) -> None:
    """Re-initialise every parameter from ``gen`` (GPT-2's scheme: N(0, std) weights, zero biases, unit LN).

    Constructors draw from torch's global generator; this makes the initial weights a function of ``gen``
    alone, so runs are reproducible without global seeding.
    """
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif p.ndim == 1:  # LayerNorm gains
                p.fill_(1.0)
            else:  # drawn on the CPU (where ``gen`` lives) and copied: the same weights on every device
                p.copy_(torch.empty(p.shape, dtype=p.dtype).normal_(0.0, std, generator=gen))


class CellEncoder(nn.Module):
    """3 conv layers, strided to one ``feature_dim`` vector per 8x8 cell: (B, 64, 64, 3) uint8 -> (B, 64, F).

    Each cell is encoded on its own (the cells are cut out first), so a cell's token depends only on what is
    drawn in it: the translation invariance across cells that breaks the positional shortcut.
    """

    def __init__(self, feature_dim: int = 64, width: int = 32) -> None:
        super().__init__()
        self.feature_dim = positive_int(feature_dim, "feature_dim", maximum=4096)
        width = self.width = positive_int(width, "width", maximum=1024)
        self.net = nn.Sequential(
            nn.Conv2d(3, width, 3, stride=1, padding=1),
            nn.ReLU(),  # 8x8
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1),
            nn.ReLU(),  # 4x4
            nn.Conv2d(2 * width, feature_dim, 4, stride=1, padding=0),  # 1x1: one feature per cell
        )

    def encode_cells(self, cells: torch.Tensor) -> torch.Tensor:
        """(M, 8, 8, 3) uint8 or float in [0, 255] -> (M, F)."""
        x = cells.to(_device_of(self)).float().permute(0, 3, 1, 2) / 255.0
        return self.net(x).flatten(1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.ndim != 4 or tuple(images.shape[1:]) != (GRID * CELL, GRID * CELL, 3):
            raise ValueError(f"images has shape {tuple(images.shape)}: expected (B, 64, 64, 3)")
        b = images.shape[0]
        cells = images.reshape(b, GRID, CELL, GRID, CELL, 3).permute(0, 1, 3, 2, 4, 5)  # raster order of cells
        return self.encode_cells(cells.reshape(b * N_IMAGE_TOKENS, CELL, CELL, 3)).reshape(b, N_IMAGE_TOKENS, -1)

    @torch.no_grad()
    def features_of_codes(self, codes: np.ndarray, vocab: Vocab) -> torch.Tensor:
        """Features of the cells with :func:`~.data.cell_codes` ``codes`` (1-D int array): ``(len(codes), F)``.

        Each cell is drawn from its code alone (colour, shape, jitter) and encoded on its own, which is exact
        because the encoder sees one cell at a time.
        """
        cols, shp = palette(vocab.n_colours), glyphs(vocab.n_shapes)
        codes = np.asarray(codes, dtype=np.int64)
        cells = np.zeros((len(codes), CELL, CELL, 3), dtype=np.uint8)
        pad = (CELL - GLYPH) // 2
        for k, code in enumerate(codes):
            if code == 0:
                continue  # empty cell
            rest, dx = divmod(int(code) - 1, 3)
            cs, dy = divmod(rest, 3)
            c, s = divmod(cs, vocab.n_shapes)
            y, x = pad + dy - 1, pad + dx - 1
            cells[k, y : y + GLYPH, x : x + GLYPH][shp[s]] = cols[c]
        self.eval()
        if not len(codes):
            return torch.zeros((0, self.feature_dim), device=_device_of(self))
        return torch.cat([self.encode_cells(torch.from_numpy(cells[i : i + 1024])) for i in range(0, len(cells), 1024)])

    @torch.no_grad()
    def feature_table(self, vocab: Vocab) -> torch.Tensor:
        """Features of every possible cell, indexed by :func:`~.data.cell_codes`: ``(1 + C*S*9, F)``.

        Exact (the encoder sees one cell at a time); :class:`BindingLM` fills the same table lazily, code by
        code, so that the paper's 216 x 216 vocabulary does not encode 420k cells up front.
        """
        return self.features_of_codes(np.arange(1 + vocab.n_colours * vocab.n_shapes * 9), vocab)

    def freeze(self) -> CellEncoder:
        for p in self.parameters():
            p.requires_grad_(False)
        return self.eval()


@dataclass
class EncoderReport:
    """Held-out accuracy of the encoder's colour and shape heads on single-object cells (and empty cells)."""

    colour_accuracy: float
    shape_accuracy: float
    empty_accuracy: float
    steps: int


def _random_cells(n: int, vocab: Vocab, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` cells, each one random object with +-1 px jitter or (1 in 8) empty; labels use C / S for empty."""
    cols, shp = palette(vocab.n_colours), glyphs(vocab.n_shapes)
    c = rng.integers(vocab.n_colours, size=n)
    s = rng.integers(vocab.n_shapes, size=n)
    empty = rng.random(n) < 0.125
    off = rng.integers(-1, 2, size=(n, 2))
    out = np.zeros((n, CELL, CELL, 3), dtype=np.uint8)
    pad = (CELL - GLYPH) // 2
    for k in range(n):
        if empty[k]:
            continue
        y, x = pad + off[k, 0], pad + off[k, 1]
        out[k, y : y + GLYPH, x : x + GLYPH][shp[s[k]]] = cols[c[k]]
    return out, np.where(empty, vocab.n_colours, c), np.where(empty, vocab.n_shapes, s)


def pretrain_encoder(
    encoder: CellEncoder,
    vocab: Vocab,
    steps: int,
    rng: np.random.Generator,
    batch_size: int = 256,
    lr: float = 3e-3,
    n_eval: int = 2000,
    init: bool = True,
    device: str | torch.device | None = None,
) -> EncoderReport:
    """Train ``encoder`` + linear colour/shape heads on single-object cells (cross-entropy), return accuracy.

    Deviation: the paper uses pretrained ResNet/ViT/DINO encoders; we pre-train this tiny CNN here on the
    task's own cells (brief), a stand-in whose only role is to give identity features per cell.
    With ``steps = 0`` nothing is trained: the encoder keeps its random init from ``rng`` (the random-init
    ablation encoder) and the report, with random heads too, shows chance accuracy.
    ``device`` (default: where the encoder is) is where the encoder and heads train; draws stay on the CPU.
    """
    steps = positive_int(steps, "steps", minimum=0, maximum=10**6)
    gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
    if init:
        _init_conv(encoder, gen)
    heads = nn.ModuleDict(
        {
            "colour": nn.Linear(encoder.feature_dim, vocab.n_colours + 1),
            "shape": nn.Linear(encoder.feature_dim, vocab.n_shapes + 1),
        }
    )
    init_parameters(heads, gen, std=0.05)
    dev = torch.device(device) if device is not None else _device_of(encoder)
    encoder.to(dev)
    heads.to(dev)
    params = list(encoder.parameters()) + list(heads.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    # cosine decay to 0: a constant step size leaves the last iterate oscillating by ~1% in accuracy
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: 0.5 * (1.0 + float(np.cos(np.pi * min(k, steps) / max(steps, 1))))
    )
    encoder.train()
    for _ in track(range(steps), "pretrain cell encoder", total=steps):
        cells, yc, ys = _random_cells(batch_size, vocab, rng)
        f = encoder.encode_cells(torch.from_numpy(cells))
        loss = nn.functional.cross_entropy(
            heads["colour"](f), torch.from_numpy(yc).to(dev)
        ) + nn.functional.cross_entropy(heads["shape"](f), torch.from_numpy(ys).to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    encoder.eval()
    cells, yc, ys = _random_cells(n_eval, vocab, rng)
    with torch.no_grad():
        f = encoder.encode_cells(torch.from_numpy(cells))
        pc, ps = heads["colour"](f).argmax(1).cpu().numpy(), heads["shape"](f).argmax(1).cpu().numpy()
    occ = yc < vocab.n_colours
    return EncoderReport(
        float((pc[occ] == yc[occ]).mean()),
        float((ps[occ] == ys[occ]).mean()),
        float(((pc == yc) & (ps == ys))[~occ].mean()) if (~occ).any() else 1.0,
        steps,
    )


def _init_conv(encoder: CellEncoder, gen: torch.Generator) -> None:
    """Kaiming-uniform-like init from ``gen`` (fan-in scaled), zero biases."""
    with torch.no_grad():
        for m in encoder.modules():
            if isinstance(m, nn.Conv2d):
                fan_in = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
                bound = float(np.sqrt(6.0 / fan_in))
                m.weight.copy_(torch.empty(m.weight.shape).uniform_(-bound, bound, generator=gen))
                assert m.bias is not None
                m.bias.zero_()


def scene_from_layout(
    objects: list[tuple[int, int]], cells: np.ndarray, offsets: np.ndarray, vocab: Vocab
) -> np.ndarray:
    """Convenience for tests: draw a scene with the task's palette and glyphs."""
    return draw_scene(objects, cells, offsets, palette(vocab.n_colours), glyphs(vocab.n_shapes))


class BindingLM(nn.Module):
    """Causal LM over the task vocabulary (``GPT2LMHeadModel`` from a config), plus the image path.

    Parameters
    ----------
    vocab : the task vocabulary (``vocab.size`` embeddings).
    encoder : a frozen :class:`CellEncoder` (kept frozen here) or None for a text-only model.
    gen : torch generator for the initial weights.
    n_layer, d_model, n_head, max_len : brief: 4 (6) layers, d=128, 4 heads, max_len 128; paper: 12 layers.
    """

    def __init__(
        self,
        vocab: Vocab,
        encoder: CellEncoder | None,
        gen: torch.Generator,
        n_layer: int = 4,
        d_model: int = 128,
        n_head: int = 4,
        max_len: int = 128,
    ) -> None:
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel

        n_layer = positive_int(n_layer, "n_layer", maximum=48)
        d_model = positive_int(d_model, "d_model", maximum=4096)
        n_head = positive_int(n_head, "n_head", maximum=64)
        if d_model % n_head:
            raise ValueError(f"d_model = {d_model}: must be divisible by n_head = {n_head}")
        self.vocab = vocab
        self.max_len = positive_int(max_len, "max_len", minimum=N_IMAGE_TOKENS + 8, maximum=4096)
        cfg = GPT2Config(
            vocab_size=vocab.size,
            n_positions=self.max_len,
            n_embd=d_model,
            n_layer=n_layer,
            n_head=n_head,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=None,
            eos_token_id=None,
            pad_token_id=vocab.pad,
        )
        cfg._attn_implementation = "eager"  # masks and attention weights are needed (knockout, noise control)
        self.lm = GPT2LMHeadModel(cfg)
        init_parameters(self.lm, gen)
        self.lm.tie_weights()
        self.encoder = encoder.freeze() if encoder is not None else None
        self.projector = nn.Linear(encoder.feature_dim, d_model) if encoder is not None else None
        self._table: torch.Tensor | None = None  # cell-feature cache of the frozen encoder (filled lazily)
        self._filled: torch.Tensor | None = None  # which rows of the cache hold a feature
        if self.projector is not None:
            init_parameters(self.projector, gen, std=float(1.0 / np.sqrt(encoder.feature_dim)))  # type: ignore[union-attr]

    @property
    def device(self) -> torch.device:
        """Where the model's parameters are; :meth:`embed` and :meth:`forward` move a batch there."""
        return _device_of(self)

    @property
    def n_layer(self) -> int:
        return int(self.lm.config.n_layer)

    @property
    def blocks(self) -> nn.ModuleList:
        return self.lm.transformer.h

    def train(self, mode: bool = True) -> BindingLM:
        super().train(mode)
        if self.encoder is not None:
            self.encoder.eval()  # frozen: never in training mode
        return self

    def embed(self, batch: Batch) -> torch.Tensor:
        """Token embeddings, with the projected image tokens written into the 64 image slots."""
        dev = self.device
        ids = torch.from_numpy(batch.ids).to(dev)
        h = self.lm.transformer.wte(ids)
        if batch.images is not None or batch.cell_codes is not None:
            if self.encoder is None or self.projector is None or batch.image_start is None:
                raise ValueError("batch has images but the model has no encoder/projector")
            if batch.images is not None:
                with torch.no_grad():
                    feats = self.encoder(torch.from_numpy(batch.images).to(dev))
            else:  # Deviation (speed only): cached cell features, tested equal to encoding the rendered scene
                assert batch.cell_codes is not None
                feats = self._cell_features(batch.cell_codes)
            proj = self.projector(feats)
            rows = torch.arange(len(batch), device=dev)[:, None]
            cols = torch.from_numpy(batch.image_start).to(dev)[:, None] + torch.arange(N_IMAGE_TOKENS, device=dev)[None]
            h = h.index_put((rows.expand_as(cols), cols), proj)
        return h

    @torch.no_grad()
    def _cell_features(self, codes: np.ndarray) -> torch.Tensor:
        """Frozen-encoder features of the cells with these codes, from the lazily filled cache."""
        assert self.encoder is not None
        dev = self.device
        n_codes = 1 + self.vocab.n_colours * self.vocab.n_shapes * 9
        if self._table is None or self._table.device != dev:
            self._table = torch.zeros((n_codes, self.encoder.feature_dim), device=dev)
            self._filled = torch.zeros(n_codes, dtype=torch.bool)
        assert self._filled is not None
        need = np.unique(codes)
        need = need[~self._filled[torch.from_numpy(need)].numpy()]
        if len(need):
            self._table[torch.from_numpy(need).to(dev)] = self.encoder.features_of_codes(need, self.vocab)
            self._filled[torch.from_numpy(need)] = True
        return self._table[torch.from_numpy(codes).to(dev)]

    def forward(
        self, batch: Batch, output_hidden_states: bool = False, output_attentions: bool = False
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Logits at the final (query) position ``(B, V)`` and optionally all hidden states."""
        if batch.ids.shape[1] > self.max_len or int(batch.position_ids.max()) >= self.max_len:
            raise ValueError(f"prompt of {batch.ids.shape[1]} tokens exceeds max_len = {self.max_len}")
        out = self.lm(
            inputs_embeds=self.embed(batch),
            attention_mask=torch.from_numpy(batch.key_mask.astype(np.int64)).to(self.device),
            position_ids=torch.from_numpy(batch.position_ids).to(self.device),
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
            logits_to_keep=1,
        )
        return out.logits[:, -1], out.hidden_states

    def item_logits(self, batch: Batch) -> torch.Tensor:
        """Logits restricted to the item tokens, ``(B, n_items)`` (the metric's argmax is over items)."""
        logits, _ = self.forward(batch)
        v = self.vocab
        return logits[:, v.item0 : v.item0 + v.n_items]

    def set_encoder(self, encoder: CellEncoder) -> None:
        """Swap the frozen encoder (same feature size); the projector and LM weights are kept."""
        if self.projector is None or encoder.feature_dim != self.projector.in_features:
            raise ValueError("encoder: feature_dim must match the projector's input size")
        self.encoder = copy.deepcopy(encoder).to(self.device).freeze()
        self._table = self._filled = None

    def save_pretrained(self, path: str | Path) -> None:
        """Write the LM with ``transformers``' ``save_pretrained`` (``path/lm``) and the rest to ``path/extras.pt``."""
        path = Path(path)
        self.lm.save_pretrained(path / "lm")
        extras = {
            "vocab": dataclasses.asdict(self.vocab),
            "encoder": None
            if self.encoder is None
            else {
                "feature_dim": self.encoder.feature_dim,
                "width": self.encoder.width,
                "state": self.encoder.state_dict(),
            },
            "projector": None if self.projector is None else self.projector.state_dict(),
        }
        torch.save(extras, path / "extras.pt")

    @classmethod
    def from_pretrained(cls, path: str | Path) -> BindingLM:
        """Load a model written by :meth:`save_pretrained` from a local folder (nothing is downloaded).

        The language model is read by the core loader (:func:`icml2026.core.loaders.load_causal_lm`, eager
        attention so that the patching hooks see every attention map); ``extras.pt`` holds the vocabulary, the
        cell encoder and the projector.
        """
        from ...core.errors import BadInput
        from ...core.loaders import load_causal_lm

        path = Path(path)
        if not (path / "lm").is_dir() or not (path / "extras.pt").is_file():
            raise BadInput(f"path = {str(path)!r}: not a folder written by BindingLM.save_pretrained "
                           "(lm/ and extras.pt)")
        extras = torch.load(path / "extras.pt", weights_only=True)
        lm = load_causal_lm(path / "lm", key="path", load_tokenizer=False,
                            model_kwargs={"attn_implementation": "eager"}).model
        enc = None
        if extras["encoder"] is not None:
            enc = CellEncoder(extras["encoder"]["feature_dim"], extras["encoder"]["width"])
            enc.load_state_dict(extras["encoder"]["state"])
        cfg = lm.config
        model = cls(
            Vocab(**extras["vocab"]),
            enc,
            torch.Generator().manual_seed(0),
            n_layer=cfg.n_layer,
            d_model=cfg.n_embd,
            n_head=cfg.n_head,
            max_len=cfg.n_positions,
        )
        model.lm = lm
        if model.projector is not None:
            model.projector.load_state_dict(extras["projector"])
        return model.eval()

    def clone(self) -> BindingLM:
        return copy.deepcopy(self)
