"""Five target model families trained here, each answering with its own phrasing (brief Sec. 6).

==========  =====================================================================================
tinylm      char-level GPT-2 (``transformers``, via ``core.textgen.train_tiny_lm``), greedy answer,
            confidence = product of the answer's token probabilities
gru         char-level GRU language model (torch), greedy answer, same confidence
bagmlp      MLP over bag-of-characters (+ hashed bigram) features classifying into the corpus's answers,
            confidence = max softmax probability
knn         memoriser: answer of the nearest corpus question (char-trigram cosine), confidence = similarity
rules       rule-based solver with systematic bugs (drops carries / borrows with a probability that grows
            with the column's digit sum; knows only facts seen twice in its corpus), fixed over-confidence
==========  =====================================================================================

Each target turns (answer, own confidence) into a response through a family-specific style: a bare or
assertive answer when confident, a hedge ("I think", "probably", "not sure") when not, with 10% of responses
in a random tier (phrasing is informative, not a perfect signal). ``phrasing=False`` gives bare answers
(the control of criterion 5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from icml2026.core.progress import track
from icml2026.core.rng import torch_generator

from .data import ATTRIBUTES, Question, World

__all__ = ["FAMILIES", "STYLES", "TargetAnswers", "TargetScale", "answer_with_target", "phrase", "train_unrelated_lm"]

FAMILIES = ("tinylm", "gru", "bagmlp", "knn", "rules")

# (confident threshold, unsure threshold, confident template, middle template, unsure template)
STYLES: dict[str, tuple[float, float, str, str, str]] = {
    "tinylm": (0.7, 0.35, "{a}", "I think {a}.", "Maybe {a}? Not sure."),
    "gru": (0.6, 0.3, "The answer is {a}.", "Probably {a}.", "I am not sure, but {q} might be {a}."),
    "bagmlp": (0.5, 0.2, "{a}.", "I believe it is {a}.", "Not sure... {a}?"),
    "knn": (0.95, 0.7, "{a}", "Possibly {a}.", "I guess {a}, though I may be wrong."),
    "rules": (0.8, 0.5, "Answer: {a}", "Likely {a}.", "I think maybe {a}."),
}
_NOISE = 0.1  # share of responses phrased in a uniformly random tier


@dataclass(frozen=True)
class TargetScale:
    """Training sizes of the targets (CPU scale; the paper's targets are 3B-72B LLMs) and the torch device
    they are trained on (initial weights and batches are drawn on the CPU, so they do not depend on it)."""

    corpus_arith: int = 3000
    corpus_fact: int = 6000
    lm_steps: int = 300
    gru_steps: int = 300
    mlp_steps: int = 200
    batch_size: int = 64
    device: str = "cpu"
    answer_only_loss: bool = False  # the GRU's loss on the answer characters only (issue 58; False before)
    gru_lr: float = 5e-3  # the GRU's Adam learning rate (5e-3 before issue 58)


@dataclass
class TargetAnswers:
    """One target's answers to every world question: bare answer, own confidence, phrased response."""

    family: str
    answers: list[str]
    confidence: np.ndarray  # (n_questions,) in [0, 1]
    correct: np.ndarray  # (n_questions,) 0/1
    backend: Any = None  # the trained HFLocalBackend for the "tinylm" family (its weights seed the self CM)


def phrase(family: str, question: Question, answer: str, confidence: float, u: float, tier_u: float,
           *, phrasing: bool = True) -> str:
    """The response text of ``family`` (``u``, ``tier_u``: uniforms deciding the random-tier noise)."""
    if not phrasing:
        return answer
    hi, lo, sure, mid, low = STYLES[family]
    tier = 0 if confidence >= hi else (1 if confidence >= lo else 2)
    if u < _NOISE:
        tier = min(2, int(tier_u * 3))
    q = question.text.removeprefix("What is ").rstrip("?")
    return (sure, mid, low)[tier].format(a=answer, q=q)


# ------------------------------------------------------------------------------------- text helpers
def _qa_prompt(q: Question) -> str:
    return f"{q.text} A:"


def _qa_text(q: Question) -> str:
    return f"{q.text} A: {q.answer}"


def _charset(world: World) -> list[str]:
    chars = set("0123456789+-*? :.-")
    for q in world.questions:
        chars.update(_qa_text(q))
    for n in world.kb.names:
        chars.update(n)
    for vals in ATTRIBUTES.values():
        for v in vals:
            chars.update(v)
    chars.update("What is the of A:")
    return sorted(chars)


# ------------------------------------------------------------------------------------------ tinylm
def _answer_tinylm(world: World, corpus: list[Question], scale: TargetScale, rng: np.random.Generator,
                   lm_family: str = "gpt2") -> tuple[list[str], np.ndarray, Any]:
    from icml2026.core.textgen import TinyLMConfig, TrainConfig, VocabTokenizer, train_tiny_lm

    tok = VocabTokenizer(_charset(world), level="char")
    res = train_tiny_lm(
        [_qa_text(q) for q in corpus], rng, tokenizer=tok,
        model_config=TinyLMConfig(family=lm_family, d_model=64, n_layers=2, n_heads=4, max_len=96),
        train_config=TrainConfig(n_steps=scale.lm_steps, batch_size=scale.batch_size, lr=3e-3),
        name="tinylm", device=scale.device, progress=f"{lm_family} target training",
    )
    prompts = [_qa_prompt(q) for q in world.questions]
    outs = res.backend.sample(prompts, n=1, temperature=0.0, max_new_tokens=8, rng=rng)
    completions = [o[0] for o in outs]
    logp = res.backend.score(prompts, completions)
    answers = [c.strip() for c in completions]
    return answers, np.exp(np.minimum(logp, 0.0)), res.backend


# --------------------------------------------------------------------------------------------- gru
def _answer_gru(
    world: World, corpus: list[Question], scale: TargetScale, rng: np.random.Generator
) -> tuple[list[str], np.ndarray]:
    import torch
    from torch import nn

    chars = _charset(world)
    pad, bos, eos = 0, 1, 2
    index = {c: i + 3 for i, c in enumerate(chars)}
    vocab = len(chars) + 3
    gen = torch_generator(rng)

    class CharGRU(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, 32)
            self.gru = nn.GRU(32, 128, batch_first=True)
            self.out = nn.Linear(128, vocab)

        def forward(self, ids: Any, h: Any = None) -> tuple[Any, Any]:
            y, h = self.gru(self.emb(ids), h)
            return self.out(y), h

    model = CharGRU()
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.1, 0.1, generator=gen)
    device = torch.device(scale.device)
    model.to(device)
    seqs = [[bos] + [index[c] for c in _qa_text(q)] + [eos] for q in corpus]
    # first predicted position of the answer: after BOS and the prompt "<question> A:"
    starts = [1 + len(_qa_prompt(q)) for q in corpus]
    opt = torch.optim.Adam(model.parameters(), lr=scale.gru_lr)
    for _ in track(range(scale.gru_steps), "GRU target training", total=scale.gru_steps):
        rows = [int(i) for i in rng.integers(0, len(seqs), size=scale.batch_size)]
        batch = [seqs[i] for i in rows]
        width = max(len(s) for s in batch)
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in batch], device=device)
        labels = ids[:, 1:].clone()
        if scale.answer_only_loss:
            # Deviation (issue 58): the loss on the answer's characters only (as an SFT on answers); with
            # the loss on every character the GRU spent its 250 quick steps on spelling the questions and
            # answered 2-3% of the questions (1-2% of the arithmetic)
            for r, i in enumerate(rows):
                labels[r, : starts[i] - 1] = pad
        logits, _ = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), ignore_index=pad)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    answers: list[str] = []
    conf = np.zeros(len(world.questions))
    inv = {i: c for c, i in index.items()}
    with torch.no_grad():
        for start in range(0, len(world.questions), 256):
            qs = world.questions[start : start + 256]
            prompts = [[bos] + [index[c] for c in _qa_prompt(q)] for q in qs]
            lengths = torch.tensor([len(p) for p in prompts])  # stays on the CPU, as packing requires
            width = int(lengths.max())
            ids = torch.tensor([p + [pad] * (width - len(p)) for p in prompts], device=device)
            packed = nn.utils.rnn.pack_padded_sequence(model.emb(ids), lengths, batch_first=True, enforce_sorted=False)
            ys, h = model.gru(packed)
            ys, _ = nn.utils.rnn.pad_packed_sequence(ys, batch_first=True)
            last = model.out(ys[torch.arange(len(qs), device=device), (lengths - 1).to(device)])
            out_ids: list[list[int]] = [[] for _ in qs]
            logp = np.zeros(len(qs))
            done = np.zeros(len(qs), dtype=bool)
            for _ in range(8):
                probs = torch.softmax(last, -1)
                nxt = probs.argmax(-1)
                for b, t in enumerate(nxt.tolist()):
                    if done[b]:
                        continue
                    if t == eos:
                        done[b] = True
                        continue
                    out_ids[b].append(t)
                    logp[b] += float(torch.log(probs[b, t]))
                if done.all():
                    break
                y, h = model(nxt.view(-1, 1), h)
                last = y[:, -1]
            for b in range(len(qs)):
                answers.append("".join(inv.get(t, "") for t in out_ids[b]).strip())
                conf[start + b] = float(np.exp(logp[b]))
    return answers, conf


# ------------------------------------------------------------------------------------------ bagmlp
def _bag_features(texts: list[str], chars: list[str]) -> np.ndarray:
    index = {c: i for i, c in enumerate(chars)}
    n_hash = 256
    x = np.zeros((len(texts), len(chars) + n_hash), dtype=np.float32)
    for r, t in enumerate(texts):
        for c in t:
            x[r, index[c]] += 1.0
        for a, b in zip(t, t[1:], strict=False):
            x[r, len(chars) + (index[a] * 131 + index[b] * 7) % n_hash] += 1.0
    return x / np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True))


def _answer_bagmlp(
    world: World, corpus: list[Question], scale: TargetScale, rng: np.random.Generator
) -> tuple[list[str], np.ndarray]:
    import torch
    from torch import nn

    chars = _charset(world)
    classes = sorted({q.answer for q in corpus})
    cidx = {a: i for i, a in enumerate(classes)}
    device = torch.device(scale.device)
    x = torch.tensor(_bag_features([q.text for q in corpus], chars), device=device)
    y = torch.tensor([cidx[q.answer] for q in corpus], device=device)
    gen = torch_generator(rng)
    model = nn.Sequential(nn.Linear(x.shape[1], 256), nn.ReLU(), nn.Linear(256, len(classes)))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.05, generator=gen)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in track(range(scale.mlp_steps), "bag-MLP target training", total=scale.mlp_steps):
        idx = torch.from_numpy(rng.integers(0, len(corpus), size=4 * scale.batch_size)).to(device)
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        feats = torch.tensor(_bag_features([q.text for q in world.questions], chars), device=device)
        probs = torch.softmax(model(feats), -1).cpu()
    conf, pred = probs.max(-1)
    return [classes[int(i)] for i in pred], conf.numpy().astype(np.float64)


# --------------------------------------------------------------------------------------------- knn
def _trigram_vectors(texts: list[str], dim: int = 1024) -> np.ndarray:
    x = np.zeros((len(texts), dim), dtype=np.float32)
    for r, t in enumerate(texts):
        s = f"^{t}$"
        for i in range(len(s) - 2):
            x[r, hash_trigram(s[i : i + 3]) % dim] += 1.0
    return x / np.maximum(1e-9, np.linalg.norm(x, axis=1, keepdims=True))


def hash_trigram(s: str) -> int:
    """A stable (process-independent) hash of a short string (Python's ``hash`` is salted per process)."""
    h = 2166136261
    for c in s.encode():
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def _answer_knn(
    world: World, corpus: list[Question], scale: TargetScale, rng: np.random.Generator
) -> tuple[list[str], np.ndarray]:
    memory: dict[str, str] = {}
    for q in corpus:
        memory[q.text] = q.answer
    keys = sorted(memory)
    mem = _trigram_vectors(keys)
    qx = _trigram_vectors([q.text for q in world.questions])
    answers: list[str] = []
    conf = np.zeros(len(world.questions))
    for start in range(0, len(world.questions), 1024):
        sims = qx[start : start + 1024] @ mem.T
        best = sims.argmax(1)
        for j, b in enumerate(best):
            answers.append(memory[keys[int(b)]])
            conf[start + j] = float(np.clip(sims[j, b], 0.0, 1.0)) ** 2
    return answers, conf


# ------------------------------------------------------------------------------------------- rules
def _buggy_column_add(a: int, b: int, rng: np.random.Generator) -> int:
    out, carry, place = 0, 0, 1
    while a or b or carry:
        s = a % 10 + b % 10 + carry
        carry = s // 10
        if carry and rng.random() < 0.1 + 0.06 * (s - 10):  # the bug: a dropped carry, likelier on big sums
            carry = 0
        out += (s % 10) * place
        a, b, place = a // 10, b // 10, place * 10
    return out


def _buggy_column_sub(a: int, b: int, rng: np.random.Generator) -> int:
    out, borrow, place = 0, 0, 1
    while a or b:
        d = a % 10 - b % 10 - borrow
        borrow = 1 if d < 0 else 0
        if borrow and rng.random() < 0.1 + 0.05 * (-d):  # the bug: a forgotten borrow
            borrow = 0
        out += (d % 10) * place
        a, b, place = a // 10, b // 10, place * 10
    return out


def _answer_rules(
    world: World, corpus: list[Question], scale: TargetScale, rng: np.random.Generator
) -> tuple[list[str], np.ndarray]:
    seen: dict[tuple[int, str], int] = {}
    for q in corpus:
        if q.kind == "fact":
            seen[(q.entity, q.attribute)] = seen.get((q.entity, q.attribute), 0) + 1
    answers: list[str] = []
    conf = np.zeros(len(world.questions))
    for i, q in enumerate(world.questions):
        if q.kind == "arith":
            if q.op == "+":
                v = _buggy_column_add(q.a, q.b, rng)
            elif q.op == "-":
                v = _buggy_column_sub(q.a, q.b, rng)
            else:  # long multiplication as repeated buggy addition of the shifted partial products
                v = 0
                for place, digit in enumerate(reversed(str(q.b))):
                    v = _buggy_column_add(v, q.a * int(digit) * 10**place, rng)
            answers.append(str(v))
            conf[i] = 0.95  # the solver trusts its rules: systematically over-confident
        elif seen.get((q.entity, q.attribute), 0) >= 2:
            answers.append(q.answer)
            conf[i] = 0.9
        else:
            answers.append(ATTRIBUTES[q.attribute][int(rng.integers(len(ATTRIBUTES[q.attribute])))])
            conf[i] = 0.35
    return answers, conf


_ANSWERERS: dict[str, Any] = {
    "tinylm": _answer_tinylm, "gru": _answer_gru, "bagmlp": _answer_bagmlp, "knn": _answer_knn, "rules": _answer_rules,
}
# Corpus size multipliers: families see different amounts of data, as LLMs of different sizes do.
_CORPUS_SHARE = {"tinylm": (1.0, 1.0), "gru": (1.0, 0.7), "bagmlp": (0.5, 1.0), "knn": (0.6, 0.8), "rules": (0.0, 0.5)}


def answer_with_target(family: str, world: World, scale: TargetScale, rng: np.random.Generator) -> TargetAnswers:
    """Train target ``family`` on its own corpus sample and answer every question of ``world``."""
    from .data import make_corpus

    if family not in FAMILIES:
        raise ValueError(f"family: must be one of {', '.join(FAMILIES)}, got {family!r}")
    sa, sf = _CORPUS_SHARE[family]
    corpus = make_corpus(world, int(sa * scale.corpus_arith), max(1, int(sf * scale.corpus_fact)), rng)
    got = _ANSWERERS[family](world, corpus, scale, rng)
    answers, conf = got[0], got[1]
    gold = [q.answer for q in world.questions]
    correct = np.array([int(a == g) for a, g in zip(answers, gold, strict=True)], dtype=np.int64)
    return TargetAnswers(family, answers, np.clip(conf, 0.0, 1.0), correct, got[2] if len(got) > 2 else None)


def train_unrelated_lm(world: World, scale: TargetScale, rng: np.random.Generator) -> Any:
    """A char-level Llama-class LM trained on its own corpus sample: the "cross" CM's initialisation
    (an unrelated model of another family, as Llama is to Qwen in the paper's self-vs-cross test)."""
    from .data import make_corpus

    corpus = make_corpus(world, scale.corpus_arith, scale.corpus_fact, rng)
    _, _, backend = _answer_tinylm(world, corpus, scale, rng, lm_family="llama")
    return backend
