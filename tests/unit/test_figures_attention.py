"""Explorer figures: what they send to the browser (values, labels, sizes), not how they look."""

import numpy as np
import pandas as pd

from vizcore.attention.figures import (
    HeadMap,
    attention_pair,
    downsample,
    head_grid,
    special_mass_chart,
    statistic_heatmap,
)
from vizcore.colours import DIVERGING
from vizcore.corpus.figures import role_map
from vizcore.finetune.figures import head_change_heatmap
from vizcore.plot import attention_heatmap, axis_labels, layer_head_heatmap, shown_labels
from vizcore.seq2seq.figures import alignment_accuracy_heatmap
from vizcore.why.figures import importance_heatmap


def test_downsample_is_block_means_and_keeps_small_matrices():
    m = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_allclose(downsample(m, 2), [[2.5, 4.5], [10.5, 12.5]])
    np.testing.assert_array_equal(downsample(m, 8), m)
    big = np.random.default_rng(0).random((2, 3, 100, 100))
    small = downsample(big, 24)
    assert small.shape == (2, 3, 24, 24)
    np.testing.assert_allclose(small.mean(), big.mean(), rtol=0.02)  # blocks differ in size by at most one


def test_axis_labels_are_unique_and_escape_markup():
    labels = axis_labels(["the", "<", "img", "the", "the"])
    assert len(set(labels)) == 5
    assert labels[1] == "&lt;"
    assert labels[0].rstrip("\u200b") == labels[3].rstrip("\u200b") == "the"


def test_heatmap_carries_the_matrix_and_hover_names_query_key_weight():
    m = np.array([[0.7, 0.3], [0.1, 0.9]])
    fig = attention_heatmap(m, ["a", "b"], ["a", "b"], "t")
    trace = fig.data[0]
    np.testing.assert_allclose(np.asarray(trace.z), m, atol=1e-7)
    assert "query" in trace.hovertemplate and "key" in trace.hovertemplate and "weight" in trace.hovertemplate
    assert fig.layout.font.size >= 14 and fig.layout.xaxis.tickfont.size >= 14


def test_pair_labels_are_coloured_by_segment():
    fig = attention_heatmap(np.eye(3), ["a", "b", "c"], ["a", "b", "c"], "t", np.array([0, 0, 1]), np.array([0, 0, 1]))
    ticks = fig.data[0].x  # the categories themselves: plotly's thinning keeps each label's colour
    assert "#1f5fa8" in ticks[0] and "#c2410c" in ticks[2] and fig.layout.xaxis.tickmode == "auto"


def test_grid_has_one_small_trace_per_head_and_a_clickable_marker_per_head():
    a = np.random.default_rng(0).random((3, 4, 200, 200)).astype(np.float32)
    fig = head_grid(downsample(a), "grid", selected=(1, 2))
    assert len(fig.data) == 3 * 4 + 1
    assert np.asarray(fig.data[0].z).shape == (24, 24)
    assert len(fig.data[-1].x) == 12 and fig.data[-1].text[6] == "layer 2, head 3"
    assert "layer 3, head 4" in fig.data[11].hovertemplate


def test_special_mass_chart_plots_the_mean_over_heads_per_layer():
    cls = np.array([[0.1, 0.3], [0.5, 0.7]])
    fig = special_mass_chart(cls, 1 - cls, "t")
    np.testing.assert_allclose(fig.data[0].y, [0.2, 0.6])
    np.testing.assert_allclose(fig.data[2].y, [0.8, 0.4])


def test_a_layer_head_map_labels_heads_one_based_and_carries_every_value():
    values = np.array([[0.5, -0.2, 0.1], [0.0, 0.3, -0.4]])
    fig = layer_head_heatmap(values, "t", "score", scale=DIVERGING, marked=[(1, 2)])
    trace = fig.data[0]
    np.testing.assert_array_equal(np.asarray(trace.z), values)
    assert (trace.zmin, trace.zmax) == (-0.5, 0.5) and trace.colorbar.title.text == "score"
    assert shown_labels(fig, "xaxis") == ["1", "2", "3"] and shown_labels(fig, "yaxis") == ["1", "2"]
    assert fig.layout.yaxis.autorange == "reversed"  # layer 1 at the top
    assert trace.customdata[1][2] == "layer 2, head 3" and "score %{z:.4f}" in trace.hovertemplate
    assert trace.text[1][2] == "✕" and trace.text[0][0] == ""
    plain = layer_head_heatmap(np.abs(values), "t", "score").data[0]
    assert (plain.zmin, plain.zmax) == (0.0, 0.5)


def test_every_layer_head_map_of_the_app_is_the_one_map():
    """The Explorer's statistics, the fine-tuning change, head importance, alignment accuracy and the corpus
    roles all come from ``plot.layer_head_heatmap``: the same axes, hover names and cell gaps."""
    values = np.array([[0.5, 0.2, 0.1], [0.0, 0.3, 0.4]])
    roles = pd.DataFrame({"layer": [0, 0, 0, 1, 1, 1], "head": [0, 1, 2, 0, 1, 2], "role": ["broad"] * 6,
                          "detail": ["d"] * 6, "relation": [None] * 6})
    reference = layer_head_heatmap(values, "t", "v")
    for fig in (statistic_heatmap(values, "v", "t"), head_change_heatmap(values, "v", "t"),
                importance_heatmap(values, "t", "v"), alignment_accuracy_heatmap(values, "t"), role_map(roles, "t")):
        trace = fig.data[0]
        for axis in ("xaxis", "yaxis"):
            assert fig.layout[axis].to_plotly_json() == reference.layout[axis].to_plotly_json() or (
                axis == "yaxis" and fig.layout.yaxis.title.text == "decoder layer")
        assert trace.customdata[1][2].startswith("layer 2, head 3") and (trace.xgap, trace.ygap) == (2, 2)


def test_two_heads_are_one_figure_side_by_side_on_one_column_of_queries_when_as_long():
    """The Explorer's comparison: two figures in two page columns left each map about 60 px at 1024 x 768."""
    a, b = np.eye(4, dtype=np.float32), np.full((4, 4), 0.25, dtype=np.float32)
    first = HeadMap(a, ["[CLS]", "too", "tired", "[SEP]"], ["[CLS]", "too", "tired", "[SEP]"])
    second = HeadMap(b, ["[CLS]", "too", "wide", "[SEP]"], ["[CLS]", "too", "wide", "[SEP]"])
    fig = attention_pair(first, second, ("first", "second"), "Layer 1, head 1")
    maps = [trace for trace in fig.data if trace.type == "heatmap"]
    assert np.array_equal(maps[0].z, a) and np.array_equal(maps[1].z, b)
    assert [bool(m.showscale) for m in maps] == [False, True]  # one colour bar, 0..1 for both
    assert (maps[0].zmin, maps[0].zmax) == (maps[1].zmin, maps[1].zmax) == (0.0, 1.0)
    assert list(maps[0].y) == list(maps[1].y) == ["[CLS]", "too", "tired/wide", "[SEP]"]
    assert fig.layout.yaxis2.matches == "y"
    assert list(maps[1].x) == ["[CLS]", "too", "wide", "[SEP]"]  # each map keeps its own keys
    assert fig.layout.xaxis.title.text == "key · first" and fig.layout.xaxis2.title.text == "key · second"
    assert fig.layout.xaxis2.domain[0] > fig.layout.xaxis.domain[1]  # side by side


def test_two_heads_of_different_lengths_are_one_above_the_other_each_with_its_labels():
    long, short = ["[CLS]", "a", "b", "c", "[SEP]"], ["[CLS]", "a", "[SEP]"]
    fig = attention_pair(HeadMap(np.eye(5), long, long), HeadMap(np.eye(3), short, short), ("one", "two"), "T")
    maps = [trace for trace in fig.data if trace.type == "heatmap"]
    assert list(maps[0].y) == long and list(maps[1].y) == short and fig.layout.yaxis2.matches is None
    assert fig.layout.yaxis2.domain[1] < fig.layout.yaxis.domain[0]  # the second below the first
    assert shown_labels(fig, "yaxis") == long and shown_labels(fig, "yaxis2") == short
