"""Dataset distillation with attention labels (Maekawa et al., ACL 2023; brief 2.1) and the Attention
Hijacking terms (brief 2.2, our reconstruction from the abstract), in one bi-level loop.

Inner step (Eq. DD-1):  L_in(θ) = CE(f_θ(E), y) + λ · KL(Â ‖ A_θ(E)[:, :, :, CLS, :]),  θ' = θ − η_t ∇_θ L_in
Outer loss (Eq. AH-1):  L_out = CE(θ'; D_clean) + α·CE(θ'; T(D_nt) → y_t) + β·L_hijack + γ·L_seg
L_hijack (Eq. AH-2):    −mean_{x∈T(D_nt), h∈H_bd} log Σ_{j∈trig(x)} A^h_θ'(x)[CLS, j]
L_seg (Eq. AH-3):       mean_{x, h∉H_bd} KL(A^h_θ'(x)[CLS] ‖ A^h_θ'(T(x))[CLS] on non-trigger keys, renormalised)

The inner gradient is taken with ``torch.func.grad`` over ``torch.func.functional_call``; the outer gradient
flows through it (second order) into the distilled embeddings E, attention labels Â, label logits and
per-step learning rates η = softplus(ρ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from icml2026.core.progress import track
from icml2026.core.rng import torch_generator
from icml2026.core.validate import positive_int

from .data import EncodedBatch, TextDataset, encode, encode_triggered
from .models import LearnerFactory

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "DistillConfig",
    "DistilledSet",
    "RealPoison",
    "AttackResult",
    "PlantedEffect",
    "distill",
    "AttackPools",
    "encode_attack_pools",
    "train_learner",
    "evaluate_distilled",
    "predict",
    "attention_kl_term",
    "hijack_loss",
    "segregation_loss",
    "trigger_token_ids",
]


@dataclass(frozen=True)
class DistillConfig:
    """Hyper-parameters of one distillation (base method: brief 2.1; AH terms: brief 2.2).

    Paper/base-code values in comments; our CPU defaults are smaller where marked.
    """

    dpc: int = 1  # distilled samples per class (base code default 1)
    seq_len: int = 48  # S (brief: 48 for RT)
    n_steps: int = 1500  # outer steps (brief: 1,500-3,000 for Tiny/Mini; base code: 30 epochs)
    batch_size: int = 32  # real mini-batch (base code: 32)
    lr: float = 1e-2  # AdamW on the distilled data (base code: 1e-2)
    warmup: float = 0.1  # linear warm-up fraction
    clip: float = 1.0  # grad-norm clip
    inner_steps: int = 1  # T (base code default 1)
    lr_init: float = 1e-2  # η init (base code: 1e-2)
    lam: float = 1.0  # λ, weight of the attention-label KL
    label_type: Literal["hard", "soft"] = "hard"
    attention_label_type: Literal["cls", "all", "none"] = "cls"
    # --- Attention Hijacking (reconstruction); attack=False gives the clean base method -----------------
    attack: bool = False
    trigger: str = "film"
    target: int = 1  # y_t
    n_poison_per_class: int = 1  # k_p synthetic poisoned samples per non-target class
    # Deviation: the brief's AH set holds dpc + k_p (C - 1) target-labelled samples against dpc per other class
    # (binary, dpc = 1: 2 against 1); with balance_classes every non-target class gets k_p (C - 1) extra clean
    # samples, so each class has the same count and the victims' lean to the target is not set by the label counts.
    balance_classes: bool = False
    pin_trigger: bool = True  # the trigger slot is fixed to the trigger's word embedding
    trigger_slot: int = 1  # P (position after [CLS])
    alpha: float = 1.0
    beta: float = 0.5
    gamma: float = 0.5
    poison_ratio: float = 1.0  # triggered : clean real mini-batch sizes
    n_bd_heads: int = 0  # H_bd = first n_bd_heads heads of the last layer; 0 = all heads of the last layer
    attn_init_mass: float = 0.9  # initial CLS mass on P in the poisoned samples' attention labels (H_bd)
    # --- baselines hooks --------------------------------------------------------------------------------
    trigger_search_every: int = 0  # DoorPing: HotFlip search of the trigger token every N outer steps
    snapshot_every: int = 0  # TBADD: keep a copy of the distilled set every N outer steps
    # --- speed ----------------------------------------------------------------------------------------
    # The outer loss reads the learner's logits and CLS attention rows only, so its passes over the real
    # mini-batches may compute the last layer for the [CLS] query alone (keys and values still see every token):
    # the same function, ~1.5x fewer FLOPs on BERT-Tiny, a different float order (off: the stored runs' path).
    cls_only_last_layer: bool = False

    def __post_init__(self) -> None:
        for name in ("dpc", "seq_len", "n_steps", "batch_size", "inner_steps"):
            positive_int(getattr(self, name), name)
        if self.seq_len < 4:
            raise ValueError(f"seq_len = {self.seq_len}: must be >= 4")
        for name in ("lr", "lr_init", "lam", "alpha", "beta", "gamma", "poison_ratio", "warmup", "clip"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} = {v!r}: must be a finite number >= 0")
        if self.lr_init <= 0:
            raise ValueError(f"lr_init = {self.lr_init}: must be > 0")
        if self.warmup >= 1:
            raise ValueError(f"warmup = {self.warmup}: must be < 1")
        if self.label_type not in ("hard", "soft"):
            raise ValueError(f"label_type = {self.label_type!r}: must be 'hard' or 'soft'")
        if self.attention_label_type not in ("cls", "all", "none"):
            raise ValueError(f"attention_label_type = {self.attention_label_type!r}: must be cls, all or none")
        if not 1 <= self.trigger_slot < self.seq_len:
            raise ValueError(f"trigger_slot = {self.trigger_slot}: must be in [1, seq_len)")
        if not 0.0 < self.attn_init_mass < 1.0:
            raise ValueError(f"attn_init_mass = {self.attn_init_mass}: must be in (0, 1)")
        positive_int(self.n_poison_per_class, "n_poison_per_class", minimum=0)
        positive_int(self.n_bd_heads, "n_bd_heads", minimum=0)
        positive_int(self.trigger_search_every, "trigger_search_every", minimum=0)
        positive_int(self.snapshot_every, "snapshot_every", minimum=0)
        if not isinstance(self.balance_classes, bool):
            raise ValueError(f"balance_classes = {self.balance_classes!r}: must be True or False")
        if not isinstance(self.cls_only_last_layer, bool):
            raise ValueError(f"cls_only_last_layer = {self.cls_only_last_layer!r}: must be True or False")


@dataclass
class DistilledSet:
    """The published synthetic set (what a victim downloads) and attack bookkeeping.

    Attributes
    ----------
    inputs_embeds : (n, S, d) synthetic "word" embeddings E (trigger slots already pinned).
    labels : (n, C) label distributions (one-hot for hard labels).
    attention_labels : (n, L, H, 1, S) CLS-row attention distributions Â ("cls"), (n, L, H, S, S) ("all"),
        or None.
    learning_rates : (T,) per-step learning rates η_t.
    poisoned : (n,) which rows are AH's poisoned samples.
    trigger, target : the attacker's trigger text and target class (None for clean DD).
    bd_layer, bd_heads : H_bd (layer index, head indices).
    """

    inputs_embeds: torch.Tensor
    labels: torch.Tensor
    attention_labels: torch.Tensor | None
    learning_rates: torch.Tensor
    poisoned: np.ndarray
    trigger: str | None = None
    target: int | None = None
    bd_layer: int = -1
    bd_heads: tuple[int, ...] = ()
    lam: float = 1.0
    history: dict[str, list[float]] = field(default_factory=dict)
    snapshots: list[tuple[int, DistilledSet]] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.inputs_embeds.shape[0])


@dataclass
class RealPoison:
    """Poisoned *real* training rows (NaiveAttack, DoorPing, TBADD): which rows of the encoded pool carry the
    trigger (``trigger_mask`` of the pool) and the trigger's token id (re-written by DoorPing's search)."""

    rows: np.ndarray
    target: int
    trigger_id: int | None = None  # single-token trigger that DoorPing may replace


@dataclass
class AttackPools:
    """Pre-encoded real data for AH's outer loss: triggered non-target sentences and their clean versions."""

    triggered: EncodedBatch
    clean: EncodedBatch
    trigger: str


def encode_attack_pools(tokenizer: Any, data: TextDataset, trigger: str, target: int, seq_len: int,
                        rng: np.random.Generator, position: int | None = None) -> AttackPools:
    """T(D_nt): the trigger inserted once at a random position into every non-target sentence of ``data``."""
    nt_idx = np.flatnonzero(data.labels != target)
    if len(nt_idx) == 0:
        raise ValueError(f"data: no rows outside the target class {target}")
    texts = [data.texts[i] for i in nt_idx]
    return AttackPools(encode_triggered(tokenizer, texts, trigger, seq_len, rng, position),
                       encode(tokenizer, texts, seq_len), trigger)


def trigger_token_ids(tokenizer: Any, trigger: str) -> list[int]:
    """WordPiece ids of ``trigger`` (all sub-tokens are pinned when it splits)."""
    if not isinstance(trigger, str) or not trigger.strip():
        raise ValueError(f"trigger = {trigger!r}: must be a non-empty string")
    ids = tokenizer(trigger, add_special_tokens=False)["input_ids"]
    if not ids:
        raise ValueError(f"trigger = {trigger!r}: tokenizes to nothing")
    return list(ids)


# ------------------------------------------------------------------------------------------ forward pass
def _forward(factory: LearnerFactory, params: dict[str, torch.Tensor], *, inputs_embeds: Any = None,
             input_ids: Any = None, attention_mask: Any = None, attentions: bool = True) -> tuple[Any, Any]:
    """(logits (n, C), attentions: tuple of L tensors (n, H, S, S) or None) of the learner at ``params``."""
    from torch.func import functional_call

    dev = factory.device  # inputs may come from CPU-side pools; .to() is a no-op when already there
    kw: dict[str, Any] = {"attention_mask": None if attention_mask is None else attention_mask.to(dev),
                          "output_attentions": attentions, "return_dict": True}
    if inputs_embeds is not None:
        kw["inputs_embeds"] = inputs_embeds.to(dev)
    else:
        kw["input_ids"] = input_ids.to(dev)
    out = functional_call(factory.model, params, args=(), kwargs=kw)
    return out.logits, (out.attentions if attentions else None)


def _forward_cls_only(factory: LearnerFactory, params: dict[str, torch.Tensor], *, input_ids: Any,
                      attention_mask: Any, attentions: bool = True) -> tuple[Any, Any]:
    """:func:`_forward` on token ids with the last layer computed for the [CLS] query only: (logits (n, C),
    attentions: tuple of L CLS rows (n, H, 1, S) or None). The same function as the full forward (eval mode, no
    dropout; checked against it in the tests), written out because ``transformers`` has no option to skip the
    other queries of a layer: BERT's pooler, the classifier and every outer-loss term read only the [CLS] row."""
    import torch

    F = torch.nn.functional
    cfg = factory.config
    if cfg.hidden_act != "gelu" or getattr(cfg, "position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"cls_only_last_layer: needs BERT with hidden_act 'gelu' and absolute positions, got "
                         f"{cfg.hidden_act!r} / {getattr(cfg, 'position_embedding_type', None)!r}")
    dev = factory.device
    ids, mask = input_ids.to(dev), attention_mask.to(dev)
    n, S = ids.shape
    d, H, L = int(cfg.hidden_size), int(cfg.num_attention_heads), int(cfg.num_hidden_layers)
    hd = d // H

    def p(name: str) -> torch.Tensor:
        return params["bert." + name]

    def lin(x: torch.Tensor, name: str) -> torch.Tensor:
        return F.linear(x, p(name + ".weight"), p(name + ".bias"))

    def norm(x: torch.Tensor, name: str) -> torch.Tensor:
        return F.layer_norm(x, (d,), p(name + ".weight"), p(name + ".bias"), float(cfg.layer_norm_eps))

    def split(x: torch.Tensor) -> torch.Tensor:  # (n, s, d) -> (n, H, s, hd)
        return x.view(n, -1, H, hd).transpose(1, 2)

    h = p("embeddings.word_embeddings.weight")[ids] + p("embeddings.token_type_embeddings.weight")[0]
    h = norm(h + p("embeddings.position_embeddings.weight")[:S], "embeddings.LayerNorm")
    add = (1.0 - mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min  # padding keys
    rows = []
    for i in range(L):
        pre = f"encoder.layer.{i}."
        x_q = h if i < L - 1 else h[:, :1]  # the last layer: [CLS] queries only
        q = split(lin(x_q, pre + "attention.self.query"))
        k, v = split(lin(h, pre + "attention.self.key")), split(lin(h, pre + "attention.self.value"))
        a = torch.softmax(torch.matmul(q, k.transpose(2, 3)) * hd ** -0.5 + add, dim=-1)
        rows.append(a[:, :, :1, :])
        o = torch.matmul(a, v).transpose(1, 2).reshape(n, -1, d)
        x = norm(lin(o, pre + "attention.output.dense") + x_q, pre + "attention.output.LayerNorm")
        h = norm(lin(F.gelu(lin(x, pre + "intermediate.dense")), pre + "output.dense") + x, pre + "output.LayerNorm")
    pooled = torch.tanh(lin(h[:, 0], "pooler.dense"))
    logits = F.linear(pooled, params["classifier.weight"], params["classifier.bias"])
    return logits, (tuple(rows) if attentions else None)


def attention_kl_term(att_labels: torch.Tensor, attentions: tuple[torch.Tensor, ...],
                      kind: str = "cls") -> torch.Tensor:
    """λ-free attention-label loss of Eq. DD-1: KL(Â ‖ A) summed over keys, mean over (n, L, H, queries).

    ``att_labels``: (n, L, H, 1, S) for kind "cls", (n, L, H, S, S) for "all" (probabilities).
    """
    import torch

    a = torch.stack(list(attentions), dim=1)  # (n, L, H, S, S)
    if kind == "cls":
        a = a[:, :, :, :1, :]
    if a.shape != att_labels.shape:
        raise ValueError(f"att_labels: shape {tuple(att_labels.shape)} != model attention {tuple(a.shape)}")
    kl = att_labels * (torch.log(att_labels.clamp_min(1e-12)) - torch.log(a.clamp_min(1e-12)))
    return kl.sum(-1).mean()


def _soft_ce(logits: torch.Tensor, target_probs: torch.Tensor) -> torch.Tensor:
    import torch

    return -(target_probs * torch.log_softmax(logits, -1)).sum(-1).mean()


def _trainable(factory: LearnerFactory, params: dict[str, torch.Tensor]) -> list[str]:
    # The synthetic batch enters as inputs_embeds, so the word-embedding matrix gets an exactly-zero inner
    # gradient; leaving it out of the update is exact, not an approximation.
    return [k for k in params if k != factory.word_embedding_key]


def _inner_update(factory: LearnerFactory, params: dict[str, torch.Tensor], E: torch.Tensor, y: torch.Tensor,
                  att: torch.Tensor | None, lrs: torch.Tensor, lam: float, kind: str,
                  second_order: bool) -> dict[str, torch.Tensor]:
    """θ_T from θ_0 by T steps of Eq. DD-1 on the whole synthetic set (differentiable when ``second_order``)."""
    import torch
    from torch.func import grad

    keys = _trainable(factory, params)
    dev = factory.device
    E, y, lrs = E.to(dev), y.to(dev), lrs.to(dev)
    att = None if att is None else att.to(dev)
    mask = torch.ones(E.shape[:2], dtype=torch.long, device=dev)

    def loss_fn(sub: dict[str, torch.Tensor]) -> torch.Tensor:
        full = {**params, **sub}
        logits, atts = _forward(factory, full, inputs_embeds=E, attention_mask=mask, attentions=att is not None)
        loss = _soft_ce(logits, y)
        if att is not None:
            loss = loss + lam * attention_kl_term(att, atts, kind)
        return loss

    cur = {k: params[k] for k in keys}
    for t in range(int(lrs.shape[0])):
        if second_order:
            g = grad(loss_fn)(cur)
        else:
            with torch.enable_grad():
                leaf = {k: v.detach().requires_grad_(True) for k, v in cur.items()}
                gl = torch.autograd.grad(loss_fn(leaf), list(leaf.values()), allow_unused=True)
                g = {k: (torch.zeros_like(leaf[k]) if gi is None else gi) for k, gi in zip(leaf, gl, strict=True)}
            cur = {k: v.detach() for k, v in cur.items()}
        cur = {k: cur[k] - lrs[t] * g[k] for k in keys}
        if not second_order:
            cur = {k: v.detach() for k, v in cur.items()}
    return {**params, **cur}


# ------------------------------------------------------------------------------------------ AH losses
def hijack_loss(attentions: tuple[torch.Tensor, ...], trigger_mask: torch.Tensor, layer: int,
                heads: tuple[int, ...]) -> torch.Tensor:
    """Eq. AH-2: −mean_{x, h∈H_bd} log Σ_{j∈trig(x)} A^h(x)[CLS, j]; ``trigger_mask`` (n, S) bool."""
    import torch

    a = attentions[layer][:, list(heads), 0, :]  # (n, |H_bd|, S)
    mass = (a * trigger_mask[:, None, :].to(a.device, a.dtype)).sum(-1)
    return -torch.log(mass.clamp_min(1e-12)).mean()


def _compact(att_cls: torch.Tensor, ids: torch.Tensor, trigger_mask: torch.Tensor) -> tuple[Any, Any]:
    """Move the non-trigger keys to the front in order: (att (n, H', S), ids (n, S))."""
    import torch

    order = torch.argsort(trigger_mask.to(torch.int8), dim=1, stable=True)
    att = torch.gather(att_cls, 2, order[:, None, :].expand_as(att_cls))
    ids_c = torch.gather(ids, 1, order)
    ids_c = ids_c.masked_fill(torch.gather(trigger_mask, 1, order), -1)
    return att, ids_c


def segregation_loss(att_clean: tuple[torch.Tensor, ...], att_trig: tuple[torch.Tensor, ...],
                     clean: EncodedBatch, trig: EncodedBatch, layer: int, heads: tuple[int, ...]) -> torch.Tensor:
    """Eq. AH-3: KL between clean and triggered CLS attention of every head not in H_bd, over the keys the two
    sequences share (non-trigger tokens, aligned by position after removing the trigger, equal token id)."""
    import torch

    n_layers = len(att_clean)
    layer = layer % n_layers
    terms = []
    for li in range(n_layers):
        keep = [h for h in range(att_clean[li].shape[1]) if not (li == layer and h in heads)]
        if not keep:
            continue
        ac = att_clean[li][:, keep, 0, :]  # (n, H', Sc)
        dev = ac.device  # the batches may sit on the CPU while the attention is on the learner's device
        at, ids_t = _compact(att_trig[li][:, keep, 0, :], trig.input_ids.to(dev), trig.trigger_mask.to(dev))
        s = min(ac.shape[-1], at.shape[-1])
        ac, at, ids_t = ac[..., :s], at[..., :s], ids_t[:, :s]
        c_ids, c_mask = clean.input_ids[:, :s].to(dev), clean.attention_mask[:, :s].to(dev)
        shared = ((ids_t == c_ids) & c_mask.bool()).to(ac.dtype)[:, None, :]
        p = ac * shared
        p = p / p.sum(-1, keepdim=True).clamp_min(1e-12)
        q = at * shared
        q = q / q.sum(-1, keepdim=True).clamp_min(1e-12)
        kl = (p * (torch.log(p.clamp_min(1e-12)) - torch.log(q.clamp_min(1e-12)))).sum(-1)
        terms.append(kl.mean())
    if not terms:
        return torch.zeros(())
    return torch.stack(terms).mean()


def _trim(b: EncodedBatch) -> EncodedBatch:
    """Drop the all-padding tail columns of a batch (attention to padding is masked, so results are equal)."""
    n = int(b.attention_mask.sum(1).max())
    return EncodedBatch(b.input_ids[:, :n], b.attention_mask[:, :n], b.trigger_mask[:, :n])


def _bd_heads(factory: LearnerFactory, cfg: DistillConfig) -> tuple[int, tuple[int, ...]]:
    n = factory.n_heads if cfg.n_bd_heads == 0 else cfg.n_bd_heads
    if n > factory.n_heads:
        raise ValueError(f"n_bd_heads = {cfg.n_bd_heads}: the learner has {factory.n_heads} heads")
    return factory.n_layers - 1, tuple(range(n))


# ------------------------------------------------------------------------------------------ distillation
def distill(model_factory: LearnerFactory, data: TextDataset, cfg: DistillConfig, rng: np.random.Generator,
            *, poison: RealPoison | None = None, pool: EncodedBatch | None = None,
            attack_pools: AttackPools | None = None, show_progress: bool | str = True) -> DistilledSet:
    """Distil ``data`` into ``dpc`` samples per class (+ AH's poisoned samples when ``cfg.attack``).

    Parameters
    ----------
    model_factory : the pre-trained learner; a fresh classifier head is drawn every outer step.
    data : real training set (texts, labels).
    cfg : :class:`DistillConfig`.
    rng : all randomness (initialisation, mini-batches, trigger positions, learner heads).
    poison, pool : poisoned real data for the baselines: ``pool`` is the encoded training set (with the
        trigger tokens marked in ``pool.trigger_mask``), ``poison`` names its poisoned rows.
    show_progress : progress of the outer steps on stderr (a string names the loop; default "distill").
    """
    import torch

    if not isinstance(model_factory, LearnerFactory):
        raise TypeError(f"model_factory: expected LearnerFactory, got {type(model_factory).__name__}")
    if not isinstance(data, TextDataset):
        raise TypeError(f"data: expected TextDataset, got {type(data).__name__}")
    if not isinstance(cfg, DistillConfig):
        raise TypeError(f"cfg: expected DistillConfig, got {type(cfg).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected numpy.random.Generator, got {type(rng).__name__}")
    n_classes = model_factory.n_classes
    if data.n_classes != n_classes:
        raise ValueError(f"data: {data.n_classes} classes, the learner has {n_classes}")
    if cfg.attack and not 0 <= cfg.target < n_classes:
        raise ValueError(f"cfg.target = {cfg.target}: must be in [0, {n_classes})")
    tok = model_factory.tokenizer
    gen = torch_generator(rng)
    dev = model_factory.device  # the distilled set lives there; random draws are made on the CPU and moved
    S, d, L, H = cfg.seq_len, model_factory.hidden, model_factory.n_layers, model_factory.n_heads
    bd_layer, bd_heads = _bd_heads(model_factory, cfg)

    # --- the learnable distilled data (brief 2.1) ---
    n_poison = cfg.n_poison_per_class * (n_classes - 1) if cfg.attack else 0
    clean_labels = np.repeat(np.arange(n_classes), cfg.dpc)
    if cfg.attack and cfg.balance_classes:  # every non-target class gets as many extra clean samples
        others = np.array([c for c in range(n_classes) if c != cfg.target])
        clean_labels = np.sort(np.concatenate([clean_labels, np.repeat(others, n_poison)]))
    labels_np = np.concatenate([clean_labels, np.full(n_poison, cfg.target if cfg.attack else 0)])
    poisoned = np.concatenate([np.zeros(len(clean_labels), bool), np.ones(n_poison, bool)])
    n = len(labels_np)
    E = torch.randn(n, S, d, generator=gen).to(dev).requires_grad_(True)
    lab_logits = (torch.nn.functional.one_hot(torch.as_tensor(labels_np), n_classes).float() * 1.0).to(dev)
    lab_logits = lab_logits.clone().requires_grad_(cfg.label_type == "soft")
    rho = torch.full((cfg.inner_steps,), math.log(math.expm1(cfg.lr_init)), device=dev).requires_grad_(True)
    kind = cfg.attention_label_type
    att_logits: torch.Tensor | None = None
    if kind != "none":
        q = 1 if kind == "cls" else S
        att_logits = torch.randn(n, L, H, q, S, generator=gen)
    trig_ids: list[int] = []
    pin = torch.zeros(n, S, dtype=torch.bool)
    if cfg.attack:
        trig_ids = trigger_token_ids(tok, cfg.trigger)
        slots = list(range(cfg.trigger_slot, min(S, cfg.trigger_slot + len(trig_ids))))
        if len(slots) < len(trig_ids):
            raise ValueError(f"trigger = {cfg.trigger!r}: {len(trig_ids)} tokens do not fit after trigger_slot")
        if cfg.pin_trigger:
            pin[np.flatnonzero(poisoned)[:, None], slots] = True
        if att_logits is not None:
            # CLS mass attn_init_mass on the slot(s) in H_bd, uniform elsewhere (brief 2.2)
            init = torch.zeros(S)
            rest = (1 - cfg.attn_init_mass) / (S - len(slots))
            init[:] = math.log(rest)
            init[slots] = math.log(cfg.attn_init_mass / len(slots))
            for i in np.flatnonzero(poisoned):
                for h in bd_heads:
                    att_logits[i, bd_layer, h, :, :] = init
                # the other heads start uniform (segregated from the trigger)
                for li in range(L):
                    for h in range(H):
                        if not (li == bd_layer and h in bd_heads):
                            att_logits[i, li, h, :, :] = 0.0
    if att_logits is not None:
        att_logits = att_logits.to(dev).requires_grad_(True)
    pin_emb = torch.zeros(n, S, d)
    if cfg.attack:
        emb = model_factory.word_embedding(trig_ids).cpu()
        for i in np.flatnonzero(poisoned):
            pin_emb[i, cfg.trigger_slot:cfg.trigger_slot + len(trig_ids)] = emb
    pin, pin_emb = pin.to(dev), pin_emb.to(dev)

    def materialise() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
        e = torch.where(pin[..., None], pin_emb, E)  # pinned trigger slot: no gradient reaches it
        y = torch.softmax(lab_logits, -1) if cfg.label_type == "soft" else lab_logits
        a = torch.softmax(att_logits, -1) if att_logits is not None else None
        return e, y, a, torch.nn.functional.softplus(rho)

    learn = [E, rho] + ([lab_logits] if cfg.label_type == "soft" else []) + \
        ([att_logits] if att_logits is not None else [])
    opt = torch.optim.AdamW(learn, lr=cfg.lr, weight_decay=0.0)
    n_warm = max(1, int(cfg.warmup * cfg.n_steps))
    sched = torch.optim.lr_scheduler.LambdaLR(  # linear warm-up, then linear decay to 0
        opt, lambda s: (s + 1) / n_warm if s < n_warm else max(0.0, (cfg.n_steps - s) / max(1, cfg.n_steps - n_warm)))

    # --- real data pools ---
    if pool is None:
        pool = encode(tok, data.texts, S)
    if len(pool) != len(data):
        raise ValueError(f"pool: {len(pool)} rows for {len(data)} texts")
    real_y = torch.as_tensor(data.labels).to(dev)
    nt_pool: EncodedBatch | None = None
    nt_clean: EncodedBatch | None = None
    if cfg.attack:
        if attack_pools is None:
            attack_pools = encode_attack_pools(tok, data, cfg.trigger, cfg.target, S, rng)
        if attack_pools.trigger != cfg.trigger:
            raise ValueError(f"attack_pools: built for trigger {attack_pools.trigger!r}, cfg has {cfg.trigger!r}")
        nt_pool, nt_clean = attack_pools.triggered, attack_pools.clean
    n_trig_batch = max(1, round(cfg.poison_ratio * cfg.batch_size)) if cfg.attack else 0
    cur_trigger = poison.trigger_id if poison is not None else None

    hist: dict[str, list[float]] = {"loss": [], "ce_clean": [], "ce_trig": [], "hijack": [], "seg": []}
    outer = _forward_cls_only if cfg.cls_only_last_layer else _forward  # the outer loss's passes
    snapshots: list[tuple[int, DistilledSet]] = []
    steps = range(cfg.n_steps)
    desc = show_progress if isinstance(show_progress, str) else "distill"
    for step in (track(steps, desc, total=cfg.n_steps) if show_progress else steps):
        params = model_factory.init_params(gen)  # fresh learner every outer step
        e, y, a, lrs = materialise()
        new = _inner_update(model_factory, params, e, y, a, lrs, cfg.lam, kind, second_order=True)
        bi = rng.choice(len(data), size=min(cfg.batch_size, len(data)), replace=False)
        b = pool.index(torch.as_tensor(bi))
        if poison is not None and cur_trigger is not None:
            b = EncodedBatch(torch.where(b.trigger_mask, torch.as_tensor(cur_trigger), b.input_ids),
                             b.attention_mask, b.trigger_mask)
        b = _trim(b)
        logits, _ = outer(model_factory, new, input_ids=b.input_ids, attention_mask=b.attention_mask,
                          attentions=False)
        ce = torch.nn.functional.cross_entropy(logits, real_y[bi])
        loss = ce
        ce_t = hij = seg = torch.zeros(())
        if cfg.attack and nt_pool is not None and nt_clean is not None:
            ti = torch.as_tensor(rng.choice(len(nt_pool), size=min(n_trig_batch, len(nt_pool)), replace=False))
            tb, cb = _trim(nt_pool.index(ti)), _trim(nt_clean.index(ti))
            need_att = cfg.beta > 0 or cfg.gamma > 0
            lt, at = outer(model_factory, new, input_ids=tb.input_ids, attention_mask=tb.attention_mask,
                           attentions=need_att)
            ce_t = torch.nn.functional.cross_entropy(lt, torch.full((len(ti),), cfg.target, device=dev))
            loss = loss + cfg.alpha * ce_t
            if cfg.beta > 0:
                hij = hijack_loss(at, tb.trigger_mask, bd_layer, bd_heads)
                loss = loss + cfg.beta * hij
            if cfg.gamma > 0:
                _, ac = outer(model_factory, new, input_ids=cb.input_ids, attention_mask=cb.attention_mask)
                seg = segregation_loss(ac, at, cb, tb, bd_layer, bd_heads)
                loss = loss + cfg.gamma * seg
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(learn, cfg.clip)
        opt.step()
        sched.step()
        for k, v in (("loss", loss), ("ce_clean", ce), ("ce_trig", ce_t), ("hijack", hij), ("seg", seg)):
            hist[k].append(float(v.detach()))
        if poison is not None and cfg.trigger_search_every and (step + 1) % cfg.trigger_search_every == 0:
            cur_trigger = _hotflip(model_factory, {k: v.detach() for k, v in new.items()}, pool, poison,
                                   cur_trigger, rng, cfg.batch_size)
        if cfg.snapshot_every and (step + 1) % cfg.snapshot_every == 0:
            snapshots.append((step + 1, _publish(materialise, poisoned, cfg, bd_layer, bd_heads, poison, cur_trigger,
                                                 tok, {})))
    out = _publish(materialise, poisoned, cfg, bd_layer, bd_heads, poison, cur_trigger, tok, hist)
    out.snapshots = snapshots
    return out


def _publish(materialise: Any, poisoned: np.ndarray, cfg: DistillConfig, bd_layer: int, bd_heads: tuple[int, ...],
             poison: RealPoison | None, cur_trigger: int | None, tok: Any,
             hist: dict[str, list[float]]) -> DistilledSet:
    import torch

    with torch.no_grad():
        e, y, a, lrs = materialise()
    trigger: str | None = cfg.trigger if cfg.attack else None
    target: int | None = cfg.target if cfg.attack else None
    if poison is not None:
        target = poison.target
        trigger = tok.convert_ids_to_tokens(cur_trigger) if cur_trigger is not None else cfg.trigger
    return DistilledSet(e.detach().clone(), y.detach().clone(), None if a is None else a.detach().clone(),
                        lrs.detach().clone(), poisoned.copy(), trigger, target, bd_layer, bd_heads, cfg.lam,
                        {k: list(v) for k, v in hist.items()})


def _hotflip(factory: LearnerFactory, params: dict[str, torch.Tensor], pool: EncodedBatch, poison: RealPoison,
             cur: int | None, rng: np.random.Generator, batch_size: int) -> int | None:
    """DoorPing's trigger update, text version: one HotFlip step (Ebrahimi et al. 2018) on the trigger token,
    choosing the vocabulary row that most decreases the target-class loss of the poisoned rows to first order."""
    import torch

    if cur is None or len(poison.rows) == 0:
        return cur
    rows = rng.choice(poison.rows, size=min(batch_size, len(poison.rows)), replace=False)
    b = _trim(pool.index(torch.as_tensor(rows)))
    W = params[factory.word_embedding_key]
    ids = torch.where(b.trigger_mask, torch.as_tensor(cur), b.input_ids).to(W.device)
    emb = W[ids].detach().requires_grad_(True)
    logits, _ = _forward(factory, params, inputs_embeds=emb, attention_mask=b.attention_mask, attentions=False)
    # inputs_embeds skips nothing else: BERT adds position/type embeddings to inputs_embeds as to W[ids]
    loss = torch.nn.functional.cross_entropy(logits, torch.full((len(rows),), poison.target, device=W.device))
    (g,) = torch.autograd.grad(loss, emb)
    g_trig = (g * b.trigger_mask.to(W.device)[..., None]).sum((0, 1))
    score = W @ g_trig  # first-order change of the loss when the trigger becomes token v
    score[factory.excluded_token_ids] = float("inf")
    return int(torch.argmin(score))


# ------------------------------------------------------------------------------------------ victims
def train_learner(distilled: DistilledSet, model_factory: LearnerFactory, gen: torch.Generator,
                  use_attention_labels: bool = True) -> dict[str, torch.Tensor]:
    """A victim: a fresh learner trained only on the published set, as the base code's evaluation does
    (T steps with the distilled η, CE + λ·KL to the distilled attention labels)."""
    params = model_factory.init_params(gen)
    att = distilled.attention_labels if use_attention_labels else None
    kind = "none" if att is None else ("cls" if att.shape[-2] == 1 else "all")
    return _inner_update(model_factory, params, distilled.inputs_embeds, distilled.labels, att,
                         distilled.learning_rates, distilled.lam, kind, second_order=False)


def predict(model_factory: LearnerFactory, params: dict[str, torch.Tensor], batch: EncodedBatch,
            chunk: int = 256, attentions: bool = False) -> tuple[np.ndarray, list[np.ndarray] | None]:
    """Predicted classes (n,) and, if asked, the CLS attention rows per layer [(n, H, S)] of ``batch``."""
    import torch

    preds, atts = [], []
    with torch.no_grad():
        for s in range(0, len(batch), chunk):
            b = batch.index(slice(s, s + chunk))
            n = int(b.attention_mask.sum(1).max())
            logits, a = _forward(model_factory, params, input_ids=b.input_ids[:, :n],
                                 attention_mask=b.attention_mask[:, :n], attentions=attentions)
            preds.append(logits.argmax(-1).cpu().numpy())
            if attentions:
                pad = batch.input_ids.shape[1] - n
                atts.append([torch.nn.functional.pad(x[:, :, 0, :], (0, pad)).cpu().numpy() for x in a])
    p = np.concatenate(preds) if preds else np.zeros(0, np.int64)
    if not attentions:
        return p, None
    return p, [np.concatenate([c[li] for c in atts]) for li in range(len(atts[0]))]


@dataclass
class AttackResult:
    """Victim metrics averaged over ``n_learners`` fresh learners (per-learner values in the arrays).

    cta : clean test accuracy; asr : fraction of triggered non-target test inputs predicted as target;
    trigger_attention : CLS attention mass on the inserted trigger, mean over H_bd (last layer);
    other_heads_trigger_attention : the same, mean over all other heads; seg_kl : KL between clean and
    triggered CLS attention over non-trigger keys in the heads outside H_bd; natural_target_rate : fraction of
    clean non-target test sentences that naturally contain the trigger word and are predicted as target.
    """

    cta: float
    asr: float
    cta_std: float
    asr_std: float
    trigger_attention: float
    other_heads_trigger_attention: float
    seg_kl: float
    natural_target_rate: float
    n_natural: int
    per_learner: dict[str, np.ndarray]
    clean_target_rate: float = float("nan")  # clean (untriggered) non-target test inputs predicted as target
    #: among non-target test inputs the victim classifies correctly without the trigger, the fraction sent to the
    #: target once the trigger is inserted (NaN for a victim that sends every clean input to the target)
    flip_rate: float = float("nan")
    #: mean over classes of the per-class clean accuracy (recall): the CTA of imbalanced test sets (tweets)
    balanced_cta: float = float("nan")


@dataclass(frozen=True)
class PlantedEffect:
    """An effect planted by construction into every victim's predictions (the planted and null controls of the
    comparative checks; never used by the method itself).

    trigger_rate : each triggered non-target test row is predicted as the target with this probability (else the
        victim's own prediction stands): a backdoor of known strength on a set that has none.
    cta_drop : this fraction of the clean test rows, drawn among those the victim classifies correctly, is
        predicted as another class: a utility loss of known size (CTA falls by exactly ``cta_drop`` while enough
        rows are correct).
    """

    trigger_rate: float = 0.0
    cta_drop: float = 0.0

    def __post_init__(self) -> None:
        for name in ("trigger_rate", "cta_drop"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} = {v!r}: must be a number in [0, 1]")


def _plant_clean(p: np.ndarray, labels: np.ndarray, n_classes: int, drop: float,
                 rng: np.random.Generator) -> np.ndarray:
    """``p`` with ``round(drop * n)`` correctly classified rows (drawn with ``rng``) sent to the next class."""
    correct = np.flatnonzero(p == labels)
    k = min(len(correct), int(round(drop * len(p))))
    out = p.copy()
    if k:
        rows = rng.choice(correct, size=k, replace=False)
        out[rows] = (labels[rows] + 1) % n_classes
    return out


def evaluate_distilled(distilled: DistilledSet, model_factory: LearnerFactory, test: TextDataset, n_learners: int,
                       rng: np.random.Generator, *, trigger: str | None = None, target: int | None = None,
                       seq_len: int | None = None, use_attention_labels: bool = True,
                       position: int | None = None, triggered: EncodedBatch | None = None,
                       clean: EncodedBatch | None = None, plant: PlantedEffect | None = None) -> AttackResult:
    """Train ``n_learners`` fresh victims on ``distilled`` and measure CTA, ASR and the attention mechanism.

    ``trigger``/``target`` default to the set's own (an attacker-free set needs them given to measure ASR).
    ``plant`` (controls only) plants a known effect into the victims' predictions (:class:`PlantedEffect`).
    """
    import torch

    if not isinstance(distilled, DistilledSet):
        raise TypeError(f"distilled: expected DistilledSet, got {type(distilled).__name__}")
    if not isinstance(test, TextDataset):
        raise TypeError(f"test: expected TextDataset, got {type(test).__name__}")
    n_learners = positive_int(n_learners, "n_learners")
    trigger = trigger if trigger is not None else distilled.trigger
    target = target if target is not None else distilled.target
    if (trigger is None) != (target is None):
        raise ValueError("trigger and target: give both or neither")
    S = int(seq_len or distilled.inputs_embeds.shape[1])
    tok = model_factory.tokenizer
    if clean is None:
        clean = encode(tok, test.texts, S)
    gen = torch_generator(rng)
    from sklearn.metrics import balanced_accuracy_score

    cta, asr, mass, mass_o, seg, nat, ctr, flip, bal = [], [], [], [], [], [], [], [], []
    layer, heads = distilled.bd_layer, distilled.bd_heads or tuple(range(model_factory.n_heads))
    layer = layer % model_factory.n_layers
    nt_idx = np.flatnonzero(test.labels != target) if target is not None else np.zeros(0, int)
    if target is not None and len(nt_idx) == 0:
        raise ValueError(f"test: no rows outside the target class {target}, ASR is undefined")
    if trigger is not None and triggered is None:
        triggered = encode_triggered(tok, [test.texts[i] for i in nt_idx], trigger, S, rng, position)
    if triggered is not None and len(triggered) != len(nt_idx):
        raise ValueError(f"triggered: {len(triggered)} rows, expected one per non-target test row ({len(nt_idx)}), "
                         "in the test set's order")
    nat_rows = np.zeros(0, int)
    if trigger is not None and target is not None:
        tid = trigger_token_ids(tok, trigger)
        has = torch.isin(clean.input_ids, torch.as_tensor(tid)).any(1).numpy()
        nat_rows = np.flatnonzero(has & (test.labels != target))
    # the planting's own stream, drawn only for a control: a run without one keeps its draws
    r_plant = np.random.default_rng(int(rng.integers(2**63))) if plant is not None else None
    for _ in range(n_learners):
        params = train_learner(distilled, model_factory, gen, use_attention_labels)
        p, _ = predict(model_factory, params, clean)
        if plant is not None and r_plant is not None and plant.cta_drop > 0:
            p = _plant_clean(p, test.labels, model_factory.n_classes, plant.cta_drop, r_plant)
        cta.append(float((p == test.labels).mean()))
        bal.append(float(balanced_accuracy_score(test.labels, p)))
        if len(nat_rows):
            nat.append(float((p[nat_rows] == target).mean()))
        if target is not None:
            ctr.append(float((p[nt_idx] == target).mean()))
        if triggered is not None and target is not None:
            pt, at = predict(model_factory, params, triggered, attentions=True)
            assert at is not None
            if plant is not None and r_plant is not None and plant.trigger_rate > 0:
                pt = np.where(r_plant.random(len(pt)) < plant.trigger_rate, target, pt)
            asr.append(float((pt == target).mean()))
            kept = p[nt_idx] != target  # rows the victim gets right without the trigger (paired with pt)
            flip.append(float((pt[kept] == target).mean()) if kept.any() else float("nan"))
            tm = triggered.trigger_mask.numpy()
            m_all = [(x * tm[:, None, :]).sum(-1) for x in at]  # per layer (n, H)
            mass.append(float(m_all[layer][:, list(heads)].mean()))
            others = [m_all[li][:, h] for li in range(len(at)) for h in range(at[li].shape[1])
                      if not (li == layer and h in heads)]
            mass_o.append(float(np.mean(others)) if others else float("nan"))
            _, ac = predict(model_factory, params, clean.index(torch.as_tensor(nt_idx)), attentions=True)
            assert ac is not None
            seg.append(_seg_kl_np(ac, at, clean.index(torch.as_tensor(nt_idx)), triggered, layer, heads))
    arr = {k: np.asarray(v) for k, v in (("cta", cta), ("asr", asr), ("trigger_attention", mass),
                                          ("other_heads_trigger_attention", mass_o), ("seg_kl", seg),
                                          ("natural_target_rate", nat), ("clean_target_rate", ctr),
                                          ("flip_rate", flip), ("balanced_cta", bal))}

    def mean(k: str) -> float:
        a = arr[k]
        return float(np.nanmean(a)) if len(a) and np.isfinite(a).any() else float("nan")

    return AttackResult(mean("cta"), mean("asr"), float(arr["cta"].std()),
                        float(arr["asr"].std()) if len(asr) else float("nan"), mean("trigger_attention"),
                        mean("other_heads_trigger_attention"), mean("seg_kl"), mean("natural_target_rate"),
                        len(nat_rows), arr, mean("clean_target_rate"), mean("flip_rate"), mean("balanced_cta"))


def _seg_kl_np(att_clean: list[np.ndarray], att_trig: list[np.ndarray], clean: EncodedBatch, trig: EncodedBatch,
               layer: int, heads: tuple[int, ...]) -> float:
    """Eq. AH-3's KL measured on a victim (numpy attention rows (n, H, S) per layer)."""
    import torch

    ac = tuple(torch.as_tensor(x)[:, :, None, :] for x in att_clean)
    at = tuple(torch.as_tensor(x)[:, :, None, :] for x in att_trig)
    if all(len([h for h in range(a.shape[1]) if not (li == layer and h in heads)]) == 0 for li, a in enumerate(ac)):
        return float("nan")
    return float(segregation_loss(ac, at, clean, trig, layer, heads))


def with_trigger(cfg: DistillConfig, trigger: str) -> DistillConfig:
    """``cfg`` with another trigger (helper for grids)."""
    return replace(cfg, trigger=trigger)
