"""An OpenAI-compatible HTTP server (vLLM, or an API) behind the :class:`TextModel` protocol, stdlib only.

Every request has a *total* deadline of ``timeout_s`` per attempt (connect, send and the whole body read),
so a server that stalls or trickles bytes cannot hang the caller. Connection errors, timeouts, HTTP 429 and
5xx are retried at most ``max_retries`` times with exponential backoff; other 4xx and malformed bodies fail
at once. The API key is read from the environment variable named ``api_key_env`` at request time and is
never stored on the object, put in a repr, or written into an error message.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .protocol import check_sample_args, check_score_args, cut_at_stop

__all__ = [
    "BackendHTTPError",
    "BackendResponseError",
    "BackendTimeoutError",
    "OpenAICompatBackend",
    "TextBackendError",
]

_MAX_BODY = 64 * 2**20  # bytes: a larger answer is treated as malformed rather than read into memory


class TextBackendError(RuntimeError):
    """A text backend could not produce a valid answer."""


class BackendTimeoutError(TextBackendError):
    """No complete response within the deadline (after every retry)."""


class BackendHTTPError(TextBackendError):
    """The server answered with an HTTP error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class BackendResponseError(TextBackendError):
    """The server answered 200 with a body that is not the expected JSON."""


class _Retryable(Exception):
    def __init__(self, error: TextBackendError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error, self.retry_after = error, retry_after


class OpenAICompatBackend:
    """Sample and score through an OpenAI-compatible ``/v1/completions`` (or ``/v1/chat/completions``) API.

    Parameters
    ----------
    base_url : e.g. ``"http://127.0.0.1:8000/v1"`` (vLLM's ``vllm serve <model>`` default).
    model : the served model name, sent as ``"model"``.
    api_key_env : name of the environment variable holding the key (``None``: send no key).
    timeout_s : total deadline of one attempt, in seconds.
    max_retries : extra attempts after a retryable failure (so at most ``max_retries + 1`` requests).
    backoff_s, max_backoff_s : wait ``min(max_backoff_s, backoff_s * 2**attempt)`` before a retry
        (or the server's ``Retry-After``, capped the same way).
    chat : use ``/chat/completions`` with one user message per prompt (no scoring in this mode).
    prompts_per_request : how many prompts one completions request carries.
    sleep : the wait function (tests pass a recorder).

    Scoring uses the completions endpoint with ``echo=True, logprobs=1, max_tokens=1`` and sums the
    log-probabilities of the tokens whose ``text_offset`` lies inside the continuation, the way
    likelihood-based evaluation harnesses do with vLLM.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        chat: bool = False,
        prompts_per_request: int = 32,
        name: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(
                f"base_url must be an http(s) URL such as 'http://127.0.0.1:8000/v1', got {base_url!r}"
            )
        if not model:
            raise ValueError("model (the served model's name) must be given")
        if (
            not (timeout_s > 0)
            or max_retries < 0
            or backoff_s < 0
            or max_backoff_s < 0
            or prompts_per_request < 1
        ):
            raise ValueError("need timeout_s > 0, max_retries >= 0, backoff_s >= 0, prompts_per_request >= 1")
        if api_key_env is not None and (not api_key_env or not api_key_env.replace("_", "").isalnum()):
            raise ValueError(f"api_key_env must be an environment variable name, got {api_key_env!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s, self.max_backoff_s = float(backoff_s), float(max_backoff_s)
        self.chat = bool(chat)
        self.prompts_per_request = int(prompts_per_request)
        self._name = name or model
        self._sleep = sleep
        self._parsed = parsed

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return (
            f"OpenAICompatBackend(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r}, timeout_s={self.timeout_s}, max_retries={self.max_retries})"
        )

    # ------------------------------------------------------------------------------------------- http
    def _api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise TextBackendError(
                f"environment variable {self.api_key_env} (the API key) is not set or empty"
            )
        return key

    def _redact(self, text: str, key: str | None) -> str:
        return text.replace(key, "***") if key else text

    def _post(self, route: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST JSON to ``base_url + route`` with retries; return the decoded JSON object."""
        key = self._api_key()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        body = json.dumps(payload).encode()
        url = self.base_url + route
        last: TextBackendError | None = None
        for attempt in range(self.max_retries + 1):
            try:
                return self._attempt(route, body, headers, key)
            except _Retryable as exc:
                last = exc.error
                if attempt == self.max_retries:
                    break
                wait = min(self.max_backoff_s, self.backoff_s * 2**attempt)
                if exc.retry_after is not None:
                    wait = min(self.max_backoff_s, max(wait, exc.retry_after))
                self._sleep(wait)
        assert last is not None
        raise type(last)(
            f"{last} (gave up after {self.max_retries + 1} attempts to {url})",
            *([last.status] if isinstance(last, BackendHTTPError) else []),
        )

    def _attempt(self, route: str, body: bytes, headers: dict[str, str], key: str | None) -> dict[str, Any]:
        p = self._parsed
        deadline = time.monotonic() + self.timeout_s
        conn_cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(p.hostname or "", p.port, timeout=self.timeout_s)
        url = self.base_url + route
        try:
            try:
                conn.request("POST", p.path.rstrip("/") + route, body=body, headers=headers)
                if conn.sock is not None:
                    conn.sock.settimeout(max(1e-3, deadline - time.monotonic()))
                resp = conn.getresponse()
                chunks: list[bytes] = []
                size = 0
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    if conn.sock is not None:
                        conn.sock.settimeout(left)
                    chunk = resp.read1(65536)  # at most one socket read, so the deadline is checked often
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > _MAX_BODY:
                        raise BackendResponseError(f"response from {url} is larger than {_MAX_BODY} bytes")
            except TimeoutError as exc:
                raise _Retryable(
                    BackendTimeoutError(f"no complete response from {url} within {self.timeout_s:g} s")
                ) from exc
            except (ConnectionError, http.client.HTTPException, OSError) as exc:
                raise _Retryable(
                    TextBackendError(f"connection to {url} failed: {type(exc).__name__}")
                ) from exc
        finally:
            conn.close()
        raw = b"".join(chunks)
        text = self._redact(raw[:300].decode("utf-8", errors="replace"), key)
        if resp.status != 200:
            err = BackendHTTPError(f"HTTP {resp.status} from {url}: {text!r}", resp.status)
            if resp.status == 429 or resp.status >= 500:
                retry_after = resp.getheader("Retry-After")
                try:
                    ra = float(retry_after) if retry_after is not None else None
                except ValueError:
                    ra = None
                raise _Retryable(err, ra)
            raise err
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BackendResponseError(f"response from {url} is not JSON: {text!r}") from exc
        if not isinstance(data, dict):
            raise BackendResponseError(f"response from {url} is not a JSON object: {text!r}")
        return data

    # ------------------------------------------------------------------------------------ TextModel
    def sample(
        self,
        prompts: Sequence[str],
        *,
        n: int = 1,
        temperature: float = 1.0,
        max_new_tokens: int = 32,
        stop: Sequence[str] = (),
        rng: np.random.Generator,
    ) -> list[list[str]]:
        """``n`` completions per prompt, requested with a ``seed`` drawn from ``rng`` (vLLM honours it)."""
        prompts = check_sample_args(prompts, n, temperature, max_new_tokens, stop)
        base: dict[str, Any] = {
            "model": self.model,
            "n": int(n),
            "temperature": float(temperature),
            "max_tokens": int(max_new_tokens),
        }
        if stop:
            base["stop"] = list(stop)
        out: list[list[str]] = []
        if self.chat:
            for p in prompts:
                payload = {
                    **base,
                    "messages": [{"role": "user", "content": p}],
                    "seed": int(rng.integers(2**31)),
                }
                choices = self._choices(self._post("/chat/completions", payload), n, "/chat/completions")
                out.append([cut_at_stop(_message_text(c), stop)[0] for c in choices])
            return out
        for start in range(0, len(prompts), self.prompts_per_request):
            chunk = prompts[start : start + self.prompts_per_request]
            payload = {**base, "prompt": chunk, "seed": int(rng.integers(2**31))}
            choices = self._choices(self._post("/completions", payload), len(chunk) * n, "/completions")
            texts = [cut_at_stop(_field(c, "text", str), stop)[0] for c in choices]
            out.extend(texts[i * n : (i + 1) * n] for i in range(len(chunk)))
        return out

    def _choices(self, data: dict[str, Any], expected: int, route: str) -> list[dict[str, Any]]:
        """The ``choices`` list ordered by ``index``; exactly ``expected`` of them, indices 0..expected-1."""
        choices = data.get("choices")
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise BackendResponseError(
                f"response from {route} has no 'choices' list: keys {sorted(data)[:8]}"
            )
        if len(choices) != expected:
            raise BackendResponseError(f"{route} returned {len(choices)} choices, expected {expected}")
        if all("index" in c for c in choices):
            idx = [c["index"] for c in choices]
            if sorted(idx) != list(range(expected)):
                raise BackendResponseError(
                    f"{route} returned choice indices {idx[:10]}, not 0..{expected - 1}"
                )
            choices = sorted(choices, key=lambda c: c["index"])
        return choices

    def score(self, prompts: Sequence[str], continuations: Sequence[str]) -> np.ndarray:
        """log p(continuation | prompt) from the server's echoed prompt log-probabilities."""
        prompts, continuations = check_score_args(prompts, continuations)
        if any(not p for p in prompts):
            raise ValueError("echo scoring needs a non-empty prompt (the first token has no log-probability)")
        if self.chat:
            raise TextBackendError("scoring needs the completions endpoint (echo + logprobs); use chat=False")
        result = np.zeros(len(prompts), dtype=np.float64)
        for start in range(0, len(prompts), self.prompts_per_request):
            ps = prompts[start : start + self.prompts_per_request]
            cs = continuations[start : start + self.prompts_per_request]
            payload = {
                "model": self.model,
                "prompt": [p + c for p, c in zip(ps, cs, strict=True)],
                "echo": True,
                "logprobs": 1,
                "max_tokens": 1,
                "temperature": 0.0,
            }
            choices = self._choices(self._post("/completions", payload), len(ps), "/completions")
            for j, (p, c, ch) in enumerate(zip(ps, cs, choices, strict=True)):
                result[start + j] = _continuation_logprob(ch, len(p), len(p) + len(c))
        return result


def _field(obj: dict[str, Any], key: str, kind: type) -> Any:
    val = obj.get(key)
    if not isinstance(val, kind):
        raise BackendResponseError(f"choice field {key!r} is {type(val).__name__}, expected {kind.__name__}")
    return val


def _message_text(choice: dict[str, Any]) -> str:
    msg = choice.get("message")
    if not isinstance(msg, dict) or not isinstance(msg.get("content"), str):
        raise BackendResponseError("chat choice has no message.content string")
    return str(msg["content"])


def _continuation_logprob(choice: dict[str, Any], begin: int, end: int) -> float:
    """Sum of echoed token log-probs whose character offset lies in ``[begin, end)``."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        raise BackendResponseError(
            "choice has no 'logprobs' object; does the server support echo with logprobs?"
        )
    vals, offsets = lp.get("token_logprobs"), lp.get("text_offset")
    if not isinstance(vals, list) or not isinstance(offsets, list) or len(vals) != len(offsets):
        raise BackendResponseError("logprobs needs equal-length 'token_logprobs' and 'text_offset' lists")
    total = 0.0
    for v, off in zip(vals, offsets, strict=True):
        if not isinstance(off, int):
            raise BackendResponseError(f"text_offset entry {off!r} is not an integer")
        if begin <= off < end:
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v):
                raise BackendResponseError(
                    f"token log-prob {v!r} inside the continuation is not a finite number"
                )
            total += float(v)
    return total
