"""The tokens generation never draws (``vizcore.decoder.vocabulary``) on a tiny BERT-as-decoder with the real
BERT vocabulary and on a byte-level (GPT-2 style) vocabulary; the mask in the bars, greedy, sampling and beam
search, where it equals transformers' ``suppress_tokens``; whole words only."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from tokenizers import ByteLevelBPETokenizer
from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

from tests.support.sampling_reference import transformers_probabilities
from tests.support.tiny import BPE_TEXT
from tests.support.tiny_decoders import save_tiny_decoder
from vizcore.decoder.beam import beam_search
from vizcore.decoder.generation import generate
from vizcore.decoder.sampling import Settings, shape
from vizcore.decoder.steps import step_view
from vizcore.decoder.vocabulary import banned_tokens, byte_alphabet, continues_word
from vizcore.model.loading import load_model

PROMPT = "She opened the"


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return load_model(str(save_tiny_decoder("bert", tmp_path_factory.mktemp("bert"))), device="cpu", head="causal-lm")


@pytest.fixture(scope="module")
def byte_level(tmp_path_factory):
    """A GPT-2 style vocabulary (``<|endoftext|>`` as end, start and unknown token) and a model whose output layer
    has 3 rows more than the tokenizer has entries, as models padded to a round size do."""
    folder = tmp_path_factory.mktemp("byte-level")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(BPE_TEXT * 2, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"])
    bpe.save_model(str(folder))
    tokenizer = GPT2TokenizerFast.from_pretrained(str(folder))
    config = GPT2Config(vocab_size=len(tokenizer) + 3, n_embd=16, n_layer=1, n_head=2, n_positions=32)
    return SimpleNamespace(tokenizer=tokenizer, model=GPT2LMHeadModel(config).eval())


def ids_of(flags: torch.Tensor) -> set[int]:
    return set(torch.nonzero(flags).flatten().tolist())


def test_bert_never_draws_its_unused_and_special_entries_and_may_still_stop(bert):
    tokenizer, banned = bert.tokenizer, banned_tokens(bert)
    vocabulary = tokenizer.get_vocab()
    unused = {i for token, i in vocabulary.items() if token.startswith("[unused")}
    special = {tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.mask_token_id, tokenizer.unk_token_id}
    assert len(unused) > 900 and ids_of(banned.never) == unused | special  # nothing else: every word may come
    assert tokenizer.sep_token_id not in ids_of(banned.never)  # [SEP] ends the text: the decoder's stop
    pieces = {i for token, i in vocabulary.items() if token.startswith("##") and len(token) > 2}
    assert ids_of(banned.continuation) == pieces
    assert f"{len(unused):,} unused entries" in banned.describe() and "[MASK]" in banned.describe()


def test_a_byte_level_vocabulary_keeps_its_end_token_and_bans_rows_past_the_tokenizer(byte_level):
    tokenizer, banned = byte_level.tokenizer, banned_tokens(byte_level)
    size = len(tokenizer)
    assert ids_of(banned.never) == {size, size + 1, size + 2}  # <|endoftext|> is end, start and unknown: it stays
    assert tokenizer.eos_token_id not in ids_of(banned.continuation)
    for token_id in range(size):
        text = tokenizer.decode([token_id])
        if not text.isprintable() or "\ufffd" in text:  # a byte of a longer character, a control character
            continue
        glued = text[0].isalnum()  # no leading space: it sticks to the word before
        assert bool(banned.continuation[token_id]) == glued, (token_id, text)
    assert any(banned.continuation) and not all(banned.continuation[:size])


def test_continuation_pieces_by_scheme():
    assert continues_word("##ing", "pieces") and not continues_word("##", "pieces")
    assert not continues_word("the", "pieces") and not continues_word(".", "pieces")
    assert continues_word("ing", "bytes") and not continues_word("Ġthe", "bytes") and not continues_word(",", "bytes")
    assert not continues_word("Ċ", "bytes") and not continues_word("ĊĊ", "bytes")  # newlines, not letters
    assert not continues_word("'s", "bytes") and not continues_word("<|endoftext|>", "bytes")
    assert continues_word("Ã©", "bytes") and not continues_word("ĠÃ©", "bytes")  # é, glued or after a space
    assert continues_word("ing", "marks") and not continues_word("▁the", "marks") and not continues_word(None, "marks")


def test_the_byte_alphabet_is_gpt2s():
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    assert byte_alphabet() == {char: byte for byte, char in bytes_to_unicode().items()}


@pytest.mark.parametrize("settings", [Settings(1.0), Settings(2.0), Settings(0.7, top_k=40, top_p=0.9),
                                      Settings(1.3, top_p=0.5)])
def test_the_mask_is_transformers_suppress_tokens_before_the_warpers(settings):
    torch.manual_seed(0)
    logits = torch.randn(500) * 3
    banned = torch.zeros(500, dtype=torch.bool)
    banned[[0, 7, 123, int(logits.argmax())]] = True  # the most probable token among them
    shaped = shape(logits, settings, banned)
    np.testing.assert_allclose(shaped.shaped, transformers_probabilities(logits, settings, banned), atol=1e-12)
    assert not shaped.kept[banned.numpy()].any() and (shaped.plain[banned.numpy()] == 0).all()
    np.testing.assert_allclose(shaped.plain, logits.double().masked_fill(banned, -torch.inf).softmax(-1), atol=1e-12)
    assert shape(logits, Settings(0.0), banned).shaped.argmax() == shaped.plain.argmax() != int(logits.argmax())


def test_greedy_equals_transformers_generate_with_the_banned_tokens_suppressed(bert):
    banned = sorted(ids_of(banned_tokens(bert).never))
    ours = [s.token_id for s in generate(bert, PROMPT, 8, Settings(0.0)).steps]
    ids = bert.tokenizer(PROMPT, return_tensors="pt")["input_ids"][:, :-1]
    with torch.no_grad():
        theirs = bert.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=8, do_sample=False,
                                     suppress_tokens=banned, eos_token_id=bert.tokenizer.sep_token_id,
                                     pad_token_id=bert.tokenizer.pad_token_id)
    assert ours == theirs[0, ids.shape[1]:].tolist()


def test_the_bars_the_lens_and_beam_search_leave_the_banned_tokens_out(bert):
    rules = banned_tokens(bert)
    never = rules.never.numpy()
    view = step_view(bert, PROMPT, settings=Settings(2.0))
    assert (view.next.plain[never] == 0).all() and (view.next.shaped[never] == 0).all()
    assert abs(view.next.plain.sum() - 1) < 1e-9
    assert not never[view.lens.token_ids].any()  # every layer's top tokens too
    search = beam_search(bert, PROMPT, width=3, max_new_tokens=6)
    drawn = [t for step in search.steps for beam in step.beams + step.finished for t in beam.token_ids]
    assert drawn and not never[drawn].any()


def test_whole_words_only_draws_no_word_piece_in_any_mode(bert):
    pieces = banned_tokens(bert).continuation.numpy()
    hot = Settings(2.0, whole_words=True)
    drawn = [s.token_id for seed in range(3) for s in generate(bert, PROMPT, 10, hot, seed=seed).steps]
    drawn += [s.token_id for s in generate(bert, PROMPT, 10, Settings(0.0, whole_words=True)).steps]
    search = beam_search(bert, PROMPT, width=3, max_new_tokens=6, whole_words=True)
    drawn += [t for step in search.steps for beam in step.beams for t in beam.token_ids]
    assert not pieces[drawn].any()
    view = step_view(bert, PROMPT, settings=hot)
    assert (view.next.shaped[pieces] == 0).all() and (view.next.plain[pieces] == 0).all()
    loose = step_view(bert, PROMPT, settings=Settings(2.0))
    assert loose.next.shaped[pieces].sum() > 0  # without the option the same step could draw a piece
