"""Inference (Sec. 3.5: sample, parse, execute on ``x_src``, verify against the written output) and the
metrics of the two tasks.

Protein, per source with N samples: **success** = valid alphabet AND (trajectory models) consistent AND
``1 <= Levenshtein(x_src, x_out) <= 3`` AND ``f(x_out) > f(x_src)``; **unique** = distinct successful
outputs; **novel** = unique successes not among that source's SFT targets.
Molecules, per (molecule, instruction) prompt: valid (consistent and RDKit-parsable), strict / loose
success, Tanimoto to the source, shift (a non-instructed property drifts by >= its threshold).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .edits import UnexecutableEdit, apply_script, edit_distance, parse_completion
from .rewards import ProteinOracle, canonical_smiles, is_protein, score_molecule_edit

__all__ = ["executed_output", "ProteinMetrics", "protein_metrics", "MoleculeMetrics", "molecule_metrics"]


def executed_output(src: str | Sequence[str], text: str, trajectory: bool) -> str | None:
    """The output a completion stands for after the consistency gate, or None when it fails.

    ``trajectory``: the completion must parse, execute on ``src`` and reproduce its written output (the
    executed sequence is returned, joined for token lists). Otherwise (Vanilla SFT) the text itself.
    """
    if not trajectory:
        return text if text else None
    parsed = parse_completion(text)
    if parsed is None:
        return None
    script, written = parsed
    try:
        out = apply_script(src, script)
    except UnexecutableEdit:
        return None
    joined = out if isinstance(out, str) else "".join(out)
    return joined if joined == written else None


@dataclass(frozen=True)
class ProteinMetrics:
    """Means over sources of per-source rates, and pooled uniqueness / novelty."""

    success: float  # mean over sources of (successes / N)
    unique: float  # mean over sources of (distinct successes / N)
    novelty: float  # pooled: novel unique successes / unique successes (nan if none)
    consistent: float  # fraction of samples passing the gate
    copy_rate: float  # fraction of samples with x_out == x_src (d = 0)
    n_sources: int
    n_samples: int


def protein_metrics(oracle: ProteinOracle, sources: Sequence[str], outputs: Sequence[Sequence[str | None]],
                    targets: dict[str, list[str]], max_edits: int = 3) -> ProteinMetrics:
    """Metrics of ``outputs[k]`` (N gated outputs, None = failed the gate) for ``sources[k]``."""
    if len(sources) != len(outputs) or not sources:
        raise ValueError("sources and outputs: need equal, non-zero lengths")
    succ, uniq, n_novel, n_uniq, cons, copies, total = [], [], 0, 0, 0, 0, 0
    for src, outs in zip(sources, outputs, strict=True):
        if not outs:
            raise ValueError("outputs: every source needs at least one sample")
        f_src = oracle.score(src)
        good = set()
        n_good = 0
        for o in outs:
            total += 1
            if o is None:
                continue
            cons += 1
            copies += o == src
            if is_protein(o) and 1 <= edit_distance(src, o) <= max_edits and oracle.score(o) > f_src:
                n_good += 1
                good.add(o)
        succ.append(n_good / len(outs))
        uniq.append(len(good) / len(outs))
        n_uniq += len(good)
        n_novel += len(good - set(targets.get(src, [])))
    return ProteinMetrics(float(np.mean(succ)), float(np.mean(uniq)),
                          n_novel / n_uniq if n_uniq else float("nan"), cons / total, copies / total,
                          len(sources), total)


@dataclass(frozen=True)
class MoleculeMetrics:
    valid: float
    strict: float
    loose: float
    similarity: float  # mean Tanimoto over valid outputs (nan if none)
    shift_rate: float  # over valid outputs (nan if none)
    unique: float  # distinct canonical valid outputs / prompts
    n_prompts: int


def molecule_metrics(prompts: Sequence[tuple[str, int]], outputs: Sequence[str | None]) -> MoleculeMetrics:
    """Metrics of one gated output per (source SMILES, instruction) prompt."""
    if len(prompts) != len(outputs) or not prompts:
        raise ValueError("prompts and outputs: need equal, non-zero lengths")
    valid = strict = loose = shifted = 0
    sims = []
    canon = set()
    for (src, ins), out in zip(prompts, outputs, strict=True):
        if out is None:
            continue
        s = score_molecule_edit(src, out, ins)
        if not s.valid:
            continue
        valid += 1
        strict += s.strict
        loose += s.loose
        shifted += s.shifted
        sims.append(s.similarity)
        canon.add((canonical_smiles(out), ins, src))
    n = len(prompts)
    return MoleculeMetrics(valid / n, strict / n, loose / n, float(np.mean(sims)) if sims else float("nan"),
                           shifted / valid if valid else float("nan"), len(canon) / n, n)
