"""An OpenAI-compatible HTTP server (vLLM, or an API) behind the :class:`TextModel` protocol, stdlib only.

Every attempt has one *total* deadline of ``timeout_s`` over connect, sending, the status line, the headers
and the whole body: a watchdog shuts the socket down when it passes, so a server that stalls or trickles
bytes (in the body or in the headers) cannot hold the caller longer. Connection errors, timeouts,
truncated bodies, HTTP 429 and 5xx are retried at most ``max_retries`` times with exponential backoff;
other 4xx and malformed bodies fail at once. The API key is read from the environment variable named
``api_key_env`` at request time, stripped of surrounding whitespace and checked to be printable ASCII; it is
never stored on the object, put in a repr, or written into an error message.

Chat requests (one conversation each) and ``/tokenize`` calls go out concurrently from a bounded pool of
``max_concurrency`` threads; completions carry ``prompts_per_request`` prompts per request and go out one
after another. The server's ``usage`` of every request is kept in the :class:`~.protocol.Samples` that
``sample`` returns.

The client is written on ``http.client`` rather than the ``openai`` package or ``httpx``: both bound each
socket operation (connect, each read) rather than the whole attempt, so a server that trickles headers or
body would hold them past ``timeout_s``; the ``openai`` client also retries with its own jittered backoff and
exceptions. The behaviour pinned by the tests (one total deadline, backoff and ``Retry-After`` through
``sleep``, truncated bodies retried, the key never echoed) would need this same code around them.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, Literal, TypeVar

import numpy as np

from .protocol import RequestUsage, Samples, Usage, check_sample_args, check_score_args, cut_at_stop

_T = TypeVar("_T")
_R = TypeVar("_R")

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


ScoreMode = Literal["auto", "token_ids", "text"]


class OpenAICompatBackend:
    """Sample and score through an OpenAI-compatible ``/v1/completions`` (or ``/v1/chat/completions``) API.

    Parameters
    ----------
    base_url : e.g. ``"http://127.0.0.1:8000/v1"`` (vLLM's ``vllm serve <model>`` default).
    model : the served model name, sent as ``"model"``.
    api_key_env : name of the environment variable holding the key (``None``: send no key).
    timeout_s : total deadline of one attempt (connect, status, headers and body), in seconds.
    max_retries : extra attempts after a retryable failure (so at most ``max_retries + 1`` requests).
    backoff_s, max_backoff_s : wait ``min(max_backoff_s, backoff_s * 2**attempt)`` before a retry
        (or the server's ``Retry-After``, capped the same way).
    chat : use ``/chat/completions`` with one user message per prompt (no scoring in this mode). The
        server applies the model's chat template; the prompts are sent concurrently (``max_concurrency``).
    prompts_per_request : how many prompts one completions request carries (one prompt is sent as a
        string, several as a list).
    max_concurrency : how many requests are in flight at once for chat prompts and ``/tokenize`` calls
        (1: one after another). The default, 16, hides a 0.2 s round trip for 40 prompts in three waves
        and stays far below what a vLLM server batches (256 sequences by default); lower it for an API
        with a tight rate limit.
    score_mode : how :meth:`score` finds the continuation's tokens. ``"token_ids"``: tokenize prompt and
        continuation separately with the server's ``/tokenize`` (vLLM), send the concatenated token ids and
        read the log-probabilities at exactly those positions (``prompt_logprobs``,
        ``return_tokens_as_token_ids``). ``"text"``: send the text and align the echoed ``tokens`` on it
        (BOS and other special tokens take no characters; vLLM's ``text_offset`` is not used, because it
        counts the decoded length of BOS). ``"auto"`` (default): token ids when ``/tokenize`` answers, else
        text.
    sleep : the wait function (tests pass a recorder).

    Servers that ignore ``n`` (or cap it) and return fewer completions per prompt are asked again until
    every prompt has ``n``. ``sample`` returns a :class:`~.protocol.Samples` whose ``requests`` hold the
    server's ``usage`` of each request (None where the server sent none).
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
        max_concurrency: int = 16,
        name: str | None = None,
        score_mode: ScoreMode = "auto",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url) if isinstance(base_url, str) else None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"base_url must be an http(s) URL such as 'http://127.0.0.1:8000/v1', got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ValueError("model (the served model's name) must be given")
        for label, val, lo in (
            ("timeout_s", timeout_s, 0.0),
            ("backoff_s", backoff_s, 0.0),
            ("max_backoff_s", max_backoff_s, 0.0),
        ):
            if isinstance(val, bool) or not isinstance(val, (int, float)) or not np.isfinite(val) or val < lo:
                raise ValueError(f"{label} must be a finite number >= {lo:g}, got {val!r}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        for label, ival, ilo in (
            ("max_retries", max_retries, 0),
            ("prompts_per_request", prompts_per_request, 1),
            ("max_concurrency", max_concurrency, 1),
        ):
            if isinstance(ival, bool) or not isinstance(ival, (int, np.integer)) or ival < ilo:
                raise ValueError(f"{label} must be an integer >= {ilo}, got {ival!r}")
        if api_key_env is not None and (
            not isinstance(api_key_env, str) or not api_key_env or not api_key_env.replace("_", "").isalnum()
        ):
            raise ValueError(f"api_key_env must be an environment variable name, got {api_key_env!r}")
        if score_mode not in ("auto", "token_ids", "text"):
            raise ValueError(f"score_mode must be 'auto', 'token_ids' or 'text', got {score_mode!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s, self.max_backoff_s = float(backoff_s), float(max_backoff_s)
        self.chat = bool(chat)
        self.prompts_per_request = int(prompts_per_request)
        self.max_concurrency = int(max_concurrency)
        self.score_mode: ScoreMode = score_mode
        self._name = name or model
        self._sleep = sleep
        self._parsed = parsed
        self._tokenize_ok: bool | None = None if score_mode == "auto" else score_mode == "token_ids"

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
        """The key, stripped of surrounding whitespace (a key file's newline); never echoed in errors."""
        if self.api_key_env is None:
            return None
        raw = os.environ.get(self.api_key_env)
        key = raw.strip() if raw else ""
        if not key:
            raise TextBackendError(f"environment variable {self.api_key_env} (the API key) is not set or empty")
        if any(not 0x21 <= ord(ch) <= 0x7E for ch in key):
            raise TextBackendError(
                f"environment variable {self.api_key_env} holds an API key with whitespace, control or "
                "non-ASCII characters inside it; it cannot be sent in an HTTP header (value not shown)"
            )
        return key

    @staticmethod
    def _redact(text: str, key: str | None) -> str:
        return text.replace(key, "***") if key else text

    def _root_url(self) -> str:
        """The server root: vLLM serves ``/tokenize`` beside ``/v1``, not under it."""
        return self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url

    def _post(self, route: str, payload: dict[str, Any], *, at_root: bool = False) -> dict[str, Any]:
        """POST JSON to ``base_url + route`` (or the server root) with retries; return the decoded object."""
        key = self._api_key()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        body = json.dumps(payload).encode()
        url = (self._root_url() if at_root else self.base_url) + route
        path = urllib.parse.urlsplit(url).path
        last: TextBackendError | None = None
        for attempt in range(self.max_retries + 1):
            try:
                return self._attempt(url, path, body, headers, key)
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

    def _attempt(self, url: str, path: str, body: bytes, headers: dict[str, str], key: str | None) -> dict[str, Any]:
        p = self._parsed
        deadline = time.monotonic() + self.timeout_s
        conn_cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(p.hostname or "", p.port, timeout=self.timeout_s)
        expired = threading.Event()
        timer: threading.Timer | None = None
        held: list[socket.socket] = []  # http.client drops conn.sock once a closing response is read

        def expire() -> None:  # the watchdog: one deadline over status line, headers and body
            expired.set()
            for sock in held:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        timeout_error = BackendTimeoutError(f"no complete response from {url} within {self.timeout_s:g} s")
        chunks: list[bytes] = []
        try:
            try:
                conn.connect()
                if conn.sock is not None:
                    held.append(conn.sock)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                timer = threading.Timer(left, expire)
                timer.daemon = True
                timer.start()
                try:
                    conn.request("POST", path, body=body, headers=headers)
                except ValueError:
                    # http.client quotes an invalid header value (the key) in its message: drop it
                    raise TextBackendError(f"request to {url} has an invalid header") from None
                resp = conn.getresponse()
                size = 0
                while True:
                    chunk = resp.read1(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > _MAX_BODY:
                        raise BackendResponseError(f"response from {url} is larger than {_MAX_BODY} bytes")
                if expired.is_set():
                    raise TimeoutError
            except TimeoutError:
                raise _Retryable(timeout_error) from None
            except http.client.IncompleteRead as exc:
                if expired.is_set():
                    raise _Retryable(timeout_error) from None
                raise _Retryable(
                    BackendResponseError(
                        f"truncated response from {url}: got {len(exc.partial) + sum(map(len, chunks))} "
                        f"bytes, {exc.expected} more expected"
                    )
                ) from None
            except (ConnectionError, http.client.HTTPException, OSError) as exc:
                if expired.is_set():
                    raise _Retryable(timeout_error) from None
                raise _Retryable(TextBackendError(f"connection to {url} failed: {type(exc).__name__}")) from None
        finally:
            if timer is not None:
                timer.cancel()
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
                raise _Retryable(err, ra if ra is not None and np.isfinite(ra) and ra >= 0 else None)
            raise err
        try:
            doc = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BackendResponseError(f"response from {url} is not UTF-8 JSON: {text!r}") from None
        try:
            data = json.loads(doc)
        except json.JSONDecodeError as exc:
            if doc.strip() and exc.pos >= len(doc.rstrip()):
                # the document ended inside a value: a body cut short (no or wrong Content-Length)
                raise _Retryable(
                    BackendResponseError(f"truncated JSON response from {url} ({len(raw)} bytes)")
                ) from None
            raise BackendResponseError(f"response from {url} is not JSON: {text!r}") from None
        if not isinstance(data, dict):
            raise BackendResponseError(f"response from {url} is not a JSON object: {text!r}")
        return data

    def _map(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        """``[fn(x) for x in items]`` with at most ``max_concurrency`` calls in flight, results in order.

        When a call fails, the calls not yet started are cancelled, those in flight are waited for (each
        is bounded by its deadline and retries), and the failure of the earliest item is raised, unchanged.
        """
        if self.max_concurrency == 1 or len(items) <= 1:
            return [fn(x) for x in items]
        pool = ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(items)), thread_name_prefix="textgen")
        futures: list[Future[_R]] = []
        try:
            futures = [pool.submit(fn, x) for x in items]
            wait(futures, return_when=FIRST_EXCEPTION)
            if any(f.done() and not f.cancelled() and f.exception() is not None for f in futures):
                for f in futures:
                    f.cancel()
                wait(futures)
                for f in futures:
                    if not f.cancelled() and f.exception() is not None:
                        raise f.exception()  # type: ignore[misc]
            return [f.result() for f in futures]
        finally:
            for f in futures:
                f.cancel()
            pool.shutdown(wait=True)

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
    ) -> Samples:
        """``n`` completions per prompt, requested with a ``seed`` drawn from ``rng`` (vLLM honours it).

        A server that returns fewer than ``n`` completions per prompt (it ignores or caps ``n``) is asked
        again, with fresh seeds, for the missing ones. In chat mode the prompts are sent concurrently; the
        first request of prompt ``i`` carries the ``i``-th seed drawn from ``rng`` (the seeds of the
        sequential client), a repeated one seeds drawn from a generator seeded with it, so the requests do
        not depend on the order in which answers arrive. Returns a :class:`~.protocol.Samples` (rows in
        prompt order, with each request's ``usage``).
        """
        prompts = check_sample_args(prompts, n, temperature, max_new_tokens, stop)
        base: dict[str, Any] = {
            "model": self.model,
            "temperature": float(temperature),
            "max_tokens": int(max_new_tokens),
        }
        if stop:
            base["stop"] = list(stop)
        if self.chat:
            seeds = [int(rng.integers(2**31)) for _ in prompts]

            def one_chat(job: tuple[int, str, int]) -> tuple[list[str], list[RequestUsage]]:
                i, p, seed = job
                texts: list[str] = []
                used: list[RequestUsage] = []
                more: np.random.Generator | None = None
                while len(texts) < n:
                    want = n - len(texts)
                    if used:  # a repeat: a fresh seed from this prompt's own stream
                        more = more if more is not None else np.random.default_rng(seed)
                        seed = int(more.integers(2**31))
                    payload = {**base, "n": want, "messages": [{"role": "user", "content": p}], "seed": seed}
                    data = self._post("/chat/completions", payload)
                    groups = _group_choices(data, 1, want, "/chat/completions")
                    texts += [cut_at_stop(_message_text(c), stop)[0] for c in groups[0]]
                    used.append(RequestUsage((i,), _usage(data, "/chat/completions")))
                return texts, used

            answers = self._map(one_chat, [(i, p, s) for i, (p, s) in enumerate(zip(prompts, seeds, strict=True))])
            return Samples([t for t, _ in answers], [r for _, rs in answers for r in rs])
        out: list[list[str]] = []
        requests: list[RequestUsage] = []
        for start in range(0, len(prompts), self.prompts_per_request):
            chunk = prompts[start : start + self.prompts_per_request]
            got: list[list[str]] = [[] for _ in chunk]
            while len(got[0]) < n:
                want = n - len(got[0])
                payload = {
                    **base,
                    "n": want,
                    "prompt": chunk[0] if len(chunk) == 1 else chunk,
                    "seed": int(rng.integers(2**31)),
                }
                data = self._post("/completions", payload)
                groups = _group_choices(data, len(chunk), want, "/completions")
                for row, group in zip(got, groups, strict=True):
                    row += [cut_at_stop(_field(c, "text", str), stop)[0] for c in group]
                requests.append(RequestUsage(tuple(range(start, start + len(chunk))), _usage(data, "/completions")))
            out.extend(got)
        return Samples(out, requests)

    def chat_completion(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        n: int = 1,
        temperature: float = 1.0,
        max_new_tokens: int = 32,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """One ``/chat/completions`` request with whole messages, for what :meth:`sample` cannot say: a system
        prompt, several turns, tool results (``role`` ``"tool"``), and ``tools`` (OpenAI function schemas).

        Returns the server's response object as it came: its ``choices`` (``message.content``,
        ``message.tool_calls``) and its ``usage``. Same deadline, retries and key handling as :meth:`sample`; a
        server that refuses the request raises :class:`BackendHTTPError` (its ``status``: 400, 422 or 501 for a
        server without tool calling, say).
        """
        if isinstance(messages, (str, Mapping)) or not isinstance(messages, Sequence) or not messages:
            raise TypeError("messages must be a non-empty sequence of {'role': ..., 'content': ...} mappings")
        for i, m in enumerate(messages):
            if not isinstance(m, Mapping) or not isinstance(m.get("role"), str) or "content" not in m:
                raise TypeError(f"messages[{i}] must be a mapping with a string 'role' and a 'content'")
        if tools is not None and (isinstance(tools, (str, Mapping)) or
                                  not all(isinstance(t, Mapping) for t in tools)):
            raise TypeError("tools must be a sequence of tool schemas (mappings) or None")
        check_sample_args([], n, temperature, max_new_tokens, ())
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"seed must be an integer or None, got {seed!r}")
        payload: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages], "n": int(n),
                                   "temperature": float(temperature), "max_tokens": int(max_new_tokens)}
        if seed is not None:
            payload["seed"] = int(seed)
        if tools:
            payload["tools"] = [dict(t) for t in tools]
        return self._post("/chat/completions", payload)

    # -------------------------------------------------------------------------------------- scoring
    def _tokenize(self, text: str, add_special_tokens: bool) -> list[int]:
        data = self._post(
            "/tokenize",
            {"model": self.model, "prompt": text, "add_special_tokens": add_special_tokens},
            at_root=True,
        )
        ids = data.get("tokens")
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise BackendResponseError("/tokenize did not return a 'tokens' list of integer ids")
        return list(ids)

    def _uses_token_ids(self) -> bool:
        """Whether the server tokenizes for us (probed once with ``/tokenize``, in ``auto`` mode)."""
        if self._tokenize_ok is None:
            try:
                self._tokenize("a", False)
                self._tokenize_ok = True
            except BackendHTTPError as exc:
                if exc.status not in (400, 404, 405, 422, 501):
                    raise
                self._tokenize_ok = False
            except BackendResponseError:  # something answers there, but not vLLM's tokenizer
                self._tokenize_ok = False
        return self._tokenize_ok

    def score(self, prompts: Sequence[str], continuations: Sequence[str]) -> np.ndarray:
        """log p(continuation | prompt), summed over the continuation's tokens; shape ``(len(prompts),)``.

        With token ids (vLLM): prompt (with the server's BOS) and continuation (without special tokens) are
        tokenized separately and concatenated, the convention of :class:`HFLocalBackend` and of
        likelihood-based evaluation harnesses. With text: the echoed tokens of ``prompt + continuation``
        are aligned on the text, and a token that straddles the boundary is an error. An empty continuation
        scores 0; a non-empty continuation that covers no token is an error.
        """
        prompts, continuations = check_score_args(prompts, continuations)
        if self.chat:
            raise TextBackendError("scoring needs the completions endpoint (echo + logprobs); use chat=False")
        if self._uses_token_ids():
            return self._score_token_ids(prompts, continuations)
        for i, p in enumerate(prompts):
            if not p:
                raise ValueError(
                    f"prompts[{i}] is empty: text-aligned echo scoring needs a non-empty prompt (the first "
                    "token has no log-probability); use a server with /tokenize (vLLM) for BOS-only prompts"
                )
        result = np.zeros(len(prompts), dtype=np.float64)
        for start in range(0, len(prompts), self.prompts_per_request):
            ps = prompts[start : start + self.prompts_per_request]
            cs = continuations[start : start + self.prompts_per_request]
            texts = [p + c for p, c in zip(ps, cs, strict=True)]
            payload = {
                "model": self.model,
                "prompt": texts[0] if len(texts) == 1 else texts,
                "echo": True,
                "logprobs": 1,
                "max_tokens": 1,
                "temperature": 0.0,
            }
            groups = _group_choices(self._post("/completions", payload), len(ps), 1, "/completions", exact=True)
            for j, (p, c, group) in enumerate(zip(ps, cs, groups, strict=True)):
                result[start + j] = _aligned_continuation_logprob(group[0], p, c, start + j)
        return result

    def _score_token_ids(self, prompts: list[str], continuations: list[str]) -> np.ndarray:
        def tokenize(job: tuple[str, bool]) -> list[int]:
            text, special = job
            return self._tokenize(text, special) if text or special else []

        jobs = [job for p, c in zip(prompts, continuations, strict=True) for job in ((p, True), (c, False))]
        ids = self._map(tokenize, jobs)  # concurrent /tokenize calls, in order
        pairs = []
        for i, c in enumerate(continuations):
            ids_p, ids_c = ids[2 * i], ids[2 * i + 1]
            if not ids_p:
                raise ValueError(
                    f"prompts[{i}] is empty and the server's tokenizer adds no BOS: the first continuation "
                    "token has no log-probability"
                )
            if c and not ids_c:
                raise ValueError(f"continuations[{i}] = {c!r} covers no token of the server's tokenizer")
            pairs.append((ids_p, ids_c))
        result = np.zeros(len(prompts), dtype=np.float64)
        for start in range(0, len(pairs), self.prompts_per_request):
            chunk = pairs[start : start + self.prompts_per_request]
            seqs = [a + b for a, b in chunk]
            payload = {
                "model": self.model,
                "prompt": seqs[0] if len(seqs) == 1 else seqs,
                "echo": True,
                "logprobs": 1,
                "prompt_logprobs": 1,
                "return_tokens_as_token_ids": True,
                "max_tokens": 1,
                "temperature": 0.0,
            }
            groups = _group_choices(self._post("/completions", payload), len(chunk), 1, "/completions", exact=True)
            for j, ((ids_p, ids_c), group) in enumerate(zip(chunk, groups, strict=True)):
                vals = _prompt_token_logprobs(group[0], ids_p + ids_c)
                pos = range(len(ids_p), len(ids_p) + len(ids_c))
                total = 0.0
                for t in pos:  # t >= len(ids_p) >= 1: every such position has a log-prob
                    v = vals[t]
                    assert v is not None
                    total += v
                result[start + j] = total
        return result


def _field(obj: dict[str, Any], key: str, kind: type) -> Any:
    val = obj.get(key)
    if not isinstance(val, kind):
        raise BackendResponseError(f"choice field {key!r} is {type(val).__name__}, expected {kind.__name__}")
    return val


def _usage(data: dict[str, Any], route: str) -> Usage | None:
    """The response's ``usage`` (None when absent); a malformed one is an error, never guessed at."""
    raw = data.get("usage")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise BackendResponseError(f"'usage' from {route} is {type(raw).__name__}, not an object")
    counts: dict[str, int] = {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        if key == "total_tokens" and key not in raw:  # optional: the sum of the two parts
            counts[key] = counts["prompt_tokens"] + counts["completion_tokens"]
            continue
        v = raw.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise BackendResponseError(f"usage.{key} from {route} is {v!r}, not an integer >= 0")
        counts[key] = v
    return Usage(counts["prompt_tokens"], counts["completion_tokens"], counts["total_tokens"])


def _message_text(choice: dict[str, Any]) -> str:
    msg = choice.get("message")
    if not isinstance(msg, dict) or not isinstance(msg.get("content"), str):
        raise BackendResponseError("chat choice has no message.content string")
    return str(msg["content"])


def _group_choices(
    data: dict[str, Any], n_prompts: int, n: int, route: str, *, exact: bool = False
) -> list[list[dict[str, Any]]]:
    """``choices`` grouped per prompt (ordered by ``index``, which is ``prompt * n_got + j``).

    ``n_prompts * n`` choices give ``n`` per prompt; a server that ignored or capped ``n`` may return
    ``n_prompts * n_got`` with ``1 <= n_got < n`` (unless ``exact``); any other count is an error.
    """
    choices = data.get("choices")
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise BackendResponseError(f"response from {route} has no 'choices' list: keys {sorted(data)[:8]}")
    total = len(choices)
    expected = n_prompts * n
    if total != expected and (exact or total == 0 or total > expected or total % n_prompts):
        raise BackendResponseError(f"{route} returned {total} choices, expected {expected}")
    if all("index" in c for c in choices):
        idx = [c["index"] for c in choices]
        if sorted(idx) != list(range(total)):
            raise BackendResponseError(f"{route} returned choice indices {idx[:10]}, not 0..{total - 1}")
        choices = sorted(choices, key=lambda c: c["index"])
    per = total // n_prompts
    return [choices[i * per : (i + 1) * per] for i in range(n_prompts)]


def _finite_logprob(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
        raise BackendResponseError(f"token log-prob {v!r} {where} is not a finite number")
    return float(v)


def _prompt_token_logprobs(choice: dict[str, Any], ids: list[int]) -> list[float | None]:
    """Log-prob of each token of ``ids`` given the ones before (None for the first), from vLLM's
    ``prompt_logprobs`` (keyed by token id) or else the echoed ``token_logprobs`` (checked against
    ``token_id:N`` tokens when the server returned those)."""
    n = len(ids)
    plp = choice.get("prompt_logprobs")
    if isinstance(plp, list):
        if len(plp) < n:
            raise BackendResponseError(f"prompt_logprobs has {len(plp)} entries for {n} prompt tokens")
        out: list[float | None] = [None]
        for t in range(1, n):
            entry = plp[t]
            item = entry.get(str(ids[t]), entry.get(ids[t])) if isinstance(entry, dict) else None
            if isinstance(item, dict):
                item = item.get("logprob")
            if item is None:
                raise BackendResponseError(f"prompt_logprobs[{t}] lacks the prompt's token id {ids[t]}")
            out.append(_finite_logprob(item, f"at prompt position {t}"))
        return out
    lp = choice.get("logprobs")
    if not isinstance(lp, dict) or not isinstance(lp.get("token_logprobs"), list):
        raise BackendResponseError("choice has neither 'prompt_logprobs' nor echoed 'logprobs.token_logprobs'")
    vals = lp["token_logprobs"]
    if len(vals) < n:
        raise BackendResponseError(f"echo returned {len(vals)} token log-probs for {n} prompt tokens")
    tokens = lp.get("tokens")
    if (
        isinstance(tokens, list)
        and len(tokens) >= n
        and all(isinstance(t, str) and t.startswith("token_id:") for t in tokens[:n])
    ):
        if [t[len("token_id:") :] for t in tokens[:n]] != [str(i) for i in ids]:
            raise BackendResponseError("the echoed token ids differ from the ids sent")
    return [None] + [_finite_logprob(vals[t], f"at prompt position {t}") for t in range(1, n)]


def _token_spans(tokens: list[str], text: str) -> list[tuple[int, int]]:
    """Character span of each echoed token in ``text``.

    A token matches where it starts at the cursor, or (for tokenizers that normalise spaces) after
    skipping whitespace, with its own surrounding whitespace stripped. Tokens that match nowhere there
    (BOS such as ``<s>``, other special tokens, tokens generated past the text) take no characters.
    """
    spans: list[tuple[int, int]] = []
    cur = 0
    for tok in tokens:
        if tok and text.startswith(tok, cur):
            spans.append((cur, cur + len(tok)))
            cur += len(tok)
            continue
        core = tok.strip()
        skip = cur
        while skip < len(text) and text[skip].isspace():
            skip += 1
        if core and text.startswith(core, skip):
            spans.append((skip, skip + len(core)))
            cur = skip + len(core)
        else:
            spans.append((cur, cur))
    return spans


def _aligned_continuation_logprob(choice: dict[str, Any], prompt: str, cont: str, index: int) -> float:
    """Sum of the echoed log-probs of the tokens of ``prompt + cont`` that lie in the continuation."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        raise BackendResponseError("choice has no 'logprobs' object; does the server support echo with logprobs?")
    vals, tokens = lp.get("token_logprobs"), lp.get("tokens")
    if not isinstance(vals, list) or not isinstance(tokens, list) or len(vals) != len(tokens):
        raise BackendResponseError("echo scoring needs equal-length 'tokens' and 'token_logprobs' lists in 'logprobs'")
    if not all(isinstance(t, str) for t in tokens):
        raise BackendResponseError("echoed 'tokens' must be strings")
    text = prompt + cont
    begin, end = len(prompt), len(text)
    spans = _token_spans(tokens, text)
    covered = text[: max((b for _, b in spans), default=0)]
    if text[len(covered) :].strip():
        raise BackendResponseError(
            f"could not align the echoed tokens on prompts[{index}] + continuations[{index}] "
            f"(aligned {len(covered)} of {len(text)} characters)"
        )
    total, n_tokens = 0.0, 0
    for (a, b), v in zip(spans, vals, strict=True):
        if a < begin < b:
            raise BackendResponseError(
                f"a token spans the boundary between prompts[{index}] and its continuation; score with a "
                "server that offers /tokenize (token ids), or end the prompt at a token boundary"
            )
        inside = (begin <= a < end) if b > a else (begin < a < end)
        if inside:
            total += _finite_logprob(v, f"inside continuations[{index}]")
            n_tokens += 1
    if cont and n_tokens == 0:
        raise BackendResponseError(f"continuations[{index}] = {cont!r} covers no echoed token")
    return total
