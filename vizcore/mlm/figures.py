"""Figures and tidy tables for the masked-LM views (plotly objects, never displayed here).

Two steps as everywhere in vizcore: results -> tidy table (``*_table``) -> chart (the rest).
Probabilities are shown as percentages with the exact value on hover.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vizcore.colours import ATTENTION, DARK_TEXT, PROBABILITY
from vizcore.mlm.fill_mask import LogitLens, Prediction
from vizcore.mlm.masking import MASKED, NOT_SELECTED, RANDOM, UNCHANGED
from vizcore.mlm.masking_demo import MaskingDraw, MaskingRates
from vizcore.mlm.nsp import NextSentence
from vizcore.plot import (
    FONT_SIZE,
    SEGMENT_COLOURS,
    TICK_FONT_SIZE,
    HtmlFigure,
    base_layout_dict,
    cell_text,
    colour_bar,
    display_tokens,
    set_layout,
    token_axis,
    unique_labels,
)

BAR_COLOUR = "#1f77b4"
SPECIAL = -1  # kind code used only for drawing special tokens
KIND_STYLE = {  # code -> (legend name, colour); colour-blind-safe (Okabe-Ito)
    SPECIAL: ("special token (never selected)", "#d9d9d9"),
    NOT_SELECTED: ("not selected", "#ffffff"),
    MASKED: ("selected → [MASK] (80 %)", "#0072b2"),
    RANDOM: ("selected → random token (10 %)", "#e69f00"),
    UNCHANGED: ("selected → left unchanged (10 %)", "#009e73"),
}
TOKENS_PER_ROW = 7  # at 1024 px wide a cell is then about 90 px: room for "quick → ideology" on two lines
BOX_TINT = 0.3  # a token box's background: this much of its kind's colour over white
KIND_SHORT = {SPECIAL: "special", NOT_SELECTED: "not chosen", MASKED: "chosen → [MASK] (80 %)",
              RANDOM: "chosen → random (10 %)", UNCHANGED: "chosen, kept (10 %)"}  # the tokens' legend, on one line


def plain(text: str) -> str:
    """Plotly text understands a little HTML (<br>, <b>): show a token such as '<' or '<script>' as typed."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def percent(p: float) -> str:
    """A probability as a percentage with the digits that matter (0.0021 -> '0.21%', not '0%')."""
    if p >= 0.01:
        return f"{p:.1%}"
    return f"{p:.2%}" if p >= 0.0001 else "<0.01%"


def percent_axis_format(top: float) -> str:
    return ".0%" if top >= 0.05 else ".1%" if top >= 0.005 else ".2%"


def probability_axis(top: float, ceiling: float = 1.05) -> dict:
    """A probability axis that ends a quarter above the largest value ``top`` (at most ``ceiling``): a word at 4 %
    on an axis to 100 % is a flat line on a projector. The ticks say where the axis ends."""
    return {"range": [0, min(ceiling, top * 1.25) or ceiling], "tickformat": percent_axis_format(top)}


def compact_layout(fig: go.Figure, title: str, height: int, top: int = 70) -> go.Figure:
    return set_layout(fig, {**base_layout_dict(title, height), "margin": {"l": 10, "r": 10, "t": top, "b": 10}})


# ---- predictions -------------------------------------------------------------------------------

def predictions_table(predictions: list[Prediction]) -> pd.DataFrame:
    return pd.DataFrame({"rank": range(1, len(predictions) + 1), "word": [p.token for p in predictions],
                         "probability": [p.score for p in predictions],
                         "token id": [p.token_id for p in predictions]})


def prediction_bars(predictions: list[Prediction], title: str) -> go.Figure:
    """Horizontal bars, best first; the bar text is the probability, hover adds the token id."""
    table = predictions_table(predictions)
    positions = list(range(len(table)))  # positions, not words: two candidates may decode alike
    fig = go.Figure(go.Bar(
        x=table["probability"], y=positions, orientation="h", marker_color=BAR_COLOUR,
        text=[percent(p) for p in table["probability"]], textposition="outside",
        textfont={"size": FONT_SIZE}, cliponaxis=False,
        customdata=np.stack([table["word"].map(plain), table["token id"]], axis=1),
        hovertemplate="%{customdata[0]}<br>probability %{x:.4f}<br>token id %{customdata[1]}<extra></extra>",
    ))
    top = float(table["probability"].max()) if len(table) else 1.0
    fig.update_xaxes(title="probability", **probability_axis(top, 1.0), tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(tickmode="array", tickvals=positions, ticktext=[plain(w) for w in table["word"]],
                     autorange="reversed", tickfont={"size": FONT_SIZE})
    return compact_layout(fig, title, height=int(np.clip(42 * len(table) + 110, 240, 900)))


# ---- logit lens --------------------------------------------------------------------------------

def lens_row_labels(lens: LogitLens) -> list[str]:
    return ["embeddings"] + [f"layer {i}" for i in range(1, lens.num_rows)]


def lens_table(lens: LogitLens, mask: int) -> pd.DataFrame:
    """One row per (layer, rank): what the MLM head reads off that layer at mask number ``mask``."""
    labels = lens_row_labels(lens)
    k = lens.probs.shape[-1]
    return pd.DataFrame({
        "layer": [labels[r] for r in range(lens.num_rows) for _ in range(k)],
        "rank": [i + 1 for _ in range(lens.num_rows) for i in range(k)],
        "word": [lens.tokens[r][mask][i] for r in range(lens.num_rows) for i in range(k)],
        "probability": lens.probs[:, mask, :].reshape(-1).astype(float),
    })


def logit_lens_heatmap(lens: LogitLens, mask: int, title: str) -> go.Figure:
    """Rows = layers (embeddings at the top), columns = rank; each cell is a word, coloured by probability."""
    probs = lens.probs[:, mask, :]  # (L1, k)
    words = np.array([list(lens.tokens[r][mask]) for r in range(lens.num_rows)], dtype=object)
    cells = np.array([[f"{plain(w)}<br>{percent(float(p))}" for w, p in zip(words[r], probs[r])]
                      for r in range(lens.num_rows)], dtype=object)
    labels = lens_row_labels(lens)
    ranks = list(range(1, probs.shape[1] + 1))
    fig = go.Figure(go.Heatmap(
        z=probs, x=ranks, y=list(range(lens.num_rows)), text=cells,
        customdata=np.array([[f"{labels[r]}, rank {i}: {plain(words[r][i - 1])}" for i in ranks]
                             for r in range(lens.num_rows)], dtype=object),
        hovertemplate="%{customdata}<br>probability %{z:.4f}<extra></extra>",
        colorscale=PROBABILITY.colorscale, zmin=PROBABILITY.fixed[0], zmax=PROBABILITY.fixed[1],
        colorbar=colour_bar(PROBABILITY.quantity) | {"tickformat": ".0%"},
    ))
    fig.update_xaxes(title="rank", tickvals=ranks, side="top", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(tickmode="array", tickvals=list(range(lens.num_rows)), ticktext=labels, autorange="reversed",
                     tickfont={"size": TICK_FONT_SIZE})
    cell_text(fig, cells)
    return compact_layout(fig, title, height=int(np.clip(58 * lens.num_rows + 140, 320, 1000)), top=110)


def final_word_curve(lens: LogitLens, mask: int, word: str, title: str) -> go.Figure:
    """The probability each layer gives to the model's final top-1 word."""
    labels = lens_row_labels(lens)
    values = lens.final_token_probs[:, mask].astype(float)
    fig = go.Figure(go.Scatter(
        x=list(range(lens.num_rows)), y=values, mode="lines+markers+text", name=word,
        text=[percent(v) for v in values], textposition="top center", textfont={"size": TICK_FONT_SIZE},
        marker={"size": 10, "color": BAR_COLOUR}, customdata=labels,
        hovertemplate=f"%{{customdata}}: p({word}) = %{{y:.4f}}<extra></extra>",
    ))
    fig.update_xaxes(tickmode="array", tickvals=list(range(lens.num_rows)), ticktext=labels,
                     tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title=f"p({word})", **probability_axis(float(values.max(initial=0.0)), 1.1),
                     tickfont={"size": TICK_FONT_SIZE})
    return compact_layout(fig, title, height=340)


# ---- logit lens vs tuned lens ------------------------------------------------------------------

LENS_STYLE = {"logit lens": ("#0072b2", "solid", "circle"), "tuned lens": ("#d55e00", "dash", "diamond")}


def lens_comparison_table(lenses: dict[str, LogitLens], mask: int) -> pd.DataFrame:
    """One row per (lens, layer) at mask number ``mask``: the top word, its probability, the probability of
    the final top-1 word and the KL (nats) to the final distribution."""
    rows = []
    for name, lens in lenses.items():
        labels = lens_row_labels(lens)
        for r in range(lens.num_rows):
            rows.append({"lens": name, "layer": labels[r], "top word": lens.tokens[r][mask][0],
                         "top probability": float(lens.probs[r, mask, 0]),
                         "p(final word)": float(lens.final_token_probs[r, mask]),
                         "KL to final (nats)": float(lens.kl_to_final[r, mask])})
    return pd.DataFrame(rows)


def _curves(series: dict[str, list[float]], labels: list[str], title: str, y_title: str, percent_axis: bool,
            height: int = 340) -> go.Figure:
    """One line per lens over the rows (embeddings, layer 1, ...); told apart by dash and marker, not colour alone."""
    fig = go.Figure()
    x = list(range(len(labels)))
    for name, values in series.items():
        colour, dash, symbol = LENS_STYLE.get(name, (BAR_COLOUR, "solid", "circle"))
        shown = [percent(v) if percent_axis else f"{v:.2f}" for v in values]
        fig.add_trace(go.Scatter(
            x=x, y=values, mode="lines+markers", name=name, line={"color": colour, "dash": dash, "width": 3},
            marker={"size": 10, "symbol": symbol, "color": colour}, customdata=np.stack([labels, shown], axis=1),
            hovertemplate=f"{name}, %{{customdata[0]}}: %{{customdata[1]}}<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=x, ticktext=labels, tickfont={"size": TICK_FONT_SIZE})
    top = max((max(values, default=0.0) for values in series.values()), default=0.0)
    fig.update_yaxes(title=y_title, tickfont={"size": TICK_FONT_SIZE}, rangemode="tozero",
                     **(probability_axis(top) if percent_axis else {}))
    fig = compact_layout(fig, title, height=height)
    fig.update_layout(legend={"orientation": "h", "y": -0.18, "x": 0})
    return fig


def lens_final_word_curves(lenses: dict[str, LogitLens], mask: int, word: str, title: str) -> go.Figure:
    """Per layer, the probability each lens gives the model's final top-1 word."""
    labels = lens_row_labels(next(iter(lenses.values())))
    series = {name: lens.final_token_probs[:, mask].astype(float).tolist() for name, lens in lenses.items()}
    return _curves(series, labels, title, f"p({word})", percent_axis=True)


def lens_kl_curves(lenses: dict[str, LogitLens], mask: int, title: str) -> go.Figure:
    """Per layer, each lens's KL divergence (nats) from the final distribution at this mask (0 at the output)."""
    labels = lens_row_labels(next(iter(lenses.values())))
    series = {name: lens.kl_to_final[:, mask].astype(float).tolist() for name, lens in lenses.items()}
    return _curves(series, labels, title, "KL(final ‖ lens), nats", percent_axis=False)


def lens_card_table(metrics: dict) -> pd.DataFrame:
    """The tuned lens's card (``tuned-lens.json``): per hidden state, mean KL and agreement on held-out text."""
    logit, tuned = metrics["logit"], metrics["tuned"]
    labels = ["embeddings"] + [f"layer {i}" for i in range(1, len(logit["kl"]))]
    return pd.DataFrame({"layer": labels, "KL logit lens": logit["kl"], "KL tuned lens": tuned["kl"],
                         "top-1 agreement, logit": logit["top1"], "top-1 agreement, tuned": tuned["top1"],
                         "top-5 agreement, logit": logit["top5"], "top-5 agreement, tuned": tuned["top5"]})


def lens_card_curves(metrics: dict, title: str) -> go.Figure:
    """Held-out mean KL to the final distribution per layer, logit vs tuned lens (from the card's numbers)."""
    table = lens_card_table(metrics)
    series = {"logit lens": table["KL logit lens"].tolist(), "tuned lens": table["KL tuned lens"].tolist()}
    return _curves(series, table["layer"].tolist(), title, "mean KL(final ‖ lens), nats", percent_axis=False)


# ---- attention of the masked position ----------------------------------------------------------

def mask_attention_heatmap(matrix: np.ndarray, row_labels: list[str], tokens: list[str], title: str,
                           row_title: str) -> go.Figure:
    """``matrix`` [row, key]: how the masked position spreads its attention (rows = heads or layers), on the
    attention scale (fixed 0..1, as every attention heatmap)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    zmin, zmax = ATTENTION.zrange(matrix)
    keys = [plain(k) for k in display_tokens(tokens)]
    hover = np.array([[f"{row_labels[r]} → {k}: {keys[k]}" for k in range(len(keys))]
                      for r in range(len(row_labels))], dtype=object)
    fig = go.Figure(go.Heatmap(  # keys and rows as categories: plotly thins their labels to the chart's size
        z=matrix, x=unique_labels(keys), y=unique_labels(row_labels), customdata=hover,
        hovertemplate="%{customdata}<br>weight %{z:.4f}<extra></extra>", colorscale=ATTENTION.colorscale,
        zmin=zmin, zmax=zmax, colorbar=colour_bar(ATTENTION.quantity),
    ))
    fig.update_layout(xaxis=token_axis("key (attended to)", tickangle=-60, side="top"),
                      yaxis=token_axis(row_title, autorange="reversed"))
    return compact_layout(fig, title, height=int(np.clip(30 * len(row_labels) + 230, 360, 900)), top=160)


# ---- 80/10/10 ----------------------------------------------------------------------------------

def masking_table(draw: MaskingDraw) -> pd.DataFrame:
    return pd.DataFrame({"position": range(len(draw.tokens)), "token": draw.tokens, "model sees": draw.shown,
                         "what happened": draw.kind_names})


def masking_strip(draw: MaskingDraw, title: str) -> go.Figure:
    """Tokens in reading order, TOKENS_PER_ROW to a row, coloured by what the rule did to each and labelled
    with it (→ [MASK], → a random token, (kept)), with a legend."""
    codes = np.where(draw.special, SPECIAL, draw.kinds).astype(int)
    count = len(codes)
    rows = -(-count // TOKENS_PER_ROW)
    z = np.full((rows, TOKENS_PER_ROW), np.nan)
    text = np.full((rows, TOKENS_PER_ROW), "", dtype=object)
    hover = np.full((rows, TOKENS_PER_ROW), "", dtype=object)
    order = list(KIND_STYLE)
    for i, (token, shown, code, name) in enumerate(zip(draw.tokens, draw.shown, codes, draw.kind_names)):
        r, c = divmod(i, TOKENS_PER_ROW)
        z[r, c] = order.index(int(code))
        token, shown = plain(token), plain(shown)
        # the cell names what happened, not its colour alone: kept tokens look like unselected ones otherwise
        text[r, c] = (f"{token}<br>→ {shown}" if shown != token else
                      f"{token}<br>(kept)" if code == UNCHANGED else token)
        hover[r, c] = f"{i}: {token} → model sees {shown}<br>{name}"
    colours = [KIND_STYLE[code][1] for code in order]
    scale = [[i / (len(order) - 1), colour] for i, colour in enumerate(colours)]
    fig = go.Figure(go.Heatmap(z=z, text=text, customdata=hover, hovertemplate="%{customdata}<extra></extra>",
                               colorscale=scale, zmin=0, zmax=len(order) - 1, showscale=False, xgap=3, ygap=3))
    cell_text(fig, text, size=FONT_SIZE)
    for code in order:  # a legend entry per kind (the heatmap itself has none), the mask as the model writes it
        name, colour = KIND_STYLE[code]
        name = name.replace("[MASK]", plain(draw.mask_token))
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name,
                                 marker={"symbol": "square", "size": 16, "color": colour,
                                         "line": {"color": "#555", "width": 1}}))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, autorange="reversed")
    fig.update_layout(legend={"orientation": "h", "y": -0.02, "yanchor": "top", "font": {"size": TICK_FONT_SIZE}},
                      plot_bgcolor="white")
    return compact_layout(fig, title, height=int(70 * rows + 180))


def _box_style(colour: str) -> str:
    """A token's box: the kind's colour as a thick border around a pale tint of it, the text black on the tint
    (13:1 or more: a projector's 7:1; white on the Okabe-Ito blue was 5:1)."""
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    tint = "#" + "".join(f"{round(255 - (255 - c) * BOX_TINT):02x}" for c in (red, green, blue))
    return f"background:{tint};color:{DARK_TEXT};border-color:{'#555555' if colour == '#ffffff' else colour}"


def masking_tokens(draw: MaskingDraw, title: str) -> HtmlFigure:
    """The draw as tokens in reading order that wrap to the page's width, each in a box coloured by what the rule did
    to it and saying it ("brown → [MASK]", "fox (kept)"), with the legend: the strip's content where text is as large
    as a projector needs (its heatmap cells cut "jumps → <mask>" at 20 px)."""
    codes = np.where(draw.special, SPECIAL, draw.kinds).astype(int)
    boxes = []
    for token, shown, code in zip(draw.tokens, draw.shown, codes):
        name, colour = KIND_STYLE[int(code)]
        said = (f"{token} → {shown}" if shown != token else f"{token} (kept)" if code == UNCHANGED else token)
        boxes.append(f'<span class="mask-token" style="{_box_style(colour)}" '
                     f'title="{html.escape(name.replace("[MASK]", draw.mask_token), quote=True)}">'
                     f"{html.escape(said)}</span>")
    legend = "".join(f'<span class="mask-key"><span class="mask-swatch" style="{_box_style(KIND_STYLE[code][1])}">'
                     f"</span>{html.escape(name.replace('[MASK]', draw.mask_token))}</span>"
                     for code, name in KIND_SHORT.items())
    style = ("<style>.mask-draw{line-height:1.7;font-size:.9em}.mask-token{display:inline-block;padding:0 .3em;"
             "margin:.1em .12em;border:3px solid;border-radius:.25em;white-space:nowrap}.mask-keys{font-size:.8em;"
             "line-height:1.4;"
             "margin-top:.3em}.mask-key{display:inline-block;margin-right:.8em;white-space:nowrap}.mask-swatch{display:"
             "inline-block;width:.9em;height:.9em;border:3px solid;margin-right:.3em;vertical-align:-.1em;"
             "box-sizing:border-box}</style>")
    said = "; ".join(f"{t} → {s}" for t, s, code in zip(draw.tokens, draw.shown, codes)
                     if code in (MASKED, RANDOM)) or "none"
    kept = ", ".join(t for t, code in zip(draw.tokens, codes) if code == UNCHANGED) or "none"
    alt = f"{title}. Replaced: {said}. Chosen and left unchanged: {kept}."
    body = (f'{style}<div class="mask-draw"><div>{"".join(boxes)}</div>'
            f'<div class="mask-keys">{legend}</div></div>')  # the tokens and the legend read as text: their own alt
    return HtmlFigure(title=title, body=body, alt=alt)


def rates_table(rates: MaskingRates) -> pd.DataFrame:
    return pd.DataFrame(rates.rows())


def rates_bars(rates: MaskingRates, title: str) -> go.Figure:
    """Measured shares (with ±2 standard errors) beside BERT's targets."""
    table = rates_table(rates)
    labels = ["selected", f"→ {plain(rates.mask_token)}", "→ random", "→ unchanged"]
    fig = go.Figure([
        go.Bar(name="measured", x=labels, y=table["measured"], marker_color=BAR_COLOUR,
               error_y={"type": "data", "array": 2 * table["std_error"], "visible": True},
               text=[f"{v:.1%}" for v in table["measured"]], textposition="outside", textfont={"size": FONT_SIZE},
               customdata=np.stack([table["count"], table["out_of"]], axis=1),
               hovertemplate="%{x}: %{y:.2%} (%{customdata[0]:,} of %{customdata[1]:,})<extra>measured</extra>"),
        go.Bar(name="BERT's target", x=labels, y=table["target"], marker_color="#bbbbbb",
               text=[f"{v:.0%}" for v in table["target"]], textposition="outside", textfont={"size": FONT_SIZE},
               hovertemplate="%{x}: %{y:.0%}<extra>target</extra>"),
    ])
    fig.update_yaxes(title="share", tickformat=".0%", range=[0, 1.0], tickfont={"size": TICK_FONT_SIZE})
    fig.update_xaxes(tickfont={"size": FONT_SIZE})
    fig.update_layout(barmode="group", legend={"font": {"size": TICK_FONT_SIZE}})
    return compact_layout(fig, title, height=420)


# ---- next sentence prediction (NSP) ------------------------------------------------------------
# [CLS] A [SEP] B [SEP] -> the encoder -> [CLS]'s last hidden state -> pooler -> IsNext / NotNext.

PART_STYLE = {"A": ("sentence A", SEGMENT_COLOURS[0]), "B": ("sentence B", SEGMENT_COLOURS[1]),
              "special": ("[CLS] / [SEP]", "#8c8c8c")}  # part -> (name, colour); A and B as in every view
PART_PATTERNS = {"A": "", "B": "/", "special": "."}  # bars told apart without colour too (legend beside)
IS_NEXT_COLOUR, NOT_NEXT_COLOUR = "#009e73", "#d55e00"  # Okabe-Ito green / vermilion


def is_next_gauge(probability: float, title: str) -> go.Figure:
    """P(IsNext) as a big percentage on a 0-100 % gauge; the answer flips at the 50 % line."""
    colour = IS_NEXT_COLOUR if probability >= 0.5 else NOT_NEXT_COLOUR
    fig = go.Figure(go.Indicator(
        mode="gauge+number", value=100 * probability,
        # the arc inside the figure's width and its ticks without a suffix (the number has it): the end labels are
        # drawn outside the arc, and "100 %" was cut at the figure's edge (at 1024 x 768, on the laptop and more so
        # at the projector's tick size)
        # room under the arc for the two answers' names and over it for its title, at a share of any height (a
        # presenter's chart 200 px high put "← NotNext" on the 0 and the title off the top)
        domain={"x": [0.12, 0.88], "y": [0.2, 0.86]},
        # no size: plotly fits the number inside the arc; 64 px was wider than the gauge in half of a 1024 px page
        number={"suffix": " %", "valueformat": ".1f", "font": {"color": colour}},
        title={"text": "P(IsNext): B follows A", "font": {"size": FONT_SIZE}},
        gauge={"axis": {"range": [0, 100], "tickfont": {"size": TICK_FONT_SIZE}},
               "bar": {"color": colour, "thickness": 0.35},
               "steps": [{"range": [0, 50], "color": "#fbe3d6"}, {"range": [50, 100], "color": "#d5f0e6"}],
               "threshold": {"line": {"color": "#333", "width": 3}, "thickness": 0.9, "value": 50}},
    ))
    fig.add_annotation(x=0.02, y=0, xref="paper", yref="paper", yanchor="bottom", showarrow=False, text="← NotNext",
                       font={"size": FONT_SIZE, "color": NOT_NEXT_COLOUR})
    fig.add_annotation(x=0.98, y=0, xref="paper", yref="paper", yanchor="bottom", showarrow=False, text="IsNext →",
                       font={"size": FONT_SIZE, "color": IS_NEXT_COLOUR})
    return compact_layout(fig, title, height=340, top=60)


def examples_table(rows: list[tuple[str, str, str, float]]) -> pd.DataFrame:
    """``rows`` of (A, B, the tutorial's label, P(IsNext)) -> one row each, with the model's answer."""
    return pd.DataFrame({"sentence A": [r[0] for r in rows], "sentence B": [r[1] for r in rows],
                         "expected": [r[2] for r in rows], "P(IsNext)": [r[3] for r in rows],
                         "model says": ["IsNext" if r[3] >= 0.5 else "NotNext" for r in rows]})


def cls_share_table(result: NextSentence) -> pd.DataFrame:
    """Tidy: one row per (layer, head, part), layers and heads 1-based, ``share`` of [CLS]'s attention."""
    layers, heads = result.share["A"].shape
    return pd.DataFrame([{"layer": layer + 1, "head": head + 1, "part": part,
                          "share": float(result.share[part][layer, head])}
                         for layer in range(layers) for head in range(heads) for part in PART_STYLE])


def cls_share_heatmaps(result: NextSentence, title: str) -> go.Figure:
    """Three layer x head grids: how much of each head's [CLS] row falls on A, on B, on the specials
    (the three sum to 1 per head). One colour scale, 0 to 100 %."""
    layers, heads = result.share["A"].shape
    # short titles over narrow maps (a third of a projector's column: "on sentence A" ran into "on sentence B")
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, horizontal_spacing=0.05,
                        subplot_titles=["on A", "on B", "special"])
    for column, part in enumerate(PART_STYLE, start=1):
        fig.add_trace(go.Heatmap(
            z=result.share[part].numpy(), x=[str(h) for h in range(1, heads + 1)],
            y=[str(l) for l in range(1, layers + 1)],
            coloraxis="coloraxis", xgap=1, ygap=1,
            hovertemplate=f"layer %{{y}}, head %{{x}}<br>[CLS] → {PART_STYLE[part][0]}: %{{z:.1%}}<extra></extra>",
        ), row=1, col=column)
        fig.update_xaxes(token_axis("head"), row=1, col=column)  # numbers as categories: plotly thins them
    fig.update_yaxes(token_axis("layer", autorange="reversed"), col=1)
    fig.update_yaxes(autorange="reversed")
    cmin, cmax = ATTENTION.zrange()
    fig.update_layout(coloraxis={"colorscale": ATTENTION.colorscale, "cmin": cmin, "cmax": cmax,
                                 "colorbar": colour_bar("share of [CLS]'s<br>attention") | {"tickformat": ".0%"}})
    fig.update_annotations(font={"size": FONT_SIZE})
    return compact_layout(fig, title, height=int(np.clip(34 * layers + 200, 340, 800)), top=100)


def cls_attention_bars(result: NextSentence, layer: int, head: int, title: str) -> go.Figure:
    """One head's [CLS] row (0-based ``layer``, ``head``): a bar per token, coloured and patterned by its part."""
    weights = result.cls_attention[layer, head].numpy()
    labels = [plain(t) for t in display_tokens(result.tokens)]
    parts = result.parts
    fig = go.Figure()
    names = unique_labels(labels)  # the tokens as categories, in reading order: plotly thins their labels
    for part, (name, colour) in PART_STYLE.items():
        where = [i for i, p in enumerate(parts) if p == part]
        fig.add_trace(go.Bar(
            x=[names[i] for i in where], y=weights[where], name=name,
            marker={"color": colour, "pattern": {"shape": PART_PATTERNS[part]}},
            customdata=[f"{i}: {labels[i]}" for i in where],
            hovertemplate="%{customdata}<br>weight %{y:.4f}<extra>" + name + "</extra>"))
    fig.update_layout(xaxis=token_axis("token [CLS] attends to", tickangle=-60, categoryorder="array",
                                       categoryarray=names))
    top = float(weights.max(initial=0.0)) or 1.0
    fig.update_yaxes(title="attention weight", range=[0, min(1.0, top * 1.15)], tickfont={"size": TICK_FONT_SIZE})
    fig.update_layout(bargap=0.15, legend={"orientation": "h", "y": 1.02, "yanchor": "bottom",
                                           "font": {"size": TICK_FONT_SIZE}})
    return compact_layout(fig, title, height=460, top=110)
