"""Figures of the embeddings page: cosine heatmaps, a word's cosines layer by layer, projections (plotly
objects, never displayed here). Sized for a projector: 16 px text, legends or colour bars, values in hover.
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from vizcore.colours import SEQUENTIAL
from vizcore.embeddings.contexts import WordInContexts, state_label
from vizcore.embeddings.projection import METHODS, Projection, TokenPoints
from vizcore.plot import FONT_SIZE, TICK_FONT_SIZE, base_layout, cell_text, colour_bar

MAX_CELL_TEXT = 16  # up to this many rows, each cell shows its value
# D3's ten (grey left out: it means "other") first, well apart on a projector; then Dark24 for more.
CATEGORY_COLOURS = tuple(c for c in qualitative.D3 if c != "#7F7F7F") + tuple(qualitative.Dark24)
OTHER_COLOUR = "#c8c8c8"
PAIR_COLOURS = {True: "#1a7f37", False: "#c2410c", None: "#4a5568"}  # same sense, different senses, unlabelled
PAIR_DASHES = {True: "solid", False: "dot", None: "solid"}  # same and different senses told apart without colour
MAX_CATEGORIES = 24  # sentences with a colour each (a legend longer than this is not read)
QUERY_KEY_COLOURS = {"query": "#1a9850", "key": "#d6336c"}
SENSE_SYMBOLS = ("circle", "diamond", "square", "cross")
HOVER_CHARS = 90
# Words too common to be worth a colour of their own when the page picks words to highlight.
COMMON_WORDS = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been it its this that these "
    "those he she they we you i his her their our your my me him them us not no so if then than there".split())


def short(text: str, limit: int = HOVER_CHARS) -> str:
    """User text for a label or hover: cut at ``limit`` characters, markup-safe."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return html.escape(text, quote=False)


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    base_layout(fig, title, height)
    fig.update_layout(margin={"l": 10, "r": 10, "t": 90, "b": 10}, legend={"font": {"size": FONT_SIZE}})
    return fig


# ---- cosine matrices --------------------------------------------------------------------------------

def cosine_heatmap(matrix: np.ndarray, labels: Sequence[str], title: str, hover: Sequence[str] | None = None,
                   zrange: tuple[float, float] | None = None, row_labels: Sequence[str] | None = None) -> go.Figure:
    """A symmetric ``[row, column]`` cosine matrix. ``labels`` are short tick labels (numbers), ``row_labels``
    optional longer ones for the rows, ``hover`` the texts. Up to ``MAX_CELL_TEXT`` rows every cell shows
    its value. ``zrange`` fixes the colours (default: the smallest value to 1) so matrices can be compared."""
    matrix = np.asarray(matrix, dtype=np.float64)
    n = len(matrix)
    hover = [short(h) for h in (hover or labels)]
    low = float(np.floor(matrix.min() * 10) / 10) if n else 0.0
    zmin, zmax = zrange or (min(low, 0.9), 1.0)
    cells = np.array([[f"{hover[r]}<br>↔ {hover[c]}" for c in range(n)] for r in range(n)], dtype=object)
    fig = go.Figure(go.Heatmap(
        z=matrix, x=list(range(n)), y=list(range(n)), zmin=zmin, zmax=zmax, colorscale=SEQUENTIAL.colorscale,
        customdata=cells, hovertemplate="%{customdata}<br>cosine %{z:.4f}<extra></extra>",
        colorbar=colour_bar("cosine")))
    if n <= MAX_CELL_TEXT:
        cell_text(fig, [[f"{v:.2f}" for v in row] for row in matrix])
    fig.update_xaxes(tickmode="array", tickvals=list(range(n)), ticktext=[html.escape(str(t)) for t in labels],
                     side="top", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(tickmode="array", tickvals=list(range(n)), autorange="reversed", scaleanchor="x",
                     ticktext=[short(str(t), 34) for t in (row_labels or labels)], tickfont={"size": TICK_FONT_SIZE})
    return _layout(fig, title, int(np.clip(46 * n + 160, 360, 900)))


# ---- one word in different contexts ------------------------------------------------------------------

def _pair_group(result: WordInContexts, i: int, j: int) -> str:
    same = result.same_sense(i, j)
    if same is None:
        return "pair"
    return "same sense" if same else "different senses"


def context_lines(result: WordInContexts) -> go.Figure:
    """The cosine of the word's vectors in every two sentences, one line per pair across the hidden states
    (x: embeddings, layer 1 .. L), green solid for pairs of the same sense, orange dotted for different
    senses, and the two groups' means as thick lines."""
    cos = result.cosines()
    x = [state_label(i) for i in range(result.num_states)]
    fig, shown = go.Figure(), set()
    for i, j in result.pairs():
        group, same = _pair_group(result, i, j), result.same_sense(i, j)
        a, b = result.contexts[i], result.contexts[j]
        name = group if same is not None else f"{i + 1} ↔ {j + 1}"
        fig.add_trace(go.Scatter(
            x=x, y=cos[:, i, j], mode="lines+markers", name=name, legendgroup=group,
            showlegend=same is None or group not in shown, opacity=0.45 if same is not None else 0.9,
            line={"width": 2, "color": PAIR_COLOURS[same] if same is not None else None, "dash": PAIR_DASHES[same]},
            hovertemplate=(f"{i + 1}. {short(a.sentence, 60)} [{short(a.sense)}]<br>{j + 1}. {short(b.sentence, 60)} "
                           f"[{short(b.sense)}]<br>%{{x}}: cosine %{{y:.4f}}<extra></extra>")))
        shown.add(group)
    for group, mean in result.sense_means().items():
        same = group == "same sense"
        fig.add_trace(go.Scatter(x=x, y=mean, mode="lines+markers", name=f"mean, {group}",
                                 line={"width": 6, "color": PAIR_COLOURS[same], "dash": PAIR_DASHES[same]},
                                 marker={"size": 11},
                                 hovertemplate=f"mean, {group}<br>%{{x}}: cosine %{{y:.4f}}<extra></extra>"))
    fig.update_xaxes(title="hidden state (embeddings = before any attention)", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title=f"cosine of '{short(result.word, 30)}' in two sentences", tickfont={"size": TICK_FONT_SIZE})
    return _layout(fig, f"'{short(result.word, 30)}' in {len(result.contexts)} sentences: cosine layer by layer", 560)


# ---- projections ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Colouring:
    """How points are coloured: by category (``labels``, "" = not highlighted, drawn grey) or by a number
    (``values``, with a colour bar). Categories may have fixed ``colours`` (else the palette, in legend
    order) and a marker symbol each (``symbols``)."""

    title: str
    labels: tuple[str, ...] | None = None
    values: np.ndarray | None = None
    colours: dict[str, str] | None = None
    symbols: dict[str, str] | None = None


def common_words(points: TokenPoints, count: int = 8) -> list[str]:
    """The words in the most sentences, without special tokens, punctuation and very common words."""
    seen = Counter(word for word in {(w, s) for w, s, special in zip(points.words, points.sentence, points.special)
                                     if not special and any(ch.isalpha() for ch in w) and w not in COMMON_WORDS})
    return [w for w, _ in sorted(Counter(w for w, _ in seen).items(), key=lambda kv: (-kv[1], kv[0]))][:count]


def point_colouring(points: TokenPoints, by: str, highlight: Sequence[str] = (),
                    senses: Sequence[tuple[str, str]] | None = None) -> Colouring:
    """``by`` "word": a colour per ``highlight`` word, the rest grey; with ``senses`` (per sentence, the word
    it was written for and that word's sense) that word is split by sense: one colour, a symbol per sense.
    "position": a colour scale. "sentence": a colour each up to ``MAX_CATEGORIES`` sentences, else a
    colour scale over the sentence number."""
    if by == "position":
        return Colouring("position", values=points.position)
    if by == "sentence":
        if len(points.texts) > MAX_CATEGORIES:
            return Colouring("sentence", values=points.sentence + 1)
        return Colouring("sentence", labels=tuple(f"{s + 1}. {points.texts[s][:40]}" for s in points.sentence))
    chosen = [w.lower() for w in highlight]

    def label(word: str, sentence: int) -> str:
        if word not in chosen:
            return ""
        own, sense = senses[sentence] if senses else ("", "")
        return f"{word} ({sense})" if word == own and sense else word

    labels = tuple(label(w, s) for w, s in zip(points.words, points.sentence))
    names = sorted(set(labels) - {""})
    split = {name.split(" (")[0] for name in names if " (" in name}
    colours, symbols, senses_of = {}, {}, Counter()
    for name in names:  # a split word: one colour, a symbol per sense; open circles elsewhere (no sense given)
        word = name.split(" (")[0]
        colours[name] = CATEGORY_COLOURS[chosen.index(word) % MAX_CATEGORIES]
        if name == word:
            symbols[name] = "circle-open" if word in split else "circle"
        else:
            symbols[name] = SENSE_SYMBOLS[senses_of[word] % len(SENSE_SYMBOLS)]
            senses_of[word] += 1
    return Colouring("word", labels=labels, colours=colours, symbols=symbols)


def point_hover(points: TokenPoints, prefix: str = "") -> list[str]:
    """One hover text per point: the token (its word), its position and its sentence."""
    rows = zip(points.tokens, points.words, points.position, points.sentence)
    return [f"{prefix}<b>{html.escape(t)}</b> (word '{short(w, 30)}') · position {p}<br>sentence {s + 1}: "
            f"{short(points.texts[s])}" for t, w, p, s in rows]


def query_key_colouring(points: TokenPoints, by: str, highlight: Sequence[str] = ()) -> Colouring:
    """Colours of the joint cloud, queries first then keys (2N points): ``by`` "kind" (queries green, keys
    pink, as AttentionViz draws them), "position", or "token" (the ``highlight`` words, the rest grey)."""
    n = len(points)
    if by == "kind":
        return Colouring("vector", labels=("query",) * n + ("key",) * n, colours=QUERY_KEY_COLOURS)
    if by == "position":
        return Colouring("position", values=np.concatenate([points.position, points.position]))
    words = point_colouring(points, "word", highlight)
    return Colouring("token", labels=words.labels + words.labels, colours=words.colours)


def query_key_hover(points: TokenPoints) -> list[str]:
    return point_hover(points, "query · ") + point_hover(points, "key · ")


def query_key_symbols(points: TokenPoints) -> list[str]:
    """Queries are circles, keys diamonds."""
    return ["circle"] * len(points) + ["diamond"] * len(points)


def _axis_titles(projection: Projection) -> list[str]:
    name = METHODS[projection.method]
    if projection.explained is None:
        return [f"{name} {i + 1}" for i in range(projection.coords.shape[1])]
    return [f"PC {i + 1} ({share:.1%} of variance)" for i, share in enumerate(projection.explained)]


def _trace(coords: np.ndarray, rows: np.ndarray, **kwargs) -> go.Scatter | go.Scatter3d:
    """A 2-D or 3-D scatter of ``coords[rows]``; ``customdata`` is each point's index (for clicks)."""
    xyz = {axis: coords[rows, i] for i, axis in enumerate("xyz"[: coords.shape[1]])}
    kind = go.Scatter if coords.shape[1] == 2 else go.Scatter3d
    return kind(mode="markers", customdata=rows, hovertemplate="%{hovertext}<extra></extra>", **xyz, **kwargs)


def projection_scatter(projection: Projection, hover: Sequence[str], colouring: Colouring, title: str,
                       symbols: Sequence[str] | None = None) -> go.Figure:
    """Points of a 2-D or 3-D projection coloured by ``colouring``; ``symbols`` (one marker symbol per
    point, e.g. queries circles and keys diamonds) are optional. Hover shows ``hover[i]``."""
    coords, hover = projection.coords, np.asarray(hover, dtype=object)
    size = 8 if coords.shape[1] == 2 else 4
    symbols = np.asarray(symbols if symbols is not None else ["circle"] * len(coords), dtype=object)
    fig = go.Figure()
    if colouring.values is not None:
        rows = np.arange(len(coords))
        fig.add_trace(_trace(coords, rows, hovertext=hover, showlegend=False, marker={
            "size": size, "color": colouring.values, "colorscale": SEQUENTIAL.colorscale, "symbol": symbols,
            "opacity": 0.85, "colorbar": colour_bar(colouring.title)}))
    else:
        labels = np.asarray(colouring.labels, dtype=object)
        groups = list(colouring.colours or {}) or sorted({g for g in labels if g},
                                                          key=lambda g: (-int((labels == g).sum()), g))
        for g in ["", *groups]:
            rows = np.flatnonzero(labels == g)
            if len(rows) == 0:
                continue
            colour = OTHER_COLOUR if not g else (colouring.colours or {}).get(
                g, CATEGORY_COLOURS[groups.index(g) % MAX_CATEGORIES])
            shapes = symbols[rows] if colouring.symbols is None or not g else colouring.symbols[g]
            fig.add_trace(_trace(coords, rows, hovertext=hover[rows], name=short(g, 44) if g else "other",
                                 marker={"size": size if g else size - 2, "color": colour, "symbol": shapes,
                                         "opacity": 0.9 if g else 0.5}))
        fig.update_layout(legend={"title": {"text": colouring.title}, "itemsizing": "constant"})
    titles = _axis_titles(projection)
    if coords.shape[1] == 2:
        fig.update_xaxes(title=titles[0], zeroline=False)
        fig.update_yaxes(title=titles[1], zeroline=False)
    else:
        fig.update_layout(scene={f"{a}axis": {"title": {"text": t}} for a, t in zip("xyz", titles)})
    fig.update_layout(clickmode="event+select", dragmode="pan" if coords.shape[1] == 2 else None)
    return _layout(fig, title, 760)
