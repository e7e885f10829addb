"""Masked-LM figures: they show the numbers they are given, readably, with legends and hover values."""

from __future__ import annotations

import re

import numpy as np
import pytest
from transformers import AutoTokenizer

from vizcore.mlm.figures import (
    KIND_STYLE,
    lens_card_curves,
    lens_card_table,
    lens_comparison_table,
    lens_final_word_curves,
    lens_kl_curves,
    lens_table,
    logit_lens_heatmap,
    mask_attention_heatmap,
    masking_strip,
    percent,
    prediction_bars,
    rates_bars,
)
from vizcore.mlm.fill_mask import LogitLens, Prediction
from vizcore.mlm.masking import MASKED, NOT_SELECTED, RANDOM, UNCHANGED
from vizcore.mlm.masking_demo import draw_masking, measure_rates
from vizcore.model.loading import BUILTIN_MODELS, DEFAULT_MODEL


def predictions(*pairs):
    return [Prediction(token_id=i, token=w, token_str=" " + w, score=s, sequence="") for i, (w, s) in enumerate(pairs)]


def test_bars_are_best_first_with_exact_hover_and_escaped_words():
    fig = prediction_bars(predictions(("paris", 0.41), ("<script>", 0.2), ("paris", 0.0021)), "t")
    bar = fig.data[0]
    assert list(bar.x) == [0.41, 0.2, 0.0021]
    assert list(fig.layout.yaxis.ticktext) == ["paris", "&lt;script&gt;", "paris"]  # duplicates kept apart
    assert list(bar.text) == ["41.0%", "20.0%", "0.21%"]
    assert fig.layout.yaxis.autorange == "reversed" and "probability" in bar.hovertemplate
    assert fig.layout.font.size >= 14


@pytest.mark.parametrize(("p", "shown"), [(0.5, "50.0%"), (0.012, "1.2%"), (0.0031, "0.31%"), (1e-6, "<0.01%")])
def test_percentages_keep_the_digits_that_matter(p, shown):
    assert percent(p) == shown


def test_logit_lens_heatmap_rows_are_layers_and_cells_are_words():
    probs = np.array([[[0.1, 0.05]], [[0.3, 0.2]], [[0.9, 0.05]]], dtype=np.float32)  # (L1=3, M=1, k=2)
    lens = LogitLens(token_ids=np.zeros((3, 1, 2), dtype=int), tokens=[[["a", "b"]], [["c", "d"]], [["e", "<"]]],
                     probs=probs, final_token_probs=np.array([[0.01], [0.1], [0.9]], dtype=np.float32))
    fig = logit_lens_heatmap(lens, 0, "t")
    np.testing.assert_allclose(fig.data[0].z, probs[:, 0, :])
    assert list(fig.layout.yaxis.ticktext) == ["embeddings", "layer 1", "layer 2"]
    assert fig.data[0].text[2][1] == "&lt;<br>5.0%" and fig.data[0].colorbar.title.text == "probability"
    table = lens_table(lens, 0)
    assert list(table.columns) == ["layer", "rank", "word", "probability"] and len(table) == 6
    assert table.iloc[-2].tolist()[:3] == ["layer 2", 1, "e"]


def small_lens(final: list[float], kl: list[float], top: str) -> LogitLens:
    """Three rows (embeddings, layer 1, layer 2), one mask, one word per row."""
    return LogitLens(token_ids=np.zeros((3, 1, 1), dtype=int), tokens=[[[top]], [[top]], [["paris"]]],
                     probs=np.array(final, dtype=np.float32)[:, None, None],
                     final_token_probs=np.array(final, dtype=np.float32)[:, None],
                     kl_to_final=np.array(kl, dtype=np.float32)[:, None])


def test_lens_curves_show_each_lens_per_layer_told_apart_by_more_than_colour():
    lenses = {"logit lens": small_lens([0.01, 0.2, 0.9], [4.0, 2.0, 0.0], "the"),
              "tuned lens": small_lens([0.1, 0.5, 0.9], [1.5, 0.5, 0.0], "city")}
    kl = lens_kl_curves(lenses, 0, "t")
    assert [trace.name for trace in kl.data] == ["logit lens", "tuned lens"]
    np.testing.assert_allclose(kl.data[0].y, [4.0, 2.0, 0.0])
    np.testing.assert_allclose(kl.data[1].y, [1.5, 0.5, 0.0])
    assert kl.data[0].line.dash != kl.data[1].line.dash and kl.data[0].marker.symbol != kl.data[1].marker.symbol
    assert list(kl.layout.xaxis.ticktext) == ["embeddings", "layer 1", "layer 2"]
    final = lens_final_word_curves(lenses, 0, "paris", "t")
    np.testing.assert_allclose(final.data[1].y, [0.1, 0.5, 0.9], rtol=1e-6)
    assert final.layout.yaxis.title.text == "p(paris)"
    assert final.layout.yaxis.range == (0, 1.05)  # the largest value is 90 %: the whole scale
    faint = {"logit lens": small_lens([0.001, 0.01, 0.04], [4.0, 2.0, 0.0], "the")}
    low = lens_final_word_curves(faint, 0, "paris", "t").layout.yaxis  # at most 4 %: the axis ends at 5 %
    assert low.range == pytest.approx((0, 0.05)) and low.tickformat == ".1%"
    table = lens_comparison_table(lenses, 0)
    assert len(table) == 6 and table.iloc[3].tolist()[:3] == ["tuned lens", "embeddings", "city"]
    assert table["KL to final (nats)"].tolist() == pytest.approx([4.0, 2.0, 0.0, 1.5, 0.5, 0.0])


def test_lens_card_figure_shows_the_cards_numbers():
    card = {"logit": {"kl": [5.0, 3.0, 0.0], "top1": [0.0, 0.2, 1.0], "top5": [0.1, 0.4, 1.0]},
            "tuned": {"kl": [2.0, 1.0, 0.0], "top1": [0.1, 0.3, 1.0], "top5": [0.3, 0.6, 1.0]}}
    fig = lens_card_curves(card, "t")
    np.testing.assert_allclose(fig.data[0].y, card["logit"]["kl"])
    np.testing.assert_allclose(fig.data[1].y, card["tuned"]["kl"])
    table = lens_card_table(card)
    assert table["top-5 agreement, tuned"].tolist() == card["tuned"]["top5"]
    assert table["layer"].tolist() == ["embeddings", "layer 1", "layer 2"]


def test_mask_attention_heatmap_keeps_rows_and_repeated_tokens():
    matrix = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]])
    fig = mask_attention_heatmap(matrix, ["head 1", "head 2"], ["the", "[MASK]", "the"], "t", "head")
    np.testing.assert_allclose(fig.data[0].z, matrix)
    assert len(set(fig.data[0].x)) == 3 and fig.data[0].colorbar.title.text == "attention weight"  # a repeat kept
    assert "head 2 → 1: [MASK]" == fig.data[0].customdata[1][1]


def test_masking_strip_colours_each_token_by_kind_with_a_legend():
    tokenizer = AutoTokenizer.from_pretrained(str(BUILTIN_MODELS[DEFAULT_MODEL].source()))
    draw = draw_masking(tokenizer, "one two three four five six seven eight nine ten eleven twelve", 5)
    fig = masking_strip(draw, "t")
    legend = [trace.name for trace in fig.data if trace.type == "scatter" and trace.mode == "markers"]
    assert legend == [name for name, _ in KIND_STYLE.values()]
    cells = [c for row in fig.data[0].text for c in row if c]
    assert len(cells) == len(draw.tokens) == 14 and cells[0] == "[CLS]"
    rates = measure_rates(tokenizer, "one two three four five", draws=300, seed=0)
    bars = rates_bars(rates, "t")
    rows = rates.rows()
    np.testing.assert_allclose(bars.data[0].error_y.array, [2 * r["std_error"] for r in rows])
    np.testing.assert_allclose(bars.data[1].y, [0.15, 0.8, 0.1, 0.1])


def test_masking_tokens_say_what_the_rule_did_to_each_token_in_reading_order_as_text_that_wraps():
    from tests.unit.test_colours import masking_draw
    from vizcore.colours import contrast_ratio
    from vizcore.mlm.figures import masking_tokens

    draw = masking_draw()
    draw = type(draw)(**{**draw.__dict__, "tokens": ["[CLS]", "<b>", "b", "c", "d", "[SEP]"],
                         "shown": ["[CLS]", "<b>", "<mask>", "x", "d", "[SEP]"], "mask_token": "<mask>"})
    figure = masking_tokens(draw, "One draw")
    said = re.findall(r'<span class="mask-token" style="background:([^;]+);color:([^;]+);border-color:([^"]+)"'
                      r'[^>]*>([^<]*)</span>', figure.body)
    assert [text for *_, text in said] == ["[CLS]", "&lt;b&gt;", "b → &lt;mask&gt;", "c → x", "d (kept)", "[SEP]"]
    expected = [KIND_STYLE[code][1] for code in (-1, NOT_SELECTED, MASKED, RANDOM, UNCHANGED, -1)]
    assert [border for _, _, border, _ in said] == [c if c != "#ffffff" else "#555555" for c in expected]
    assert all(contrast_ratio(background, colour) >= 7 for background, colour, _, _ in said)  # a projector's 7:1
    assert len({background for background, *_ in said}) == 5  # each of the five kinds its own tint
    assert "white-space:nowrap" in figure.body and "<script" not in figure.body
    assert "chosen → &lt;mask&gt; (80 %)" in figure.body  # the legend names the mask as the model writes it
    assert figure.alt == "One draw. Replaced: b → <mask>; c → x. Chosen and left unchanged: d."
