"""A real pretrained attention head (a Hugging Face layer, biases included) recovered from queries (issue 68)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.config import config, param
from icml2026.core.errors import BadInput
from icml2026.core.loaders import check_model_path

from .._threads import single_blas_thread
from ..data import relative_error
from ..exact import recover_exact
from ..hf_head import PretrainedHead, heads_of_layer, layer_attention_readout, n_layers
from ..low_rank import recover_low_rank
from ..oracle import CountingOracle

#: Random sequences (lengths 1..4) on which the head oracles are checked against the layer's own forward.
_N_CHECK = 64
#: float32 rounding of a sum over the heads of a layer; 1e-4 of the answers' scale is ~800 float32 epsilons
#: (our choice), far below a wrong bias or a wrong head slice (O(1) of the scale).
_FORWARD_TOL = 1e-4
# Targets, fixed from the float32 precision model before the quick runs (issue 68), except the adaptive one:
# exact recovery builds every entry of A from its own pair (float32 answers: ~1e-6 relative, bar ~1e-5);
# the adaptive method builds A from the row space of r random rows, whose smallest singular value of a
# real head is far below sigma_1, so its error is larger: 9.5e-4 measured on MiniLM-L6 layer 0 head 0
# before the target was set (card: "changed after seeing").
_EXACT_TARGET = 1e-4
_ADAPTIVE_TARGET = 1e-2


@config
class PretrainedHeadConfig:
    model: str = param(
        "",
        help="a local Hugging Face folder: a BERT-style encoder (load_encoder) or a GPT-2-style causal LM "
        "(load_causal_lm); '' builds a small random BERT layer here (d_model, n_heads)",
    )
    layer: int = param(0, 0, 255, help="the block whose heads are recovered (every head of it)")
    method: str = param(
        "both",
        choices=("both", "exact", "adaptive"),
        help="exact (Method 1, d^2 + 2d + 1 queries) and/or adaptive (2b, rank = head dim, (2r + 2) d + 1)",
    )
    d_model: int = param(32, 4, 256, help="hidden size of the random BERT layer (model='')")
    n_heads: int = param(4, 1, 16, help="heads of the random BERT layer (model=''); must divide d_model")
    init_std: float = param(0.3, 1e-3, 10.0, help="std of the random BERT layer's weights and biases (model='')")
    max_heads: int = param(0, 0, 256, help="recover only the first max_heads heads (0: every head)")

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads = {self.n_heads}: must divide d_model = {self.d_model}")
        if self.model:
            check_model_path(self.model, key="model", kinds=("hf",))


def _random_bert(cfg: PretrainedHeadConfig, rng: np.random.Generator) -> Any:
    """One BERT layer (transformers' BertModel) with weights and biases ~ N(0, init_std^2) from ``rng``."""
    import torch
    from transformers import BertConfig, BertModel

    bert_cfg = BertConfig(
        hidden_size=cfg.d_model,
        num_attention_heads=cfg.n_heads,
        num_hidden_layers=max(1, cfg.layer + 1),
        intermediate_size=2 * cfg.d_model,
        vocab_size=32,
        max_position_embeddings=8,
    )
    model = BertModel(bert_cfg).eval()
    gen = torch.Generator().manual_seed(int(rng.integers(2**63)))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(cfg.init_std * torch.randn(p.shape, generator=gen))
    return model


def _load(cfg: PretrainedHeadConfig) -> Any:
    """The user's model: a causal LM when its config names one (GPT-2), else an encoder."""
    from icml2026.core.loaders import load_causal_lm, load_encoder

    conf = json.loads((Path(cfg.model) / "config.json").read_text())
    causal = any(a.endswith("LMHeadModel") or a.endswith("ForCausalLM") for a in conf.get("architectures") or [])
    loader = load_causal_lm if causal else load_encoder
    return loader(cfg.model, load_tokenizer=False).model


def pretrained_head(cfg: PretrainedHeadConfig, rng: np.random.Generator) -> Outcome:
    with single_blas_thread():
        return _pretrained_head(cfg, rng)


def _pretrained_head(cfg: PretrainedHeadConfig, rng: np.random.Generator) -> Outcome:
    t0 = time.perf_counter()
    model_rng, u_rng, check_rng, row_rng = spawn(rng, 4)
    model = _load(cfg) if cfg.model else _random_bert(cfg, model_rng)
    try:  # an unsupported architecture or a layer it lacks: one line naming the key, exit status 2
        if cfg.layer >= n_layers(model):
            raise ValueError(f"layer = {cfg.layer}: the model has layers 0..{n_layers(model) - 1}")
        d = int(model.config.hidden_size if hasattr(model.config, "hidden_size") else model.config.n_embd)
        u = u_rng.standard_normal(d)
        u /= np.linalg.norm(u)  # the scalar readout of the layer's output (the paper's u)
        heads: list[PretrainedHead] = heads_of_layer(model, cfg.layer, u)
    except ValueError as exc:
        raise BadInput(str(exc)) from exc
    if cfg.max_heads:
        heads = heads[: cfg.max_heads]
    H_all = len(heads_of_layer(model, cfg.layer, u))
    # Precondition: the oracles are the real layer. Summed over every head, they give the layer's own forward.
    lengths = check_rng.integers(1, 5, size=_N_CHECK)
    worst = 0.0
    all_heads = heads_of_layer(model, cfg.layer, u)
    b_o = float(all_heads[0].b_o.double().numpy() @ u)
    for n in range(1, 5):
        X = check_rng.standard_normal((int(np.sum(lengths == n)), n, d))
        if X.shape[0] == 0:
            continue
        ours = sum(h.batch(X) for h in all_heads) - (H_all - 1) * b_o
        ref = layer_attention_readout(model, cfg.layer, X, u)
        worst = max(worst, float(np.max(np.abs(ours - ref)) / max(float(np.max(np.abs(ref))), 1e-30)))
    methods = ("exact", "adaptive") if cfg.method == "both" else (cfg.method,)
    rows: list[dict[str, Any]] = []
    for h, hrng in zip(heads, spawn(row_rng, len(heads)), strict=True):
        ref_p = h.reference()
        r = ref_p.head_dim
        for method in methods:
            t1 = time.perf_counter()
            if method == "exact":
                est = recover_exact(CountingOracle(h), d, affine=True)
                budget = d * d + 2 * d + 1
            else:
                est = recover_low_rank(CountingOracle(h), d, rank=r, rng=hrng, affine=True)
                budget = d + 1 + d + (r * d if est.fallback else 2 * r * d)  # c_0, v; w; rows; step (ii)
                if est.fallback:
                    budget = d * d + 2 * d + 1
            assert est.w is not None and est.value_offset is not None
            scale_c0 = abs(ref_p.value_offset) + float(np.linalg.norm(ref_p.v))
            rows.append(
                {
                    "head": h.head,
                    "method": method,
                    "queries": est.n_queries,
                    "queries_over_d2_plus_d": est.n_queries / (d * d + d),
                    "queries_over_2r_plus_2_d": est.n_queries / ((2 * r + 2) * d),
                    "retries": est.n_rescale_queries,
                    "probes": est.n_probe_queries,
                    "uncounted": est.n_queries - est.n_rescale_queries - est.n_probe_queries - budget,
                    "rel_err_A": relative_error(est.A, ref_p.A),
                    "rel_err_w": relative_error(est.w, ref_p.w),
                    "rel_err_v": relative_error(est.v, ref_p.v),
                    "err_c0": abs(est.value_offset - ref_p.value_offset) / scale_c0,
                    "precision": est.precision_source,
                    "fallback": est.fallback,
                    "seconds": time.perf_counter() - t1,
                }
            )

    def worst_of(key: str, method: str) -> float:
        # a head whose adaptive budget is no smaller than the exact one falls back to it (r >= (d - 1) / 2):
        # its count is the exact method's, not the adaptive one's
        vals = [
            row[key]
            for row in rows
            if row["method"] == method and not (key.startswith("queries") and row["fallback"])
        ]
        return float(max(vals)) if vals else math.nan

    metrics: dict[str, float] = {
        "d": float(d),
        "head_dim": float(heads[0].head_dim),
        "n_heads_recovered": float(len(heads)),
        "oracle_vs_layer_forward": worst,
        "max_uncounted_queries": float(max(abs(row["uncounted"]) for row in rows)),
        "max_rel_err_v": max(row["rel_err_v"] for row in rows),
        "max_err_c0": max(row["err_c0"] for row in rows),
        "n_adaptive_fallbacks": float(sum(bool(row["fallback"]) for row in rows)),
    }
    checks = [
        Check("oracle_vs_layer_forward", worst, f"<= {_FORWARD_TOL:g}", paper="the oracle is the real head",
              role="precondition"),
        # every query is accounted for: the method's count plus the retries and probes it reports
        Check("max_uncounted_queries", metrics["max_uncounted_queries"], "== 0", paper="every call counts"),
        Check("max_rel_err_v", metrics["max_rel_err_v"], f"< {_EXACT_TARGET:g}", paper="exact"),
        Check("max_err_c0", metrics["max_err_c0"], f"< {_EXACT_TARGET:g}", paper="biases absorbed"),
    ]
    for method in methods:
        keys = ("rel_err_A", "rel_err_w", "queries_over_d2_plus_d", "queries_over_2r_plus_2_d", "retries", "probes")
        for key in keys:
            metrics[f"{method}_max_{key}"] = worst_of(key, method)
        target = _EXACT_TARGET if method == "exact" else _ADAPTIVE_TARGET
        checks.append(Check(f"{method}_max_rel_err_A", worst_of("rel_err_A", method), f"< {target:g}",
                            paper="exact (noiseless)"))
        checks.append(Check(f"{method}_max_rel_err_w", worst_of("rel_err_w", method), f"< {target:g}",
                            paper="biases absorbed"))
    if "exact" in methods:
        # d^2 + 2d + 1 (the affine head's unknowns) plus at most one SNR re-ask per pair: <= 2 (d^2 + d) + 3d + 2
        checks.append(Check("exact_max_queries_over_d2_plus_d", worst_of("queries_over_d2_plus_d", "exact"),
                            f"<= {2 + (3 * d + 2) / (d * d + d):.4f}", paper="O(d^2)"))
    if "adaptive" in methods:
        r = heads[0].head_dim
        # (2r + 2) d + 1 plus the counted probes (1 precision, 4 rank checks): no retries (issue 68)
        checks.append(Check("adaptive_max_queries_over_2r_plus_2_d", worst_of("queries_over_2r_plus_2_d", "adaptive"),
                            f"<= {1 + 6 / ((2 * r + 2) * d):.5f}", paper="O(rd)"))
    return Outcome(metrics=metrics, checks=checks, tables={"heads": rows},
                   timings={"total_s": time.perf_counter() - t0})
