"""What-changed numbers checked against direct computations: JS, head change, confusion, PCA, separation."""

import copy
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from vizcore.finetune.analysis import (
    Evaluation,
    attention_change,
    class_separation,
    embedding_map,
    js_divergence,
    pca_2d,
    pooled_embeddings,
    token_map,
    token_vectors,
)
from vizcore.finetune.datasets import LabelledTexts
from vizcore.model.loading import load_model

SENTENCES = ["The cat sat on the mat.", "A truly awful meal.", "Lovely staff and a great view!"]


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


def test_js_divergence_bounds_and_a_hand_computed_value():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5])
    # m = (0.25, 0.5, 0.25): KL(p||m) = 0.5*log2(2) + 0.5*log2(1) = 0.5, same for q -> JS = 0.5 bit
    assert js_divergence(p, q) == pytest.approx(0.5)
    assert js_divergence(p, p) == pytest.approx(0.0)
    assert js_divergence(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(5), size=4), rng.dirichlet(np.ones(5), size=4)
    m = (a + b) / 2
    manual = [0.5 * sum(x * math.log2(x / y) for x, y in zip(a[i], m[i])) +
              0.5 * sum(x * math.log2(x / y) for x, y in zip(b[i], m[i])) for i in range(4)]
    np.testing.assert_allclose(js_divergence(a, b), manual, rtol=1e-9)


def test_evaluation_counts_match_a_plain_loop():
    labels = np.array([0, 0, 1, 1, 1, 2])
    probs = np.array([[.9, .1, 0], [.2, .7, .1], [.1, .8, .1], [.3, .3, .4], [0, 1, 0], [.1, .1, .8]], dtype=np.float32)
    evaluation = Evaluation(("a", "b", "c"), labels, probs, tuple("uvwxyz"))
    expected = np.zeros((3, 3), dtype=int)
    for true, row in zip(labels, probs):
        expected[true, int(np.argmax(row))] += 1
    assert evaluation.confusion.tolist() == expected.tolist()
    assert evaluation.accuracy == pytest.approx(4 / 6)
    records = evaluation.records()
    assert records[1] == {"text": "v", "label": "a", "prediction": "b", "confidence": pytest.approx(0.7),
                          "correct": False}
    assert evaluation.to_dict()["confusion"] == expected.tolist()


def test_pca_matches_the_covariance_eigenvectors():
    rng = np.random.default_rng(1)
    points = rng.normal(size=(50, 6)) @ rng.normal(size=(6, 6))
    coords, explained = pca_2d(points)
    centred = points - points.mean(0)
    values, vectors = np.linalg.eigh(np.cov(centred.T))
    order = np.argsort(values)[::-1]
    for i in range(2):
        expected = centred @ vectors[:, order[i]]
        assert min(np.abs(coords[:, i] - expected).max(), np.abs(coords[:, i] + expected).max()) < 1e-8
    np.testing.assert_allclose(explained, values[order[:2]] / values.sum(), rtol=1e-8)


def test_class_separation_is_large_for_separate_clusters_and_small_for_mixed_ones():
    rng = np.random.default_rng(2)
    labels = np.array([0] * 40 + [1] * 40)
    apart = np.concatenate([rng.normal(0, 1, (40, 3)), rng.normal(10, 1, (40, 3))])
    mixed = rng.normal(0, 1, (80, 3))
    assert class_separation(apart, labels) > 20 > 0.2 > class_separation(mixed, labels)


def test_same_encoder_has_zero_attention_change(tiny):
    change = attention_change(tiny, replace(tiny, model=copy.deepcopy(tiny.model)), SENTENCES)
    assert change.js.shape == (2, 4) and not change.js.any() and not change.mean_abs_diff.any()


def test_changing_only_the_last_layer_changes_only_its_heads_by_the_right_amount(tiny):
    changed = copy.deepcopy(tiny.model)
    with torch.no_grad():
        changed.encoder.layer[1].attention.self.query.weight.mul_(3.0)
    change = attention_change(tiny, replace(tiny, model=changed), SENTENCES)
    assert not change.js[0].any() and (change.js[1] > 0).all()
    expected = []
    for text in SENTENCES:
        inputs = tiny.tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            a = tiny.model(**inputs, output_attentions=True).attentions[1][0]  # (H, T, T)
            b = changed(**inputs, output_attentions=True).attentions[1][0]
        expected.append((b - a).abs().mean(dim=(1, 2)).numpy())
    np.testing.assert_allclose(change.mean_abs_diff[1], np.mean(expected, 0), rtol=1e-5)
    assert change.top_heads(1, "abs")[0][0] == 1


def test_embedding_map_pools_like_a_direct_mean(tiny):
    data = LabelledTexts(tuple(SENTENCES), np.array([0, 1, 0]), ("x", "y"))
    vectors = pooled_embeddings(tiny, data.texts, "mean", 32)
    inputs = tiny.tokenizer(SENTENCES[1], return_tensors="pt")
    with torch.no_grad():
        direct = tiny.model(**inputs).last_hidden_state[0].mean(0).numpy()
    np.testing.assert_allclose(vectors[1], direct, atol=1e-5)
    emap = embedding_map(tiny, tiny, data, "mean", 32)
    assert emap.before.shape == emap.after.shape == (3, 2)
    np.testing.assert_allclose(emap.before, emap.after)


def test_token_map_reads_the_chosen_positions_of_each_unpadded_sentence(tiny):
    encoded = tiny.tokenizer(SENTENCES, return_tensors="pt", padding=True)
    chosen = torch.zeros_like(encoded["attention_mask"], dtype=torch.bool)
    chosen[0, 1:3], chosen[2, 4] = True, True  # two tokens of the first sentence, one of the third
    vectors = token_vectors(tiny, dict(encoded), chosen, batch_size=2)  # rows split over two batches
    expected = []
    for row, columns in ((0, [1, 2]), (2, [4])):  # each sentence alone, without padding
        alone = tiny.tokenizer(SENTENCES[row], return_tensors="pt")
        with torch.no_grad():
            expected.extend(tiny.model(**alone).last_hidden_state[0, columns].numpy())
    np.testing.assert_allclose(vectors, np.array(expected), atol=1e-5)
    labels = np.array([0, 1, 1])
    emap = token_map(tiny, tiny, dict(encoded), chosen, labels)
    assert emap.before.shape == (3, 2) and np.array_equal(emap.before, emap.after)
    assert emap.separation_before == pytest.approx(class_separation(np.array(expected), labels), rel=1e-4)
