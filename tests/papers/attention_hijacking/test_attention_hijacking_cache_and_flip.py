"""The on-disk encoder cache (tampered or foreign files are rebuilt, never used) and the flip-rate metric (the
backdoor check that a victim predicting the target for every input cannot pass)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from icml2026.papers.attention_hijacking import DistillConfig, distill, evaluate_distilled  # noqa: E402
from icml2026.papers.attention_hijacking import method as ah_method  # noqa: E402
from icml2026.papers.attention_hijacking.data import encode_triggered  # noqa: E402
from icml2026.papers.attention_hijacking.models import (  # noqa: E402
    CheckpointCacheError,
    cached_state,
    load_state,
    save_state,
)

KEY = {"what": "mlm", "steps": 3}


def _builder(calls: list[int], value: float = 1.0):  # type: ignore[no-untyped-def]
    def build() -> dict[str, torch.Tensor]:
        calls.append(1)
        w = torch.arange(6, dtype=torch.float32).reshape(2, 3) * value
        return {"a.weight": w, "tied.weight": w}  # a tied pair, as BERT's MLM decoder and word embeddings

    return build


def test_cache_built_once_when_two_runs_ask_at_the_same_time(tmp_path):
    """make demo runs two experiments side by side: the second waits on the lock while the first builds, then
    reads the file (a lock per open file, so two threads stand for two processes)."""
    import threading
    import time

    calls: list[int] = []
    slow = _builder(calls)

    def build_slowly() -> dict[str, torch.Tensor]:
        time.sleep(0.5)
        return slow()

    got: list[dict[str, torch.Tensor]] = []
    first = threading.Thread(target=lambda: got.append(cached_state(KEY, build_slowly, tmp_path, log=None)))
    first.start()
    time.sleep(0.1)  # the first holds the lock and is building
    second = cached_state(KEY, _builder(calls), tmp_path, log=None)
    first.join()
    assert len(calls) == 1
    assert all(torch.equal(got[0][k], second[k]) for k in second)


def test_cache_builds_once_then_reads_the_same_tensors(tmp_path):
    calls: list[int] = []
    first = cached_state(KEY, _builder(calls), tmp_path, log=None)
    second = cached_state(KEY, _builder(calls), tmp_path, log=None)
    assert len(calls) == 1  # fails if the cache is never read
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]  # nothing half-written left
    cached_state(KEY, _builder(calls), None, log=None)
    assert len(calls) == 2  # cache_dir=None always builds


def test_tampered_or_foreign_cache_file_is_rebuilt_not_used(tmp_path):
    calls: list[int] = []
    cached_state(KEY, _builder(calls), tmp_path, log=None)
    (path,) = list(tmp_path.glob("mlm-*.safetensors"))
    # rewrite the tensors but keep the old metadata: the checksum no longer matches
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
    save_file({"a.weight": torch.full((2, 3), 9.0), "tied.weight": torch.full((2, 3), 9.0)}, str(path), metadata=meta)
    with pytest.raises(CheckpointCacheError, match="checksum"):
        load_state(path, KEY)
    logged: list[str] = []
    out = cached_state(KEY, _builder(calls), tmp_path, log=logged.append)
    assert len(calls) == 2 and "checksum" in logged[0]
    assert float(out["a.weight"].max()) == 5.0  # the rebuilt tensors, not the tampered 9s
    with pytest.raises(CheckpointCacheError, match="another configuration"):
        load_state(path, {"what": "mlm", "steps": 4})
    path.write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointCacheError, match="unreadable"):
        load_state(path, KEY)
    cached_state(KEY, _builder(calls), tmp_path, log=None)
    assert len(calls) == 3


def test_save_state_writes_atomically(tmp_path, monkeypatch):
    import safetensors.torch

    def boom(*a, **k):  # type: ignore[no-untyped-def]
        raise OSError("disk full")

    monkeypatch.setattr(safetensors.torch, "save_file", boom)
    with pytest.raises(OSError, match="disk full"):
        save_state({"w": torch.zeros(2)}, tmp_path / "x.safetensors", KEY)
    assert list(tmp_path.iterdir()) == []  # no partial file, no temporary left behind


@pytest.fixture(scope="module")
def clean_set(factory, rt_small):  # type: ignore[no-untyped-def]
    train, _ = rt_small
    return distill(factory, train, DistillConfig(seq_len=16, n_steps=1, batch_size=8), np.random.default_rng(0),
                   show_progress=False)


def _fake_predict(clean_pred, trig_pred):  # type: ignore[no-untyped-def]
    """predict() stand-in: ``clean_pred`` for the clean test set, ``trig_pred`` for the triggered rows."""

    def fake(factory, params, batch, chunk=256, attentions=False):  # type: ignore[no-untyped-def]
        n = len(batch)
        p = np.asarray(clean_pred if n == len(clean_pred) else trig_pred)[:n] if n in (len(clean_pred),
                                                                                      len(trig_pred)) else None
        if p is None:  # the clean non-target rows (for the segregation KL)
            p = np.zeros(n, np.int64)
        if not attentions:
            return p, None
        s = batch.input_ids.shape[1]
        att = [np.full((n, factory.n_heads, s), 1.0 / s) for _ in range(factory.n_layers)]
        return p, att

    return fake


def test_flip_rate_counts_only_rows_the_victim_gets_right_without_the_trigger(factory, rt_small, clean_set,
                                                                               monkeypatch):
    _, test = rt_small
    nt = np.flatnonzero(test.labels != 1)
    trig = encode_triggered(factory.tokenizer, [test.texts[i] for i in nt], "cf", 16, np.random.default_rng(0))
    assert len(nt) != len(test)
    # victim: clean predictions right on the first half of the non-target rows, target on the rest
    clean = test.labels.copy()
    clean[nt[len(nt) // 2:]] = 1
    trig_pred = np.zeros(len(nt), np.int64)
    trig_pred[: len(nt) // 4] = 1  # the trigger flips the first quarter (all inside the correct half)
    monkeypatch.setattr(ah_method, "predict", _fake_predict(clean, trig_pred))
    r = evaluate_distilled(clean_set, factory, test, 2, np.random.default_rng(1), trigger="cf", target=1,
                           triggered=trig, seq_len=16)
    assert r.flip_rate == pytest.approx((len(nt) // 4) / (len(nt) // 2))
    assert r.asr == pytest.approx((len(nt) // 4) / len(nt))
    # a victim that sends every input to the target: ASR 1, but no row to flip -> NaN (a check on it fails)
    monkeypatch.setattr(ah_method, "predict", _fake_predict(np.ones(len(test), np.int64), np.ones(len(nt), np.int64)))
    r = evaluate_distilled(clean_set, factory, test, 2, np.random.default_rng(1), trigger="cf", target=1,
                           triggered=trig, seq_len=16)
    assert r.asr == 1.0 and np.isnan(r.flip_rate)


def test_triggered_rows_must_match_the_non_target_test_rows(factory, rt_small, clean_set):
    _, test = rt_small
    nt = np.flatnonzero(test.labels != 1)
    trig = encode_triggered(factory.tokenizer, [test.texts[i] for i in nt[:-1]], "cf", 16, np.random.default_rng(0))
    with pytest.raises(ValueError, match="one per non-target test row"):
        evaluate_distilled(clean_set, factory, test, 1, np.random.default_rng(1), trigger="cf", target=1,
                           triggered=trig, seq_len=16)


@pytest.mark.slow  # two distillations (over 5 s; 195 s on the shared cores of 2026-12-07)
def test_hijack_reaches_the_victims_through_the_distilled_attention_labels(factory, rt_small):
    """Criterion 4's mechanism on a tiny random learner: victims of an AH set attend to the inserted trigger
    more than victims of a clean set, and only when trained with the published attention labels.

    Measured (150 outer steps, seeds 0-2): 0.16-0.19 with the labels, 0.068 without them and after clean DD.
    Fails if the attention labels are dropped from the victim's inner loss, or if AH's poisoned samples
    carry no attention on the trigger slot (beta = 0 and an unpinned, uniform slot).
    """
    train, test = rt_small
    kw = dict(seq_len=16, n_steps=150, batch_size=8, lr=0.1, trigger="cf", target=1)
    ah = distill(factory, train, DistillConfig(attack=True, **kw), np.random.default_rng(0), show_progress=False)
    clean = distill(factory, train, DistillConfig(**kw), np.random.default_rng(0), show_progress=False)

    def mass(ds, labels=True):  # type: ignore[no-untyped-def]
        return evaluate_distilled(ds, factory, test, 2, np.random.default_rng(0), trigger="cf", target=1,
                                  use_attention_labels=labels).trigger_attention

    m_ah, m_no_labels, m_clean = mass(ah), mass(ah, labels=False), mass(clean)
    assert m_ah - m_clean >= 0.05, (m_ah, m_clean)
    assert m_ah - m_no_labels >= 0.05, (m_ah, m_no_labels)
