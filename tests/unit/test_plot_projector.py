"""The projector setting's charts (``vizcore.plot.for_projector``, ui/layout.py ``for_screen``): every text of a
re-laid figure at least 20 px, the body font 24 px, the figure taller by as much, long titles on several lines,
at most 32 labels an axis, and the figure it came from unchanged (charts are cached and shared). And every chart
a page shows goes through ``for_screen`` (read from the source: a chart drawn past it would stay small)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from vizcore.plot import (
    PROJECTOR_FONT_SIZE,
    PROJECTOR_MIN_SIZE,
    PROJECTOR_TITLE_CHARS,
    attention_heatmap,
    for_projector,
    layer_head_heatmap,
    matrix_heatmap,
)

ROOT = Path(__file__).resolve().parents[2]
LONG_TITLE = "Recovered share: one hidden state at one position patched from the clean run into the corrupted one"


def font_sizes(node, key: str = "") -> list[float]:
    """Every size under a key ending in 'font' (plotly JSON), or named *fontSize (vega-lite), anywhere in ``node``."""
    found = []
    if isinstance(node, dict):
        for name, value in node.items():
            if key.endswith("font") and name == "size":
                found += list(np.ravel(value)) if isinstance(value, (list, tuple)) else [value]
            elif name.lower().endswith("fontsize") and isinstance(value, (int, float)):
                found.append(value)
            else:
                found += font_sizes(value, name)
    elif isinstance(node, list):
        for item in node:
            found += font_sizes(item, key)
    return found


def charts() -> dict[str, go.Figure]:
    rng = np.random.default_rng(0)
    tokens = [f"tok{i}" for i in range(12)]
    return {"attention": attention_heatmap(rng.dirichlet(np.ones(12), 12), tokens, title="Layer 3, head 1"),
            "matrix": matrix_heatmap(rng.normal(size=(10, 40)), "Q", row_title="token", col_title="dimension"),
            "layer x head": layer_head_heatmap(rng.random((6, 12)), LONG_TITLE, "recovered")}


@pytest.mark.parametrize("name", list(charts()))
def test_every_text_of_a_chart_is_at_least_20_px_on_a_projector_and_the_chart_grows(name):
    figure = charts()[name]
    before = json.loads(figure.to_json())
    shown = json.loads(for_projector(figure).to_json())
    assert json.loads(figure.to_json()) == before  # the cached figure is left as it was
    layout = shown["layout"]
    assert layout["font"]["size"] == PROJECTOR_FONT_SIZE
    sizes = font_sizes(shown)
    assert sizes and min(sizes) >= PROJECTOR_MIN_SIZE, sorted(sizes)[:5]
    assert len(sizes) > len(font_sizes(before))  # titles, ticks and the colour bar got sizes of their own
    # (an unset size would be filled by Streamlit's chart theme with its 15.75 px)
    for axis in ("xaxis", "yaxis"):
        assert layout[axis]["tickfont"]["size"] >= PROJECTOR_MIN_SIZE
        assert layout[axis]["title"]["font"]["size"] >= PROJECTOR_MIN_SIZE and layout[axis]["automargin"]
    grown = PROJECTOR_FONT_SIZE / before["layout"]["font"]["size"]
    assert layout["height"] == round(before["layout"]["height"] * grown)


def test_re_laying_twice_is_re_laying_once():
    import altair as alt
    import pandas as pd

    once = for_projector(charts()["attention"])
    assert json.loads(for_projector(once).to_json()) == json.loads(once.to_json())
    chart = alt.Chart(pd.DataFrame({"x": [0, 1]})).mark_point().encode(x="x:Q")
    assert for_projector(for_projector(chart)).to_dict() == for_projector(chart).to_dict()


def test_a_long_title_is_broken_onto_lines_and_the_chart_moves_down_for_them():
    figure = charts()["layer x head"]
    shown = for_projector(figure)
    lines = shown.layout.title.text.split("<br>")
    assert len(lines) >= 2 and max(map(len, lines)) <= PROJECTOR_TITLE_CHARS
    assert " ".join(lines) == LONG_TITLE
    assert shown.layout.margin.t > round(figure.layout.margin.t * PROJECTOR_FONT_SIZE / 16)


def test_a_colour_bar_shared_by_subplots_gets_sizes_too():
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=1, cols=2)
    for col in (1, 2):
        figure.add_trace(go.Heatmap(z=[[0.1, 0.9]], coloraxis="coloraxis"), row=1, col=col)
    figure.update_layout(coloraxis={"colorbar": {"title": {"text": "share"}}}, font={"size": 16})
    colorbar = for_projector(figure).layout.coloraxis.colorbar
    assert colorbar.title.font.size >= PROJECTOR_MIN_SIZE and colorbar.tickfont.size >= PROJECTOR_MIN_SIZE


def test_token_axes_leave_their_labels_to_plotly_to_thin_by_length():
    """No tick list of ours on a token axis: plotly labels every n-th category to fit the axis's length in the
    browser (tests/e2e measure that no two labels overlap)."""
    tokens = [f"w{i}" for i in range(100)]
    figure = attention_heatmap(np.full((100, 100), 0.01), tokens)
    for axis in (for_projector(figure).layout.xaxis, for_projector(figure).layout.yaxis):
        assert (axis.type, axis.tickmode, axis.tickvals, axis.ticktext) == ("category", "auto", None, None)


def test_positions_named_by_a_tick_list_become_categories_on_the_projector():
    """Bars of words at positions 0..n-1 named by ticktext: on the projector the words are the categories (plotly
    thins them to the chart's height), each bar keeps its word and value, a line between positions stays put."""
    words = ["the", "a", "the", "an"]
    figure = go.Figure(go.Bar(x=[0.4, 0.3, 0.2, 0.1], y=[0, 1, 2, 3], orientation="h"))
    figure.update_yaxes(tickmode="array", tickvals=[0, 1, 2, 3], ticktext=words, autorange="reversed")
    figure.add_hline(y=1.5)
    shown = for_projector(figure)
    assert [w.replace("\u200b", "") for w in shown.data[0].y] == words and len(set(shown.data[0].y)) == 4
    assert list(shown.data[0].x) == [0.4, 0.3, 0.2, 0.1]
    axis = shown.layout.yaxis
    assert (axis.type, axis.tickvals, axis.ticktext) == ("category", None, None)
    assert shown.layout.shapes[0].y0 == 1.5
    assert figure.data[0].y == (0, 1, 2, 3)  # the figure itself untouched
    other = go.Figure(go.Bar(x=[1, 2], y=[5, 7]))
    other.update_yaxes(tickmode="array", tickvals=[5, 7], ticktext=["five", "seven"])
    assert list(for_projector(other).layout.yaxis.ticktext) == ["five", "seven"]  # not positions 0..n-1: as it was


def test_an_altair_chart_is_re_laid_too():
    import altair as alt
    import pandas as pd

    chart = alt.Chart(pd.DataFrame({"step": [0, 1], "loss": [1.0, 0.5]})).mark_line().encode(
        x="step:Q", y="loss:Q").properties(height=200).configure_axis(labelFontSize=14, titleFontSize=16)
    shown = for_projector(chart).to_dict()
    assert min(font_sizes(shown)) >= PROJECTOR_MIN_SIZE
    assert shown["config"]["axis"]["labelFontSize"] == 21 and shown["height"] == 300
    assert shown["config"]["legend"]["labelFontSize"] >= PROJECTOR_MIN_SIZE  # vega-lite's own 10 px replaced
    assert chart.to_dict()["config"]["axis"]["labelFontSize"] == 14


def test_every_chart_a_page_shows_goes_through_for_screen():
    unwrapped = []
    for path in [*ROOT.glob("pages/*.py"), *ROOT.glob("ui/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("plotly_chart", "altair_chart", "vega_lite_chart")):
                first = node.args[0] if node.args else None
                if not (isinstance(first, ast.Call) and getattr(first.func, "id", "") == "for_screen"):
                    unwrapped.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert unwrapped == []


def test_a_presenters_fitted_figure_writes_its_colour_bars_titles_along_the_bars_and_lets_plotly_angle_labels():
    """Presenter mode's figures (``ui.layout.fitted``): each colour bar's title turned along its bar, a trace's or a
    shared colour axis's; x labels at plotly's own angle (the first of 0, 30, 90 degrees at which they do not
    overlap), not the figure's; the figure given is left as it was (it may be a cached one)."""
    from ui.layout import fitted

    heatmap = go.Figure(go.Heatmap(z=[[0, 1], [1, 0]], colorbar={"title": {"text": "attention weight"}}),
                        layout={"title": {"text": "A head"}, "height": 300, "xaxis": {"tickangle": -60}})
    shared = go.Figure([go.Heatmap(z=[[0, 1]], coloraxis="coloraxis"), go.Bar(x=[1], y=[2])],
                       layout={"coloraxis": {"colorbar": {"title": {"text": "weight"}}}})
    fitted_heatmap, title = fitted(heatmap)
    assert fitted_heatmap.data[0].colorbar.title.side == "right"
    # a long upright title goes to the line above the chart: a presenter's plot is too low for it
    assert title == "A head · colour: attention weight" and fitted_heatmap.data[0].colorbar.title.text is None
    assert fitted_heatmap.layout.xaxis.tickangle is None
    assert heatmap.data[0].colorbar.title.side is None and heatmap.layout.height == 300
    assert heatmap.layout.xaxis.tickangle == -60
    fitted_shared, _ = fitted(shared)
    assert fitted_shared.layout.coloraxis.colorbar.title.side == "right"
    assert fitted_shared.layout.coloraxis.colorbar.title.text == "weight"  # short: it stays along its bar
    assert fitted_shared.data[1].type == "bar" and shared.layout.coloraxis.colorbar.title.side is None


@pytest.mark.parametrize("low, high", [(8.8e-6, 0.86), (-20.0, 20.0), (15.0, 32.0), (0.0, 0.0022), (0.0, 1500.0)])
def test_a_colour_bar_on_the_projector_shows_its_ends_and_middle_each_at_the_number_it_says(low, high):
    """Three numbers a short bar has room for at 20 px, inside the bar's range (plotly draws no tick outside it),
    each tick at exactly the number its text says (a tick at 23.5 must not read "24")."""
    figure = go.Figure(go.Heatmap(z=[[low, high]], zmin=low, zmax=high, colorbar={"title": {"text": "v"}}))
    bar = for_projector(figure).data[0].colorbar
    assert len(bar.tickvals) == 3 and low <= bar.tickvals[0] < bar.tickvals[1] < bar.tickvals[2] <= high
    assert [float(t.replace("−", "-").replace(",", "")) for t in bar.ticktext] == list(bar.tickvals)
    assert bar.tickvals[2] - bar.tickvals[0] >= 0.9 * (high - low)  # the ends, to two digits of the range


def test_only_whole_positions_in_range_are_named():
    from vizcore.plot import _positions

    assert _positions(np.array([0, 1, 2]), 3) == [0, 1, 2] and _positions([2.0, 0.0], 3) == [2, 0]
    assert _positions([0.5, 1], 3) is None and _positions([0, 3], 3) is None  # between positions, past the last
    assert _positions({"dtype": "i1", "bdata": "AAEC"}, 3) is None and _positions(["a"], 3) is None
