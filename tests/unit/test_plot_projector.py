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
    PROJECTOR_MAX_TICKS,
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
    assert len(lines) == 2 and max(map(len, lines)) <= PROJECTOR_TITLE_CHARS
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


def test_at_most_32_labels_an_axis():
    tokens = [f"w{i}" for i in range(100)]
    figure = attention_heatmap(np.full((100, 100), 0.01), tokens)
    assert len(figure.layout.xaxis.tickvals) == 50  # the laptop's 64 labels at most: every 2nd
    shown = for_projector(figure)
    for axis in (shown.layout.xaxis, shown.layout.yaxis):
        assert len(axis.tickvals) <= PROJECTOR_MAX_TICKS
        assert len(axis.ticktext) == len(axis.tickvals)
        assert set(axis.tickvals) <= set(figure.layout.xaxis.tickvals)  # a subset of the same labels


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
    assert title == "A head" and fitted_heatmap.data[0].colorbar.title.side == "right"
    assert fitted_heatmap.layout.xaxis.tickangle is None
    assert heatmap.data[0].colorbar.title.side is None and heatmap.layout.height == 300
    assert heatmap.layout.xaxis.tickangle == -60
    fitted_shared, _ = fitted(shared)
    assert fitted_shared.layout.coloraxis.colorbar.title.side == "right"
    assert fitted_shared.data[1].type == "bar" and shared.layout.coloraxis.colorbar.title.side is None
