"""Rewards: the consistency gate (criterion 4), the protein oracle and reward, the molecule reward."""

from __future__ import annotations

import numpy as np
import pytest
from rdkit import Chem, DataStructs
from rdkit.Chem import QED, Crippen, rdFingerprintGenerator, rdMolDescriptors

from icml2026.papers.stride import (
    AMINO_ACIDS,
    INSTRUCTIONS,
    Edit,
    ProteinOracle,
    completion_reward,
    molecule_reward,
    protein_reward,
    render_completion,
    score_molecule_edit,
    tokenize_smiles,
)


def test_oracle_is_the_trimer_sum_with_length_penalty():
    oracle = ProteinOracle(7, ref_length=5)
    seq = "ACDKW"
    idx = [AMINO_ACIDS.index(c) for c in seq]
    by_hand = sum(oracle.W[idx[t], idx[t + 1], idx[t + 2]] for t in range(len(seq) - 2))
    assert oracle.score(seq) == pytest.approx(by_hand, abs=1e-12)
    # one residue longer: one more trimer and a 0.5 penalty
    idx2 = idx + [AMINO_ACIDS.index("Y")]
    assert oracle.score(seq + "Y") == pytest.approx(by_hand + oracle.W[idx2[3], idx2[4], idx2[5]] - 0.5, abs=1e-12)
    assert ProteinOracle(7).score("ACDKW") == ProteinOracle(7).score("ACDKW")  # deterministic given the seed
    assert ProteinOracle(8).score("ACDKW") != ProteinOracle(7).score("ACDKW")
    batch = np.array([idx, idx[::-1]])
    np.testing.assert_allclose(oracle.score_batch(batch), [oracle.score(seq), oracle.score(seq[::-1])], atol=1e-12)
    with pytest.raises(ValueError, match="seq"):
        oracle.score("ACDXZ")
    with pytest.raises(ValueError, match="seed"):
        ProteinOracle(-1)


def test_protein_reward_paper_and_official_forms():
    oracle = ProteinOracle(0, ref_length=6)
    src = "ACDEFG"
    better = max((src[:p] + a + src[p + 1:] for p in range(6) for a in AMINO_ACIDS), key=oracle.score)
    worse = min((src[:p] + a + src[p + 1:] for p in range(6) for a in AMINO_ACIDS), key=oracle.score)
    assert protein_reward(src, better, oracle) == 2.0  # 1 edit and improves
    assert protein_reward(src, worse, oracle) == 1.0  # 1 edit, no improvement
    assert protein_reward(src, src, oracle) == 0.0  # copy: d = 0 earns nothing (the anti-copy term)
    far = "WWWWWWWWW"
    assert protein_reward(src, far, oracle) == float(oracle.score(far) > oracle.score(src))  # d > 3
    assert protein_reward(src, "AC1", oracle) == 0.0  # outside the alphabet
    off = protein_reward(src, better, oracle, mode="official")
    assert off == pytest.approx(1.1 + oracle.score(better) - oracle.score(src))
    with pytest.raises(ValueError, match="mode"):
        protein_reward(src, better, oracle, mode="other")  # type: ignore[arg-type]


def test_criterion4_gate_zeroes_inconsistent_completions():
    oracle = ProteinOracle(0, ref_length=6)
    src = "ACDEFG"

    def reward_fn(s, o):
        return protein_reward(s, o, oracle)

    script = [Edit("REPLACE", 2, old="D", new="W")]
    good = render_completion(script, "ACWEFG")
    assert completion_reward(src, good, reward_fn) == reward_fn(src, "ACWEFG") >= 1.0
    # the written output differs from what the script produces -> 0, even though "ACWEFW" alone scores
    lying = render_completion(script, "ACWEFW")
    assert reward_fn(src, "ACWEFW") >= 1.0
    assert completion_reward(src, lying, reward_fn) == 0.0
    # wrong old token, out-of-range index, unparsable text -> 0
    assert completion_reward(src, render_completion([Edit("REPLACE", 2, old="K", new="W")], "ACWEFG"), reward_fn) == 0
    assert completion_reward(src, render_completion([Edit("DELETE", 9, old="K")], "ACDEFG"), reward_fn) == 0
    assert completion_reward(src, "ACWEFG", reward_fn) == 0.0
    assert completion_reward(src, "<edit_traj> FLIP 2 </edit_traj> ACWEFG", reward_fn) == 0.0
    with pytest.raises(ValueError, match="src"):
        completion_reward("", good, reward_fn)


def _rdkit_props(smi):
    mol = Chem.MolFromSmiles(smi)
    return {"logP": Crippen.MolLogP(mol), "QED": QED.qed(mol), "TPSA": rdMolDescriptors.CalcTPSA(mol),
            "HBA": rdMolDescriptors.CalcNumHBA(mol), "HBD": rdMolDescriptors.CalcNumHBD(mol)}, mol


@pytest.mark.parametrize("src,out,ins", [
    ("c1ccccc1C", "c1ccccc1O", 108), ("c1ccccc1C", "c1ccccc1O", 101), ("c1ccc(Cl)cc1C", "c1ccc(O)cc1C", 107),
    ("C1CCC(N)CC1", "C1CCC(Br)CC1", 102), ("c1ccccc1C", "c1ccccc1C(=O)N", 206), ("c1ccccc1C", "c1ccccc1CC", 102),
])
def test_molecule_reward_matches_its_definition(src, out, ins):
    """chem_reward recomputed from RDKit descriptors by hand: valid * R_prop * R_sim + R_stable."""
    ps, ms = _rdkit_props(src)
    po, mo = _rdkit_props(out)
    thr = {"logP": 0.5, "QED": 0.1, "TPSA": 10.0, "HBA": 1.0, "HBD": 1.0}  # brief: strict thresholds
    signed = [(po[p] - ps[p]) * s for p, s in INSTRUCTIONS[ins]]
    r_prop = 1.0 if all(v >= thr[p] for v, (p, _) in zip(signed, INSTRUCTIONS[ins], strict=True)) else (
        0.5 if all(v > 0 for v in signed) else 0.0)
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    sim = DataStructs.TanimotoSimilarity(gen.GetFingerprint(ms), gen.GetFingerprint(mo))
    r_sim = 1.0 if sim > 0.65 else (0.5 if sim >= 0.4 else 0.0)
    named = {p for p, _ in INSTRUCTIONS[ins]}
    r_stable = -0.5 if any(abs(po[p] - ps[p]) >= thr[p] for p in thr if p not in named) else 0.0
    assert molecule_reward(src, out, ins) == pytest.approx(r_prop * r_sim + r_stable, abs=1e-12)
    s = score_molecule_edit(src, out, ins)
    assert s.similarity == pytest.approx(sim)


def test_molecule_reward_special_cases():
    # toluene -> phenol under "more H-bond donors" (108): HBD +1 strictly -> R_prop = 1
    s = score_molecule_edit("c1ccccc1C", "c1ccccc1O", 108)
    assert s.valid and s.r_prop == 1.0 and s.strict
    # an invalid output: valid = 0, reward 0
    bad = score_molecule_edit("c1ccccc1C", "c1ccccc1(", 108)
    assert not bad.valid and bad.reward == 0.0
    # an unchanged molecule moves no property: R_prop = 0, no shift, reward 0
    same = score_molecule_edit("c1ccccc1C", "c1ccccc1C", 101)
    assert same.r_prop == 0.0 and not same.shifted and same.reward == 0.0 and same.similarity == 1.0
    with pytest.raises(ValueError, match="instruction"):
        molecule_reward("C", "CC", 999)
    with pytest.raises(ValueError, match="src_smiles"):
        molecule_reward("C1(", "CC", 101)


def test_token_level_gate_on_smiles():
    src = tokenize_smiles("c1ccccc1C")
    script = [Edit("REPLACE", 8, old="C", new="O")]
    comp = render_completion(script, "c1ccccc1O")

    def fn(s, o):
        return molecule_reward("".join(s), "".join(o), 108)

    assert completion_reward(src, comp, fn) == molecule_reward("c1ccccc1C", "c1ccccc1O", 108) != 0
    assert completion_reward(src, render_completion(script, "c1ccccc1N"), fn) == 0.0
