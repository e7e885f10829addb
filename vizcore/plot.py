"""Shared figure helpers and the one attention heatmap (plotly objects, never displayed here).

Axes are token *positions* with the tokens as tick labels: a sentence often repeats a token
("the ... the"), and categorical axes would silently merge those rows.
"""

from __future__ import annotations

import html
import math
import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from vizcore.colours import ATTENTION, DARK_TEXT, DIVERGING, SEQUENTIAL, Scale, colour_at, text_colour

FONT_SIZE = 16  # readable on a projector
TICK_FONT_SIZE = 14
SEGMENT_COLOURS = ("#1f5fa8", "#c2410c")  # segment A blue, segment B orange (tick labels and legend)


def display_tokens(tokens: list[str]) -> list[str]:
    """Readable token text: byte-level BPE markers (GPT-2 'Ġ', SentencePiece '▁') become plain spaces."""
    shown = []
    for token in tokens:
        text = token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\\n")
        shown.append(text if text.strip() else repr(text))
    return shown


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


def segment_labels(labels: list[str], segments: np.ndarray | None) -> list[str]:
    """Category labels coloured by segment (``segment_label``) when ``segments`` mark a pair, else as they are: the
    markup is the category itself, so plotly's own thinning keeps each label's colour (and hover shows it)."""
    if segments is None or not (np.asarray(segments) == 1).any():
        return labels
    return [segment_label(label, int(segment)) for label, segment in zip(labels, segments, strict=True)]


def token_axis(title: str, **extra) -> dict:
    """An axis of categories (tokens, heads, layers) whose labels plotly thins to the axis's length in the browser:
    with no tick list of ours, plotly labels every n-th category, n the smallest that gives each label 1.2 times
    its font size (plotly.js ``prepTicks``), so the labels never pile on each other at any window size or font size
    (a fixed list of 13 tokens piled at 20 px in a 170-px map on the projector; issue 47 A)."""
    return {"title": {"text": title}, "type": "category", "tickmode": "auto", "tickfont": {"size": TICK_FONT_SIZE},
            **extra}


def colour_bar(name: str, short: bool = False) -> dict:
    """The legend of a continuous scale: its quantity's name over the bar. ``short``: the plot is a map of one or two
    rows, too low for a bar as high as it to hold its numbers ("20, 10, 0, -10, -20" piled on each other in a 1 x 16
    map on the projector); the bar is 120 px high from the plot's foot up, beside the key labels above the plot."""
    bar = {"title": {"text": name}, "tickfont": {"size": TICK_FONT_SIZE}}
    if short:
        bar.update(lenmode="pixels", len=120, y=0, yanchor="bottom")
    return bar


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
    rows = segment_labels(axis_labels(query_tokens), query_segments)
    cols = segment_labels(axis_labels(key_tokens), key_segments)
    zmin, zmax = scale.zrange(matrix)
    value_name = value_name or scale.quantity
    fig = go.Figure(go.Heatmap(
        z=matrix, x=cols, y=rows, zmin=zmin, zmax=zmax, colorscale=scale.colorscale,
        hovertemplate=f"query %{{y}} → key %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>",
        colorbar=colour_bar(value_name),
    ))
    fig.update_layout(xaxis=token_axis("key (attended to)", side="top", tickangle=-60),
                      yaxis=token_axis("query (attending)", autorange="reversed"))
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
    # positions are categories too (their numbers as text): plotly thins them to the axis's length, whole numbers
    x = unique_labels(map(str, c_idx) if col_labels is None else np.asarray(list(col_labels), dtype=object)[c_idx])
    y = unique_labels(map(str, r_idx) if row_labels is None else np.asarray(list(row_labels), dtype=object)[r_idx])
    zmin, zmax = zrange or scale.zrange(shown)
    heatmap = {
        "type": "heatmap", "z": shown.astype(np.float32), "x": x, "y": y,
        "zmin": zmin, "zmax": zmax, "colorscale": scale.colorscale,
        "hovertemplate": f"{row_title} %{{y}}<br>{col_title} %{{x}}<br>{value_name} %{{z:.5g}}<extra></extra>",
        "colorbar": colour_bar(value_name, short=len(r_idx) <= 2),
    }
    title = f"{title} · shape {rows} × {cols}"
    if step > 1:
        title += f" (every {_ordinal(step)} row and column drawn)"
    height = int(np.clip(24 * len(r_idx) + 260, 380, 760))
    # One constructor call: plotly's update_* methods re-parse every path (20 ms a figure; the step-by-step
    # page draws about twenty of these a run), the constructor validates the same values once (6 ms).
    layout = {
        **base_layout_dict(title, height),
        # a wide matrix's numbers at plotly's angle (flat where they fit): at 0 degrees they piled on a projector
        "xaxis": token_axis(col_title, side="top", **({"tickangle": -60} if cols <= 40 else {})),
        "yaxis": token_axis(row_title, autorange="reversed"),
    }
    return go.Figure(data=[heatmap], layout=layout)


def shown_labels(fig: go.Figure, axis: str = "xaxis") -> list[str]:
    """The labels an axis names, in order: its tick list's text, or (an axis of categories, ``token_axis``) the
    categories of the first trace on it; what a test or an export reads off a figure."""
    layout = fig.layout[axis]
    if layout.ticktext is not None:
        return [str(t) for t in layout.ticktext]
    ref, letter = axis[0] + axis[5:], axis[0]
    trace = next(t for t in fig.data if (getattr(t, f"{letter}axis", None) or letter) == ref)
    return [str(v) for v in trace[letter]]


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
        z=values, x=[str(h + 1) for h in range(heads)], y=[str(l + 1) for l in range(layers)], zmin=zmin, zmax=zmax,
        colorscale=scale.colorscale, xgap=2, ygap=2, text=cells,
        customdata=names if hover is None else hover,
        hovertemplate=("%{customdata}" if hover is not None else
                       f"%{{customdata}}<br>{value_name} %{{z:{value_format}}}") + "<extra></extra>",
        colorbar=colour_bar(value_name),
    ))
    # 1-based numbers as categories at 0-based positions (a shape at (head, layer) frames a cell), thinned by plotly
    fig.update_layout(xaxis=token_axis("head", side="top"), yaxis=token_axis(layer_title, autorange="reversed"))
    base_layout(fig, title, int(np.clip(46 * layers + 200, 320, 800)))
    fig.update_layout(margin={"t": 120})
    return cell_text(fig, cells) if any(cells.ravel()) else fig


# ---- the projector setting: any figure re-laid for larger type ---------------------------------------------

PROJECTOR_FONT_SIZE = 24  # a chart's text on a projector: its body size there (ui/layout.py)
PROJECTOR_MIN_SIZE = 20  # tokens, tick labels, legends: nothing smaller
PROJECTOR_SCALE = PROJECTOR_FONT_SIZE / FONT_SIZE
PROJECTOR_LABEL_SIZE = 22  # axis, colour-bar and subplot titles
PROJECTOR_MAX_TICKS = 32  # tick labels on one axis at 20 px (64 at 14 px)
PROJECTOR_TITLE_CHARS = 48  # a chart title's line at 27 px in a page's column at 1024 px (60 ran past it)
TITLE_LINE_PX = 32  # each line a title gains pushes the plot down by this (before the margins grow by 1.5)
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


@dataclass(frozen=True)
class HtmlFigure:
    """A figure drawn as HTML where a chart would cut its text: words that wrap to the width (the masking draw's
    tokens, "brown → [MASK]", each in its coloured box). ``body`` is self-contained HTML without script, sized in em
    so that a page's larger type (the projector's) grows it; ``alt`` says in words what it shows."""

    title: str
    body: str
    alt: str


def for_projector(figure):
    """A copy of a plotly or altair figure re-laid for a projector: every font scaled from the house size to
    ``PROJECTOR_FONT_SIZE`` (none below ``PROJECTOR_MIN_SIZE``), the height and margins grown by as much, axes
    that make room for their labels, and at most ``PROJECTOR_MAX_TICKS`` labels on an axis. The figure itself
    is left as it was (a cached figure is shared); a figure re-laid already comes back as it is."""
    if isinstance(figure, go.Figure):
        return _plotly_for_projector(figure)
    if isinstance(figure, HtmlFigure):  # HTML text: the page's own (projector) size already
        return figure
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
    """A title broken onto lines of at most ``width`` characters, each of its own lines (``<br>``) on its own (plotly
    draws a title's line as it is and clips it at the chart's edge)."""
    if "<br>" in text:
        return "<br>".join(_wrapped(line, width) for line in text.split("<br>"))
    if len(text) <= width:
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
    if axis.get("type") == "category" and values is not None and texts is None:
        # a list of some of the categories: plotly thins all of them to the axis's length instead (``token_axis``)
        return {k: v for k, v in axis.items() if k not in ("tickvals", "tickmode")}
    if values is not None and len(values) > PROJECTOR_MAX_TICKS:
        step = -(-len(values) // PROJECTOR_MAX_TICKS)
        axis["tickvals"] = list(values)[::step]
        if texts is not None:
            axis["ticktext"] = list(texts)[::step]
    return axis


def legend_above(fig: go.Figure) -> go.Figure:
    """``fig`` (in place) with a legend laid under its plot (a row at a share of the plot's height below it) moved
    above the plot, for a chart stretched to the room a presenter's step leaves (``ui.layout.fitted``): there 20 % of
    a short plot's height below was the x axis's own title ("position" under "dim 0 (sin, ...)"); above the plot
    plotly makes room for it. Not where an x axis has its labels on top, nor in a chart with its title drawn."""
    legend = fig.layout.legend
    top_axis = any(axis.side == "top" for axis in fig.select_xaxes())
    if legend.orientation != "h" or legend.y is None or legend.y >= 0 or top_axis:
        return fig
    entries = sum(1 for trace in fig.data if trace.showlegend is not False and trace.name)
    columns = {"entrywidthmode": "fraction", "entrywidth": 0.5} if entries > 2 else {}  # two to a row, not one
    return fig.update_layout(legend={"y": 1.02, "yanchor": "bottom", "x": 0, "xanchor": "left", "yref": "paper",
                                     **columns})


def _few_ticks(bar: dict, low=None, high=None) -> dict:
    """A colour bar with three numbers: its two ends and the middle, where the scale's range ``low``..``high`` is
    known, else at most 3 or 4 (plotly's ``nticks``); a bar that names its own ticks as it is. Plotly's default gives
    at least five at 40 px each whatever the bar's length, and a bar as short as a map of a few rows piled them
    ("-0.2, -0.1, 0, 0.1, 0.2" on 60 px at 20 px); ``nticks`` alone left one number on a bar from 0.05 to 0.86."""
    if bar.get("tickvals") is not None or bar.get("nticks"):
        return bar
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and high > low:
        # to two significant digits of the range, each tick at the number it shows ("0.01" where the foot is 8.8e-6,
        # not "8.8e-06"), the ends rounded inwards (plotly draws no tick outside the bar)
        decimals = max(0, 1 - math.floor(math.log10(high - low)))
        scale = 10.0 ** decimals
        ends = [math.ceil(low * scale - 1e-9) / scale, math.floor(high * scale + 1e-9) / scale]
        values = [ends[0], round((ends[0] + ends[1]) / 2, decimals), ends[1]]
        if bar.get("tickformat"):
            return {**bar, "tickmode": "array", "tickvals": values}
        texts = [f"{v:,.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{v:,.0f}" for v in values]
        return {**bar, "tickmode": "array", "tickvals": values,
                "ticktext": ["0" if t.strip("-0.,") == "" else t.replace("-", "−") for t in texts]}
    return {**bar, "nticks": 3}


def _positions(coords, count: int) -> list[int] | None:
    """``coords`` as whole positions in 0..count-1, or None when they are not (or not a plain list of numbers: a typed
    array plotly has encoded is left alone)."""
    if coords is None or isinstance(coords, (dict, str)):
        return None
    try:
        values = np.asarray(coords, dtype=float).ravel()
    except (TypeError, ValueError):
        return None
    if not all(v.is_integer() and 0 <= v < count for v in values):
        return None
    return [int(v) for v in values]


def _named_positions(layout: dict, data: list[dict]) -> None:
    """Axes that name the positions 0, 1, ..., n-1 with a tick list of labels (bars of words, a lens's layers)
    become axes of those labels as categories, in place: the traces on them take the labels as coordinates, and
    plotly thins the labels to the axis's length (``token_axis``). Shapes and lines at positions stay where they
    were (a category axis places numbers by position). Other tick lists are left alone."""
    for name in [k for k in layout if k.startswith(("xaxis", "yaxis"))]:
        axis = layout[name]
        values, texts = axis.get("tickvals"), axis.get("ticktext")
        if values is None or texts is None or axis.get("type") in ("log", "date", "category"):
            continue
        if [float(v) for v in values] != list(range(len(values))) or len(texts) != len(values):
            continue
        letter, ref = name[0], name[0] + name[5:]
        on_axis = [trace for trace in data if (trace.get(f"{letter}axis") or letter) == ref]
        coords = [_positions(trace.get(letter), len(values)) for trace in on_axis]
        if not on_axis or any(c is None for c in coords):
            continue
        labels = unique_labels(texts)
        for trace, c in zip(on_axis, coords, strict=True):
            trace[letter] = [labels[v] for v in c]
        layout[name] = {**{k: v for k, v in axis.items() if k not in ("tickvals", "ticktext", "tickmode")},
                        "type": "category", "categoryorder": "array", "categoryarray": labels}


def _plotly_for_projector(fig: go.Figure) -> go.Figure:
    spec = fig.to_plotly_json()
    meta = spec.get("layout", {}).get("meta")
    if isinstance(meta, dict) and meta.get(PROJECTOR_MARK):
        return fig  # re-laid already: once more would scale its fonts again
    layout = _grown_fonts(spec.get("layout", {}))
    layout["meta"] = {**(meta if isinstance(meta, dict) else {}), PROJECTOR_MARK: True}
    layout["font"] = {**layout.get("font", {}), "size": PROJECTOR_FONT_SIZE}
    layout["legend"] = _with_font(layout.get("legend", {}), "font", PROJECTOR_MIN_SIZE)
    # text on bars that plotly would shrink to fit them (13 px beside thin bars) is left out instead
    layout.setdefault("uniformtext", {"minsize": PROJECTOR_MIN_SIZE, "mode": "hide"})
    layout["annotations"] = [_with_font(note, "font", PROJECTOR_LABEL_SIZE) for note in layout.get("annotations", [])]
    title = _titled(layout, round(FONT_SIZE * PROJECTOR_SCALE) + 3)["title"] if layout.get("title") else None
    if title is not None and title.get("text"):
        layout["title"] = {**title, "text": _wrapped(title["text"])}
        if "<br>" in layout["title"]["text"]:  # plotly sets a title of several lines 20 px higher than its top anchor
            layout["title"]["pad"] = {**layout["title"].get("pad", {}), "t": TITLE_LINE_PX * 3 // 4}
        lines_added = layout["title"]["text"].count("<br>") - title["text"].count("<br>")
        if layout.get("margin", {}).get("t") is not None:  # each line of the title pushes the chart down
            layout["margin"] = {**layout["margin"], "t": layout["margin"]["t"] + TITLE_LINE_PX * lines_added}
    data = [_grown_fonts(trace) for trace in spec.get("data", [])]
    _named_positions(layout, data)
    for name in [k for k in layout if k.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]:
        layout[name] = _thinned_axis(layout.get(name, {}))
    for name in [k for k in layout if k.startswith("coloraxis")]:  # a colour bar shared by subplots
        if isinstance(layout[name].get("colorbar"), dict):
            axis = layout[name]
            layout[name] = {**axis, "colorbar": _titled(_with_font(
                _few_ticks(axis["colorbar"], axis.get("cmin"), axis.get("cmax")), "tickfont", PROJECTOR_MIN_SIZE),
                PROJECTOR_LABEL_SIZE)}
    if layout.get("height"):
        layout["height"] = round(layout["height"] * PROJECTOR_SCALE)
    if layout.get("margin"):
        layout["margin"] = {k: round(v * PROJECTOR_SCALE) if isinstance(v, (int, float)) and k in "lrtb" else v
                            for k, v in layout["margin"].items()}
    for i, trace in enumerate(data):
        if trace.get("text") is not None or trace.get("texttemplate"):  # bar values and cell text: a size of their own
            trace = _with_font(trace, "textfont", PROJECTOR_MIN_SIZE)
        if isinstance(trace.get("colorbar"), dict):  # a colour bar's ticks and title with sizes of their own
            ticked = _few_ticks(trace["colorbar"], trace.get("zmin"), trace.get("zmax"))
            trace["colorbar"] = _titled(_with_font(ticked, "tickfont", PROJECTOR_MIN_SIZE), PROJECTOR_LABEL_SIZE)
        data[i] = trace
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
                         ("title", {"fontSize": round(FONT_SIZE * PROJECTOR_SCALE) + 3,
                                    "subtitleFontSize": PROJECTOR_MIN_SIZE})):
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
