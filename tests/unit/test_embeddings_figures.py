"""Figures of the embeddings page, built from hand-made numbers: what each trace holds, colours, hover text."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from vizcore.embeddings.contexts import Context, WordInContexts
from vizcore.embeddings.figures import (
    CATEGORY_COLOURS,
    OTHER_COLOUR,
    PAIR_COLOURS,
    QUERY_KEY_COLOURS,
    common_words,
    context_lines,
    cosine_heatmap,
    point_colouring,
    point_hover,
    projection_scatter,
    query_key_colouring,
    query_key_symbols,
)
from vizcore.embeddings.projection import Projection, TokenPoints


def points_of(sentences: list[list[str]]) -> TokenPoints:
    """Points whose tokens are the given words (one token per word), sentence by sentence."""
    words = [w for s in sentences for w in s]
    return TokenPoints(texts=tuple(" ".join(s) for s in sentences), tokens=tuple(words), words=tuple(words),
                       sentence=np.array([i for i, s in enumerate(sentences) for _ in s]),
                       position=np.array([p + 1 for s in sentences for p in range(len(s))]),
                       special=np.array([w.startswith("[") for w in words]), total_texts=len(sentences),
                       total_tokens=len(words))


BANKS = points_of([["the", "bank", "of", "the", "river"], ["the", "bank", "lent", "money"],
                   ["light", "the", "bank", "lamp", "<b>"]])
SENSES = (("bank", "river"), ("bank", "money"), ("lamp", "fire"))


def test_cosine_heatmap_shows_every_value_and_both_sentences_on_hover():
    matrix = np.array([[1.0, 0.25], [0.25, 1.0]])
    texts = ["1. A <cat>", "2. A dog"]
    fig = cosine_heatmap(matrix, ["1", "2"], "t", hover=texts, row_labels=texts)
    heat = fig.data[0]
    np.testing.assert_allclose(np.asarray(heat.z), matrix)
    assert list(fig.data[-1].text) == ["1.00", "0.25", "0.25", "1.00"] and (heat.zmin, heat.zmax) == (0.2, 1.0)
    assert heat.customdata[0][1] == "1. A &lt;cat&gt;<br>↔ 2. A dog"  # user text never becomes markup
    assert list(fig.layout.yaxis.ticktext) == ["1. A &lt;cat&gt;", "2. A dog"]
    big = cosine_heatmap(np.eye(20), [str(i) for i in range(20)], "t", zrange=(-1.0, 1.0))
    assert len(big.data) == 1 and (big.data[0].zmin, big.data[0].zmax) == (-1.0, 1.0)  # too many cells to write


def test_context_lines_draw_each_pair_and_the_two_means():
    contexts = (Context("a bank", "river"), Context("b bank", "river"), Context("c bank", "money"))
    vectors = np.random.default_rng(0).normal(size=(3, 4, 6)).astype(np.float32)
    result = WordInContexts("bank", contexts, (("bank",),) * 3, ((2, 6),) * 3, vectors)
    fig = context_lines(result)
    pairs, means = fig.data[:3], fig.data[3:]
    assert [t.line.color for t in pairs] == [PAIR_COLOURS[True], PAIR_COLOURS[False], PAIR_COLOURS[False]]
    assert list(pairs[0].x) == ["embeddings", "layer 1", "layer 2", "layer 3"]
    np.testing.assert_allclose(pairs[1].y, result.cosines()[:, 0, 2])
    assert [t.name for t in means] == ["mean, same sense", "mean, different senses"]
    np.testing.assert_allclose(means[1].y, result.sense_means()["different senses"])
    assert [t.showlegend for t in pairs] == [True, True, False]  # one legend entry per kind of pair


def test_common_words_count_sentences_and_skip_common_words():
    assert common_words(BANKS) == ["bank", "<b>", "lamp", "lent", "light", "money", "river"]  # bank: 3 sentences
    assert common_words(BANKS, count=2) == ["bank", "<b>"]


def test_word_colouring_splits_an_examples_word_by_sense():
    colouring = point_colouring(BANKS, "word", ["bank", "lamp"], SENSES)
    assert colouring.labels[1] == "bank (river)" and colouring.labels[6] == "bank (money)"
    assert colouring.labels[11] == "bank"  # written for "lamp": this bank has no sense
    assert colouring.labels[12] == "lamp (fire)" and colouring.labels[0] == ""
    assert colouring.colours["bank (river)"] == colouring.colours["bank (money)"] == colouring.colours["bank"]
    assert colouring.colours["lamp (fire)"] == CATEGORY_COLOURS[1]
    assert {colouring.symbols[n] for n in ("bank (money)", "bank (river)")} == {"circle", "diamond"}
    assert colouring.symbols["bank"] == "circle-open"


def test_position_and_sentence_colourings():
    assert list(point_colouring(BANKS, "position").values) == list(BANKS.position)
    by_sentence = point_colouring(BANKS, "sentence")
    assert by_sentence.labels[0] == "1. the bank of the river" and by_sentence.values is None
    many = points_of([["w"]] * 30)
    assert list(point_colouring(many, "sentence").values) == list(range(1, 31))  # a colour scale beyond 24


def test_scatter_2d_groups_points_and_keeps_their_indices():
    coords = np.arange(2 * len(BANKS), dtype=np.float32).reshape(-1, 2)
    projection = Projection(coords, "pca", np.array([0.5, 0.25]))
    fig = projection_scatter(projection, point_hover(BANKS), point_colouring(BANKS, "word", ["bank"], SENSES), "t")
    assert all(isinstance(t, go.Scatter) for t in fig.data)
    other = fig.data[0]
    assert other.name == "other" and other.marker.color == OTHER_COLOUR
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["bank (money)"].customdata) == [6]  # clicks give the point's index
    np.testing.assert_allclose([by_name["bank (money)"].x[0], by_name["bank (money)"].y[0]], coords[6])
    assert "<b>bank</b>" in by_name["bank (money)"].hovertext[0] and "sentence 2: the bank lent money" in \
        by_name["bank (money)"].hovertext[0]
    assert "&lt;b&gt;" in point_hover(BANKS)[-1]  # a token that looks like markup is shown as text
    assert fig.layout.xaxis.title.text == "PC 1 (50.0% of variance)"


def test_scatter_3d_with_a_colour_scale():
    coords = np.random.default_rng(0).normal(size=(len(BANKS), 3)).astype(np.float32)
    fig = projection_scatter(Projection(coords, "umap", None), point_hover(BANKS), point_colouring(BANKS, "position"),
                             "t")
    (trace,) = fig.data
    assert isinstance(trace, go.Scatter3d) and list(trace.marker.color) == list(BANKS.position)
    assert trace.marker.colorbar.title.text == "position"
    assert fig.layout.scene.xaxis.title.text == "UMAP 1"


def test_queries_and_keys_colourings():
    kind = query_key_colouring(BANKS, "kind")
    n = len(BANKS)
    assert kind.labels == ("query",) * n + ("key",) * n and kind.colours == QUERY_KEY_COLOURS
    coords = np.zeros((2 * n, 2), dtype=np.float32)
    fig = projection_scatter(Projection(coords, "pca", np.array([0.1, 0.1])), ["h"] * 2 * n, kind, "t",
                             symbols=query_key_symbols(BANKS))
    assert [t.name for t in fig.data] == ["query", "key"]  # queries first, in green
    assert fig.data[0].marker.color == QUERY_KEY_COLOURS["query"] and set(fig.data[1].marker.symbol) == {"diamond"}
    assert list(query_key_colouring(BANKS, "position").values) == list(BANKS.position) * 2
    token = query_key_colouring(BANKS, "token", ["bank"])
    assert token.labels[1] == token.labels[n + 1] == "bank"
