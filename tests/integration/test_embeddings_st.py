"""With the default settings (mean pooling, last layer) the embedded model's sentence vectors and cosines are
sentence-transformers' own for the same folder, to 1e-5, a text longer than its 256 tokens included."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from vizcore.embeddings.vectors import cosine_matrix, sentence_vectors, similarity, st_max_length

LONG = " ".join(["The river bank was muddy after the storm, so the children walked along the road to the old "
                 "bank in town, where their grandmother kept her savings and told stories about the floods."] * 12)
SENTENCES = ["The cat sat on the mat.", "A kitten was sleeping on the rug.", "Stock markets fell sharply today.",
             "I deposited the cheque at the bank.", "We had a picnic on the river bank.", "Hi", LONG]


@pytest.fixture(scope="module")
def st_model(minilm) -> SentenceTransformer:
    return SentenceTransformer(str(minilm.model.name_or_path), device="cpu")


def test_the_long_text_is_longer_than_what_sentence_transformers_reads(minilm, st_model):
    folder = Path(minilm.model.name_or_path)
    configured = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
    assert st_max_length(minilm) == configured == st_model.max_seq_length
    assert len(minilm.tokenizer(LONG)["input_ids"]) > configured


def test_vectors_and_cosines_equal_sentence_transformers(minilm, st_model):
    expected = st_model.encode(SENTENCES, batch_size=4, convert_to_numpy=True)  # normalised by its last module
    got = sentence_vectors(minilm, SENTENCES, normalize=True, batch_size=3)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    np.testing.assert_allclose(cosine_matrix(sentence_vectors(minilm, SENTENCES)), cosine_matrix(expected), atol=1e-5)
    for a, b in ((0, 1), (3, 4), (0, 6)):
        assert similarity(minilm, SENTENCES[a], SENTENCES[b]) == pytest.approx(float(expected[a] @ expected[b]),
                                                                              abs=1e-5)


def test_reading_the_whole_long_text_would_differ(minilm, st_model):
    """The 1e-5 agreement on the long text depends on truncating where sentence-transformers does."""
    expected = st_model.encode([LONG], convert_to_numpy=True)[0]
    whole = sentence_vectors(minilm, [LONG], normalize=True, max_length=512)[0]
    assert np.abs(whole - expected).max() > 1e-3
