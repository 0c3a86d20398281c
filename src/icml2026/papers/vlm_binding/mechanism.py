"""Mechanistic analysis (Sec. 5 of the paper, CPU-scale version of the brief).

* :func:`interchange_intervention` / :func:`interchange_fractions`: patch the final-position residual after
  layer l from a counterfactual x' (context rotated, items re-drawn, another query colour c') into the run on
  x, and classify the patched prediction as symbolic / positional / x'-answer / original / other
  (Gur-Arieh et al. 2025's taxonomy). :func:`sym_pos_ratio` picks the dominant layer.
* :func:`attention_knockout`: block attention from the query position to every context token at layer l.
* :func:`probe_layers`: logistic-regression probes on the final-position residual per layer for the context
  slot of c_q (positional information) and the identity of its bound shape (symbolic information).

Patching and knockout are plain PyTorch forward hooks on the Hugging Face blocks; every function takes our
:class:`~.model.BindingLM` or any Hugging Face causal LM wrapped by :class:`~.hf.HFBindingModel` (GPT-2, Llama,
Qwen2 block layouts), whose prompts are the same samples written through its tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml2026.core.errors import require_module
from icml2026.core.validate import positive_int

from .data import Batch, RetrievalSample, counterfactual_sample, sample_task
from .hf import HFBindingModel
from .model import BindingLM
from .train import Mode, make_batch

#: What the analyses read: our :class:`~.model.BindingLM` or a Hugging Face causal LM seen through its tokenizer
Analysed = BindingLM | HFBindingModel

__all__ = [
    "OUTCOMES",
    "classify_patched",
    "interchange_intervention",
    "interchange_fractions",
    "InterchangeResult",
    "sym_pos_ratio",
    "attention_knockout",
    "knockout_profile",
    "ProbeResult",
    "probe_layers",
    "final_residuals",
]

OUTCOMES = ("symbolic", "positional", "x'-answer", "original", "other")


def _batch(model: Analysed, samples: list[RetrievalSample], mode: Mode, rng: np.random.Generator) -> Batch:
    """The prompts of ``samples`` as ``model`` reads them (its tokenizer's, for a Hugging Face LM)."""
    if isinstance(model, HFBindingModel):
        return model.make_batch(samples, mode, rng)
    return make_batch(samples, mode, rng)


def _check_layer(model: Analysed, layer: int) -> int:
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < model.n_layer:
        raise ValueError(f"layer = {layer!r}: must be an int in [0, {model.n_layer - 1}]")
    return int(layer)


def _block_output(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out


def _replace_output(out: Any, new: torch.Tensor) -> Any:
    return (new, *out[1:]) if isinstance(out, tuple) else new


@torch.no_grad()
def final_residuals(
    model: Analysed, samples: list[RetrievalSample], mode: Mode, rng: np.random.Generator
) -> np.ndarray:
    """Residual stream at the final position after each block: ``(n_layer, len(samples), d_model)``."""
    model.eval()
    caught: list[torch.Tensor] = []
    hooks = [
        b.register_forward_hook(lambda _m, _i, o: caught.append(_block_output(o)[:, -1].clone())) for b in model.blocks
    ]
    try:
        model(_batch(model, samples, mode, rng))
    finally:
        for h in hooks:
            h.remove()
    return torch.stack(caught).cpu().numpy()


def classify_patched(pred: int, base: RetrievalSample, counterfactual: RetrievalSample) -> str:
    """The outcome class of a patched prediction ``pred`` (an item index); see module doc."""
    c_prime = counterfactual.query_colour
    symbolic = base.item_of_shape(base.shape_of_colour(c_prime))
    positional = base.item_of_shape(base.objects[counterfactual.query_slot][1])
    for name, item in (
        ("symbolic", symbolic),
        ("positional", positional),
        ("x'-answer", counterfactual.answer),
        ("original", base.answer),
    ):
        if pred == item:
            return name
    return "other"


@torch.no_grad()
def _patched_predictions(
    model: Analysed, bases: list[RetrievalSample], cfs: list[RetrievalSample], layer: int, rng: np.random.Generator
) -> np.ndarray:
    """Item argmax on x with the final-position residual after ``layer`` taken from the run on x'."""
    model.eval()
    store: dict[str, torch.Tensor] = {}

    def grab(_m: Any, _i: Any, out: Any) -> None:
        store["h"] = _block_output(out)[:, -1].clone()

    def put(_m: Any, _i: Any, out: Any) -> Any:
        h = _block_output(out).clone()
        h[:, -1] = store["h"]
        return _replace_output(out, h)

    blk = model.blocks[layer]
    hook = blk.register_forward_hook(grab)
    try:
        model(_batch(model, cfs, "text", rng))
    finally:
        hook.remove()
    hook = blk.register_forward_hook(put)
    try:
        pred = model.item_logits(_batch(model, bases, "text", rng)).argmax(1).cpu().numpy()
    finally:
        hook.remove()
    return pred


def interchange_intervention(
    model: Analysed,
    base: RetrievalSample,
    counterfactual: RetrievalSample,
    layer: int,
    rng: np.random.Generator | None = None,
) -> str:
    """Patch x' into x at the query position after ``layer``; return the outcome class (one of OUTCOMES).

    ``counterfactual`` must be built by :func:`~.data.counterfactual_sample` from ``base`` (same objects,
    same length); its ``query_slot`` is p'.
    """
    layer = _check_layer(model, layer)
    if sorted(base.objects) != sorted(counterfactual.objects):
        raise ValueError("counterfactual must hold the same objects as base (use counterfactual_sample)")
    pred = _patched_predictions(model, [base], [counterfactual], layer, rng or np.random.default_rng(0))
    return classify_patched(int(pred[0]), base, counterfactual)


@dataclass
class InterchangeResult:
    """Per-layer fractions of each outcome, ``fractions[layer][outcome]``, over ``n_pairs`` pairs."""

    fractions: list[dict[str, float]]
    n_pairs: int


def interchange_fractions(
    model: Analysed, n_pairs: int, n_range: tuple[int, int], rng: np.random.Generator, batch_size: int = 128
) -> InterchangeResult:
    """Interchange interventions on ``n_pairs`` fresh (x, x') pairs (N uniform in ``n_range``, N >= 3)."""
    n_pairs = positive_int(n_pairs, "n_pairs", maximum=10**6)
    lo, hi = n_range
    if lo < 3:
        raise ValueError(f"n_range = {n_range}: the intervention needs N >= 3")
    fractions = []
    pairs: list[tuple[RetrievalSample, RetrievalSample]] = []
    for _ in range(n_pairs):
        x = sample_task(int(rng.integers(lo, hi + 1)), rng, model.vocab)
        pairs.append((x, counterfactual_sample(x, rng)[0]))
    for layer in range(model.n_layer):
        counts = dict.fromkeys(OUTCOMES, 0)
        for k in range(0, n_pairs, batch_size):
            chunk = pairs[k : k + batch_size]
            by_n: dict[int, list[int]] = {}
            for j, (x, _) in enumerate(chunk):
                by_n.setdefault(x.n_objects, []).append(j)
            for idx in by_n.values():  # same N in one batch: x and x' have equal lengths
                bases, cfs = [chunk[j][0] for j in idx], [chunk[j][1] for j in idx]
                preds = _patched_predictions(model, bases, cfs, layer, rng)
                for p, b, c in zip(preds, bases, cfs, strict=True):
                    counts[classify_patched(int(p), b, c)] += 1
        fractions.append({o: counts[o] / n_pairs for o in OUTCOMES})
    return InterchangeResult(fractions, n_pairs)


def sym_pos_ratio(result: InterchangeResult) -> tuple[float, int]:
    """(Sym/Pos ratio, dominant layer): the layer maximising symbolic + positional flips.

    The last layer is excluded when the x'-answer dominates there (the patched residual already holds the
    answer). Ratio with add-one smoothing on the counts, ``(n_sym + 1) / (n_pos + 1)``, so that a layer
    without positional flips gives a finite number.
    """
    fr = result.fractions
    layers = list(range(len(fr)))
    last = fr[-1]
    if len(layers) > 1 and last["x'-answer"] >= max(last["symbolic"], last["positional"]):
        layers = layers[:-1]
    best = max(layers, key=lambda k: (fr[k]["symbolic"] + fr[k]["positional"], -k))
    n = result.n_pairs
    # Deviation: add-one smoothing (the brief's ratio is undefined without positional flips)
    return (fr[best]["symbolic"] * n + 1) / (fr[best]["positional"] * n + 1), best


@contextmanager
def _knockout(model: Analysed, layer: int, is_context: np.ndarray) -> Iterator[None]:
    """Within the block, the final query position may not attend to any context token."""
    block_ctx = torch.from_numpy(is_context).to(model.device)

    def pre(_m: Any, args: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        mask = kwargs.get("attention_mask")
        if mask is None:
            raise RuntimeError("the attention layer received no mask; knockout needs the eager 4D mask")
        mask = mask.clone()
        blocked = False if mask.dtype == torch.bool else torch.finfo(mask.dtype).min  # bool masks: True attends
        mask[:, :, -1, :] = mask[:, :, -1, :].masked_fill(block_ctx[:, None, -mask.shape[-1]:], blocked)
        kwargs["attention_mask"] = mask
        return args, kwargs

    attn: torch.nn.Module = (model.attention(layer) if isinstance(model, HFBindingModel)
                             else model.blocks[layer].attn)  # type: ignore[assignment]
    hook = attn.register_forward_pre_hook(pre, with_kwargs=True)
    try:
        yield
    finally:
        hook.remove()


@torch.no_grad()
def attention_knockout(
    model: Analysed, samples: list[RetrievalSample], layer: int, rng: np.random.Generator, mode: Mode = "text"
) -> float:
    """Accuracy on ``samples`` when the query position cannot attend to the context at ``layer``."""
    layer = _check_layer(model, layer)
    if not samples:
        raise ValueError("samples is empty")
    model.eval()
    batch = _batch(model, samples, mode, rng)
    with _knockout(model, layer, batch.is_context):
        pred = model.item_logits(batch).argmax(1).cpu().numpy()
    return float((pred == batch.answer).mean())


def knockout_profile(
    model: Analysed, samples: list[RetrievalSample], rng: np.random.Generator, mode: Mode = "text"
) -> list[float]:
    """Accuracy with the knockout at each layer (the drop from clean accuracy locates retrieval)."""
    return [attention_knockout(model, samples, k, rng, mode) for k in range(model.n_layer)]


@dataclass
class ProbeResult:
    """Held-out probe accuracy per layer: ``slot`` (positional info) and ``shape`` (symbolic info).

    ``slot_chance`` / ``shape_chance``: majority-class accuracy on the same test split.
    """

    slot: list[float]
    shape: list[float]
    slot_chance: float
    shape_chance: float


def probe_layers(
    model: Analysed,
    samples: list[RetrievalSample],
    rng: np.random.Generator,
    mode: Mode = "text",
    test_fraction: float = 0.3,
) -> ProbeResult:
    """Logistic-regression probes (scikit-learn) on the final-position residual after every layer."""
    require_module("sklearn", "vlm_binding")
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    if len(samples) < 20:
        raise ValueError(f"samples has {len(samples)} entries: probes need at least 20")
    if not 0.05 <= test_fraction <= 0.95:
        raise ValueError(f"test_fraction = {test_fraction}: must be in [0.05, 0.95]")
    feats = final_residuals(model, samples, mode, rng)
    slot = np.array([s.query_slot for s in samples])
    shape = np.array([s.shape_of_colour(s.query_colour) for s in samples])
    order = rng.permutation(len(samples))
    n_test = int(round(test_fraction * len(samples)))
    te, tr = order[:n_test], order[n_test:]

    def fit(x: np.ndarray, y: np.ndarray) -> float:
        sc = StandardScaler().fit(x[tr])
        clf = LogisticRegression(max_iter=300, C=1.0).fit(sc.transform(x[tr]), y[tr])
        return float(clf.score(sc.transform(x[te]), y[te]))

    def chance(y: np.ndarray) -> float:
        vals, cnt = np.unique(y[tr], return_counts=True)
        return float((y[te] == vals[np.argmax(cnt)]).mean())

    return ProbeResult([fit(f, slot) for f in feats], [fit(f, shape) for f in feats], chance(slot), chance(shape))
