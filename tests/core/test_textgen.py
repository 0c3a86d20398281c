"""Tests of the shared language-model core: tokenizer, tiny-LM trainer, local backend, HTTP backend.

Everything is offline: models are built from a config and trained here; the HTTP backend talks to servers
started by the tests on 127.0.0.1.
"""

from __future__ import annotations

import json
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

from icml2026.core.errors import BadInput

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.core.rng import make_rng, torch_generator  # noqa: E402
from icml2026.core.textgen import (  # noqa: E402
    BackendHTTPError,
    BackendResponseError,
    BackendTimeoutError,
    HFLocalBackend,
    OpenAICompatBackend,
    TextBackendError,
    TextModel,
    TinyLMConfig,
    TrainConfig,
    Usage,
    VocabTokenizer,
    build_tiny_causal_lm,
    serve_text_model,
    train_tiny_lm,
)

torch.set_num_threads(1)

CORPUS = ["abc=cba", "xyz=zyx", "hello=olleh", "ab=ba"]
TINY = TinyLMConfig(d_model=32, n_layers=1, n_heads=2, max_len=32)


@pytest.fixture(scope="module")
def trained() -> HFLocalBackend:
    """A tiny char-level GPT-2 that memorised string reversal on four words (~3 s)."""
    res = train_tiny_lm(
        CORPUS, make_rng(0), model_config=TINY, train_config=TrainConfig(n_steps=120, batch_size=16, lr=1e-2)
    )
    # loss starts near ln(vocab) and a memorised corpus drives it far below; 0.5 nats/token is loose
    assert res.losses[0] > 2.0 and res.losses[-10:].mean() < 0.5
    return res.backend


def random_backend(family: str = "gpt2", seed: int = 0) -> HFLocalBackend:
    tok = VocabTokenizer.build(["abcdefgh= "])
    model = build_tiny_causal_lm(
        TinyLMConfig(family=family, d_model=16, n_layers=1, n_heads=2, max_len=32),
        tok,
        torch_generator(make_rng(seed)),
    )
    return HFLocalBackend(model, tok, batch_size=3)


# ------------------------------------------------------------------------------------------ tokenizer
def test_fused_gelu_option_is_the_same_model_up_to_float_rounding() -> None:
    # "gelu_pytorch_tanh" is torch's fused kernel for GPT-2's tanh-approximate GELU ("gelu_new"): same weights
    # from the same generator, logits equal to float rounding; an exact GELU ("gelu") would differ by ~1e-3.
    tok = VocabTokenizer.build(["abcdefgh= "])
    ids = torch.tensor([[tok.bos_id, 3, 4, 5, 6, 7]])
    logits = {}
    for act in ("gelu_new", "gelu_pytorch_tanh"):
        cfg = TinyLMConfig(d_model=32, n_layers=2, n_heads=2, max_len=32, init_std=0.5, gpt2_activation=act)
        model = build_tiny_causal_lm(cfg, tok, torch_generator(make_rng(3)))
        assert model.config.activation_function == act
        logits[act] = model(input_ids=ids).logits
    for block in model.transformer.h:  # the tolerance tells GELUs apart: the exact (erf) one is outside it
        block.mlp.act = torch.nn.GELU()
    exact = model(input_ids=ids).logits
    assert torch.allclose(logits["gelu_new"], logits["gelu_pytorch_tanh"], atol=1e-5, rtol=0)
    assert (exact - logits["gelu_new"]).abs().max() > 1e-5
    with pytest.raises(ValueError, match="gpt2_activation"):
        TinyLMConfig(gpt2_activation="relu")


def test_vocab_tokenizer_round_trips_and_maps_unknowns(tmp_path: Any) -> None:
    tok = VocabTokenizer.build(["hello world"], level="char")
    assert tok.decode(tok.encode("hello")) == "hello"
    assert tok.encode("q") == [tok.unk_id]
    words = VocabTokenizer.build(["zorvak color red ."], level="word")
    assert words.decode(words.encode("  zorvak   red ")) == " zorvak red"  # word level normalises spaces
    ids, offsets = words.encode_with_offsets("ab  red .")
    assert offsets == [0, 4, 8] and ids[0] == words.unk_id
    words.save(tmp_path)
    again = VocabTokenizer.load(tmp_path)
    assert again.symbols == words.symbols and again.level == "word"
    with pytest.raises(ValueError, match="level"):
        VocabTokenizer(["a"], level="bpe")


# ------------------------------------------------------------------------------------- local backend
def test_local_backend_satisfies_protocol_and_import_is_lazy() -> None:
    assert isinstance(random_backend(), TextModel)
    code = "import sys, icml2026.core.textgen; print('transformers' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]  # importing the core never pulls in transformers or torch


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_build_is_determined_by_the_generator(family: str) -> None:
    a, b, c = random_backend(family, 0), random_backend(family, 0), random_backend(family, 1)
    sa = a.score(["ab"], ["cd"])
    assert sa[0] == b.score(["ab"], ["cd"])[0]
    assert sa[0] != c.score(["ab"], ["cd"])[0]


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_score_matches_manual_log_softmax_and_is_batch_invariant(family: str) -> None:
    be = random_backend(family)
    prompts, conts = ["a", "abc= ", "h", "gg"], ["b", "de", "", "abcdefg"]
    batched = be.score(prompts, conts)
    one_by_one = np.array([be.score([p], [c])[0] for p, c in zip(prompts, conts, strict=True)])
    # right padding must not change any row: float32 logits, so agreement to 1e-5
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)
    tok = be.tokenizer
    for p, c, s in zip(prompts, conts, batched, strict=True):
        ids = [tok.bos_id, *tok.encode(p), *tok.encode(c)]
        with torch.no_grad():
            lp = torch.log_softmax(be.model(input_ids=torch.tensor([ids])).logits[0].double(), -1)
        manual = sum(float(lp[t - 1, ids[t]]) for t in range(len(ids) - len(tok.encode(c)), len(ids)))
        assert s == pytest.approx(manual, abs=1e-4)
    assert batched[2] == 0.0  # empty continuation has probability 1


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_sampling_frequencies_match_scored_probabilities(family: str) -> None:
    be = random_backend(family)
    be.batch_size = 1000  # one prompt repeated: large batches keep this test fast
    assert isinstance(be.tokenizer, VocabTokenizer)
    symbols = be.tokenizer.symbols[4:]
    probs = np.exp(be.score(["abc"] * len(symbols), symbols))
    assert probs.sum() < 1.0 + 1e-6  # the rest is EOS/specials
    n = 3000
    outs = be.sample(["abc"], n=n, temperature=1.0, max_new_tokens=1, rng=make_rng(3))[0]
    freq = np.array([outs.count(s) for s in symbols]) / n
    # binomial standard error with n = 3000 is <= 0.0092; 4 s.e. tolerance
    np.testing.assert_allclose(freq, probs, atol=0.037)


def test_left_padded_greedy_batch_equals_single_prompts(trained: HFLocalBackend) -> None:
    prompts = ["abc=", "hello=", "ab=", "xyz="]
    batched = trained.sample(prompts, n=1, temperature=0, max_new_tokens=8, rng=make_rng(0))
    single = [trained.sample([p], n=1, temperature=0, max_new_tokens=8, rng=make_rng(0))[0] for p in prompts]
    assert batched == single
    assert [row[0] for row in batched] == ["cba", "olleh", "ba", "zyx"]  # the memorised reversals


def test_sampling_is_seeded_and_stop_strings_cut(trained: HFLocalBackend) -> None:
    a = trained.sample(["abc=", "ab="], n=4, temperature=1.5, max_new_tokens=6, rng=make_rng(5))
    b = trained.sample(["abc=", "ab="], n=4, temperature=1.5, max_new_tokens=6, rng=make_rng(5))
    c = trained.sample(["abc=", "ab="], n=40, temperature=3.0, max_new_tokens=6, rng=make_rng(6))
    assert a == b and len(a) == 2 and all(len(r) == 4 for r in a)
    assert len({t for row in c for t in row}) > 2  # hot sampling is not deterministic
    cut = trained.sample(["hello="], n=2, temperature=0, max_new_tokens=8, stop=["l"], rng=make_rng(0))
    assert cut == [["o", "o"]]  # "olleh" cut at the first "l"


def test_bad_arguments_are_rejected(trained: HFLocalBackend) -> None:
    with pytest.raises(ValueError, match="n "):
        trained.sample(["a"], n=0, rng=make_rng(0))
    with pytest.raises(ValueError, match="temperature"):
        trained.sample(["a"], temperature=-1.0, rng=make_rng(0))
    with pytest.raises(TypeError, match="one string"):
        trained.sample("abc", rng=make_rng(0))
    with pytest.raises(ValueError, match="pair up"):
        trained.score(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="positions"):
        trained.score(["a" * 40], ["b"])  # the model has 32 positions


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_from_pretrained_round_trip(tmp_path: Any, family: str) -> None:
    be = random_backend(family)
    be.save_pretrained(tmp_path / "m")
    again = HFLocalBackend.from_pretrained(tmp_path / "m")
    np.testing.assert_allclose(
        again.score(["abc", "h"], ["d", "ge"]), be.score(["abc", "h"], ["d", "ge"]), atol=1e-6
    )
    with pytest.raises(BadInput, match="no such file"):  # the core loader's one line, naming the path
        HFLocalBackend.from_pretrained(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="empty"):
        HFLocalBackend.from_pretrained(tmp_path / "empty")


# -------------------------------------------------------------------------------------- HTTP backend
def test_http_backend_matches_local_backend_through_loopback_server(trained: HFLocalBackend) -> None:
    with serve_text_model(trained) as url:
        remote = OpenAICompatBackend(url, "tiny", timeout_s=10, prompts_per_request=2)
        assert isinstance(remote, TextModel)
        prompts, conts = ["abc=", "hello=", "xyz=", "ab="], ["cba", "olleh", "abc", "b"]
        # the server echoes per-character log-probs; summed they equal the local score (float32: 1e-4)
        np.testing.assert_allclose(remote.score(prompts, conts), trained.score(prompts, conts), atol=1e-4)
        got = remote.sample(prompts, n=3, temperature=0, max_new_tokens=8, rng=make_rng(0))
        assert got == [["cba"] * 3, ["olleh"] * 3, ["zyx"] * 3, ["ba"] * 3]
        chat = OpenAICompatBackend(url, "tiny", chat=True, timeout_s=10)
        assert chat.sample(["abc="], n=2, temperature=0, max_new_tokens=8, rng=make_rng(0)) == [
            ["cba", "cba"]
        ]
        with pytest.raises(TextBackendError, match="chat=False"):
            chat.score(["a"], ["b"])


Behaviour = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


@contextmanager
def fault_server(behaviour: Behaviour) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback server whose every POST is answered by ``behaviour``; yields (base url, request log)."""
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


def reply(
    handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str] | None = None
) -> None:
    handler.send_response(status)
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def ok_completion(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
    n, prompts = body["n"], body["prompt"]
    choices = [{"index": i * n + j, "text": f"{p}#{j}"} for i, p in enumerate(prompts) for j in range(n)]
    reply(handler, 200, json.dumps({"choices": choices[::-1]}).encode())  # order must come from "index"


def test_completions_are_grouped_by_index_and_key_is_sent_not_leaked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_TEST_KEY", "sk-secret-123")
    with fault_server(ok_completion) as (url, log):
        be = OpenAICompatBackend(url, "m", api_key_env="TP_TEST_KEY", timeout_s=5)
        out = be.sample(["p", "q"], n=2, temperature=0.7, max_new_tokens=4, stop=["\n"], rng=make_rng(0))
    assert out == [["p#0", "p#1"], ["q#0", "q#1"]]
    assert log[0]["auth"] == "Bearer sk-secret-123"
    assert (
        log[0]["body"]["stop"] == ["\n"] and log[0]["body"]["n"] == 2 and log[0]["path"] == "/v1/completions"
    )
    assert "sk-secret" not in repr(be) and "sk-secret" not in json.dumps(vars(be), default=str)


def test_chat_completion_sends_whole_messages_and_tools_and_returns_the_response(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_TEST_KEY", "sk-secret-789")
    answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}

    def tool_call(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        reply(h, 200, json.dumps(answer).encode())

    messages = [{"role": "system", "content": "use tools"}, {"role": "user", "content": "q"},
                {"role": "assistant", "content": "thinking"}, {"role": "tool", "content": "result"}]
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    with fault_server(tool_call) as (url, log):
        be = OpenAICompatBackend(url, "m", api_key_env="TP_TEST_KEY", timeout_s=5)
        got = be.chat_completion(messages, tools=tools, temperature=0.5, max_new_tokens=7, seed=3)
        plain = be.chat_completion(messages[:2])
    assert got == answer and plain == answer
    sent = log[0]["body"]
    assert log[0]["path"] == "/v1/chat/completions" and log[0]["auth"] == "Bearer sk-secret-789"
    assert sent["messages"] == messages and sent["tools"] == tools and sent["seed"] == 3
    assert sent["max_tokens"] == 7 and sent["temperature"] == 0.5 and sent["n"] == 1
    assert "tools" not in log[1]["body"] and "seed" not in log[1]["body"]


@pytest.mark.parametrize("kwargs, message", [
    ({"messages": "hello"}, "messages must be"),
    ({"messages": []}, "messages must be"),
    ({"messages": [{"content": "no role"}]}, r"messages\[0\]"),
    ({"messages": [{"role": "user", "content": "q"}], "tools": {"type": "function"}}, "tools must be"),
    ({"messages": [{"role": "user", "content": "q"}], "max_new_tokens": 0}, "max_new_tokens"),
    ({"messages": [{"role": "user", "content": "q"}], "temperature": -1.0}, "temperature"),
    ({"messages": [{"role": "user", "content": "q"}], "seed": "7"}, "seed"),
])
def test_chat_completion_refuses_bad_arguments_before_sending(kwargs: dict[str, Any], message: str) -> None:
    with fault_server(lambda h, b: reply(h, 200, b"{}")) as (url, log):
        be = OpenAICompatBackend(url, "m", timeout_s=5)
        with pytest.raises((TypeError, ValueError), match=message):
            be.chat_completion(**kwargs)
    assert log == []


def test_missing_key_variable_is_named_not_valued(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TP_ABSENT_KEY", raising=False)
    be = OpenAICompatBackend("http://127.0.0.1:9/v1", "m", api_key_env="TP_ABSENT_KEY")
    with pytest.raises(TextBackendError, match="TP_ABSENT_KEY"):
        be.sample(["a"], rng=make_rng(0))


def test_echoed_key_is_redacted_from_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_TEST_KEY", "sk-secret-456")

    def echo_auth(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        reply(h, 401, f"bad key {h.headers['Authorization']}".encode())

    with fault_server(echo_auth) as (url, log):
        be = OpenAICompatBackend(url, "m", api_key_env="TP_TEST_KEY", timeout_s=5, max_retries=3)
        with pytest.raises(BackendHTTPError) as info:
            be.sample(["a"], rng=make_rng(0))
    assert info.value.status == 401 and "sk-secret" not in str(info.value) and "***" in str(info.value)
    assert len(log) == 1  # 401 is not retried


def test_slow_server_times_out_without_hanging() -> None:
    def slow(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        time.sleep(3.0)
        ok_completion(h, body)

    waits: list[float] = []
    with fault_server(slow) as (url, log):
        be = OpenAICompatBackend(url, "m", timeout_s=0.3, max_retries=1, backoff_s=0.05, sleep=waits.append)
        t0 = time.monotonic()
        with pytest.raises(BackendTimeoutError, match="within 0.3 s"):
            be.sample(["a"], rng=make_rng(0))
        elapsed = time.monotonic() - t0
    assert elapsed < 1.5  # two attempts of 0.3 s each, far below the server's 3 s sleep
    assert len(log) == 2 and waits == [0.05]


def test_trickling_server_hits_the_total_deadline() -> None:
    def trickle(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "1000")
        h.end_headers()
        for _ in range(40):  # one byte every 0.1 s: each read succeeds, the whole body never arrives in time
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.1)

    with fault_server(trickle) as (url, _):
        be = OpenAICompatBackend(url, "m", timeout_s=0.5, max_retries=0)
        t0 = time.monotonic()
        with pytest.raises(BackendTimeoutError):
            be.sample(["a"], rng=make_rng(0))
    assert time.monotonic() - t0 < 1.5


def test_server_errors_are_retried_with_backoff_then_succeed() -> None:
    calls = {"n": 0}

    def flaky(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        calls["n"] += 1
        if calls["n"] <= 2:
            reply(
                h,
                503 if calls["n"] == 1 else 429,
                b"busy",
                {"Retry-After": "0.2"} if calls["n"] == 2 else None,
            )
        else:
            ok_completion(h, body)

    waits: list[float] = []
    with fault_server(flaky) as (url, _):
        be = OpenAICompatBackend(
            url, "m", max_retries=2, backoff_s=0.01, max_backoff_s=1.0, sleep=waits.append
        )
        assert be.sample(["z"], rng=make_rng(0)) == [["z#0"]]
    assert waits == [0.01, 0.2]  # exponential backoff, then the server's Retry-After


def test_persistent_server_error_gives_up_after_bounded_retries() -> None:
    with fault_server(lambda h, b: reply(h, 500, b"boom")) as (url, log):
        be = OpenAICompatBackend(url, "m", max_retries=2, backoff_s=0.0)
        with pytest.raises(BackendHTTPError, match="after 3 attempts") as info:
            be.sample(["a"], rng=make_rng(0))
    assert info.value.status == 500 and len(log) == 3


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"result": "ok"}', "no 'choices'"),
        (b'{"choices": [{"index": 0, "text": "a"}, {"index": 1, "text": "b"}]}', "expected 1"),
        (b'{"choices": [{"index": 0, "text": 7}]}', "'text'"),
        (b'{"choices": [{"index": 5, "text": "a"}]}', "indices"),
    ],
)
def test_garbage_responses_raise_clear_errors(payload: bytes, message: str) -> None:
    with fault_server(lambda h, b: reply(h, 200, payload)) as (url, log):
        be = OpenAICompatBackend(url, "m", max_retries=2, backoff_s=0.0)
        with pytest.raises(BackendResponseError, match=message):
            be.sample(["a"], rng=make_rng(0))
    assert len(log) == 1  # a malformed 200 is not retried


def test_score_rejects_missing_or_broken_logprobs() -> None:
    bad = {
        "choices": [
            {
                "index": 0,
                "text": "ab",
                "logprobs": {"tokens": ["a", "b"], "token_logprobs": [None, "x"], "text_offset": [0, 1]},
            }
        ]
    }
    with fault_server(lambda h, b: reply(h, 200, json.dumps(bad).encode())) as (url, _):
        be = OpenAICompatBackend(url, "m", max_retries=0)
        with pytest.raises(BackendResponseError, match="finite"):
            be.score(["a"], ["b"])
        with pytest.raises(ValueError, match="non-empty prompt"):
            be.score([""], ["b"])


def test_unreachable_server_is_a_clear_error() -> None:
    with fault_server(ok_completion) as (url, _):
        pass  # closed: nothing listens on that port any more
    be = OpenAICompatBackend(url, "m", timeout_s=1.0, max_retries=1, backoff_s=0.0)
    with pytest.raises(TextBackendError, match="connection"):
        be.sample(["a"], rng=make_rng(0))


def test_constructor_validates_arguments() -> None:
    with pytest.raises(ValueError, match="http"):
        OpenAICompatBackend("localhost:8000", "m")
    with pytest.raises(ValueError, match="environment variable name"):
        OpenAICompatBackend("http://127.0.0.1:1/v1", "m", api_key_env="sk-abc def")
    with pytest.raises(ValueError, match="timeout_s"):
        OpenAICompatBackend("http://127.0.0.1:1/v1", "m", timeout_s=0)


# ------------------------------------------------------------------------------- usage records (issue 56)
def test_samples_is_the_plain_result_plus_usage() -> None:
    import copy
    import pickle

    from icml2026.core.textgen import RequestUsage, Samples, usage_of

    out = Samples([["a", "b"], ["c", "d"]], [RequestUsage((0,), Usage.of(3, 4)), RequestUsage((1,), Usage.of(2, 1))])
    assert out == [["a", "b"], ["c", "d"]] and out[1:] == [["c", "d"]] and type(out[1:]) is list
    assert out.usage == Usage(5, 5, 10) and usage_of(out) == out.usage
    for again in (pickle.loads(pickle.dumps(out)), copy.deepcopy(out)):
        assert again == out and again.requests == out.requests  # survives a trip to a worker process
    assert Samples([["a"]], [RequestUsage((0,), None)]).usage is None  # unknown, not zero
    assert Samples([["a"]]).usage is None
    with pytest.raises(ValueError, match="prompt_tokens"):
        Usage(-1, 0, 0)


def test_local_backend_counts_what_it_read_and_generated(trained: HFLocalBackend) -> None:
    out = trained.sample(["abc=", "hello="], n=2, temperature=0, max_new_tokens=8, rng=make_rng(0))
    assert out == [["cba"] * 2, ["olleh"] * 2]
    # BOS + the prompt's characters once; each completion's characters and the EOS that ended it
    assert out.prompt_usage == [Usage.of(5, 2 * 4), Usage.of(7, 2 * 6)]
    cut = trained.sample(["hello="], n=1, temperature=0, max_new_tokens=8, stop=["l"], rng=make_rng(0))
    assert cut == [["o"]] and cut.usage == Usage.of(7, 2)  # "o", then the "l" that completed the stop string
