"""Criterion 8: the same text pipeline through HFLocalBackend (tiny saved model) and OpenAICompatBackend
(loopback server); parsers for "Answer: X", "Confidence: NN%" and meta-prediction JSON."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.core import make_rng
from icml2026.papers.truth_polling import (
    Rule,
    aggregate,
    format_meta_prompt,
    format_prompt,
    parse_answer,
    parse_confidence,
    parse_meta_prediction,
    poll_models,
)


def test_parsers() -> None:
    assert parse_answer("Answer: Paris\nConfidence: 80%") == "Paris"
    assert parse_answer("blah ANSWER:  red  \nmore") == "red"
    assert parse_answer("no answer here") is None and parse_answer("Answer:   \n") is None
    assert parse_confidence("Answer: x\nConfidence: 85%") == pytest.approx(0.85)
    assert parse_confidence("confidence: 0.3") == pytest.approx(0.3)
    assert parse_confidence("Confidence: 250%") is None and parse_confidence("none") is None
    opts = ["red", "blue", "green"]
    np.testing.assert_allclose(parse_meta_prediction('{"Red": 60, "blue": 40}', opts), [0.6, 0.4, 0.0])
    np.testing.assert_allclose(parse_meta_prediction('x {"green": 0.5, "pink": 0.5} y', opts), [0, 0, 1.0])
    assert parse_meta_prediction("{not json}", opts) is None
    assert parse_meta_prediction('{"pink": 1}', opts) is None
    assert parse_meta_prediction("", opts) is None


FACTS = {"zorvak color": "red", "bimelo color": "blue", "tasuna color": "green", "pirodo color": "red"}
OPTIONS = ["red", "blue", "green"]


@pytest.fixture(scope="module")
def tiny_backend():  # type: ignore[no-untyped-def]
    """A tiny char-level GPT-2 trained on answer lines and meta-prediction lines (~5-10 s)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from icml2026.core.textgen import TinyLMConfig, TrainConfig, train_tiny_lm

    torch.set_num_threads(1)
    texts = []
    for q, a in FACTS.items():
        texts.append(f"{format_prompt(q)}Answer: {a}\nConfidence: 90%\n")
        texts.append(
            f'{format_meta_prompt(q)}{{"{a}": 70, "blue": 30}}\n'
            if a != "blue"
            else f'{format_meta_prompt(q)}{{"blue": 60, "red": 40}}\n'
        )
    res = train_tiny_lm(
        texts,
        make_rng(0),
        model_config=TinyLMConfig(d_model=48, n_layers=2, n_heads=4, max_len=96),
        train_config=TrainConfig(n_steps=250, batch_size=16, lr=1e-2),
    )
    return res.backend


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exact", "vllm"])
def test_same_pipeline_through_local_and_http_backends(tiny_backend, tmp_path, mode) -> None:  # type: ignore[no-untyped-def]
    from icml2026.core.textgen import HFLocalBackend, OpenAICompatBackend, serve_text_model

    tiny_backend.save_pretrained(tmp_path / "tiny")
    local = HFLocalBackend.from_pretrained(tmp_path / "tiny")  # the saved model, loaded from a local folder
    questions = list(FACTS)
    gold = np.array([FACTS[q] for q in questions], dtype=object)
    with serve_text_model(local, mode=mode) as url:
        remote = OpenAICompatBackend(url, "tiny", timeout_s=30)
        polls = {}
        for name, backend in (("local", local), ("http", remote)):
            polls[name] = poll_models(
                [backend, backend], questions, make_rng(1), n_samples=3, temperature=0.0, options=OPTIONS
            )
    for poll in polls.values():
        assert poll.parse_rate == 1.0 and poll.meta_parse_rate == 1.0  # the memorised format parses
        res = aggregate(poll.answers, "majority_cross", poll.confidences, rng=make_rng(2))
        assert list(res.answers) == list(gold)  # greedy answers are the memorised facts
        np.testing.assert_allclose(poll.confidences, 0.9)
        sp = aggregate(poll.answers, Rule("surprisingly_popular"), meta_predictions=poll.meta, options=OPTIONS)
        assert sp.cost == 2 * 3 + 2  # six answers and two meta-predictions per question
    # greedy decoding: identical results whichever backend carried the text
    assert (polls["local"].answers == polls["http"].answers).all()
    np.testing.assert_allclose(polls["local"].meta, polls["http"].meta)
    # sampling at temperature 1 also runs through both
    with serve_text_model(local, mode=mode) as url:
        hot = poll_models([OpenAICompatBackend(url, "tiny")], questions, make_rng(3), n_samples=4)
    assert hot.answers.shape == (1, 4, 4) and 0.5 <= hot.parse_rate <= 1.0


def test_garbage_server_fails_the_pipeline_clearly() -> None:
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from icml2026.core.textgen import BackendResponseError, OpenAICompatBackend

    class Garbage(BaseHTTPRequestHandler):
        def log_message(self, format, *args):  # type: ignore[no-untyped-def]
            return

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"choices": "nope"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Garbage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        be = OpenAICompatBackend(f"http://127.0.0.1:{server.server_address[1]}/v1", "m", timeout_s=5, max_retries=0)
        with pytest.raises(BackendResponseError, match="choices"):
            poll_models([be], ["zorvak color"], make_rng(0))
    finally:
        server.shutdown()
        server.server_close()


def test_poll_models_rejects_empty_inputs() -> None:
    with pytest.raises(ValueError, match="at least one model"):
        poll_models([], ["q"], make_rng(0))
