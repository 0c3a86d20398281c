"""The :class:`TextModel` protocol, argument checks shared by the backends, a vocabulary tokenizer."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["TextModel", "TokenizerLike", "VocabTokenizer", "check_sample_args", "check_score_args"]


@runtime_checkable
class TextModel(Protocol):
    """A language model seen from outside: sample completions and score continuations.

    ``sample(prompts, n=, temperature=, max_new_tokens=, stop=, rng=)`` returns, for each prompt, ``n``
    completion strings (the text generated after the prompt, with any stop string cut off), drawn at
    ``temperature`` (0 means greedy). ``score(prompts, continuations)`` returns, shape ``(len(prompts),)``,
    the natural-log probability of each continuation given its prompt, summed over its tokens.
    """

    @property
    def name(self) -> str: ...

    def sample(
        self,
        prompts: Sequence[str],
        *,
        n: int = 1,
        temperature: float = 1.0,
        max_new_tokens: int = 32,
        stop: Sequence[str] = (),
        rng: np.random.Generator,
    ) -> list[list[str]]: ...

    def score(self, prompts: Sequence[str], continuations: Sequence[str]) -> np.ndarray: ...


class TokenizerLike(Protocol):
    """What the local backend and the trainer need from a tokenizer (no special tokens in ``encode``)."""

    bos_id: int | None
    eos_id: int | None
    pad_id: int

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


def check_sample_args(
    prompts: Sequence[str], n: int, temperature: float, max_new_tokens: int, stop: Sequence[str]
) -> list[str]:
    """Validate :meth:`TextModel.sample` arguments; return the prompts as a list."""
    if isinstance(prompts, str):
        raise TypeError("prompts must be a sequence of strings, not one string")
    prompts = list(prompts)
    if not all(isinstance(p, str) for p in prompts):
        raise TypeError("every prompt must be a string")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n (completions per prompt) must be a positive integer, got {n!r}")
    if not np.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be finite and >= 0, got {temperature!r}")
    if (
        isinstance(max_new_tokens, bool)
        or not isinstance(max_new_tokens, (int, np.integer))
        or max_new_tokens < 1
    ):
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if isinstance(stop, str) or not all(isinstance(s, str) and s for s in stop):
        raise TypeError("stop must be a sequence of non-empty strings")
    return prompts


def check_score_args(prompts: Sequence[str], continuations: Sequence[str]) -> tuple[list[str], list[str]]:
    """Validate :meth:`TextModel.score` arguments (equal lengths, strings)."""
    if isinstance(prompts, str) or isinstance(continuations, str):
        raise TypeError("prompts and continuations must be sequences of strings, not one string")
    prompts, continuations = list(prompts), list(continuations)
    if len(prompts) != len(continuations):
        raise ValueError(
            f"got {len(prompts)} prompts but {len(continuations)} continuations; they must pair up"
        )
    if not all(isinstance(s, str) for s in prompts + continuations):
        raise TypeError("prompts and continuations must be strings")
    return prompts, continuations


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to the earliest stop string, and whether one was found."""
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


class VocabTokenizer:
    """A closed-vocabulary tokenizer for tiny models: characters (``level="char"``) or whitespace words.

    Ids 0-3 are ``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``; unknown symbols map to ``<unk>``. Word-level
    ``decode`` joins words with single spaces, so a word-level round trip normalises whitespace.
    """

    SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")
    FILE_NAME = "vocab_tokenizer.json"

    def __init__(self, symbols: Sequence[str], level: str = "char") -> None:
        if level not in ("char", "word"):
            raise ValueError(f"level must be 'char' or 'word', got {level!r}")
        symbols = [s for s in dict.fromkeys(symbols) if s not in self.SPECIALS]
        if level == "char" and any(len(s) != 1 for s in symbols):
            raise ValueError("a char-level tokenizer needs single-character symbols")
        if level == "word" and any(not s or any(c.isspace() for c in s) for s in symbols):
            raise ValueError("a word-level tokenizer needs non-empty symbols without whitespace")
        self.level = level
        self.symbols = list(self.SPECIALS) + symbols
        self._index = {s: i for i, s in enumerate(self.symbols)}
        self.pad_id, self.unk_id = 0, 3
        self.bos_id: int | None = 1
        self.eos_id: int | None = 2

    @classmethod
    def build(cls, texts: Iterable[str], level: str = "char") -> VocabTokenizer:
        """The tokenizer whose vocabulary is every symbol of ``texts`` (sorted, so order-independent)."""
        counts: Counter[str] = Counter()
        for t in texts:
            counts.update(t if level == "char" else t.split())
        return cls(sorted(counts), level=level)

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def encode(self, text: str) -> list[int]:
        parts: Iterable[str] = text if self.level == "char" else text.split()
        return [self._index.get(s, self.unk_id) for s in parts]

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[int]]:
        """Token ids and the character offset where each token starts in ``text``."""
        if self.level == "char":
            return self.encode(text), list(range(len(text)))
        spans = [(m.group(), m.start()) for m in re.finditer(r"\S+", text)]
        return [self._index.get(w, self.unk_id) for w, _ in spans], [o for _, o in spans]

    def decode(self, ids: Sequence[int]) -> str:
        words = [self.symbols[int(i)] for i in ids if int(i) >= len(self.SPECIALS)]
        if self.level == "char":
            return "".join(words)
        return (" " + " ".join(words)) if words else ""

    def save(self, folder: str | Path) -> None:
        path = Path(folder) / self.FILE_NAME
        path.write_text(json.dumps({"level": self.level, "symbols": self.symbols[len(self.SPECIALS) :]}))

    @classmethod
    def load(cls, folder: str | Path) -> VocabTokenizer:
        data = json.loads((Path(folder) / cls.FILE_NAME).read_text())
        return cls(data["symbols"], level=data["level"])

    def __repr__(self) -> str:
        return f"VocabTokenizer(level={self.level!r}, vocab_size={self.vocab_size})"
