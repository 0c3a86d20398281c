"""The HTTP backend against servers that behave like real ones (issue 16).

- a vLLM-faithful loopback stub (BOS in the echo, ``text_offset`` as vLLM computes it, ``/tokenize``,
  token-id prompts, ``prompt_logprobs``, streaming, ``max_tokens`` on echo): scores equal the local
  backend's to 1e-5, with and without BOS, through token ids and through text alignment;
- servers that trickle headers, truncate bodies, ignore ``n``, accept only string prompts;
- an API key with a newline: stripped, or refused without ever being printed;
- (issue 56) chat prompts sent concurrently from a bounded pool, the server's ``usage`` kept per request,
  and chat templates applied by the local backend and the stub when the tokenizer has one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.core.rng import make_rng, torch_generator  # noqa: E402
from icml2026.core.textgen import (  # noqa: E402
    BackendHTTPError,
    BackendResponseError,
    BackendTimeoutError,
    HFLocalBackend,
    HFTokenizerAdapter,
    OpenAICompatBackend,
    RequestUsage,
    Samples,
    TextBackendError,
    TinyLMConfig,
    TrainConfig,
    Usage,
    VocabTokenizer,
    build_tiny_causal_lm,
    serve_text_model,
    train_tiny_lm,
    usage_of,
)

torch.set_num_threads(1)


def make_backend(level: str = "char", bos: bool = True, family: str = "gpt2", seed: int = 0) -> HFLocalBackend:
    texts = ["abc= cba q: no yes"] if level == "char" else ["abc cba = q : no yes red ."]
    tok = VocabTokenizer.build(texts, level=level)
    if not bos:
        tok.bos_id = None
    model = build_tiny_causal_lm(
        TinyLMConfig(family=family, d_model=16, n_layers=1, n_heads=2, max_len=48, init_std=0.3),
        tok,
        torch_generator(make_rng(seed)),
    )
    return HFLocalBackend(model, tok, batch_size=4)


CHAR_CASES = (["abc=", "q:", "abc= c", "q"], ["cba", " no", "ba", ": yes"])
WORD_CASES = (["abc =", "q :", "abc cba", "red"], [" cba", " no", " = yes", " ."])


@pytest.mark.parametrize("bos", [True, False])
@pytest.mark.parametrize("level", ["char", "word"])
@pytest.mark.parametrize(("mode", "tokenize"), [("exact", False), ("vllm", True), ("vllm", False)])
def test_scores_equal_local_backend(bos: bool, level: str, mode: str, tokenize: bool) -> None:
    local = make_backend(level, bos)
    prompts, conts = CHAR_CASES if level == "char" else WORD_CASES
    want = local.score(prompts, conts)
    assert np.all(want < -0.5)  # init_std 0.3: far from uniform, so a misaligned token shows
    with serve_text_model(local, mode=mode, tokenize=tokenize) as url:  # type: ignore[arg-type]
        remote = OpenAICompatBackend(url, "tiny", timeout_s=10, prompts_per_request=3)
        got = remote.score(prompts, conts)
        assert remote._tokenize_ok is (mode == "vllm" and tokenize)  # which path was taken
    # float32 logits, one forward per sequence on both sides: 1e-5 (the acceptance tolerance)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_vllm_stub_reproduces_vllm_offsets_so_raw_offsets_would_be_wrong() -> None:
    """The stub's text_offset counts the decoded BOS, as vLLM does; summing by raw offsets is off."""
    local = make_backend("char", True)
    with serve_text_model(local, mode="vllm") as url:
        remote = OpenAICompatBackend(url, "tiny", max_retries=0)
        data = remote._post(
            "/completions",
            {"model": "t", "prompt": "abc=cba", "echo": True, "logprobs": 1, "max_tokens": 0},
        )
    lp = data["choices"][0]["logprobs"]
    assert lp["tokens"][0] == "<bos>" and lp["text_offset"][:3] == [0, 5, 6]
    # the old rule (offset in [len(prompt), end)) picks the wrong tokens: its sum differs from the truth
    naive = sum(v for v, o in zip(lp["token_logprobs"], lp["text_offset"], strict=True) if 4 <= o < 7)
    truth = local.score(["abc="], ["cba"])[0]
    assert abs(naive - truth) > 0.1


def test_empty_prompt_with_bos_scores_through_token_ids() -> None:
    local = make_backend("char", True)
    with serve_text_model(local, mode="vllm") as url:
        remote = OpenAICompatBackend(url, "tiny")
        np.testing.assert_allclose(remote.score([""], ["abc"]), local.score([""], ["abc"]), atol=1e-5)
    with serve_text_model(local, mode="vllm", tokenize=False) as url:
        with pytest.raises(ValueError, match=r"prompts\[0\] is empty"):
            OpenAICompatBackend(url, "tiny").score([""], ["abc"])


@pytest.mark.parametrize("tokenize", [True, False])
def test_continuation_covering_no_token_is_an_error(tokenize: bool) -> None:
    local = make_backend("word", True)
    with pytest.raises(ValueError, match="covers no token"):
        local.score(["abc"], ["  "])  # whitespace is no token at word level
    with serve_text_model(local, mode="vllm", tokenize=tokenize) as url:
        remote = OpenAICompatBackend(url, "tiny", max_retries=0)
        with pytest.raises((ValueError, BackendResponseError), match="covers no"):
            remote.score(["abc", "q"], [" cba", "  "])
        assert remote.score(["abc"], [""])[0] == 0.0  # an empty continuation has probability 1


def test_echo_honours_max_tokens_and_token_id_prompts() -> None:
    local = make_backend("char", True)
    with serve_text_model(local, mode="vllm") as url:
        be = OpenAICompatBackend(url, "tiny", max_retries=0)
        base = {"model": "t", "echo": True, "logprobs": 1, "temperature": 0.0}
        zero = be._post("/completions", {**base, "prompt": "abc", "max_tokens": 0})["choices"][0]
        three = be._post("/completions", {**base, "prompt": "abc", "max_tokens": 3})["choices"][0]
        ids = be._post("/tokenize", {"model": "t", "prompt": "abc"}, at_root=True)["tokens"]
        by_ids = be._post("/completions", {**base, "prompt": ids, "max_tokens": 0, "prompt_logprobs": 1})["choices"][0]
    greedy = local.sample(["abc"], n=1, temperature=0, max_new_tokens=3, rng=make_rng(0))[0][0]
    assert zero["text"] == "abc" and len(zero["logprobs"]["tokens"]) == 4  # <bos> a b c
    assert three["text"] == "abc" + greedy and len(three["logprobs"]["tokens"]) == 4 + len(greedy)
    assert ids[0] == local.tokenizer.bos_id and by_ids["text"] == "abc"
    assert [None if e is None else list(e) for e in by_ids["prompt_logprobs"]] == [None] + [[str(i)] for i in ids[1:]]


@pytest.mark.parametrize("mode", ["exact", "vllm"])
def test_streaming_through_the_official_client(mode: str) -> None:
    openai = pytest.importorskip("openai")
    local = make_backend("char", True)
    with serve_text_model(local, mode=mode) as url:  # type: ignore[arg-type]
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=10)
        kwargs = {"model": "t", "prompt": "abc=", "max_tokens": 12, "temperature": 1.0, "seed": 1}
        whole = client.completions.create(**kwargs)
        chunks = list(client.completions.create(**kwargs, stream=True))
        chat = list(
            client.chat.completions.create(
                model="t",
                messages=[{"role": "user", "content": "abc="}],
                max_tokens=12,
                temperature=1.0,
                seed=1,
                stream=True,
            )
        )
    text = whole.choices[0].text
    assert text and len(chunks) == -(-len(text) // 4)  # the stub streams 4 characters per event
    assert "".join(c.choices[0].text for c in chunks) == text
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert "".join(c.choices[0].delta.content or "" for c in chat) == whole.choices[0].text


# ------------------------------------------------------------------------------- misbehaving servers
Behaviour = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


@contextmanager
def fault_server(behaviour: Behaviour) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    log: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            log.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
            try:
                behaviour(self, body)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", log
    finally:
        server.shutdown()
        server.server_close()


def reply(h: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    h.send_response(status)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def completion(prompts: list[str], n: int) -> bytes:
    choices = [{"index": i * n + j, "text": f"{p}#{j}"} for i, p in enumerate(prompts) for j in range(n)]
    return json.dumps({"choices": choices}).encode()


def as_list(prompt: Any) -> list[str]:
    return [prompt] if isinstance(prompt, str) else prompt


def test_header_trickling_server_respects_the_deadline_within_ten_percent() -> None:
    def trickle(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        h.wfile.write(b"HTTP/1.1 200 OK\r\n")
        for i in range(60):  # one header line every 0.2 s, for 12 s: every single read succeeds
            h.wfile.write(f"X-Slow-{i}: {i}\r\n".encode())
            h.wfile.flush()
            time.sleep(0.2)

    with fault_server(trickle) as (url, log):
        be = OpenAICompatBackend(url, "m", timeout_s=1.0, max_retries=0)
        t0 = time.monotonic()
        with pytest.raises(BackendTimeoutError, match="within 1 s"):
            be.sample(["a"], rng=make_rng(0))
        elapsed = time.monotonic() - t0
    assert 1.0 <= elapsed <= 1.1, elapsed  # one deadline over status, headers and body (acceptance: 10%)


def test_body_trickle_with_retries_stays_within_the_attempt_deadlines() -> None:
    def trickle(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "1000")
        h.end_headers()
        for _ in range(100):
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.05)

    with fault_server(trickle) as (url, log):
        be = OpenAICompatBackend(url, "m", timeout_s=0.4, max_retries=1, backoff_s=0.0)
        t0 = time.monotonic()
        with pytest.raises(BackendTimeoutError, match="after 2 attempts"):
            be.sample(["a"], rng=make_rng(0))
        elapsed = time.monotonic() - t0  # before the server's shutdown, which is not the client's time
    assert elapsed <= 0.4 * 2 * 1.1 + 0.1 and len(log) == 2, elapsed


@pytest.mark.parametrize("with_length", [True, False])
def test_truncated_body_is_retried_then_succeeds(with_length: bool) -> None:
    calls = {"n": 0}

    def cut(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        calls["n"] += 1
        data = completion(as_list(body["prompt"]), body["n"])
        if calls["n"] == 1:
            h.send_response(200)
            if with_length:
                h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data[: len(data) // 2])  # then the connection closes
            h.close_connection = True
            return
        reply(h, 200, data)

    with fault_server(cut) as (url, log):
        be = OpenAICompatBackend(url, "m", max_retries=1, backoff_s=0.0)
        assert be.sample(["a"], rng=make_rng(0)) == [["a#0"]]
    assert len(log) == 2


def test_persistently_truncated_body_gives_up_naming_truncation() -> None:
    def cut(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        data = completion(["a"], 1)
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data[:10])

    with fault_server(cut) as (url, log):
        be = OpenAICompatBackend(url, "m", max_retries=2, backoff_s=0.0)
        with pytest.raises(BackendResponseError, match="truncated.*after 3 attempts"):
            be.sample(["a"], rng=make_rng(0))
    assert len(log) == 3


def test_one_prompt_is_sent_as_a_string() -> None:
    def strict(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if not isinstance(body["prompt"], str):  # e.g. `transformers serve`'s /v1/completions
            reply(h, 400, b'{"error": "prompt must be a string"}')
            return
        reply(h, 200, completion([body["prompt"]], body["n"]))

    with fault_server(strict) as (url, log):
        be = OpenAICompatBackend(url, "m", max_retries=0, prompts_per_request=1)
        assert be.sample(["p", "q"], n=2, rng=make_rng(0)) == [["p#0", "p#1"], ["q#0", "q#1"]]
    assert [entry["body"]["prompt"] for entry in log] == ["p", "q"]


@pytest.mark.parametrize("cap", [1, 2])
def test_server_returning_fewer_than_n_choices_is_asked_again(cap: int) -> None:
    def capped(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        reply(h, 200, completion(as_list(body["prompt"]), min(cap, body["n"])))

    with fault_server(capped) as (url, log):
        be = OpenAICompatBackend(url, "m", max_retries=0)
        out = be.sample(["p", "q"], n=5, rng=make_rng(0))
    assert [len(r) for r in out] == [5, 5] and all(t.startswith("p#") for t in out[0])
    assert [entry["body"]["n"] for entry in log] == ([5, 4, 3, 2, 1] if cap == 1 else [5, 3, 1])
    assert len({entry["body"]["seed"] for entry in log}) == len(log)  # fresh seed per request


def test_chat_server_ignoring_n_is_asked_again() -> None:
    def one(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        msg = {"index": 0, "message": {"role": "assistant", "content": str(body["seed"])}}
        reply(h, 200, json.dumps({"choices": [msg]}).encode())

    with fault_server(one) as (url, log):
        out = OpenAICompatBackend(url, "m", chat=True, max_retries=0).sample(["x"], n=3, rng=make_rng(0))
    assert len(out[0]) == 3 and len(log) == 3


def test_straddling_token_in_text_alignment_is_an_error() -> None:
    payload = {
        "choices": [
            {
                "index": 0,
                "text": "abc",
                "logprobs": {"tokens": ["<s>", "ab", "c"], "token_logprobs": [None, -1.0, -2.0]},
            }
        ]
    }
    with fault_server(lambda h, b: reply(h, 200 if b.get("echo") else 404, json.dumps(payload).encode())) as (
        url,
        _,
    ):
        be = OpenAICompatBackend(url, "m", max_retries=0)
        assert be.score(["ab"], ["c"])[0] == -2.0  # BOS takes no characters
        with pytest.raises(BackendResponseError, match="boundary"):
            be.score(["a"], ["bc"])


# ----------------------------------------------------------------------------------------- API key
def test_key_with_trailing_newline_is_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_FILE_KEY", "sk-from-file-123\n")
    with fault_server(lambda h, b: reply(h, 200, completion(as_list(b["prompt"]), b["n"]))) as (url, log):
        OpenAICompatBackend(url, "m", api_key_env="TP_FILE_KEY").sample(["a"], rng=make_rng(0))
    assert log[0]["auth"] == "Bearer sk-from-file-123"


SECRET = "sk-inner-zz91"


def test_key_with_inner_newline_never_appears_in_any_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_BAD_KEY", f"{SECRET}\nX-Injected: 1")
    be = OpenAICompatBackend("http://127.0.0.1:9/v1", "m", api_key_env="TP_BAD_KEY")
    with pytest.raises(TextBackendError, match="TP_BAD_KEY") as info:
        be.sample(["a"], rng=make_rng(0))
    assert SECRET not in str(info.value) and "Injected" not in str(info.value)
    # uncaught, in a fresh interpreter: neither the traceback nor anything else printed holds the key
    code = (
        "from icml2026.core.textgen import OpenAICompatBackend\n"
        "from icml2026.core.rng import make_rng\n"
        "OpenAICompatBackend('http://127.0.0.1:9/v1', 'm', api_key_env='TP_BAD_KEY').score(['a'], ['b'])\n"
    )
    env = {**os.environ, "TP_BAD_KEY": f"{SECRET}\n"[:-1] + "\nmore"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode != 0 and "TextBackendError" in proc.stderr
    assert SECRET not in proc.stderr and SECRET not in proc.stdout and "more" not in proc.stderr


# ------------------------------------------------------------------ concurrency, usage (issue 56)
def test_forty_chat_prompts_with_latency_finish_in_order_with_usage() -> None:
    """Acceptance: 40 chat prompts against the test server with 0.2 s latency finish in under 2 s."""
    local = make_backend("char", True)
    prompts = [f"{'abc'[i % 3]}{'q:'[i % 2]}{i % 7 * 'a'}=" for i in range(40)]
    want = local.sample(prompts, n=1, temperature=0, max_new_tokens=6, rng=make_rng(0))
    assert len({row[0] for row in want}) > 3  # the answers differ, so a reordering would show
    with serve_text_model(local, latency_s=0.2) as url:
        remote = OpenAICompatBackend(url, "tiny", chat=True, timeout_s=10)  # default max_concurrency
        t0 = time.monotonic()
        got = remote.sample(prompts, n=1, temperature=0, max_new_tokens=6, rng=make_rng(0))
        elapsed = time.monotonic() - t0
        sequential = OpenAICompatBackend(url, "tiny", chat=True, timeout_s=10, max_concurrency=1)
        t0 = time.monotonic()
        sequential.sample(prompts[:5], n=1, temperature=0, max_new_tokens=6, rng=make_rng(0))
        elapsed_one = time.monotonic() - t0
    # the sequential client takes 40 x 0.2 s = 8 s here; the pool of 16 sends three waves (0.6 s)
    assert elapsed < 2.0, elapsed
    assert elapsed_one >= 5 * 0.2  # max_concurrency=1 waits out every round trip
    assert got == want  # order of results = order of prompts
    assert isinstance(got, Samples) and len(got.requests) == 40
    # the server reports what the model read and generated: the local backend's own counts
    assert got.prompt_usage == want.prompt_usage and got.usage == want.usage
    assert got.usage is not None and got.usage.prompt_tokens == sum(len(p) + 1 for p in prompts)  # + BOS


Behaviour2 = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


def chat_reply(content: str, usage: Any = None) -> bytes:
    body: dict[str, Any] = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


def test_pool_is_bounded_and_failures_are_reported_as_before() -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def counted(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.1)
        with lock:
            state["now"] -= 1
        content = body["messages"][0]["content"]
        if content.startswith("bad"):
            reply(h, 400 if content == "bad-early" else 500, b'{"error": "no"}')
            return
        reply(h, 200, chat_reply(content.upper()))

    with fault_server(counted) as (url, log):
        be = OpenAICompatBackend(url, "m", chat=True, max_concurrency=3, max_retries=0)
        assert be.sample([f"p{i}" for i in range(12)], rng=make_rng(0)) == [[f"P{i}"] for i in range(12)]
        assert 2 <= state["peak"] <= 3  # concurrent, never more than max_concurrency in flight
        prompts = [f"p{i}" for i in range(10)]
        prompts[2], prompts[7] = "bad-early", "bad-late"
        wide = OpenAICompatBackend(url, "m", chat=True, max_retries=0)
        with pytest.raises(BackendHTTPError, match="HTTP 400") as info:
            wide.sample(prompts, rng=make_rng(0))  # the earliest prompt's failure, unchanged
    assert info.value.status == 400 and "gave up" not in str(info.value)  # a 4xx fails at once, as before
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAICompatBackend(url, "m", max_concurrency=0)


def test_chat_seeds_do_not_depend_on_concurrency() -> None:
    def one_each(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:  # ignores n: asked again
        time.sleep(0.01 * (hash(body["messages"][0]["content"]) % 5))
        reply(h, 200, chat_reply(f"{body['messages'][0]['content']}:{body['seed']}"))

    with fault_server(one_each) as (url, log):
        outs = [
            OpenAICompatBackend(url, "m", chat=True, max_concurrency=k, max_retries=0).sample(
                ["a", "b", "c", "d"], n=3, rng=make_rng(4)
            )
            for k in (1, 4)
        ]
    assert outs[0] == outs[1]
    rng = make_rng(4)
    first = [int(rng.integers(2**31)) for _ in range(4)]  # the sequential client's first seeds, in order
    assert [row[0] for row in outs[0]] == [f"{p}:{s}" for p, s in zip("abcd", first, strict=True)]
    assert all(len(set(row)) == 3 for row in outs[0])  # a fresh seed for every repeated request


def test_usage_is_kept_per_request() -> None:
    calls = {"n": 0}

    def capped(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        calls["n"] += 1
        prompts = as_list(body["prompt"])
        data = json.loads(completion(prompts, 1))
        data["usage"] = {"prompt_tokens": 3 * len(prompts), "completion_tokens": calls["n"], "total_tokens": 0}
        reply(h, 200, json.dumps(data).encode())

    with fault_server(capped) as (url, log):
        be = OpenAICompatBackend(url, "m", max_retries=0, prompts_per_request=2)
        out = be.sample(["p", "q", "r"], n=2, rng=make_rng(0))
    # requests: [p, q] n=2 -> 1 choice each, asked again; [r] n=2, asked again: four requests
    assert [r.prompts for r in out.requests] == [(0, 1), (0, 1), (2,), (2,)]
    assert out.requests[0].usage == Usage(6, 1, 0)  # kept as reported, total included
    assert out.usage == Usage(6 + 6 + 3 + 3, 1 + 2 + 3 + 4, 0)
    assert usage_of(out) == out.usage and usage_of([["x"]]) is None
    assert out.prompt_usage == [None, None, Usage(6, 7, 0)]  # one total per request: p and q shared one
    assert json.loads(json.dumps(out)) == [list(r) for r in out]  # still a plain list of lists

    for bad in ({"prompt_tokens": -1, "completion_tokens": 1}, {"prompt_tokens": "3", "completion_tokens": 1}, [1]):
        def answer(h: BaseHTTPRequestHandler, body: dict[str, Any], bad: Any = bad) -> None:
            reply(h, 200, chat_reply("x", bad))

        with fault_server(answer) as (url, log):
            with pytest.raises(BackendResponseError, match="usage"):
                OpenAICompatBackend(url, "m", chat=True, max_retries=0).sample(["a"], rng=make_rng(0))
    with fault_server(lambda h, b: reply(h, 200, chat_reply("x", {"prompt_tokens": 2, "completion_tokens": 5}))) as (
        url,
        _,
    ):
        got = OpenAICompatBackend(url, "m", chat=True).sample(["a", "b"], rng=make_rng(0))
    assert got.prompt_usage == [Usage(2, 5, 7)] * 2 and got.usage == Usage(4, 10, 14)  # total: the sum
    with fault_server(lambda h, b: reply(h, 200, chat_reply("x"))) as (url, _):
        none = OpenAICompatBackend(url, "m", chat=True).sample(["a"], rng=make_rng(0))
    assert none.requests == (RequestUsage((0,), None),) and none.usage is None  # absent, not zero


def test_local_usage_counts_each_prompt_once() -> None:
    # the exact count of a trained model's answer (its characters + EOS) is in the chat-template test
    local = make_backend("char", True)
    out = local.sample(["abc=", "q"], n=3, temperature=1.0, max_new_tokens=5, rng=make_rng(1))
    assert isinstance(out, Samples)
    for i, p in enumerate(["abc=", "q"]):
        u = out.prompt_usage[i]
        assert u is not None and u.prompt_tokens == len(p) + 1  # BOS + characters, once for n = 3
        # every generated token of the three completions (an untrained model also draws specials that
        # decode to nothing): at least one and at most max_new_tokens each
        assert 3 <= u.completion_tokens <= 3 * 5
    assert out.usage == out.prompt_usage[0] + out.prompt_usage[1]  # type: ignore[operator]


# ---------------------------------------------------------------------- chat templates (issue 56)
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
CHAT_CORPUS = ["abc=cba", "xyz=zyx", "hello=olleh", "ab=ba"]  # test_textgen.py's CORPUS


def save_chat_tokenizer(folder: Any, template: str | None) -> Any:
    """A character-level Hugging Face tokenizer over CHAT_CORPUS with role markers, saved in ``folder``."""
    tokenizers = pytest.importorskip("tokenizers")
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    roles = ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
    symbols = ["<pad>", "<bos>", "<eos>", "<unk>", *roles, *sorted(set("".join(CHAT_CORPUS)))]
    core = tokenizers.Tokenizer(tokenizers.models.WordLevel({s: i for i, s in enumerate(symbols)}, unk_token="<unk>"))
    core.pre_tokenizer = tokenizers.pre_tokenizers.Split(tokenizers.Regex("."), behavior="isolated")
    core.decoder = tokenizers.decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=roles,
    )
    tok.chat_template = template
    tok.save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder, local_files_only=True)


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, HFLocalBackend]:
    """A tiny char-level LM trained on the reversal corpus in the chat template's format (~3 s), saved and
    loaded back with ``from_pretrained``."""
    folder = tmp_path_factory.mktemp("chat-lm")
    hf = save_chat_tokenizer(folder, CHAT_TEMPLATE)
    texts = [f"<|user|>{t.split('=')[0]}=<|end|><|assistant|>{t.split('=')[1]}" for t in CHAT_CORPUS]
    res = train_tiny_lm(
        texts,
        make_rng(0),
        tokenizer=HFTokenizerAdapter(hf),
        model_config=TinyLMConfig(d_model=32, n_layers=1, n_heads=2, max_len=32),
        train_config=TrainConfig(n_steps=150, batch_size=16, lr=1e-2),
    )
    # a memorised corpus drives the loss far below ln(vocab) ~ 3; 0.5 nats/token is loose
    assert res.losses[-10:].mean() < 0.5
    res.backend.save_pretrained(folder)
    return hf, HFLocalBackend.from_pretrained(folder)


def test_local_backend_applies_the_chat_template(chat_model: tuple[Any, HFLocalBackend]) -> None:
    hf, local = chat_model
    assert local.has_chat_template
    msgs = [{"role": "user", "content": "hello="}]
    templated = hf.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)["input_ids"]
    assert local.chat_prompt_ids(msgs) == list(templated)  # one BOS, written by the template
    assert list(templated[:2]) == [hf.bos_token_id, hf.convert_tokens_to_ids("<|user|>")]
    chats = [[{"role": "user", "content": t.split("=")[0] + "="}] for t in CHAT_CORPUS]
    answers = local.sample_chat(chats, n=1, temperature=0, max_new_tokens=8, rng=make_rng(0))
    assert [row[0] for row in answers] == ["cba", "zyx", "olleh", "ba"]  # what the template format taught
    assert answers.prompt_usage[2] == Usage.of(len(templated), len("olleh") + 1)  # + EOS
    as_chat = HFLocalBackend(local.model, local.tokenizer, chat=True)  # TextModel view: prompt = user turn
    assert as_chat.sample(["hello="], n=1, temperature=0, max_new_tokens=8, rng=make_rng(0)) == [["olleh"]]
    np.testing.assert_allclose(
        as_chat.score(["ab="], ["ba"]),
        local.score(["<|user|>ab=<|end|><|assistant|>"], ["ba"]),  # BOS + the same ids
        atol=1e-5,
    )
    with pytest.raises(TypeError, match="role"):
        local.chat_prompt_ids([{"content": "x"}])


def test_stub_server_applies_the_chat_template(chat_model: tuple[Any, HFLocalBackend]) -> None:
    hf, local = chat_model
    prompts = [t.split("=")[0] + "=" for t in CHAT_CORPUS]
    with serve_text_model(local) as url:
        chat = OpenAICompatBackend(url, "tiny", chat=True, timeout_s=10)
        got = chat.sample(prompts, n=2, temperature=0, max_new_tokens=8, rng=make_rng(0))
        plain = OpenAICompatBackend(url, "tiny", timeout_s=10).sample(
            prompts, n=1, temperature=0, max_new_tokens=8, rng=make_rng(0)
        )
    assert got == [["cba"] * 2, ["zyx"] * 2, ["olleh"] * 2, ["ba"] * 2]
    u = got.prompt_usage[0]
    assert u is not None and u.prompt_tokens == len(local.chat_prompt_ids([{"role": "user", "content": "abc="}]))
    # completions requests are plain prompts: no template, so the model does not answer them as trained
    assert plain != [["cba"], ["zyx"], ["olleh"], ["ba"]]
    with pytest.raises(ValueError, match="chat=False"):
        with serve_text_model(HFLocalBackend(local.model, local.tokenizer, chat=True)):
            pass


def test_without_a_template_chat_is_the_plain_concatenation(tmp_path: Any) -> None:
    hf = save_chat_tokenizer(tmp_path, None)
    tok = HFTokenizerAdapter(hf)
    model = build_tiny_causal_lm(TinyLMConfig(d_model=16, n_layers=1, n_heads=2, max_len=32), tok,
                                 torch_generator(make_rng(0)))
    be = HFLocalBackend(model, tok)
    msgs = [{"role": "system", "content": "ab"}, {"role": "user", "content": "c="}]
    assert not be.has_chat_template and not make_backend().has_chat_template
    assert be.chat_prompt_ids(msgs) == [hf.bos_token_id, *hf.encode("ab\nc=", add_special_tokens=False)]
    vocab = make_backend("char", True)  # a VocabTokenizer has no template: concatenated, as before
    assert vocab.chat_prompt_ids(msgs) == [vocab.tokenizer.bos_id, *vocab.tokenizer.encode("ab\nc=")]
    with serve_text_model(vocab) as url:
        got = OpenAICompatBackend(url, "tiny", chat=True).sample(["abc="], temperature=0, max_new_tokens=4,
                                                                 rng=make_rng(0))
    assert got == vocab.sample(["abc="], temperature=0, max_new_tokens=4, rng=make_rng(0))
