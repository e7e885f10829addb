"""The one tiny-model factory: random-config models saved to local folders (no download), for tests and benchmarks.

* ``save_tiny("bert" | "distilbert" | "gpt2" | "mpnet", folder)``: 2 layers, 4 heads, hidden 32, with an LM
  head, default initialisation (MPNet's relative position bias drawn larger, so that it shows); the encoder
  models of most unit tests.
* ``build_tiny_mlm("bert" | "distilbert" | "roberta" | "electra", folder)``: 3-layer masked-LMs drawn with
  a large initializer range so the predictions are well separated (a default init gives a near-uniform
  distribution where a top-k order would say little).

BERT, DistilBERT, GPT-2 and ELECTRA use the embedded model's WordPiece tokenizer (offline, and the
vocabulary real users see; only the tokenizer is read, never the embedded weights). RoBERTa gets a
byte-level BPE trained here on a few sentences, with ``<mask>`` stripping the space before it as
roberta-base's does.
"""

from __future__ import annotations

from pathlib import Path

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
    GPT2Config,
    GPT2LMHeadModel,
    MPNetConfig,
    MPNetForMaskedLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaTokenizerFast,
)

from vizcore.model.loading import BUILTIN_MODELS, DEFAULT_MODEL

TINY = {"hidden": 32, "layers": 2, "heads": 4, "ffn": 64, "positions": 64}
SIZE = {"hidden": 32, "layers": 3, "heads": 4, "ffn": 64, "positions": 40, "init": 0.4}
BPE_TEXT = [
    "The capital of France is Paris. The cat sat on the mat.",
    "She drank a cup of coffee every morning. Birds can fly in the sky.",
    "The sun rises in the east. I wrote the letter with a pen.",
]


def wordpiece_tokenizer() -> PreTrainedTokenizerBase:
    """The embedded model's WordPiece tokenizer (its vocabulary only, not its weights)."""
    return AutoTokenizer.from_pretrained(str(BUILTIN_MODELS[DEFAULT_MODEL].source()))


def build_tiny(kind: str) -> PreTrainedModel:
    """A seeded random ``kind`` ("bert" | "distilbert" | "gpt2" | "mpnet") model of size ``TINY``, with its LM head."""
    torch.manual_seed(0)
    vocab = wordpiece_tokenizer().vocab_size
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
    if kind == "mpnet":  # MPNet's positions start after its padding row (1): two more rows for the same length
        config = MPNetConfig(vocab_size=vocab, hidden_size=TINY["hidden"], num_hidden_layers=TINY["layers"],
                             num_attention_heads=TINY["heads"], intermediate_size=TINY["ffn"],
                             max_position_embeddings=TINY["positions"] + 2)
        model = MPNetForMaskedLM(config)
        with torch.no_grad():  # the default init (std 0.02) would hide the bias in float rounding
            model.mpnet.encoder.relative_attention_bias.weight.normal_(0.0, 1.0)
        return model
    raise ValueError(kind)


def save_tiny(kind: str, folder: Path) -> Path:
    """Save ``build_tiny(kind)`` with its tokenizer to ``folder`` (a Hugging Face model folder)."""
    build_tiny(kind).eval().save_pretrained(folder)
    tokenizer = wordpiece_tokenizer()
    tokenizer.model_max_length = TINY["positions"]
    tokenizer.save_pretrained(folder)
    return folder


def _roberta_tokenizer(folder: Path) -> RobertaTokenizerFast:
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(BPE_TEXT * 2, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    return RobertaTokenizerFast.from_pretrained(
        str(folder), mask_token=AddedToken("<mask>", lstrip=True, rstrip=False))


def build_tiny_mlm(kind: str, folder: Path) -> Path:
    """Save a tiny ``kind`` ("bert" | "distilbert" | "roberta" | "electra") masked-LM and tokenizer to ``folder``."""
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
        tokenizer = wordpiece_tokenizer()
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
