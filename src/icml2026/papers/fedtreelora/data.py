"""Four synthetic binary tasks on one vocabulary, and federated clients with Dirichlet label skew.

CPU stand-in for the paper's GLUE mix (MNLI/QNLI/SST-2/QQP). Every sequence is ``[CLS] body`` of fixed
length; the tasks need different features of the same tokens (each task's lexicon is the other tasks'
distractor), so a LoRA that serves one task well is not automatically good for another:

* T1 ``polarity``: is the majority of polarity-lexicon tokens positive? (topic tokens are distractors)
* T2 ``topic``: is the majority of topic tokens from topics A/B rather than C/D? (polarity tokens distract)
* T3 ``pair``: ``seg1 [SEP] seg2``: is seg2 a permutation of seg1 (else one token is replaced)?
* T4 ``contain``: ``seg [SEP] q``: does the query token q occur in seg?
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml2026.core.validate import positive_int

__all__ = [
    "TASKS",
    "VOCAB_SIZE",
    "PAD",
    "CLS",
    "SEP",
    "MASK",
    "Client",
    "make_example",
    "make_task_data",
    "make_clients",
    "make_corpus",
]

TASKS = ("polarity", "topic", "pair", "contain")
PAD, CLS, SEP, MASK = 0, 1, 2, 3
POS = np.arange(4, 12)
NEG = np.arange(12, 20)
TOPIC_AB = np.arange(20, 32)
TOPIC_CD = np.arange(32, 44)
CONTENT = np.arange(44, 76)
FILLER = np.arange(76, 96)
VOCAB_SIZE = 96
MIN_LEN = 10


@dataclass
class Client:
    """One client's private data: token ids (n, T) and binary labels, and its task (for reporting only)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    task: str

    @property
    def n_train(self) -> int:
        return int(self.x_train.shape[0])


def _lexicon_body(
    n: int, label: int, yes: np.ndarray, no: np.ndarray, distract: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Body of a majority task: an odd number of lexicon tokens, the majority from ``yes`` iff label."""
    m = int(rng.choice([3, 5, 7]))
    n_major = int(rng.integers(m // 2 + 1, m + 1))
    major, minor = (yes, no) if label == 1 else (no, yes)
    lex = np.concatenate([rng.choice(major, n_major), rng.choice(minor, m - n_major)])
    n_distract = int(rng.integers(2, max(3, (n - m) // 2 + 1)))
    rest = np.concatenate([rng.choice(distract, n_distract), rng.choice(FILLER, n - m - n_distract)])
    body = np.concatenate([lex, rest])
    return rng.permutation(body)


def make_example(task: str, label: int, seq_len: int, rng: np.random.Generator) -> np.ndarray:
    """One sequence (seq_len,) of ``task`` with the given label (0 or 1)."""
    n = seq_len - 1
    if task == "polarity":
        body = _lexicon_body(n, label, POS, NEG, np.concatenate([TOPIC_AB, TOPIC_CD]), rng)
    elif task == "topic":
        body = _lexicon_body(n, label, TOPIC_AB, TOPIC_CD, np.concatenate([POS, NEG]), rng)
    elif task == "pair":
        s = (n - 1) // 2
        seg1 = rng.choice(CONTENT, s, replace=False)
        seg2 = rng.permutation(seg1)
        if label == 0:
            seg2[rng.integers(s)] = rng.choice(np.setdiff1d(CONTENT, seg1))
        body = np.concatenate([seg1, [SEP], seg2, rng.choice(FILLER, n - 2 * s - 1)])
    elif task == "contain":
        s = n - 2
        seg = rng.choice(CONTENT, s, replace=False)
        q = rng.choice(seg) if label == 1 else rng.choice(np.setdiff1d(CONTENT, seg))
        body = np.concatenate([seg, [SEP], [q]])
    else:
        raise ValueError(f"task = {task!r}: must be one of {', '.join(TASKS)}")
    return np.concatenate([[CLS], body]).astype(np.int64)


def make_task_data(task: str, labels: np.ndarray, seq_len: int, rng: np.random.Generator) -> np.ndarray:
    """Sequences (len(labels), seq_len) of ``task`` with the given labels."""
    if seq_len < MIN_LEN:
        raise ValueError(f"seq_len = {seq_len}: must be >= {MIN_LEN}")
    return np.stack([make_example(task, int(y), seq_len, rng) for y in labels])


def make_clients(
    tasks: Sequence[str], n_train: int, n_test: int, seq_len: int, alpha: float, rng: np.random.Generator
) -> list[Client]:
    """One client per entry of ``tasks``; label proportions ~ Dirichlet(alpha) within the task (label skew).

    Train and test splits share the client's label proportions (personalised evaluation, as in the paper).
    """
    if len(tasks) < 3:
        raise ValueError(f"tasks: needs at least 3 clients, got {len(tasks)}")
    positive_int(n_train, "n_train")
    positive_int(n_test, "n_test")
    if not (np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha = {alpha}: must be a positive number")
    clients = []
    for task in tasks:
        p1 = float(rng.dirichlet([alpha, alpha])[1])
        ytr = (rng.random(n_train) < p1).astype(np.int64)
        yte = (rng.random(n_test) < p1).astype(np.int64)
        clients.append(
            Client(
                make_task_data(task, ytr, seq_len, rng), ytr, make_task_data(task, yte, seq_len, rng), yte, str(task)
            )
        )
    return clients


def make_corpus(n: int, seq_len: int, rng: np.random.Generator) -> np.ndarray:
    """Task-agnostic pre-training corpus (n, seq_len): unlabelled sequences from all four generators."""
    tasks = rng.choice(len(TASKS), n)
    labels = rng.integers(0, 2, n)
    return np.stack([make_example(TASKS[t], int(y), seq_len, rng) for t, y in zip(tasks, labels, strict=True)])
