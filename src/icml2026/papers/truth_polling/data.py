"""Synthetic corpora (brief Sec. 6): facts with clean / myth / rare types, 2-digit sums, random-digit lines.

A corpus is a list of (prompt, answer) lines; language models read them as the text ``"prompt answer ."``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml2026.core.validate import finite_number, positive_int

__all__ = [
    "ATTRIBUTES",
    "ArithmeticTask",
    "FactCorpus",
    "RandomDigitTask",
    "make_arithmetic",
    "make_fact_corpus",
    "make_random_digit_task",
    "random_names",
    "random_string",
    "subsample_lines",
    "zipf_digit_distribution",
]

ATTRIBUTES = ("color", "city", "metal", "sport")
_VALUES = ("red", "green", "blue", "amber", "violet", "white", "black", "olive", "pink", "grey")
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z")
_VOWELS = ("a", "e", "i", "o", "u")
KINDS = ("clean", "myth", "rare")


def random_names(n: int, rng: np.random.Generator, n_syllables: int = 3) -> list[str]:
    """``n`` distinct pronounceable names: ``n_syllables`` consonant-vowel syllables and a final consonant."""
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        s = (
            "".join(
                _ONSETS[rng.integers(len(_ONSETS))] + _VOWELS[rng.integers(len(_VOWELS))] for _ in range(n_syllables)
            )
            + _ONSETS[rng.integers(len(_ONSETS))]
        )
        if s not in seen:
            seen.add(s)
            names.append(s)
    return names


@dataclass
class FactCorpus:
    """Questions, their gold answers and the shared training lines.

    questions : (q,) prompts ``"<entity> <attribute>"``; options : the V answer strings.
    gold : (q,) option index of the truth; myth : (q,) index of the popular wrong value (-1 if none).
    kind : (q,) "clean" / "myth" / "rare"; lines : training lines (prompt, answer string).
    """

    questions: list[str]
    options: list[str]
    gold: np.ndarray
    myth: np.ndarray
    kind: np.ndarray
    lines: list[tuple[str, str]]


def make_fact_corpus(
    n_entities: int,
    rng: np.random.Generator,
    *,
    n_options: int = 4,
    frac_myth: float = 0.3,
    frac_rare: float = 0.2,
    clean_repeats: int = 4,
    clean_noise: float = 0.5,
    myth_true: int = 1,
    myth_false: int = 3,
) -> FactCorpus:
    """Facts corpus [ours, brief Sec. 6]: one (entity, attribute) question per entity.

    clean : the true value ``clean_repeats`` times, plus with prob. ``clean_noise`` one random wrong value.
    myth : the true value ``myth_true`` times and one popular wrong value ``myth_false`` times (3:1).
    rare : the true value once.
    """
    n_entities = positive_int(n_entities, "n_entities", minimum=3)
    n_options = positive_int(n_options, "n_options", minimum=2)
    for name, v in (("frac_myth", frac_myth), ("frac_rare", frac_rare), ("clean_noise", clean_noise)):
        finite_number(v, name, lo=0, hi=1)
    clean_repeats = positive_int(clean_repeats, "clean_repeats")
    myth_true = positive_int(myth_true, "myth_true")
    myth_false = positive_int(myth_false, "myth_false")
    if not 2 <= n_options <= len(_VALUES):
        raise ValueError(f"n_options must be in [2, {len(_VALUES)}], got {n_options}")
    if frac_myth < 0 or frac_rare < 0 or frac_myth + frac_rare > 1:
        raise ValueError("need frac_myth, frac_rare >= 0 with frac_myth + frac_rare <= 1")
    if myth_false <= myth_true:
        raise ValueError("a myth needs the wrong value more frequent than the true one (myth_false > myth_true)")
    options = list(_VALUES[:n_options])
    names = random_names(n_entities, rng)
    attrs = [ATTRIBUTES[i] for i in rng.integers(0, len(ATTRIBUTES), size=n_entities)]
    questions = [f"{e} {a}" for e, a in zip(names, attrs, strict=True)]
    n_myth, n_rare = round(frac_myth * n_entities), round(frac_rare * n_entities)
    kind = np.array(["myth"] * n_myth + ["rare"] * n_rare + ["clean"] * (n_entities - n_myth - n_rare))
    kind = kind[rng.permutation(n_entities)]
    gold = rng.integers(0, n_options, size=n_entities)
    other = (gold + rng.integers(1, n_options, size=n_entities)) % n_options  # a uniformly chosen wrong value
    myth = np.where(kind == "myth", other, -1)
    lines: list[tuple[str, str]] = []
    for i, q in enumerate(questions):
        if kind[i] == "clean":
            lines += [(q, options[gold[i]])] * clean_repeats
            if rng.random() < clean_noise:
                lines.append((q, options[other[i]]))
        elif kind[i] == "myth":
            lines += [(q, options[gold[i]])] * myth_true + [(q, options[other[i]])] * myth_false
        else:
            lines.append((q, options[gold[i]]))
    order = rng.permutation(len(lines))
    return FactCorpus(questions, options, gold, myth, kind, [lines[i] for i in order])


def subsample_lines(lines: list[tuple[str, str]], keep: float, rng: np.random.Generator) -> list[tuple[str, str]]:
    """Each line kept independently with probability ``keep`` (models see overlapping samples)."""
    if not 0 < keep <= 1:
        raise ValueError(f"keep must be in (0, 1], got {keep}")
    mask = rng.random(len(lines)) < keep
    return [line for line, k in zip(lines, mask, strict=True) if k]


def _spaced(n: int) -> str:
    return " ".join(str(n))


@dataclass
class ArithmeticTask:
    """Verified domain: 2-digit sums, written digit by digit (``"4 7 + 3 8 ="`` -> ``"8 5"``)."""

    train: list[tuple[str, str]]
    questions: list[str]
    gold: np.ndarray  # (q,) index into options
    options: list[str]  # every possible sum, spaced
    sums: np.ndarray  # (q,) the integer answers

    def check(self, question_index: int, answer: str | None) -> bool:
        """The exact checker: does ``answer`` parse to the true sum?"""
        if answer is None:
            return False
        digits = "".join(str(answer).split())
        return digits.isdigit() and int(digits) == int(self.sums[question_index])


def make_arithmetic(
    n_test: int, rng: np.random.Generator, *, train_frac: float = 0.5, low: int = 10, high: int = 99
) -> ArithmeticTask:
    """All a + b with a, b in [low, high]; a random ``train_frac`` of them are training lines, ``n_test`` of
    the rest are questions."""
    low, high = positive_int(low, "low", minimum=0), positive_int(high, "high", minimum=0)
    if high <= low:
        raise ValueError(f"high = {high}: must be > low ({low})")
    finite_number(train_frac, "train_frac", lo=0, hi=1, hi_open=True)
    pairs = [(a, b) for a in range(low, high + 1) for b in range(low, high + 1)]
    order = rng.permutation(len(pairs))
    n_train = int(train_frac * len(pairs))
    if n_test < 1 or n_train + n_test > len(pairs):
        raise ValueError(f"n_test={n_test} does not fit beside {n_train} training pairs out of {len(pairs)}")
    train = [(f"{_spaced(pairs[i][0])} + {_spaced(pairs[i][1])} =", _spaced(sum(pairs[i]))) for i in order[:n_train]]
    test = [pairs[i] for i in order[n_train : n_train + n_test]]
    options = [_spaced(s) for s in range(2 * low, 2 * high + 1)]
    sums = np.array([a + b for a, b in test])
    return ArithmeticTask(
        train=train,
        questions=[f"{_spaced(a)} + {_spaced(b)} =" for a, b in test],
        gold=sums - 2 * low,
        options=options,
        sums=sums,
    )


def zipf_digit_distribution(n_values: int, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """A Zipf-shaped distribution over ``n_values`` symbols in a random order (a shared 'favourite digit')."""
    n_values = positive_int(n_values, "n_values")
    exponent = finite_number(exponent, "exponent", lo=0)
    p = 1.0 / np.arange(1, n_values + 1) ** exponent
    return (p / p.sum())[rng.permutation(n_values)]


@dataclass
class RandomDigitTask:
    """Random-string probe (brief Sec. 4, C4): training lines ``"<random string> digit"`` -> a digit."""

    corpora: list[list[tuple[str, str]]]  # one per model
    distributions: np.ndarray  # (m, V) digit distribution each model's corpus was drawn from
    probes: list[str]  # unseen random-string prompts
    options: list[str]


RANDOM_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def random_string(rng: np.random.Generator, length: int) -> str:
    """A random string of ``length`` symbols of :data:`RANDOM_ALPHABET`, written one symbol per word
    (``"x 7 k 2 p q"``), so that word-level and character-level models alike read it in their vocabulary.

    # Deviation: the brief's random strings are contiguous ("x7k2pq"); every such string is a new word, so
    # the three word-level families saw ``<unk>`` for every probe and their output could not depend on it.
    """
    return " ".join(RANDOM_ALPHABET[i] for i in rng.integers(0, len(RANDOM_ALPHABET), size=length))


def make_random_digit_task(
    n_models: int,
    n_lines: int,
    n_probes: int,
    rng: np.random.Generator,
    *,
    shared: bool,
    exponent: float = 1.2,
    string_length: int = 6,
) -> RandomDigitTask:
    """Corpora of random strings followed by a digit drawn from a Zipf-shaped distribution.

    shared=True : one distribution and one corpus pool; each model sees its own 80% subsample of it.
    shared=False : the control; each model's corpus has its own independently drawn (permuted) distribution.
    """
    n_models = positive_int(n_models, "n_models")
    n_lines = positive_int(n_lines, "n_lines")
    n_probes = positive_int(n_probes, "n_probes")
    string_length = positive_int(string_length, "string_length")
    exponent = finite_number(exponent, "exponent", lo=0)
    options = [str(d) for d in range(10)]
    if shared:
        p = zipf_digit_distribution(10, exponent, rng)
        dists = np.tile(p, (n_models, 1))
        pool = [
            (f"{random_string(rng, string_length)} digit", options[rng.choice(10, p=p)])
            for _ in range(int(n_lines / 0.8))
        ]
        corpora = [subsample_lines(pool, 0.8, rng) for _ in range(n_models)]
    else:
        dists = np.stack([zipf_digit_distribution(10, exponent, rng) for _ in range(n_models)])
        corpora = [
            [
                (f"{random_string(rng, string_length)} digit", options[rng.choice(10, p=dists[m])])
                for _ in range(n_lines)
            ]
            for m in range(n_models)
        ]
    probes = [f"{random_string(rng, string_length)} digit" for _ in range(n_probes)]
    return RandomDigitTask(corpora=corpora, distributions=dists, probes=probes, options=options)
