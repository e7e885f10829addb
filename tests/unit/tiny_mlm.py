"""Tiny random masked-LMs saved to local folders (no download): BERT, DistilBERT, RoBERTa.

Weights are drawn with a large initializer range so the predictions are well separated (a default
init gives a near-uniform distribution where a top-k order would say little). BERT and DistilBERT use
the embedded model's WordPiece tokenizer; RoBERTa gets a byte-level BPE trained here on a few
sentences, with ``<mask>`` stripping the space before it as roberta-base's does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tokenizers import AddedToken, ByteLevelBPETokenizer
from transformers import (
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    DistilBertConfig,
    DistilBertForMaskedLM,
    ElectraConfig,
    ElectraForMaskedLM,
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaTokenizerFast,
)

from vizcore.model.loading import BUILTIN_MODELS, DEFAULT_MODEL

SIZE = {"hidden": 32, "layers": 3, "heads": 4, "ffn": 64, "positions": 40, "init": 0.4}
BPE_TEXT = [
    "The capital of France is Paris. The cat sat on the mat.",
    "She drank a cup of coffee every morning. Birds can fly in the sky.",
    "The sun rises in the east. I wrote the letter with a pen.",
]


def _roberta_tokenizer(folder: Path) -> RobertaTokenizerFast:
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(BPE_TEXT * 2, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    return RobertaTokenizerFast.from_pretrained(
        str(folder), mask_token=AddedToken("<mask>", lstrip=True, rstrip=False))


def build_tiny_mlm(kind: str, folder: Path) -> Path:
    """Save a tiny ``kind`` ("bert" | "distilbert" | "roberta" | "electra") masked-LM with its tokenizer to ``folder``."""
    torch.manual_seed(0)
    s = SIZE
    if kind == "roberta":
        tokenizer = _roberta_tokenizer(folder)
        config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                               num_attention_heads=s["heads"], intermediate_size=s["ffn"],
                               max_position_embeddings=s["positions"] + 2, pad_token_id=tokenizer.pad_token_id,
                               initializer_range=s["init"])
        model = RobertaForMaskedLM(config)
    else:
        tokenizer = AutoTokenizer.from_pretrained(str(BUILTIN_MODELS[DEFAULT_MODEL].source()))
        if kind == "bert":
            config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=s["hidden"],
                                num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                                intermediate_size=s["ffn"], max_position_embeddings=s["positions"],
                                initializer_range=s["init"])
            model = BertForMaskedLM(config)
        elif kind == "distilbert":
            config = DistilBertConfig(vocab_size=tokenizer.vocab_size, dim=s["hidden"], n_layers=s["layers"],
                                      n_heads=s["heads"], hidden_dim=s["ffn"],
                                      max_position_embeddings=s["positions"], initializer_range=s["init"])
            model = DistilBertForMaskedLM(config)
        elif kind == "electra":  # a head this app does not know by name: the full-model path
            config = ElectraConfig(vocab_size=tokenizer.vocab_size, embedding_size=s["hidden"],
                                   hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                                   num_attention_heads=s["heads"], intermediate_size=s["ffn"],
                                   max_position_embeddings=s["positions"], initializer_range=s["init"])
            model = ElectraForMaskedLM(config)
        else:
            raise ValueError(kind)
    tokenizer.model_max_length = s["positions"]
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory):
    """``tiny_mlm_dir("bert" | "distilbert" | "roberta")`` -> a saved folder, built once per test run."""
    made: dict[str, Path] = {}

    def make(kind: str) -> Path:
        if kind not in made:
            made[kind] = build_tiny_mlm(kind, tmp_path_factory.mktemp(f"tiny-mlm-{kind}"))
        return made[kind]

    return make


def make_mlm_weights(path: Path, seed: int = 7) -> Path:
    """A weights file in the shipped format (fp16 changed tensors) for the built-in masked-LM.

    The untrained MLM with a few tensors (head bias and dense, one encoder bias, the [MASK] row) set
    to random values, so that applying the file visibly changes the model. Never shipped: tests only.
    """
    from safetensors.torch import save_file

    from tools.mlm_training import changed_state, load_tokenizer, new_mlm_model

    tokenizer = load_tokenizer()
    model = new_mlm_model("eager")
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for tensor in (model.cls.predictions.bias, model.cls.predictions.transform.dense.weight,
                       model.bert.encoder.layer[5].output.dense.bias,
                       model.bert.embeddings.word_embeddings.weight[tokenizer.mask_token_id]):
            tensor.copy_(torch.randn(tensor.shape, generator=generator))
    state = {k: v.half().contiguous() for k, v in changed_state(model, tokenizer.mask_token_id).items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path))
    return path
