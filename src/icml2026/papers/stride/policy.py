"""The policy: a small Hugging Face causal LM over STRIDE's vocabulary, its sampler and its SFT stage.

- :class:`EditVocab`: the brief's vocabulary (sequence tokens, ``INSERT/DELETE/REPLACE``, ``with``, ``;``,
  position tokens ``P0..P63`` rendered as "at position k", ``<src> <ins> <edit_traj> </edit_traj> <out>
  <eos> <pad>`` and instruction tokens). Its :meth:`EditVocab.decode_completion` turns generated ids into the
  official textual format, which the parser then reads, so the consistency gate sees exactly what a text
  model would write.
- :meth:`EditVocab.tokenizer`: the vocabulary as a real tokenizer (a ``tokenizers`` word-level model in a
  ``transformers.PreTrainedTokenizerFast``, saved with the checkpoint), whose ids are the vocabulary's.
- :class:`EditCodec`: the task's texts (prompt, trajectory completion, direct completion) through *any*
  Hugging Face tokenizer, and generated ids back to the official text. The tiny model (with
  :meth:`EditVocab.tokenizer`) and a real causal LM (with its own tokenizer) go through the same code.
- :func:`build_policy`: a GPT-2 class model (learned position embeddings) from a ``transformers`` config via
  ``icml2026.core.textgen.build_tiny_causal_lm``; :func:`save_policy` / :func:`load_policy` go through
  ``save_pretrained`` and ``icml2026.core.loaders.load_causal_lm`` on a plain local folder (model and
  tokenizer: a real checkpoint loads the same way).
- :func:`sample`: temperature / top-p sampling with the KV cache (or, for the benchmark, without it).
- :func:`completion_logprobs`: per-token log-probabilities of completions given prompts (prompt and padding
  masked out).
- :func:`sft_train`: Stage I (Sec. 3.3), token-level NLL on the completion only, AdamW with linear warm-up
  and cosine decay.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from icml2026.core.progress import track
from icml2026.core.textgen import TinyLMConfig, build_tiny_causal_lm

from .edits import TRAJ_CLOSE, TRAJ_OPEN, Edit

__all__ = [
    "EditVocab",
    "EditCodec",
    "PolicyConfig",
    "SFTConfig",
    "build_policy",
    "save_policy",
    "load_policy",
    "sample",
    "completion_logprobs",
    "sft_train",
    "official_text",
    "is_adapted",
    "AdapterDisabled",
]

_SPECIALS = ("<pad>", "<bos>", "<eos>", "<src>", "<ins>", TRAJ_OPEN, TRAJ_CLOSE, "<out>", "<unk>")
_OPS = ("INSERT", "DELETE", "REPLACE", "with", ";")


class EditVocab:
    """Closed vocabulary of one task (:class:`~icml2026.core.textgen.TokenizerLike`: ``encode`` / ``decode``
    map space-separated token names to ids and back)."""

    FILE_NAME = "stride_vocab.json"

    def __init__(self, alphabet: Sequence[str], n_positions: int = 64, instructions: Sequence[int] = ()) -> None:
        alpha = list(dict.fromkeys(alphabet))
        if not alpha or not all(isinstance(a, str) and a and not any(c.isspace() for c in a) for a in alpha):
            raise ValueError("alphabet: needs non-empty tokens without whitespace")
        reserved = set(_SPECIALS) | set(_OPS)
        if reserved & set(alpha):
            raise ValueError(f"alphabet: tokens {sorted(reserved & set(alpha))} are reserved")
        if isinstance(n_positions, bool) or not isinstance(n_positions, int) or not 1 <= n_positions <= 4096:
            raise ValueError(f"n_positions = {n_positions!r}: must be an integer in [1, 4096]")
        self.alphabet, self.n_positions = alpha, n_positions
        self.instructions = [int(i) for i in instructions]
        self.tokens = (list(_SPECIALS) + list(_OPS) + [f"P{k}" for k in range(n_positions)]
                       + [f"<I{i}>" for i in self.instructions] + alpha)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.pad_id, self.bos_id, self.eos_id = self.index["<pad>"], self.index["<bos>"], self.index["<eos>"]
        self._alpha_set = set(alpha)
        self.close_id = self.index[TRAJ_CLOSE]

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        try:
            return [self.index[w] for w in text.split()]
        except KeyError as exc:
            raise ValueError(f"text: unknown token {exc.args[0]!r}") from None

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.tokens[int(i)] for i in ids)

    # ---- task-level encodings ----
    def _seq_ids(self, seq: str | Sequence[str], name: str) -> list[int]:
        toks = list(seq)
        bad = [t for t in toks if t not in self._alpha_set]
        if bad:
            raise ValueError(f"{name}: tokens {sorted(set(map(str, bad)))[:5]} are not in the alphabet")
        return [self.index[t] for t in toks]

    def prompt(self, src: str | Sequence[str], instruction: int | None = None) -> list[int]:
        """``<bos> <src> x_src [<ins> <I_id>]``."""
        ids = [self.bos_id, self.index["<src>"]] + self._seq_ids(src, "src")
        if instruction is not None:
            key = f"<I{int(instruction)}>"
            if key not in self.index:
                raise ValueError(f"instruction = {instruction!r}: not in this vocabulary")
            ids += [self.index["<ins>"], self.index[key]]
        return ids

    def trajectory_completion(self, script: Sequence[Edit], out: str | Sequence[str]) -> list[int]:
        """``<edit_traj> a_1 ; ... ; a_T </edit_traj> x_out <eos>`` as ids (Sec. 3.3)."""
        ids = [self.index[TRAJ_OPEN]]
        for t, e in enumerate(script):
            if e.pos >= self.n_positions:
                raise ValueError(f"script: position {e.pos} exceeds the vocabulary's P0..P{self.n_positions - 1}")
            if t:
                ids.append(self.index[";"])
            ids.append(self.index[e.op])
            if e.op == "INSERT":
                ids += self._seq_ids([e.new], "script")  # type: ignore[list-item]
            elif e.op == "DELETE":
                ids += self._seq_ids([e.old], "script")  # type: ignore[list-item]
            else:
                ids += self._seq_ids([e.old], "script") + [self.index["with"]] + self._seq_ids([e.new], "script")  # type: ignore[list-item]
            ids.append(self.index[f"P{e.pos}"])
        return ids + [self.close_id] + self._seq_ids(out, "out") + [self.eos_id]

    def direct_completion(self, out: str | Sequence[str]) -> list[int]:
        """``<out> x_out <eos>``: the Vanilla-SFT completion (the target written directly)."""
        return [self.index["<out>"]] + self._seq_ids(out, "out") + [self.eos_id]

    def decode_completion(self, ids: Sequence[int]) -> str:
        """Generated ids (cut at ``<eos>``) as text: trajectory tokens joined by spaces (``P_k`` -> "at position
        k"), everything after ``</edit_traj>`` / ``<out>`` concatenated (the written sequence)."""
        words: list[str] = []
        tail: list[str] = []
        in_tail = False
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            tok = self.tokens[i]
            if in_tail:
                tail.append(tok)
                continue
            if tok == TRAJ_CLOSE:
                words.append(tok)
                in_tail = True
            elif tok == "<out>":
                in_tail = True
            elif tok.startswith("P") and tok[1:].isdigit():
                words.append(f"at position {tok[1:]}")
            else:
                words.append(tok)
        head = " ".join(words)
        body = "".join(tail)
        return f"{head} {body}".strip() if head else body

    def tokenizer(self) -> Any:
        """The vocabulary as a ``transformers.PreTrainedTokenizerFast`` over a ``tokenizers`` word-level model
        (whitespace-split words, ids = this vocabulary's ids; ``<bos> <eos> <pad> <unk>`` are its special
        tokens). ``save_pretrained`` writes it beside the model, and ``AutoTokenizer`` reads it back."""
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
        from transformers import PreTrainedTokenizerFast

        tok = Tokenizer(models.WordLevel(vocab=dict(self.index), unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with single spaces
        return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>",
                                       pad_token="<pad>", unk_token="<unk>", clean_up_tokenization_spaces=False)

    def save(self, folder: str | Path) -> None:
        Path(folder, self.FILE_NAME).write_text(json.dumps(
            {"alphabet": self.alphabet, "n_positions": self.n_positions, "instructions": self.instructions}))

    @classmethod
    def load(cls, folder: str | Path) -> EditVocab:
        path = Path(folder, cls.FILE_NAME)
        if not path.is_file():
            raise ValueError(f"folder: {folder} holds no {cls.FILE_NAME}")
        d = json.loads(path.read_text())
        return cls(d["alphabet"], d["n_positions"], d["instructions"])


def official_text(words: Sequence[str]) -> str:
    """Generated words (whitespace-split text of the edit language) as the official text that
    :func:`~.edits.parse_completion` reads: trajectory words joined by spaces (``P<k>`` -> "at position k"),
    every word after ``</edit_traj>`` / ``<out>`` concatenated (the written sequence)."""
    head: list[str] = []
    tail: list[str] = []
    in_tail = False
    for tok in words:
        if in_tail:
            tail.append(tok)
        elif tok == TRAJ_CLOSE:
            head.append(tok)
            in_tail = True
        elif tok == "<out>":
            in_tail = True
        elif tok.startswith("P") and tok[1:].isdigit():
            head.append(f"at position {tok[1:]}")
        else:
            head.append(tok)
    h, body = " ".join(head), "".join(tail)
    return f"{h} {body}".strip() if h else body


class EditCodec:
    """The edit language through a Hugging Face tokenizer: prompts and completions as ids, ids back to text.

    Texts are whitespace-separated words of :class:`EditVocab` (``<src> A C D <ins> <I101>``, or with
    ``index_source`` ``<src> P0 A P1 C P2 D <ins> <I101>``;
    ``<edit_traj> REPLACE C with W P1 ; DELETE D P2 </edit_traj> A W``; ``<out> A W``), encoded by
    ``tokenizer`` without its own special tokens; a prompt starts with the tokenizer's BOS (if it has one)
    and a completion ends with its EOS. With :meth:`EditVocab.tokenizer` the ids are exactly the
    vocabulary's; with a real model's tokenizer (BPE, SentencePiece) the same texts are encoded its way,
    and :meth:`decode_completion` reads the model's text back through :func:`official_text`.
    """

    def __init__(self, tokenizer: Any, vocab: EditVocab, index_source: bool = False) -> None:
        for attr in ("encode", "decode", "eos_token_id"):
            if not hasattr(tokenizer, attr):
                raise ValueError(f"tokenizer: {type(tokenizer).__name__} has no {attr} (a Hugging Face tokenizer)")
        if tokenizer.eos_token_id is None:
            raise ValueError("tokenizer: has no EOS token (completions must end with one)")
        self.tokenizer, self.vocab, self.index_source = tokenizer, vocab, bool(index_source)
        self.eos_id = int(tokenizer.eos_token_id)
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_id = int(pad) if pad is not None else self.eos_id
        bos = getattr(tokenizer, "bos_token_id", None)
        self._bos = [int(bos)] if bos is not None else []

    def _ids(self, text: str) -> list[int]:
        return [int(i) for i in self.tokenizer.encode(text, add_special_tokens=False)]

    def prompt(self, src: str | Sequence[str], instruction: int | None = None) -> list[int]:
        """``BOS <src> x_src [<ins> <I_id>]``; with ``index_source`` each source token is preceded by its
        position word (``<src> P0 A P1 C ...``)."""
        self.vocab._seq_ids(src, "src")  # the alphabet check, with the vocabulary's message
        toks = list(src)
        if self.index_source and len(toks) > self.vocab.n_positions:
            raise ValueError(f"src: {len(toks)} tokens exceed the vocabulary's P0..P{self.vocab.n_positions - 1}")
        words = ["<src>", *([w for k, t in enumerate(toks) for w in (f"P{k}", t)] if self.index_source else toks)]
        if instruction is not None:
            if int(instruction) not in self.vocab.instructions:
                raise ValueError(f"instruction = {instruction!r}: not in this vocabulary")
            words += ["<ins>", f"<I{int(instruction)}>"]
        return self._bos + self._ids(" ".join(words))

    def trajectory_parts(self, script: Sequence[Edit], out: str | Sequence[str]) -> tuple[list[int], list[int]]:
        """(``<edit_traj> a_1 ; ... ; a_T </edit_traj>``, ``x_out EOS``) as ids, encoded apart so that the
        written output's tokens can be told from the trajectory's (the Stage I copy precondition)."""
        words = self.vocab.decode(self.vocab.trajectory_completion(script, out)[:-1]).split()  # checks the script
        k = words.index(TRAJ_CLOSE) + 1
        return self._ids(" ".join(words[:k])), self._ids(" " + " ".join(words[k:])) + [self.eos_id]

    def trajectory_completion(self, script: Sequence[Edit], out: str | Sequence[str]) -> list[int]:
        """``<edit_traj> a_1 ; ... ; a_T </edit_traj> x_out EOS`` (Sec. 3.3)."""
        head, tail = self.trajectory_parts(script, out)
        return head + tail

    def direct_completion(self, out: str | Sequence[str]) -> list[int]:
        """``<out> x_out EOS``: the Vanilla-SFT completion."""
        return self._ids(self.vocab.decode(self.vocab.direct_completion(out)[:-1])) + [self.eos_id]

    def decode_completion(self, ids: Sequence[int]) -> str:
        """Generated ids (cut at EOS) as the official text."""
        cut: list[int] = []
        for i in ids:
            if int(i) == self.eos_id:
                break
            cut.append(int(i))
        text = self.tokenizer.decode(cut, skip_special_tokens=False)
        return official_text(text.split())


@dataclass(frozen=True)
class PolicyConfig:
    """Shape of the policy (brief: 4 layers, d = 128, 4 heads, learned positions, ~1M parameters).
    ``family``: ``gpt2`` (learned absolute positions, the brief's) or ``llama`` (rotary positions)."""

    family: str = "gpt2"
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    max_len: int = 128


def build_policy(vocab: EditVocab, cfg: PolicyConfig, generator: torch.Generator) -> Any:
    """A fresh causal LM (``transformers.GPT2LMHeadModel`` or ``LlamaForCausalLM`` from a config) over ``vocab``."""
    model = build_tiny_causal_lm(
        TinyLMConfig(family=cfg.family, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                     max_len=cfg.max_len, gpt2_activation="gelu_pytorch_tanh"), cast(Any, vocab), generator)
    model.eval()
    return model


def save_policy(model: Any, tokenizer: Any, folder: str | Path) -> None:
    """``save_pretrained`` of the model and its tokenizer (for the tiny policy, :meth:`EditVocab.tokenizer`)
    into a plain local folder, as any Hugging Face checkpoint is saved."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def load_policy(folder: str | Path, *, dtype: str | None = None, device: str = "cpu", key: str = "model"
                ) -> tuple[Any, Any]:
    """A causal LM and its tokenizer from a plain Hugging Face folder (``save_pretrained`` output, a real
    checkpoint or the tiny policy), through :func:`icml2026.core.loaders.load_causal_lm` (never downloaded).

    Raises :class:`~icml2026.core.errors.BadInput` naming ``key`` and the path when the folder is missing or
    holds no causal LM with a tokenizer.
    """
    from icml2026.core.loaders import load_causal_lm

    lm = load_causal_lm(folder, dtype=dtype, device=device, key=key)
    return lm.model, lm.tokenizer


def _cache_kw(model: Any) -> str:
    import inspect

    model = getattr(model, "wrapped", model)
    if is_adapted(model):
        model = model.get_base_model()
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def is_adapted(model: Any) -> bool:
    """Whether ``model`` carries peft adapters (LoRA) that can be switched off."""
    return hasattr(model, "disable_adapter") and hasattr(model, "peft_config")


class AdapterDisabled(torch.nn.Module):
    """A peft model seen with its adapters switched off: the model under them (pi_ref, or STRIDE-SFT when
    Stage II trains a LoRA adapter on the merged Stage I model), without a copy of its weights."""

    def __init__(self, peft_model: Any) -> None:
        super().__init__()
        if not is_adapted(peft_model):
            raise ValueError("peft_model: has no adapters to disable")
        self.wrapped = peft_model

    @property
    def config(self) -> Any:
        return self.wrapped.config

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        with self.wrapped.disable_adapter():
            return self.wrapped(*args, **kwargs)


def _max_positions(model: Any) -> int:
    c = model.config
    return int(getattr(c, "n_positions", None) or c.max_position_embeddings)


@torch.no_grad()
def sample(
    model: Any, prompts: Sequence[Sequence[int]], *, n: int, max_new_tokens: int, eos_id: int, pad_id: int,
    generator: torch.Generator, temperature: float = 1.0, top_p: float = 1.0, use_cache: bool = True,
    batch_size: int = 256,
) -> list[list[int]]:
    """``n`` completions (ids up to and including ``<eos>`` when emitted) for each prompt, prompt-major.

    Prompts are left-padded with position ids counted from each prompt's first real token; with
    ``use_cache`` each step feeds one token through the KV cache, otherwise the whole prefix is recomputed.
    Tensors live on the model's device; the next token is drawn on the CPU with ``generator``, so a seed gives
    the same draws from the same probabilities on every device.
    """
    if n < 1 or max_new_tokens < 1 or not (temperature > 0) or not (0 < top_p <= 1):
        raise ValueError("n and max_new_tokens must be >= 1, temperature > 0 and top_p in (0, 1]")
    rows = [list(p) for p in prompts for _ in range(n)]
    if not rows or any(len(r) == 0 for r in rows):
        raise ValueError("prompts: needs at least one non-empty prompt")
    limit = _max_positions(model)
    if max(len(r) for r in rows) + max_new_tokens > limit:
        raise ValueError(f"max_new_tokens = {max_new_tokens}: prompt + completion exceed the model's {limit} positions")
    kw = _cache_kw(model)
    dev = next(model.parameters()).device
    out: list[list[int]] = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        width = max(len(r) for r in chunk)
        ids = torch.tensor([[pad_id] * (width - len(r)) + r for r in chunk], device=dev)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in chunk], device=dev)
        done = torch.zeros(len(chunk), dtype=torch.bool, device=dev)
        gen = torch.full((len(chunk), max_new_tokens), pad_id, dtype=torch.long, device=dev)
        cache = None
        cur_ids = ids
        for t in range(max_new_tokens):
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            if use_cache:
                extra: dict[str, Any] = {kw: cache} if cache is not None else {}
                res = model(input_ids=cur_ids, attention_mask=mask, position_ids=pos[:, -cur_ids.shape[1]:],
                            use_cache=True, **extra)
                cache = getattr(res, kw)
            else:
                full = torch.cat([ids, gen[:, :t]], dim=1)
                res = model(input_ids=full, attention_mask=mask, position_ids=pos, use_cache=False)
            logits = res.logits[:, -1, :].float() / temperature
            probs = torch.softmax(logits, dim=-1)
            if top_p < 1.0:
                sp, si = torch.sort(probs, dim=-1, descending=True)
                drop = sp.cumsum(-1) - sp > top_p  # keep the smallest prefix with mass >= top_p
                sp = sp.masked_fill(drop, 0.0)
                probs = torch.zeros_like(probs).scatter(-1, si, sp)
            nxt = torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(1).to(dev)  # CPU draw
            nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
            gen[:, t] = nxt
            done |= nxt == eos_id
            mask = torch.cat([mask, torch.ones(len(chunk), 1, dtype=mask.dtype, device=dev)], dim=1)
            cur_ids = nxt.view(-1, 1)
            if bool(done.all()):
                break
        for row in gen.tolist():
            comp = []
            for tok in row:
                if tok == eos_id:  # before pad: a tokenizer may pad with its EOS
                    comp.append(tok)
                    break
                if tok == pad_id:
                    break
                comp.append(tok)
            out.append(comp)
    return out


def _pack(prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], pad_id: int
          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids, attention mask, completion mask) of right-padded ``prompt + completion`` rows; the completion
    mask marks the positions whose *next* token is a completion token (aligned with ``logits[:, :-1]``)."""
    seqs = [list(p) + list(c) for p, c in zip(prompts, completions, strict=True)]
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    att = torch.zeros((len(seqs), width), dtype=torch.long)
    cmask = torch.zeros((len(seqs), width - 1), dtype=torch.float32)
    for r, (p, s) in enumerate(zip(prompts, seqs, strict=True)):
        ids[r, :len(s)] = torch.tensor(s)
        att[r, :len(s)] = 1
        cmask[r, len(p) - 1:len(s) - 1] = 1.0
    return ids, att, cmask


def completion_logprobs(model: Any, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]],
                        pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(log pi(o_t | q, o_<t), mask), both ``(B, T-1)``: per-token log-probabilities of each completion token
    (entries outside the completion are 0 and masked)."""
    if len(prompts) != len(completions) or not prompts:
        raise ValueError("prompts and completions: need equal, non-zero lengths")
    if any(len(c) == 0 for c in completions) or any(len(p) == 0 for p in prompts):
        raise ValueError("completions: every prompt and completion needs at least one token")
    dev = next(model.parameters()).device
    ids, att, cmask = (t.to(dev) for t in _pack(prompts, completions, pad_id))
    logits = model(input_ids=ids, attention_mask=att, use_cache=False).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    return logp * cmask, cmask


@dataclass(frozen=True)
class SFTConfig:
    """Stage I hyper-parameters (paper: LoRA r=32 on Qwen3-14B, lr 5e-5 cosine, warm-up 20, 5 epochs)."""

    n_steps: int = 600
    batch_size: int = 64
    lr: float = 1e-3  # Deviation: full fine-tune of a ~1M-parameter model from scratch, not LoRA at 5e-5
    warmup: int = 20
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    grad_accum: int = 1  # micro-batches per step (the batch is split; the gradient is the whole batch's)


def cosine_lr(step: int, n_steps: int, warmup: int, lr: float) -> float:
    """Linear warm-up for ``warmup`` steps, then cosine decay to 0 (the official ``lr_scheduler: cosine``)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    frac = (step - warmup) / max(1, n_steps - warmup)
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, frac)))


def sft_train(model: Any, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], pad_id: int,
              cfg: SFTConfig, rng: np.random.Generator, desc: str = "SFT") -> np.ndarray:
    """Stage I: minimise the token-level NLL of the completions (prompt masked out), in place.

    Batches run through shuffled epochs drawn with ``rng``. Returns the per-step loss (nats/token).
    """
    if len(prompts) != len(completions) or not prompts:
        raise ValueError("prompts and completions: need equal, non-zero lengths")
    limit = _max_positions(model)
    longest = max(len(p) + len(c) for p, c in zip(prompts, completions, strict=True))
    if longest > limit:
        raise ValueError(f"prompts: a training sequence has {longest} tokens but the model has {limit} positions")
    if cfg.grad_accum < 1 or cfg.grad_accum > cfg.batch_size:
        raise ValueError(f"grad_accum = {cfg.grad_accum}: must be in [1, batch_size = {cfg.batch_size}]")
    params = [p for p in model.parameters() if p.requires_grad]  # LoRA: the adapters only
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    losses = np.zeros(cfg.n_steps)
    order: list[int] = []
    model.train()
    for step in track(range(cfg.n_steps), desc):
        if len(order) < cfg.batch_size:
            order += rng.permutation(len(prompts)).tolist()
        batch, order = order[:cfg.batch_size], order[cfg.batch_size:]
        for g in opt.param_groups:
            g["lr"] = cosine_lr(step, cfg.n_steps, cfg.warmup, cfg.lr)
        n_tok = float(sum(len(completions[i]) for i in batch))
        opt.zero_grad()
        total = 0.0
        for micro in np.array_split(np.asarray(batch), cfg.grad_accum):
            logp, _ = completion_logprobs(model, [prompts[i] for i in micro], [completions[i] for i in micro],
                                          pad_id)
            loss = -(logp.sum() / n_tok)  # the micro-batches' losses add up to the batch's token mean
            loss.backward()
            total += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        losses[step] = total
    model.eval()
    return losses
