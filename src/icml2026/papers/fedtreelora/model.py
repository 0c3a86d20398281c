"""Frozen transformer backbone (HF ``transformers`` BERT built from a config) and client-batched LoRA.

The simulator trains the N clients' adapters side by side: one forward pass carries every client's batch,
and :class:`ClientLoRALinear` applies client k's own adapters to client k's rows only (a batched matmul over
the client axis), so client k's loss and gradient depend on its own data and parameters alone. With a
per-element optimiser (AdamW) this is the same computation as N separate clients, only faster on a CPU.

Two-branch forward of the paper (step 4): ``h = W0 x + s * [lam * Bc Ac x + (1 - lam) * Be Ae x]`` with
``s = alpha / r`` and ``lam = sigmoid(theta_{l,k})``; where client k has no external expert at layer l the
forward is ``W0 x + s * Bc Ac x`` (the plain LoRA of peft; equivalence is tested against ``peft``).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from icml2026.core.progress import track

from .data import MASK, PAD, VOCAB_SIZE

__all__ = ["BackboneConfig", "Backbone", "pretrain_backbone", "ClientLoRALinear", "ClientModel", "TARGETS"]

TARGETS = ("query", "value")  # W_q and W_v of every layer, as in the paper


@dataclass(frozen=True)
class BackboneConfig:
    """Sizes of the small encoder (brief: 6 layers, d=128, 4 heads; smaller here for 2 CPU cores)."""

    n_layers: int = 4
    d_model: int = 64
    n_heads: int = 4
    seq_len: int = 16
    vocab_size: int = VOCAB_SIZE


class Backbone:
    """A frozen BERT encoder (``transformers.BertModel``, eager attention); ``from_pretrained`` loads a local copy."""

    def __init__(self, model: Any) -> None:
        self.model = model
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.model.eval()

    @property
    def n_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def d_model(self) -> int:
        return int(self.model.config.hidden_size)

    @classmethod
    def from_config(cls, cfg: BackboneConfig, seed: int = 0) -> Backbone:
        from transformers import BertModel

        model = BertModel(_bert_config(cfg), add_pooling_layer=False)
        _reinit(model, seed)
        return cls(model)

    @classmethod
    def from_pretrained(cls, path: str | Path) -> Backbone:
        """Load a backbone saved with :meth:`save_pretrained` (a local folder; nothing is downloaded)."""
        from transformers import BertModel

        p = Path(path)
        if not (p / "config.json").is_file():
            raise ValueError(f"path = {str(path)!r}: no config.json (not a saved backbone folder)")
        return cls(BertModel.from_pretrained(str(p), attn_implementation="eager", local_files_only=True))

    def save_pretrained(self, path: str | Path) -> None:
        self.model.save_pretrained(str(path))


def _bert_config(cfg: BackboneConfig) -> Any:
    from transformers import BertConfig

    if cfg.d_model % cfg.n_heads:
        raise ValueError(f"d_model = {cfg.d_model}: must be divisible by n_heads = {cfg.n_heads}")
    c = BertConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        intermediate_size=2 * cfg.d_model,
        max_position_embeddings=cfg.seq_len,
        type_vocab_size=1,
        pad_token_id=PAD,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    c._attn_implementation = "eager"
    return c


def _reinit(model: nn.Module, seed: int) -> None:
    """Deterministic init from a local generator (BERT's N(0, 0.02) weights, zero biases, unit LayerNorm)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
            elif "LayerNorm.weight" in name:
                p.fill_(1.0)
            else:
                p.zero_()


def pretrain_backbone(
    corpus: np.ndarray,
    cfg: BackboneConfig,
    steps: int,
    batch_size: int,
    lr: float,
    rng: np.random.Generator,
    device: str | torch.device = "cpu",
) -> Backbone:
    """Masked-LM pre-training (15% of body tokens -> [MASK]) on a task-agnostic corpus, then frozen.

    Trained on ``device`` (the backbone stays there); batches and masks are drawn on the CPU and moved."""
    from transformers import BertForMaskedLM

    seed = int(rng.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed + 1)
    mlm = BertForMaskedLM(_bert_config(cfg))
    _reinit(mlm, seed)
    mlm.tie_weights()
    mlm.to(device)  # type: ignore[arg-type]  # transformers wraps .to; mypy misreads the bound call
    mlm.train()
    opt = torch.optim.AdamW(mlm.parameters(), lr=lr, weight_decay=0.01)
    data = torch.as_tensor(corpus, dtype=torch.long)
    for _ in track(range(steps), "fedtreelora backbone pre-training", total=steps):
        idx = torch.randint(0, data.shape[0], (batch_size,), generator=g)
        x = data[idx].clone()
        mask = torch.rand(x.shape, generator=g) < 0.15
        mask[:, 0] = False
        labels = torch.where(mask, x, torch.full_like(x, -100))
        x[mask] = MASK
        loss = mlm(input_ids=x.to(device), labels=labels.to(device)).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return Backbone(mlm.bert)


class ClientLoRALinear(nn.Module):
    """A frozen linear map with N clients' two-branch LoRA adapters (rows grouped by client).

    Parameters (set by :class:`ClientModel`): ``A_c`` (N, r, in) and ``B_c`` (N, out, r) the trainable
    cluster expert; ``A_e``, ``B_e`` the frozen external expert; ``has_ext`` (N,) bool; ``theta`` (N,)
    the layer's lambda logits (shared by the layer's maps); ``scale`` = alpha / r.
    """

    def __init__(self, base: nn.Linear, owner: ClientModel, layer: int, target: str) -> None:
        super().__init__()
        self.base = base
        self.owner = owner.__dict__  # plain reference (no submodule cycle)
        self.layer, self.target = layer, target

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m: ClientModel = self.owner["_self"]
        n = m.n_clients
        y = self.base(x)
        xr = x.reshape(n, -1, x.shape[-1])
        key = f"{self.layer}_{self.target}"
        ac, bc = m.A_c[key], m.B_c[key]
        delta = torch.bmm(torch.bmm(xr, ac.transpose(1, 2)), bc.transpose(1, 2))
        if m.ext_active[self.layer]:
            lam = torch.sigmoid(m.theta[self.layer]).view(n, 1, 1)
            ext = torch.bmm(torch.bmm(xr, m.A_e[key].transpose(1, 2)), m.B_e[key].transpose(1, 2))
            mixed = lam * delta + (1 - lam) * ext
            delta = torch.where(m.has_ext[self.layer].view(n, 1, 1), mixed, delta)
        return y + m.scale * delta.reshape(y.shape)


class ClientModel(nn.Module):
    """The frozen backbone shared by N clients, each with its own adapters, lambdas and classification head.

    The classification head (a linear map on the [CLS] state) is kept local for every method.
    """

    def __init__(
        self,
        backbone: Backbone,
        n_clients: int,
        rank: int,
        alpha: float,
        n_classes: int,
        g: torch.Generator,
        pooling: str = "mean",
    ) -> None:
        super().__init__()
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling = {pooling!r}: must be 'mean' or 'cls'")
        self.pooling = pooling
        self.__dict__["_self"] = self
        self.encoder = copy.deepcopy(backbone.model)
        for p in self.encoder.parameters():
            p.requires_grad_(False)
        self.n_clients, self.rank, self.scale = n_clients, rank, alpha / rank
        self.n_layers = int(self.encoder.config.num_hidden_layers)
        d = int(self.encoder.config.hidden_size)
        self.keys = [f"{layer}_{t}" for layer in range(self.n_layers) for t in TARGETS]
        # A random-init with one shared seed (peft's kaiming-uniform bound 1/sqrt(in)), B zero-init
        bound = 1.0 / math.sqrt(d)
        a0 = {k: (torch.rand((rank, d), generator=g) * 2 - 1) * bound for k in self.keys}
        self.A_c = nn.ParameterDict({k: nn.Parameter(a0[k].expand(n_clients, -1, -1).clone()) for k in self.keys})
        self.B_c = nn.ParameterDict({k: nn.Parameter(torch.zeros(n_clients, d, rank)) for k in self.keys})
        self.A_e: dict[str, torch.Tensor] = {k: torch.zeros(n_clients, rank, d) for k in self.keys}
        self.B_e: dict[str, torch.Tensor] = {k: torch.zeros(n_clients, d, rank) for k in self.keys}
        self.has_ext = [torch.zeros(n_clients, dtype=torch.bool) for _ in range(self.n_layers)]
        self.ext_active = [False] * self.n_layers
        self.theta = nn.ParameterList([nn.Parameter(torch.zeros(n_clients)) for _ in range(self.n_layers)])
        w0 = torch.randn((d, n_classes), generator=g) * (1.0 / math.sqrt(d))  # one shared head init
        self.head_w = nn.Parameter(w0.expand(n_clients, -1, -1).clone())
        self.head_b = nn.Parameter(torch.zeros(n_clients, n_classes))
        for layer, blk in enumerate(self.encoder.encoder.layer):
            for t in TARGETS:
                setattr(blk.attention.self, t, ClientLoRALinear(getattr(blk.attention.self, t), self, layer, t))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (N, b, n_classes) for token ids ``x`` of shape (N, b, T): row block k goes to client k."""
        n, b, t = x.shape
        hs = self.encoder(input_ids=x.reshape(n * b, t)).last_hidden_state
        h = hs[:, 0] if self.pooling == "cls" else hs.mean(1)
        return torch.baddbmm(self.head_b.unsqueeze(1), h.reshape(n, b, -1), self.head_w)
