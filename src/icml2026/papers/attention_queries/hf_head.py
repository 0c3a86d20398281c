"""One attention head of a Hugging Face ``transformers`` layer as a black-box oracle (issue 68).

The oracle evaluates the real head, with the layer's own weights, biases and scaling, in the model's float
type (float32 unless loaded otherwise), at the last position of the query sequence:

    f(X) = u^T ( W_o^h sum_j softmax_j(s) (W_v^h x_j + b_v^h) + b_o ),
    s_j = scaling (W_q^h x_n + b_q^h)^T (W_k^h x_j + b_k^h),

where W_q^h, b_q^h (and k, v) are the rows of the layer's query, key and value projections that belong to
head h, W_o^h the columns of the output projection that read head h, b_o its bias, and u a readout vector in
the model's hidden space (the paper's scalar readout of v = W_V W_O u). The input tokens X are vectors in the
layer's hidden space (the layer norm before or after the attention is not part of the head). This head is the
affine head of ``affine.py``; :meth:`PretrainedHead.reference` gives its identifiable parameters (A, w, v,
c_0) computed from the weights, in float64, to score a recovery.

Supported layers: BERT-style self-attention (``query``, ``key``, ``value`` linear layers and
``attention.output.dense``: BERT, RoBERTa, MiniLM, ...) in an encoder loaded with
:func:`icml2026.core.loaders.load_encoder`, and GPT-2-style attention (``c_attn`` and ``c_proj``) in a decoder
loaded with :func:`icml2026.core.loaders.load_causal_lm`. Layers with rotary position embeddings (Llama-class)
are refused: their logit depends on the distance between the two tokens, which the paper's single bilinear
form does not describe. The last token attends to every token of the query (a causal mask changes nothing at
the last position).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["PretrainedHead", "AffineHeadParameters", "heads_of_layer", "layer_attention_readout", "n_layers", "CHUNK"]

CHUNK = 16384  # sequences per forward pass (a (16384, 2, 768) float32 batch is 100 MB)


@dataclass
class AffineHeadParameters:
    """The identifiable parameters of an affine head (``affine.py``), float64."""

    A: np.ndarray  # (d, d) scaling W_q^T W_k
    w: np.ndarray  # (d,) scaling W_k^T b_q
    v: np.ndarray  # (d,) W_v^T (W_o^T u)
    value_offset: float  # c_0 = u^T (W_o b_v + b_o)
    head_dim: int  # r, the rank bound of A


def _layers(model: Any) -> Any:
    """The model's list of transformer blocks (BERT ``encoder.layer``, GPT-2 ``transformer.h``)."""
    base = getattr(model, "base_model", model)
    for path in (("encoder", "layer"), ("h",), ("transformer", "h")):
        obj = base
        for name in path:
            obj = getattr(obj, name, None)
            if obj is None:
                break
        if obj is not None:
            return obj
    raise ValueError(
        f"model: {type(model).__name__} has no BERT-style encoder.layer or GPT-2-style h block list; supported "
        "are BERT-style encoders (query/key/value) and GPT-2-style decoders (c_attn)"
    )


def n_layers(model: Any) -> int:
    """Number of transformer blocks of a supported model."""
    return len(_layers(model))


def _projections(model: Any, layer: int) -> dict[str, Any]:
    """Weights of every head of block ``layer`` as torch tensors: q, k, v as (H, r, d) and (H, r), o as (d, H, r)."""
    import torch

    blocks = _layers(model)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(blocks):
        raise ValueError(f"layer = {layer!r}: the model has layers 0..{len(blocks) - 1}")
    block = blocks[layer]
    cfg = getattr(model, "config", None)
    rope = getattr(cfg, "rope_theta", None) is not None or "rope" in str(getattr(cfg, "rope_scaling", ""))
    if cfg is not None and rope:
        raise ValueError("model: rotary position embeddings are not supported (the logit depends on token distance)")
    attn = getattr(block, "attention", None)
    if attn is not None and hasattr(attn, "self") and hasattr(attn.self, "query"):
        sa = attn.self
        if getattr(sa, "position_embedding_type", "absolute") not in ("absolute", None):
            raise ValueError(f"model: relative position embeddings ({sa.position_embedding_type}) are not supported")
        H, r = int(sa.num_attention_heads), int(sa.attention_head_size)
        d = int(sa.query.in_features)
        q_w, q_b = sa.query.weight, sa.query.bias  # nn.Linear: y = x W^T + b, W (H r, d)
        k_w, k_b = sa.key.weight, sa.key.bias
        v_w, v_b = sa.value.weight, sa.value.bias
        dense = attn.output.dense
        o_w, o_b = dense.weight, dense.bias  # (d, H r)
        scaling = float(getattr(sa, "scaling", r**-0.5))
    elif hasattr(block, "attn") and hasattr(block.attn, "c_attn"):
        at = block.attn
        H, r = int(at.num_heads), int(at.head_dim)
        d = int(at.embed_dim)
        W = at.c_attn.weight  # Conv1D: y = x W + b, W (d, 3 d)
        b = at.c_attn.bias
        q_w, k_w, v_w = (W[:, i * d : (i + 1) * d].T for i in range(3))
        q_b, k_b, v_b = (b[i * d : (i + 1) * d] for i in range(3))
        o_w, o_b = at.c_proj.weight.T, at.c_proj.bias
        scaling = float(getattr(at, "scaling", r**-0.5))
    else:
        raise ValueError(
            f"model: block {layer} ({type(block).__name__}) has neither BERT-style (attention.self.query) nor "
            "GPT-2-style (attn.c_attn) attention"
        )

    def split(wt: torch.Tensor, bias: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        w3 = wt.detach().reshape(H, r, d)
        b2 = bias.detach().reshape(H, r) if bias is not None else torch.zeros(H, r, dtype=w3.dtype)
        return w3, b2

    out: dict[str, Any] = {"H": H, "r": r, "d": d, "scaling": scaling}
    out["q"], out["k"], out["v"] = split(q_w, q_b), split(k_w, k_b), split(v_w, v_b)
    out["o"] = o_w.detach().reshape(d, H, r)
    out["o_bias"] = o_b.detach() if o_b is not None else torch.zeros(d, dtype=out["o"].dtype)
    return out


def heads_of_layer(model: Any, layer: int, readout: np.ndarray) -> list[PretrainedHead]:
    """Every head of block ``layer`` as an oracle, each read out along the same vector ``readout`` (d,)."""
    proj = _projections(model, layer)
    return [PretrainedHead(proj, h, readout) for h in range(proj["H"])]


class PretrainedHead:
    """Oracle of head ``head`` of a block's projections (see the module docstring); answers in the model's
    float type, returned as Python floats (float64 holding that value)."""

    def __init__(self, proj: dict[str, Any], head: int, readout: np.ndarray) -> None:
        import torch

        if not 0 <= head < proj["H"]:
            raise ValueError(f"head = {head}: the layer has heads 0..{proj['H'] - 1}")
        self.d, self.head_dim, self.head = int(proj["d"]), int(proj["r"]), int(head)
        u = np.asarray(readout, dtype=np.float64)
        if u.shape != (self.d,) or not np.all(np.isfinite(u)):
            raise ValueError(f"readout must be a finite vector of shape ({self.d},), got {u.shape}")
        self.scaling = float(proj["scaling"])
        (self.W_q, self.b_q), (self.W_k, self.b_k), (self.W_v, self.b_v) = (
            (proj[n][0][head], proj[n][1][head]) for n in ("q", "k", "v")
        )
        self.dtype = self.W_q.dtype
        self.W_o = proj["o"][:, head, :]  # (d, r)
        self.b_o = proj["o_bias"]
        self.u = torch.as_tensor(u, dtype=self.dtype)
        self.u_np = u

    def batch(self, X: np.ndarray) -> np.ndarray:
        """f on a batch of equal-length sequences X (batch, n, d); returns (batch,) float64."""
        import torch

        Xa = np.asarray(X, dtype=np.float64)
        if Xa.ndim != 3 or Xa.shape[2] != self.d or Xa.shape[1] < 1:
            raise ValueError(f"a query batch must have shape (batch, n >= 1, d={self.d}), got {Xa.shape}")
        out = np.empty(Xa.shape[0])
        with torch.no_grad():
            for lo in range(0, Xa.shape[0], CHUNK):
                x = torch.as_tensor(Xa[lo : lo + CHUNK], dtype=self.dtype)
                q = x[:, -1, :] @ self.W_q.T + self.b_q  # (b, r): the last token is the attention query
                k = x @ self.W_k.T + self.b_k  # (b, n, r)
                val = x @ self.W_v.T + self.b_v
                s = torch.einsum("br,bnr->bn", q, k) * self.scaling
                alpha = torch.softmax(s, dim=-1)
                ctx = torch.einsum("bn,bnr->br", alpha, val)
                y = (ctx @ self.W_o.T + self.b_o) @ self.u
                out[lo : lo + CHUNK] = y.double().numpy()
        return out

    def __call__(self, X: np.ndarray) -> float:
        return float(self.batch(np.asarray(X, dtype=np.float64)[None])[0])

    def reference(self) -> AffineHeadParameters:
        """(A, w, v, c_0) from the weights, in float64 (the affine reduction of ``affine.py``)."""
        f = {n: t.double().numpy() for n, t in (("Wq", self.W_q), ("bq", self.b_q), ("Wk", self.W_k),
                                                  ("Wv", self.W_v), ("bv", self.b_v), ("Wo", self.W_o),
                                                  ("bo", self.b_o))}
        A = self.scaling * f["Wq"].T @ f["Wk"]
        w = self.scaling * f["Wk"].T @ f["bq"]
        ou = f["Wo"].T @ self.u_np  # (r,)
        return AffineHeadParameters(
            A=A, w=w, v=f["Wv"].T @ ou, value_offset=float(ou @ f["bv"] + self.u_np @ f["bo"]), head_dim=self.head_dim
        )


def layer_attention_readout(model: Any, layer: int, X: np.ndarray, readout: np.ndarray) -> np.ndarray:
    """u^T (the block's attention output at the last position) from the layer's own ``forward`` (the real
    module, not the weights this file extracts): BERT-style ``attention.output.dense(attention.self(x))``,
    GPT-2-style ``attn(x)`` (c_proj included). Used to check the head oracles: summed over heads they give
    this, with the output bias counted once (``sum_h f_h - (H - 1) u^T b_o``).

    X : (batch, n, d) sequences; returns (batch,) float64.
    """
    import torch

    block = _layers(model)[layer]
    x = torch.as_tensor(np.asarray(X, dtype=np.float64), dtype=next(model.parameters()).dtype)
    with torch.no_grad():
        attn = getattr(block, "attention", None)
        if attn is not None and hasattr(attn, "self"):
            out = attn.output.dense(attn.self(x)[0])
        else:
            out = block.attn(x)[0]
        y = out[:, -1, :].double().numpy() @ np.asarray(readout, dtype=np.float64)
    return np.asarray(y, dtype=np.float64)
