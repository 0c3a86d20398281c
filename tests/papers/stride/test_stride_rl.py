"""Stage II objectives (criterion 3), advantages, the sampler with/without KV cache, from_pretrained round trip."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from icml2026.papers.stride import (
    AMINO_ACIDS,
    EditVocab,
    PolicyConfig,
    RLConfig,
    SFTConfig,
    build_policy,
    completion_logprobs,
    group_advantages,
    grpo_loss,
    gspo_loss,
    load_policy,
    rl_train,
    sample,
    save_policy,
    sft_train,
    shortest_edit_script,
)


def test_gspo_sequence_ratio_is_length_normalised_by_hand():
    # sequence 0: 2 tokens with log-ratios 0.2 and 0.4 -> s = exp(0.3); sequence 1: 1 token, log-ratio -0.1
    logp = torch.tensor([[-1.0, -2.0, 0.0], [-0.5, 0.0, 0.0]])
    old = torch.tensor([[-1.2, -2.4, 0.0], [-0.4, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    adv = torch.tensor([1.0, -1.0])
    s0, s1 = math.exp(0.3), math.exp(-0.1)
    # wide clip range: no clipping, objective = (s0 * 1 + s1 * -1) / 2
    assert float(-gspo_loss(logp, old, mask, adv, 10.0, 10.0)) == pytest.approx((s0 - s1) / 2, rel=1e-6)
    # paper's GSPO range (3e-4, 4e-4): s0 clipped at 1 + 4e-4 for A > 0; s1 < 1 - 3e-4 with A < 0 ->
    # min(s1 * -1, (1 - 3e-4) * -1) = -(1 - 3e-4)
    expect = ((1 + 4e-4) * 1.0 + -(1 - 3e-4)) / 2
    assert float(-gspo_loss(logp, old, mask, adv, 3e-4, 4e-4)) == pytest.approx(expect, abs=1e-6)  # float32
    # a token-level (GRPO) ratio would differ: mean of exp(0.2), exp(0.4) != exp(0.3)
    grpo = float(-grpo_loss(logp, old, None, mask, adv, 10.0, 0.0))
    assert grpo == pytest.approx(((math.exp(0.2) + math.exp(0.4)) / 2 - s1) / 2, rel=1e-6)
    assert abs(grpo - (s0 - s1) / 2) > 1e-3


def test_k3_kl_term_by_hand():
    logp = torch.tensor([[-1.0]])
    ref = torch.tensor([[-1.5]])
    d = -0.5
    loss = grpo_loss(logp, logp.clone(), ref, torch.ones(1, 1), torch.zeros(1), 0.2, 0.1)
    assert float(loss) == pytest.approx(0.1 * (math.exp(d) - d - 1), rel=1e-6)


def _tiny(vocab, seed=0):
    return build_policy(vocab, PolicyConfig(d_model=16, n_layers=1, n_heads=2, max_len=48),
                        torch.Generator().manual_seed(seed))


def test_criterion3_grpo_and_gspo_gradients_coincide_at_ratio_one():
    vocab = EditVocab(AMINO_ACIDS)
    model = _tiny(vocab)
    prompts = [vocab.prompt("ACDE"), vocab.prompt("KLMN")]
    comps = [vocab.trajectory_completion(shortest_edit_script("ACDE", "ACE"), "ACE"),
             vocab.trajectory_completion(shortest_edit_script("KLMN", "WKLMN"), "WKLMN")]
    adv = torch.tensor([0.7, -1.3])

    def grads(which):
        model.zero_grad()
        logp, mask = completion_logprobs(model, prompts, comps, vocab.pad_id)
        old = logp.detach()  # steps_per_generation = 1: pi_old = pi_theta, ratio exactly 1
        loss = grpo_loss(logp, old, None, mask, adv, 0.2, 0.0) if which == "grpo" else \
            gspo_loss(logp, old, mask, adv, 3e-4, 4e-4)
        loss.backward()
        return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    g1, g2 = grads("grpo"), grads("gspo")
    assert float(g1.norm()) > 1e-4  # a non-trivial gradient
    torch.testing.assert_close(g1, g2, rtol=1e-5, atol=1e-7)


def test_group_advantages():
    r = torch.tensor([1.0, 2.0, 3.0, 5.0, 5.0, 5.0])
    a = group_advantages(r, 3)
    g = torch.tensor([1.0, 2.0, 3.0])
    torch.testing.assert_close(a[:3], (g - 2.0) / (g.std() + 1e-4))
    assert torch.equal(a[3:], torch.zeros(3))  # all-equal group: zero advantage, no division by ~0
    with pytest.raises(ValueError, match="rewards"):
        group_advantages(torch.tensor([1.0, 2.0]), 3)
    with pytest.raises(ValueError, match="rewards"):
        group_advantages(torch.tensor([1.0, float("nan"), 0.0]), 3)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_kv_cache_sampling_equals_full_recompute(family):
    vocab = EditVocab(AMINO_ACIDS)
    model = build_policy(vocab, PolicyConfig(family=family, d_model=16, n_layers=1, n_heads=2, max_len=48),
                         torch.Generator().manual_seed(0))
    prompts = [vocab.prompt("ACDEFG"), vocab.prompt("KL")]  # different lengths: left padding is exercised
    kw = dict(n=3, max_new_tokens=12, eos_id=vocab.eos_id, pad_id=vocab.pad_id, temperature=1.0, top_p=0.9)
    a = sample(model, prompts, generator=torch.Generator().manual_seed(5), use_cache=True, **kw)
    b = sample(model, prompts, generator=torch.Generator().manual_seed(5), use_cache=False, **kw)
    assert a == b and len(a) == 6
    c = sample(model, prompts, generator=torch.Generator().manual_seed(6), use_cache=True, **kw)
    assert c != a
    with pytest.raises(ValueError, match="max_new_tokens"):
        sample(model, prompts, generator=torch.Generator(), **{**kw, "max_new_tokens": 100})


def test_completion_logprobs_match_a_manual_forward():
    vocab = EditVocab(AMINO_ACIDS)
    model = _tiny(vocab)
    p, c = vocab.prompt("ACD"), vocab.direct_completion("ACDE")
    logp, mask = completion_logprobs(model, [p, vocab.prompt("A")], [c, vocab.direct_completion("K")], vocab.pad_id)
    with torch.no_grad():
        full = torch.tensor([p + c])
        lp = torch.log_softmax(model(input_ids=full).logits[0].float(), -1)
        manual = sum(float(lp[len(p) - 1 + t, c[t]]) for t in range(len(c)))
    assert float(logp[0].sum().detach()) == pytest.approx(manual, abs=1e-4)
    assert float(mask[0].sum()) == len(c)


def test_sft_learns_a_single_demonstration_and_checkpoint_round_trips(tmp_path):
    """Stage I drives the NLL of one demonstration towards 0; save_pretrained / from_pretrained (local path)
    give the same log-probs and the loaded model trains on with the same code."""
    vocab = EditVocab(AMINO_ACIDS)
    model = _tiny(vocab)
    p = [vocab.prompt("ACDE")]
    c = [vocab.trajectory_completion(shortest_edit_script("ACDE", "AWDE"), "AWDE")]
    losses = sft_train(model, p, c, vocab.pad_id, SFTConfig(n_steps=120, batch_size=1, lr=1e-2, warmup=5),
                       np.random.default_rng(0))
    assert losses[-1] < 0.1 < losses[0]
    save_policy(model, vocab.tokenizer(), tmp_path / "ckpt")  # a plain save_pretrained folder, tokenizer too
    loaded, tok = load_policy(tmp_path / "ckpt")
    assert tok.convert_tokens_to_ids(vocab.tokens) == list(range(vocab.vocab_size))
    with torch.no_grad():
        a, _ = completion_logprobs(model, p, c, vocab.pad_id)
        b, _ = completion_logprobs(loaded, p, c, vocab.pad_id)
    torch.testing.assert_close(a, b)
    out = sample(loaded, p, n=1, max_new_tokens=20, eos_id=vocab.eos_id, pad_id=vocab.pad_id,
                 generator=torch.Generator().manual_seed(0), temperature=0.05)
    assert vocab.decode_completion(out[0]) == "<edit_traj> REPLACE C with W at position 1 </edit_traj> AWDE"
    sft_train(loaded, p, c, vocab.pad_id, SFTConfig(n_steps=2, batch_size=1), np.random.default_rng(1))
    from icml2026.core.errors import BadInput

    with pytest.raises(BadInput, match="model"):
        load_policy(tmp_path / "missing")


def test_rl_raises_the_reward_of_a_toy_preference():
    """GRPO on a toy reward (1 if the first generated token is a residue, ~20/110 at init) raises the mean
    rollout reward; with the reward switched off (all zero) the policy does not move."""
    vocab = EditVocab(AMINO_ACIDS)
    model = _tiny(vocab, seed=1)
    residues = {vocab.index[a] for a in AMINO_ACIDS}
    prompts = [vocab.prompt("ACDE")]

    def reward(k, ids):
        return float(ids[0] in residues)

    cfg = RLConfig(n_steps=40, n_prompts=2, group_size=8, lr=1e-2, max_new_tokens=2, temperature=1.0, top_p=1.0,
                   beta=0.0)

    def p_residue(m):
        with torch.no_grad():
            probs = torch.softmax(m(input_ids=torch.tensor(prompts)).logits[0, -1], -1)
        return float(probs[sorted(residues)].sum())

    still = copy.deepcopy(model)
    rl_train(still, prompts, lambda k, ids: 0.0, RLConfig(n_steps=3, n_prompts=2, group_size=4, max_new_tokens=4,
                                                           beta=0.0), np.random.default_rng(0),
             eos_id=vocab.eos_id, pad_id=vocab.pad_id)
    for a, b in zip(model.parameters(), still.parameters(), strict=True):
        assert torch.equal(a, b)  # zero advantages and no KL: zero gradient
    before = p_residue(model)
    rl_train(model, prompts, reward, cfg, np.random.default_rng(0), eos_id=vocab.eos_id, pad_id=vocab.pad_id)
    assert p_residue(model) > before + 0.2  # ~0.2 at initialisation
    gspo = _tiny(vocab, seed=1)
    h2 = rl_train(gspo, prompts, reward, RLConfig(algo="gspo", n_steps=3, n_prompts=2, group_size=8,
                                                  steps_per_generation=4, max_new_tokens=4),
                  np.random.default_rng(0), eos_id=vocab.eos_id, pad_id=vocab.pad_id)
    assert h2.loss.shape == (3,)
    with pytest.raises(ValueError, match="steps_per_generation"):
        rl_train(gspo, prompts, reward, RLConfig(algo="gspo", n_steps=1, n_prompts=1, group_size=3,
                                                 steps_per_generation=2), np.random.default_rng(0),
                 eos_id=vocab.eos_id, pad_id=vocab.pad_id)
