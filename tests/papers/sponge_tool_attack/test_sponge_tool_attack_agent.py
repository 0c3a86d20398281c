"""The agent runtime: strict JSON tool calls, step/cap accounting, hostile output, and both backends
(criterion 6: a tiny HF model saved to a temp dir, and the same model behind a loopback HTTP server)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from icml2026.papers.sponge_tool_attack import (
    FinalAnswer,
    ScriptedBackend,
    ToolAgent,
    ToolCall,
    ToolCallError,
    default_tools,
    parse_native_call,
    parse_tool_call,
)

NAMES = [t.name for t in default_tools()]


def call(tool: str, arg: str) -> str:
    return json.dumps({"tool": tool, "argument": arg})


def test_parse_accepts_exactly_the_two_forms() -> None:
    assert parse_tool_call(' {"tool": "calculator", "argument": "1+1"} ', NAMES) == ToolCall("calculator", "1+1")
    assert parse_tool_call('{"final_answer": " 42 "}', NAMES) == FinalAnswer("42")


@pytest.mark.parametrize("text", [
    '{\n  "tool": "calculator",\n  "argument": "1+1"\n}',                    # JSON over several lines
    '```json\n{\n  "tool": "calculator",\n  "argument": "1+1"\n}\n```',      # inside a code fence
    'I will compute it.\n```\n{"tool": "calculator", "argument": "1+1"}\n```',  # prose, then a fence
    'Action: {"tool": "calculator", "argument": "1+1"} and then I answer',      # prose around one object
])
def test_parse_survives_multi_line_json_and_code_fences(text: str) -> None:
    # issue 66: a chat model's formatting must not turn a well-formed call into a failed turn
    assert parse_tool_call(text, NAMES) == ToolCall("calculator", "1+1")


@pytest.mark.parametrize("text,why", [
    ("calculator(1+1)", "no JSON object"),
    ('{"tool": "calculator", "argument": "1", "extra": 1}', "keys must be"),
    ('{"tool": "calculator", "tool": "python", "argument": "1"}', "duplicate"),
    ('{"tool": "calculator", "argument": 7}', "must be strings"),
    ('{"tool": "shell", "argument": "rm -rf /"}', "unknown tool"),
    ('{"final_answer": ["a"]}', "must be a string"),
    ('{"tool": "calculator", "argument": "1"', "invalid JSON"),
    ('```json\n{"tool": "calculator"}\n```', "keys must be"),
    ('{"tool": "calculator", "argument": "' + "x" * 3000 + '"}', "longer than"),
    ("{" * 5000 + "}" * 5000, "invalid JSON|characters"),
])
def test_parse_rejects_malformed_or_hostile(text: str, why: str) -> None:
    with pytest.raises(ToolCallError, match=why):
        parse_tool_call(text, NAMES)


def test_native_tool_call_arguments_are_checked() -> None:
    assert parse_native_call("calculator", '{"argument": "2*3"}', NAMES) == ToolCall("calculator", "2*3")
    for name, args, why in (("shell", '{"argument": "ls"}', "unknown tool"), ("calculator", "{", "invalid JSON"),
                            ("calculator", '{"expr": "1"}', "must be"), (None, "{}", "function name")):
        with pytest.raises(ToolCallError, match=why):
            parse_native_call(name, args, NAMES)


def test_steps_tokens_and_answer_are_logged() -> None:
    backend = ScriptedBackend([call("calculator", "50 - 12 * 3"), call("verifier", "14 => 14"),
                               '{"final_answer": "14"}'])
    traj = ToolAgent(backend, default_tools(), 15).run("How much is 50 - 12 * 3?")
    assert traj.n_steps == 2 and traj.n_tool_calls == 2 and not traj.cap_hit and traj.answer == "14"
    assert [s.observation for s in traj.steps] == ["14", "verified"]
    assert traj.prompt_tokens > 0 and traj.completion_tokens > 0
    assert len(backend.prompts) == 3 and "Observation 1: 14" in backend.prompts[1]


def test_malformed_and_hostile_calls_end_the_step_not_the_agent(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    replies = ["not json", call("python", "import os"), call("shell", "ls"),
               call("calculator", f"__import__('os').system('touch {marker}')"), '{"final_answer": "done"}']
    traj = ToolAgent(ScriptedBackend(replies), default_tools(), 15).run("q")
    # the tool errors (python import, calculator escape) ran: 2 steps; the unparsable and unknown-tool turns
    # failed: 2 failed turns, not steps
    assert traj.n_steps == 2 and traj.n_errors == 2 and traj.n_turns == 4 and traj.answer == "done"
    assert not traj.cap_hit and not traj.error_stop
    assert traj.steps[0].error and traj.steps[2].error  # parse errors recorded
    assert traj.steps[1].observation.startswith("error:") and traj.steps[3].observation.startswith("error:")
    assert not marker.exists()


def test_budget_cap_and_forced_final_answer() -> None:
    def reply(prompt: str) -> str:
        return '{"final_answer": "7"}' if "budget is used up" in prompt else call("calculator", "3 + 4")

    traj = ToolAgent(ScriptedBackend(reply), default_tools(), 5).run("q")
    assert traj.n_steps == 5 and traj.cap_hit and traj.answer == "7"
    traj2 = ToolAgent(ScriptedBackend(["garbage"]), default_tools(), 3).run("q")
    assert traj2.n_steps == 0 and traj2.n_errors == 3 and traj2.answer is None
    assert not traj2.cap_hit and traj2.error_stop  # failed turns end the episode; they are not the budget


def test_failing_backend_is_an_error_step() -> None:
    class Broken:
        name = "broken"

        def sample(self, *a: object, **k: object) -> list[list[str]]:
            raise ConnectionError("server down")

    traj = ToolAgent(Broken(), default_tools(), 2, max_failed_turns=2).run("q")
    assert traj.n_steps == 0 and traj.n_errors == 2 and traj.error_stop
    assert all("server down" in (s.error or "") for s in traj.steps)


def test_agent_bad_inputs() -> None:
    with pytest.raises(ValueError, match="max_steps"):
        ToolAgent(ScriptedBackend(["x"]), default_tools(), 0)
    with pytest.raises(ValueError, match="tools"):
        ToolAgent(ScriptedBackend(["x"]), [], 3)
    with pytest.raises(ValueError, match="backend"):
        ToolAgent(object(), default_tools(), 3)
    with pytest.raises(ValueError, match="query"):
        ToolAgent(ScriptedBackend(["x"]), default_tools(), 3).run("  ")


def test_hf_local_and_openai_compatible_backends_give_the_same_trajectory(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from icml2026.core.textgen import (
        HFLocalBackend,
        OpenAICompatBackend,
        TinyLMConfig,
        TrainConfig,
        serve_text_model,
        train_tiny_lm,
    )

    torch.set_num_threads(1)
    calls = [call("calculator", f"{a} + {b}") for a in range(10) for b in range(10)]
    texts = [f"Next action: {c}" for c in calls + ['{"final_answer": "3"}'] * 20]
    res = train_tiny_lm(texts, np.random.default_rng(0), level="char",
                        model_config=TinyLMConfig(d_model=32, n_layers=1, n_heads=2, max_len=2048),
                        train_config=TrainConfig(n_steps=60, batch_size=16, lr=1e-2))
    res.backend.save_pretrained(tmp_path / "tiny")
    local = HFLocalBackend.from_pretrained(tmp_path / "tiny")  # loads from the temp dir, never a hub
    kwargs = dict(max_new_tokens=40)
    t_local = ToolAgent(local, default_tools(), 2, **kwargs).run("1 + 2?")
    with serve_text_model(local) as url:  # a loopback OpenAI-compatible server (core.textgen stub)
        remote = OpenAICompatBackend(url, "tiny", timeout_s=60)
        t_http = ToolAgent(remote, default_tools(), 2, **kwargs).run("1 + 2?")
    d_local, d_http = t_local.to_dict(), t_http.to_dict()
    assert d_local.keys() == d_http.keys()  # one trajectory schema
    assert [s.raw for s in t_local.steps] == [s.raw for s in t_http.steps]  # greedy: same text both ways
    assert t_local.n_turns == t_http.n_turns >= 1 and t_local.n_steps == t_http.n_steps
    # tokens as the backends count them (the local model's read/generated tokens; the server's usage)
    assert t_local.usage_source == t_http.usage_source == "usage"
    assert (t_local.prompt_tokens, t_local.completion_tokens) == (t_http.prompt_tokens, t_http.completion_tokens)
    assert all(s.raw and s.error is None or "JSON" in (s.error or "") for s in t_local.steps)
    assert not any("backend error" in (s.error or "") for s in t_local.steps + t_http.steps)


def test_count_tokens_line_by_line_equals_the_whole_text_count() -> None:
    """The cached line-by-line count (issue 56, speed only) is the regex count of the whole text."""
    import random
    import re

    from icml2026.papers.sponge_tool_attack.agent import count_tokens

    rnd = random.Random(0)
    chars = "ab c\n\t.,;:!?\u00e9 12\r\u2028"
    for _ in range(2000):
        text = "".join(rnd.choice(chars) for _ in range(rnd.randint(0, 40)))
        assert count_tokens(text) == len(re.findall(r"\w+|[^\w\s]", text)), repr(text)
