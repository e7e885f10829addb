"""One word in different contexts on a tiny random BERT: the word's vector (mean of its pieces) at every
hidden state equals transformers' own hidden states averaged in numpy; cosines and sense means; messages."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from vizcore.embeddings.contexts import (
    CONTEXT_SETS,
    MAX_CONTEXTS,
    Context,
    check_inputs,
    find_word,
    parse_contexts,
    state_label,
    word_in_contexts,
)
from vizcore.errors import VizError
from vizcore.model.loading import load_model

RIVER = Context("The riverbank was muddy after the rain.", "river")
MONEY = Context("Riverbank Savings opened a new branch.", "money")
OTHER = Context("We walked along the RIVERBANK at dusk.", "river")


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


@pytest.fixture(scope="module")
def hf(tiny_bert_dir):
    return AutoTokenizer.from_pretrained(tiny_bert_dir), AutoModel.from_pretrained(tiny_bert_dir).eval()


def reference(hf, sentence: str, pieces: list[str]) -> np.ndarray:
    """transformers alone: every hidden state of ``sentence``, the positions of ``pieces`` averaged: (L + 1, D)."""
    tokenizer, model = hf
    encoded = tokenizer(sentence, return_tensors="pt")
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    start = next(i for i in range(len(tokens)) if tokens[i: i + len(pieces)] == pieces)
    with torch.no_grad():
        states = model(**encoded, output_hidden_states=True).hidden_states
    return np.stack([h[0, start: start + len(pieces)].mean(0).numpy() for h in states])


def test_the_word_vector_is_the_mean_of_its_pieces_at_every_layer(tiny, hf):
    result = word_in_contexts(tiny, "riverbank", (RIVER, MONEY, OTHER))
    assert result.pieces == (("river", "##bank"),) * 3  # one word, two pieces, found in any case
    assert result.vectors.shape == (3, tiny.num_layers + 1, 32)
    for i, context in enumerate((RIVER, MONEY, OTHER)):
        np.testing.assert_allclose(result.vectors[i], reference(hf, context.sentence, ["river", "##bank"]),
                                   atol=1e-5)
    assert result.spans[2] == (20, 29) and OTHER.sentence[20:29] == "RIVERBANK"


def test_cosines_and_sense_means_agree_with_numpy(tiny):
    result = word_in_contexts(tiny, "riverbank", (RIVER, MONEY, OTHER))
    cos = result.cosines()
    assert cos.shape == (tiny.num_layers + 1, 3, 3)
    v = result.vectors.astype(np.float64)
    for layer in range(cos.shape[0]):
        a, b = v[0, layer], v[1, layer]
        assert cos[layer, 0, 1] == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b), abs=1e-9)
        np.testing.assert_allclose(np.diag(cos[layer]), 1.0, atol=1e-9)
    means = result.sense_means()
    np.testing.assert_allclose(means["same sense"], cos[:, 0, 2])  # the one river-river pair
    np.testing.assert_allclose(means["different senses"], (cos[:, 0, 1] + cos[:, 1, 2]) / 2)
    assert result.same_sense(0, 2) is True and result.same_sense(0, 1) is False


def test_without_senses_there_are_no_means(tiny):
    result = word_in_contexts(tiny, "riverbank", (Context(RIVER.sentence), Context(MONEY.sentence)))
    assert result.sense_means() == {} and result.same_sense(0, 1) is None


def test_a_sentence_without_the_word_is_named(tiny):
    contexts = (RIVER, Context("The bank was closed on Sunday."), OTHER)
    with pytest.raises(VizError, match=r"Sentence 2 does not contain the word 'riverbank': “The bank was closed"):
        word_in_contexts(tiny, "riverbank", contexts)
    with pytest.raises(VizError, match="Sentence 1 does not contain"):  # a word inside another is not the word
        check_inputs("river", (RIVER, OTHER))


def test_bad_inputs_are_messages():
    with pytest.raises(VizError, match="Type the word"):
        check_inputs("  ", (RIVER, OTHER))
    with pytest.raises(VizError, match="Give 2 to"):
        check_inputs("riverbank", (RIVER,))
    with pytest.raises(VizError, match="Give 2 to"):
        check_inputs("riverbank", (RIVER,) * (MAX_CONTEXTS + 1))
    with pytest.raises(VizError, match="sentence 2 is empty"):
        check_inputs("riverbank", (RIVER, Context("\u200b ")))


def test_a_word_beyond_the_model_length_is_a_message(tiny):
    late = Context(" ".join(["word"] * 80) + " riverbank.")  # the tiny model reads 64 tokens
    with pytest.raises(VizError, match="In sentence 2 the word falls after the first 64 tokens"):
        word_in_contexts(tiny, "riverbank", (RIVER, late))


def test_lines_with_and_without_senses():
    text = "The bank was closed. | money\n\n  We sat on the bank.|river \nA bank.\n"
    assert parse_contexts(text) == (Context("The bank was closed.", "money"), Context("We sat on the bank.", "river"),
                                    Context("A bank.", ""))


def test_find_word_takes_the_first_whole_word_in_any_case():
    assert find_word("bank", "Banks and the BANK of a bank") == (14, 18)
    assert find_word("bank", "embankment") is None


def test_every_built_in_set_has_its_word_in_every_sentence_and_two_senses():
    for word, example in CONTEXT_SETS.items():
        assert check_inputs(word, example.contexts) == word
        senses = [c.sense for c in example.contexts]
        assert len(set(senses)) == 2 and all(senses.count(s) == 3 for s in set(senses))


def test_state_labels():
    assert [state_label(i) for i in range(3)] == ["embeddings", "layer 1", "layer 2"]
