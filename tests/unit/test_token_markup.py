"""Token text in plotly figures is shown as typed: plotly's text reads a little HTML, so MPNet's and RoBERTa's
``<s>`` was drawn as an empty strikethrough tag (step by step's row labels on all-mpnet-base-v2 read "0: ")."""

import html

from vizcore.finetune.figures import segment_strip
from vizcore.inside.figures import token_labels
from vizcore.plot import axis_labels

TOKENS = ["<s>", "a&b", "<b>bold</b>", "</s>"]


def test_tick_labels_escape_what_plotly_would_read_as_markup():
    assert token_labels(TOKENS) == [f"{i}: {html.escape(t, quote=False)}" for i, t in enumerate(TOKENS)]
    assert axis_labels(TOKENS) == [html.escape(t, quote=False) for t in TOKENS]


def test_the_segment_strip_writes_tokens_as_typed():
    fig = segment_strip(TOKENS, [0, 0, 1, 1], per_row=4)
    cells = [str(cell).split("<br>")[0] for cell in fig.data[0].text[0]]
    assert cells == [html.escape(t, quote=False) for t in TOKENS]
