"""ONION (Qi et al., EMNLP 2021): perplexity-based outlier-word filtering, an inference-time defence against
inserted-word triggers. STRIP, the other defence reported here, lives in :mod:`.baselines`.

For an input s = w_1 .. w_n the defender scores every word by how much the language model's perplexity drops
when the word is removed, f_i = PPL(s) - PPL(s without w_i), removes the words with f_i > threshold, and gives
the victim what is left. A rare inserted token ("cf") makes the sentence improbable and is removed; a common
in-domain word (the anchor "film") barely moves the perplexity, which is the stealth that the Semantic Anchoring
Hypothesis predicts.

# Deviation: ONION scores with GPT-2 (WebText); no checkpoint may be downloaded here, so the language model is a
# 2-layer GPT-2 (``transformers.GPT2Config``) trained for minutes on IMDB text with the learners' WordPiece
# tokenizer (:func:`pretrain_causal_lm`). A user with GPT-2 weights passes any causal LM and its tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from icml2026.core.progress import track
from icml2026.core.rng import torch_generator
from icml2026.core.validate import finite_number, positive_int

from .data import encode
from .method import predict
from .models import LearnerFactory, adamw_warmup_decay, clipped_step, fresh_model, sampled_logits

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast

__all__ = ["causal_lm_config", "pretrain_causal_lm", "sentence_perplexity", "onion_scores", "onion_threshold",
           "onion_filter", "OnionResult", "onion_defence"]


def causal_lm_config(vocab_size: int = 30522, n_layer: int = 2, n_embd: int = 128, n_head: int = 2,
                     max_len: int = 64) -> Any:
    """``GPT2Config`` of the small causal LM that stands in for ONION's GPT-2 (no dropout, eager attention)."""
    from transformers import GPT2Config

    for v, name in ((vocab_size, "vocab_size"), (n_layer, "n_layer"), (n_embd, "n_embd"), (n_head, "n_head"),
                    (max_len, "max_len")):
        positive_int(v, name)
    if n_embd % n_head:
        raise ValueError(f"n_embd = {n_embd}: must be a multiple of n_head = {n_head}")
    return GPT2Config(vocab_size=vocab_size, n_positions=max_len, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, attn_implementation="eager",
                      bos_token_id=None, eos_token_id=None)  # type: ignore[call-arg]  # GPT-2's 50256: not WordPiece


def _ids(tokenizer: PreTrainedTokenizerFast, texts: Sequence[str], max_len: int) -> tuple[Any, Any]:
    """Token ids with the tokenizer's [CLS] as beginning-of-sentence (so the first word is scored too), no [SEP]."""
    enc = tokenizer(list(texts), padding="longest", truncation=True, max_length=max_len, return_tensors="pt")
    ids, att = enc["input_ids"], enc["attention_mask"]
    if tokenizer.sep_token_id is not None:  # drop [SEP]: ONION scores the sentence, not its end marker
        keep = ids != tokenizer.sep_token_id
        att = att * keep
        ids = ids.masked_fill(~keep, tokenizer.pad_token_id or 0)
    return ids, att


def pretrain_causal_lm(texts: Sequence[str], tokenizer: PreTrainedTokenizerFast, *, n_steps: int,
                       rng: np.random.Generator, config: Any = None, batch_size: int = 32, lr: float = 5e-3,
                       n_negatives: int = 2048, init_word_embeddings: torch.Tensor | None = None,
                       show_progress: bool = True) -> GPT2LMHeadModel:
    """Next-token pre-training of a ``GPT2LMHeadModel`` (tied embeddings) on ``texts``, on the CPU.

    # Deviation: sampled softmax over the batch's targets + ``n_negatives`` random tokens while training (as our
    # MLM does; the 30,522-way decoder dominated the cost); scoring uses the full softmax. ``n_negatives=0``
    # trains with the full softmax.
    """
    import torch
    from transformers import GPT2LMHeadModel

    n_steps = positive_int(n_steps, "n_steps")
    batch_size = positive_int(batch_size, "batch_size")
    lr = finite_number(lr, "lr", lo=0.0)
    n_negatives = positive_int(n_negatives, "n_negatives", minimum=0)
    if len(texts) == 0:
        raise ValueError("texts: empty")
    config = causal_lm_config(vocab_size=len(tokenizer)) if config is None else config
    if config.vocab_size < len(tokenizer):
        raise ValueError(f"config.vocab_size = {config.vocab_size} < the tokenizer's {len(tokenizer)} tokens")
    gen = torch_generator(rng)
    model = fresh_model(GPT2LMHeadModel, config, gen, init_word_embeddings)
    model.train()
    opt, sched = adamw_warmup_decay(model, lr, n_steps)
    steps = range(n_steps)
    for _ in track(steps, "causal LM pre-training (ONION)", total=n_steps) if show_progress else steps:
        idx = rng.integers(0, len(texts), size=batch_size)
        ids, att = _ids(tokenizer, [texts[i] for i in idx], config.n_positions)
        hidden = model.transformer(input_ids=ids, attention_mask=att).last_hidden_state
        h = hidden[:, :-1][att[:, 1:].bool()]  # position t predicts token t+1
        target = ids[:, 1:][att[:, 1:].bool()]
        logits, target = sampled_logits(h, target, model.get_input_embeddings().weight, None, n_negatives, gen)
        loss = torch.nn.functional.cross_entropy(logits, target) if len(target) else logits.sum() * 0
        clipped_step(model, opt, sched, loss)
    model.eval()
    return model


def sentence_perplexity(lm: Any, tokenizer: PreTrainedTokenizerFast, texts: Sequence[str], *, chunk: int = 64,
                        max_len: int | None = None) -> np.ndarray:
    """exp(mean next-token negative log-likelihood) of each text under the causal LM ``lm`` (n,), full softmax;
    the tokenizer's [CLS] is the beginning of sentence, so every word is scored. An empty text has no token to
    score: its perplexity is 1 (nothing is surprising)."""
    import torch

    chunk = positive_int(chunk, "chunk")
    max_len = int(lm.config.n_positions) if max_len is None else positive_int(max_len, "max_len", minimum=2)
    out = []
    with torch.no_grad():
        for s in range(0, len(texts), chunk):
            ids, att = _ids(tokenizer, texts[s:s + chunk], max_len)
            logits = lm(input_ids=ids, attention_mask=att).logits[:, :-1]
            keep = att[:, 1:].bool()  # scored positions only, as one contiguous (tokens, vocab) block
            nll = torch.nn.functional.cross_entropy(logits[keep].float(), ids[:, 1:][keep], reduction="none")
            total = torch.zeros(len(ids), dtype=nll.dtype).index_add_(0, keep.nonzero()[:, 0], nll)
            mean = total / keep.sum(1).clamp_min(1)
            out.append(torch.exp(mean).numpy())
    return np.concatenate(out) if out else np.zeros(0)


def onion_scores(lm: Any, tokenizer: PreTrainedTokenizerFast, texts: Sequence[str], *,
                 show_progress: bool = False) -> list[np.ndarray]:
    """ONION's suspicion score of every word of every text: f_i = PPL(text) - PPL(text without word i) (one array
    per text, one value per whitespace-separated word, as inserted triggers are). A one-word text scores 0."""
    if isinstance(texts, str):
        raise TypeError("texts: expected a sequence of strings, got one string")
    out = []
    items = track(texts, "ONION scores", total=len(texts)) if show_progress else texts
    for text in items:
        if not isinstance(text, str):
            raise TypeError(f"texts: expected strings, got {type(text).__name__}")
        words = text.split()
        if len(words) < 2:
            out.append(np.zeros(len(words)))
            continue
        variants = [text] + [" ".join(words[:i] + words[i + 1:]) for i in range(len(words))]
        ppl = sentence_perplexity(lm, tokenizer, variants)
        out.append(ppl[0] - ppl[1:])
    return out


def onion_threshold(clean_scores: Sequence[np.ndarray], removal_rate: float) -> float:
    """The threshold that removes a ``removal_rate`` fraction of the words of clean (validation) texts, from
    their :func:`onion_scores`: the defender's calibration, like STRIP's false-rejection rate."""
    rate = finite_number(removal_rate, "removal_rate", lo=0.0, hi=1.0)
    allw = np.concatenate([np.asarray(c, float) for c in clean_scores]) if len(clean_scores) else np.zeros(0)
    if allw.size == 0:
        raise ValueError("clean_scores: no word to calibrate on")
    if not np.isfinite(allw).all():
        raise ValueError("clean_scores: non-finite score")
    return float(np.quantile(allw, 1.0 - rate))


def onion_filter(texts: Sequence[str], scores: Sequence[np.ndarray], threshold: float = 0.0) -> list[str]:
    """``texts`` without the words whose suspicion score (:func:`onion_scores`) exceeds ``threshold``
    (OpenBackdoor's default is 0: every word whose removal lowers the perplexity goes)."""
    threshold = finite_number(threshold, "threshold")
    if len(texts) != len(scores):
        raise ValueError(f"scores: {len(scores)} arrays for {len(texts)} texts")
    out = []
    for text, f in zip(texts, scores, strict=True):
        words = text.split()
        if len(words) != len(f):
            raise ValueError(f"scores: {len(f)} values for the {len(words)} words of {text[:40]!r}")
        out.append(" ".join(w for w, x in zip(words, f, strict=True) if not x > threshold))
    return out


@dataclass
class OnionResult:
    """ONION in front of one victim: the trigger-removal rate, and the victim on filtered inputs."""

    trigger_removed: float  # triggered inputs that lost at least one copy of the trigger word(s)
    asr_after: float  # filtered triggered non-target inputs still predicted as the target
    cta_before: float  # accuracy on the clean inputs as given
    cta_after: float  # accuracy on the same inputs after filtering (what the defence costs)
    threshold: float


def onion_defence(model_factory: LearnerFactory, params: dict[str, torch.Tensor], trigger: str,
                  triggered_texts: Sequence[str], filtered_triggered: Sequence[str], clean_texts: Sequence[str],
                  clean_labels: np.ndarray, filtered_clean: Sequence[str], target: int, *, threshold: float = 0.0,
                  seq_len: int = 48) -> OnionResult:
    """ONION against one victim, from texts already filtered by :func:`onion_filter` (the filtering does not
    depend on the victim, so one filtering serves every victim). ``threshold`` is recorded, not applied."""
    tok = model_factory.tokenizer
    if len(triggered_texts) != len(filtered_triggered) or len(clean_texts) != len(filtered_clean):
        raise ValueError("filtered texts: must be the given texts, one for one")
    labels = np.asarray(clean_labels)
    if labels.shape != (len(clean_texts),):
        raise ValueError(f"clean_labels: shape {labels.shape} != ({len(clean_texts)},)")
    trig = trigger.split() if isinstance(trigger, str) else []
    if not trig:
        raise ValueError(f"trigger = {trigger!r}: must be a string of at least one word")

    def count(text: str) -> int:
        w = text.split()
        return sum(w[i:i + len(trig)] == trig for i in range(len(w)))

    removed = [count(f) < count(t) for t, f in zip(triggered_texts, filtered_triggered, strict=True)]
    pt, _ = predict(model_factory, params, encode(tok, list(filtered_triggered), seq_len))  # type: ignore[arg-type]
    pb, _ = predict(model_factory, params, encode(tok, list(clean_texts), seq_len))  # type: ignore[arg-type]
    pa, _ = predict(model_factory, params, encode(tok, list(filtered_clean), seq_len))  # type: ignore[arg-type]
    return OnionResult(float(np.mean(removed)) if removed else float("nan"),
                       float(np.mean(pt == target)) if len(pt) else float("nan"),
                       float(np.mean(pb == labels)) if len(pb) else float("nan"),
                       float(np.mean(pa == labels)) if len(pa) else float("nan"), float(threshold))
