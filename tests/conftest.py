"""Shared fixtures: tiny random-config models saved to disk (no download), built once per run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import (
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    DistilBertConfig,
    DistilBertForMaskedLM,
    GPT2Config,
    GPT2LMHeadModel,
)

from vizcore.model.loading import DEFAULT_MODEL, BUILTIN_MODELS

@pytest.fixture(scope="session", autouse=True)
def isolated_startup_cache(tmp_path_factory):
    """Tests (and the servers they start) use their own startup cache, never the user's."""
    from vizcore.model.startup_cache import CACHE_ENV

    patch = pytest.MonkeyPatch()
    patch.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("startup-cache")))
    yield
    patch.undo()


TINY = {"hidden": 32, "layers": 2, "heads": 4, "ffn": 64, "positions": 64}


def _tokenizer():
    # The embedded model's WordPiece tokenizer: offline, and the vocabulary real users see.
    return AutoTokenizer.from_pretrained(str(BUILTIN_MODELS[DEFAULT_MODEL].source()))


def _build(kind: str):
    torch.manual_seed(0)
    vocab = _tokenizer().vocab_size
    if kind == "bert":
        config = BertConfig(vocab_size=vocab, hidden_size=TINY["hidden"], num_hidden_layers=TINY["layers"],
                            num_attention_heads=TINY["heads"], intermediate_size=TINY["ffn"],
                            max_position_embeddings=TINY["positions"])
        return BertForMaskedLM(config)
    if kind == "distilbert":
        config = DistilBertConfig(vocab_size=vocab, dim=TINY["hidden"], n_layers=TINY["layers"],
                                  n_heads=TINY["heads"], hidden_dim=TINY["ffn"],
                                  max_position_embeddings=TINY["positions"])
        return DistilBertForMaskedLM(config)
    if kind == "gpt2":
        config = GPT2Config(vocab_size=vocab, n_embd=TINY["hidden"], n_layer=TINY["layers"],
                            n_head=TINY["heads"], n_positions=TINY["positions"])
        return GPT2LMHeadModel(config)
    raise ValueError(kind)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """``tiny_model_dir("bert" | "distilbert" | "gpt2")`` -> a saved Hugging Face folder (with LM head)."""
    made: dict[str, Path] = {}

    def make(kind: str = "bert") -> Path:
        if kind not in made:
            folder = tmp_path_factory.mktemp(f"tiny-{kind}")
            _build(kind).eval().save_pretrained(folder)
            tokenizer = _tokenizer()
            tokenizer.model_max_length = TINY["positions"]
            tokenizer.save_pretrained(folder)
            made[kind] = folder
        return made[kind]

    return make


@pytest.fixture(scope="session")
def tiny_bert_dir(tiny_model_dir) -> Path:
    return tiny_model_dir("bert")
