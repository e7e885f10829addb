"""The installed base-size all-mpnet-base-v2 (12 x 12, hidden 768, relative position bias) through the app's core:
step by step equals the model within 1e-5 on every layer, sentence vectors equal sentence-transformers' encoding of
the same folder, and the CLI gives the same JSON shapes and folders as for the embedded model. One load shared by
every test (the CLI's loads get it too); skipped when the model is not installed."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import torch

from tests.unit.test_cli_hostile import run_main
from vizcore.model import export, loading
from vizcore.model.catalog import BASE_MODEL, BUILTIN_MODELS, DEFAULT_MODEL

pytestmark = pytest.mark.skipif(
    not BUILTIN_MODELS[BASE_MODEL].installed(),
    reason=f"{BASE_MODEL} is not installed: run `python -m vizcore install-model {BASE_MODEL}` (make models)")

TEXT = "The animal didn't cross the street because it was too tired."
PAIR = "It was a long way."
LONG = " ".join(["The river bank was muddy after the storm, so the children walked along the road to the old "
                 "bank in town, where their grandmother kept her savings."] * 16)  # over its 384 tokens


@pytest.fixture(scope="module")
def mpnet():
    return loading.load_model(BASE_MODEL, device="cpu")


@pytest.fixture
def shared_loads(monkeypatch, mpnet, minilm):
    """The commands' load_model returns the models already loaded (both are read-only)."""
    loaded, real = {BASE_MODEL: mpnet, DEFAULT_MODEL: minilm}, loading.load_model

    def load(name: str = DEFAULT_MODEL, device: str = "auto", head: str = "base"):
        return loaded[name] if head == "base" and name in loaded else real(name, device=device, head=head)

    monkeypatch.setattr(loading, "load_model", load)
    monkeypatch.setattr(export, "load_model", load)


def test_step_by_step_reproduces_every_layer_with_the_relative_bias(mpnet):
    from vizcore.inside.steps import TOLERANCE, embedding_parts, layer_steps, run_model

    run = run_model(mpnet, TEXT, PAIR)
    with torch.no_grad():  # transformers' own bias, computed once for the sentence
        bias = mpnet.model.base_model.encoder.compute_position_bias(torch.zeros(1, len(run.tokens), 1))[0].numpy()
    for layer in range(12):
        steps = layer_steps(mpnet, run, layer, head=layer)
        assert steps.all_heads_diff <= TOLERANCE and steps.output_diff <= TOLERANCE, layer
        np.testing.assert_allclose(steps.bias, bias[layer], atol=1e-6)
    assert steps.d_k == 64 and np.allclose(steps.scaled, steps.scores / 8.0)  # bert-base's √64
    assert embedding_parts(mpnet, run).max_abs_diff <= TOLERANCE


def test_sentence_vectors_equal_sentence_transformers(mpnet):
    from sentence_transformers import SentenceTransformer

    from vizcore.embeddings.vectors import sentence_vectors, similarity

    folder = BUILTIN_MODELS[BASE_MODEL].source()
    modules = [m["type"] for m in json.loads((folder / "modules.json").read_text())]
    assert modules[1:] == ["sentence_transformers.models.Pooling", "sentence_transformers.models.Normalize"]
    sentences = [TEXT, PAIR, "Stock markets fell sharply today.", "Hi", LONG]
    expected = SentenceTransformer(str(folder), device="cpu").encode(sentences, batch_size=2, convert_to_numpy=True)
    np.testing.assert_allclose(sentence_vectors(mpnet, sentences, normalize=True, batch_size=3), expected, atol=1e-5)
    assert similarity(mpnet, TEXT, PAIR) == pytest.approx(float(expected[0] @ expected[1]), abs=1e-5)


def shape_of(value):
    """The JSON's shape: keys, list lengths replaced by 'n', leaf types."""
    if isinstance(value, dict):
        return {key: shape_of(item) for key, item in value.items()}
    if isinstance(value, list):
        return ["n", shape_of(value[0]) if value else None]
    return type(value).__name__


def test_the_cli_gives_the_same_json_and_folders_as_for_the_embedded_model(capsys, shared_loads, mpnet, tmp_path):
    outputs = {}
    for model in (DEFAULT_MODEL, BASE_MODEL):
        code, out, err = run_main(capsys, "attention", "--text", TEXT, "--model", model, "--device", "cpu")
        assert code == 0, err
        attention = json.loads(out)
        code, out, err = run_main(capsys, "similarity", "--text", TEXT, "--pair", PAIR, "--model", model,
                                  "--device", "cpu")
        assert code == 0, err
        outputs[model] = (attention, json.loads(out))
    (small, small_similarity), (base, base_similarity) = outputs[DEFAULT_MODEL], outputs[BASE_MODEL]
    assert shape_of(base) == shape_of(small) and shape_of(base_similarity) == shape_of(small_similarity)
    assert np.shape(base["attention"]) == (12, 12, len(base["tokens"]), len(base["tokens"]))
    from vizcore.attention.extract import extract_attention

    np.testing.assert_allclose(base["attention"], extract_attention(mpnet, TEXT).attention, atol=1e-6)
    assert base_similarity["dimension"] == 768 and base_similarity["max_length"] == 384

    code, out, err = run_main(capsys, "export-model", BASE_MODEL, "--out", str(tmp_path / "base"))
    assert code == 0, err
    report = json.loads(out)
    names = sorted(p.name for p in (tmp_path / "base").iterdir())
    assert names == sorted(report["files"]) == ["config.json", "model.safetensors", "tokenizer.json",
                                                "tokenizer_config.json"]  # as the embedded model's export
    assert report["architecture"] == "MPNetModel" and report["auto_class"] == "AutoModel"
    digest = hashlib.sha256((tmp_path / "base" / "model.safetensors").read_bytes()).hexdigest()
    assert report["weights_sha256"] == digest
