"""Token vectors, one head's queries and keys, PCA and AttentionViz's joint space on tiny random models, each
checked against an independent computation (transformers run sentence by sentence, numpy's eigh, loops)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from vizcore.embeddings.projection import (
    distance_agreement,
    joint_space,
    pca,
    project,
    project_queries_keys,
    query_key_vectors,
    spread,
    token_vectors,
    tokenize_texts,
)
from vizcore.errors import VizError
from vizcore.model.loading import load_model

TEXTS = ["The riverbank was muddy.", "Birds fly south in winter.", "A cat sat on the mat and purred loudly."]


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


@pytest.fixture(scope="module")
def hf(tiny_bert_dir):
    """The tiny BERT as transformers alone loads it (eager attention), with its tokenizer."""
    return (AutoTokenizer.from_pretrained(tiny_bert_dir),
            AutoModel.from_pretrained(tiny_bert_dir, attn_implementation="eager").eval())


def hf_states(hf, text: str):
    """transformers alone, one sentence: (tokens, hidden states tuple, attentions tuple, model)."""
    tokenizer, model = hf
    encoded = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**encoded, output_hidden_states=True, output_attentions=True)
    return tokenizer.convert_ids_to_tokens(encoded["input_ids"][0]), out.hidden_states, out.attentions, model


def test_tokens_words_and_positions(tiny):
    points, ids, kept = tokenize_texts(tiny, TEXTS)
    assert points.tokens[:5] == ("the", "river", "##bank", "was", "muddy")
    assert points.words[:5] == ("the", "riverbank", "riverbank", "was", "muddy")  # pieces know their word
    assert list(points.position[:5]) == [1, 2, 3, 4, 5]  # 0 is [CLS], left out
    assert not points.special.any() and points.total_texts == 3 and not points.capped
    with_special, _, _ = tokenize_texts(tiny, TEXTS, special=True)
    assert with_special.tokens[0] == "[CLS]" and with_special.words[0] == "[CLS]" and with_special.special[0]
    assert len(with_special) == len(points) + 2 * len(TEXTS) == with_special.total_tokens


def test_the_token_cap_keeps_whole_sentences_and_says_so(tiny):
    first_two = len(tokenize_texts(tiny, TEXTS[:2])[0])
    points, _, _ = tokenize_texts(tiny, TEXTS, max_tokens=first_two + 3)
    assert points.texts == tuple(TEXTS[:2]) and len(points) == first_two
    assert points.capped and points.total_texts == 3 and points.total_tokens > len(points)


@pytest.mark.parametrize("state", [0, 2])
def test_token_vectors_are_each_sentence_run_alone(tiny, hf, state):
    cloud = token_vectors(tiny, TEXTS, state)
    for s, text in enumerate(TEXTS):
        tokens, states, _, _ = hf_states(hf, text)
        expected = states[state][0, 1:-1].numpy()  # batched and padded, yet the same as alone
        np.testing.assert_allclose(cloud.vectors[cloud.points.sentence == s], expected, atol=2e-5)
    with pytest.raises(VizError, match="Layer 3 does not exist"):
        token_vectors(tiny, TEXTS, 3)


def test_queries_and_keys_are_the_projections_of_the_layer_input(tiny, hf):
    cloud = query_key_vectors(tiny, TEXTS, layer=1, head=2)
    d_head = 32 // 4
    for s, text in enumerate(TEXTS):
        _, states, attentions, model = hf_states(hf, text)
        attention = model.encoder.layer[1].attention.self
        with torch.no_grad():
            q = attention.query(states[1])[0, :, 2 * d_head: 3 * d_head].numpy()  # layer 1's input is hidden state 1
            k = attention.key(states[1])[0, :, 2 * d_head: 3 * d_head].numpy()
        rows = cloud.points.sentence == s
        np.testing.assert_allclose(cloud.queries[rows], q, atol=2e-5)
        np.testing.assert_allclose(cloud.keys[rows], k, atol=2e-5)


def test_the_joint_space_keeps_every_attention_weight(tiny, hf):
    cloud = query_key_vectors(tiny, TEXTS, layer=0, head=1)
    space = joint_space(cloud.queries, cloud.keys)
    np.testing.assert_allclose(space.keys.mean(0), space.queries.mean(0), atol=1e-5)  # one centre
    centre = space.queries.mean(0)  # and one spread around it
    assert np.linalg.norm(space.queries - centre, axis=1).mean() == pytest.approx(
        np.linalg.norm(space.keys - centre, axis=1).mean(), rel=1e-4)
    for s, text in enumerate(TEXTS):
        _, _, attentions, _ = hf_states(hf, text)
        q, k = space.queries[cloud.points.sentence == s], space.keys[cloud.points.sentence == s]
        scores = q.astype(np.float64) @ k.T / np.sqrt(q.shape[1])
        weights = np.exp(scores - scores.max(1, keepdims=True))
        np.testing.assert_allclose(weights / weights.sum(1, keepdims=True), attentions[0][0, 1].numpy(), atol=1e-5)


def test_a_head_the_model_lacks_is_a_message(tiny):
    with pytest.raises(VizError, match=r"Layer 3, head 1 does not exist: the model has 2 layers x 4 heads"):
        query_key_vectors(tiny, TEXTS, layer=2, head=0)


def test_gpt2_fused_projection_is_split_into_queries_and_keys(tiny_model_dir):
    folder = tiny_model_dir("gpt2")
    loaded = load_model(str(folder), device="cpu")
    cloud = query_key_vectors(loaded, TEXTS[:2], layer=1, head=0)
    model = AutoModel.from_pretrained(folder).eval()
    encoded = AutoTokenizer.from_pretrained(folder)(TEXTS[0], return_tensors="pt")
    with torch.no_grad():
        states = model(**encoded, output_hidden_states=True).hidden_states
        block = model.h[1]
        q, k, _ = block.attn.c_attn(block.ln_1(states[1])).split(32, dim=-1)
    rows = cloud.points.sentence == 0
    np.testing.assert_allclose(cloud.queries[rows], q[0, :, :8].numpy(), atol=2e-5)
    np.testing.assert_allclose(cloud.keys[rows], k[0, :, :8].numpy(), atol=2e-5)


def test_pca_matches_the_covariance_eigenvectors():
    rng = np.random.default_rng(0)
    points = rng.normal(size=(60, 7)) @ rng.normal(size=(7, 7))
    result = pca(points, 3)
    centred = points - points.mean(0)
    values, vectors = np.linalg.eigh(np.cov(centred, rowvar=False))
    order = np.argsort(values)[::-1][:3]
    expected = centred @ vectors[:, order]
    signs = np.sign((result.coords * expected).sum(0))  # each axis up to its sign
    np.testing.assert_allclose(result.coords, expected * signs, atol=1e-4)
    np.testing.assert_allclose(result.explained, values[order] / values.sum(), rtol=1e-6)
    again = pca(points[::-1].copy(), 3)  # the signs are fixed, not left to the solver
    np.testing.assert_allclose(again.coords[::-1], result.coords, atol=1e-4)


def test_pca_of_too_few_dimensions_pads_flat_axes():
    result = pca(np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]), 3)
    assert result.coords.shape == (3, 3) and result.explained[2] == 0


def test_projection_errors():
    with pytest.raises(VizError, match="2 or 3 dimensions"):
        pca(np.zeros((5, 4)), 4)
    with pytest.raises(VizError, match="at least 2 points"):
        pca(np.zeros((1, 4)), 2)
    with pytest.raises(VizError, match="Unknown projection 'tsne'"):
        project(np.zeros((5, 4)), "tsne", 2)


def test_distance_agreement_against_a_loop():
    rng = np.random.default_rng(1)
    queries, keys = rng.normal(size=(12, 5)), rng.normal(size=(12, 5))
    sentence = np.array([0] * 5 + [1] * 7)
    expected = []
    for s in (0, 1):
        q, k = queries[sentence == s], keys[sentence == s]
        for row in q:
            expected.append(np.corrcoef(k @ row, np.linalg.norm(row - k, axis=1))[0, 1])
    assert distance_agreement(queries, keys, sentence) == pytest.approx(np.mean(expected), abs=1e-12)
    unit = keys / np.linalg.norm(keys, axis=1, keepdims=True)  # equal lengths: distance falls as q·k rises
    assert distance_agreement(unit, unit, sentence) < -0.95


def test_joint_projection_puts_queries_first_and_measures_agreement(tiny):
    cloud = query_key_vectors(tiny, TEXTS, layer=1, head=0)
    joint = project_queries_keys(cloud, "pca", 2)
    n = len(cloud.points)
    assert joint.projection.coords.shape == (2 * n, 2) and joint.normalised
    raw = project_queries_keys(cloud, "pca", 2, normalise=False)
    assert raw.scale == 1.0 and raw.agreement["raw"] == joint.agreement["raw"]
    assert joint.agreement["normalised"] == pytest.approx(
        distance_agreement(*(lambda s: (s.queries, s.keys))(joint_space(cloud.queries, cloud.keys)),
                           cloud.points.sentence))


def test_spread_takes_the_first_last_and_evenly_between():
    texts = [str(i) for i in range(10)]
    assert spread(texts, 4) == ("0", "3", "6", "9")
    assert spread(texts, 20) == tuple(texts)


def test_no_sentences_is_a_message(tiny):
    with pytest.raises(VizError, match="There are no sentences"):
        token_vectors(tiny, ["", "  "], 0)


def test_umaps_neighbours_are_each_points_nearest_in_order_with_ties_to_the_first():
    """``exact_neighbours`` (umap-learn's ``precomputed_knn``) against loops in float64: each point itself first,
    then the others by distance, equal distances in the points' order; the distances as measured."""
    from vizcore.embeddings.projection import exact_neighbours

    rng = np.random.default_rng(1)
    points = rng.normal(size=(40, 7)).astype(np.float32)
    centre = (np.round(rng.normal(size=7) * 8) / 8).astype(np.float32)  # eighths: every sum below is exact
    points[20], points[21] = centre + 0.125, centre - 0.125  # both exactly as far from the centre (point 22)
    points[22] = centre
    order, distances, index = exact_neighbours(points, 6)
    assert index is None and order.dtype == np.int32 and order.shape == distances.shape == (40, 6)
    wide = points.astype(np.float64)
    for i in range(40):
        far = [float(np.sqrt(((wide[i] - wide[j]) ** 2).sum())) for j in range(40)]
        expected = sorted(range(40), key=lambda j: (round(far[j], 5), j))[:6]
        assert order[i].tolist() == expected, i
        np.testing.assert_allclose(distances[i], [far[j] for j in expected], rtol=1e-5, atol=1e-5)
    assert order[22].tolist()[:3] == [22, 20, 21]  # the tie: in the points' order

