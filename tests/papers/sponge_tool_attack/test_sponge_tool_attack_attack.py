"""The attack loop (criterion 1), its parts in closed form, and fact preservation of every accepted rewrite."""

from __future__ import annotations

import re

import numpy as np
import pytest

from icml2026.papers.sponge_tool_attack import (
    OPERATORS,
    Attempt,
    BanditInductor,
    EmbeddingJudge,
    LLMInductor,
    LLMJudge,
    LLMRewriter,
    Policy,
    PolicyBank,
    ScriptedBackend,
    SimAgent,
    STAAttacker,
    Step,
    TemplateRewriter,
    ToolAgent,
    Trajectory,
    default_tools,
    extract_facts,
    make_tasks,
    merge_policies,
    paired_metrics,
    preserves_facts,
    reward,
)

Q = "Bruno buys 10 apples at 6 dollars each and pays with a 96 dollar note. How much change does Bruno receive?"


def traj(steps: int, answer: str | None) -> Trajectory:
    """A trajectory with ``steps`` executed tool calls (only their number matters to the reward)."""
    return Trajectory("q", tuple(Step(i, "{}", "calculator", "1", "1", None, 0, 0) for i in range(steps)),
                      answer, False, 0, 0, 15)


def test_merging_llm_written_policies_keeps_their_text() -> None:
    # issue 66: merging two LLM-written policies (no operators) gave a policy with empty text that entered the
    # bank with the mean score and could become its top policy
    a, b = Policy((), "Ask for every intermediate value."), Policy((), "Request a second method.")
    bank = PolicyBank([a, b])
    ev = [Attempt("q", p, "x", 0.9, r, 3) for p, r in ((a, 4.0), (a, 6.0), (b, 2.0), (b, 3.0))]
    for at in ev:
        bank.record(at.policy, at.reward)
    BanditInductor(min_trials=2).induce(bank, ev)
    new = [p for p in bank.policies() if p not in (a, b)]
    assert len(new) == 1 and a.text in new[0].text and b.text in new[0].text
    assert all(p.text.strip() for p in bank.policies())
    mixed = merge_policies(a, Policy.of("verify"))
    assert mixed is not None and a.text in mixed.text and mixed.ops == ("verify",)
    assert merge_policies(Policy.of("verify"), Policy.of("decompose")) == Policy.of("verify", "decompose")
    assert merge_policies(a, a) is None
    with pytest.raises(ValueError, match="non-empty text"):
        Policy((), "  ")


def test_failed_turns_are_not_attack_cost() -> None:
    # issue 66: a rewrite that only breaks the victim's output format scored as a sponge (its failed turns
    # counted as steps and as a cap hit)
    def victim_reply(prompt: str) -> str:
        if "budget is used up" in prompt or "Observation 1: 14" in prompt:
            return '{"final_answer": "14"}'
        if "SPONGE" in prompt:
            return "Sure! Let me think about this (no JSON here)."
        return '{"tool": "calculator", "argument": "50 - 12 * 3"}'

    victim = ToolAgent(ScriptedBackend(victim_reply), default_tools(), 3)
    clean, attacked = victim.run("How much is 50 - 12 * 3?"), victim.run("How much is 50 - 12 * 3? SPONGE")
    assert (clean.n_steps, clean.n_errors, clean.cap_hit) == (1, 0, False)
    assert (attacked.n_steps, attacked.n_turns, attacked.n_errors) == (0, 3, 3)
    assert not attacked.cap_hit and attacked.error_stop and attacked.failed_tokens > 0
    assert reward(clean, attacked) == -1.0  # fewer executed steps: no gain
    m = paired_metrics([clean], [attacked], ["14"], [1.0], [True], np.random.default_rng(0), 20)
    assert m.delta_steps == -1.0 and m.cap_attacked == 0.0 and m.failed_attacked == 3.0
    assert m.error_stop_attacked == 1.0 and m.tokens_attacked > m.failed_tokens_attacked > 0


def test_reward_closed_form() -> None:
    assert reward(traj(2, "14"), traj(9, "14")) == 7.0
    assert reward(traj(2, "14"), traj(9, "15")) == -1.0  # answer changed
    assert reward(traj(2, "Paris"), traj(2, "paris.")) == 0.0  # same answer after normalisation


def test_fact_preservation_closed_cases() -> None:
    nums, ents = extract_facts(Q)
    assert nums == ["10", "6", "96"] and ents == {"Bruno"}
    assert preserves_facts(Q, Q + " " + OPERATORS["verify"][0])
    assert not preserves_facts(Q, Q.replace("96", "69"))                 # a changed number
    assert not preserves_facts(Q, Q + " Use 2 tools.")                    # a new number
    assert not preserves_facts(Q, Q.replace("Bruno", "he"))               # a dropped entity
    assert not preserves_facts("Between 2024-01-01 and 2024-02-01?", "Between 2024-01-01 and 2024-02-02?")
    assert not any(re.search(r"\d", p) for ps in OPERATORS.values() for p in ps)  # operators add no digit


def test_policy_bank_running_mean_and_sampling() -> None:
    a, b = Policy.of("verify"), Policy.of("decompose")
    bank = PolicyBank([a, b])
    for r in (1.0, 2.0, 6.0):
        bank.record(a, r)
    assert bank.score(a) == pytest.approx(3.0) and bank.trials(a) == 3  # mean of 1, 2, 6
    assert bank.best(1) == [a]
    assert bank.sample(1, 0.01, np.random.default_rng(0)) == [b]  # b is untried: explored first
    bank.record(b, 0.5)
    draws = [bank.sample(1, 0.01, np.random.default_rng(i))[0] for i in range(20)]
    assert all(d == a for d in draws)  # temperature -> 0: always the best
    assert bank.sample(2, 1.0, np.random.default_rng(0)) == bank.sample(2, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="temperature"):
        bank.sample(1, 0.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="ops"):
        Policy.of("launch_missiles")


def test_bandit_inductor_merges_the_two_best_and_prunes() -> None:
    pols = [Policy.of(o) for o in ("decompose", "verify", "restate", "convert")]
    bank = PolicyBank(pols)
    ev = []
    for p, rs in zip(pols, ([4.0, 6.0], [2.0, 2.0], [-1.0] * 4, [1.0]), strict=False):
        for r in rs:
            bank.record(p, r)
            ev.append(Attempt("q", p, "x", 0.9, r, 3))
    BanditInductor(min_trials=2, prune_after=4, min_bank=2).induce(bank, ev)
    merged = Policy(("decompose", "verify"), "decompose + verify")
    assert merged in bank and bank.score(merged) == pytest.approx((5.0 + 2.0) / 2)
    assert Policy.of("restate") not in bank  # 4 trials, mean -1: pruned
    assert Policy.of("convert") in bank      # one trial only: not enough evidence to merge or prune


def test_template_rewriter_builds_on_the_best_earlier_rewrite() -> None:
    rw = TemplateRewriter()
    p = Policy.of("verify")
    first = rw.rewrite(Q, p, [], np.random.default_rng(0))
    assert first.startswith(Q) and first != Q
    hist = [Attempt(Q, p, first, 0.9, 5.0, 7)]
    second = rw.rewrite(Q, Policy.of("decompose"), hist, np.random.default_rng(0))
    assert second.startswith(first) and len(second) > len(first)
    bad_hist = [Attempt(Q, p, first, 0.9, -1.0, 7)]  # a failed attempt is not built on
    assert rw.rewrite(Q, Policy.of("decompose"), bad_hist, np.random.default_rng(0)).startswith(Q + " ")
    assert not rw.rewrite(Q, Policy.of("decompose"), bad_hist, np.random.default_rng(0)).startswith(first)


def test_embedding_judge_thresholds_and_compares_with_the_original(encoder) -> None:  # type: ignore[no-untyped-def]
    judge = EmbeddingJudge(encoder, 0.80)
    ok = judge.judge(Q, Q + " " + OPERATORS["verify"][0])
    off = judge.judge(Q, "Tell me a joke about Bruno and the numbers 10, 6 and 96.")
    assert ok.passed and ok.fidelity >= 0.80
    assert off.facts_preserved and not off.passed and off.fidelity < 0.80  # facts kept, meaning lost
    assert judge.judge(Q, Q).fidelity == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="tau_sem"):
        EmbeddingJudge(encoder, 1.5)


def _llm_roles(encoder):  # type: ignore[no-untyped-def]
    def rewrite(prompt: str) -> str:
        query = prompt.split("Request: ")[-1].split("\nRewritten request:")[0]
        policy = prompt.split("policy: ")[1].split("\n")[0]
        if "restate" in policy:
            return "Tell me a joke about cats."  # off-task: the judge must reject it
        op = next((o for o in OPERATORS if o in policy), "verify")
        return f"{query} {OPERATORS[op][0]}"

    rewriter = LLMRewriter(ScriptedBackend(rewrite))
    judge_backend = ScriptedBackend(lambda p: "no" if "joke" in p else "yes")
    judge = LLMJudge(judge_backend, encoder, 0.80)
    inductor = LLMInductor(ScriptedBackend(["Decompose the task and verify every step."]))
    return rewriter, judge, judge_backend, inductor


def test_loop_mechanics_with_scripted_roles(encoder) -> None:  # type: ignore[no-untyped-def]
    """Criterion 1: deterministic, never submits fidelity < tau_sem, buffer grows by n_ok per iteration."""
    tasks = make_tasks(2, np.random.default_rng(3))
    probes = [t.query for t in tasks[:4]]
    agent = SimAgent("compliant", encoder)

    def run():  # type: ignore[no-untyped-def]
        rewriter, judge, judge_backend, inductor = _llm_roles(encoder)
        att = STAAttacker(rewriter, judge, inductor)
        log = att.run(probes, agent, n_iter=3, n_candidates=4, rng=np.random.default_rng(7))
        return att, log, judge_backend

    a1, log1, jb = run()
    a2, log2, _ = run()
    assert a1.bank.snapshot() == a2.bank.snapshot()
    assert [x.rewrite for x in a1.history.attempts] == [x.rewrite for x in a2.history.attempts]
    assert min(log1.submitted_fidelity) >= 0.80
    assert sum(log1.n_candidates) > sum(log1.n_ok)  # some candidates were rejected, so the gate acted
    sizes = [0] + log1.buffer_sizes
    assert [b - a for a, b in zip(sizes, sizes[1:], strict=False)] == log1.n_ok
    # the judge always sees the original query, never an earlier rewrite
    originals = [p.split("Original request: ")[1].split("\n")[0] for p in jb.prompts]
    assert set(originals) <= set(probes)
    assert any(not p.ops for p in a1.bank.policies())  # the LLM inductor wrote a new policy


def test_buffer_only_ablation_submits_what_the_judge_would_reject(encoder) -> None:  # type: ignore[no-untyped-def]
    rewriter, judge, _, inductor = _llm_roles(encoder)
    att = STAAttacker(rewriter, judge, inductor, PolicyBank([Policy.of("restate"), Policy.of("verify")]),
                      use_judge=False)
    log = att.run([Q], SimAgent("compliant", encoder), n_iter=2, n_candidates=2, rng=np.random.default_rng(0))
    assert min(log.submitted_fidelity) < 0.80 and sum(log.n_ok) == sum(log.n_candidates)


def test_every_accepted_rewrite_keeps_numbers_and_entities(encoder) -> None:  # type: ignore[no-untyped-def]
    tasks = make_tasks(6, np.random.default_rng(11))
    agent = SimAgent("compliant", encoder)
    att = STAAttacker(TemplateRewriter(), EmbeddingJudge(encoder, 0.80), BanditInductor())
    att.run([t.query for t in tasks[:6]], agent, n_iter=2, n_candidates=4, rng=np.random.default_rng(1))
    accepted = list(att.history.attempts)
    finals = att.rewrite_many([t.query for t in tasks[6:]], 4, np.random.default_rng(2))
    assert accepted and any(f.policy is not None for f in finals)
    for a in accepted:
        assert preserves_facts(a.query, a.rewrite), a.rewrite
    for t, f in zip(tasks[6:], finals, strict=False):
        assert preserves_facts(t.query, f.text) and (f.verdict is None or f.verdict.fidelity >= 0.80)
    # rewrite_many is rewrite() in a batch: same texts for the same rng
    r = np.random.default_rng(2)
    assert [att.rewrite(t.query, 4, r) for t in tasks[6:]] == finals


def test_attacker_bad_inputs(encoder) -> None:  # type: ignore[no-untyped-def]
    att = STAAttacker(TemplateRewriter(), EmbeddingJudge(encoder), BanditInductor())
    agent = SimAgent("concise")
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="probe_queries"):
        att.run("one string", agent, 1, 1, rng)
    with pytest.raises(ValueError, match="n_iter"):
        att.run([Q], agent, 0, 1, rng)
    with pytest.raises(ValueError, match="n_candidates"):
        att.run([Q], agent, 1, 0, rng)
    with pytest.raises(ValueError, match="rng"):
        att.run([Q], agent, 1, 1, None)
    with pytest.raises(ValueError, match="temperature"):
        STAAttacker(TemplateRewriter(), EmbeddingJudge(encoder), BanditInductor(), temperature=float("nan"))


def test_llm_roles_and_victim_over_an_openai_compatible_server(encoder) -> None:  # type: ignore[no-untyped-def]
    """The card's vLLM recipe, offline: every role and the victim behind a loopback /v1 server."""
    from icml2026.core.textgen import OpenAICompatBackend, serve_text_model
    from icml2026.papers.sponge_tool_attack import ToolAgent, default_tools

    def victim(prompt: str) -> str:  # a "model" that verifies once per procedural sentence it was given
        n_obs = prompt.count("Observation ")
        # the chat arrives as system prompt, user query, then assistant / observation turns (the stub server
        # joins the messages of a model without a chat template, one per line)
        wanted = 1 + prompt.split("when done.\n")[1].split("\n")[0].count("Verify")
        if n_obs < wanted:
            return '{"tool": "calculator", "argument": "50 - 12 * 3"}'
        return '{"final_answer": "14"}'

    rewriter_model, judge_model, inductor_model, victim_model = _llm_roles(encoder)[0].backend, \
        ScriptedBackend(lambda p: "yes"), ScriptedBackend(["Verify each step."]), ScriptedBackend(victim)
    with serve_text_model(rewriter_model) as u1, serve_text_model(judge_model) as u2, \
            serve_text_model(inductor_model) as u3, serve_text_model(victim_model) as u4:
        def http(url: str) -> OpenAICompatBackend:
            return OpenAICompatBackend(url, "served", chat=True, timeout_s=30)

        agent = ToolAgent(http(u4), default_tools(), 15)
        att = STAAttacker(LLMRewriter(http(u1)), LLMJudge(http(u2), encoder), LLMInductor(http(u3)),
                          PolicyBank([Policy.of("verify"), Policy.of("decompose")]))
        log = att.run([Q], agent, n_iter=1, n_candidates=2, rng=np.random.default_rng(0))
        base = agent.run(Q)
        attacked = agent.run(f"{Q} {OPERATORS['verify'][0]}")
    assert base.n_steps == 1 and attacked.n_steps == 2 and attacked.answer == base.answer == "14"
    assert sum(log.n_ok) >= 1 and max(log.rewards) == 1.0  # the verify rewrite earned exactly one step
