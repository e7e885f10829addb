"""Word-level attention (to a split word: sum; from a split word: mean), the heads' predictions for each arc,
and the relation table with its fixed-offset baseline, against numbers worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vizcore.corpus.relations import relation_table
from vizcore.corpus.syntax import Parse, piece_words, score_arcs, word_attention

# "ab cd e": words ab (0-2), cd (3-5), e (6-7); pieces [CLS] a ##b cd e [SEP]
OFFSETS = np.array([(0, 0), (0, 1), (1, 2), (3, 5), (6, 7), (0, 0)])
SPECIAL = np.array([1, 0, 0, 0, 0, 1], dtype=bool)
SPANS = np.array([(0, 2), (3, 5), (6, 7)])
HEAD_A = np.array([
    [1 / 6] * 6,
    [0.1, 0.0, 0.2, 0.3, 0.3, 0.1],  # a
    [0.2, 0.2, 0.0, 0.1, 0.4, 0.1],  # ##b
    [0.1, 0.25, 0.25, 0.0, 0.3, 0.1],  # cd
    [0.1, 0.1, 0.1, 0.6, 0.0, 0.1],  # e
    [1 / 6] * 6,
])
UNIFORM = np.full((6, 6), 1 / 6)
ATTENTION = np.stack([HEAD_A, UNIFORM])[None]  # (L=1, H=2, 6, 6)
# arcs: ab -> cd (amod), e -> cd (dobj)
PARSE = Parse(SPANS, np.array([0, 2]), np.array([1, 1]), ("amod", "dobj"))


def test_pieces_are_aligned_to_words_by_character_offsets():
    assert piece_words(OFFSETS, SPECIAL, SPANS).tolist() == [-1, 0, 0, 1, 2, -1]


def test_word_attention_sums_over_pieces_attended_to_and_averages_over_pieces_attending():
    words = piece_words(OFFSETS, SPECIAL, SPANS)
    w = word_attention(ATTENTION, words, 3)[0, 0]
    expected = np.array([
        [(0.2 + 0.2) / 2, (0.3 + 0.1) / 2, (0.3 + 0.4) / 2],
        [0.5, 0.0, 0.3],
        [0.2, 0.6, 0.0],
    ])
    np.testing.assert_allclose(w, expected, atol=1e-12)
    np.testing.assert_allclose(word_attention(ATTENTION, words, 3)[0, 1], np.tile([2 / 6, 1 / 6, 1 / 6], (3, 1)))


def test_each_head_predicts_the_most_attended_other_word():
    scores = score_arcs(ATTENTION, OFFSETS, SPECIAL, PARSE)
    assert scores.relations == ("amod", "dobj") and scores.unaligned == 0
    # head 0: from ab, e (0.35) beats cd (0.2): miss; from e, cd (0.6): hit; from cd, ab (0.5) beats e (0.3)
    assert scores.hits[:, :, 0, 0].tolist() == [[False, True], [True, False]]
    # head 1 (uniform): from ab, cd and e tie at 1/6 and the first wins: hit; from e, ab (2/6): miss
    assert scores.hits[:, :, 0, 1].tolist() == [[True, True], [False, False]]
    np.testing.assert_allclose(scores.weights[:, :, 0, 0], [[0.2, 0.5], [0.6, 0.3]], atol=1e-7)
    assert scores.offsets.tolist() == [[1, -1], [-1, 1]]


def test_arcs_to_words_without_pieces_are_left_out_and_counted():
    spans = np.vstack([SPANS, [(8, 12)]])  # a fourth word, cut off by truncation
    parse = Parse(spans, np.array([0, 2, 3]), np.array([1, 1, 1]), ("amod", "dobj", "punct"))
    scores = score_arcs(ATTENTION, OFFSETS, SPECIAL, parse)
    assert scores.relations == ("amod", "dobj") and scores.unaligned == 1
    assert scores.hits.shape == (2, 2, 1, 2)


def test_relation_table_accuracy_and_best_fixed_offset():
    hits = pd.DataFrame([
        ("det", "dependent->head", 0, 0, 3, 4), ("det", "dependent->head", 0, 1, 1, 4),
        ("nsubj", "dependent->head", 0, 0, 0, 2), ("nsubj", "dependent->head", 0, 1, 2, 2),
    ], columns=["relation", "direction", "layer", "head", "hits", "count"])
    offsets = pd.DataFrame([
        ("det", "dependent->head", 1, 3), ("det", "dependent->head", 2, 1),
        ("nsubj", "dependent->head", -1, 1), ("nsubj", "dependent->head", 1, 1),
    ], columns=["relation", "direction", "offset", "count"])
    table = relation_table(hits, offsets).set_index(["relation", "head"])
    assert table.loc[("det", 0), "accuracy"] == pytest.approx(0.75)
    assert table.loc[("det", 0), ["baseline_offset", "baseline_accuracy"]].tolist() == [1, 0.75]
    assert table.loc[("nsubj", 1), "accuracy"] == 1.0
    assert table.loc[("nsubj", 1), ["baseline_offset", "baseline_accuracy"]].tolist() == [-1, 0.5]  # tie: smaller
    # "all" pools every arc: head 1 got 3 of 6; offset +1 is right for 4 of 6
    assert table.loc[("all", 1), ["accuracy", "count"]].tolist() == [0.5, 6]
    assert table.loc[("all", 1), ["baseline_offset", "baseline_accuracy"]].tolist() == [1, pytest.approx(4 / 6)]
