"""Tiny RoBERTa-class and Llama-class checkpoints with a word-level tokenizer over the synthetic vocabulary,
saved with ``save_pretrained`` (what a user's checkpoint folder holds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def word_tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    from icml2026.papers.fedtreelora.data import token_words

    vocab = {w: i for i, w in enumerate(token_words())}
    vocab["[UNK]"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = TemplateProcessing(single="[CLS] $A", special_tokens=[("[CLS]", 1)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]"
    )


def tiny_model(kind: str) -> Any:
    """A randomly initialised tiny ``RobertaModel`` or ``LlamaModel`` (2 layers, width 16; Llama with
    grouped-query attention, so W_v is narrower than W_q)."""
    import torch

    torch.manual_seed(0)
    if kind == "roberta":
        from transformers import RobertaConfig, RobertaModel

        cfg = RobertaConfig(
            vocab_size=97,
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=40,
            pad_token_id=0,
            type_vocab_size=1,
        )
        return RobertaModel(cfg, add_pooling_layer=False)
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(
        vocab_size=97,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        pad_token_id=0,
    )
    return LlamaModel(cfg)


def save_tiny(kind: str, folder: Path) -> Path:
    tiny_model(kind).save_pretrained(folder)
    word_tokenizer().save_pretrained(folder)
    return folder
