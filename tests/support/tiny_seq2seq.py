"""Tiny random encoder-decoders for the seq2seq tests: T5 and BART, saved with a tokenizer built here.

No download: T5 gets a SentencePiece-style Unigram vocabulary written out below (words with the '▁'
word marker, then letters, so any lowercase text tokenises), BART a byte-level BPE trained on a few
sentences, as roberta-base's tokenizer is. Drawn with a large initializer range so that greedy
decoding writes varied tokens (a default init repeats one token, where a comparison would say little).

BART is saved with the generation rules real checkpoints carry (bart-large's forced first token
``<s>``, Marian's banned ``<pad>``; every BART forces ``</s>`` at the length limit), so the tests
meet them; T5 has none. BART's encoder and decoder have different depths, as some checkpoints do.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import ByteLevelBPETokenizer
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BartTokenizer,
    T5Config,
    T5ForConditionalGeneration,
    T5Tokenizer,
)

from tests.support.tiny import BPE_TEXT

SIZE = {"hidden": 32, "heads": 4, "ffn": 64, "positions": 64}
WORDS = ("the cat sat on mat a dog ran to park house is big small red blue one two three of and "
         "translate english german").split()


def t5_tokenizer() -> T5Tokenizer:
    """A Unigram vocabulary: the three specials at T5's ids (pad 0, end 1, unknown 2), whole words, letters."""
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + [(f"▁{w}", -1.0) for w in WORDS]
    vocab += [("▁", -3.0)] + [(c, -5.0) for c in "abcdefghijklmnopqrstuvwxyz.,:"]
    return T5Tokenizer(vocab=vocab, extra_ids=0)


def bart_tokenizer(folder: Path) -> BartTokenizer:
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(BPE_TEXT * 2, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    return BartTokenizer.from_pretrained(str(folder))


def save_tiny_seq2seq(kind: str, folder: Path) -> Path:
    """Save a seeded tiny ``kind`` ("t5" | "bart") encoder-decoder with its tokenizer to ``folder``."""
    torch.manual_seed(0)
    if kind == "t5":
        tokenizer = t5_tokenizer()
        config = T5Config(vocab_size=len(tokenizer), d_model=SIZE["hidden"], d_kv=SIZE["hidden"] // SIZE["heads"],
                          d_ff=SIZE["ffn"], num_layers=2, num_heads=SIZE["heads"], decoder_start_token_id=0,
                          eos_token_id=1, pad_token_id=0, initializer_factor=4.0,
                          tie_word_embeddings=False)
        model = T5ForConditionalGeneration(config)
    elif kind == "bart":
        tokenizer = bart_tokenizer(folder)
        config = BartConfig(vocab_size=len(tokenizer), d_model=SIZE["hidden"], encoder_layers=2, decoder_layers=3,
                            encoder_attention_heads=SIZE["heads"], decoder_attention_heads=SIZE["heads"],
                            encoder_ffn_dim=SIZE["ffn"], decoder_ffn_dim=SIZE["ffn"],
                            max_position_embeddings=SIZE["positions"], pad_token_id=1, bos_token_id=0,
                            eos_token_id=2, decoder_start_token_id=2, init_std=0.1,
                            tie_word_embeddings=False)
        model = BartForConditionalGeneration(config)
        model.generation_config.forced_bos_token_id = tokenizer.bos_token_id
        model.generation_config.bad_words_ids = [[tokenizer.pad_token_id]]
    else:
        raise ValueError(kind)
    tokenizer.model_max_length = SIZE["positions"]
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
