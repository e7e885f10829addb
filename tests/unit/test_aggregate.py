"""Pair filters, hidden specials, word merges, head means, rollout and flow against hand computations."""

import numpy as np
import pytest

from vizcore.attention.aggregate import (
    ViewOptions,
    apply_view,
    attention_flow,
    attention_rollout,
    head_mean,
    merge_matrix,
    pair_selection,
    word_groups,
)
from vizcore.attention.extract import extract_attention
from vizcore.errors import VizError
from vizcore.model.loading import load_model


def random_attention(layers=2, heads=3, n=5, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random((layers, heads, n, n))
    return a / a.sum(-1, keepdims=True)


def test_pair_filters_pick_segment_rows_and_columns():
    segments = np.array([0, 0, 0, 1, 1])
    q, k = pair_selection(segments, "A->B")
    assert q.tolist() == [0, 1, 2] and k.tolist() == [3, 4]
    q, k = pair_selection(segments, "B->A")
    assert q.tolist() == [3, 4] and k.tolist() == [0, 1, 2]
    q, k = pair_selection(segments, "B->B")
    assert q.tolist() == k.tolist() == [3, 4]
    with pytest.raises(VizError, match="second sentence"):
        pair_selection(np.zeros(4, int), "A->B")


def test_pair_filter_keeps_the_models_weights_unrenormalised():
    a = random_attention()[0, 0]
    tokens = list("abcde")
    shown, rows, cols = apply_view(a, tokens, [(0, 1)] * 5, np.zeros(5, bool), np.array([0, 0, 0, 1, 1]),
                                   ViewOptions(pair_filter="A->B"))
    np.testing.assert_array_equal(shown, a[:3, 3:])
    assert rows.tokens == ["a", "b", "c"] and cols.tokens == ["d", "e"]
    assert cols.segments.tolist() == [1, 1]


def test_hiding_specials_drops_them_and_renormalises_rows():
    a = np.array([[0.5, 0.2, 0.2, 0.1],
                  [0.4, 0.3, 0.1, 0.2],
                  [0.1, 0.1, 0.6, 0.2],
                  [0.25, 0.25, 0.25, 0.25]])
    special = np.array([True, False, False, True])
    shown, rows, _ = apply_view(a, ["[CLS]", "x", "y", "[SEP]"], [(0, 0), (0, 1), (2, 3), (0, 0)], special,
                                np.zeros(4, int), ViewOptions(hide_special=True))
    np.testing.assert_allclose(shown, [[0.75, 0.25], [1 / 7, 6 / 7]])
    assert rows.tokens == ["x", "y"]


def test_word_groups_join_glued_word_pieces_but_not_punctuation_or_specials():
    tokens = ["[CLS]", "play", "##ing", "football", ".", "[SEP]"]
    offsets = [(0, 0), (0, 4), (4, 7), (8, 16), (16, 17), (0, 0)]
    groups = word_groups(tokens, offsets, np.array([1, 0, 0, 0, 0, 1], bool), np.zeros(6, int))
    assert groups == [[0], [1, 2], [3], [4], [5]]


def test_merging_sums_over_key_pieces_and_averages_over_query_pieces():
    a = np.array([[0.1, 0.2, 0.3, 0.4],
                  [0.4, 0.3, 0.2, 0.1],
                  [0.25, 0.25, 0.25, 0.25],
                  [0.0, 0.5, 0.5, 0.0]])
    merged = merge_matrix(a, [[0], [1, 2], [3]], [[0], [1, 2], [3]])
    expected = np.array([[0.1, 0.5, 0.4],
                         [(0.4 + 0.25) / 2, (0.5 + 0.5) / 2, (0.1 + 0.25) / 2],
                         [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(merged, expected)
    np.testing.assert_allclose(merged.sum(-1), 1.0)


def test_merge_on_a_real_sentence_labels_words_and_keeps_rows_stochastic(tiny_bert_dir):
    result = extract_attention(load_model(str(tiny_bert_dir), device="cpu"), "Tokenization is unbelievable.")
    shown, rows, cols = apply_view(result.attention[1, 2], result.tokens, result.offsets, result.special_mask,
                                   result.segment_ids, ViewOptions(merge_words=True))
    assert cols.tokens == ["[CLS]", "tokenization", "is", "unbelievable", ".", "[SEP]"]
    assert len(result.tokens) > len(cols.tokens)  # the words really were split into pieces
    np.testing.assert_allclose(shown.sum(-1), 1.0, atol=1e-5)


def test_head_mean_and_rollout_match_a_direct_computation():
    a = random_attention(layers=3, heads=2, n=4, seed=1)
    np.testing.assert_allclose(head_mean(a), (a[:, 0] + a[:, 1]) / 2)
    eye = np.eye(4)
    mixed = [0.5 * a[layer].mean(0) + 0.5 * eye for layer in range(3)]  # rows already sum to 1
    expected = mixed[2] @ mixed[1] @ mixed[0]
    rollout = attention_rollout(a)
    np.testing.assert_allclose(rollout[0], mixed[0])
    np.testing.assert_allclose(rollout[2], expected)
    np.testing.assert_allclose(rollout.sum(-1), 1.0)


def test_flow_on_a_one_layer_graph_is_the_edge_capacity():
    a = random_attention(layers=1, heads=1, n=3, seed=2)
    mixed = 0.5 * a[0, 0] + 0.5 * np.eye(3)
    np.testing.assert_allclose(attention_flow(a), mixed, atol=1e-9)


def test_flow_on_two_layers_is_the_bottleneck_path_sum():
    # Two layers, two tokens: from top token 0 to input token 1 the paths are 0->0->1 and 0->1->1;
    # max flow = min(c1[0,0], c0[0,1]) + min(c1[0,1], c0[1,1]) because the paths share no edge.
    a = np.array([[[[0.2, 0.8], [0.6, 0.4]]], [[[0.5, 0.5], [0.3, 0.7]]]])
    c0 = 0.5 * a[0, 0] + 0.5 * np.eye(2)
    c1 = 0.5 * a[1, 0] + 0.5 * np.eye(2)
    flow = attention_flow(a, queries=[0])
    assert flow[0, 1] == pytest.approx(min(c1[0, 0], c0[0, 1]) + min(c1[0, 1], c0[1, 1]))
    assert flow[1].tolist() == [0.0, 0.0]  # rows not asked for stay 0


def test_flow_refuses_long_inputs_with_a_message():
    with pytest.raises(VizError, match="limited to 40 tokens"):
        attention_flow(random_attention(layers=1, heads=1, n=41))
