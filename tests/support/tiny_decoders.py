"""Tiny random causal LMs for the decoder tests: GPT-2, and BERT as a decoder (``BertLMHeadModel``,
``is_decoder=True``, the built-in causal MiniLM's shape). Drawn with a large initializer range so the
next-token distributions are peaked: a default init gives near-uniform ones, where beam rankings and
top-k orders would hang on rounding."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import BertConfig, BertLMHeadModel, GPT2Config, GPT2LMHeadModel

from tests.support.tiny import TINY, wordpiece_tokenizer

INIT = 0.5


def save_tiny_decoder(kind: str, folder: Path) -> Path:
    """Save a seeded tiny ``kind`` ("gpt2" | "bert") causal LM with the WordPiece tokenizer to ``folder``."""
    torch.manual_seed(0)
    tokenizer = wordpiece_tokenizer()
    size = {"num_hidden_layers": TINY["layers"], "num_attention_heads": TINY["heads"],
            "hidden_size": TINY["hidden"], "initializer_range": INIT}
    if kind == "gpt2":
        config = GPT2Config(vocab_size=tokenizer.vocab_size, n_positions=TINY["positions"], n_inner=TINY["ffn"],
                            bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id, **size)
        model = GPT2LMHeadModel(config)
    elif kind == "bert":
        config = BertConfig(vocab_size=tokenizer.vocab_size, max_position_embeddings=TINY["positions"],
                            intermediate_size=TINY["ffn"], is_decoder=True, architectures=["BertLMHeadModel"],
                            **size)
        model = BertLMHeadModel(config)
    else:
        raise ValueError(kind)
    tokenizer.model_max_length = TINY["positions"]
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
