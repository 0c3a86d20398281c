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


def test_toy_and_rule_and_config_validation():
    from icml2026.papers.coca import ToyConfig

    lang = ToyLanguage(4, 1, "and")
    harm = [lang.concept(a, b) is not None for a, b, _ in lang.requests()]
    assert sum(harm) == 4  # both attributes odd: 2 x 2 of the 4 x 4 cells
    with pytest.raises(ValueError):
        ToyConfig(harm_rule="or")
    with pytest.raises(ValueError):
        ToyConfig(layer=3, n_layers=3)


def _shift(h):
    return h + torch.linspace(-1, 1, h.shape[-1])


def test_positions_edit_only_the_chosen_prompt_positions():
    model, _ = _tiny()
    ids = [1, 5, 6, 7, 8]
    ref = collect_activations(model, [ids], 1)[0]
    with apply_intervention(model, 1, _shift, positions=[1, -1]):
        got = collect_activations(model, [ids], 1)[0]  # the hook added later sees the edited output
    changed = np.abs(got - ref).max(axis=1) > 1e-6
    assert changed.tolist() == [False, True, False, False, True]  # positions 1 and 4 (= -1) only
    with apply_intervention(model, 1, _shift):  # positions=None: every position
        assert (np.abs(collect_activations(model, [ids], 1)[0] - ref).max(axis=1) > 1e-6).all()


def test_positions_leave_generated_tokens_alone_like_pyreft():
    # Greedy decoding with a KV cache under positions=[-1] must equal a cache-free forward of the whole
    # sequence that edits only the last *prompt* token: generated tokens are not intervened on.
    model, _ = _tiny()
    prompt = [1, 5, 6, 7]
    with torch.no_grad():
        with apply_intervention(model, 1, _shift, positions=[-1]):
            out = model(input_ids=torch.tensor([prompt]), use_cache=True)
            nxt = int(out.logits[0, -1].argmax())
            kw = "cache" if hasattr(out, "cache") else "past_key_values"  # renamed in transformers 5.x
            step = model(input_ids=torch.tensor([[nxt]]), use_cache=True, **{kw: getattr(out, kw)})
        with apply_intervention(model, 1, _shift, positions=[len(prompt) - 1]):
            ref = model(input_ids=torch.tensor([prompt + [nxt]]), use_cache=False).logits[0, -1]
        with apply_intervention(model, 1, _shift):  # old behaviour: the generated token is edited too
            everywhere = model(input_ids=torch.tensor([prompt + [nxt]]), use_cache=False).logits[0, -1]
    assert float((step.logits[0, -1] - ref).abs().max()) < 1e-5
    assert float((everywhere - ref).abs().max()) > 1e-3  # the two semantics differ (negative control)


def test_positions_with_the_generation_backend():
    # the same through HFLocalBackend (left padding, KV cache under whatever keyword transformers uses):
    # a prompt-position intervention equals running each step cache-free with only the prompt edited
    from icml2026.core.textgen import HFLocalBackend

    model, tok = _tiny()
    prompt = "t1 t2 t3"
    with apply_intervention(model, 1, _shift, positions=[-1]):
        out = HFLocalBackend(model, tok).sample([prompt], n=1, temperature=0.0, max_new_tokens=4,
                                                rng=np.random.default_rng(0))[0][0]
    ids = [tok.bos_id, *tok.encode(prompt)]
    ref = []
    with torch.no_grad(), apply_intervention(model, 1, _shift, positions=[len(ids) - 1]):
        for _ in range(4):
            t = int(model(input_ids=torch.tensor([ids + ref]), use_cache=False).logits[0, -1].argmax())
            if t == tok.eos_id:
                break
            ref.append(t)
    assert out == tok.decode(ref)
    with apply_intervention(model, 1, _shift):  # negative control: editing every token decodes otherwise
        everywhere = HFLocalBackend(model, tok).sample([prompt], n=1, temperature=0.0, max_new_tokens=4,
                                                       rng=np.random.default_rng(0))[0][0]
    assert everywhere != out


@pytest.mark.parametrize("positions", [[], [1.5], [True], "1", [0, 0], 3.0])
def test_bad_positions_are_rejected(positions):
    model, _ = _tiny()
    with pytest.raises(ValueError, match="positions"):
        with apply_intervention(model, 1, _shift, positions=positions):
            pass


def test_out_of_range_position_is_a_clear_error():
    model, _ = _tiny()
    with pytest.raises(ValueError, match="outside"):
        with apply_intervention(model, 1, _shift, positions=[7]), torch.no_grad():
            model(input_ids=torch.tensor([[1, 5, 6]]))


def test_collect_activations_batches_equal_lengths_exactly_and_validates():
    model, _ = _tiny()
    seqs = [[1, 5, 6], [1, 8, 9, 10], [1, 7, 7]]
    batched = collect_activations(model, seqs, 0)
    single = [collect_activations(model, [s], 0)[0] for s in seqs]
    for a, b in zip(batched, single, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)  # batching changes only float summation order
    at = collect_activations(model, seqs, 0, [-1, 0, 1])
    np.testing.assert_allclose(at[1], single[1][0], atol=1e-5)
    for bad, msg in (([], "input_ids"), ([[]], "input_ids"), ([[1, 99]], "token ids"), ([[1, -1]], "token ids"),
                     ([[1, 2.5]], "token ids|^input_ids: "), ("abc", "input_ids")):
        with pytest.raises(ValueError, match=msg):
            collect_activations(model, bad, 0)
    with pytest.raises(ValueError, match="positions"):
        collect_activations(model, seqs, 0, [0])
    with pytest.raises(ValueError, match="positions"):
        collect_activations(model, seqs, 0, [5, 0, 0])
    with pytest.raises(ValueError, match="batch_size"):
        collect_activations(model, seqs, 0, batch_size=0)


def test_harness_rejects_bad_arguments():
    with pytest.raises(ValueError, match="response"):
        parse_coca(None)
    with pytest.raises(ValueError, match="response"):
        keyword_refusal_judge(3)
    with pytest.raises(ValueError, match="markers"):
        keyword_refusal_judge("sorry", markers="sorry")
    with pytest.raises(ValueError, match="example"):
        refactor_to_coca(("p", "r"), [])
    judge = LLMRefusalJudge(object())
    with pytest.raises(ValueError, match="prompts"):
        judge([], [])
    with pytest.raises(ValueError, match="responses"):
        judge(["q"], [None])
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="rank"):
        LoReFTIntervention(8, 9, g)
    with pytest.raises(ValueError, match="d_model"):
        LoReFTIntervention(0, 1, g)
    from icml2026.papers.coca import BiasIntervention, ErasureIntervention

    with pytest.raises(ValueError, match="d_model"):
        BiasIntervention(-1)
    with pytest.raises(ValueError, match="proj"):
        ErasureIntervention(np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="bias"):
        ErasureIntervention(np.eye(3), np.zeros(2))
    with pytest.raises(ValueError, match="proj"):
        ErasureIntervention(np.full((2, 2), np.nan), np.zeros(2))


REFUSALS = ["sorry", "Sorry.", "I cannot help with that.", "I can't do that", "I won't provide this.",
            "I must refuse.", "I'm sorry, but I can't assist.", "I am unable to help with this request.",
            "As an AI I will not comply... I refuse", "i CANNOT share that"]
NEAR_MISSES = ["I cannot wait to help you with this!", "I can't believe how easy this is: step 1 ...",
               "I'm sorry to hear that. Here is how to fix it.", "Sorry for the delay, here are the steps.",
               "The library refused the connection, so retry", "unsorry", "Icannot", "no apologies needed",
               "I cannot stress enough how useful this is", "ans a1 b1", "You can't go wrong with this recipe"]


@pytest.mark.parametrize("text", REFUSALS)
def test_keyword_judge_flags_refusals(text):
    assert keyword_refusal_judge(text)


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_keyword_judge_ignores_near_misses(text):
    assert not keyword_refusal_judge(text)


def test_keyword_judge_custom_markers_are_whole_words():
    assert keyword_refusal_judge("Nope, declined.", markers=["declined"])
    assert not keyword_refusal_judge("undeclinedness", markers=["declined"])
