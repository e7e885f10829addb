"""Shared figure helpers and the one attention heatmap (plotly objects, never displayed here).

Axes are token *positions* with the tokens as tick labels: a sentence often repeats a token
("the ... the"), and categorical axes would silently merge those rows.
"""

from __future__ import annotations

import html
import threading
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from vizcore.colours import ATTENTION, DARK_TEXT, DIVERGING, SEQUENTIAL, Scale, colour_at, text_colour

FONT_SIZE = 16  # readable on a projector
TICK_FONT_SIZE = 14
MAX_TICKS = 64  # beyond this, label every k-th token so the labels stay legible
SEGMENT_COLOURS = ("#1f5fa8", "#c2410c")  # segment A blue, segment B orange (tick labels and legend)


def display_tokens(tokens: list[str]) -> list[str]:
    """Readable token text: byte-level BPE markers (GPT-2 'Ġ', SentencePiece '▁') become plain spaces."""
    shown = []
    for token in tokens:
        text = token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\\n")
        shown.append(text if text.strip() else repr(text))
    return shown


def tick_positions(count: int, max_ticks: int = MAX_TICKS) -> list[int]:
    step = max(1, int(np.ceil(count / max_ticks)))
    return list(range(0, count, step))


def base_layout_dict(title: str, height: int) -> dict:
    """The house layout (title, fonts, height, margins) as a plain dict, for a figure built in one call."""
    return {"title": {"text": title, "font": {"size": FONT_SIZE + 2}, "y": 0.99, "yanchor": "top"},
            "font": {"size": FONT_SIZE}, "height": height, "margin": {"l": 10, "r": 10, "t": 150, "b": 10},
            "hoverlabel": {"font": {"size": FONT_SIZE}}}



def per_layer_layout(fig: go.Figure, title: str, y_title: str, height: int) -> go.Figure:
    """A chart with one point per layer (the special tokens' mass, the sinks' shares): the layers in whole steps,
    a share from 0 to 1, the legend under the plot, room for a two-line title."""
    fig.update_xaxes(title="layer", tickmode="linear", dtick=1)
    fig.update_yaxes(title=y_title, range=[0, 1.02])
    fig.update_layout(legend={"font": {"size": FONT_SIZE - 2}, "orientation": "h", "y": -0.2})
    base_layout(fig, title, height)
    fig.update_layout(margin={"t": 80})
    return fig

def _merged(old: dict, new: dict) -> dict:
    """``new`` over ``old``, nested dicts merged key by key (as ``update_layout`` merges)."""
    out = dict(old)
    for key, value in new.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def set_layout(fig: go.Figure, layout: dict) -> go.Figure:
    """``fig.update_layout(layout)``, in place, at half the cost: update_layout parses every key as a property
    path (4-6 ms a call, a quarter of a figure page's run); assigning the merged dict validates it once. The
    template is left out of the merge (plotly's default, which every figure here uses, is applied again when
    the figure is written out; validating its copy would cost 15 ms)."""
    current = fig.layout.to_plotly_json()
    current.pop("template", None)
    fig.layout = _merged(current, layout)
    return fig


def base_layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    return set_layout(fig, base_layout_dict(title, height))


def axis_labels(tokens: list[str]) -> list[str]:
    """Unique, markup-safe category labels: plotly would merge repeated tokens ("the ... the") on a
    categorical axis, so repeats get invisible zero-width-space suffixes; <, > and & become entities
    so user text never turns into plotly's rich-text tags."""
    return unique_labels([html.escape(token, quote=False) for token in display_tokens(tokens)])


def segment_label(label: str, segment: int) -> str:
    """A tick label in its segment's colour, sentence B also in italics (not told by colour alone)."""
    text = f"<i>{label}</i>" if segment == 1 else label
    return f"<span style='color:{SEGMENT_COLOURS[segment]}'>{text}</span>"


def _tick_text(labels: list[str], segments: np.ndarray | None, ticks: list[int]) -> list[str]:
    if segments is None or not (np.asarray(segments) == 1).any():
        return [labels[i] for i in ticks]
    return [segment_label(labels[i], int(segments[i])) for i in ticks]


def colour_bar(name: str) -> dict:
    """The legend of a continuous scale: its quantity's name over the bar."""
    return {"title": {"text": name}, "tickfont": {"size": TICK_FONT_SIZE}}


def cell_text(fig: go.Figure, text: Sequence[Sequence[str]], trace: int = 0, size: int = TICK_FONT_SIZE) -> go.Figure:
    """Write ``text`` ``[row][column]`` over the heatmap ``fig.data[trace]``, each cell in black or white,
    whichever contrasts more with that cell's colour (``colours.text_colour``: at least 4.58:1).

    Plotly writes a heatmap's own text in one colour per trace, and its automatic choice (dark grey or
    white) falls to 2.5:1 on mid-scale colours; so the text is a layer of its own that hover passes
    through (the heatmap keeps ``text`` for its hover). Empty strings write nothing.
    """
    heat = fig.data[trace]
    z = np.asarray(heat.z, dtype=np.float64)
    xs = list(range(z.shape[1])) if heat.x is None else list(heat.x)
    ys = list(range(z.shape[0])) if heat.y is None else list(heat.y)
    stops, zrange = [[float(p), c] for p, c in heat.colorscale], (heat.zmin, heat.zmax)
    cells = [(r, c, str(t)) for r, row in enumerate(text) for c, t in enumerate(row) if t not in (None, "")]
    colours = [text_colour(colour_at(stops, z[r, c], zrange)) if np.isfinite(z[r, c]) else DARK_TEXT
               for r, c, _ in cells]
    return fig.add_trace(go.Scatter(
        x=[xs[c] for _, c, _ in cells], y=[ys[r] for r, _, _ in cells], text=[t for _, _, t in cells],
        mode="text", textfont={"size": size, "color": colours}, hoverinfo="skip", showlegend=False,
        name="cell text"))


def attention_heatmap(
    matrix: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str] | None = None,
    title: str = "Attention",
    query_segments: np.ndarray | None = None,
    key_segments: np.ndarray | None = None,
    scale: Scale = ATTENTION,
    value_name: str | None = None,
) -> go.Figure:
    """The one heatmap of a ``[query, key]`` matrix (Home, the Explorer, Compare, exports, fine-tuning).

    Rows are queries (who attends), columns keys; hover shows query token, key token and the value,
    from the axis labels: no per-cell strings, so a 512 x 512 head sends its float32 matrix and
    1,024 short labels. Tick labels are coloured by segment (A blue, B orange italics) when
    ``*_segments`` mark a pair. Colours and range come from ``scale`` (attention weights: fixed 0..1,
    as in the browser's renderer); the colour bar, titled ``value_name`` (default the scale's
    quantity), is the legend.
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    key_tokens = query_tokens if key_tokens is None else key_tokens
    rows, cols = axis_labels(query_tokens), axis_labels(key_tokens)
    zmin, zmax = scale.zrange(matrix)
    value_name = value_name or scale.quantity
    fig = go.Figure(go.Heatmap(
        z=matrix, x=cols, y=rows, zmin=zmin, zmax=zmax, colorscale=scale.colorscale,
        hovertemplate=f"query %{{y}} → key %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>",
        colorbar=colour_bar(value_name),
    ))
    x_ticks, y_ticks = tick_positions(len(cols)), tick_positions(len(rows))
    fig.update_xaxes(title="key (attended to)", type="category", tickmode="array",
                     tickvals=[cols[i] for i in x_ticks], ticktext=_tick_text(cols, key_segments, x_ticks),
                     tickangle=-60, tickfont={"size": TICK_FONT_SIZE}, side="top")
    fig.update_yaxes(title="query (attending)", type="category", tickmode="array",
                     tickvals=[rows[i] for i in y_ticks], ticktext=_tick_text(rows, query_segments, y_ticks),
                     autorange="reversed", tickfont={"size": TICK_FONT_SIZE})
    height = int(np.clip(26 * len(rows) + 240, 440, 1000))
    return base_layout(fig, title, height)


# ---- any labelled [row, column] matrix (Q, K, scores, the position table) -----------------------

MAX_CELLS = 250_000


def thinning_step(rows: int, cols: int, max_cells: int = MAX_CELLS) -> int:
    """The smallest stride s so that ceil(rows/s) * ceil(cols/s) <= max_cells."""
    step = 1
    while -(-rows // step) * -(-cols // step) > max_cells:
        step += 1
    return step


def matrix_heatmap(
    matrix: np.ndarray,
    title: str,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    row_title: str = "row",
    col_title: str = "column",
    value_name: str = "value",
    scale: Scale = DIVERGING,
    zrange: tuple[float, float] | None = None,
    max_cells: int = MAX_CELLS,
) -> go.Figure:
    """A labelled heatmap of a ``[row, column]`` matrix; hover shows row, column and the exact value.

    ``scale`` gives colours and range (default: red/blue centred on zero, for signed numbers such as Q,
    K, scores; ``ATTENTION`` for weights); ``zrange`` overrides the range. An axis without labels is its
    positions (numbers); an axis with labels is categorical, one category per drawn row or column (repeats
    made unique: ``unique_labels``), so the hover reads its labels from the axes, as ``attention_heatmap``'s:
    no string per cell (a token x 384 map's 4,608 hover strings were three quarters of its cost: built,
    validated, deep-copied and serialised on every page run).
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    rows, cols = matrix.shape
    step = thinning_step(rows, cols, max_cells)
    r_idx, c_idx = np.arange(0, rows, step), np.arange(0, cols, step)
    shown = matrix[np.ix_(r_idx, c_idx)]
    x = c_idx if col_labels is None else unique_labels(np.asarray(list(col_labels), dtype=object)[c_idx])
    y = r_idx if row_labels is None else unique_labels(np.asarray(list(row_labels), dtype=object)[r_idx])
    zmin, zmax = zrange or scale.zrange(shown)
    heatmap = {
        "type": "heatmap", "z": shown.astype(np.float32), "x": x, "y": y,
        "zmin": zmin, "zmax": zmax, "colorscale": scale.colorscale,
        "hovertemplate": f"{row_title} %{{y}}<br>{col_title} %{{x}}<br>{value_name} %{{z:.5g}}<extra></extra>",
        "colorbar": colour_bar(value_name),
    }
    x_ticks, y_ticks = tick_positions(len(c_idx), 20), tick_positions(len(r_idx), 32)
    title = f"{title} · shape {rows} × {cols}"
    if step > 1:
        title += f" (every {_ordinal(step)} row and column drawn)"
    height = int(np.clip(24 * len(r_idx) + 260, 380, 760))
    # One constructor call: plotly's update_* methods re-parse every path (20 ms a figure; the step-by-step
    # page draws about twenty of these a run), the constructor validates the same values once (6 ms).
    layout = {
        **base_layout_dict(title, height),
        "xaxis": {"title": {"text": col_title}, **_matrix_ticks(x, x_ticks), "tickfont": {"size": TICK_FONT_SIZE},
                  "side": "top", "tickangle": -60 if cols <= 40 else 0},
        "yaxis": {"title": {"text": row_title}, **_matrix_ticks(y, y_ticks), "autorange": "reversed",
                  "tickfont": {"size": TICK_FONT_SIZE}},
    }
    return go.Figure(data=[heatmap], layout=layout)


def unique_labels(labels: Sequence[str]) -> list[str]:
    """``labels`` as categories of one axis: a repeat gets invisible zero-width-space suffixes (plotly merges equal
    categories); the text is left as given (``axis_labels`` escapes tokens first)."""
    seen: dict[str, int] = {}
    unique = []
    for label in map(str, labels):
        while label in seen:  # a suffixed repeat could equal a label given later: suffix until unique
            seen[label] += 1
            label += "\u200b" * seen[label]
        seen[label] = 0
        unique.append(label)
    return unique


def _matrix_ticks(values, ticks: list[int]) -> dict:
    """A matrix axis's ticks at positions ``ticks`` of its drawn ``values``: numbers (positions) or categories."""
    if isinstance(values, np.ndarray):
        return {"tickmode": "array", "tickvals": [int(values[i]) for i in ticks],
                "ticktext": [str(int(values[i])) for i in ticks]}
    return {"type": "category", "tickmode": "array", "tickvals": [values[i] for i in ticks],
            "ticktext": [values[i] for i in ticks]}


def _ordinal(n: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(n, f"{n}th")


# ---- the one [layer, head] map (statistics, importance, change, accuracy, roles) ---------------

def layer_head_heatmap(
    values: np.ndarray,
    title: str,
    value_name: str,
    scale: Scale = SEQUENTIAL,
    zrange: tuple[float, float] | None = None,
    marked: Sequence[tuple[int, int]] = (),
    text: np.ndarray | None = None,
    hover: np.ndarray | None = None,
    value_format: str = ".4f",
    layer_title: str = "layer",
) -> go.Figure:
    """A ``[layer, head]`` array as a layers x heads map: layer 1 at the top, head 1 at the left, 1-based
    tick labels on axes of 0-based positions (a shape at ``(head, layer)`` frames a cell).

    ``scale`` gives colours and range (``zrange`` overrides the range). ``text`` ``[layer][head]`` is
    written in the cells (``cell_text``: black or white by the cell's colour); ``marked`` heads carry an
    ✕. Hover: layer, head and the value, or ``hover``.
    """
    values = np.asarray(values, dtype=np.float64)
    layers, heads = values.shape
    zmin, zmax = zrange or scale.zrange(values)
    cells = np.full(values.shape, "", dtype=object) if text is None else np.array(text, dtype=object)
    for layer, head in marked:
        cells[layer, head] = "✕"
    names = np.array([[f"layer {l + 1}, head {h + 1}" for h in range(heads)] for l in range(layers)], dtype=object)
    fig = go.Figure(go.Heatmap(
        z=values, x=list(range(heads)), y=list(range(layers)), zmin=zmin, zmax=zmax,
        colorscale=scale.colorscale, xgap=2, ygap=2, text=cells,
        customdata=names if hover is None else hover,
        hovertemplate=("%{customdata}" if hover is not None else
                       f"%{{customdata}}<br>{value_name} %{{z:{value_format}}}") + "<extra></extra>",
        colorbar=colour_bar(value_name),
    ))
    fig.update_xaxes(title="head", side="top", tickmode="array", tickvals=list(range(heads)),
                     ticktext=[str(h + 1) for h in range(heads)], tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title=layer_title, autorange="reversed", tickmode="array", tickvals=list(range(layers)),
                     ticktext=[str(l + 1) for l in range(layers)], tickfont={"size": TICK_FONT_SIZE})
    base_layout(fig, title, int(np.clip(46 * layers + 200, 320, 800)))
    fig.update_layout(margin={"t": 120})
    return cell_text(fig, cells) if any(cells.ravel()) else fig


# ---- the projector setting: any figure re-laid for larger type ---------------------------------------------

PROJECTOR_FONT_SIZE = 24  # a chart's text on a projector: its body size there (ui/layout.py)
PROJECTOR_MIN_SIZE = 20  # tokens, tick labels, legends: nothing smaller
PROJECTOR_SCALE = PROJECTOR_FONT_SIZE / FONT_SIZE
PROJECTOR_LABEL_SIZE = 22  # axis, colour-bar and subplot titles
PROJECTOR_MAX_TICKS = 32  # tick labels on one axis at 20 px (64 at 14 px)
PROJECTOR_TITLE_CHARS = 60  # a chart title's line at 27 px in a 1024-px window
PROJECTOR_MARK = "projector"  # in a re-laid figure's layout.meta (plotly) or usermeta (vega-lite): done once
_ALTAIR_FONT_KEYS = ("fontSize", "labelFontSize", "titleFontSize", "symbolSize")


def projector_size(size: float) -> int:
    """A font size scaled for the projector, never below ``PROJECTOR_MIN_SIZE``."""
    return max(PROJECTOR_MIN_SIZE, round(size * PROJECTOR_SCALE))


_COPYING = threading.Lock()


def own_copy(figure):
    """A plotly figure of the calling thread's own, copied from one other threads may be reading at the same moment
    (a cached view's, shared by every session); other charts as they are. plotly's copy of a figure is not safe in
    several threads at once: its traces came out as Scatters without their type ("Invalid property ... Scatter:
    'colorbar'"), six sessions drawing one lesson step in a clean clone; tests/unit/test_plot_threads.py."""
    if not hasattr(figure, "to_plotly_json"):
        return figure
    with _COPYING:
        return go.Figure(figure)


def for_projector(figure):
    """A copy of a plotly or altair figure re-laid for a projector: every font scaled from the house size to
    ``PROJECTOR_FONT_SIZE`` (none below ``PROJECTOR_MIN_SIZE``), the height and margins grown by as much, axes
    that make room for their labels, and at most ``PROJECTOR_MAX_TICKS`` labels on an axis. The figure itself
    is left as it was (a cached figure is shared); a figure re-laid already comes back as it is."""
    if isinstance(figure, go.Figure):
        return _plotly_for_projector(figure)
    return _altair_for_projector(figure)


def _grown_fonts(node, key: str = ""):
    """``node`` (plotly JSON) with every ``...font`` dict's size scaled; a font with no size gets the floor."""
    if isinstance(node, dict):
        if key == "number" and (node.get("font") or {}).get("size") is None:
            return node  # an indicator's number without a size: plotly fits it to its gauge, larger than any floor
        out = {k: _grown_fonts(v, k) for k, v in node.items()}
        if key.endswith("font"):
            size = out.get("size")
            if isinstance(size, (list, tuple, np.ndarray)):
                out["size"] = [projector_size(float(s)) for s in size]
            else:
                out["size"] = projector_size(float(size)) if size is not None else PROJECTOR_MIN_SIZE
        return out
    if isinstance(node, list):
        return [_grown_fonts(item, key) for item in node]
    return node


def _with_font(node: dict, key: str, size: int) -> dict:
    """``node`` with ``node[key]["size"]`` set where it is not: Streamlit's chart theme fills an unset size with
    its own small one (0.875 of the base font, 15.75 px)."""
    font = dict(node.get(key) or {})
    font.setdefault("size", size)
    return {**node, key: font}


def _titled(node: dict, size: int) -> dict:
    """``node``'s title (a string or a dict) as a dict whose font has a size."""
    title = node.get("title")
    if title is None:
        return node
    title = {"text": title} if isinstance(title, str) else dict(title)
    return {**node, "title": _with_font(title, "font", size)}


def _wrapped(text: str, width: int = PROJECTOR_TITLE_CHARS) -> str:
    """A title broken onto lines of at most ``width`` characters (plotly draws a title on one line and clips
    it at the chart's edge)."""
    if len(text) <= width or "<br>" in text:
        return text
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join([*lines, line])


def _thinned_axis(axis: dict) -> dict:
    axis = _titled(_with_font({**axis, "automargin": True}, "tickfont", PROJECTOR_MIN_SIZE), PROJECTOR_LABEL_SIZE)
    values, texts = axis.get("tickvals"), axis.get("ticktext")
    if values is not None and len(values) > PROJECTOR_MAX_TICKS:
        step = -(-len(values) // PROJECTOR_MAX_TICKS)
        axis["tickvals"] = list(values)[::step]
        if texts is not None:
            axis["ticktext"] = list(texts)[::step]
    return axis


def _plotly_for_projector(fig: go.Figure) -> go.Figure:
    spec = fig.to_plotly_json()
    meta = spec.get("layout", {}).get("meta")
    if isinstance(meta, dict) and meta.get(PROJECTOR_MARK):
        return fig  # re-laid already: once more would scale its fonts again
    layout = _grown_fonts(spec.get("layout", {}))
    layout["meta"] = {**(meta if isinstance(meta, dict) else {}), PROJECTOR_MARK: True}
    layout["font"] = {**layout.get("font", {}), "size": PROJECTOR_FONT_SIZE}
    layout["legend"] = _with_font(layout.get("legend", {}), "font", PROJECTOR_MIN_SIZE)
    layout["annotations"] = [_with_font(note, "font", PROJECTOR_LABEL_SIZE) for note in layout.get("annotations", [])]
    title = _titled(layout, round(FONT_SIZE * PROJECTOR_SCALE) + 3)["title"] if layout.get("title") else None
    if title is not None and title.get("text"):
        layout["title"] = {**title, "text": _wrapped(title["text"])}
        lines_added = layout["title"]["text"].count("<br>") - title["text"].count("<br>")
        if layout.get("margin", {}).get("t") is not None:  # each line of the title pushes the chart down
            layout["margin"] = {**layout["margin"], "t": layout["margin"]["t"] + 32 * lines_added}
    for name in [k for k in layout if k.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]:
        layout[name] = _thinned_axis(layout.get(name, {}))
    for name in [k for k in layout if k.startswith("coloraxis")]:  # a colour bar shared by subplots
        if isinstance(layout[name].get("colorbar"), dict):
            layout[name] = {**layout[name], "colorbar": _titled(
                _with_font(layout[name]["colorbar"], "tickfont", PROJECTOR_MIN_SIZE), PROJECTOR_LABEL_SIZE)}
    if layout.get("height"):
        layout["height"] = round(layout["height"] * PROJECTOR_SCALE)
    if layout.get("margin"):
        layout["margin"] = {k: round(v * PROJECTOR_SCALE) if isinstance(v, (int, float)) and k in "lrtb" else v
                            for k, v in layout["margin"].items()}
    data = []
    for trace in spec.get("data", []):
        trace = _grown_fonts(trace)
        if trace.get("text") is not None or trace.get("texttemplate"):  # bar values and cell text: a size of their own
            trace = _with_font(trace, "textfont", PROJECTOR_MIN_SIZE)
        if isinstance(trace.get("colorbar"), dict):  # a colour bar's ticks and title with sizes of their own
            trace["colorbar"] = _titled(_with_font(trace["colorbar"], "tickfont", PROJECTOR_MIN_SIZE),
                                        PROJECTOR_LABEL_SIZE)
        data.append(trace)
    return go.Figure(data=data, layout=layout)


def _altair_for_projector(chart):
    if (chart.to_dict().get("usermeta") or {}).get(PROJECTOR_MARK):
        return chart
    spec = _grown_altair(chart.to_dict())
    spec["usermeta"] = {**(spec.get("usermeta") or {}), PROJECTOR_MARK: True}
    config = spec.setdefault("config", {})  # vega-lite's own defaults are 10-13 px: each size set
    for group, sizes in (("axis", {"labelFontSize": PROJECTOR_MIN_SIZE, "titleFontSize": PROJECTOR_LABEL_SIZE}),
                         ("legend", {"labelFontSize": PROJECTOR_MIN_SIZE, "titleFontSize": PROJECTOR_LABEL_SIZE}),
                         ("header", {"labelFontSize": PROJECTOR_MIN_SIZE, "titleFontSize": PROJECTOR_LABEL_SIZE}),
                         ("title", {"fontSize": round(FONT_SIZE * PROJECTOR_SCALE) + 3})):
        config[group] = {**sizes, **config.get(group, {})}
    return type(chart).from_dict(spec, validate=False)


def _grown_altair(node, key: str = ""):
    if isinstance(node, dict):
        out = {k: _grown_altair(v, k) for k, v in node.items()}
        for name in _ALTAIR_FONT_KEYS:
            if isinstance(out.get(name), (int, float)) and name != "symbolSize":
                out[name] = projector_size(out[name])
        if isinstance(out.get("height"), (int, float)):
            out["height"] = round(out["height"] * PROJECTOR_SCALE)
        return out
    if isinstance(node, list):
        return [_grown_altair(item, key) for item in node]
    return node
