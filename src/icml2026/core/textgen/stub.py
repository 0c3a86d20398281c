"""A loopback OpenAI-compatible server in front of a local :class:`TextModel` (for tests and offline demos).

It speaks the subset of the completions API that :class:`OpenAICompatBackend` and the official ``openai``
client use: ``/v1/completions`` with ``prompt`` (a string or a list), ``n``, ``temperature``,
``max_tokens``, ``stop``, ``seed``, ``stream``, and ``echo=True`` with ``logprobs`` (for models exposing
``token_logprobs``, such as :class:`HFLocalBackend`); ``/v1/chat/completions`` with the messages.
It binds 127.0.0.1 only and is not a production server.

Chat requests are rendered as a real server renders them: a model with ``sample_chat``
(:class:`HFLocalBackend`) applies its tokenizer's chat template
(``apply_chat_template(messages, add_generation_prompt=True)``) when the tokenizer has one; the message
contents are concatenated, one per line, only when it has none (or the model has no ``sample_chat``).
Every answer carries ``usage`` when the model counts tokens (:class:`~.protocol.Samples`, which
:class:`HFLocalBackend` returns); it is left out, never made up, when the model does not.
``latency_s`` delays every answer outside the model's lock, like the round trip to a server that batches
concurrent requests.

Two modes:

- ``mode="exact"``: echoed ``tokens`` carry no BOS and ``text_offset`` holds the true character offsets
  (what OpenAI's legacy API returns).
- ``mode="vllm"``: what vLLM returns (needs an :class:`HFLocalBackend`): the prompt is tokenized with BOS;
  the echoed tokens start with the BOS string (``<bos>``) and ``text_offset`` is the running sum of the
  decoded token lengths *including* BOS, so it is off by the BOS length from the raw string positions;
  prompts may be token ids; ``prompt_logprobs``, ``return_tokens_as_token_ids`` and ``return_token_ids``
  are honoured; ``/tokenize`` (at the server root, beside ``/v1``) is served unless ``tokenize=False``.

In both modes ``max_tokens`` is honoured on echo (that many tokens are generated after the echoed prompt;
0 echoes only), and ``stream=true`` answers with server-sent events ending in ``data: [DONE]``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import numpy as np

from .protocol import TextModel, Usage, check_messages, usage_of

__all__ = ["serve_text_model", "serve_json"]


class _BadRequest(ValueError):
    pass


def _int(req: dict[str, Any], key: str, default: int, lo: int) -> int:
    v = req.get(key, default)
    if v is None:
        v = default
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise _BadRequest(f"{key} must be an integer >= {lo}, got {v!r}")
    return v


def _incremental(tok: Any, ids: Sequence[int]) -> list[str]:
    """Decoded piece of each token (incremental detokenization)."""
    out, prev = [], ""
    for t in range(len(ids)):
        cur = tok.decode(list(ids[: t + 1]))
        out.append(cur[len(prev) :] if cur.startswith(prev) else tok.decode([ids[t]]))
        prev = cur
    return out


class _Engine:
    """Request handling, separate from the HTTP plumbing."""

    def __init__(self, model: TextModel, mode: str, tokenize: bool) -> None:
        self.model, self.mode, self.tokenize_route = model, mode, tokenize
        if getattr(model, "chat", False) is True:
            raise ValueError(
                "serve a model built with chat=False: the server applies the chat template to chat requests "
                "itself, and completions requests are plain prompts"
            )
        self.tok: Any = getattr(model, "tokenizer", None)
        if mode == "vllm":
            tok = getattr(model, "tokenizer", None)
            if tok is None or not hasattr(model, "logprobs_of_ids"):
                raise TypeError("mode='vllm' needs a model with a tokenizer and logprobs_of_ids (HFLocalBackend)")
            self.tok = tok

    # ------------------------------------------------------------------------------ vLLM tokenization
    def _special_name(self, i: int) -> str:
        symbols = getattr(self.tok, "symbols", None)
        if symbols is not None and 0 <= i < len(symbols):
            return str(symbols[i])
        inner = getattr(self.tok, "tokenizer", None)
        if inner is not None:
            return str(inner.convert_ids_to_tokens(int(i)))
        return self.tok.decode([i])

    def _pieces(self, ids: Sequence[int], first_raw: bool = True) -> list[str]:
        """Decoded string of each token as vLLM reports it: the first token decoded on its own with
        special tokens shown (BOS -> ``<bos>``), the others by incremental detokenization."""
        out: list[str] = []
        prev = ""
        for t in range(len(ids)):
            cur = self.tok.decode(list(ids[: t + 1]))
            if t == 0 and first_raw:
                piece = cur or self._special_name(int(ids[0]))
            else:
                piece = cur[len(prev) :] if cur.startswith(prev) else self.tok.decode([ids[t]])
            out.append(piece)
            prev = cur
        return out

    def _text_ids(self, text: str, add_special: bool) -> list[int]:
        bos = getattr(self.tok, "bos_id", None)
        return ([bos] if add_special and bos is not None else []) + list(self.tok.encode(text))

    def tokenize(self, req: dict[str, Any]) -> dict[str, Any]:
        prompt = req.get("prompt")
        if not isinstance(prompt, str):
            raise _BadRequest("tokenize needs a string prompt")
        ids = self._text_ids(prompt, bool(req.get("add_special_tokens", True)))
        return {"tokens": ids, "count": len(ids), "max_model_len": getattr(self.model, "max_positions", None)}

    # ------------------------------------------------------------------------------------ completions
    def _prompts(self, req: dict[str, Any]) -> list[str | list[int]]:
        p = req.get("prompt")
        if isinstance(p, str):
            return [p]
        if isinstance(p, list) and p and all(isinstance(x, int) and not isinstance(x, bool) for x in p):
            if self.mode != "vllm":
                raise _BadRequest("token-id prompts need mode='vllm'")
            return [list(p)]
        if isinstance(p, list) and p and all(isinstance(x, str) for x in p):
            return list(p)
        if isinstance(p, list) and p and all(isinstance(x, list) for x in p):
            if self.mode != "vllm":
                raise _BadRequest("token-id prompts need mode='vllm'")
            return [list(x) for x in p]
        raise _BadRequest("prompt must be a string, a list of strings or (vllm mode) token ids")

    def _prompt_tokens(self, prompt: str | list[int]) -> int | None:
        """Tokens of a completions prompt as the model reads it (BOS included), None without a tokenizer."""
        if not isinstance(prompt, str):
            return len(prompt)
        if self.tok is None:
            return None
        bos = getattr(self.tok, "bos_id", None)
        return (bos is not None) + len(self.tok.encode(prompt))

    def _generate(
        self, prompt: str | list[int], req: dict[str, Any], n: int, rng: np.random.Generator
    ) -> tuple[list[str], Usage | None]:
        """``n`` completions of one completions prompt and their usage (None if the model counts none)."""
        max_tokens = _int(req, "max_tokens", 16, 0)
        if max_tokens == 0:
            n_prompt = self._prompt_tokens(prompt)
            return [""] * n, None if n_prompt is None else Usage.of(n_prompt, 0)
        text = prompt if isinstance(prompt, str) else self.tok.decode(prompt)
        out = self.model.sample(
            [text],
            n=n,
            temperature=float(req.get("temperature", 1.0)),
            max_new_tokens=max_tokens,
            stop=tuple(req.get("stop") or ()),
            rng=rng,
        )
        used = usage_of(out)
        if used is not None and not isinstance(prompt, str):  # vLLM counts the ids sent
            used = Usage.of(len(prompt), used.completion_tokens)
        return out[0], used

    def _echo_logprobs(
        self, prompt: str | list[int], gen: str, req: dict[str, Any]
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """(echoed text, the 'logprobs' object, extra choice fields) for one prompt and its generation."""
        extra: dict[str, Any] = {}
        if self.mode == "exact":
            assert isinstance(prompt, str)
            score = getattr(self.model, "token_logprobs", None)
            if score is None:
                raise _BadRequest("this model cannot echo log-probabilities")
            ids_p, vals, offsets = score(prompt)
            vals, offsets = list(vals), list(offsets)
            if getattr(self.model.tokenizer, "level", "char") == "word":  # type: ignore[attr-defined]
                # a word and the whitespace before it, the way OpenAI's tokens carry their leading space
                ends = [o + len(prompt[o:].split(None, 1)[0]) for o in offsets]
                starts = [0, *ends[:-1]]
                offsets = starts
            else:
                ends = [*offsets[1:], len(prompt)]
            tokens = [prompt[a:b] for a, b in zip(offsets, ends, strict=True)]
            if gen:  # the generated tokens follow, with their log-probs given the prompt
                tok = self.model.tokenizer  # type: ignore[attr-defined]
                bos = [tok.bos_id] if tok.bos_id is not None else []
                gen_ids = list(tok.encode(gen))
                lps = self.model.logprobs_of_ids(bos + list(ids_p) + gen_ids)  # type: ignore[attr-defined]
                acc = len(prompt)
                for k, piece in enumerate(_incremental(tok, gen_ids)):
                    tokens.append(piece)
                    offsets.append(acc)
                    vals.append(lps[len(lps) - len(gen_ids) + k])
                    acc += len(piece)
            top = [None if v is None else {t: v} for t, v in zip(tokens, vals, strict=True)]
            lp = {"tokens": tokens, "token_logprobs": vals, "text_offset": offsets, "top_logprobs": top}
            return prompt + gen, lp, extra
        ids = self._text_ids(prompt, True) if isinstance(prompt, str) else list(prompt)
        if not ids:
            raise _BadRequest("empty prompt and the tokenizer has no BOS")
        text_prompt = prompt if isinstance(prompt, str) else self.tok.decode(ids)
        gen_ids = list(self.tok.encode(gen)) if gen else []
        seq = ids + gen_ids
        vals = self.model.logprobs_of_ids(seq)  # type: ignore[attr-defined]
        pieces = self._pieces(seq)
        tokens = [f"token_id:{i}" for i in seq] if req.get("return_tokens_as_token_ids") else pieces
        offsets, acc = [], 0
        for tok in tokens:  # vLLM: a running sum of the decoded lengths, BOS included
            offsets.append(acc)
            acc += len(tok)
        if req.get("prompt_logprobs") is not None:
            extra["prompt_logprobs"] = [None] + [
                {str(ids[t]): {"logprob": vals[t], "rank": 1, "decoded_token": pieces[t]}} for t in range(1, len(ids))
            ]
        if req.get("return_token_ids"):
            extra["prompt_token_ids"] = ids
        lp = {
            "tokens": tokens,
            "token_logprobs": vals,
            "text_offset": offsets,
            "top_logprobs": [None if v is None else {t: v} for t, v in zip(tokens, vals, strict=True)],
        }
        return text_prompt + gen, lp, extra

    def completions(self, req: dict[str, Any]) -> dict[str, Any]:
        prompts = self._prompts(req)
        n = _int(req, "n", 1, 1)
        max_tokens = _int(req, "max_tokens", 16, 0)
        if max_tokens == 0 and not req.get("echo"):
            raise _BadRequest("max_tokens = 0 needs echo")
        rng = np.random.default_rng(int(req.get("seed") or 0))
        choices = []
        usage: Usage | None = Usage(0, 0, 0)
        for i, p in enumerate(prompts):
            text_p = p if isinstance(p, str) else self.tok.decode(p)
            gens, used = self._generate(p, req, n, rng)
            usage = None if usage is None or used is None else usage + used
            for j, g in enumerate(gens):
                choice: dict[str, Any] = {
                    "index": i * n + j,
                    "text": g,
                    "finish_reason": "length" if max_tokens == 0 else "stop",
                    "logprobs": None,
                }
                if req.get("echo"):
                    if req.get("logprobs") is not None or req.get("prompt_logprobs") is not None:
                        text, lp, extra = self._echo_logprobs(p, g, req)
                        choice.update(
                            {"text": text, "logprobs": lp if req.get("logprobs") is not None else None, **extra}
                        )
                    else:
                        choice["text"] = text_p + g
                choices.append(choice)
        body = {
            "id": "cmpl-stub",
            "object": "text_completion",
            "created": 0,
            "model": req.get("model"),
            "choices": choices,
        }
        if usage is not None:
            body["usage"] = usage.to_dict()
        return body

    def chat(self, req: dict[str, Any]) -> dict[str, Any]:
        msgs = req.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise _BadRequest("messages must be a non-empty list")
        try:
            msgs = check_messages(msgs)
        except TypeError as exc:
            raise _BadRequest(str(exc)) from None
        n = _int(req, "n", 1, 1)
        rng = np.random.default_rng(int(req.get("seed") or 0))
        kwargs: dict[str, Any] = {
            "n": n,
            "temperature": float(req.get("temperature", 1.0)),
            "max_new_tokens": _int(req, "max_tokens", 16, 1),
            "stop": tuple(req.get("stop") or ()),
            "rng": rng,
        }
        sample_chat = getattr(self.model, "sample_chat", None)
        if sample_chat is not None:  # the model's tokenizer decides: its chat template, or concatenation
            out = sample_chat([msgs], **kwargs)
        else:
            out = self.model.sample(["\n".join(m["content"] for m in msgs)], **kwargs)
        used = usage_of(out)
        body = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": req.get("model"),
            "choices": [
                {"index": j, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                for j, t in enumerate(out[0])
            ],
        }
        if used is not None:
            body["usage"] = used.to_dict()
        return body


def _stream_events(body: dict[str, Any], chat: bool) -> Iterator[bytes]:
    """The response as server-sent events: per choice, its text in pieces, then a finish chunk."""
    for c in body["choices"]:
        text = c["message"]["content"] if chat else c["text"]
        pieces = [text[k : k + 4] for k in range(0, len(text), 4)] or [""]
        for k, piece in enumerate(pieces):
            last = k == len(pieces) - 1
            if chat:
                ch: dict[str, Any] = {
                    "index": c["index"],
                    "delta": {"content": piece},
                    "finish_reason": c["finish_reason"] if last else None,
                }
                obj = "chat.completion.chunk"
            else:
                ch = {
                    "index": c["index"],
                    "text": piece,
                    "logprobs": None,
                    "finish_reason": c["finish_reason"] if last else None,
                }
                obj = "text_completion"
            event = {"id": body["id"], "object": obj, "created": 0, "model": body.get("model"), "choices": [ch]}
            yield b"data: " + json.dumps(event).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


class _JSONHandler(BaseHTTPRequestHandler):
    """A quiet request handler that answers with JSON bodies."""

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return

    def _read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    # socketserver's listen backlog of 5 drops the connections of a burst of concurrent requests, which
    # the client's kernel retries a second later; real servers listen with a backlog in the hundreds
    request_queue_size = 128


@contextmanager
def _serve(handler: type[BaseHTTPRequestHandler], port: int) -> Iterator[str]:
    """Run ``handler`` on 127.0.0.1 in a background thread; yields ``http://127.0.0.1:P/v1``."""
    server = _Server(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def serve_json(answer: Callable[[dict[str, Any]], dict[str, Any]], *, route: str = "/completions",
               port: int = 0) -> Iterator[str]:
    """Serve POST requests to paths ending in ``route`` with ``answer(request) -> body`` (one at a time).

    For papers that need an OpenAI-compatible reply this module's engine does not give; a request that
    ``answer`` rejects with ValueError/KeyError/TypeError gets status 400, another path 404.
    """
    lock = threading.Lock()

    class Handler(_JSONHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            try:
                req = self._read_json()
                if not self.path.endswith(route):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with lock:
                    body = answer(req)
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"message": str(exc)}})
                return
            self._send(200, body)

    with _serve(Handler, port) as url:
        yield url


@contextmanager
def serve_text_model(
    model: TextModel,
    *,
    port: int = 0,
    mode: Literal["exact", "vllm"] = "exact",
    tokenize: bool = True,
    latency_s: float = 0.0,
) -> Iterator[str]:
    """Serve ``model`` on 127.0.0.1 in a background thread; yields the base URL (``http://127.0.0.1:P/v1``).

    ``mode`` chooses what echo scoring returns (see the module docstring); ``tokenize`` (vllm mode only)
    serves vLLM's ``/tokenize``. The model answers one request at a time (it is not assumed
    thread-safe); ``latency_s`` seconds are added to every answer outside that lock, so concurrent
    requests wait them out together, as behind a server that batches them. Chat requests go through the
    model's chat template when its tokenizer has one (see the module docstring). The server stops when
    the ``with`` block ends.
    """
    if mode not in ("exact", "vllm"):
        raise ValueError(f"mode must be 'exact' or 'vllm', got {mode!r}")
    if isinstance(latency_s, bool) or not isinstance(latency_s, (int, float)) or not 0 <= latency_s < float("inf"):
        raise ValueError(f"latency_s must be a finite number >= 0, got {latency_s!r}")
    engine = _Engine(model, mode, tokenize)
    lock = threading.Lock()

    class Handler(_JSONHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            try:
                req = self._read_json()
                if not isinstance(req, dict):
                    raise _BadRequest("the request body must be a JSON object")
                path = self.path.rstrip("/")
                if latency_s:
                    time.sleep(latency_s)
                with lock:
                    if path.endswith("/v1/chat/completions"):
                        body, chat = engine.chat(req), True
                    elif path.endswith("/v1/completions"):
                        body, chat = engine.completions(req), False
                    elif path == "/tokenize" and mode == "vllm" and tokenize:
                        self._send(200, engine.tokenize(req))
                        return
                    else:
                        self._send(404, {"error": {"message": f"no route {self.path}"}})
                        return
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"message": str(exc)}})
                return
            if req.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in _stream_events(body, chat):
                    self.wfile.write(event)
                    self.wfile.flush()
                return
            self._send(200, body)

    with _serve(Handler, port) as url:
        yield url
