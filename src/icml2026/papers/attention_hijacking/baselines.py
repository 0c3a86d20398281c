"""Baselines of brief 3: NaiveAttack and DoorPing (Liu et al., NDSS 2023; image attacks transferred to text),
TBADD (ISC 2024: poisoned real text + checkpoint selection), the random-real-sample reference and full-data
fine-tuning, and the STRIP defence (Gao et al. 2019/2021) applied to the victims.

Every attack here poisons the *real* training data and then runs the clean base distillation on it, which is
what distinguishes them from AH (which poisons the bi-level objective and the distilled attention labels).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from icml2026.core.rng import spawn, torch_generator
from icml2026.core.validate import finite_number, positive_int

from .data import EncodedBatch, TextDataset, encode, encode_triggered
from .method import (
    DistillConfig,
    DistilledSet,
    RealPoison,
    distill,
    evaluate_distilled,
    predict,
    trigger_token_ids,
)
from .models import LearnerFactory

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "ADDSENT_TRIGGER",
    "poison_real_data",
    "naive_attack",
    "doorping",
    "tbadd",
    "random_real_baseline",
    "full_finetune",
    "linear_probe_accuracy",
    "StripResult",
    "strip_defence",
]

#: AddSent's default trigger sentence in OpenBackdoor (Dai et al. 2019), used by TBADD's AddSent variant.
ADDSENT_TRIGGER = "i watch this 3d movie"


def poison_real_data(tokenizer: object, data: TextDataset, trigger: str, target: int, rate: float, seq_len: int,
                     rng: np.random.Generator) -> tuple[EncodedBatch, RealPoison]:
    """BadNets-style poisoning: ``rate`` x len(data) non-target rows get the trigger at a random position and
    the target label (labels are changed in the returned pool's companion :class:`RealPoison`)."""
    import torch

    rate = finite_number(rate, "rate", lo=0.0, hi=1.0)
    nt = np.flatnonzero(data.labels != target)
    n_p = min(len(nt), int(round(rate * len(data))))
    if n_p == 0:
        raise ValueError(f"rate = {rate}: poisons no row of {len(data)}")
    rows = np.sort(rng.choice(nt, size=n_p, replace=False))
    pool = encode(tokenizer, data.texts, seq_len)  # type: ignore[arg-type]
    trig = encode_triggered(tokenizer, [data.texts[i] for i in rows], trigger, seq_len, rng)  # type: ignore[arg-type]
    idx = torch.as_tensor(rows)
    pool.input_ids[idx] = trig.input_ids
    pool.attention_mask[idx] = trig.attention_mask
    pool.trigger_mask[idx] = trig.trigger_mask
    ids = trigger_token_ids(tokenizer, trigger)
    return pool, RealPoison(rows, int(target), ids[0] if len(ids) == 1 else None)


def _poisoned_labels(data: TextDataset, poison: RealPoison) -> TextDataset:
    labels = data.labels.copy()
    labels[poison.rows] = poison.target
    return TextDataset(data.texts, labels, data.name + "+poison", data.n_classes)


def naive_attack(model_factory: LearnerFactory, data: TextDataset, cfg: DistillConfig, rng: np.random.Generator,
                 *, trigger: str, target: int, rate: float = 0.1, show_progress: bool | str = False) -> DistilledSet:
    """NaiveAttack: poison a fraction ``rate`` of the real training data, then run clean DD on it."""
    r_p, r_d = spawn(rng, 2)
    pool, poison = poison_real_data(model_factory.tokenizer, data, trigger, target, rate, cfg.seq_len, r_p)
    poison = replace(poison, trigger_id=None)  # fixed trigger: the text already holds it
    clean_cfg = replace(cfg, attack=False, trigger_search_every=0)
    out = distill(model_factory, _poisoned_labels(data, poison), clean_cfg, r_d, poison=poison, pool=pool,
                  show_progress=show_progress)
    out.trigger, out.target = trigger, int(target)
    return out


def doorping(model_factory: LearnerFactory, data: TextDataset, cfg: DistillConfig, rng: np.random.Generator,
             *, trigger: str, target: int, rate: float = 0.1, search_every: int = 10,
             show_progress: bool | str = False) -> DistilledSet:
    """DoorPing: NaiveAttack whose (single-token) trigger is re-optimised during distillation.

    # Deviation: DoorPing optimises an image patch to excite chosen neurons; the text version (brief 3) is a
    # HotFlip step over whole-word WordPiece tokens every ``search_every`` outer steps, minimising the
    # target-class loss of the poisoned rows under the current learner.
    """
    search_every = positive_int(search_every, "search_every")
    r_p, r_d = spawn(rng, 2)
    pool, poison = poison_real_data(model_factory.tokenizer, data, trigger, target, rate, cfg.seq_len, r_p)
    if poison.trigger_id is None:
        raise ValueError(f"trigger = {trigger!r}: DoorPing's search needs a single-token trigger")
    dp_cfg = replace(cfg, attack=False, trigger_search_every=search_every)
    return distill(model_factory, _poisoned_labels(data, poison), dp_cfg, r_d, poison=poison, pool=pool,
                   show_progress=show_progress)


def tbadd(model_factory: LearnerFactory, data: TextDataset, val: TextDataset, cfg: DistillConfig,
          rng: np.random.Generator, *, trigger: str, target: int, rate: float = 0.1, n_snapshots: int = 4,
          n_select_learners: int = 3, weight: float = 0.5, show_progress: bool | str = False) -> DistilledSet:
    """TBADD: DD on BadNets/AddSent-poisoned real text; the published checkpoint maximises
    ``weight`` x clean-val accuracy + (1 - ``weight``) x poisoned-val ASR over ``n_snapshots`` snapshots.

    ``trigger`` is a word (BadNets) or :data:`ADDSENT_TRIGGER` (AddSent).
    """
    n_snapshots = positive_int(n_snapshots, "n_snapshots")
    weight = finite_number(weight, "weight", lo=0.0, hi=1.0)
    r_p, r_d, r_s = spawn(rng, 3)
    pool, poison = poison_real_data(model_factory.tokenizer, data, trigger, target, rate, cfg.seq_len, r_p)
    poison = replace(poison, trigger_id=None)
    every = max(1, cfg.n_steps // n_snapshots)
    tb_cfg = replace(cfg, attack=False, trigger_search_every=0, snapshot_every=every)
    final = distill(model_factory, _poisoned_labels(data, poison), tb_cfg, r_d, poison=poison, pool=pool,
                    show_progress=show_progress)
    best, best_score = final, -np.inf
    candidates = [s for _, s in final.snapshots] or [final]
    for snap in candidates:
        res = evaluate_distilled(snap, model_factory, val, n_select_learners, spawn(r_s, 1)[0], trigger=trigger,
                                 target=target)
        score = weight * res.cta + (1 - weight) * res.asr
        if score > best_score:
            best, best_score = snap, score
    best.trigger, best.target = trigger, int(target)
    best.snapshots = []
    return best


def _adam_finetune(model_factory: LearnerFactory, gen: torch.Generator, batches: list[EncodedBatch],
                   labels: list[torch.Tensor], lr: float) -> dict[str, torch.Tensor]:
    import torch

    from .method import _forward

    params = {k: v.clone().requires_grad_(True) for k, v in model_factory.init_params(gen).items()}
    opt = torch.optim.AdamW(list(params.values()), lr=lr, weight_decay=0.0)
    for b, y in zip(batches, labels, strict=True):
        logits, _ = _forward(model_factory, params, input_ids=b.input_ids, attention_mask=b.attention_mask,
                             attentions=False)
        loss = torch.nn.functional.cross_entropy(logits, y.to(logits.device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.detach() for k, v in params.items()}


def random_real_baseline(model_factory: LearnerFactory, data: TextDataset, val: TextDataset, test: TextDataset,
                         n_learners: int, rng: np.random.Generator, *, n_per_class: int = 1, n_steps: int = 10,
                         lrs: tuple[float, ...] = (1e-4, 1e-3, 1e-2), seq_len: int = 48,
                         n_val_learners: int = 2) -> float:
    """Mean test accuracy of learners fine-tuned (AdamW, ``n_steps`` full-batch steps) on ``n_per_class`` random
    real sentences per class (a fresh draw per learner); the learning rate is picked on ``val``."""
    import torch

    n_learners = positive_int(n_learners, "n_learners")
    n_steps = positive_int(n_steps, "n_steps")
    tok = model_factory.tokenizer
    gen = torch_generator(rng)
    enc_val, enc_test = encode(tok, val.texts, seq_len), encode(tok, test.texts, seq_len)

    def one(lr: float, ev: EncodedBatch, labels: np.ndarray) -> float:
        rows = np.concatenate([rng.choice(np.flatnonzero(data.labels == c), n_per_class, replace=False)
                               for c in range(data.n_classes)])
        b = encode(tok, [data.texts[i] for i in rows], seq_len)
        y = torch.as_tensor(data.labels[rows])
        params = _adam_finetune(model_factory, gen, [b] * n_steps, [y] * n_steps, lr)
        p, _ = predict(model_factory, params, ev)
        return float((p == labels).mean())

    best = max(lrs, key=lambda lr: np.mean([one(lr, enc_val, val.labels) for _ in range(n_val_learners)]))
    return float(np.mean([one(best, enc_test, test.labels) for _ in range(n_learners)]))


def full_finetune(model_factory: LearnerFactory, data: TextDataset, test: TextDataset, rng: np.random.Generator,
                  *, n_steps: int = 200, batch_size: int = 32, lr: float = 1e-3, seq_len: int = 48) -> float:
    """Upper bound: one learner fine-tuned on the real training set (AdamW, ``n_steps`` mini-batches)."""
    import torch

    n_steps = positive_int(n_steps, "n_steps")
    tok = model_factory.tokenizer
    pool = encode(tok, data.texts, seq_len)
    batches, labels = [], []
    for _ in range(n_steps):
        idx = rng.choice(len(data), size=min(batch_size, len(data)), replace=False)
        b = pool.index(torch.as_tensor(idx))
        n = int(b.attention_mask.sum(1).max())
        batches.append(EncodedBatch(b.input_ids[:, :n], b.attention_mask[:, :n], b.trigger_mask[:, :n]))
        labels.append(torch.as_tensor(data.labels[idx]))
    params = _adam_finetune(model_factory, torch_generator(rng), batches, labels, lr)
    p, _ = predict(model_factory, params, encode(tok, test.texts, seq_len))
    return float((p == test.labels).mean())


def linear_probe_accuracy(model_factory: LearnerFactory, data: TextDataset, test: TextDataset, *,
                          seq_len: int = 48, chunk: int = 256) -> float:
    """Test accuracy of a logistic-regression probe (scikit-learn, standardised features) on the frozen encoder's
    pooled output: how much of the task a classifier head on these features can read at all.

    A one-step victim's prediction is a linear function of (nearly) these features, so this bounds what any
    distilled set can teach it; a diagnostic reported beside the CTAs, not a method of the paper.
    """
    import torch
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if len(set(data.labels.tolist())) < 2:
        raise ValueError("data: needs both classes to fit a probe")

    def feats(ds: TextDataset) -> np.ndarray:
        b = encode(model_factory.tokenizer, ds.texts, seq_len)  # type: ignore[arg-type]
        dev = model_factory.device
        out = []
        with torch.no_grad():
            for s in range(0, len(ds), chunk):
                o = model_factory.model.base_model(input_ids=b.input_ids[s:s + chunk].to(dev),
                                                   attention_mask=b.attention_mask[s:s + chunk].to(dev))
                # BERT's pooled [CLS]; RoBERTa and DistilBERT have no pooler: their head reads the first token
                pooled = getattr(o, "pooler_output", None)
                out.append((o.last_hidden_state[:, 0] if pooled is None else pooled).float().cpu().numpy())
        return np.concatenate(out)

    clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=3000))
    clf.fit(feats(data), data.labels)
    return float(clf.score(feats(test), test.labels))


@dataclass
class StripResult:
    """STRIP on one victim: inputs whose mean prediction entropy over perturbed copies falls below the
    threshold (set for a ``frr`` false-rejection rate on clean validation inputs) are rejected."""

    detection_rate: float  # triggered inputs rejected
    false_rejection_rate: float  # clean test inputs rejected
    asr_after: float  # triggered non-target inputs accepted AND predicted as target
    threshold: float


def _strip_entropy(model_factory: LearnerFactory, params: dict[str, torch.Tensor], texts: list[str],
                   donors: list[str], n_perturb: int, seq_len: int, rng: np.random.Generator) -> np.ndarray:
    import torch

    from .method import _forward

    tok = model_factory.tokenizer
    pert = []
    for t in texts:
        for _ in range(n_perturb):
            d = donors[int(rng.integers(0, len(donors)))].split()
            pert.append(t + " " + " ".join(d[: max(1, len(d) // 2)]))
    b = encode(tok, pert, seq_len)
    ent = []
    with torch.no_grad():
        for s in range(0, len(b), 256):
            c = b.index(slice(s, s + 256))
            logits, _ = _forward(model_factory, params, input_ids=c.input_ids, attention_mask=c.attention_mask,
                                 attentions=False)
            p = torch.softmax(logits, -1)
            ent.append((-(p * torch.log(p.clamp_min(1e-12))).sum(-1)).cpu().numpy())
    return np.concatenate(ent).reshape(len(texts), n_perturb).mean(1)


def strip_defence(model_factory: LearnerFactory, params: dict[str, torch.Tensor], triggered_texts: list[str],
                  clean_test: TextDataset, clean_val: TextDataset, target: int, rng: np.random.Generator, *,
                  n_perturb: int = 8, frr: float = 0.05, seq_len: int = 48) -> StripResult:
    """STRIP (text version): each input is superimposed with half of a random held-out sentence (appended, so
    an inserted trigger survives); a backdoored input keeps its confident target prediction (low entropy)."""
    n_perturb = positive_int(n_perturb, "n_perturb")
    frr = finite_number(frr, "frr", lo=0.0, hi=1.0)
    donors = clean_val.texts
    e_val = _strip_entropy(model_factory, params, clean_val.texts, donors, n_perturb, seq_len, rng)
    thr = float(np.quantile(e_val, frr))
    e_trig = _strip_entropy(model_factory, params, triggered_texts, donors, n_perturb, seq_len, rng)
    e_clean = _strip_entropy(model_factory, params, clean_test.texts, donors, n_perturb, seq_len, rng)
    pt, _ = predict(model_factory, params, encode(model_factory.tokenizer, triggered_texts, seq_len))  # type: ignore[arg-type]
    accepted = e_trig >= thr
    return StripResult(float((~accepted).mean()), float((e_clean < thr).mean()),
                       float((accepted & (pt == target)).mean()), thr)
