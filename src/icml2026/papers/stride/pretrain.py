"""Stage 0 of the CPU-scale reproduction: a tiny pretrained model of the edit language.

The paper post-trains a pretrained LLM (Qwen3-14B), which already copies and indexes its prompt. Our tiny
policy starts from random weights; trained on a task's few hundred pairs alone, it learns the task's ancestor
instead of reading the source (issue 57: teacher-forced output accuracy 0.958 on training pairs vs 0.774 on
held-out ones). :func:`pretrain_edit_lm` gives it that ability on *generic* data only: random sequences over
the union of both tasks' alphabets, each with a random 1-3-action variant, written in both completion
formats (STRIDE's ``<edit_traj> ... </edit_traj> x_out`` and Vanilla SFT's ``<out> x_out``), fitness and
chemistry ignored. No task, oracle or instruction is seen. Its output, saved with ``save_pretrained`` and
its word-level tokenizer, is then loaded like any checkpoint (``--set model=PATH``).

# Deviation: Stage 0 stands in for the LLM's pretraining; the paper has no such stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .edits import apply_script, random_edits, shortest_edit_script
from .policy import (
    EditCodec,
    EditVocab,
    PolicyConfig,
    SFTConfig,
    build_policy,
    completion_logprobs,
    cosine_lr,
    save_policy,
)
from .rewards import AMINO_ACIDS, INSTRUCTIONS

__all__ = ["smiles_alphabet", "shared_vocab", "PretrainConfig", "generic_pairs", "teacher_forced_exact",
           "pretrain_edit_lm"]


def smiles_alphabet() -> list[str]:
    """The SMILES tokens of every molecule the molecule task can build (scaffolds x substituents)."""
    from .data import SCAFFOLDS, SUBSTITUENTS
    from .edits import tokenize_smiles

    return sorted({t for sc in SCAFFOLDS for a in SUBSTITUENTS for b in SUBSTITUENTS
                   for t in tokenize_smiles(sc.format(f"({a})" if a else "", b))})


def shared_vocab() -> EditVocab:
    """One vocabulary for both tasks: amino acids, the molecule task's SMILES tokens and every instruction."""
    return EditVocab(list(AMINO_ACIDS) + smiles_alphabet(), n_positions=64, instructions=sorted(INSTRUCTIONS))


@dataclass(frozen=True)
class PretrainConfig:
    """Stage 0 (generic edit-language pretraining) of the tiny policy."""

    family: str = "llama"  # rotary positions: the copy ("the token after the one just written") is relative
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    max_len: int = 192
    min_length: int = 6
    max_length: int = 24
    n_steps: int = 2500
    batch_size: int = 32
    lr: float = 3e-3
    warmup: int = 100


def generic_pairs(vocab: EditVocab, n: int, min_length: int, max_length: int, rng: np.random.Generator
                  ) -> list[tuple[list[str], list[str]]]:
    """``n`` (source, variant) pairs: a random sequence over one of the two alphabets (amino acids or the
    SMILES tokens), ``min_length..max_length`` long, and it after 1-3 random actions."""
    amino = list(AMINO_ACIDS)
    other = smiles_alphabet()
    out: list[tuple[list[str], list[str]]] = []
    while len(out) < n:
        alpha = amino if rng.random() < 0.5 else other
        src = [alpha[int(i)] for i in rng.integers(0, len(alpha), size=int(rng.integers(min_length, max_length + 1)))]
        tgt = list(apply_script(src, random_edits(src, int(rng.integers(1, 4)), alpha, rng)))
        if tgt != src and len(tgt) < vocab.n_positions:
            out.append((src, tgt))
    return out


@torch.no_grad()
def teacher_forced_exact(model: Any, codec: EditCodec, pairs: Sequence[tuple[Sequence[str], Sequence[str], int | None]],
                         batch_size: int = 64) -> float:
    """Fraction of ``(src, tgt, instruction)`` pairs whose written output (``x_out EOS``, after the shortest
    trajectory, both teacher-forced) is the arg-max at every position: then greedy decoding writes exactly
    ``tgt``. It measures that the model copies the source and applies the edits it wrote."""
    if not pairs:
        raise ValueError("pairs: needs at least one pair")
    dev = next(model.parameters()).device
    ok = 0
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        rows, spans = [], []
        for src, tgt, ins in chunk:
            head, tail = codec.trajectory_parts(shortest_edit_script(src, tgt), tgt)
            p = codec.prompt(src, ins)
            rows.append(p + head + tail)
            spans.append((len(p) + len(head), len(tail)))
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [codec.pad_id] * (width - len(r)) for r in rows], device=dev)
        att = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=dev)
        pred = model(input_ids=ids, attention_mask=att, use_cache=False).logits.argmax(-1)
        for r, (a, n) in enumerate(spans):
            ok += bool(torch.equal(pred[r, a - 1:a - 1 + n], ids[r, a:a + n]))
    return ok / len(pairs)


def pretrain_edit_lm(cfg: PretrainConfig, rng: np.random.Generator, *, out: str | Path | None = None,
                     eval_every: int = 500, log: Any = None, init: str | Path | None = None,
                     stop_after: int | None = None) -> tuple[Any, EditCodec, list[dict[str, float]]]:
    """Train the tiny policy on fresh generic pairs each step (both completion formats, source indexed).

    Returns the model, its codec and the evaluation history (teacher-forced exact output on 256 fresh
    held-out amino-acid pairs of length 12 and 24). With ``out`` the model and its tokenizer are saved there
    (``save_pretrained``) after every evaluation. ``init``: a folder saved by an earlier call to train on
    (a second schedule of ``cfg.n_steps`` steps; the architecture fields are then the folder's).
    ``stop_after``: stop after that many steps of the ``cfg.n_steps`` schedule (the shipped checkpoint is
    1,500 steps of a 2,500-step schedule).
    """
    vocab = shared_vocab()
    codec = EditCodec(vocab.tokenizer(), vocab, index_source=True)
    gen = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))
    if init is not None:
        from .policy import load_policy

        model, _ = load_policy(init)
    else:
        model = build_policy(vocab, PolicyConfig(cfg.family, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.max_len),
                             gen)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    held = {L: [(s, t, None) for s, t in generic_pairs(vocab, 256, L, L, rng) if all(c in AMINO_ACIDS for c in s)]
            for L in (12, 24)}
    sft = SFTConfig(n_steps=cfg.n_steps, batch_size=cfg.batch_size, lr=cfg.lr, warmup=cfg.warmup)
    history: list[dict[str, float]] = []
    model.train()
    for step in range(cfg.n_steps if stop_after is None else min(stop_after, cfg.n_steps)):
        pairs = generic_pairs(vocab, cfg.batch_size, cfg.min_length, cfg.max_length, rng)
        prompts, comps = [], []
        for k, (s, t) in enumerate(pairs):
            prompts.append(codec.prompt(s))
            comps.append(codec.trajectory_completion(shortest_edit_script(s, t), t) if k % 2 == 0
                         else codec.direct_completion(t))
        for g in opt.param_groups:
            g["lr"] = cosine_lr(step, sft.n_steps, sft.warmup, sft.lr)
        logp, mask = completion_logprobs(model, prompts, comps, codec.pad_id)
        loss = -(logp.sum() / mask.sum())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if (step + 1) % eval_every == 0 or step + 1 in (cfg.n_steps, stop_after):
            model.eval()
            rec = {"step": float(step + 1), "loss": float(loss.detach())}
            for L, pairs_l in held.items():
                rec[f"tf_exact_L{L}"] = teacher_forced_exact(model, codec, pairs_l)
            history.append(rec)
            if log is not None:
                log(rec)
            if out is not None:
                save_policy(model, codec.tokenizer, out)
            model.train()
    model.eval()
    return model, codec, history


if __name__ == "__main__":  # python -m icml2026.papers.stride.pretrain --steps 2500 --stop-after 1500 --out DIR
    import argparse
    import json
    import sys
    import time

    ap = argparse.ArgumentParser(description="Stage 0: pretrain the tiny edit-language model on generic edits "
                                 "and save it (model + word-level tokenizer) with save_pretrained.")
    ap.add_argument("--steps", type=int, default=PretrainConfig.n_steps)
    ap.add_argument("--out", required=True, help="folder to save into (after every evaluation)")
    ap.add_argument("--init", default=None, help="continue from a folder saved by this command")
    ap.add_argument("--stop-after", type=int, default=None, help="stop after this many steps of the schedule")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.steps < 1 or args.eval_every < 1 or args.threads < 1:
        ap.error("--steps, --eval-every and --threads must be >= 1")
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()

    def _log(rec: dict[str, float]) -> None:
        sys.stdout.write(json.dumps({**rec, "wall_s": round(time.perf_counter() - t0, 1)}) + "\n")
        sys.stdout.flush()

    pretrain_edit_lm(PretrainConfig(n_steps=args.steps), np.random.default_rng(args.seed), out=args.out,
                     eval_every=args.eval_every, log=_log, init=args.init, stop_after=args.stop_after)
