"""One colour scale per quantity (``vizcore.colours``): every figure of a quantity draws with its scale and
range, the browser's renderer gets the same stops, the screen and the exports agree, every heatmap has a
legend, text on coloured cells is readable, and categories are told apart without colour."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
import torch
from plotly.colors import sample_colorscale

from tests.support.synthetic import synthetic_run
from vizcore.attention.figures import difference_heatmap, head_grid, special_mass_chart, statistic_heatmap
from vizcore.attention.payload import attention_payload
from vizcore.attention.renderer import RENDERER_JS, attention_view_html, script_json
from vizcore.colours import (
    ATTENTION,
    ATTENTION_BLOCKS,
    CHANGE,
    DIVERGING,
    PROBABILITY,
    SCALES,
    SEQUENTIAL,
    colour_at,
    contrast_ratio,
    relative_luminance,
    text_colour,
)
from vizcore.corpus.figures import role_map
from vizcore.decoder.figures import causal_mask_heatmap, lens_heatmap, new_token_attention
from vizcore.decoder.steps import Lens
from vizcore.embeddings.figures import cosine_heatmap
from vizcore.finetune.figures import confusion_heatmap, head_change_heatmap, segment_strip, tiny_attention_grid
from vizcore.finetune.qa_figures import span_probability_bars
from vizcore.finetune.qa_predict import QAReading
from vizcore.finetune.token_figures import tag_probability_heatmap
from vizcore.mlm.figures import (
    cls_attention_bars,
    cls_share_heatmaps,
    logit_lens_heatmap,
    mask_attention_heatmap,
    masking_strip,
)
from vizcore.mlm.fill_mask import LogitLens
from vizcore.mlm.masking import MASKED, NOT_SELECTED, RANDOM, UNCHANGED
from vizcore.mlm.masking_demo import MaskingDraw
from vizcore.mlm.nsp import NextSentence
from vizcore.plot import attention_heatmap, layer_head_heatmap, matrix_heatmap
from vizcore.seq2seq.figures import (
    alignment_accuracy_heatmap,
    cross_attention_heatmap,
    decoder_attention_heatmap,
    encoder_attention_heatmap,
)
from vizcore.seq2seq.record import Seq2SeqRun
from vizcore.why.figures import attribution_text, importance_heatmap, method_correlation_heatmap, patching_heatmap

RNG = np.random.default_rng(0)
TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]"]


def weights(*shape: int, top: float = 0.4) -> np.ndarray:
    """Attention-like weights in [0, top]: far below 1, so a range scaled to the maximum would show."""
    return (RNG.random(shape) * top).astype(np.float32)


def heatmap_of(fig: go.Figure) -> go.Heatmap:
    return next(trace for trace in fig.data if trace.type == "heatmap")


def scale_of(fig: go.Figure) -> tuple[list, tuple[float, float], str]:
    """(colorscale, (low, high), colour-bar title) of a figure's heatmap, read from its trace or coloraxis."""
    heat = heatmap_of(fig)
    if heat.coloraxis:
        axis = fig.layout[heat.coloraxis]
        return [[float(p), c] for p, c in axis.colorscale], (axis.cmin, axis.cmax), axis.colorbar.title.text
    return [[float(p), c] for p, c in heat.colorscale], (heat.zmin, heat.zmax), heat.colorbar.title.text


def seq2seq_run() -> Seq2SeqRun:
    i, o = 4, 3
    causal = np.tril(weights(2, 2, o, o))
    return Seq2SeqRun(model="m", text="a b c d", input_tokens=list("abcd"), decoder_tokens=["<s>", "1", "2"],
                      output_tokens=list("123"), encoder=weights(2, 2, i, i), decoder=causal,
                      cross=weights(2, 2, o, i), gold=None)


def next_sentence() -> NextSentence:
    share = {part: torch.tensor(weights(2, 3)) for part in ("A", "B", "special")}
    return NextSentence(model="m", tokens=TOKENS + ["it", "[SEP]"], segments=[0, 0, 0, 0, 0, 1, 1], is_next=0.7,
                        logits=(1.0, 0.0), cls_attention=torch.tensor(weights(2, 3, 7)), share=share,
                        special=[True, False, False, False, True, False, True])


def lens_probs() -> np.ndarray:
    return np.array([[0.1, 0.05], [0.3, 0.2], [0.9, 0.05]], dtype=np.float32)


ATTENTION_FIGURES = {
    "one head (Home, Explorer, Compare, exports)": lambda: attention_heatmap(weights(5, 5), TOKENS),
    "masked position's attention (MLM)": lambda: mask_attention_heatmap(weights(2, 5), ["h1", "h2"], TOKENS, "t",
                                                                       "head"),
    "newest token's attention (Generate)": lambda: new_token_attention(weights(2, 3, 5), TOKENS, None, "t"),
    "causal head (Generate)": lambda: causal_mask_heatmap(np.tril(weights(5, 5)), TOKENS, "t"),
    "step by step weights (Inside)": lambda: matrix_heatmap(weights(5, 5), "A", scale=ATTENTION),
    "encoder self-attention (Translate)": lambda: encoder_attention_heatmap(seq2seq_run(), 0, 1),
    "decoder self-attention (Translate)": lambda: decoder_attention_heatmap(seq2seq_run(), 1, 0),
    "cross-attention (Translate)": lambda: cross_attention_heatmap(seq2seq_run(), 0, 0),
    "[CLS] shares (NSP)": lambda: cls_share_heatmaps(next_sentence(), "t"),
    "tiny Transformer's heads (Fine-tuning)": lambda: tiny_attention_grid(weights(1, 2, 3, 3), np.arange(3), 5),
}


@pytest.mark.parametrize("build", ATTENTION_FIGURES.values(), ids=ATTENTION_FIGURES.keys())
def test_every_attention_heatmap_uses_the_attention_scale_on_a_fixed_range(build):
    colorscale, zrange, legend = scale_of(build())
    assert colorscale == ATTENTION.colorscale
    assert zrange == (0.0, 1.0)  # weights of at most 0.4: not stretched to their maximum
    assert legend  # every heatmap has a named colour bar


SCALED = {  # (figure, scale, how its range is set)
    "difference (Compare)": (lambda: difference_heatmap(weights(4, 4), weights(4, 4), TOKENS[:4], TOKENS[:4], "t"),
                             DIVERGING, "symmetric"),
    "Q, K, scores (Inside)": (lambda: matrix_heatmap(RNG.normal(size=(4, 3)), "Q"), DIVERGING, "symmetric"),
    "patching": (lambda: patching_heatmap(RNG.normal(size=(3, 4)), TOKENS[:4], TOKENS[:4], "t"), DIVERGING,
                 "symmetric"),
    "method correlation": (lambda: method_correlation_heatmap(np.eye(2), ["x", "y"]), DIVERGING, "symmetric"),
    "signed importance": (lambda: importance_heatmap(RNG.normal(size=(2, 3)), "t", "drop", diverging=True),
                          DIVERGING, "symmetric"),
    "logit lens (MLM)": (lambda: logit_lens_heatmap(LogitLens(
        token_ids=np.zeros((3, 1, 2), dtype=int), tokens=[[["a", "b"]]] * 3, probs=lens_probs()[:, None, :],
        final_token_probs=np.zeros((3, 1), dtype=np.float32)), 0, "t"), PROBABILITY, "fixed"),
    "logit lens (Generate)": (lambda: lens_heatmap(Lens(token_ids=np.zeros((3, 2), dtype=int),
                                                        tokens=[["a", "b"]] * 3, probs=lens_probs(),
                                                        final_token_probs=np.zeros(3, dtype=np.float32)), "t"),
                              PROBABILITY, "fixed"),
    "tag probabilities (NER)": (lambda: tag_probability_heatmap(["a", "b"], np.full((2, 3), 0.3), ["O", "B", "I"]),
                                PROBABILITY, "fixed"),
    "alignment accuracy (Translate)": (lambda: alignment_accuracy_heatmap(weights(2, 3)), PROBABILITY, "fixed"),
    "fine-tuning change": (lambda: head_change_heatmap(weights(2, 3), "change", "t"), CHANGE, "max"),
    "importance": (lambda: importance_heatmap(weights(2, 3), "t", "drop"), CHANGE, "max"),
    "head statistics": (lambda: statistic_heatmap(weights(2, 3) + 1, "entropy", "t"), SEQUENTIAL, "data"),
    "cosine (Embeddings)": (lambda: cosine_heatmap(np.eye(3) * 0.5 + 0.5, ["1", "2", "3"], "t"), SEQUENTIAL, "data"),
    "confusion counts": (lambda: confusion_heatmap(np.array([[3, 1], [0, 4]]), ["x", "y"]), SEQUENTIAL, "max"),
}


@pytest.mark.parametrize(("build", "scale", "rule"), SCALED.values(), ids=SCALED.keys())
def test_every_other_quantity_uses_its_own_scale_and_rule(build, scale, rule):
    colorscale, (low, high), legend = scale_of(build())
    assert colorscale == scale.colorscale and legend
    if rule == "symmetric":
        assert low == -high
    elif rule == "max":
        assert low == 0
    elif rule == "fixed" and scale is PROBABILITY:
        assert (low, high) == (0.0, 1.0)


def test_sequential_scales_run_from_light_to_dark_and_the_diverging_one_is_white_at_zero():
    for scale in (ATTENTION, PROBABILITY, SEQUENTIAL, CHANGE):
        luminance = [relative_luminance(c) for c in scale.colours]
        assert all(a > b for a, b in zip(luminance, luminance[1:])), scale.quantity  # more is darker
    assert relative_luminance(ATTENTION.colour_at(0.0, (0, 1))) > 0.75
    assert DIVERGING.colour_at(0.0, (-1, 1)) == "#f7f7f7"


def test_the_attention_colour_follows_the_square_root_of_the_weight():
    """Weight w is drawn at ramp position √w: a quarter in the middle of the ramp, and a diffuse head's 1/512
    off the colour of 0."""
    ramp = ATTENTION.colours
    assert ATTENTION.colour_at(0.25, (0, 1)) == ramp[(len(ramp) - 1) // 2]
    assert contrast_ratio(ATTENTION.colour_at(1 / 512, (0, 1)), ATTENTION.colour_at(0.0, (0, 1))) > 1.08


@pytest.mark.parametrize("scale", SCALES.values(), ids=SCALES.keys())
def test_python_colours_are_the_colours_plotly_draws(scale):
    for fraction in np.linspace(0, 1, 37):
        ours = np.array([int(scale.colour_at(fraction, (0, 1))[i:i + 2], 16) for i in (1, 3, 5)])
        plotly = np.array([float(v) for v in re.findall(r"[\d.]+", sample_colorscale(scale.colorscale, [fraction])[0])])
        assert np.abs(ours - plotly).max() <= 1, fraction


# ---- the renderer (Home, Explorer heatmap and grid, HTML export, notebook widget) ---------------------

def test_the_payload_carries_the_python_scales_with_the_heatmaps_range():
    run = synthetic_run(layers=2, heads=2)
    payload = attention_payload(run)
    assert payload["scales"]["weight"] == ATTENTION.to_payload()
    colorscale, zrange, legend = scale_of(attention_heatmap(run.attention[0, 0], run.tokens))
    weight = payload["scales"]["weight"]
    assert weight["stops"] == colorscale and tuple(weight["range"]) == zrange and weight["quantity"] == legend
    grid = payload["scales"]["grid"]
    assert grid["stops"] == ATTENTION_BLOCKS.colorscale and grid["range"] == [0.0, payload["grid"]["max"]]
    colorscale, zrange, _ = scale_of(head_grid(run.attention, "grid"))  # the plotly grid, same colours
    assert colorscale == grid["stops"] and zrange == (0.0, payload["grid"]["max"])


def test_the_html_export_and_the_notebook_widget_carry_the_same_scales():
    run = synthetic_run(layers=1, heads=1)
    assert script_json(ATTENTION.to_payload()) in attention_view_html(run)
    notebook = pytest.importorskip("vizcore.notebook")
    pytest.importorskip("anywidget")
    assert notebook.attention_widget(run).payload["scales"]["weight"] == ATTENTION.to_payload()


def test_the_renderer_has_no_colour_ramp_of_its_own():
    script = RENDERER_JS.read_text()
    assert not re.search(r'\[\s*"#[0-9a-fA-F]{6}"(\s*,\s*"#[0-9a-fA-F]{6}"){2,}', script)


# ---- readable text on coloured cells --------------------------------------------------------------

@pytest.mark.parametrize("scale", SCALES.values(), ids=SCALES.keys())
def test_black_or_white_text_reads_on_every_colour_of_every_scale(scale):
    for fraction in np.linspace(0, 1, 101):
        background = scale.colour_at(fraction, (0, 1))
        assert contrast_ratio(background, text_colour(background)) >= 4.5, (scale.quantity, fraction)


def masking_draw() -> MaskingDraw:
    return MaskingDraw(seed=0, tokens=["[CLS]", "a", "b", "c", "d", "[SEP]"],
                       shown=["[CLS]", "a", "[MASK]", "x", "d", "[SEP]"],
                       kinds=np.array([NOT_SELECTED, NOT_SELECTED, MASKED, RANDOM, UNCHANGED, NOT_SELECTED]),
                       special=np.array([True, False, False, False, False, True]))


WRITTEN = {
    "layer x head map": lambda: layer_head_heatmap(np.linspace(0, 1, 6).reshape(2, 3), "t", "v",
                                                   text=[["a", "b", "c"], ["d", "e", "f"]]),
    "logit lens": SCALED["logit lens (MLM)"][0],
    "confusion": SCALED["confusion counts"][0],
    "patching": SCALED["patching"][0],
    "correlation": lambda: method_correlation_heatmap(np.array([[1.0, -0.3], [-0.3, 1.0]]), ["x", "y"]),
    "cosine": SCALED["cosine (Embeddings)"][0],
    "masking strip": lambda: masking_strip(masking_draw(), "t"),
    "segment strip": lambda: segment_strip(["[CLS]", "a", "[SEP]", "b", "[SEP]"], [0, 0, 0, 1, 1]),
    "head roles": lambda: role_map(pd.DataFrame({
        "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "role": ["syntactic", "positional", "broad", "mixed"],
        "detail": ["d"] * 4, "relation": ["nsubj", None, None, None]}), "t"),
}


@pytest.mark.parametrize("build", WRITTEN.values(), ids=WRITTEN.keys())
def test_text_written_on_cells_contrasts_with_each_cell(build):
    fig = build()
    heat = heatmap_of(fig)
    assert not heat.texttemplate  # plotly's own cell text: one colour per trace, as low as 2.5:1
    layer = next(trace for trace in fig.data if trace.name == "cell text")
    xs = list(range(len(heat.z[0]))) if heat.x is None else list(heat.x)
    ys = list(range(len(heat.z))) if heat.y is None else list(heat.y)
    assert len(layer.text) > 0
    for x, y, colour in zip(layer.x, layer.y, layer.textfont.color):
        value = heat.z[ys.index(y)][xs.index(x)]
        cell = colour_at(heat.colorscale, value, (heat.zmin, heat.zmax))
        assert contrast_ratio(cell, colour) >= 4.5, (x, y, cell, colour)


def test_the_cross_on_a_masked_cell_reads_on_its_grey():
    masked = causal_mask_heatmap(np.tril(weights(4, 4)), TOKENS[:4], "t").data[1]
    assert contrast_ratio(masked.textfont.color, masked.colorscale[0][1]) >= 4.5 and "✕" in masked.text[0][1]


def test_coloured_tokens_of_an_attribution_have_readable_text():
    html = attribution_text(["a", "b", "c", "d", "e"], {"m": np.array([-1.0, -0.45, 0.0, 0.5, 1.0])})
    pairs = re.findall(r"background:(#[0-9a-f]{6});color:(#[0-9a-f]{6})", html)
    assert len(pairs) == 5 and all(contrast_ratio(b, t) >= 4.5 for b, t in pairs)


# ---- categories carry a label or a pattern, not colour alone -------------------------------------------

def test_sentence_b_labels_are_in_italics_as_well_as_orange():
    fig = attention_heatmap(np.eye(3), ["a", "b", "c"], None, "t", np.array([0, 0, 1]), np.array([0, 0, 1]))
    ticks = list(fig.data[0].x)  # the categories are the labels (plotly thins them; each keeps its markup)
    assert "<i>" not in ticks[0] and "<i>c</i>" in ticks[2]
    script = RENDERER_JS.read_text()
    assert '"italic "' in script and 'fontStyle = pair && group.segment === 1 ? "italic"' in script


def test_cls_and_sep_lines_differ_in_dash_and_marker():
    fig = special_mass_chart(weights(2, 3), weights(2, 3), "t")
    cls, sep = fig.data[0], fig.data[2]
    assert cls.line.dash != sep.line.dash and cls.marker.symbol != sep.marker.symbol


def test_the_parts_of_an_nsp_pair_differ_in_pattern():
    fig = cls_attention_bars(next_sentence(), 0, 0, "t")
    assert len({trace.marker.pattern.shape for trace in fig.data}) == 3
    assert [trace.name for trace in fig.data] == ["sentence A", "sentence B", "[CLS] / [SEP]"]


def test_every_masking_outcome_is_written_in_its_cell():
    text = [cell for row in heatmap_of(masking_strip(masking_draw(), "t")).text for cell in row if cell]
    assert text[2] == "b<br>→ [MASK]" and text[3] == "c<br>→ x" and text[4] == "d<br>(kept)" and text[1] == "a"


def test_the_answer_spans_of_a_qa_reading_differ_in_hatching():
    words = ["a", "b", "c", "d", "e", "f"]
    probs = np.full(6, 1 / 6)
    reading = QAReading(" ".join(words), "q?", tuple(words), tuple((2 * i, 2 * i + 1) for i in range(6)), probs,
                        probs, 1, 2, (2, 5), (2, 3), (4, 7), 1)
    fig = span_probability_bars(reading)
    shapes = {trace.name: trace.marker.pattern.shape for trace in fig.data}
    assert len(shapes) == 4 and len(set(shapes.values())) == 4  # predicted, gold, both, the rest
