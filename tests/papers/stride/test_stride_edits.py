"""The edit engine (brief criteria 1 and 2): shortest scripts, execution, the textual format, SMILES tokens."""

from __future__ import annotations

import itertools

import Levenshtein
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml2026.papers.stride import (
    AMINO_ACIDS,
    Edit,
    UnexecutableEdit,
    apply_script,
    bridge_script,
    edit_distance,
    parse,
    parse_completion,
    random_edits,
    render,
    render_completion,
    shortest_edit_script,
    tokenize_smiles,
)

SMILES_TOKENS = ["C", "c", "N", "n", "O", "o", "(", ")", "=", "#", "1", "2", "Cl", "Br", "[nH]", "[C@@H]", "F"]


def _random_pair(rng: np.random.Generator, alphabet: list[str], as_string: bool):
    m, n = (int(v) for v in rng.integers(0, 41, size=2))
    k = int(rng.integers(1, len(alphabet) + 1))  # small alphabets make many matches and ties
    a = [alphabet[int(i)] for i in rng.integers(0, k, size=m)]
    if rng.random() < 0.5 and m:  # a nearby target: a few random edits of the source
        b = list(apply_script(a, random_edits(a, int(rng.integers(0, 6)), alphabet, rng)))
    else:
        b = [alphabet[int(i)] for i in rng.integers(0, k, size=n)]
    return ("".join(a), "".join(b)) if as_string else (a, b)


def test_criterion1_scripts_replay_and_have_levenshtein_length():
    """1,000 random pairs (20 AA strings and SMILES token lists, lengths 0-40): exact replay, and the script
    length equals the levenshtein package's distance (an independent implementation)."""
    rng = np.random.default_rng(0)
    for trial in range(1000):
        protein = trial % 2 == 0
        src, tgt = _random_pair(rng, list(AMINO_ACIDS) if protein else SMILES_TOKENS, protein)
        script = shortest_edit_script(src, tgt)
        out = apply_script(src, script)
        assert out == tgt and type(out) is type(tgt)
        assert len(script) == Levenshtein.distance(src, tgt) == edit_distance(src, tgt)


def test_edit_distance_matches_brute_force_on_tiny_alphabet():
    """Against the plain O(mn) recursion of Sec. 3.2 written as a double loop (checks the vectorised rows)."""

    def slow(a: str, b: str) -> int:
        d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
        for i, j in itertools.product(range(1, len(a) + 1), range(1, len(b) + 1)):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
        return d[len(a)][len(b)]

    for a_len, b_len in itertools.product(range(5), repeat=2):
        for a in itertools.product("AC", repeat=a_len):
            b = "".join(reversed(a))[:b_len] + "C" * max(0, b_len - a_len)
            assert edit_distance("".join(a), b) == slow("".join(a), b)


def test_dynamic_indices_and_tie_break_are_the_documented_ones():
    # "ACD" -> "AD": one DELETE of C at the *current* index 1.
    assert shortest_edit_script("ACD", "AD") == [Edit("DELETE", 1, old="C")]
    # two insertions: the second index counts the first insertion (dynamic convention)
    assert shortest_edit_script("AD", "ACED") == [Edit("INSERT", 1, new="C"), Edit("INSERT", 2, new="E")]
    # "AB" -> "BA": diagonal first in the backtrace gives REPLACE, REPLACE (not DELETE + INSERT)
    assert shortest_edit_script("AC", "CA") == [Edit("REPLACE", 0, old="A", new="C"),
                                                Edit("REPLACE", 1, old="C", new="A")]
    assert shortest_edit_script("", "AC") == [Edit("INSERT", 0, new="A"), Edit("INSERT", 1, new="C")]
    assert shortest_edit_script("AC", "") == [Edit("DELETE", 0, old="A"), Edit("DELETE", 0, old="C")]
    assert shortest_edit_script("ACD", "ACD") == []
    # deterministic: the same pair twice gives the same script
    assert shortest_edit_script("ACDEFG", "AFDEGC") == shortest_edit_script("ACDEFG", "AFDEGC")


def test_unexecutable_scripts_raise():
    with pytest.raises(UnexecutableEdit):  # written old token does not match x[p]
        apply_script("ACD", [Edit("REPLACE", 1, old="D", new="E")])
    with pytest.raises(UnexecutableEdit):
        apply_script("ACD", [Edit("DELETE", 0, old="C")])
    with pytest.raises(UnexecutableEdit):  # index out of range
        apply_script("ACD", [Edit("DELETE", 3, old="A")])
    with pytest.raises(UnexecutableEdit):
        apply_script("ACD", [Edit("INSERT", 4, new="A")])
    with pytest.raises(UnexecutableEdit):  # valid first, then out of range on the *shorter* sequence
        apply_script("AC", [Edit("DELETE", 1, old="C"), Edit("REPLACE", 1, old="C", new="A")])
    with pytest.raises(UnexecutableEdit):  # a multi-character token in a one-character-per-residue string
        apply_script("AC", [Edit("INSERT", 0, new="Cl")])
    assert apply_script("AC", [Edit("INSERT", 2, new="D")]) == "ACD"  # p == L appends
    assert isinstance(UnexecutableEdit("x"), ValueError)


def test_bad_inputs_are_value_errors():
    with pytest.raises(ValueError, match="op"):
        Edit("SWAP", 0, old="A", new="C")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pos"):
        Edit("DELETE", -1, old="A")
    with pytest.raises(ValueError, match="new"):
        Edit("INSERT", 0)
    with pytest.raises(ValueError, match="old"):
        Edit("INSERT", 0, old="A", new="C")
    with pytest.raises(ValueError, match="new"):
        Edit("INSERT", 0, new="A B")
    with pytest.raises(ValueError, match="src"):
        shortest_edit_script(42, "AC")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seq"):
        apply_script(None, [])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="script"):
        apply_script("AC", "DELETE A at position 0")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="smiles"):
        tokenize_smiles("C1CC€")
    with pytest.raises(ValueError, match="smiles"):
        tokenize_smiles("")


def test_criterion2_render_parse_round_trip_and_official_format():
    script = [Edit("REPLACE", 3, old="A", new="C"), Edit("DELETE", 0, old="K"), Edit("INSERT", 7, new="W")]
    text = render(script)
    assert text == "REPLACE A with C at position 3 ; DELETE K at position 0 ; INSERT W at position 7"
    assert parse(text) == script
    assert parse(f"<edit_traj> {text} </edit_traj>") == script
    assert parse("") == [] and render([]) == ""
    comp = render_completion(script, "ACDE")
    assert comp == f"<edit_traj> {text} </edit_traj> ACDE"
    assert parse_completion(comp) == (script, "ACDE")
    smi = [Edit("REPLACE", 2, old="[nH]", new="Cl"), Edit("INSERT", 0, new="(")]
    assert parse(render(smi)) == smi


@pytest.mark.parametrize("text", [
    "REPLACE A at position 3", "DELETE at position 1", "INSERT A at position -1", "INSERT A at position x",
    "REPLACE A with C at position 3 ;", "; DELETE A at position 0", "insert A at position 0",
    "DELETE A at position 1 DELETE C at position 2", "INSERT A at position " + "9" * 5000,
    "__import__('os').system('echo hi')", "<edit_traj> DELETE A at position 0", None, 3.5, b"bytes",
])
def test_malformed_text_gives_none(text):
    assert parse(text) is None


@pytest.mark.parametrize("text", [
    "DELETE A at position 0 </edit_traj> CD", "<edit_traj> </edit_traj>", "<edit_traj> </edit_traj> A C",
    "<edit_traj> DELETE A at position 0 </edit_traj> CD </edit_traj>", "CD", "", None,
])
def test_malformed_completions_give_none(text):
    assert parse_completion(text) is None


_FRAGMENTS = st.sampled_from(["INSERT", "DELETE", "REPLACE", "with", "at", "position", ";", " ", "A", "C", "Cl",
                              "[nH]", "0", "1", "17", "99999999999", "-3", "<edit_traj>", "</edit_traj>", "\n"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(_FRAGMENTS, max_size=40).map(" ".join)))
def test_parse_never_raises_and_parsed_scripts_apply_or_raise_unexecutable(text):
    script = parse(text)
    assert script is None or all(isinstance(e, Edit) for e in script)
    if script is not None:
        for src in ("ACDEFGHIK", list("ACD") + ["Cl", "[nH]"]):
            try:
                apply_script(src, script)
            except UnexecutableEdit:
                pass
    assert parse_completion(text) is None or isinstance(parse_completion(text), tuple)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ACDEFG", max_size=25), st.text(alphabet="ACDEFG", max_size=25))
def test_property_shortest_script_replays(src, tgt):
    script = shortest_edit_script(src, tgt)
    assert apply_script(src, script) == tgt
    assert len(script) == Levenshtein.distance(src, tgt)
    assert parse(render(script)) == script


def test_tokenize_smiles_round_trips():
    for smi in ("c1ccc2cc(Cl)ccc2c1N", "C1CC(C(=O)N)CC1F", "c1cc(C#N)[nH]c1Br", "C[C@@H](O)C(=O)O", "O=C1CCCCN1"):
        toks = tokenize_smiles(smi)
        assert "".join(toks) == smi
    assert tokenize_smiles("c1ccc(Cl)cc1[nH]") == ["c", "1", "c", "c", "c", "(", "Cl", ")", "c", "c", "1", "[nH]"]
    assert tokenize_smiles("CBr") == ["C", "Br"]


def test_bridge_and_random_edits_execute():
    rng = np.random.default_rng(3)
    for _ in range(50):
        src = "".join(rng.choice(list(AMINO_ACIDS), size=int(rng.integers(0, 12))))
        tgt = "".join(rng.choice(list(AMINO_ACIDS), size=int(rng.integers(0, 12))))
        script = bridge_script(src, tgt, AMINO_ACIDS, rng)
        assert apply_script(src, script) == tgt
        assert len(script) >= edit_distance(src, tgt)  # noise can only lengthen the trajectory
        noise = random_edits(src, 3, AMINO_ACIDS, rng)
        assert len(noise) == 3 and isinstance(apply_script(src, noise), str)
    # with noise switched off the bridge is exactly the shortest script
    assert bridge_script("ACDE", "AKDEW", AMINO_ACIDS, rng, noise_prob=0.0) == shortest_edit_script("ACDE", "AKDEW")
