"""The encoder-decoder figures carry the data they claim: the attention slice of the head named in the
title (1-based), the masked cells exactly above the diagonal, the gold markers exactly on the gold
cells, the written token's bar highlighted, the curves' points; values in hover text, colour bars titled."""

from __future__ import annotations

import numpy as np
import pytest

from vizcore.decoder.figures import DRAWN_COLOUR
from vizcore.errors import VizError
from vizcore.plot import axis_labels, shown_labels
from vizcore.seq2seq.figures import (
    GOLD_COLOUR,
    alignment_accuracy_heatmap,
    cross_attention_heatmap,
    decoder_attention_heatmap,
    encoder_attention_heatmap,
    in_a_column,
    step_distribution_bars,
    training_curves,
)
from vizcore.seq2seq.record import Seq2SeqRun

WORDS = "the twenty first of march nineteen ninety nine".split()
OUTPUT = list("1999-03-21")  # repeated characters: rows must stay apart


def attention(rng: np.random.Generator, layers: int, rows: int, cols: int, causal: bool = False) -> np.ndarray:
    scores = rng.normal(size=(layers, 4, rows, cols))
    if causal:
        scores[..., np.triu(np.ones((rows, cols), dtype=bool), k=1)] = -np.inf
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def run() -> Seq2SeqRun:
    rng = np.random.default_rng(0)
    i, o = len(WORDS), len(OUTPUT)
    gold = np.zeros((o, i), dtype=bool)
    gold[0:4, 5:8] = True  # the year's digits <-> the year words
    gold[5:7, 4] = True  # the month digits <-> "march"
    gold[8:10, 1:3] = True  # the day digits <-> "twenty first"
    return Seq2SeqRun(model="dates", text=" ".join(WORDS), input_tokens=WORDS, decoder_tokens=["<s>"] + OUTPUT[:-1],
                      output_tokens=OUTPUT, encoder=attention(rng, 2, i, i), decoder=attention(rng, 3, o, o, True),
                      cross=attention(rng, 3, o, i), gold=gold)


def test_the_encoder_view_is_the_heads_matrix_over_the_input(run):
    fig = encoder_attention_heatmap(run, 1, 2)
    np.testing.assert_array_equal(np.array(fig.data[0].z), run.encoder[1, 2])
    assert list(fig.data[0].x) == list(fig.data[0].y) == axis_labels(WORDS)
    assert "layer 2, head 3" in fig.layout.title.text and "Encoder" in fig.layout.title.text
    assert fig.data[0].colorbar.title.text == "attention weight" and "%{z:.4f}" in fig.data[0].hovertemplate
    assert fig.layout.title.font.size >= 18


def test_the_decoder_view_masks_exactly_the_cells_above_the_diagonal(run):
    fig = decoder_attention_heatmap(run, 2, 0)
    o = len(OUTPUT)
    weights, masked = np.array(fig.data[0].z, dtype=float), np.array(fig.data[1].z, dtype=float)
    above = np.triu(np.ones((o, o), dtype=bool), k=1)
    assert np.array_equal(np.isnan(weights), above) and np.array_equal(masked == 1.0, above)
    np.testing.assert_allclose(weights[~above], run.decoder[2, 0][~above])
    assert (np.array(fig.data[1].text)[above] == "✕").all() and (np.array(fig.data[1].text)[~above] == "").all()
    assert len(set(fig.data[0].y)) == o  # "9", "9", "9" stay three rows
    assert [row[0] for row in fig.data[0].customdata] == OUTPUT  # each row says what it writes
    assert "layer 3, head 1" in fig.layout.title.text and not fig.layout.shapes
    assert fig.data[0].colorbar.title.text == "attention weight"


def test_the_cross_view_outlines_the_gold_cells_and_dots_each_rows_most_attended_input(run):
    fig = cross_attention_heatmap(run, 0, 3)
    matrix = run.cross[0, 3]
    heatmap, gold, most = fig.data
    np.testing.assert_array_equal(np.array(heatmap.z), matrix)
    rows, cols = axis_labels(OUTPUT), axis_labels(WORDS)
    assert list(heatmap.y) == rows and list(heatmap.x) == cols
    gold_cells = {(rows[i], cols[j]) for i, j in zip(*np.nonzero(run.gold))}
    assert set(zip(gold.y, gold.x)) == gold_cells and len(gold.x) == run.gold.sum()
    assert gold.name == "gold alignment" and gold.showlegend is not False and gold.marker.color == GOLD_COLOUR
    np.testing.assert_allclose(gold.customdata, [matrix[rows.index(y), cols.index(x)] for x, y in zip(gold.x, gold.y)])
    assert list(most.x) == [cols[j] for j in matrix.argmax(1)] and list(most.y) == rows
    assert "%{customdata:.4f}" in gold.hovertemplate and "%{z:.4f}" in heatmap.hovertemplate
    assert "layer 1, head 4" in fig.layout.title.text and fig.layout.yaxis.title.text.startswith("output")


def test_without_gold_there_is_no_gold_trace(run):
    plain = Seq2SeqRun(**{**run.__dict__, "gold": None})
    assert [t.name for t in cross_attention_heatmap(plain, 0, 0).data[1:]] == ["most attended input"]


@pytest.mark.parametrize("view", [encoder_attention_heatmap, decoder_attention_heatmap, cross_attention_heatmap])
def test_a_head_that_does_not_exist_is_named_1_based(run, view):
    with pytest.raises(VizError, match="layer 4, head 1 does not exist"):
        view(run, 3, 0)


def test_the_accuracy_grid_shows_every_heads_value_and_frames_the_best():
    accuracy = np.array([[0.1, 0.5, np.nan, 0.2], [0.95, 0.3, 0.25, 0.0]])
    fig = alignment_accuracy_heatmap(accuracy)
    np.testing.assert_array_equal(np.array(fig.data[0].z, dtype=float), accuracy)
    assert [list(row) for row in fig.data[0].text] == [["10%", "50%", "–", "20%"], ["95%", "30%", "25%", "0%"]]
    assert fig.data[0].colorbar.title.text == "alignment accuracy"
    assert shown_labels(fig, "xaxis") == ["1", "2", "3", "4"] and shown_labels(fig, "yaxis") == ["1", "2"]
    (frame,) = fig.layout.shapes
    assert (frame.x0, frame.y0) == (-0.5, 0.5)  # head 1 of layer 2
    assert fig.data[0].customdata[1][0] == "layer 2, head 1" and "%{z:.1%}" in fig.data[0].hovertemplate


def test_the_step_bars_are_the_probabilities_with_the_written_token_highlighted():
    tokens, probabilities = ["9", "8", "▁the", "0"], [0.6, 0.25, 0.1, 0.05]
    fig = step_distribution_bars(tokens, probabilities, "8", "Step 3")
    (bars,) = fig.data
    np.testing.assert_allclose(bars.x, probabilities)
    assert list(bars.marker.color).count(DRAWN_COLOUR) == 1 and bars.marker.color[1] == DRAWN_COLOUR
    assert list(fig.layout.yaxis.ticktext) == ["9", "<b>8</b>", "␣the", "0"] and list(bars.text)[0] == "60.0%"
    assert "%{x:.4f}" in bars.hovertemplate and not fig.layout.annotations
    outside = step_distribution_bars(tokens, probabilities, "7", "Step 3")
    assert DRAWN_COLOUR not in list(outside.data[0].marker.color)
    assert outside.layout.annotations[0].text == "written: 7 (not among these 4)"




def test_in_a_column_keeps_the_data_and_only_narrows_the_frame(run):
    wide = cross_attention_heatmap(run, 2, 1)
    narrow = in_a_column(cross_attention_heatmap(run, 2, 1))
    np.testing.assert_array_equal(np.array(narrow.data[0].z), run.cross[2, 1])
    assert [t.name for t in narrow.data] == [t.name for t in wide.data]  # gold and arg-max markers kept
    assert narrow.layout.title.text == "Cross-attention<br>layer 3, head 2"
    assert narrow.data[0].colorbar.thickness == 12 and narrow.data[0].colorbar.title.text == "attention weight"
    assert narrow.layout.xaxis.title.text is None and narrow.layout.yaxis.title.text is None
    assert narrow.layout.font.size == wide.layout.font.size and narrow.layout.height == wide.layout.height
    masked = in_a_column(decoder_attention_heatmap(run, 0, 0))
    assert masked.data[1].showscale is False and masked.layout.title.text.endswith("<br>layer 1, head 1")

def test_a_beam_that_goes_on_with_several_tokens_has_all_of_them_highlighted():
    tokens, probabilities = ["9", "8", "</s>", "0"], [0.6, 0.25, 0.1, 0.05]
    fig = step_distribution_bars(tokens, probabilities, ["9", "</s>"], "Beam 1")
    colours = list(fig.data[0].marker.color)
    assert [c == DRAWN_COLOUR for c in colours] == [True, False, True, False]
    assert step_distribution_bars(tokens, probabilities, [], "Beam 2").layout.annotations == ()
    assert "written: 7, 6 (not among these 4)" in step_distribution_bars(tokens, probabilities, ["7", "6"],
                                                                         "Beam 3").layout.annotations[0].text

def test_the_training_curves_plot_the_lists_on_two_axes():
    fig = training_curves([0, 10, 20, 30], [3.2, 2.1, 1.0, 0.4], [0, 30], [0.0, 0.97], "Training")
    loss, match = fig.data
    assert list(loss.x) == [0, 10, 20, 30] and list(loss.y) == [3.2, 2.1, 1.0, 0.4]
    assert list(match.x) == [0, 30] and list(match.y) == [0.0, 0.97] and match.yaxis == "y2"
    assert fig.layout.yaxis2.tickformat == ".0%" and "%{y:.1%}" in match.hovertemplate
    with pytest.raises(VizError, match="each pair must match"):
        training_curves([0, 10], [1.0])
