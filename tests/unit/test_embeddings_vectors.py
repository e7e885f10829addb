"""Sentence vectors on tiny random models, checked against each text run alone through transformers and
pooled in numpy: pooling, layers, last4, order, batching, truncation, normalisation, errors."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModel, BertConfig, BertModel

from tests.support.tiny import wordpiece_tokenizer
from vizcore.embeddings.vectors import (
    LAST4,
    POOLINGS,
    cosine_matrix,
    hidden_indices,
    parse_layer,
    sdpa_twin,
    sentence_vectors,
    similarity,
    st_max_length,
)
from vizcore.errors import VizError
from vizcore.model.loading import load_model
from vizcore.model.run import hooks

TEXTS = ["The cat sat on the mat.", "Hi", "A much longer sentence about rivers, banks and money in a town.",
         "Birds fly.", "Stock markets fell sharply today after the news about interest rates."]


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


@pytest.fixture(scope="module")
def five_layers(tmp_path_factory):
    """A 5-layer tiny BERT, so that last4 and single layers differ from "last"."""
    torch.manual_seed(1)
    folder = tmp_path_factory.mktemp("tiny-bert-5")
    tokenizer = wordpiece_tokenizer()
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=5, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    BertModel(config).eval().save_pretrained(folder)
    tokenizer.model_max_length = 64
    tokenizer.save_pretrained(folder)
    return load_model(str(folder), device="cpu")


def reference(folder, text: str, pooling: str, hidden_index: int, max_length: int = 64) -> np.ndarray:
    """One text alone (no padding), plain transformers, pooled in numpy."""
    tokenizer = wordpiece_tokenizer()
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    ids = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
    with torch.no_grad():
        states = model(**ids, output_hidden_states=True).hidden_states[hidden_index][0].numpy()  # (T, D)
    return {"mean": states.mean(0), "cls": states[0], "max": states.max(0)}[pooling]


@pytest.mark.parametrize("pooling", POOLINGS)
def test_each_pooling_equals_each_text_run_alone(tiny, tiny_bert_dir, pooling):
    vectors = sentence_vectors(tiny, TEXTS, pooling=pooling, batch_size=3)
    assert vectors.shape == (len(TEXTS), 32) and vectors.dtype == np.float32
    for text, vector in zip(TEXTS, vectors):  # in input order although batches are sorted by length
        np.testing.assert_allclose(vector, reference(tiny_bert_dir, text, pooling, -1), atol=1e-5)


def test_single_layers_and_last4(five_layers):
    folder = five_layers.model.name_or_path
    for layer in range(5):
        vectors = sentence_vectors(five_layers, TEXTS[:3], layer=layer)
        np.testing.assert_allclose(vectors[2], reference(folder, TEXTS[2], "mean", layer + 1), atol=1e-5)
    last4 = sentence_vectors(five_layers, TEXTS[:3], pooling="cls", layer=LAST4)
    assert last4.shape == (3, 4 * 16)
    expected = np.concatenate([reference(folder, TEXTS[1], "cls", i) for i in (2, 3, 4, 5)])
    np.testing.assert_allclose(last4[1], expected, atol=1e-5)
    np.testing.assert_allclose(sentence_vectors(five_layers, TEXTS[:3], layer=4),
                               sentence_vectors(five_layers, TEXTS[:3], layer="last"), atol=1e-6)


def test_batch_size_does_not_change_the_vectors_and_progress_counts_texts(tiny):
    seen = []
    one = sentence_vectors(tiny, TEXTS, batch_size=1)
    many = sentence_vectors(tiny, TEXTS, batch_size=2, on_progress=lambda done, total: seen.append((done, total)))
    np.testing.assert_allclose(one, many, atol=1e-5)
    assert seen == [(2, 5), (4, 5), (5, 5)]


def test_truncation_follows_sentence_bert_config(tiny, tiny_bert_dir, tmp_path):
    assert st_max_length(tiny) is None  # no sentence_bert_config.json: the model's maximum
    folder = tmp_path / "with-st-config"
    shutil.copytree(tiny_bert_dir, folder)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 6}))
    loaded = load_model(str(folder), device="cpu")
    assert st_max_length(loaded) == 6
    got = sentence_vectors(loaded, [TEXTS[2]])[0]
    np.testing.assert_allclose(got, reference(folder, TEXTS[2], "mean", -1, max_length=6), atol=1e-5)
    assert not np.allclose(got, reference(folder, TEXTS[2], "mean", -1), atol=1e-3)
    longer = sentence_vectors(loaded, [TEXTS[2]], max_length=10)[0]
    np.testing.assert_allclose(longer, reference(folder, TEXTS[2], "mean", -1, max_length=10), atol=1e-5)


def test_normalised_vectors_have_length_one_and_the_same_cosines(tiny):
    raw, unit = sentence_vectors(tiny, TEXTS), sentence_vectors(tiny, TEXTS, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(cosine_matrix(raw), cosine_matrix(unit), atol=1e-6)


def test_cosine_matrix_and_similarity_against_a_plain_formula(tiny):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 7)).astype(np.float32)
    x[3] = 0.0
    got = cosine_matrix(x)
    for i in range(3):
        for j in range(3):
            assert got[i, j] == pytest.approx(float(x[i] @ x[j] / np.linalg.norm(x[i]) / np.linalg.norm(x[j])))
    assert got[3].tolist() == [0.0] * 4
    a, b = sentence_vectors(tiny, TEXTS[:2])
    assert similarity(tiny, *TEXTS[:2]) == pytest.approx(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)),
                                                         abs=1e-6)


@pytest.mark.parametrize("kind", ["distilbert", "gpt2"])
def test_models_without_segment_ids_or_a_pad_token(tiny_model_dir, kind):
    loaded = load_model(str(tiny_model_dir(kind)), device="cpu")
    vectors = sentence_vectors(loaded, TEXTS, batch_size=2)
    alone = np.stack([sentence_vectors(loaded, [t], fast_attention=False)[0] for t in TEXTS])
    np.testing.assert_allclose(vectors, alone, atol=1e-5)


def hook_count(model: torch.nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_the_sdpa_twin_shares_the_weights_and_leaves_the_shared_model_alone(tiny_bert_dir):
    loaded = load_model(str(tiny_bert_dir), device="cpu")  # a model of its own: its twin is made here
    before = (loaded.model.config._attn_implementation, hook_count(loaded.model))
    zero_layer_1 = (loaded.model.encoder.layer[0], "post", lambda module, inputs, output: (output[0] * 0,))
    with hooks(loaded.model, [zero_layer_1]):  # another session's ablation, in place while the twin is made
        fast = sentence_vectors(loaded, TEXTS, layer=1)
    twin = sdpa_twin(loaded).model
    assert twin is not loaded.model and twin.config._attn_implementation == "sdpa"
    assert all(a is b for a, b in zip(loaded.model.parameters(), twin.parameters()))  # not copied
    assert (loaded.model.config._attn_implementation, hook_count(loaded.model)) == before
    assert hook_count(twin) == before[1] and sdpa_twin(loaded).model is twin  # made once
    np.testing.assert_allclose(fast, sentence_vectors(loaded, TEXTS, layer=1, fast_attention=False), atol=1e-5)


def test_parse_layer_is_one_based_with_fix_it_messages():
    assert parse_layer("1", 6) == 0 and parse_layer("6", 6) == 5
    assert parse_layer("last", 6) == "last" and parse_layer(" LAST4 ", 6) == LAST4
    assert hidden_indices(LAST4, 6) == (3, 4, 5, 6) and hidden_indices(0, 6) == (1,)
    for text, part in (("0", "Layer 0 does not exist"), ("7", "from 1 to 6"), ("two", "is not a layer")):
        with pytest.raises(VizError, match=part):
            parse_layer(text, 6)
    with pytest.raises(VizError, match="at least 4 layers"):
        parse_layer("last4", 2)


def test_bad_arguments_are_viz_errors(tiny):
    cases = [(dict(texts=[]), "no texts"), (dict(texts=["ok", "  "]), "text 2 is empty"),
             (dict(pooling="sum"), "Unknown pooling 'sum'"), (dict(layer=2), "Layer 2 does not exist"),
             (dict(layer=LAST4), "at least 4 layers"), (dict(batch_size=0), "batch size"),
             (dict(max_length=1), "at least 2 tokens")]
    for kwargs, part in cases:
        with pytest.raises(VizError, match=part):
            sentence_vectors(tiny, **{"texts": ["ok"], **kwargs})
