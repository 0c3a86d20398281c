"""A shared interface to language models: sample completions, score continuations.

Two backends implement the :class:`TextModel` protocol:

- :class:`HFLocalBackend`: a Hugging Face ``transformers`` causal LM loaded from a local folder
  (``from_pretrained(path)``, never from a hub) or built from a config; batched, on CPU or GPU.
- :class:`OpenAICompatBackend`: any OpenAI-compatible HTTP server (vLLM's ``/v1/completions``), with one
  total deadline per attempt (connect, status, headers, body), bounded retries with exponential backoff
  (truncated bodies included), the API key read from an environment variable whose *name* is a parameter
  (stripped, validated, never stored, logged or returned), and scoring from token ids (vLLM's
  ``/tokenize`` + ``prompt_logprobs``) or, on other servers, by aligning the echoed tokens on the text.

``sample`` returns a :class:`Samples`: the list of completions per prompt, which also keeps the token
:class:`Usage` of every request (the server's ``usage``; for the local backend, the tokens the model read and
generated); :func:`usage_of` reads it from any model's result. The HTTP backend sends chat prompts
concurrently (``max_concurrency``). Chat requests are rendered by the tokenizer's chat template when it has
one (:meth:`HFLocalBackend.chat_prompt_ids`, and the test server), by plain concatenation otherwise.

``serve_text_model`` puts any local model behind a loopback OpenAI-compatible server, so the HTTP path
can be exercised offline; ``mode="vllm"`` reproduces vLLM's echo rules (BOS in the echo, ``text_offset``
as vLLM computes it, ``/tokenize``, token-id prompts, streaming). :func:`train_tiny_lm` trains a tiny
GPT-2 or Llama model from scratch on a synthetic corpus so that tests
and demos have real models without downloading anything. ``transformers`` is imported lazily, only inside
the local backend and the trainer, so importing this package stays light.
"""

from .http import (
    BackendHTTPError,
    BackendResponseError,
    BackendTimeoutError,
    OpenAICompatBackend,
    TextBackendError,
)
from .local import HFLocalBackend, HFTokenizerAdapter
from .protocol import RequestUsage, Samples, TextModel, TokenizerLike, Usage, VocabTokenizer, usage_of
from .stub import serve_text_model
from .train import (
    TinyLMConfig,
    TrainConfig,
    TrainResult,
    build_tiny_causal_lm,
    train_causal_lm,
    train_tiny_lm,
)

__all__ = [
    "BackendHTTPError",
    "BackendResponseError",
    "BackendTimeoutError",
    "HFLocalBackend",
    "HFTokenizerAdapter",
    "OpenAICompatBackend",
    "RequestUsage",
    "Samples",
    "TextBackendError",
    "TextModel",
    "TinyLMConfig",
    "TokenizerLike",
    "TrainConfig",
    "TrainResult",
    "Usage",
    "VocabTokenizer",
    "build_tiny_causal_lm",
    "serve_text_model",
    "train_causal_lm",
    "train_tiny_lm",
    "usage_of",
]
