"""A correctness model as the paper trains it: LoRA on a Hugging Face causal LM (brief Sec. 2).

The official recipe (Qwen3-8B, LoRA r = 32, alpha = 16, dropout 0, lr 1e-5, one epoch, per-device batch 1,
gradient accumulation 4, the loss on the final yes/no token only) on *any* causal LM a user brings from a
local folder or GGUF file (``--set model=PATH``), read by :func:`icml2026.core.loaders.load_causal_lm` and
wrapped by :func:`icml2026.core.loaders.apply_lora` (peft). The CM input is the official-format prompt
(:func:`~.prompts.cm_prompt`); its "response" is the one label token after the prompt, and the loss is the
cross-entropy of that token alone (response-only loss). Confidence = softmax at the last prompt position
read at "yes" (``renorm=True`` renormalises over {yes, no}; ``renorm=False`` is what the official code does).

On several GPUs the same loop runs under ``accelerate launch`` once the model and optimizer are passed
through ``accelerate.Accelerator.prepare`` (not done here: this loop is single-device); the card names the
TRL route (``SFTTrainer`` with ``completion_only_loss``) for multi-GPU runs at the paper's scale.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from icml2026.core.progress import track
from icml2026.core.validate import as_array, as_labels, positive_int, same_length

from .prompts import cm_prompt

__all__ = ["LoraLMCM", "hf_yes_no_ids"]

Variant = Literal["answerful", "answerless", "agnostic", "with_model_name"]


def hf_yes_no_ids(tokenizer: Any, yes: str = "yes", no: str = "no") -> tuple[int, int]:
    """Token ids of "yes" and "no" for a Hugging Face tokenizer (no special tokens added); each must be
    one token (brief pitfall), and they must differ."""
    ids = []
    for word in (yes, no):
        enc = tokenizer.encode(word, add_special_tokens=False)
        if len(enc) != 1:
            raise ValueError(f"model: its tokenizer spells {word!r} as {len(enc)} tokens {enc}; the CM needs one")
        ids.append(int(enc[0]))
    if ids[0] == ids[1]:
        raise ValueError("model: its tokenizer maps 'yes' and 'no' to the same token")
    return ids[0], ids[1]


class LoraLMCM:
    """LoRA fine-tuning of a causal LM as a correctness model, loss on the yes/no token only.

    Parameters
    ----------
    model_path : a Hugging Face folder (``save_pretrained``) or a ``.gguf`` file; a fresh copy of the base
        model is loaded for every :meth:`fit` (an SCM and the GCM never share weights).
    variant : the CM prompt variant (``with_model_name`` reads each item's target name).
    r, alpha, dropout, target_modules : the LoRA adapter (paper: r = 32, alpha = 16, dropout 0; every
        linear layer: ``"all-linear"``).
    lr : AdamW learning rate of the adapter (paper: 1e-5).
    n_steps : optimizer steps; each sees ``batch_size x grad_accum`` examples (paper: one epoch, batch 1,
        accumulation 4). ``n_steps = 0`` means one epoch over the training history, cut at ``max_steps``.
    dtype : ``"float32"``, ``"bfloat16"`` or ``"float16"`` weights (bf16 on a GPU).
    device : torch device name.
    renorm : p(yes) renormalised over {yes, no} (default) or the raw softmax at "yes" (official code).
    """

    def __init__(self, model_path: str | Path, *, variant: Variant = "answerful", r: int = 32, alpha: int = 16,
                 dropout: float = 0.0, target_modules: str | Sequence[str] = "all-linear", lr: float = 1e-5,
                 n_steps: int = 0, max_steps: int | None = None, batch_size: int = 1, grad_accum: int = 4,
                 dtype: str | None = None, device: str = "cpu", renorm: bool = True, predict_batch: int = 16) -> None:
        self.model_path, self.variant = model_path, variant
        self.r, self.alpha, self.dropout, self.target_modules = r, alpha, dropout, target_modules
        self.lr, self.n_steps, self.batch_size, self.grad_accum = lr, n_steps, batch_size, grad_accum
        self.max_steps = max_steps
        self.dtype, self.device, self.renorm, self.predict_batch = dtype, device, renorm, predict_batch

    # ------------------------------------------------------------------------------------------ prompts
    def _prompts(self, questions: Sequence[str], responses: Sequence[str], targets: Sequence[str]) -> list[str]:
        if self.variant == "with_model_name":
            return [cm_prompt(q, r, variant="with_model_name", model_name=t)
                    for q, r, t in zip(questions, responses, targets, strict=True)]
        return [cm_prompt(q, r, variant=self.variant) for q, r in zip(questions, responses, strict=True)]

    def _ids(self, prompt: str) -> list[int]:
        # the tokenizer's own special tokens (a BOS where the model was trained with one)
        return [int(i) for i in self.tokenizer_.encode(prompt)]

    def _last_logits(self, model: Any, seqs: list[list[int]]) -> Any:
        """Logits at each sequence's last position (left padding, explicit positions)."""
        import torch

        width = max(len(s) for s in seqs)
        device = next(p for p in model.parameters()).device
        ids = torch.tensor([[self.pad_id_] * (width - len(s)) + s for s in seqs], device=device)
        mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], device=device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        return model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False).logits[:, -1, :]

    # ---------------------------------------------------------------------------------------------- fit
    def fit(self, questions: Sequence[str], responses: Sequence[str], targets: Sequence[str], labels: object,
            rng: np.random.Generator) -> LoraLMCM:
        """Load the base model, add LoRA adapters and train them on the graded history."""
        import torch

        from icml2026.core.loaders import apply_lora, load_causal_lm

        y = as_labels(labels, "labels", binary=True)
        same_length(questions=questions, responses=responses, targets=targets, labels=y)
        positive_int(self.batch_size, "batch_size")
        positive_int(self.grad_accum, "grad_accum")
        loaded = load_causal_lm(self.model_path, dtype=self.dtype, device=self.device)
        self.tokenizer_ = loaded.tokenizer
        self.yes_id_, self.no_id_ = hf_yes_no_ids(self.tokenizer_)
        pad = self.tokenizer_.pad_token_id
        self.pad_id_ = int(pad if pad is not None else (self.tokenizer_.eos_token_id or 0))
        seqs = [self._ids(p) for p in self._prompts(questions, responses, targets)]
        limit = getattr(loaded.model.config, "max_position_embeddings", None) or getattr(
            loaded.model.config, "n_positions", None)
        if limit is not None and max(len(s) for s in seqs) > limit:
            raise ValueError(f"model: a CM prompt has {max(len(s) for s in seqs)} tokens, the model {limit} positions")
        self.cm_ = apply_lora(loaded.model, r=self.r, alpha=self.alpha, target_modules=self.target_modules,
                              dropout=self.dropout, task_type="CAUSAL_LM")
        self.cm_.train()
        params = [p for p in self.cm_.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=0.0)
        per_step = self.batch_size * self.grad_accum
        n_steps = self.n_steps if self.n_steps > 0 else max(1, len(seqs) // per_step)  # 0: one epoch
        if self.max_steps is not None:
            n_steps = min(n_steps, positive_int(self.max_steps, "max_steps"))
        # one epoch = one pass over a seeded permutation (the paper's shuffled single epoch); longer runs
        # draw further permutations
        order = np.concatenate([rng.permutation(len(seqs)) for _ in range(-(-n_steps * per_step // len(seqs)))])
        device = next(iter(params)).device
        target = torch.tensor([self.yes_id_ if v else self.no_id_ for v in y], device=device)
        self.losses_ = np.zeros(n_steps)
        steps = track(range(n_steps), "LoRA CM fine-tuning") if n_steps > 50 else range(n_steps)
        for step in steps:
            opt.zero_grad()
            total = 0.0
            for micro in range(self.grad_accum):
                start = (step * self.grad_accum + micro) * self.batch_size
                idx = order[start : start + self.batch_size]
                logits = self._last_logits(self.cm_, [seqs[int(i)] for i in idx]).float()
                # the response-only loss: cross-entropy of the label token after the prompt, nothing else
                loss = torch.nn.functional.cross_entropy(logits, target[torch.from_numpy(idx).to(device)])
                (loss / self.grad_accum).backward()
                total += float(loss.detach()) / self.grad_accum
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            self.losses_[step] = total
        self.cm_.eval()
        return self

    # ------------------------------------------------------------------------------------------ predict
    def prob_yes_with(self, model: Any, questions: Sequence[str], responses: Sequence[str],
                      targets: Sequence[str], *, renorm: bool | None = None) -> np.ndarray:
        """p(yes) of ``model`` (the adapter model, or a merged copy of it) on the CM prompts."""
        import torch

        same_length(questions=questions, responses=responses, targets=targets)
        renorm = self.renorm if renorm is None else renorm
        seqs_all = [self._ids(p) for p in self._prompts(questions, responses, targets)]
        out = np.zeros(len(seqs_all))
        with torch.no_grad():
            for start in range(0, len(seqs_all), self.predict_batch):
                seqs = seqs_all[start : start + self.predict_batch]
                probs = torch.softmax(self._last_logits(model, seqs).double(), -1)
                py, pn = probs[:, self.yes_id_], probs[:, self.no_id_]
                out[start : start + len(seqs)] = (py / (py + pn) if renorm else py).cpu().numpy()
        return as_array(out, "p_yes", lo=0.0, hi=1.0)

    def predict(self, questions: Sequence[str], responses: Sequence[str], targets: Sequence[str], *,
                renorm: bool | None = None) -> np.ndarray:
        """p(yes) for each (question, response, target) from the trained adapter."""
        return self.prob_yes_with(self.cm_, questions, responses, targets, renorm=renorm)

    def merged_model(self) -> Any:
        """A copy of the base model with the trained adapter merged into its weights (peft
        ``merge_and_unload``); the adapter model itself is left as it is."""
        return copy.deepcopy(self.cm_).merge_and_unload()
