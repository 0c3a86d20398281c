"""Oracles and rewards of STRIDE: the consistency gate (Sec. 3.4), the protein reward, the molecule reward.

- :func:`completion_reward`: 0 unless the completion parses, executes on ``x_src`` and reproduces the
  written ``x_out``; then the task reward of ``(x_src, x_out)``.
- :class:`ProteinOracle`: the brief's synthetic epistatic oracle (the paper's SaProt-650M fluorescence
  regressor needs a GPU and weights; the interface is the same, ``score(seq)``):
  ``f(x) = sum_{t=0}^{|x|-3} W[x_t, x_{t+1}, x_{t+2}] - 0.5 * | |x| - L_ref |``, ``W ~ N(0, 1)`` over 20^3.
- :func:`protein_reward`: the paper's ``R = 1[1 <= d <= 3] + 1[f(x_out) > f(x_src)]`` or the official
  code's ``0.1*format + 1.0*consistency + (f(x_out) - f(x_src))``.
- :func:`molecule_reward`: the official ``chem_reward``: ``valid * R_prop * R_sim + R_stable`` on RDKit
  descriptors (``MolLogP, qed, CalcTPSA, CalcNumHBA, CalcNumHBD``) and Morgan(r=2, 2048) Tanimoto.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from .edits import UnexecutableEdit, apply_script, edit_distance, parse_completion

__all__ = [
    "AMINO_ACIDS",
    "ProteinOracle",
    "protein_reward",
    "completion_reward",
    "PROPERTIES",
    "STRICT_THRESHOLDS",
    "INSTRUCTIONS",
    "MoleculeProps",
    "molecule_props",
    "tanimoto",
    "MoleculeScore",
    "score_molecule_edit",
    "molecule_reward",
    "canonical_smiles",
]

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
_AA_INDEX = {a: i for i, a in enumerate(AMINO_ACIDS)}


class ProteinOracle:
    """The synthetic epistatic fitness ``f`` (deterministic given ``seed``; length-agnostic).

    Parameters
    ----------
    seed : seeds the 20x20x20 table ``W ~ N(0, 1)`` of trimer weights.
    ref_length : ``|x_src|`` of the length penalty ``-0.5 | |x| - |x_src| |``.
    """

    def __init__(self, seed: int, ref_length: int = 32) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed = {seed!r}: must be a non-negative integer")
        if isinstance(ref_length, bool) or not isinstance(ref_length, (int, np.integer)) or ref_length < 1:
            raise ValueError(f"ref_length = {ref_length!r}: must be a positive integer")
        self.seed, self.ref_length = int(seed), int(ref_length)
        self.W = np.random.default_rng(np.random.SeedSequence([int(seed), 17])).standard_normal((20, 20, 20))

    def encode(self, seq: str) -> np.ndarray:
        if not isinstance(seq, str):
            raise ValueError(f"seq: expected a string of amino acids, got {type(seq).__name__}")
        bad = set(seq) - set(AMINO_ACIDS)
        if bad:
            raise ValueError(f"seq: characters {sorted(bad)} are not amino acids ({AMINO_ACIDS})")
        return np.fromiter((_AA_INDEX[c] for c in seq), dtype=np.int64, count=len(seq))

    def score(self, seq: str) -> float:
        """``f(seq)``; ValueError naming ``seq`` for a character outside the 20 amino acids."""
        x = self.encode(seq)
        trimers = float(self.W[x[:-2], x[1:-1], x[2:]].sum()) if len(x) >= 3 else 0.0
        return trimers - 0.5 * abs(len(x) - self.ref_length)

    def score_batch(self, x: np.ndarray) -> np.ndarray:
        """``f`` of each row of an int array ``(n, L)`` of amino-acid indices (all of length ``L``)."""
        x = np.asarray(x)
        if x.ndim != 2 or not np.issubdtype(x.dtype, np.integer) or x.size == 0:
            raise ValueError("x: expected a non-empty 2-D integer array")
        if x.min() < 0 or x.max() >= 20:
            raise ValueError("x: indices must lie in 0..19")
        tri = self.W[x[:, :-2], x[:, 1:-1], x[:, 2:]].sum(axis=1) if x.shape[1] >= 3 else np.zeros(len(x))
        return tri - 0.5 * abs(x.shape[1] - self.ref_length)


def is_protein(seq: object) -> bool:
    return isinstance(seq, str) and len(seq) > 0 and set(seq) <= set(AMINO_ACIDS)


def protein_reward(
    src: str, out: str, oracle: ProteinOracle, mode: Literal["paper", "official"] = "paper", max_edits: int = 3
) -> float:
    """Task reward of a consistent completion (the gate is applied by :func:`completion_reward`).

    ``paper``: ``1[1 <= d <= max_edits] + 1[f(out) > f(src)]`` with ``d = Levenshtein(src, out)``; an
    output outside the alphabet gets 0. ``official``: ``0.1 * format + 1.0 * consistency + (f(out) -
    f(src))`` where format and consistency are 1 here (the gate has passed) and an invalid output gets 0.1.
    """
    if mode not in ("paper", "official"):
        raise ValueError(f"mode = {mode!r}: must be 'paper' or 'official'")
    if not is_protein(src):
        raise ValueError("src: must be a non-empty amino-acid string")
    if not is_protein(out):
        return 0.0 if mode == "paper" else 0.1
    if mode == "paper":
        d = edit_distance(src, out)
        return float(1 <= d <= max_edits) + float(oracle.score(out) > oracle.score(src))
    return 0.1 + 1.0 + (oracle.score(out) - oracle.score(src))


def completion_reward(
    src: str | Sequence[str], completion_text: str, reward_fn: Callable[[Any, Any], float]
) -> float:
    """The consistency gate, then the task reward (Sec. 3.4).

    0.0 unless ``completion_text`` parses (:func:`parse_completion`), its script executes on ``src`` and the
    executed result equals the written output (joined tokens for a token list); otherwise
    ``reward_fn(src, executed_output)``. Never raises on a malformed completion.
    """
    if not isinstance(src, (str, list, tuple)) or len(src) == 0:
        raise ValueError("src: expected a non-empty string or list of tokens")
    if not callable(reward_fn):
        raise ValueError("reward_fn: must be callable")
    parsed = parse_completion(completion_text)
    if parsed is None:
        return 0.0
    script, written = parsed
    try:
        executed = apply_script(src, script)
    except UnexecutableEdit:
        return 0.0
    text = executed if isinstance(executed, str) else "".join(executed)
    if text != written:
        return 0.0
    return float(reward_fn(src, executed))


# ------------------------------------------------------------------------------------------------------
# Molecules
# ------------------------------------------------------------------------------------------------------
PROPERTIES: tuple[str, ...] = ("logP", "QED", "TPSA", "HBA", "HBD")
STRICT_THRESHOLDS: dict[str, float] = {"logP": 0.5, "QED": 0.1, "TPSA": 10.0, "HBA": 1.0, "HBD": 1.0}
# instruction id -> ((property, direction), ...); direction +1 = increase, -1 = decrease (brief, Sec. Method 4)
INSTRUCTIONS: dict[int, tuple[tuple[str, int], ...]] = {
    101: (("logP", -1),),  # more soluble in water
    102: (("logP", +1),),
    103: (("QED", +1),),
    104: (("QED", -1),),
    105: (("TPSA", -1),),  # higher permeability
    106: (("TPSA", +1),),
    107: (("HBA", +1),),
    108: (("HBD", +1),),
    201: (("logP", -1), ("HBA", +1)),
    202: (("logP", +1), ("HBA", +1)),
    203: (("logP", -1), ("HBD", +1)),
    204: (("logP", +1), ("HBD", +1)),
    205: (("logP", -1), ("TPSA", -1)),
    206: (("logP", -1), ("TPSA", +1)),
}


@dataclass(frozen=True)
class MoleculeProps:
    """RDKit descriptors of one molecule and its Morgan fingerprint (for Tanimoto)."""

    smiles: str
    values: dict[str, float]
    fingerprint: Any


@lru_cache(maxsize=200_000)
def _props_cached(smiles: str) -> MoleculeProps | None:
    from rdkit import Chem, RDLogger
    from rdkit.Chem import QED, Crippen, rdMolDescriptors

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]  # rdkit's stubs miss these
    mol = Chem.MolFromSmiles(smiles)
    if mol is None or mol.GetNumAtoms() == 0:
        return None
    gen = _morgan_generator()
    values = {
        "logP": float(Crippen.MolLogP(mol)),  # type: ignore[attr-defined]
        "QED": float(QED.qed(mol)),
        "TPSA": float(rdMolDescriptors.CalcTPSA(mol)),
        "HBA": float(rdMolDescriptors.CalcNumHBA(mol)),
        "HBD": float(rdMolDescriptors.CalcNumHBD(mol)),
    }
    return MoleculeProps(Chem.MolToSmiles(mol), values, gen.GetFingerprint(mol))


@lru_cache(maxsize=1)
def _morgan_generator() -> Any:
    from rdkit.Chem import rdFingerprintGenerator

    return rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)


def molecule_props(smiles: str) -> MoleculeProps | None:
    """Descriptors of ``smiles``, or None if RDKit cannot parse it (an invalid molecule)."""
    if not isinstance(smiles, str):
        raise ValueError(f"smiles: expected a string, got {type(smiles).__name__}")
    if not smiles or any(c.isspace() for c in smiles):
        return None
    return _props_cached(smiles)


def canonical_smiles(smiles: str) -> str | None:
    """RDKit's canonical SMILES of ``smiles`` (None when invalid)."""
    p = molecule_props(smiles)
    return None if p is None else p.smiles


def tanimoto(a: MoleculeProps, b: MoleculeProps) -> float:
    """Morgan (radius 2, 2048 bits) Tanimoto similarity."""
    from rdkit import DataStructs

    return float(DataStructs.TanimotoSimilarity(a.fingerprint, b.fingerprint))


@dataclass(frozen=True)
class MoleculeScore:
    """The parts of ``chem_reward`` for one (source, output, instruction)."""

    valid: bool
    r_prop: float  # 1 strict, 0.5 loose, 0 otherwise
    r_sim: float  # 1 if Tanimoto > 0.65, 0.5 if >= 0.4, else 0
    r_stable: float  # -0.5 if a non-instructed property drifts by >= its threshold
    similarity: float
    shifted: bool

    @property
    def reward(self) -> float:
        return float(self.valid) * self.r_prop * self.r_sim + self.r_stable

    @property
    def strict(self) -> bool:
        return self.valid and self.r_prop == 1.0

    @property
    def loose(self) -> bool:
        return self.valid and self.r_prop >= 0.5


def score_molecule_edit(src_smiles: str, out_smiles: str, instruction: int) -> MoleculeScore:
    """The molecule reward's parts for editing ``src_smiles`` into ``out_smiles`` under ``instruction``."""
    if instruction not in INSTRUCTIONS:
        raise ValueError(f"instruction = {instruction!r}: must be one of {sorted(INSTRUCTIONS)}")
    src = molecule_props(src_smiles)
    if src is None:
        raise ValueError(f"src_smiles = {src_smiles!r}: not a valid molecule")
    out = molecule_props(out_smiles)
    if out is None:
        return MoleculeScore(False, 0.0, 0.0, 0.0, 0.0, False)
    targets = INSTRUCTIONS[instruction]
    deltas = {k: out.values[k] - src.values[k] for k in PROPERTIES}
    signed = [deltas[p] * s for p, s in targets]
    if all(v >= STRICT_THRESHOLDS[p] for v, (p, _) in zip(signed, targets, strict=True)):
        r_prop = 1.0
    elif all(v > 0 for v in signed):
        r_prop = 0.5
    else:
        r_prop = 0.0
    sim = tanimoto(src, out)
    r_sim = 1.0 if sim > 0.65 else (0.5 if sim >= 0.4 else 0.0)
    instructed = {p for p, _ in targets}
    shifted = any(abs(deltas[p]) >= STRICT_THRESHOLDS[p] for p in PROPERTIES if p not in instructed)
    return MoleculeScore(True, r_prop, r_sim, -0.5 if shifted else 0.0, sim, shifted)


def molecule_reward(src_smiles: str, out_smiles: str, instruction: int) -> float:
    """The official ``chem_reward``: ``valid * R_prop * R_sim + R_stable``."""
    return score_molecule_edit(src_smiles, out_smiles, instruction).reward
