"""A loopback OpenAI-compatible server in front of a local :class:`TextModel` (for tests and offline demos).

It speaks the subset of the completions API that :class:`OpenAICompatBackend` uses: ``/v1/completions``
with ``prompt`` (string or list), ``n``, ``temperature``, ``max_tokens``, ``stop``, ``seed``, and
``echo=True`` with ``logprobs`` (for models exposing ``token_logprobs``, such as :class:`HFLocalBackend`),
plus ``/v1/chat/completions`` with one user message. It binds 127.0.0.1 only and is not a production server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from .protocol import TextModel

__all__ = ["serve_text_model"]


def _completions(model: TextModel, req: dict[str, Any]) -> dict[str, Any]:
    prompts = req["prompt"] if isinstance(req["prompt"], list) else [req["prompt"]]
    n = int(req.get("n", 1))
    if req.get("echo"):
        score = getattr(model, "token_logprobs", None)
        if score is None:
            raise ValueError("this model cannot echo log-probabilities")
        choices = []
        for i, p in enumerate(prompts):
            _, vals, offsets = score(p)
            choices.append(
                {
                    "index": i,
                    "text": p,
                    "finish_reason": "length",
                    "logprobs": {"token_logprobs": vals, "text_offset": offsets},
                }
            )
        return {"object": "text_completion", "model": req.get("model"), "choices": choices}
    rng = np.random.default_rng(int(req.get("seed", 0)))
    outs = model.sample(
        prompts,
        n=n,
        temperature=float(req.get("temperature", 1.0)),
        max_new_tokens=int(req.get("max_tokens", 16)),
        stop=tuple(req.get("stop") or ()),
        rng=rng,
    )
    choices = [
        {"index": i * n + j, "text": t, "finish_reason": "stop"}
        for i, row in enumerate(outs)
        for j, t in enumerate(row)
    ]
    return {"object": "text_completion", "model": req.get("model"), "choices": choices}


def _chat(model: TextModel, req: dict[str, Any]) -> dict[str, Any]:
    prompt = "\n".join(str(m["content"]) for m in req["messages"])
    n = int(req.get("n", 1))
    rng = np.random.default_rng(int(req.get("seed", 0)))
    outs = model.sample(
        [prompt],
        n=n,
        temperature=float(req.get("temperature", 1.0)),
        max_new_tokens=int(req.get("max_tokens", 16)),
        stop=tuple(req.get("stop") or ()),
        rng=rng,
    )
    return {
        "object": "chat.completion",
        "choices": [
            {"index": j, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
            for j, t in enumerate(outs[0])
        ],
    }


@contextmanager
def serve_text_model(model: TextModel, *, port: int = 0) -> Iterator[str]:
    """Serve ``model`` on 127.0.0.1 in a background thread; yields the base URL (``http://127.0.0.1:P/v1``).

    Requests are answered one at a time (the model is not assumed thread-safe). The server stops when
    the ``with`` block ends.
    """
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            try:
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with lock:
                    if self.path.endswith("/chat/completions"):
                        body = _chat(model, req)
                    elif self.path.endswith("/completions"):
                        body = _completions(model, req)
                    else:
                        self._send(404, {"error": {"message": f"no route {self.path}"}})
                        return
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"message": str(exc)}})
                return
            self._send(200, body)

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
