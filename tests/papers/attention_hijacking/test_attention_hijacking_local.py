"""Real parts from the command line: a user's AutoModelForSequenceClassification checkpoint (``--set model=PATH``,
read through ``icml2026.core.loaders``) and a user's text-classification dataset (``--set data=DIR``: a saved
``datasets`` DatasetDict, or CSV / JSONL files), on tiny RoBERTa / DistilBERT checkpoints and data written here."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.core.errors import BadInput  # noqa: E402
from icml2026.papers.attention_hijacking import LearnerFactory  # noqa: E402
from icml2026.papers.attention_hijacking.data import load_local_dataset  # noqa: E402

_POS = "a great film with a warm heart and a fine cast".split()
_NEG = "a dull film with a weak plot and a poor script".split()


def _rows(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = i % 2
        words = [str(w) for w in rng.choice(_POS if label else _NEG, size=int(rng.integers(5, 12)))]
        out.append({"text": " ".join(words), "label": label})
    return out


def _write_files(folder: Path, kind: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, n, seed in (("train", 80, 0), ("test", 40, 1)):
        rows = _rows(n, seed)
        if kind == "csv":
            with (folder / f"{split}.csv").open("w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, ["text", "label"])
                w.writeheader()
                w.writerows(rows)
        else:
            (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def _write_saved_dataset(folder: Path) -> Path:
    datasets = pytest.importorskip("datasets")
    dd = datasets.DatasetDict({split: datasets.Dataset.from_list(_rows(n, seed))
                               for split, n, seed in (("train", 80, 0), ("validation", 20, 2), ("test", 40, 1))})
    dd.save_to_disk(str(folder))
    return folder


def _bpe_tokenizer(folder: Path):  # type: ignore[no-untyped-def]
    """A byte-level BPE tokenizer trained here on the test's words (RoBERTa's kind), saved in ``folder``."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([" ".join(_POS + _NEG)] * 4, vocab_size=320, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    folder.mkdir(parents=True, exist_ok=True)
    bpe.save_model(str(folder))
    return RobertaTokenizerFast(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))


def _tiny_roberta(folder: Path) -> Path:
    from transformers import RobertaConfig, RobertaForSequenceClassification

    tok = _bpe_tokenizer(folder)
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=80, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, num_labels=2)
    torch.manual_seed(0)  # test fixture only: the library never seeds global state
    RobertaForSequenceClassification(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _tiny_distilbert(folder: Path, tok) -> Path:  # type: ignore[no-untyped-def]
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    cfg = DistilBertConfig(vocab_size=len(tok), dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                           max_position_embeddings=64, num_labels=2)
    torch.manual_seed(0)  # test fixture only
    DistilBertForSequenceClassification(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_csv_jsonl_and_saved_datasets_give_the_same_rows(tmp_path):
    a = load_local_dataset(_write_files(tmp_path / "csv", "csv"))
    b = load_local_dataset(_write_files(tmp_path / "jsonl", "jsonl"))
    for x, y in zip(a, b, strict=True):
        assert x.texts == y.texts and np.array_equal(x.labels, y.labels) and x.n_classes == 2
    # without a validation split, 10 % of train is held out (fixed seed): disjoint, together all of train
    train, val, test = a
    assert len(val) == 8 and len(train) == 72 and len(test) == 40
    c_train, c_val, c_test = load_local_dataset(_write_saved_dataset(tmp_path / "saved"))
    assert len(c_train) == 80 and len(c_val) == 20 and c_test.texts == test.texts  # its own validation split


def test_string_labels_are_numbered_in_sorted_order(tmp_path):
    d = tmp_path / "named"
    d.mkdir()
    for split in ("train", "test"):
        rows = [{"sentence": f"text {i}", "label": "pos" if i % 2 else "neg"} for i in range(10)]
        (d / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    train, _, _ = load_local_dataset(d)
    assert train.n_classes == 2 and set(train.labels.tolist()) == {0, 1}  # "neg" = 0, "pos" = 1 ("sentence" col)


def test_bad_data_folders_are_named(tmp_path):
    with pytest.raises(BadInput, match=r"^data = .*no such folder"):
        load_local_dataset(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match=r"^data = .*train and test"):
        load_local_dataset(tmp_path / "empty")
    bad = tmp_path / "nolabel"
    bad.mkdir()
    for split in ("train", "test"):
        (bad / f"{split}.jsonl").write_text(json.dumps({"text": "a b"}) + "\n")
    with pytest.raises(BadInput, match=r"^data = .*label column"):
        load_local_dataset(bad)
    one = tmp_path / "oneclass"
    one.mkdir()
    for split in ("train", "test"):
        (one / f"{split}.jsonl").write_text(json.dumps({"text": "a b", "label": 0}) + "\n")
    with pytest.raises(BadInput, match="single class"):
        load_local_dataset(one)


@pytest.mark.slow
def test_roberta_and_distilbert_checkpoints_load_through_the_core_loader(tmp_path):
    from icml2026.papers.attention_hijacking.method import DistillConfig, distill, evaluate_distilled

    rob = LearnerFactory.from_pretrained(_tiny_roberta(tmp_path / "roberta"), 2)
    assert rob.config.model_type == "roberta" and rob.config._attn_implementation == "eager"
    assert rob.tokenizer.add_prefix_space  # words inserted into word lists tokenize as inside a sentence
    assert {k.split(".")[1] for k in rob.head_keys} == {"dense", "out_proj"}  # RoBERTa's head, re-drawn
    dis = LearnerFactory.from_pretrained(_tiny_distilbert(tmp_path / "distilbert", rob.tokenizer), 2)
    assert any(k.startswith("pre_classifier.") for k in dis.head_keys)  # DistilBERT's two-layer head
    train, _, test = load_local_dataset(_write_files(tmp_path / "data", "csv"))
    for f in (rob, dis):
        # the attack end to end on each class: AH's distillation (second order, attention labels of every
        # layer and head) and fresh victims with ASR and the CLS mass on the trigger
        cfg = DistillConfig(seq_len=16, n_steps=2, batch_size=8, attack=True, trigger="film", balance_classes=True)
        ds = distill(f, train, cfg, np.random.default_rng(0), show_progress=False)
        assert list(ds.labels.argmax(1).tolist()).count(1) == list(ds.labels.argmax(1).tolist()).count(0) == 2
        r = evaluate_distilled(ds, f, test, 1, np.random.default_rng(1))
        assert 0.0 <= r.asr <= 1.0 and 0.0 <= r.trigger_attention <= 1.0 and np.isfinite(r.cta)


def test_bad_model_and_data_paths_are_refused_with_one_line(tmp_path):
    from icml2026.papers.attention_hijacking.studies import AHConfig

    with pytest.raises(BadInput, match=r"^model = .*no such file"):
        AHConfig(model=str(tmp_path / "nowhere"))
    with pytest.raises(BadInput, match=r"^data = .*no such folder"):
        AHConfig(data=str(tmp_path / "nowhere"))
    # the [CLS]-only last layer is written for BERT's layers
    with pytest.raises(BadInput, match="cls_only_last_layer"):
        AHConfig(model=str(_tiny_roberta(tmp_path / "roberta")), cls_only_last_layer=1)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_tiny_roberta_and_a_saved_dataset_run_the_anchor_experiment_from_the_cli(tmp_path):
    from icml2026.cli import main

    model = _tiny_roberta(tmp_path / "roberta")
    data = _write_saved_dataset(tmp_path / "saved")
    out = tmp_path / "runs"
    code = main(["run", "attention_hijacking.anchor", "--preset", "smoke", "--seed", "0", "--threads", "1",
                 "--set", f"model={model}", "--set", f"data={data}", "--set", "baselines=0", "--out", str(out)])
    assert code in (0, 1, 4)  # a verdict (at smoke size: undecided), no error
    (res_file,) = out.glob("attention_hijacking.anchor/smoke-seed0-*/results.json")
    res = json.loads(res_file.read_text())
    assert res["config"]["model"] == str(model) and res["config"]["data"] == str(data)
    names = {c["name"]: c for c in res["checks"]}
    assert names["clean_dd_cta_over_linear_probe"]["role"] == "precondition"
    assert names["ah_asr"]["comparative"]
    assert 0.0 <= res["metrics"]["ah_asr"] <= 1.0
    # bad paths on the command line: exit 2 with one line naming the key
    assert main(["run", "attention_hijacking.anchor", "--preset", "smoke", "--set",
                 f"model={tmp_path / 'nowhere'}", "--out", str(out)]) == 2
    assert main(["run", "attention_hijacking.anchor", "--preset", "smoke", "--set",
                 f"data={tmp_path / 'nowhere'}", "--out", str(out)]) == 2
