"""The :class:`TextModel` protocol, token usage records, argument checks shared by the backends, a vocabulary
tokenizer."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "RequestUsage",
    "Samples",
    "TextModel",
    "TokenizerLike",
    "Usage",
    "VocabTokenizer",
    "check_messages",
    "check_sample_args",
    "check_score_args",
    "usage_of",
]


@runtime_checkable
class TextModel(Protocol):
    """A language model seen from outside: sample completions and score continuations.

    ``sample(prompts, n=, temperature=, max_new_tokens=, stop=, rng=)`` returns, for each prompt, ``n``
    completion strings (the text generated after the prompt, with any stop string cut off), drawn at
    ``temperature`` (0 means greedy). ``score(prompts, continuations)`` returns, shape ``(len(prompts),)``,
    the natural-log probability of each continuation given its prompt, summed over its tokens.

    The backends of this package return a :class:`Samples` from ``sample``: the same list of lists, which
    also carries the token usage of the call (read it with :func:`usage_of`, which also accepts the plain
    lists other models return).
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


@dataclass(frozen=True)
class Usage:
    """Token counts of one request, as an OpenAI-compatible server reports them in ``usage``.

    ``prompt_tokens`` counts each prompt once per request (not once per completion), ``completion_tokens``
    counts the tokens of every completion returned. A request repeated because the server returned fewer
    than ``n`` completions is a second request with its own prompt tokens.
    """

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {v!r}")

    @classmethod
    def of(cls, prompt_tokens: int, completion_tokens: int) -> Usage:
        """The usage whose total is the sum of its two parts."""
        return cls(int(prompt_tokens), int(completion_tokens), int(prompt_tokens) + int(completion_tokens))

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        """The OpenAI ``usage`` object."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True)
class RequestUsage:
    """The usage of one request (HTTP backend) or of one prompt (local backend), and the prompts it covers.

    ``prompts`` holds the indices, in the call's ``prompts``, of the prompts the request carried; ``usage``
    is None when the server sent no ``usage`` object.
    """

    prompts: tuple[int, ...]
    usage: Usage | None


class Samples(list[list[str]]):
    """What ``sample`` returns: ``out[i][j]`` is completion ``j`` of prompt ``i``, plus the token usage.

    It is a ``list`` (it compares equal to, and serialises as, the plain list of lists); slicing gives a
    plain list. Usage is never estimated: it is what the server reported (HTTP backend) or what the model
    read and generated (local backend).

    Attributes
    ----------
    requests : one :class:`RequestUsage` per request sent (HTTP backend) or per prompt (local backend),
        in prompt order.
    """

    def __init__(self, rows: Iterable[list[str]] = (), requests: Sequence[RequestUsage] = ()) -> None:
        super().__init__(rows)
        self.requests: tuple[RequestUsage, ...] = tuple(requests)

    @property
    def usage(self) -> Usage | None:
        """Token counts summed over the call's requests; None when a request reported none (a partial sum
        would undercount) or when there were no requests."""
        if not self.requests or any(r.usage is None for r in self.requests):
            return None
        total = Usage(0, 0, 0)
        for r in self.requests:
            assert r.usage is not None
            total = total + r.usage
        return total

    @property
    def prompt_usage(self) -> list[Usage | None]:
        """Usage per prompt: the sum over the requests that carried that prompt alone. None for a prompt
        sent together with others (the server reports one total per request) or without usage."""
        out: list[Usage | None] = []
        for i in range(len(self)):
            mine = [r for r in self.requests if i in r.prompts]
            if not mine or any(len(r.prompts) != 1 or r.usage is None for r in mine):
                out.append(None)
                continue
            total = Usage(0, 0, 0)
            for r in mine:
                assert r.usage is not None
                total = total + r.usage
            out.append(total)
        return out

    def __repr__(self) -> str:
        return f"Samples({list.__repr__(self)}, usage={self.usage!r})"


def usage_of(result: Sequence[Sequence[str]]) -> Usage | None:
    """The token usage a ``sample`` call recorded, or None (a model that reports none, e.g. a plain list)."""
    return result.usage if isinstance(result, Samples) else None


def check_messages(conversation: Any) -> list[dict[str, str]]:
    """Validate one chat conversation: a non-empty list of ``{"role": str, "content": str}`` mappings."""
    if isinstance(conversation, (str, Mapping)) or not isinstance(conversation, Sequence) or not conversation:
        raise TypeError("a conversation must be a non-empty list of {'role': ..., 'content': ...} messages")
    out = []
    for k, m in enumerate(conversation):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise TypeError(f"message {k} must be a mapping with string 'role' and 'content', got {m!r}")
        out.append({"role": str(m["role"]), "content": str(m["content"])})
    return out


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
