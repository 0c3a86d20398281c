"""The mechanism analyses on Hugging Face causal LMs (GPT-2, Llama, Qwen2) saved here, and the `paper` preset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from icml2026.core import registry
from icml2026.core.errors import BadInput
from icml2026.papers.vlm_binding import experiments as ex
from icml2026.papers.vlm_binding import mechanism as mech
from icml2026.papers.vlm_binding.hf import WORDS, HFBindingModel, find_blocks
from icml2026.papers.vlm_binding.train import sample_batch

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")


def _tokenizer():  # type: ignore[no-untyped-def]
    """A tiny byte-level BPE tokenizer trained here on the task's words (every word becomes one token)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    words = sorted(set(WORDS.colours + WORDS.shapes + WORDS.items + WORDS.noise + (".", "?", "x")))
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=["<pad>", "<s>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([" ".join(words)] * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="<s>")


def _save(kind: str, folder: Path) -> Path:
    import transformers as tf

    tok = _tokenizer()
    v = len(tok)
    torch.manual_seed(0)
    if kind == "gpt2":
        model = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=v, n_positions=256, n_embd=32, n_layer=2, n_head=4,
                                                 bos_token_id=1, eos_token_id=1))
    else:
        cls, cfg_cls = {"llama": (tf.LlamaForCausalLM, tf.LlamaConfig),
                        "qwen2": (tf.Qwen2ForCausalLM, tf.Qwen2Config)}[kind]
        model = cls(cfg_cls(vocab_size=v, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                            bos_token_id=1, eos_token_id=1, pad_token_id=0))
    path = folder / kind
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hf")
    return {k: _save(k, folder) for k in ("gpt2", "llama", "qwen2")}


@pytest.mark.parametrize("kind", ["gpt2", "llama", "qwen2"])
def test_analyses_run_on_a_tiny_checkpoint(kind: str, checkpoints: dict[str, Path]) -> None:
    m = HFBindingModel.load(checkpoints[kind], n_colours=8, n_shapes=8, n_items=10)
    assert m.n_layer == 2 and len(find_blocks(m.lm)) == 2
    rng = np.random.default_rng(0)
    samples = sample_batch(6, (3, 5), m.vocab, rng)
    b = m.make_batch(samples, "text", rng)
    assert m.item_logits(b).shape == (6, 10)
    # every context word is one token of this tokenizer: 2N context tokens per prompt
    assert (b.is_context.sum(1) == 2 * b.n_objects).all()
    # noise tokens only shift positions: the same logits with the noise removed and the positions kept
    gap, moved = ex._noise_gap(m, samples, rng)
    assert gap < 1e-5 and moved > 1e-6
    fr = mech.interchange_fractions(m, 12, (3, 5), rng)
    assert len(fr.fractions) == 2 and all(abs(sum(f.values()) - 1) < 1e-9 for f in fr.fractions)
    assert len(mech.knockout_profile(m, samples, rng)) == 2
    pr = mech.probe_layers(m, sample_batch(40, (3, 5), m.vocab, rng), rng)
    assert len(pr.slot) == len(pr.shape) == 2


def test_knockout_of_the_only_context_changes_the_prediction(checkpoints: dict[str, Path]) -> None:
    m = HFBindingModel.load(checkpoints["llama"], n_colours=8, n_shapes=8, n_items=10)
    rng = np.random.default_rng(1)
    b = m.make_batch(sample_batch(8, (4, 4), m.vocab, rng), "text", rng)
    with torch.no_grad():
        clean = m.item_logits(b)
        with mech._knockout(m, 0, b.is_context):
            cut = m.item_logits(b)
    assert float((clean - cut).abs().max()) > 1e-6  # the hook reached the attention mask


def test_words_beyond_the_lists_are_refused(checkpoints: dict[str, Path]) -> None:
    with pytest.raises(BadInput, match="n_items = 30"):
        HFBindingModel.load(checkpoints["gpt2"], n_items=30)
    with pytest.raises(ValueError, match="model = "):
        ex.MechanismConfig(model="/no/such/folder")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gpt2", "llama", "qwen2"])
def test_mechanism_cli_on_a_tiny_checkpoint(kind: str, checkpoints: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-m", "icml2026", "run", "vlm_binding.mechanism", "--preset", "smoke",
         "--set", f"model={checkpoints[kind]}", "--out", str(out), "--threads", "1"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 4, proc.stderr[-2000:]  # an untrained checkpoint: the ID precondition fails
    (res,) = out.glob("vlm_binding.mechanism/*/results.json")
    r = json.loads(res.read_text())
    assert r["metrics"]["n_layer"] == 2
    assert r["metrics"]["noise_vs_shifted_max_abs_logit_diff"] < 1e-5
    assert {c["name"]: c["role"] for c in r["checks"]}["sym_pos_ratio"] == "claim"


def test_paper_preset_validates_at_the_papers_scale() -> None:
    cfg = registry.get_experiment("vlm_binding.regimes").config("paper")
    assert (cfg.n_layer, cfg.n_colours, cfg.n_shapes, cfg.n_items) == (12, 216, 216, 32)
    assert (cfg.n_id_max, cfg.n_ood_max, cfg.batch_size) == (8, 16, 128)


@pytest.mark.slow
def test_paper_preset_starts_on_the_cpu_for_one_step() -> None:
    """The paper's model (12 layers, 768 wide, 216 x 216 x 32 vocabulary) takes one text and one image step here
    (batch 2: a full batch of 128 at this size is a GPU's work; the whole run is a GPU job, see the card)."""
    from icml2026.papers.vlm_binding import BindingLM, CellEncoder, Trainer, Vocab, pretrain_encoder

    cfg = registry.get_experiment("vlm_binding.regimes").config("paper")
    vocab = Vocab(cfg.n_colours, cfg.n_shapes, cfg.n_items, 16)
    rng = np.random.default_rng(0)
    enc = CellEncoder(32, 16)
    pretrain_encoder(enc, vocab, 1, rng, batch_size=32, n_eval=64)
    model = BindingLM(vocab, enc, torch.Generator().manual_seed(0), n_layer=cfg.n_layer, d_model=cfg.d_model,
                      n_head=cfg.n_head)
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == 85_550_592  # the card's count
    tr = Trainer(model, lr=cfg.lr)
    tr.run_stage(1, {"text": 1.0}, (2, cfg.n_id_max), 2, rng)
    tr.run_stage(1, {"image": 1.0}, (cfg.n_ood_max, cfg.n_ood_max), 2, rng)
    assert len(tr.losses) == 2 and all(np.isfinite(tr.losses))
