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
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from icml2026.core.progress import track

from .data import CLS, MASK, PAD, VOCAB_SIZE, Client, token_words

__all__ = [
    "BackboneConfig",
    "Backbone",
    "load_backbone",
    "pretrain_backbone",
    "ClientLoRALinear",
    "ClientModel",
    "TARGETS",
    "target_names",
    "tokenize_clients",
    "pooled_features",
]

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model")
TARGETS = ("query", "value")  # W_q and W_v of every layer of our BERT, as in the paper
#: the attention's W_q and W_v by model family (transformers module names)
_TARGETS_BY_TYPE = {
    "bert": ("query", "value"),
    "roberta": ("query", "value"),
    "xlm-roberta": ("query", "value"),
    "llama": ("q_proj", "v_proj"),
    "mistral": ("q_proj", "v_proj"),
    "qwen2": ("q_proj", "v_proj"),
}


@dataclass(frozen=True)
class BackboneConfig:
    """Sizes of the small encoder (brief: 6 layers, d=128, 4 heads; smaller here for 2 CPU cores)."""

    n_layers: int = 4
    d_model: int = 64
    n_heads: int = 4
    seq_len: int = 16
    vocab_size: int = VOCAB_SIZE


class Backbone:
    """A frozen ``transformers`` base model (``AutoModel``: hidden states, no head) and its tokenizer, if any.

    Built here from a config (our small BERT, :meth:`from_config`) or read from a user's folder by
    :func:`load_backbone` (any ``AutoModel`` whose attention has W_q / W_v: BERT, RoBERTa, Llama-class)."""

    def __init__(self, model: Any, tokenizer: Any = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.model.eval()

    @property
    def n_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def d_model(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def max_len(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 512))

    @classmethod
    def from_config(cls, cfg: BackboneConfig, seed: int = 0) -> Backbone:
        from transformers import BertModel

        model = BertModel(_bert_config(cfg), add_pooling_layer=False)
        _reinit(model, seed)
        return cls(model)

    def save_pretrained(self, path: str | Path) -> None:
        self.model.save_pretrained(str(path))
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(str(path))


def load_backbone(path: str | Path, *, dtype: str | None = None, device: str = "cpu", key: str = "model") -> Backbone:
    """A user's checkpoint (a local Hugging Face folder) as a frozen backbone, through
    :func:`icml2026.core.loaders.load_encoder` (``AutoModel`` and ``AutoTokenizer``; nothing is downloaded).

    Raises ``BadInput`` naming ``key`` when the folder holds no model, or no attention W_q / W_v to adapt."""
    from icml2026.core.errors import BadInput
    from icml2026.core.loaders import check_model_path, load_encoder

    p = check_model_path(path, key=key, kinds=("hf",))
    # a folder without a tokenizer (our own backbone, saved by Backbone.save_pretrained) reads the synthetic
    # token ids as they are; otherwise the checkpoint's tokenizer reads them as words (tokenize_clients)
    has_tokenizer = any((Path(p) / f).is_file() for f in _TOKENIZER_FILES)
    loaded = load_encoder(
        p,
        dtype=dtype,
        device=device,
        key=key,
        load_tokenizer=has_tokenizer,
        model_kwargs={"attn_implementation": "eager"},
    )
    backbone = Backbone(loaded.model, loaded.tokenizer)
    vocab = int(getattr(backbone.model.config, "vocab_size", 0))
    if not has_tokenizer and vocab < VOCAB_SIZE:
        raise BadInput(f"{key} = {str(path)!r}: no tokenizer, and a vocabulary of {vocab} < {VOCAB_SIZE} ids")
    try:
        target_names(backbone.model)
    except ValueError as exc:
        raise BadInput(f"{key} = {str(path)!r}: {exc}") from None
    return backbone


def target_names(model: nn.Module) -> tuple[str, ...]:
    """The names of the attention's W_q and W_v in ``model`` (by its ``model_type``, else the first pair found)."""
    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, nn.Linear)}
    mtype = str(getattr(getattr(model, "config", None), "model_type", ""))
    candidates = [_TARGETS_BY_TYPE[mtype]] if mtype in _TARGETS_BY_TYPE else []
    candidates += [("query", "value"), ("q_proj", "v_proj")]
    for cand in candidates:
        if set(cand) <= names:
            return cand
    raise ValueError(f"no attention W_q / W_v linear layers found (model_type {mtype!r})")


def _layer_of(name: str) -> int | None:
    """The layer index in a module name (``encoder.layer.3.attention.self.query`` -> 3)."""
    m = re.search(r"(?:^|\.)(?:layer|layers|h|block)\.(\d+)\.", name)
    return int(m.group(1)) if m else None


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
    """Masked-LM pre-training (15% of the real body tokens -> [MASK], padding masked out), then frozen.

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
        att = (x != PAD).long()
        mask = (torch.rand(x.shape, generator=g) < 0.15) & (att == 1)
        mask[:, 0] = False
        labels = torch.where(mask, x, torch.full_like(x, -100))
        x[mask] = MASK
        loss = mlm(input_ids=x.to(device), attention_mask=att.to(device), labels=labels.to(device)).loss
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

    def __init__(self, base: nn.Linear, owner: ClientModel, layer: int, key: str) -> None:
        super().__init__()
        self.base = base
        self.owner = owner.__dict__  # plain reference (no submodule cycle)
        self.layer, self.key = layer, key

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m: ClientModel = self.owner["_self"]
        n = m.n_clients
        y = self.base(x)
        xr = x.reshape(n, -1, x.shape[-1])
        ac, bc = m.A_c[self.key], m.B_c[self.key]
        delta = torch.bmm(torch.bmm(xr.to(ac.dtype), ac.transpose(1, 2)), bc.transpose(1, 2))
        if m.ext_active[self.layer]:
            lam = torch.sigmoid(m.theta[self.layer]).view(n, 1, 1)
            ext = torch.bmm(
                torch.bmm(xr.to(ac.dtype), m.A_e[self.key].transpose(1, 2)), m.B_e[self.key].transpose(1, 2)
            )
            mixed = lam * delta + (1 - lam) * ext
            delta = torch.where(m.has_ext[self.layer].view(n, 1, 1), mixed, delta)
        return y + (m.scale * delta).reshape(y.shape).to(y.dtype)


class ClientModel(nn.Module):
    """The frozen backbone shared by N clients, each with its own adapters, lambdas and classification head.

    Adapters sit on the attention's W_q and W_v of every layer (:func:`target_names`: ``query``/``value`` in
    BERT and RoBERTa, ``q_proj``/``v_proj`` in Llama-class models); ``keys`` are ``"<layer>_<name>"`` and
    ``layer_keys[l]`` the keys of layer l. The classification head (a linear map on the mean of the last
    hidden states over the attention mask, or on the first token's) is kept local for every method; A and
    the head are initialised identically for all clients (A from one shared seed, as the paper's step 1).
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
        self.targets = target_names(self.encoder)
        found: dict[str, tuple[str, nn.Linear, int]] = {}
        for name, mod in self.encoder.named_modules():
            last = name.rsplit(".", 1)[-1]
            layer = _layer_of(name)
            if isinstance(mod, nn.Linear) and last in self.targets and layer is not None:
                found[f"{layer}_{last}"] = (name, mod, layer)
        self.keys = [f"{layer}_{t}" for layer in range(self.n_layers) for t in self.targets]
        missing = [k for k in self.keys if k not in found]
        if missing:
            raise ValueError(f"backbone: no adapter target for {', '.join(missing)}")
        self.layer_keys = [[f"{layer}_{t}" for t in self.targets] for layer in range(self.n_layers)]
        shapes = {k: (found[k][1].in_features, found[k][1].out_features) for k in self.keys}
        # A random-init with one shared seed (peft's kaiming-uniform bound 1/sqrt(in)), B zero-init
        a0 = {k: (torch.rand((rank, shapes[k][0]), generator=g) * 2 - 1) / math.sqrt(shapes[k][0]) for k in self.keys}
        self.A_c = nn.ParameterDict({k: nn.Parameter(a0[k].expand(n_clients, -1, -1).clone()) for k in self.keys})
        self.B_c = nn.ParameterDict({k: nn.Parameter(torch.zeros(n_clients, shapes[k][1], rank)) for k in self.keys})
        self.A_e: dict[str, torch.Tensor] = {k: torch.zeros(n_clients, rank, shapes[k][0]) for k in self.keys}
        self.B_e: dict[str, torch.Tensor] = {k: torch.zeros(n_clients, shapes[k][1], rank) for k in self.keys}
        self.has_ext = [torch.zeros(n_clients, dtype=torch.bool) for _ in range(self.n_layers)]
        self.ext_active = [False] * self.n_layers
        self.theta = nn.ParameterList([nn.Parameter(torch.zeros(n_clients)) for _ in range(self.n_layers)])
        w0 = torch.randn((d, n_classes), generator=g) * (1.0 / math.sqrt(d))  # one shared head init
        self.head_w = nn.Parameter(w0.expand(n_clients, -1, -1).clone())
        self.head_b = nn.Parameter(torch.zeros(n_clients, n_classes))
        for key in self.keys:
            name, mod, layer = found[key]
            parent = self.encoder.get_submodule(name.rsplit(".", 1)[0])
            setattr(parent, name.rsplit(".", 1)[1], ClientLoRALinear(mod, self, layer, key))

    def layer_floats(self, layer: int) -> int:
        """Floats in layer ``layer``'s cluster expert (A and B of each targeted map)."""
        return sum(self.A_c[k][0].numel() + self.B_c[k][0].numel() for k in self.layer_keys[layer])

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (N, b, n_classes) for token ids ``x`` (N, b, T) and attention masks ``mask`` (N, b, T; 1 =
        real token; ``None``: every position): row block k goes to client k."""
        n, b, t = x.shape
        att = None if mask is None else mask.reshape(n * b, t)
        hs = self.encoder(input_ids=x.reshape(n * b, t), attention_mask=att).last_hidden_state.float()
        if self.pooling == "cls":
            h = hs[:, 0]
        elif att is None:
            h = hs.mean(1)
        else:
            w = att.to(hs.dtype).unsqueeze(-1)
            h = (hs * w).sum(1) / w.sum(1).clamp_min(1.0)
        return torch.baddbmm(self.head_b.unsqueeze(1), h.reshape(n, b, -1), self.head_w)


def tokenize_clients(clients: Sequence[Client], tokenizer: Any, max_len: int) -> list[Client]:
    """The clients' synthetic sequences as text (one word per token, :func:`.data.token_words`) read by a
    checkpoint's own tokenizer: token ids and attention masks of variable length, padded per client with
    masked zeros. Sequences longer than ``max_len`` tokens are cut (the mask stays exact)."""
    words = token_words()

    def encode(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        texts = [" ".join(words[int(t)] for t in row if t not in (PAD, CLS)) for row in x]
        ids = tokenizer(texts, add_special_tokens=True, truncation=True, max_length=max_len)["input_ids"]
        t = max(len(r) for r in ids)
        out = np.zeros((len(ids), t), dtype=np.int64)
        mask = np.zeros((len(ids), t), dtype=np.int64)
        for i, r in enumerate(ids):
            out[i, : len(r)], mask[i, : len(r)] = r, 1
        return out, mask

    res = []
    for c in clients:
        xtr, mtr = encode(c.x_train)
        xte, mte = encode(c.x_test)
        res.append(Client(xtr, c.y_train, xte, c.y_test, c.task, mask_train=mtr, mask_test=mte))
    return res


def pooled_features(backbone: Backbone, x: np.ndarray, mask: np.ndarray, batch: int = 200) -> np.ndarray:
    """(n, d) mean over the attention mask of the frozen backbone's last hidden states."""
    dev = next(backbone.model.parameters()).device
    out = []
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            xb = torch.as_tensor(x[i : i + batch]).to(dev)
            mb = torch.as_tensor(mask[i : i + batch]).to(dev)
            hs = backbone.model(input_ids=xb, attention_mask=mb).last_hidden_state.float()
            w = mb.to(hs.dtype).unsqueeze(-1)
            out.append(((hs * w).sum(1) / w.sum(1).clamp_min(1.0)).cpu().numpy())
    return np.concatenate(out)
