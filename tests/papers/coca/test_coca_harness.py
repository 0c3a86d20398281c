"""Part C: COCA template, judges, hooks and interventions on a tiny Llama (criterion 6)."""

import numpy as np
import pytest
import torch

from icml2026.core.textgen import TinyLMConfig, VocabTokenizer, build_tiny_causal_lm
from icml2026.papers.coca import (
    LLMRefusalJudge,
    LoReFTIntervention,
    SafetyExample,
    apply_intervention,
    collect_activations,
    keyword_refusal_judge,
    parse_coca,
    refactor_to_coca,
)
from icml2026.papers.coca.toy import ToyLanguage


def _tiny(family="llama"):
    tok = VocabTokenizer([f"t{i}" for i in range(20)], level="word")
    g = torch.Generator().manual_seed(0)
    return build_tiny_causal_lm(TinyLMConfig(family=family, d_model=16, n_layers=2, n_heads=2), tok, g), tok


def test_refactor_is_idempotent_and_round_trips():
    ex = SafetyExample("req a1 b2 f0 =>", "sorry")
    once = refactor_to_coca(ex, ["hazA"])
    assert refactor_to_coca(once, ["hazA"]) == once
    parsed = parse_coca(once.response)
    assert parsed is not None and parsed.concepts == ("hazA",) and parsed.decision == "refuse"
    assert parsed.answer == "sorry"
    benign = refactor_to_coca(SafetyExample("req a0 b2 f1 =>", "ans a0 b2"), [])
    p2 = parse_coca(benign.response)
    assert p2 is not None and p2.concepts == () and p2.decision == "comply" and p2.answer == "ans a0 b2"
    assert parse_coca("ans a0 b2") is None
    with pytest.raises(ValueError):
        refactor_to_coca(ex, ["two words"])
    with pytest.raises(TypeError):
        refactor_to_coca(ex, "hazA")


def test_keyword_judge_reads_coca_decision():
    assert keyword_refusal_judge("sorry")
    assert not keyword_refusal_judge("ans a1 b1")
    assert keyword_refusal_judge(refactor_to_coca(SafetyExample("p", "x"), ["hazB"]).response)
    # a comply decision whose answer mentions a refusal word is still compliance
    assert not keyword_refusal_judge(refactor_to_coca(SafetyExample("p", "refuse words"), []).response)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_hooks_capture_layer_outputs_and_identity_is_exact(family):
    model, tok = _tiny(family)
    ids = [[1, 5, 6, 7], [1, 8, 9]]
    acts = collect_activations(model, ids, 0)
    assert [a.shape for a in acts] == [(4, 16), (3, 16)]
    with torch.no_grad():
        hs = model(input_ids=torch.tensor([ids[0]]), output_hidden_states=True).hidden_states
    np.testing.assert_allclose(acts[0], hs[1][0].double().numpy(), atol=1e-6)  # hidden_states[l+1] = block l
    x = torch.tensor([ids[0]])
    with torch.no_grad():
        ref = model(input_ids=x).logits
        with apply_intervention(model, 1, torch.nn.Identity()):
            same = model(input_ids=x).logits
        with apply_intervention(model, 1, lambda h: h + torch.linspace(-1, 1, h.shape[-1])):
            moved = model(input_ids=x).logits
        after = model(input_ids=x).logits
    assert float((ref - same).abs().max()) < 1e-6  # criterion 6
    assert float((ref - moved).abs().max()) > 1e-3  # the hook does act
    assert float((ref - after).abs().max()) < 1e-6  # and is removed on exit (float noise of repeated calls)
    with pytest.raises(ValueError):
        collect_activations(model, ids, 5)


def test_loreft_has_orthonormal_rows_and_edits_only_its_subspace():
    g = torch.Generator().manual_seed(0)
    m = LoReFTIntervention(16, 4, g)
    r = m.proj.weight.detach()
    torch.testing.assert_close(r @ r.T, torch.eye(4), atol=1e-5, rtol=0)
    h = torch.randn(3, 5, 16, generator=g)
    delta = (m(h) - h).detach()
    # h' - h = R^T(...) lies in the row space of R
    torch.testing.assert_close(delta @ r.T @ r, delta, atol=1e-5, rtol=0)


def test_llm_judge_uses_score():
    class Stub:
        name = "stub"

        def score(self, prompts, conts):
            pairs = zip(prompts, conts, strict=True)
            return np.array([(1.0 if ("sorry" in p) == (c == " yes") else 0.0) for p, c in pairs])

    judge = LLMRefusalJudge(Stub())
    assert judge(["q", "q"], ["sorry", "ans a1"]).tolist() == [True, False]
    with pytest.raises(ValueError):
        judge(["q"], [])


def test_toy_language_concept_is_xor_of_parities():
    lang = ToyLanguage(4, 2)
    harm = [lang.concept(a, b) is not None for a, b, _ in lang.requests()]
    assert sum(harm) == len(harm) // 2  # XOR of parities is balanced on an even grid
    assert lang.concept(1, 0) == "hazA" and lang.concept(0, 1) == "hazB" and lang.concept(2, 2) is None
    assert "z" in lang.prompt(1, 2, 0, "cipher") and "a1" not in lang.prompt(1, 2, 0, "cipher")


@pytest.mark.slow
def test_toy_quick_base_complies_and_metrics_are_rates():
    # Part B smoke + the premise of the toy: the pretrained base complies with every request (ASR 1 on
    # held-out harmful requests, exact answers on benign ones), before any safety intervention.
    from icml2026.core import make_rng
    from icml2026.core.registry import get_experiment

    exp = get_experiment("coca.toy_coca")
    out = exp(exp.config("quick"), make_rng(0))
    m = out.metrics
    assert m["base_asr_id"] >= 0.95 and m["base_benign_acc"] >= 0.95  # pretraining to comply worked
    assert all(0.0 <= m[k] <= 1.0 for k in m if "asr" in k or "acc" in k or "probe" in k)


def test_toy_and_rule_and_config_validation():
    from icml2026.papers.coca import ToyConfig

    lang = ToyLanguage(4, 1, "and")
    harm = [lang.concept(a, b) is not None for a, b, _ in lang.requests()]
    assert sum(harm) == 4  # both attributes odd: 2 x 2 of the 4 x 4 cells
    with pytest.raises(ValueError):
        ToyConfig(harm_rule="or")
    with pytest.raises(ValueError):
        ToyConfig(layer=3, n_layers=3)
