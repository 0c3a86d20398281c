"""The synthetic QA world, graded histories in the official schema, and the 70/5/25 split (brief Sec. 6).

World: arithmetic questions ("What is 47 + 38?"; add/sub/mul, 1-3 digits; difficulty = carries and size)
and questions about a generated fact KB ("What is the color of Velmor?"), whose facts appear in the targets'
training corpora with Zipf-distributed frequency, so rare facts are hard. Everything is generated from the
caller's generator; nothing is downloaded.

A graded history record has the official fields ``input_prompt``, ``cleaned_model_completion``,
``is_correct`` ("yes"/"no"), ``subject`` and ``alpha_model_name``, plus ``question_id`` (for splitting by
question) and ``target_confidence`` (the target's own max-prob, the self-confidence baseline).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml2026.core.validate import positive_int

__all__ = [
    "ATTRIBUTES",
    "HISTORY_FIELDS",
    "FactKB",
    "Question",
    "Split",
    "World",
    "make_corpus",
    "make_world",
    "read_history",
    "split_by_question",
    "write_history",
]

ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "color": ("red", "blue", "green", "amber", "violet", "teal", "gray", "gold", "ivory", "coral", "olive", "navy"),
    "city": ("Arlo", "Bexa", "Cirn", "Dovo", "Elmt", "Fasq", "Grom", "Hult", "Isko", "Jarv", "Kell", "Lutz"),
    "animal": ("otter", "heron", "lynx", "moth", "newt", "orca", "puma", "quail", "raven", "shrew", "tapir", "vole"),
}
HISTORY_FIELDS = ("input_prompt", "cleaned_model_completion", "is_correct", "subject", "alpha_model_name")
_SYLLABLES = ("ba", "ve", "lor", "mi", "tan", "zu", "ko", "ri", "sel", "dun", "qa", "po", "nex", "ul", "fi", "gar")


@dataclass(frozen=True)
class Question:
    """One question of the world (``kind`` "arith" or "fact") with its gold answer."""

    qid: int
    kind: str
    text: str
    answer: str
    a: int = 0  # arithmetic operands and operator ("" for facts)
    b: int = 0
    op: str = ""
    entity: int = -1  # fact: entity index, attribute name, popularity rank (0 = most frequent)
    attribute: str = ""
    rank: int = -1


@dataclass(frozen=True)
class FactKB:
    """Entities with one value per attribute and a Zipf popularity (``weights`` sums to 1 over entities)."""

    names: tuple[str, ...]
    values: dict[str, np.ndarray]  # attribute -> (n_entities,) index into ATTRIBUTES[attribute]
    weights: np.ndarray  # (n_entities,) corpus frequency of each entity

    def answer(self, entity: int, attribute: str) -> str:
        return ATTRIBUTES[attribute][int(self.values[attribute][entity])]


@dataclass(frozen=True)
class World:
    questions: tuple[Question, ...]
    kb: FactKB


def _arith(rng: np.random.Generator) -> tuple[int, int, str, int]:
    op = ("+", "-", "*")[int(rng.integers(3))]
    if op == "*":
        a = int(rng.integers(2, 100))
        b = int(rng.integers(2, 10))
    else:
        a = int(rng.integers(1, 10 ** int(rng.integers(1, 4))))
        b = int(rng.integers(1, 10 ** int(rng.integers(1, 4))))
        if op == "-" and b > a:
            a, b = b, a
    return a, b, op, {"+": a + b, "-": a - b, "*": a * b}[op]


def _make_kb(n_entities: int, zipf: float, rng: np.random.Generator, regularity: float = 0.0) -> FactKB:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n_entities:
        k = int(rng.integers(2, 4))
        name = "".join(_SYLLABLES[int(i)] for i in rng.integers(0, len(_SYLLABLES), size=k)).capitalize()
        if name not in seen:
            seen.add(name)
            names.append(name)
    values = {attr: rng.integers(0, len(vals), size=n_entities) for attr, vals in ATTRIBUTES.items()}
    if regularity > 0.0:
        # a share `regularity` of the facts follow a rule (the value is fixed by the name's first syllable,
        # one random map per attribute), so a model can learn them from a few examples and generalise to
        # entities it never saw, as LLMs infer facts from regularities; the others are arbitrary
        first = np.array([next(i for i, syl in enumerate(_SYLLABLES) if n.lower().startswith(syl)) for n in names])
        for attr, vals in ATTRIBUTES.items():
            rule = rng.integers(0, len(vals), size=len(_SYLLABLES))
            follows = rng.random(n_entities) < regularity
            values[attr] = np.where(follows, rule[first], values[attr])
    w = 1.0 / np.arange(1, n_entities + 1) ** zipf  # entity i has popularity rank i
    return FactKB(tuple(names), values, w / w.sum())


def arith_question(qid: int, a: int, b: int, op: str) -> Question:
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    return Question(qid, "arith", f"What is {a} {op} {b}?", str(value), a=a, b=b, op=op)


def fact_question(qid: int, kb: FactKB, entity: int, attribute: str) -> Question:
    return Question(qid, "fact", f"What is the {attribute} of {kb.names[entity]}?", kb.answer(entity, attribute),
                    entity=entity, attribute=attribute, rank=entity)


def make_world(
    n_questions: int, rng: np.random.Generator, *, frac_arith: float = 0.5, n_entities: int = 3000,
    zipf: float = 1.1, popularity: float = 0.0, regularity: float = 0.0,
) -> World:
    """``n_questions`` distinct questions (a ``frac_arith`` share arithmetic) over a fresh fact KB.

    Fact questions are drawn without replacement over (entity, attribute) pairs with probability
    proportional to the entity's corpus frequency raised to ``popularity``: 0 draws them uniformly (most
    ask about rare entities, which no target has seen), 1 asks about entities as often as text mentions
    them (a benchmark of facts that are written about, as TriviaQA's are). ``regularity`` is the share of
    facts whose value follows a rule of the entity's name (0: every fact arbitrary, the design before
    issue 58).
    """
    n_questions = positive_int(n_questions, "n_questions", minimum=10, maximum=10**6)
    n_entities = positive_int(n_entities, "n_entities", minimum=10, maximum=10**6)
    if not 0.0 <= frac_arith <= 1.0:
        raise ValueError(f"frac_arith: must be in [0, 1], got {frac_arith}")
    if not 0.0 <= popularity <= 4.0:
        raise ValueError(f"popularity: must be in [0, 4], got {popularity}")
    if not 0.0 <= regularity <= 1.0:
        raise ValueError(f"regularity: must be in [0, 1], got {regularity}")
    kb = _make_kb(n_entities, zipf, rng, regularity)
    n_arith = int(round(frac_arith * n_questions))
    n_fact = n_questions - n_arith
    if n_fact > n_entities * len(ATTRIBUTES):
        raise ValueError(f"n_questions: {n_fact} fact questions exceed the {n_entities * len(ATTRIBUTES)} facts")
    qs: list[Question] = []
    seen: set[tuple[int, int, str]] = set()
    while len(seen) < n_arith:
        a, b, op, _ = _arith(rng)
        if (a, b, op) not in seen:
            seen.add((a, b, op))
            qs.append(arith_question(len(qs), a, b, op))
    attrs = list(ATTRIBUTES)
    if popularity == 0.0:  # the draw of every run before issue 58, kept bit for bit
        pairs = rng.choice(n_entities * len(attrs), size=n_fact, replace=False)
    else:
        w = np.repeat(kb.weights ** popularity, len(attrs))  # pair p = entity * n_attrs + attribute
        pairs = rng.choice(n_entities * len(attrs), size=n_fact, replace=False, p=w / w.sum())
    for p in pairs:
        qs.append(fact_question(len(qs), kb, int(p) // len(attrs), attrs[int(p) % len(attrs)]))
    order = rng.permutation(len(qs))
    qs = [qs[int(i)] for i in order]
    qs = [Question(i, q.kind, q.text, q.answer, q.a, q.b, q.op, q.entity, q.attribute, q.rank)
          for i, q in enumerate(qs)]
    return World(tuple(qs), kb)


def make_corpus(world: World, n_arith: int, n_fact: int, rng: np.random.Generator) -> list[Question]:
    """A target's own training sample: fresh arithmetic problems and Zipf-weighted fact statements.

    Arithmetic problems are drawn from the question distribution (so some coincide with world questions,
    as web text overlaps benchmarks); facts are drawn with the KB's popularity weights, so popular facts are
    seen many times and rare ones rarely or never.
    """
    out: list[Question] = []
    for _ in range(n_arith):
        a, b, op, _ = _arith(rng)
        out.append(arith_question(-1, a, b, op))
    attrs = list(ATTRIBUTES)
    ents = rng.choice(len(world.kb.names), size=n_fact, p=world.kb.weights)
    for e, ai in zip(ents, rng.integers(0, len(attrs), size=n_fact), strict=True):
        out.append(fact_question(-1, world.kb, int(e), attrs[int(ai)]))
    return [out[int(i)] for i in rng.permutation(len(out))]


@dataclass(frozen=True)
class Split:
    """Question ids of the train (first 70%), calibration (70-75%) and eval (last 25%) parts."""

    train: np.ndarray
    cal: np.ndarray
    eval: np.ndarray

    def part_of(self, qids: np.ndarray) -> np.ndarray:
        """0/1/2 (train/cal/eval) for each question id."""
        lookup = np.full(int(max(self.train.max(), self.cal.max(), self.eval.max())) + 1, -1)
        lookup[self.train], lookup[self.cal], lookup[self.eval] = 0, 1, 2
        return lookup[np.asarray(qids)]


def split_by_question(
    n_questions: int, rng: np.random.Generator, fractions: tuple[float, float] = (0.70, 0.75)
) -> Split:
    """Shuffle question ids and cut at 70% and 75% (official split, done by question so that no question
    is in train for one target and in eval for another)."""
    n = positive_int(n_questions, "n_questions", minimum=20)
    lo, hi = fractions
    if not 0 < lo < hi < 1:
        raise ValueError(f"fractions: need 0 < train < train+cal < 1, got {fractions}")
    perm = rng.permutation(n)
    a, b = int(round(lo * n)), int(round(hi * n))
    return Split(np.sort(perm[:a]), np.sort(perm[a:b]), np.sort(perm[b:]))


def write_history(records: Iterable[dict[str, object]], path: str | Path) -> int:
    """Write graded records as jsonl; returns the number written. Each needs the official fields."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for i, r in enumerate(records):
            missing = [f for f in HISTORY_FIELDS if f not in r]
            if missing:
                raise ValueError(f"records[{i}]: missing fields {missing}")
            if r["is_correct"] not in ("yes", "no"):
                raise ValueError(f"records[{i}].is_correct: must be 'yes' or 'no', got {r['is_correct']!r}")
            fh.write(json.dumps(r) + "\n")
            n += 1
    return n


def read_history(path: str | Path) -> list[dict[str, object]]:
    """Read a jsonl history, checking the official fields on every line."""
    out: list[dict[str, object]] = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {i + 1} is not JSON: {exc}") from None
            missing = [f for f in HISTORY_FIELDS if f not in r]
            if missing:
                raise ValueError(f"{path}: line {i + 1} lacks fields {missing}")
            out.append(r)
    return out


def labels_of(records: Sequence[dict[str, object]]) -> np.ndarray:
    """0/1 correctness labels of history records."""
    return np.array([1 if r["is_correct"] == "yes" else 0 for r in records], dtype=np.int64)
