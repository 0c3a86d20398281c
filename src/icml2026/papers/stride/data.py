"""Synthetic data of the CPU-scale reproduction: the protein stress test and procedural molecule pairs.

Protein (brief, "Protein stress test"): an ancestor of length 32, sources = ancestor + 1-4 random
substitutions, SFT targets = random 1-3-edit variants kept when a *noisy* oracle ``f + N(0, sigma^2)``
exceeds ``f(x_src)``, with ``sigma`` set so that about 55% of the kept targets truly improve.

Molecules (brief, "Molecule editing"): scaffolds x two substituent slots, each molecule checked by RDKit;
pairs are molecules differing in one slot, labelled with every instruction id they satisfy strictly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import Levenshtein
import numpy as np
from scipy.special import ndtr

from icml2026.core.progress import track

from .edits import apply_script, edit_distance, random_edits, tokenize_smiles
from .rewards import (
    AMINO_ACIDS,
    INSTRUCTIONS,
    STRICT_THRESHOLDS,
    ProteinOracle,
    molecule_props,
    molecule_reward,
)

__all__ = [
    "ProteinTask",
    "make_protein_task",
    "calibrate_sigma",
    "make_copy_corpus",
    "random_variant",
    "MoleculeTask",
    "MoleculeExample",
    "SCAFFOLDS",
    "SUBSTITUENTS",
    "make_molecules",
    "make_molecule_task",
]


# --------------------------------------------------------------------------------------------------------
# Protein stress test
# --------------------------------------------------------------------------------------------------------
@dataclass
class ProteinTask:
    """Sources, SFT targets (per source) and the oracle of the protein stress test."""

    oracle: ProteinOracle
    ancestor: str
    train_sources: list[str]
    test_sources: list[str]
    targets: dict[str, list[str]]  # source -> its SFT targets (train and held-out sources alike)
    sigma: float  # noise of the labelling oracle
    true_improve_frac: float  # fraction of kept targets with f(target) > f(source)


def random_variant(src: str, rng: np.random.Generator, max_edits: int = 3) -> str:
    """``src`` after 1..``max_edits`` uniformly random INSERT/DELETE/REPLACE actions (the Random baseline)."""
    n = int(rng.integers(1, max_edits + 1))
    return str(apply_script(src, random_edits(src, n, AMINO_ACIDS, rng)))


def make_copy_corpus(rng: np.random.Generator, n_pairs: int, length: int, max_edits: int = 3
                     ) -> list[tuple[str, str]]:
    """Generic edit demonstrations: ``n_pairs`` random sources (uniform over the 20 amino acids, ``length``
    long) with a random 1..``max_edits``-action variant each, fitness ignored.

    # Deviation: the paper fine-tunes a pretrained LLM, which already copies and indexes its prompt; our
    # tiny model starts from scratch, and trained on variants of one ancestor alone it learns the ancestor
    # instead of reading the source (issue 57: teacher-forced accuracy 0.958 on training vs 0.774 on held-out
    # pairs). These pairs stand in for that pre-training; both SFT arms get them, each in its own format.
    """
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, int) or n_pairs < 0:
        raise ValueError(f"n_pairs = {n_pairs!r}: must be a non-negative integer")
    if isinstance(length, bool) or not isinstance(length, int) or length < 4:
        raise ValueError(f"length = {length!r}: must be an integer >= 4")
    out: list[tuple[str, str]] = []
    while len(out) < n_pairs:
        src = "".join(AMINO_ACIDS[int(i)] for i in rng.integers(0, 20, size=length))
        tgt = random_variant(src, rng, max_edits)
        if tgt != src:
            out.append((src, tgt))
    return out


def calibrate_sigma(deltas: np.ndarray, target_frac: float) -> float:
    """``sigma`` such that, keeping a variant with probability ``Phi(delta / sigma)`` (the noisy oracle
    beats ``f(x_src)``), a fraction ``target_frac`` of the kept variants has ``delta > 0``.

    The kept-and-improving fraction falls from 1 (sigma -> 0) to the base rate ``mean(delta > 0)``
    (sigma -> inf); bisection on log sigma. If ``target_frac`` is below the base rate, the largest
    sigma tried (1e3) is returned.
    """
    d = np.asarray(deltas, dtype=float)
    if d.ndim != 1 or d.size == 0 or not np.all(np.isfinite(d)):
        raise ValueError("deltas: expected a non-empty 1-D finite array")
    if not 0 < target_frac < 1:
        raise ValueError(f"target_frac = {target_frac!r}: must be in (0, 1)")

    def frac(sigma: float) -> float:
        keep = ndtr(d / sigma)
        return float(keep[d > 0].sum() / max(keep.sum(), 1e-300))

    lo, hi = np.log(1e-3), np.log(1e3)
    if frac(np.exp(hi)) >= target_frac:
        return float(np.exp(hi))
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if frac(np.exp(mid)) > target_frac:
            lo = mid
        else:
            hi = mid
    return float(np.exp(0.5 * (lo + hi)))


def make_protein_task(
    rng: np.random.Generator, *, length: int = 32, n_train: int = 200, n_test: int = 20,
    targets_per_source: int = 20, max_substitutions: int = 4, n_ancestor_candidates: int = 1000,
    true_improve_frac: float = 0.55, max_edits: int = 3,
) -> ProteinTask:
    """Build the protein stress test (all randomness from ``rng``).

    The ancestor is the fittest of ``n_ancestor_candidates`` random sequences under the oracle.
    # Deviation: the brief only says "an ancestor of length 32"; we take a fit one, as the paper's wild
    # type (GFP) is a natural, highly fit protein on which most random mutations are deleterious.
    """
    for name, v in (("length", length), ("n_train", n_train), ("n_test", n_test),
                    ("targets_per_source", targets_per_source), ("n_ancestor_candidates", n_ancestor_candidates)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} = {v!r}: must be a positive integer")
    if length < 4:
        raise ValueError(f"length = {length}: must be >= 4")
    oracle = ProteinOracle(int(rng.integers(0, 2**31 - 1)), ref_length=length)
    cand = rng.integers(0, 20, size=(n_ancestor_candidates, length))
    best = cand[int(np.argmax(oracle.score_batch(cand)))]
    ancestor = "".join(AMINO_ACIDS[i] for i in best)
    sources: list[str] = []
    seen = {ancestor}
    while len(sources) < n_train + n_test:
        mutant = list(ancestor)
        for p in rng.choice(length, size=int(rng.integers(1, max_substitutions + 1)), replace=False):
            mutant[p] = AMINO_ACIDS[int(rng.choice([i for i in range(20) if AMINO_ACIDS[i] != mutant[p]]))]
        cand_s = "".join(mutant)
        if cand_s not in seen:
            seen.add(cand_s)
            sources.append(cand_s)
    # calibrate the labelling noise on a pool of random variants
    pool_src = [sources[int(i)] for i in rng.integers(0, len(sources), size=4000)]
    deltas = np.array([oracle.score(random_variant(s, rng, max_edits)) - oracle.score(s) for s in pool_src])
    sigma = calibrate_sigma(deltas, true_improve_frac)
    targets: dict[str, list[str]] = {}
    n_kept = n_true = 0
    for s in sources:
        f_src = oracle.score(s)
        kept: list[str] = []
        for _ in range(200 * targets_per_source):
            if len(kept) == targets_per_source:
                break
            var = random_variant(s, rng, max_edits)
            if var == s or var in kept or not 1 <= edit_distance(s, var) <= max_edits:
                continue
            f_v = oracle.score(var)
            if f_v + sigma * rng.standard_normal() > f_src:
                kept.append(var)
                n_true += f_v > f_src
        n_kept += len(kept)
        targets[s] = kept
    return ProteinTask(oracle, ancestor, sources[:n_train], sources[n_train:], targets, sigma,
                       n_true / max(n_kept, 1))


# --------------------------------------------------------------------------------------------------------
# Molecules
# --------------------------------------------------------------------------------------------------------
# Ring scaffolds with a branch slot {0} (written "(sub)") and a terminal slot {1} (written "sub"); an empty
# slot (H) drops the branch.
SCAFFOLDS: tuple[str, ...] = (
    "c1cc{0}ccc1{1}",  # benzene
    "c1cc{0}cnc1{1}",  # pyridine
    "c1cc{0}sc1{1}",  # thiophene
    "c1cc{0}oc1{1}",  # furan
    "c1cc{0}[nH]c1{1}",  # pyrrole
    "c1nc{0}ncc1{1}",  # pyrimidine
    "C1CC{0}CNC1{1}",  # piperidine
    "C1CC{0}CCC1{1}",  # cyclohexane
    "C1CC{0}CC1{1}",  # cyclopentane
    "C1C{0}OCCN1{1}",  # morpholine
    "C1C{0}CCN1{1}",  # pyrrolidine
    "c1ccc2cc{0}ccc2c1{1}",  # naphthalene
    "O=C1CC{0}CCN1{1}",  # piperidinone
    "c1cc{0}c(C)cc1{1}",  # toluene core
)
SUBSTITUENTS: tuple[str, ...] = (
    "", "F", "Cl", "Br", "C", "CC", "O", "N", "OC", "CO", "C#N", "C(=O)O", "C(=O)N", "NC", "CN",
    "C=O", "CCO", "N(C)C", "C(C)C", "S",
)


def make_molecules() -> list[str]:
    """Every RDKit-valid scaffold x substituent x substituent molecule, as its template SMILES."""
    out = []
    for sc in SCAFFOLDS:
        for a in SUBSTITUENTS:
            for b in SUBSTITUENTS:
                smi = sc.format(f"({a})" if a else "", b)
                if molecule_props(smi) is not None:
                    out.append(smi)
    return out


@dataclass(frozen=True)
class MoleculeExample:
    """One instructed edit: ``src`` -> ``tgt`` (template SMILES) under instruction ``instruction``."""

    src: str
    tgt: str
    instruction: int


@dataclass
class MoleculeTask:
    """Training triples, held-out prompts and the token alphabet of the molecule task."""

    train: list[MoleculeExample]
    test_prompts: list[tuple[str, int]]
    alphabet: list[str]
    n_molecules: int
    n_pairs: int  # labelled (source, target) pairs within the edit-distance limit
    targets: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    neighbours: dict[str, list[str]] = field(default_factory=dict)  # one-slot variants within the distance limit
    n_dropped: int = 0  # strictly satisfied (pair, instruction) labels the reward filter dropped


def _satisfies_strictly(src: dict[str, float], tgt: dict[str, float], instruction: int) -> bool:
    return all((tgt[p] - src[p]) * s >= STRICT_THRESHOLDS[p] for p, s in INSTRUCTIONS[instruction])


def make_molecule_task(rng: np.random.Generator, *, n_train: int = 20000, n_test: int = 500,
                       test_frac: float = 0.1, max_edit_distance: int = 8, n_scaffolds: int = len(SCAFFOLDS),
                       min_reward: float | None = 0.5) -> MoleculeTask:
    """Molecules differing in one slot, labelled with the instructions they satisfy strictly.

    With ``min_reward`` a labelled (source, target, instruction) is kept only when the reward of the task
    (``chem_reward``) scores the target at least that high: the target moves the instructed properties
    strictly, stays similar (Tanimoto >= 0.4) and moves no other property by its threshold.
    # Deviation (issue 57): the brief labels a pair with every instruction it satisfies strictly; scored by
    # the reward itself those targets averaged -0.034 (16.7% drift a property they were not asked to change
    # and get -0.5, 73.7% score 0), below copying the source (0), so the reward's optimum was to fail the
    # gate. The paper's instruction data (DrugAssist / MolOpt) asks for edits that meet the instruction;
    # keeping the targets the reward accepts is that instruction set's spirit. None keeps the brief's labels.

    Source molecules are split into training and held-out sources (``test_frac``); ``n_train`` triples are
    drawn from the training sources' labelled pairs and ``n_test`` (molecule, instruction) prompts from
    the held-out sources'. Pairs whose token edit distance exceeds ``max_edit_distance`` are dropped.
    # Deviation: molecules are kept as their RDKit-valid template SMILES (not RDKit's canonical string,
    # which reorders atoms and turns a one-slot change into a long script); canonical SMILES are used only
    # for uniqueness.
    """
    if isinstance(n_train, bool) or not isinstance(n_train, int) or n_train < 1:
        raise ValueError(f"n_train = {n_train!r}: must be a positive integer")
    if isinstance(n_test, bool) or not isinstance(n_test, int) or n_test < 1:
        raise ValueError(f"n_test = {n_test!r}: must be a positive integer")
    if not 0 < test_frac < 1:
        raise ValueError(f"test_frac = {test_frac!r}: must be in (0, 1)")
    groups: dict[tuple[int, int, int], list[tuple[str, int]]] = {}
    mols = []
    if isinstance(n_scaffolds, bool) or not isinstance(n_scaffolds, int) or not 1 <= n_scaffolds <= len(SCAFFOLDS):
        raise ValueError(f"n_scaffolds = {n_scaffolds!r}: must be an integer in [1, {len(SCAFFOLDS)}]")
    for si, sc in enumerate(SCAFFOLDS[:n_scaffolds]):
        for ai, a in enumerate(SUBSTITUENTS):
            for bi, b in enumerate(SUBSTITUENTS):
                smi = sc.format(f"({a})" if a else "", b)
                if molecule_props(smi) is None:
                    continue
                mols.append(smi)
                groups.setdefault((si, 0, bi), []).append((smi, ai))  # slot 0 varies, slot 1 fixed
                groups.setdefault((si, 1, ai), []).append((smi, bi))
    is_test = {m: bool(rng.random() < test_frac) for m in mols}
    toks = {m: tokenize_smiles(m) for m in mols}
    labelled: dict[str, list[MoleculeExample]] = {}
    neighbours: dict[str, list[str]] = {}
    n_pairs = n_dropped = 0
    for members in track(list(groups.values()), "molecule pairs"):
        for s, _ in members:
            ps = molecule_props(s).values  # type: ignore[union-attr]
            for t, _ in members:
                if t == s:
                    continue
                # the levenshtein package (C) only filters by distance; scripts come from our own DP
                if Levenshtein.distance(toks[s], toks[t]) > max_edit_distance:
                    continue
                neighbours.setdefault(s, []).append(t)
                pt = molecule_props(t).values  # type: ignore[union-attr]
                strict = [ins for ins in INSTRUCTIONS if _satisfies_strictly(ps, pt, ins)]
                hits = [ins for ins in strict if min_reward is None or molecule_reward(s, t, ins) >= min_reward]
                n_dropped += len(strict) - len(hits)
                if not hits:
                    continue
                n_pairs += 1
                labelled.setdefault(s, []).extend(MoleculeExample(s, t, ins) for ins in hits)
    train_pool = [e for m in mols if not is_test[m] for e in labelled.get(m, [])]
    test_pool = sorted({(e.src, e.instruction) for m in mols if is_test[m] for e in labelled.get(m, [])})
    if not train_pool or not test_pool:
        raise ValueError("test_frac: leaves no labelled training or held-out pairs")
    train = [train_pool[int(i)] for i in rng.choice(len(train_pool), size=min(n_train, len(train_pool)),
                                                      replace=False)]
    test = [test_pool[int(i)] for i in rng.choice(len(test_pool), size=min(n_test, len(test_pool)), replace=False)]
    targets: dict[tuple[str, int], list[str]] = {}
    for m in mols:  # training and held-out sources alike (the held-out ones give the ground-truth checks)
        for e in labelled.get(m, []):
            targets.setdefault((e.src, e.instruction), []).append(e.tgt)
    alphabet = sorted({t for m in mols for t in toks[m]})
    return MoleculeTask(train, test, alphabet, len(mols), n_pairs, targets, neighbours, n_dropped)
