"""The mechanism analyses on any Hugging Face causal LM: text prompts through the model's own tokenizer.

:class:`HFBindingModel` wraps a causal LM read from a local folder by the core loader
(:func:`icml2026.core.loaders.load_causal_lm`, eager attention so that the knockout sees the attention mask)
and gives it the interface the analyses of :mod:`.mechanism` use (``vocab``, ``n_layer``, ``blocks``,
``make_batch``, ``item_logits``), so that activation patching, attention knockout, the linear probes and the
noise-token control run on it unchanged. GPT-2 (``transformer.h``), Llama and Qwen2 (``model.layers``) and
GPT-NeoX (``gpt_neox.layers``) block layouts are recognised.

Prompts come from the same generator (:func:`~.data.sample_task`); each token name of
:func:`~.data.text_prompt` is written as a word (``colour_3`` -> ``navy``, ``[CTX_END]`` -> ``.``,
``[QUE]`` -> ``?``) and the words are tokenized one by one as they continue a sentence (a word's tokens are
those the tokenizer gives it after a space), so that every token is known to belong to one word: the context
words (``c_1 s_1 ... c_N s_N``) are the knockout's context, and the noise words of a noise prompt are masked as
keys. An item is scored by the logit of its word's first token at the final position; the item words' first
tokens must differ (checked when the model is loaded).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from icml2026.core.errors import BadInput

from .data import Batch, RetrievalSample, Vocab, text_prompt

__all__ = ["WORDS", "WordForms", "HFBindingModel", "find_blocks"]

# Deviation: the paper's real-model prompts are not in our brief; these word lists are ours (distinct common
# English words, so that a real tokenizer gives the items distinct first tokens)
_COLOURS = (
    "red green blue yellow purple orange pink brown black white gray cyan magenta teal navy maroon olive lime "
    "gold silver beige violet indigo coral crimson amber ivory khaki lavender salmon tan turquoise"
).split()
_SHAPES = (
    "circle square triangle star heart diamond cross oval hexagon pentagon octagon arrow crescent ring cube cone "
    "cylinder sphere pyramid prism spiral wave arch knot moon sun cloud leaf flower drop bolt shield"
).split()
_ITEMS = (
    "apple book chair lamp clock phone key cup pen hat shoe bell coin bag box car dog fish tree boat kite drum "
    "violin umbrella"
).split()
_NOISE = "the of and to in is it that was for on are with as at be this have from or by".split()


@dataclass(frozen=True)
class WordForms:
    """Surface words of the task's tokens for a real LM's tokenizer (index = colour / shape / item index)."""

    colours: tuple[str, ...]
    shapes: tuple[str, ...]
    items: tuple[str, ...]
    noise: tuple[str, ...]
    ctx_end: str = "."
    que: str = "?"

    def word(self, name: str) -> str:
        """The word of a token name of :func:`~.data.text_prompt`."""
        if name == "[CTX_END]":
            return self.ctx_end
        if name == "[QUE]":
            return self.que
        kind, _, idx = name.partition("_")
        table = {"colour": self.colours, "shape": self.shapes, "item": self.items, "noise": self.noise}[kind]
        return table[int(idx)]

    def vocab(self) -> Vocab:
        """The task vocabulary these words cover."""
        return Vocab(len(self.colours), len(self.shapes), len(self.items), len(self.noise))


#: The default words: 32 colours, 32 shapes, 24 items (the brief's C, S, I), 24 noise words.
WORDS = WordForms(tuple(_COLOURS), tuple(_SHAPES), tuple(_ITEMS), tuple(_NOISE))


def find_blocks(lm: nn.Module) -> nn.ModuleList:
    """The list of transformer blocks of a Hugging Face causal LM (GPT-2, Llama / Qwen2, GPT-NeoX layouts)."""
    for path in ("transformer.h", "model.layers", "gpt_neox.layers", "model.decoder.layers"):
        obj: Any = lm
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if isinstance(obj, nn.ModuleList) and len(obj):
            return obj
    raise BadInput(f"model: {type(lm).__name__} has no block list this analysis knows "
                   "(transformer.h, model.layers, gpt_neox.layers)")


def _attention_module(block: nn.Module) -> nn.Module:
    for name in ("attn", "self_attn", "attention"):
        mod = getattr(block, name, None)
        if isinstance(mod, nn.Module):
            return mod
    raise BadInput(f"model: block {type(block).__name__} has no attention module (attn, self_attn, attention)")


class HFBindingModel(nn.Module):
    """A Hugging Face causal LM and its tokenizer, seen through the task's prompts (see module doc).

    ``words`` must cover the task sizes asked for (``vocab`` is built from it, cut to ``n_colours`` /
    ``n_shapes`` / ``n_items``).
    """

    def __init__(self, lm: nn.Module, tokenizer: Any, words: WordForms = WORDS, n_colours: int | None = None,
                 n_shapes: int | None = None, n_items: int | None = None) -> None:
        super().__init__()
        if tokenizer is None:
            raise BadInput("model: the folder has no tokenizer (the analyses build prompts through it)")
        full = words.vocab()
        n_c, n_s, n_i = (n_colours or full.n_colours, n_shapes or full.n_shapes, n_items or full.n_items)
        for key, n, have in (("n_colours", n_c, full.n_colours), ("n_shapes", n_s, full.n_shapes),
                             ("n_items", n_i, full.n_items)):
            if n > have:
                raise BadInput(f"{key} = {n}: the word lists for a real model's prompts hold {have}")
        self.lm = lm
        self.tokenizer = tokenizer
        self.words = words
        self.vocab = Vocab(n_c, n_s, n_i, full.n_noise)
        self._blocks = find_blocks(lm)
        self._cache: dict[str, list[int]] = {}
        probe = self._encode("x")
        with_specials = list(tokenizer("x")["input_ids"])
        self._prefix = with_specials[: len(with_specials) - len(probe)] if with_specials[-len(probe):] == probe else []
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self._pad = int(pad) if pad is not None else 0
        firsts = [self._word_ids(w)[0] for w in words.items[:n_i]]
        if len(set(firsts)) != len(firsts):
            clash = [w for w, f in zip(words.items[:n_i], firsts, strict=True) if firsts.count(f) > 1]
            raise BadInput(f"model: its tokenizer gives the item words {clash} the same first token; "
                           "the items are scored by their first token")
        self._item_ids = torch.tensor(firsts, dtype=torch.long)

    # ----------------------------------------------------------------------------------------- interface
    @property
    def device(self) -> torch.device:
        return next(self.lm.parameters()).device

    @property
    def n_layer(self) -> int:
        return len(self._blocks)

    @property
    def blocks(self) -> nn.ModuleList:
        return self._blocks

    def attention(self, layer: int) -> nn.Module:
        """The attention module of block ``layer`` (the knockout's pre-hook goes there)."""
        return _attention_module(self._blocks[layer])

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _word_ids(self, word: str) -> list[int]:
        """The tokens of ``word`` when it continues a sentence after a space."""
        if word not in self._cache:
            pre = self._encode("x")
            full = self._encode("x " + word)
            ids = full[len(pre):] if full[: len(pre)] == pre else self._encode(" " + word)
            if not ids:
                raise BadInput(f"model: its tokenizer gives the word {word!r} no tokens")
            self._cache[word] = ids
        return self._cache[word]

    def _row(self, words: list[str], key: list[bool], ctx: list[bool]) -> tuple[list[int], list[bool], list[bool]]:
        ids, keep, is_ctx = list(self._prefix), [True] * len(self._prefix), [False] * len(self._prefix)
        for w, k, c in zip(words, key, ctx, strict=True):
            t = self._word_ids(w)
            ids += t
            keep += [k] * len(t)
            is_ctx += [c] * len(t)
        return ids, keep, is_ctx

    def make_batch(self, samples: list[RetrievalSample], mode: str, rng: np.random.Generator,
                   context_len: int = 64) -> Batch:
        """Left-padded token ids of the text (``mode="text"``) or noise-text (``"noise"``) prompts.

        Noise prompts: the 2N context words are spread over ``context_len`` word slots by noise words at random
        places; their tokens are masked as keys (``key_mask`` False) and only shift positions.
        """
        if not samples:
            raise ValueError("samples is empty")
        if mode not in ("text", "noise"):
            raise ValueError(f"mode = {mode!r}: a language model reads 'text' or 'noise' prompts")
        rows, keys, ctxs = [], [], []
        for s in samples:
            names = text_prompt(s)
            n_ctx = 2 * s.n_objects
            words = [self.words.word(n) for n in names]
            key = [True] * len(words)
            ctx = [j < n_ctx for j in range(len(words))]
            if mode == "noise":
                if context_len < n_ctx:
                    raise ValueError(f"context_len = {context_len}: smaller than the context of {s.n_objects} objects")
                real = np.zeros(context_len, dtype=bool)
                real[np.sort(rng.choice(context_len, n_ctx, replace=False))] = True
                noise = iter(rng.integers(len(self.words.noise), size=context_len - n_ctx))
                it = iter(words[:n_ctx])
                cw = [next(it) if r else self.words.noise[int(next(noise))] for r in real]
                words = cw + words[n_ctx:]
                key = [bool(r) for r in real] + [True] * (len(names) - n_ctx)
                ctx = [bool(r) for r in real] + [False] * (len(names) - n_ctx)
            r, k, c = self._row(words, key, ctx)
            rows.append(r)
            keys.append(k)
            ctxs.append(c)
        t = max(len(r) for r in rows)
        b = len(rows)
        ids = np.full((b, t), self._pad, dtype=np.int64)
        key_mask = np.zeros((b, t), dtype=bool)
        pos = np.zeros((b, t), dtype=np.int64)
        is_ctx = np.zeros((b, t), dtype=bool)
        for j, (r, k, c) in enumerate(zip(rows, keys, ctxs, strict=True)):
            ids[j, t - len(r):], key_mask[j, t - len(r):], is_ctx[j, t - len(r):] = r, k, c
            pos[j, t - len(r):] = np.arange(len(r))
        return Batch(
            ids, key_mask, pos,
            answer=np.array([s.answer for s in samples]),
            query_slot=np.array([s.query_slot for s in samples]),
            query_shape=np.array([s.shape_of_colour(s.query_colour) for s in samples]),
            n_objects=np.array([s.n_objects for s in samples]),
            is_context=is_ctx,
        )

    def forward(self, batch: Batch, output_hidden_states: bool = False,
                output_attentions: bool = False) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Logits at the final position ``(B, V)`` (and the hidden states when asked)."""
        dev = self.device
        out = self.lm(
            input_ids=torch.from_numpy(batch.ids).to(dev),
            attention_mask=torch.from_numpy(batch.key_mask.astype(np.int64)).to(dev),
            position_ids=torch.from_numpy(batch.position_ids).to(dev),
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
            use_cache=False,
        )
        return out.logits[:, -1].float(), out.hidden_states

    def item_logits(self, batch: Batch) -> torch.Tensor:
        """Logits of the item words' first tokens, ``(B, n_items)``."""
        logits, _ = self.forward(batch)
        return logits[:, self._item_ids.to(logits.device)]

    @classmethod
    def load(cls, path: str | Path, *, device: str = "cpu", dtype: str | None = None, key: str = "model",
             n_colours: int | None = None, n_shapes: int | None = None, n_items: int | None = None,
             ) -> HFBindingModel:
        """Read a causal LM and its tokenizer from a local folder (or GGUF file) through the core loader."""
        from icml2026.core.loaders import load_causal_lm

        loaded = load_causal_lm(path, key=key, device=device, dtype=dtype,
                                model_kwargs={"attn_implementation": "eager"})
        return cls(loaded.model, loaded.tokenizer, WORDS, n_colours, n_shapes, n_items).eval()
