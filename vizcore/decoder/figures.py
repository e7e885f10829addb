"""Figures of the generation page (plotly objects, never displayed here), each with its tidy table.

* ``next_token_bars``: the next-token distribution before and after temperature / top-k / top-p, the
  cut-off drawn between the last kept and the first cut token, the drawn token highlighted;
* ``new_token_attention``: where the newest token looks (heads of one layer, or every layer);
* ``causal_mask_heatmap``: one head's [query, key] weights, the cells above the diagonal marked masked;
* ``lens_heatmap`` / ``lens_curve``: the logit lens for the next token (the masked-LM page's figures);
* ``beam_tree`` / ``beam_table``: the beams of every step, who came from whom, their scores.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from vizcore.colours import ATTENTION, SEQUENTIAL
from vizcore.decoder.beam import BeamSearch
from vizcore.decoder.sampling import Settings
from vizcore.decoder.steps import Candidates, Lens
from vizcore.mlm.figures import compact_layout, final_word_curve, logit_lens_heatmap, mask_attention_heatmap, percent
from vizcore.mlm.figures import plain as markup_safe
from vizcore.mlm.fill_mask import LogitLens
from vizcore.plot import FONT_SIZE, TICK_FONT_SIZE, axis_labels, colour_bar, token_axis, unique_labels

PLAIN_COLOUR = "#9e9e9e"  # the model's own distribution
SHAPED_COLOUR = "#1f5fa8"  # after the controls
DRAWN_COLOUR = "#e69f00"  # the token chosen (Okabe-Ito orange)
CUT_COLOUR = "#c62828"
MASKED_COLOUR = "#d9d9d9"
MASKED_MARK = "#555555"  # the ✕ on a masked cell: 5.3:1 on its grey (WCAG AA for text)
MAX_CELL_TEXT = 24  # above this many tokens, masked cells are grey without their ✕


def shown(token: str) -> str:
    """A decoded token as a label: GPT-2's leading space kept visible as '␣', newlines as '\\n'."""
    text = token.replace("\n", "\\n")
    return markup_safe(text.replace(" ", "␣") if text.strip() != text or not text.strip() else text)


# ---- the next-token distribution ------------------------------------------------------------------

def candidates_table(c: Candidates) -> pd.DataFrame:
    return pd.DataFrame({"rank": range(1, len(c.tokens) + 1), "token": c.tokens, "token id": c.token_ids,
                         "model": c.plain, "after controls": c.shaped, "kept": c.shaped > 0,
                         "drawn": c.token_ids == (-1 if c.drawn is None else c.drawn)})


def cut_description(settings: Settings, kept: int) -> str:
    if settings.greedy:
        return "greedy: only the top token"
    parts = ([f"top-k {settings.top_k}"] if settings.top_k else []) + (
        [f"top-p {settings.top_p:g}"] if settings.top_p < 1 else [])
    return f"{' and '.join(parts) or 'no cut'}: {kept:,} kept"


def probability_ticks(top: float) -> list[float]:
    """About five round ticks from 0 to ``top`` (room is left beyond for the bar labels, never a 120 % tick)."""
    step = next((s for s in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25) if top / s <= 6), 0.25)
    return [round(i * step, 2) for i in range(int(top / step + 1e-9) + 1)]


def next_token_bars(c: Candidates, settings: Settings, title: str) -> go.Figure:
    """Per candidate (rows, best first): grey = the model's probability, blue = after the controls (0 when
    cut), the drawn token orange; a red line between the last kept and the first cut candidate."""
    table = candidates_table(c)
    drawn = table["drawn"].to_numpy()
    # the words are the rows' categories: plotly thins their labels to the chart's height (``token_axis``)
    rows = unique_labels([f"<b>{shown(t)}</b>" if d else shown(t) for t, d in zip(c.tokens, drawn)])
    hover = "%{customdata[0]}<br>%{fullData.name}: %{x:.4f}<br>token id %{customdata[1]}<extra></extra>"
    customdata = np.stack([[shown(t) for t in c.tokens], table["token id"]], axis=1)
    fig = go.Figure([
        go.Bar(x=table["model"], y=rows, orientation="h", name="model (temperature 1, nothing cut)",
               marker_color=PLAIN_COLOUR, customdata=customdata, hovertemplate=hover),
        go.Bar(x=table["after controls"], y=rows, orientation="h", name="after temperature, top-k, top-p",
               marker_color=[DRAWN_COLOUR if d else SHAPED_COLOUR for d in drawn], customdata=customdata,
               text=[percent(p) if p > 0 else "cut" for p in table["after controls"]], textposition="outside",
               textfont={"size": TICK_FONT_SIZE}, cliponaxis=False, hovertemplate=hover),
    ])
    top = float(max(table["model"].max(), table["after controls"].max(), 1e-9))
    fig.update_layout(barmode="group", bargap=0.25, legend={"orientation": "h", "y": 1.0, "yanchor": "bottom",
                                                            "font": {"size": TICK_FONT_SIZE}})
    fig.update_xaxes(title="probability", range=[0, top * 1.3], tickvals=probability_ticks(top), tickformat=".0%",
                     tickfont={"size": TICK_FONT_SIZE})
    fig.update_layout(yaxis=token_axis("", autorange="reversed", tickfont={"size": FONT_SIZE}))
    if c.kept < len(rows):
        fig.add_hline(y=c.kept - 0.5, line={"color": CUT_COLOUR, "width": 3, "dash": "dash"},
                      annotation={"text": f"cut-off · {cut_description(settings, c.kept)}", "font":
                                  {"size": TICK_FONT_SIZE, "color": CUT_COLOUR}},
                      annotation_position="bottom right")
    else:  # the cut lies beyond the bars shown: said under the title (inside the plot it lay on the last word)
        cut = settings.top_k or settings.top_p < 1
        title += (f" · {cut_description(settings, c.kept)}, the cut-off lies below these {len(rows)}"
                  if cut else f" · nothing cut: all {c.kept:,} tokens kept")
    height = int(np.clip(34 * len(rows) + 170, 300, 1000))
    return compact_layout(fig, title, height=height, top=110)


# ---- attention ------------------------------------------------------------------------------------

def new_token_attention(attention: np.ndarray, tokens: list[str], layer: int | None, title: str) -> go.Figure:
    """``attention`` [L, H, T]: the newest token's weights over the sequence. ``layer`` (0-based): its
    heads as rows; None: every layer, averaged over its heads."""
    if layer is None:
        matrix, labels, what = attention.mean(1), [f"layer {i}" for i in range(1, len(attention) + 1)], "layer"
    else:
        matrix, labels, what = attention[layer], [f"head {h}" for h in range(1, attention.shape[1] + 1)], "head"
    return mask_attention_heatmap(matrix, labels, tokens, title, what)


def causal_mask_heatmap(matrix: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """``matrix`` [query, key] of a causal head: the weights on and below the diagonal, the masked cells
    (a later key) grey with ✕; the newest token's row (the last) framed."""
    matrix = np.asarray(matrix, dtype=np.float32)
    count = len(tokens)
    labels = axis_labels(tokens)
    masked = np.triu(np.ones((count, count), dtype=bool), k=1)
    weights = np.where(masked, np.nan, matrix)
    mark = "✕" if count <= MAX_CELL_TEXT else ""
    zmin, zmax = ATTENTION.zrange(weights)
    fig = go.Figure([
        go.Heatmap(z=weights, x=labels, y=labels, zmin=zmin, zmax=zmax, colorscale=ATTENTION.colorscale,
                   colorbar=colour_bar(ATTENTION.quantity),
                   hovertemplate="query %{y} → key %{x}<br>weight %{z:.4f}<extra></extra>"),
        go.Heatmap(z=np.where(masked, 1.0, np.nan), x=labels, y=labels, showscale=False, zmin=0, zmax=1,
                   colorscale=[[0, MASKED_COLOUR], [1, MASKED_COLOUR]], text=np.where(masked, mark, ""),
                   texttemplate="%{text}", textfont={"size": TICK_FONT_SIZE, "color": MASKED_MARK},
                   hovertemplate="query %{y} → key %{x}<br>masked: a later token, weight exactly 0<extra></extra>"),
    ])
    fig.add_shape(type="rect", x0=-0.5, x1=count - 0.5, y0=count - 1.5, y1=count - 0.5,
                  line={"color": DRAWN_COLOUR, "width": 3})
    fig.update_layout(xaxis=token_axis("key (attended to)", tickangle=-60, side="top"),
                      yaxis=token_axis("query (attending)", autorange="reversed"))
    return compact_layout(fig, title, height=int(np.clip(30 * count + 260, 420, 1000)), top=170)


# ---- the logit lens -------------------------------------------------------------------------------

def _as_mask_lens(lens: Lens) -> LogitLens:
    """The decoder's lens as the masked-LM page's (one "mask": the next position), to share its figures."""
    return LogitLens(token_ids=lens.token_ids[:, None, :],
                     tokens=[[[t.strip() or repr(t) for t in row]] for row in lens.tokens],
                     probs=lens.probs[:, None, :], final_token_probs=lens.final_token_probs[:, None])


def lens_heatmap(lens: Lens, title: str) -> go.Figure:
    """Rows = hidden states (embeddings, layer 1 … L), columns = rank; each cell a token and its probability."""
    return logit_lens_heatmap(_as_mask_lens(lens), 0, title)


def lens_curve(lens: Lens, title: str) -> go.Figure:
    """The probability each layer gives the model's final top-1 next token."""
    word = lens.tokens[-1][0].strip() or repr(lens.tokens[-1][0])
    return final_word_curve(_as_mask_lens(lens), 0, word, title)


# ---- beam search ----------------------------------------------------------------------------------

def beam_table(search: BeamSearch, steps: int | None = None) -> pd.DataFrame:
    """One row per beam per step (1-based step and beam), the finished hypotheses marked."""
    rows = []
    for number, step in enumerate(search.steps[:steps], start=1):
        for kind, beams in (("running", step.beams), ("finished", step.finished)):
            for rank, beam in enumerate(beams, start=1):
                rows.append({"step": number, "beam": rank if kind == "running" else None, "status": kind,
                             "from beam": beam.parent + 1 if beam.parent >= 0 else None, "text": beam.text,
                             "log-probability": beam.score, "score (length-normalised)": beam.normalised})
    return pd.DataFrame(rows, columns=["step", "beam", "status", "from beam", "text", "log-probability",
                                       "score (length-normalised)"])


def beam_tree(search: BeamSearch, steps: int | None = None, title: str = "Beam search") -> go.Figure:
    """x = step, y = beam (best at the top); each node is the beam's newest token, coloured by its summed
    log-probability, with a line to the beam it came from; finished hypotheses are stars."""
    shown_steps = search.steps[:steps]
    xs, ys, labels, scores, hover, symbols = [0], [0], ["prompt"], [0.0], [markup_safe(search.prompt)], ["square"]
    edges_x, edges_y = [], []
    for number, step in enumerate(shown_steps, start=1):
        nodes = [(rank, b, "circle") for rank, b in enumerate(step.beams)]
        nodes += [(len(step.beams) + i, b, "star") for i, b in enumerate(step.finished)]
        for rank, beam, symbol in nodes:
            xs.append(number)
            ys.append(rank)
            labels.append(shown(beam.token))
            scores.append(beam.score)
            symbols.append(symbol)
            status = "finished" if beam.finished else f"beam {rank + 1}"
            hover.append(f"step {number}, {status}<br>{markup_safe(beam.text)}<br>log-probability {beam.score:.3f}"
                         + (f"<br>score {beam.normalised:.3f}" if beam.normalised is not None else ""))
            edges_x += [number - 1, number, None]
            edges_y += [max(beam.parent, 0), rank, None]
    fig = go.Figure([
        go.Scatter(x=edges_x, y=edges_y, mode="lines", line={"color": "#bdbdbd", "width": 2}, hoverinfo="skip",
                   showlegend=False),
        go.Scatter(x=xs, y=ys, mode="markers+text", text=labels, textposition="top center",
                   textfont={"size": TICK_FONT_SIZE}, hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
                   marker={"size": 16, "symbol": symbols, "color": scores, "colorscale": SEQUENTIAL.colorscale,
                           "line": {"width": 1, "color": "#424242"}, "colorbar": colour_bar("log-probability")},
                   showlegend=False),
    ])
    rows = max([len(s.beams) + len(s.finished) for s in shown_steps] or [1])
    fig.update_xaxes(title="step (0 = the prompt)", tickmode="array", tickvals=list(range(len(shown_steps) + 1)),
                     range=[-0.4, len(shown_steps) + 0.6], tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title="beam (best at the top)", tickmode="array", tickvals=list(range(rows)),
                     ticktext=[str(r + 1) for r in range(rows)], range=[rows - 0.4, -0.8],
                     tickfont={"size": TICK_FONT_SIZE})
    return compact_layout(fig, title, height=int(np.clip(70 * rows + 200, 320, 800)))

