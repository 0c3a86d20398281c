"""A ``transformers`` causal LM behind the :class:`TextModel` protocol (local weights only, CPU or GPU).

Chat requests (:meth:`HFLocalBackend.sample_chat`, or ``sample`` with ``chat=True``) are rendered with the
tokenizer's chat template when it has one (``tokenizer.apply_chat_template(messages,
add_generation_prompt=True)``), and as the plain concatenation of the message contents only when it has none.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..rng import torch_generator
from .protocol import (
    RequestUsage,
    Samples,
    TokenizerLike,
    Usage,
    VocabTokenizer,
    check_messages,
    check_sample_args,
    check_score_args,
    cut_at_stop,
)

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["HFLocalBackend", "HFTokenizerAdapter"]


class HFTokenizerAdapter:
    """A ``transformers`` tokenizer seen through :class:`TokenizerLike` (no special tokens in ``encode``)."""

    def __init__(self, tokenizer: Any, add_bos: bool | None = None) -> None:
        self.tokenizer = tokenizer
        bos = tokenizer.bos_token_id
        self.bos_id = bos if (add_bos if add_bos is not None else bos is not None) else None
        self.eos_id = tokenizer.eos_token_id
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.pad_id = int(pad) if pad is not None else 0

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True))

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[int]]:
        """Token ids and start offsets (needs a fast tokenizer with offset mapping)."""
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return list(enc["input_ids"]), [int(a) for a, _ in enc["offset_mapping"]]

    @property
    def has_chat_template(self) -> bool:
        """Whether the tokenizer carries a chat template (``chat_template`` set, as instruct models ship)."""
        return bool(getattr(self.tokenizer, "chat_template", None))

    def encode_chat(self, messages: Sequence[Mapping[str, str]]) -> list[int]:
        """Ids of ``messages`` rendered by the chat template with the assistant's turn opened.

        The template's text is tokenized without adding special tokens: the template writes BOS itself
        where the model expects one (vLLM's convention for chat requests), so BOS is never doubled.
        """
        if not self.has_chat_template:
            raise ValueError("this tokenizer has no chat template")
        text = self.tokenizer.apply_chat_template(
            [dict(m) for m in messages], add_generation_prompt=True, tokenize=False
        )
        return self.encode(str(text))


class HFLocalBackend:
    """Sample from and score with a local causal LM (any ``transformers`` ``*ForCausalLM``).

    Parameters
    ----------
    model : a ``transformers`` causal LM (moved to ``device`` and put in eval mode).
    tokenizer : a :class:`TokenizerLike` (``VocabTokenizer`` for tiny models, ``HFTokenizerAdapter`` for real
        ones). Its ``bos_id``, when not None, is put before every prompt.
    device : ``"cpu"``, ``"cuda"``, ``"cuda:1"``... (default: CPU).
    batch_size : sequences per forward pass.
    name : label used in results.
    chat : treat every prompt of :meth:`sample` and :meth:`score` as one user message of a chat and render
        it as :meth:`chat_prompt_ids` does (for instruct models, which answer plain prompts poorly).

    Sampling draws every token on the CPU from a ``torch.Generator`` made from the caller's numpy
    generator, so a fixed ``rng`` gives the same completions on any device (up to floating point).
    :meth:`sample` returns a :class:`~.protocol.Samples` whose usage counts what the model read and
    generated, as vLLM counts it: each prompt's tokens (BOS included) once, and every generated token of
    every completion (the EOS that ended one, and the token that completed a stop string, included).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: TokenizerLike,
        *,
        device: str | torch.device | None = None,
        batch_size: int = 64,
        name: str = "hf-local",
        chat: bool = False,
    ) -> None:
        import torch

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.device = torch.device(device if device is not None else "cpu")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.batch_size = int(batch_size)
        self._name = name
        self.chat = bool(chat)
        params = inspect.signature(self.model.forward).parameters
        # transformers 5 renamed ``past_key_values`` to ``cache`` (input and output); support both.
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        cfg = self.model.config
        self.max_positions = getattr(cfg, "n_positions", None) or getattr(
            cfg, "max_position_embeddings", None
        )

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"HFLocalBackend(name={self._name!r}, model={type(self.model).__name__}, device={self.device})"

    # ----------------------------------------------------------------------------------------------- io
    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        *,
        device: str | None = None,
        dtype: Any = None,
        batch_size: int = 64,
        name: str | None = None,
        chat: bool = False,
    ) -> HFLocalBackend:
        """Load model and tokenizer from a local folder or GGUF file, through :mod:`icml2026.core.loaders`.

        ``path`` is a ``save_pretrained`` folder or a ``.gguf`` file (SmolLM2, Llama, Qwen ... through
        transformers' GGUF reader); nothing is downloaded. A folder holding ``vocab_tokenizer.json`` (the
        tiny models built here) uses :class:`VocabTokenizer`; any other uses the model's own tokenizer, whose
        chat template (if any) renders chat requests. ``dtype`` is ``"float32"``, ``"bfloat16"``,
        ``"float16"`` or ``None`` (float32), or the matching ``torch.dtype``.

        Raises
        ------
        BadInput
            The path is missing or holds no causal LM (one line naming it).
        """
        from ..loaders import load_causal_lm

        dtype_name = str(dtype).removeprefix("torch.") if dtype is not None else None
        folder = Path(path).expanduser()
        own_vocab = folder.is_dir() and (folder / VocabTokenizer.FILE_NAME).exists()
        loaded = load_causal_lm(folder, dtype=dtype_name, device="cpu", load_tokenizer=not own_vocab)
        model = loaded.model
        tok: TokenizerLike = (VocabTokenizer.load(folder) if own_vocab
                              else HFTokenizerAdapter(loaded.tokenizer))
        return cls(model, tok, device=device, batch_size=batch_size, name=name or folder.stem, chat=chat)

    def save_pretrained(self, path: str | Path) -> None:
        """Write model weights, config and (vocabulary or HF) tokenizer into ``path``."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        if isinstance(self.tokenizer, VocabTokenizer):
            self.tokenizer.save(folder)
        elif isinstance(self.tokenizer, HFTokenizerAdapter):
            self.tokenizer.tokenizer.save_pretrained(folder)
        else:
            raise TypeError(f"cannot save tokenizer of type {type(self.tokenizer).__name__}")

    # --------------------------------------------------------------------------------------------- core
    @property
    def has_chat_template(self) -> bool:
        """Whether chat requests are rendered by the tokenizer's chat template (else concatenated)."""
        return bool(getattr(self.tokenizer, "has_chat_template", False))

    def _plain_ids(self, prompt: str) -> list[int]:
        ids = ([self.tokenizer.bos_id] if self.tokenizer.bos_id is not None else []) + self.tokenizer.encode(
            prompt
        )
        if not ids:
            raise ValueError("an empty prompt needs a tokenizer with a BOS token")
        return ids

    def chat_prompt_ids(self, messages: Sequence[Mapping[str, str]]) -> list[int]:
        """The token ids a chat request starts generating from.

        With a chat template (an :class:`HFTokenizerAdapter` whose tokenizer has ``chat_template``):
        ``apply_chat_template(messages, add_generation_prompt=True)``, tokenized without added special
        tokens. Without one (a :class:`VocabTokenizer`, or a tokenizer that ships none): the plain
        concatenation of the message contents, one per line, tokenized like a prompt (BOS first).
        """
        messages = check_messages(messages)
        if self.has_chat_template:
            ids = list(self.tokenizer.encode_chat(messages))  # type: ignore[attr-defined]
            if not ids:
                raise ValueError("the chat template rendered these messages as no token")
            return ids
        return self._plain_ids("\n".join(m["content"] for m in messages))

    def _prompt_ids(self, prompt: str) -> list[int]:
        if self.chat:
            return self.chat_prompt_ids([{"role": "user", "content": prompt}])
        return self._plain_ids(prompt)

    def _check_length(self, length: int) -> None:
        if self.max_positions is not None and length > self.max_positions:
            raise ValueError(
                f"sequence of {length} tokens exceeds the model's {self.max_positions} positions"
            )

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor, cache: Any = None) -> Any:
        kwargs = {self._cache_kw: cache} if cache is not None else {}
        return self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, **kwargs)

    def sample(
        self,
        prompts: Sequence[str],
        *,
        n: int = 1,
        temperature: float = 1.0,
        max_new_tokens: int = 32,
        stop: Sequence[str] = (),
        rng: np.random.Generator,
    ) -> Samples:
        """``n`` completions per prompt (ancestral sampling at ``temperature``; 0 = greedy), batched.

        Generation of a sequence ends at EOS, at a stop string (cut off from the returned text) or after
        ``max_new_tokens`` tokens. Returns ``out[i][j]``, completion ``j`` of prompt ``i``, as a
        :class:`~.protocol.Samples` with one usage record per prompt. With ``chat=True`` each prompt is
        one user message (see :meth:`chat_prompt_ids`).
        """
        prompts = check_sample_args(prompts, n, temperature, max_new_tokens, stop)
        return self._sample_ids([self._prompt_ids(p) for p in prompts], n, temperature, max_new_tokens, stop, rng)

    def sample_chat(
        self,
        conversations: Sequence[Sequence[Mapping[str, str]]],
        *,
        n: int = 1,
        temperature: float = 1.0,
        max_new_tokens: int = 32,
        stop: Sequence[str] = (),
        rng: np.random.Generator,
    ) -> Samples:
        """``n`` replies per conversation (a list of ``{"role", "content"}`` messages), as :meth:`sample`.

        Each conversation is rendered by :meth:`chat_prompt_ids`: through the tokenizer's chat template
        with the assistant's turn opened when the tokenizer has one, else as the plain concatenation of the
        message contents.
        """
        if isinstance(conversations, (str, Mapping)) or not isinstance(conversations, Sequence):
            raise TypeError("conversations must be a sequence of message lists")
        check_sample_args([], n, temperature, max_new_tokens, stop)
        ids = [self.chat_prompt_ids(c) for c in conversations]
        return self._sample_ids(ids, n, temperature, max_new_tokens, stop, rng)

    def _sample_ids(
        self,
        prompt_ids: list[list[int]],
        n: int,
        temperature: float,
        max_new_tokens: int,
        stop: Sequence[str],
        rng: np.random.Generator,
    ) -> Samples:
        gen = torch_generator(rng)
        flat = [ids for ids in prompt_ids for _ in range(n)]
        texts: list[str] = []
        counts: list[int] = []
        for start in range(0, len(flat), self.batch_size):
            t, c = self._generate(flat[start : start + self.batch_size], temperature, max_new_tokens, stop, gen)
            texts.extend(t)
            counts.extend(c)
        usage = [
            RequestUsage((i,), Usage.of(len(ids), sum(counts[i * n : (i + 1) * n])))
            for i, ids in enumerate(prompt_ids)
        ]
        return Samples([texts[i * n : (i + 1) * n] for i in range(len(prompt_ids))], usage)

    def _generate(
        self,
        batch: list[list[int]],
        temperature: float,
        max_new_tokens: int,
        stop: Sequence[str],
        gen: torch.Generator,
    ) -> tuple[list[str], list[int]]:
        """Completions of a batch and the number of tokens generated for each (EOS included)."""
        import torch

        width = max(len(x) for x in batch)
        self._check_length(width + max_new_tokens)
        pad = self.tokenizer.pad_id
        # Left padding, with position ids counted over real tokens only, keeps each row's logits equal to
        # those of the prompt alone.
        ids = torch.tensor(
            [[pad] * (width - len(x)) + x for x in batch], dtype=torch.long, device=self.device
        )
        mask = torch.tensor(
            [[0] * (width - len(x)) + [1] * len(x) for x in batch], dtype=torch.long, device=self.device
        )
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        out_ids: list[list[int]] = [[] for _ in batch]
        n_generated = [0] * len(batch)
        done = [False] * len(batch)
        eos = self.tokenizer.eos_id
        with torch.no_grad():
            out = self._forward(ids, mask, pos)
            for _ in range(max_new_tokens):
                logits = out.logits[:, -1, :].float().cpu()
                if temperature == 0:
                    nxt = logits.argmax(-1)
                else:
                    probs = torch.softmax(logits / temperature, dim=-1)
                    nxt = torch.multinomial(probs, 1, generator=gen).squeeze(1)
                for b, t in enumerate(nxt.tolist()):
                    if done[b]:
                        continue
                    n_generated[b] += 1
                    if eos is not None and t == eos:
                        done[b] = True
                        continue
                    out_ids[b].append(t)
                    if stop and cut_at_stop(self.tokenizer.decode(out_ids[b]), stop)[1]:
                        done[b] = True
                if all(done):
                    break
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
                pos = pos[:, -1:] + 1
                cache = getattr(out, self._cache_kw)
                out = self._forward(nxt.view(-1, 1).to(self.device), mask, pos, cache)
        return [cut_at_stop(self.tokenizer.decode(x), stop)[0] for x in out_ids], n_generated

    def token_logprobs(self, text: str) -> tuple[list[int], list[float | None], list[int]]:
        """Per-token view of ``text``: ids, log-probs (None for the first token when there is no BOS) and
        character offsets; what an OpenAI-compatible server returns for ``echo=True, logprobs=k``."""
        import torch

        encode = getattr(self.tokenizer, "encode_with_offsets", None)
        if encode is None:
            raise TypeError(f"tokenizer {type(self.tokenizer).__name__} cannot report character offsets")
        ids, offsets = encode(text)
        bos = [self.tokenizer.bos_id] if self.tokenizer.bos_id is not None else []
        seq = bos + ids
        if not seq:
            return [], [], []
        self._check_length(len(seq))
        with torch.no_grad():
            t = torch.tensor([seq], device=self.device)
            logits = self.model(input_ids=t, use_cache=False).logits.float()
            lp = torch.log_softmax(logits[0, :-1], -1).gather(-1, t[0, 1:, None]).squeeze(-1).cpu().tolist()
        vals: list[float | None] = [float(v) for v in lp]
        if not bos:
            vals = [None, *vals]
        return ids, vals, offsets

    def logprobs_of_ids(self, ids: Sequence[int]) -> list[float | None]:
        """Log-prob of each token of ``ids`` given the tokens before it (None for the first); ``ids`` is
        used as given (no BOS added). What a server returns as ``prompt_logprobs`` for a token-id prompt."""
        import torch

        seq = [int(i) for i in ids]
        if not seq:
            return []
        if min(seq) < 0 or max(seq) >= self.tokenizer.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.tokenizer.vocab_size}), got {seq[:8]}...")
        self._check_length(len(seq))
        with torch.no_grad():
            t = torch.tensor([seq], device=self.device)
            logits = self.model(input_ids=t, use_cache=False).logits.float()
            lp = torch.log_softmax(logits[0, :-1], -1).gather(-1, t[0, 1:, None]).squeeze(-1).cpu().tolist()
        return [None, *(float(v) for v in lp)]

    def score(self, prompts: Sequence[str], continuations: Sequence[str]) -> np.ndarray:
        """log p(continuation | prompt), summed over the continuation's tokens; shape ``(len(prompts),)``.

        Prompt and continuation are tokenized separately and concatenated (the convention of
        likelihood-based evaluation harnesses). An empty continuation scores 0; a non-empty one that
        covers no token (whitespace under a word-level tokenizer) is an error.
        """
        import torch

        prompts, continuations = check_score_args(prompts, continuations)
        pairs = [
            (self._prompt_ids(p), self.tokenizer.encode(c))
            for p, c in zip(prompts, continuations, strict=True)
        ]
        for i, (c, (_, ids_c)) in enumerate(zip(continuations, pairs, strict=True)):
            if c and not ids_c:
                raise ValueError(f"continuations[{i}] = {c!r} covers no token of the tokenizer")
        order = np.argsort([len(p) + len(c) for p, c in pairs], kind="stable")
        result = np.zeros(len(pairs), dtype=np.float64)
        with torch.no_grad():
            for start in range(0, len(order), self.batch_size):
                idx = [int(i) for i in order[start : start + self.batch_size]]
                seqs = [pairs[i][0] + pairs[i][1] for i in idx]
                width = max(len(s) for s in seqs)
                self._check_length(width)
                pad = self.tokenizer.pad_id
                ids = torch.tensor(
                    [s + [pad] * (width - len(s)) for s in seqs], dtype=torch.long, device=self.device
                )
                mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=self.device)
                pos = (mask.cumsum(-1) - 1).clamp(min=0)
                logits = self.model(
                    input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False
                ).logits.float()
                logp = (
                    torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1).cpu()
                )
                for row, i in enumerate(idx):
                    n_prompt, n_cont = len(pairs[i][0]), len(pairs[i][1])
                    # token t of the sequence is predicted at position t - 1
                    result[i] = float(logp[row, n_prompt - 1 : n_prompt - 1 + n_cont].double().sum())
        return result
