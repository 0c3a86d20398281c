"""Five small model families trained from scratch on (prompt, answer) lines (brief Sec. 6).

Every family maps a prompt to a distribution over a given list of answer options; sampling at temperature
1 draws from it. For the language models this is the model's probability of ``" <option> ."`` renormalised
over the options, i.e. exact constrained decoding over the valid answers.
# Deviation: answers are sampled from the LM's distribution restricted to the valid options (constrained
# decoding) instead of free generation + parsing, which the text pipeline (pipeline.py) exercises separately.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from typing import Any, cast

import numpy as np
from scipy import sparse
from scipy.special import logsumexp

from icml2026.core.config import config, param
from icml2026.core.device import check_device_name
from icml2026.core.progress import track
from icml2026.core.rng import torch_generator
from icml2026.core.validate import as_probabilities, positive_int

__all__ = [
    "FAMILIES",
    "AnswerModel",
    "CharCNNClassifier",
    "FamilyConfig",
    "GRULanguageModel",
    "KNNCountModel",
    "TransformerLM",
    "TrigramKNModel",
    "make_family",
    "sample_answers",
]


@config
class FamilyConfig:
    """Training budget of the neural families (CPU-scale)."""

    d_model: int = param(64, 4, 256, help="width of the transformer, GRU and CNN (multiple of 4)")
    lm_steps: int = param(300, 1, 5000, help="transformer and GRU optimisation steps")
    batch_size: int = param(64, 1, 1024)
    lr: float = param(3e-3, 0, 1, lo_open=True)
    cnn_epochs: int = param(30, 1, 500)
    knn_k: int = param(5, 1, 1000)
    smoothing: float = param(0.1, 0, 100, lo_open=True, help="add-alpha of the count model")
    device: str = param("cpu", help="torch device of the neural families (weights drawn on the CPU, then moved)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.d_model % 4:
            raise ValueError(f"d_model = {self.d_model}: must be a multiple of 4 (the transformer's 4 heads)")


class AnswerModel(ABC):
    """A trained model: ``answer_probs(prompts, options)`` -> (n, V) rows summing to 1."""

    family: str = ""

    def __init__(self, cfg: FamilyConfig) -> None:
        self.cfg = cfg

    @abstractmethod
    def fit(self, lines: list[tuple[str, str]], rng: np.random.Generator) -> AnswerModel: ...

    @abstractmethod
    def answer_probs(self, prompts: list[str], options: list[str]) -> np.ndarray: ...


def _texts(lines: list[tuple[str, str]]) -> list[str]:
    return [f"{p} {a} ." for p, a in lines]


def _normalise_logits(logp: np.ndarray) -> np.ndarray:
    return np.exp(logp - logsumexp(logp, axis=1, keepdims=True))


class TransformerLM(AnswerModel):
    """Tiny GPT-2 (``transformers``) over words, trained with the shared core trainer."""

    family = "transformer"

    def __init__(self, cfg: FamilyConfig) -> None:
        self.cfg = cfg

    def fit(self, lines: list[tuple[str, str]], rng: np.random.Generator) -> TransformerLM:
        from icml2026.core.textgen import TinyLMConfig, TrainConfig, train_tiny_lm

        texts = _texts(lines)
        longest = max(len(t.split()) for t in texts) + 4
        res = train_tiny_lm(
            texts,
            rng,
            level="word",
            model_config=TinyLMConfig(d_model=self.cfg.d_model, n_layers=2, n_heads=4, max_len=longest),
            train_config=TrainConfig(n_steps=self.cfg.lm_steps, batch_size=self.cfg.batch_size, lr=self.cfg.lr),
            device=self.cfg.device,
            name="transformer",
            progress="train transformer family (steps)",
        )
        res.backend.batch_size = 512
        self.backend_, self.losses_ = res.backend, res.losses
        return self

    def answer_probs(self, prompts: list[str], options: list[str]) -> np.ndarray:
        v = len(options)
        scores = self.backend_.score(
            [p for p in prompts for _ in options], [f" {o} ." for _ in prompts for o in options]
        )
        return _normalise_logits(scores.reshape(len(prompts), v))


class GRULanguageModel(AnswerModel):
    """Word-level GRU language model (torch), scored like the transformer."""

    family = "gru"

    def __init__(self, cfg: FamilyConfig) -> None:
        self.cfg = cfg

    def fit(self, lines: list[tuple[str, str]], rng: np.random.Generator) -> GRULanguageModel:
        import torch

        from icml2026.core.textgen import VocabTokenizer

        texts = _texts(lines)
        self.tok_ = VocabTokenizer.build(texts, level="word")
        d, vocab = self.cfg.d_model, self.tok_.vocab_size
        self.emb_ = torch.nn.Embedding(vocab, d)
        self.gru_ = torch.nn.GRU(d, d, batch_first=True)
        self.out_ = torch.nn.Linear(d, vocab)
        params = [*self.emb_.parameters(), *self.gru_.parameters(), *self.out_.parameters()]
        g = torch_generator(rng)
        with torch.no_grad():
            for p in params:
                p.uniform_(-1 / math.sqrt(d), 1 / math.sqrt(d), generator=g)
        for m in (self.emb_, self.gru_, self.out_):  # drawn on the CPU above, then moved
            m.to(self.cfg.device)
        params = [*self.emb_.parameters(), *self.gru_.parameters(), *self.out_.parameters()]
        seqs = [[self._bos(), *self.tok_.encode(t), self._eos()] for t in texts]
        opt = torch.optim.Adam(params, lr=self.cfg.lr)
        for _ in track(range(self.cfg.lm_steps), "train GRU family (steps)", total=self.cfg.lm_steps):
            batch = [seqs[int(i)] for i in rng.integers(0, len(seqs), size=self.cfg.batch_size)]
            ids, mask = self._pad(batch)
            logits = self._logits(ids)
            target = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, vocab), target.reshape(-1), ignore_index=-100
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
        return self

    def _bos(self) -> int:
        return cast(int, self.tok_.bos_id)  # VocabTokenizer always has BOS (1) and EOS (2)

    def _eos(self) -> int:
        return cast(int, self.tok_.eos_id)

    def _pad(self, batch: list[list[int]]) -> tuple[Any, Any]:
        import torch

        width = max(len(s) for s in batch)
        dev = self.out_.weight.device
        ids = torch.tensor([s + [self.tok_.pad_id] * (width - len(s)) for s in batch], device=dev)
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in batch], device=dev)
        return ids, mask

    def _logits(self, ids: Any) -> Any:
        h, _ = self.gru_(self.emb_(ids))
        return self.out_(h)

    def answer_probs(self, prompts: list[str], options: list[str]) -> np.ndarray:
        import torch

        rows = []
        for p in prompts:
            for o in options:
                pre = [self._bos(), *self.tok_.encode(p)]
                rows.append((pre, self.tok_.encode(f"{o} .")))
        scores = np.zeros(len(rows))
        with torch.no_grad():
            for start in range(0, len(rows), 1024):
                chunk = rows[start : start + 1024]
                ids, _ = self._pad([a + b for a, b in chunk])
                logp = torch.log_softmax(self._logits(ids), -1)
                for j, (a, b) in enumerate(chunk):
                    pos = torch.arange(len(a) - 1, len(a) + len(b) - 1, device=logp.device)
                    scores[start + j] = float(logp[j, pos, torch.tensor(b, device=logp.device)].sum())
        return _normalise_logits(scores.reshape(len(prompts), len(options)))


class TrigramKNModel(AnswerModel):
    """Word trigram LM with interpolated Kneser-Ney smoothing (discount 0.75)."""

    family = "trigram"
    DISCOUNT = 0.75  # the standard KN discount (Chen & Goodman 1998)

    def __init__(self, cfg: FamilyConfig) -> None:
        self.cfg = cfg

    def fit(self, lines: list[tuple[str, str]], rng: np.random.Generator) -> TrigramKNModel:
        self.tri_: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        bigram_types: dict[str, set[str]] = defaultdict(set)  # v -> {w}
        left: dict[tuple[str, str], set[str]] = defaultdict(set)  # (v, w) -> {u}
        cont: dict[str, set[str]] = defaultdict(set)  # w -> {v}
        for t in _texts(lines):
            w = ["<s>", "<s>", *t.split(), "</s>"]
            for u, v, x in zip(w, w[1:], w[2:], strict=False):
                self.tri_[(u, v)][x] += 1
                left[(v, x)].add(u)
                bigram_types[v].add(x)
                cont[x].add(v)
        self.n_left_ = {k: len(s) for k, s in left.items()}
        self.n_left_ctx_: Counter[str] = Counter()
        for (v, _), n in self.n_left_.items():
            self.n_left_ctx_[v] += n
        self.follow_types_ = {v: len(s) for v, s in bigram_types.items()}
        n_bigram_types = sum(len(s) for s in cont.values())
        self.p_cont_ = {x: len(s) / n_bigram_types for x, s in cont.items()}
        self.n_vocab_ = len(self.p_cont_) + 1
        return self

    def _p(self, u: str, v: str, x: str) -> float:
        d = self.DISCOUNT
        p_uni = 0.99 * self.p_cont_.get(x, 0.0) + 0.01 / self.n_vocab_  # tiny uniform floor for unseen words
        denom = self.n_left_ctx_.get(v, 0)
        if denom:
            p_bi = max(self.n_left_.get((v, x), 0) - d, 0) / denom + d * self.follow_types_.get(v, 0) / denom * p_uni
        else:
            p_bi = p_uni
        ctx = self.tri_.get((u, v))
        if not ctx:
            return p_bi
        total = sum(ctx.values())
        return max(ctx.get(x, 0) - d, 0) / total + d * len(ctx) / total * p_bi

    def answer_probs(self, prompts: list[str], options: list[str]) -> np.ndarray:
        out = np.zeros((len(prompts), len(options)))
        for i, p in enumerate(prompts):
            pre = ["<s>", "<s>", *p.split()]
            for j, o in enumerate(options):
                w = pre + [*o.split(), "."]
                out[i, j] = sum(math.log(self._p(w[t - 2], w[t - 1], w[t])) for t in range(len(pre), len(w)))
        return _normalise_logits(out)


class CharCNNClassifier(AnswerModel):
    """Character CNN over the prompt (embed, conv(3), ReLU, max-pool, linear) classifying the answer."""

    family = "char_cnn"

    def __init__(self, cfg: FamilyConfig) -> None:
        self.cfg = cfg

    def _encode(self, prompts: list[str]) -> Any:
        import torch

        width = max(3, max(len(p) for p in prompts))
        return torch.tensor([[self.chars_.get(c, 1) for c in p] + [0] * (width - len(p)) for p in prompts])

    def fit(self, lines: list[tuple[str, str]], rng: np.random.Generator) -> CharCNNClassifier:
        import torch

        self.chars_ = {c: i + 2 for i, c in enumerate(sorted({c for p, _ in lines for c in p}))}  # 0 pad, 1 unknown
        self.classes_ = sorted({a for _, a in lines})
        index = {a: i for i, a in enumerate(self.classes_)}
        d = self.cfg.d_model
        self.net_ = torch.nn.ModuleDict(
            {
                "emb": torch.nn.Embedding(len(self.chars_) + 2, 16, padding_idx=0),
                "conv": torch.nn.Conv1d(16, 2 * d, kernel_size=3, padding=1),
                "out": torch.nn.Linear(2 * d, len(self.classes_)),
            }
        )
        g = torch_generator(rng)
        with torch.no_grad():
            for p in self.net_.parameters():
                p.normal_(0.0, 0.1, generator=g) if p.dim() > 1 else p.zero_()
        self.net_.to(self.cfg.device)  # drawn on the CPU above; batches are cut on the CPU and moved
        dev = next(self.net_.parameters()).device
        x = self._encode([p for p, _ in lines])
        y = torch.tensor([index[a] for _, a in lines])
        opt = torch.optim.Adam(self.net_.parameters(), lr=1e-2)
        for _ in track(range(self.cfg.cnn_epochs), "train char-CNN family (epochs)", total=self.cfg.cnn_epochs):
            order = rng.permutation(len(lines))
            for start in range(0, len(order), 128):
                idx = torch.as_tensor(order[start : start + 128])
                loss = torch.nn.functional.cross_entropy(self._forward(x[idx].to(dev)), y[idx].to(dev))
                opt.zero_grad()
                loss.backward()
                opt.step()
        return self

    def _forward(self, x: Any) -> Any:
        import torch

        h = torch.relu(self.net_["conv"](self.net_["emb"](x).transpose(1, 2)))
        return self.net_["out"](h.max(dim=2).values)

    def answer_probs(self, prompts: list[str], options: list[str]) -> np.ndarray:
        import torch

        with torch.no_grad():
            x = self._encode(prompts).to(next(self.net_.parameters()).device)
            logits = self._forward(x).double().cpu().numpy()
        col = {a: i for i, a in enumerate(self.classes_)}
        out = np.full((len(prompts), len(options)), -np.inf)
        for j, o in enumerate(options):
            if o in col:
                out[:, j] = logits[:, col[o]]
        if np.all(np.isneginf(out)):
            return np.full(out.shape, 1.0 / len(options))  # none of the options was ever seen in training
        return _normalise_logits(out)


class KNNCountModel(AnswerModel):
    """Count model: add-alpha answer counts for a seen prompt; for an unseen one, pooled counts of the k
    training prompts nearest in character-trigram Jaccard similarity."""

    family = "knn_count"

    def __init__(self, cfg: FamilyConfig) -> None:
        self.cfg = cfg

    @staticmethod
    def _grams(p: str) -> set[str]:
        s = f"  {p} "
        return {s[i : i + 3] for i in range(len(s) - 2)}

    def _matrix(self, prompts: list[str], grow: bool) -> sparse.csr_matrix:
        rows, cols = [], []
        for i, p in enumerate(prompts):
            for g in self._grams(p):
                if g not in self.gram_index_ and grow:
                    self.gram_index_[g] = len(self.gram_index_)
                if g in self.gram_index_:
                    rows.append(i)
                    cols.append(self.gram_index_[g])
        return sparse.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(len(prompts), max(1, len(self.gram_index_)))
        )

    def fit(self, lines: list[tuple[str, str]], rng: np.random.Generator) -> KNNCountModel:
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        for p, a in lines:
            counts[p][a] += 1
        self.counts_ = dict(counts)
        self.prompts_ = sorted(self.counts_)
        self.gram_index_: dict[str, int] = {}
        self.train_matrix_ = self._matrix(self.prompts_, grow=True)
        self.train_sizes_ = np.asarray(self.train_matrix_.sum(axis=1)).ravel()
        return self

    def answer_probs(self, prompts: list[str], options: list[str]) -> np.ndarray:
        alpha = self.cfg.smoothing
        out = np.zeros((len(prompts), len(options)))
        unseen = [i for i, p in enumerate(prompts) if p not in self.counts_]
        neighbours: dict[int, list[int]] = {}
        if unseen:
            q = self._matrix([prompts[i] for i in unseen], grow=False)
            m = q.shape[1]
            inter = (q @ self.train_matrix_[:, :m].T).toarray()
            union = np.asarray(q.sum(axis=1)) + self.train_sizes_[None, :] - inter
            sim = inter / np.maximum(union, 1)
            k = min(self.cfg.knn_k, len(self.prompts_))
            for row, i in enumerate(unseen):
                # ties in similarity broken by prompt text (sorted training prompts), never by input order
                neighbours[i] = list(np.argsort(-sim[row], kind="stable")[:k])
        for i, p in enumerate(prompts):
            pooled: Counter[str] = Counter()
            if p in self.counts_:
                pooled = self.counts_[p]
            else:
                for j in neighbours[i]:
                    pooled.update(self.counts_[self.prompts_[j]])
            row_counts = np.array([pooled.get(o, 0) for o in options], dtype=float) + alpha
            out[i] = row_counts / row_counts.sum()
        return out


FAMILIES: dict[str, type[AnswerModel]] = {
    "transformer": TransformerLM,
    "gru": GRULanguageModel,
    "trigram": TrigramKNModel,
    "char_cnn": CharCNNClassifier,
    "knn_count": KNNCountModel,
}


def make_family(name: str, cfg: FamilyConfig) -> AnswerModel:
    """A fresh, untrained model of family ``name`` (one of :data:`FAMILIES`)."""
    if name not in FAMILIES:
        raise ValueError(f"unknown model family {name!r}; families: {', '.join(FAMILIES)}")
    return FAMILIES[name](cfg)


def sample_answers(probs: np.ndarray, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """(m, s, q) option codes drawn i.i.d. from probs (m, q, V) (sampling at temperature 1)."""
    probs = as_probabilities(probs, "probs", ndim=3, rows_sum_to_one=True)
    n_samples = positive_int(n_samples, "n_samples")
    cdf = np.cumsum(probs, axis=2)
    cdf /= cdf[..., -1:]
    u = rng.random((probs.shape[0], n_samples, probs.shape[1]))
    return np.minimum((u[..., None] > cdf[:, None, :, :]).sum(axis=3), probs.shape[2] - 1)
