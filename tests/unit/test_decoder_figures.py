"""The generation page's figures carry the data they claim: the cut-off after exactly the kept tokens,
the drawn token highlighted, masked cells exactly above the diagonal, the lens ending at the logits,
the beam tree's nodes and parents."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.tiny_decoders import save_tiny_decoder
from vizcore.decoder.beam import beam_search
from vizcore.decoder.figures import (
    DRAWN_COLOUR,
    beam_table,
    beam_tree,
    causal_mask_heatmap,
    lens_curve,
    lens_heatmap,
    new_token_attention,
    next_token_bars,
)
from vizcore.decoder.sampling import Settings
from vizcore.decoder.steps import candidates, step_view
from vizcore.decoder.vocabulary import banned_tokens
from vizcore.model.loading import load_model
from vizcore.plot import shown_labels

PROMPT = "She opened the"


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return load_model(str(save_tiny_decoder("gpt2", tmp_path_factory.mktemp("gpt2"))), device="cpu", head="causal-lm")


@pytest.mark.parametrize(("settings", "kept"), [(Settings(1.0, top_k=5), 5), (Settings(0.0), 1),
                                               (Settings(2.0, top_k=3), 3)])
def test_the_cut_off_falls_after_the_kept_tokens_and_the_drawn_one_is_orange(gpt2, settings, kept):
    view = step_view(gpt2, PROMPT, settings=settings)
    top = candidates(gpt2, view, count=12, drawn=int(view.next.plain.argmax()))
    assert top.kept == kept
    fig = next_token_bars(top, settings, "Next token")
    (line,) = [s for s in fig.layout.shapes if s.type == "line"]
    assert line.y0 == line.y1 == kept - 0.5
    plain, shaped = fig.data
    np.testing.assert_allclose(plain.x, top.plain)
    np.testing.assert_allclose(shaped.x, top.shaped)
    assert list(shaped.text[kept:]) == ["cut"] * (12 - kept)
    assert list(shaped.marker.color).index(DRAWN_COLOUR) == 0 and list(shaped.marker.color).count(DRAWN_COLOUR) == 1
    assert "cut-off" in fig.layout.annotations[0].text


def test_no_cut_off_line_when_every_bar_is_kept(gpt2):
    view = step_view(gpt2, PROMPT, settings=Settings(1.0))
    fig = next_token_bars(candidates(gpt2, view, count=10), Settings(1.0), "Next token")
    assert not [s for s in fig.layout.shapes if s.type == "line"]
    drawable = 30_522 - int(banned_tokens(gpt2).never.sum())  # the never-trained entries are never kept
    assert fig.layout.title.text.endswith(f" · nothing cut: all {drawable:,} tokens kept")  # in the title
    np.testing.assert_allclose(fig.data[0].x, fig.data[1].x)


def test_the_causal_mask_figure_marks_exactly_the_cells_above_the_diagonal(gpt2):
    view = step_view(gpt2, PROMPT, (1010, 2003))
    count = len(view.tokens)
    fig = causal_mask_heatmap(view.attention[1, 2], view.tokens, "Causal mask")
    weights, masked = np.array(fig.data[0].z, dtype=float), np.array(fig.data[1].z, dtype=float)
    above = np.triu(np.ones((count, count), dtype=bool), k=1)
    assert np.array_equal(np.isnan(weights), above) and np.array_equal(masked == 1.0, above)
    np.testing.assert_allclose(weights[~above], view.attention[1, 2][~above])
    assert fig.data[0].colorbar.title.text == "attention weight"
    assert fig.layout.shapes[0].y0 == count - 1.5  # the newest token's row is framed


def test_the_new_tokens_attention_rows_are_heads_or_layers(gpt2):
    view = step_view(gpt2, PROMPT, (1010,))
    heads = new_token_attention(view.newest_attention, view.tokens, 1, "Heads")
    np.testing.assert_allclose(np.array(heads.data[0].z), view.attention[1, :, -1, :], atol=1e-7)
    layers = new_token_attention(view.newest_attention, view.tokens, None, "Layers")
    np.testing.assert_allclose(np.array(layers.data[0].z), view.attention[:, :, -1, :].mean(1), atol=1e-6)
    assert shown_labels(layers, "yaxis") == ["layer 1", "layer 2"]


def test_the_lens_figures_end_at_the_models_distribution(gpt2):
    view = step_view(gpt2, PROMPT, lens_top=4)
    heat = lens_heatmap(view.lens, "Lens")
    z = np.array(heat.data[0].z, dtype=float)
    assert z.shape == (3, 4)
    np.testing.assert_allclose(z[-1], np.sort(view.next.plain)[::-1][:4], rtol=1e-5)
    curve = lens_curve(view.lens, "Lens")
    assert curve.data[0].y[-1] == pytest.approx(float(view.next.plain.max()), rel=1e-5)


def test_the_beam_tree_draws_every_beam_and_the_table_lists_them(gpt2):
    search = beam_search(gpt2, PROMPT, width=3, max_new_tokens=4, stop=set())
    fig = beam_tree(search, steps=2, title="Beams")
    nodes = fig.data[1]
    assert len(nodes.x) == 1 + 3 + 3  # the prompt, then three beams per step
    assert list(nodes.text[1:4]) == [b.token for b in search.steps[0].beams]
    np.testing.assert_allclose(nodes.marker.color[4:], [b.score for b in search.steps[1].beams], rtol=1e-6)
    edges_y = [y for y in fig.data[0].y if y is not None]
    assert edges_y[6:] == [v for b in (search.steps[1].beams) for v in (b.parent, search.steps[1].beams.index(b))]
    assert fig.data[1].marker.colorbar.title.text == "log-probability"
    table = beam_table(search)
    assert len(table) == 3 * 3 + 3 and set(table["status"]) == {"running", "finished"}
    assert table["from beam"].dropna().between(1, 3).all()
