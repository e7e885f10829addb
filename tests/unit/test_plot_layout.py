"""``set_layout`` (the house layout in one validation) gives the figure ``update_layout`` gives: the same JSON,
nested keys merged, earlier settings kept, plotly's default template applied when written out."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go

from vizcore.plot import base_layout, base_layout_dict, set_layout


def figure() -> go.Figure:
    fig = go.Figure(go.Bar(x=["a", "b"], y=np.array([0.25, 0.75]), text=["25%", "75%"]))
    fig.update_layout(title={"x": 0.5}, margin={"l": 80, "b": 40}, xaxis={"title": {"text": "word"}},
                      legend={"orientation": "h"})
    return fig


def test_set_layout_equals_update_layout():
    new = {**base_layout_dict("Title <b>x</b>", 420), "margin": {"t": 70}, "yaxis": {"tickformat": ".0%"}}
    expected = json.loads(figure().update_layout(new).to_json())
    shown = json.loads(set_layout(figure(), new).to_json())
    assert shown == expected
    assert shown["layout"]["margin"] == {"l": 80, "b": 40, "t": 70}  # merged, not replaced
    assert shown["layout"]["title"]["x"] == 0.5 and shown["layout"]["template"]  # kept; the default template


def test_base_layout_changes_the_figure_in_place():
    fig = figure()
    assert base_layout(fig, "Heads", 300) is fig and fig.layout.height == 300 and fig.layout.title.text == "Heads"
