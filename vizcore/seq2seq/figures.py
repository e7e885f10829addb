"""Figures of the encoder-decoder page (plotly objects, never displayed here), for any ``Seq2SeqRun``.

* ``encoder_attention_heatmap``: one head's encoder self-attention, input x input;
* ``decoder_attention_heatmap``: one head's masked self-attention, the masked cells grey with ✕ (the
  generation page's ``causal_mask_heatmap``);
* ``cross_attention_heatmap``: one head's cross-attention, output rows x input columns, the gold
  alignment outlined and each row's most attended input dotted;
* ``in_a_column``: any of these three made narrow enough to stand three side by side;
* ``alignment_accuracy_heatmap``: the measured alignment accuracy of every cross-attention head;
* ``step_distribution_bars``: one decoding step's most probable next tokens, the written one highlighted;
* ``training_curves``: loss and held-out exact match against the training step.

Layers and heads are 0-based in the arguments, 1-based in titles and labels.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vizcore.colours import PROBABILITY
from vizcore.decoder.figures import DRAWN_COLOUR, causal_mask_heatmap, probability_ticks, shown
from vizcore.errors import VizError
from vizcore.mlm.figures import compact_layout, percent
from vizcore.plot import (
    FONT_SIZE,
    TICK_FONT_SIZE,
    attention_heatmap,
    axis_labels,
    base_layout,
    display_tokens,
    layer_head_heatmap,
    set_layout,
)
from vizcore.seq2seq.record import Seq2SeqRun

GOLD_COLOUR = "#e69f00"  # Okabe-Ito orange: the gold alignment
ARGMAX_COLOUR = "#c62828"  # the most attended input of each output
BAR_COLOUR = "#1f5fa8"
LOSS_COLOUR = "#1f5fa8"
MATCH_COLOUR = "#009e73"
WEIGHT = "attention weight"


def head_matrix(attention: np.ndarray, layer: int, head: int, what: str) -> np.ndarray:
    """``attention`` [L, H, rows, cols] -> [rows, cols] of one head; 0-based in, 1-based in the message."""
    layers, heads = attention.shape[:2]
    if not (0 <= layer < layers and 0 <= head < heads):
        raise VizError(f"The {what} has {layers} layers of {heads} heads: layer {layer + 1}, head {head + 1} "
                       f"does not exist (pick 1–{layers} and 1–{heads}).")
    return attention[layer, head]


def where(what: str, layer: int, head: int) -> str:
    return f"{what} · layer {layer + 1}, head {head + 1}"


def encoder_attention_heatmap(run: Seq2SeqRun, layer: int, head: int) -> go.Figure:
    """Encoder self-attention [input, input]: every input token reads the whole input."""
    matrix = head_matrix(run.encoder, layer, head, "encoder")
    fig = attention_heatmap(matrix, run.input_tokens, title=where("Encoder self-attention", layer, head),
                            value_name=WEIGHT)
    fig.update_xaxes(title="input token (attended to)")
    return fig.update_yaxes(title="input token (attending)")


def decoder_attention_heatmap(run: Seq2SeqRun, layer: int, head: int) -> go.Figure:
    """Decoder masked self-attention [position, position] over what the decoder read (the start token,
    then the outputs so far); cells above the diagonal are a later output, masked: grey with ✕."""
    matrix = head_matrix(run.decoder, layer, head, "decoder")
    fig = causal_mask_heatmap(matrix, run.decoder_tokens, where("Masked self-attention", layer, head))
    fig.layout.shapes = ()  # the generation page frames its newest token; here every row is an output step
    writes = np.array([[shown(t)] * len(run.output_tokens) for t in display_tokens(run.output_tokens)], dtype=object)
    fig.data[0].update(customdata=writes,
                       hovertemplate="position %{y} (writing %{customdata}) → %{x}<br>weight %{z:.4f}<extra></extra>")
    fig.update_xaxes(title="decoder input (attended to)")
    return fig.update_yaxes(title="decoder input (attending)")


def cross_attention_heatmap(run: Seq2SeqRun, layer: int, head: int) -> go.Figure:
    """Cross-attention [output, input]: row i is where the decoder looked while writing output i. The
    gold alignment (when known) is outlined; a dot marks each row's most attended input."""
    matrix = head_matrix(run.cross, layer, head, "cross-attention")
    fig = attention_heatmap(matrix, run.output_tokens, run.input_tokens, where("Cross-attention", layer, head),
                            value_name=WEIGHT)
    fig.data[0].hovertemplate = "writing %{y} → input %{x}<br>weight %{z:.4f}<extra></extra>"
    rows, cols = axis_labels(run.output_tokens), axis_labels(run.input_tokens)
    size = 22 if max(len(rows), len(cols)) <= 30 else 10
    if run.gold is not None:
        gold_rows, gold_cols = np.nonzero(run.gold)
        fig.add_trace(_cell_markers(matrix, rows, cols, gold_rows, gold_cols, "gold alignment", "gold: writing",
                                    {"symbol": "square-open", "size": size, "color": GOLD_COLOUR,
                                     "line": {"width": 3, "color": GOLD_COLOUR}}))
    most = matrix.argmax(axis=1)
    fig.add_trace(_cell_markers(matrix, rows, cols, np.arange(len(rows)), most, "most attended input",
                                "most attended while writing", {"symbol": "circle", "size": size // 3 + 4,
                                                                "color": ARGMAX_COLOUR}))
    fig.update_xaxes(title="input token (attended to)")
    fig.update_yaxes(title="output token (being written)")
    return fig.update_layout(legend={"orientation": "h", "x": 0, "y": -0.02, "yanchor": "top",
                                    "font": {"size": TICK_FONT_SIZE}})


def _cell_markers(matrix: np.ndarray, rows: list[str], cols: list[str], row_index: np.ndarray,
                  col_index: np.ndarray, name: str, hover: str, marker: dict) -> go.Scatter:
    return go.Scatter(x=[cols[j] for j in col_index], y=[rows[i] for i in row_index], mode="markers", name=name,
                      marker=marker, customdata=matrix[row_index, col_index].astype(float),
                      hovertemplate=f"{hover} %{{y}} → input %{{x}}<br>weight %{{customdata:.4f}}<extra></extra>")



def in_a_column(fig: go.Figure) -> go.Figure:
    """Fit one of the three attention heatmaps into a third of a page (the page's side-by-side view): the
    title on two lines, a thin colour bar titled along its side, no row-axis title (the page names the
    axes), the columns' axis title dropped too; fonts unchanged."""
    title = fig.layout.title.text.replace(" · ", "<br>", 1)
    fig.update_traces(colorbar={"thickness": 12, "title": {"side": "right"}}, selector={"type": "heatmap"})
    fig.update_xaxes(title=None)
    fig.update_yaxes(title=None)
    return fig.update_layout(title={"text": title, "y": 0.99, "yanchor": "top", "pad": {"t": 30}},
                             margin={"l": 10, "r": 10})

def alignment_accuracy_heatmap(accuracy: np.ndarray, title: str = "Alignment accuracy of each cross-attention head"
                               ) -> go.Figure:
    """``accuracy`` [Ld, H] in [0, 1] (NaN: not measured): the share of output characters whose most
    attended input is gold-aligned, per decoder layer (rows) and head (columns); the best head framed."""
    accuracy = np.asarray(accuracy, dtype=np.float64)
    if accuracy.ndim != 2:
        raise VizError(f"The alignment accuracy has shape {accuracy.shape}; expected [layer, head].")
    text = np.array([["–" if np.isnan(v) else f"{v:.0%}" for v in row] for row in accuracy], dtype=object)
    fig = layer_head_heatmap(accuracy, title, "alignment accuracy", scale=PROBABILITY, text=text, value_format=".1%",
                             layer_title="decoder layer")
    # The legend under the cells, not beside them: in half of a laptop's width a bar at the side left each of
    # four heads 12 px, narrower than its "88%".
    fig.update_traces(colorbar={"tickformat": ".0%", "orientation": "h", "y": -0.08, "yanchor": "top",
                                "title": {"side": "top"}, "thickness": 14}, selector={"type": "heatmap"})
    set_layout(fig, {"margin": {"b": 90}, "height": fig.layout.height + 80})
    if not np.isnan(accuracy).all():
        best_layer, best_head = np.unravel_index(np.nanargmax(accuracy), accuracy.shape)
        fig.add_shape(type="rect", x0=best_head - 0.5, x1=best_head + 0.5, y0=best_layer - 0.5, y1=best_layer + 0.5,
                      line={"color": GOLD_COLOUR, "width": 4})
    return fig


def step_distribution_bars(tokens: Sequence[str], probabilities: Sequence[float],
                           chosen: str | Sequence[str] | None, title: str) -> go.Figure:
    """One decoding step: ``tokens`` [k] with their ``probabilities`` [k], best first; the bar of
    ``chosen`` (the token written at this step) orange, or a note when it is not among them. A beam
    can go on with several tokens at one step: ``chosen`` may then list them, all orange."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    labels = [shown(t) for t in display_tokens(list(tokens))]
    picked = [chosen] if isinstance(chosen, str) else list(chosen or ())
    written = [t in picked for t in tokens]
    rows = list(range(len(labels)))  # positions, not labels: two tokens may display alike
    fig = go.Figure(go.Bar(
        x=probabilities, y=rows, orientation="h", name="next-token probability",
        marker_color=[DRAWN_COLOUR if w else BAR_COLOUR for w in written], customdata=labels,
        text=[percent(p) for p in probabilities], textposition="outside", textfont={"size": TICK_FONT_SIZE},
        cliponaxis=False, hovertemplate="%{customdata}<br>probability %{x:.4f}<extra></extra>",
    ))
    top = float(probabilities.max(initial=0.0)) or 1.0
    fig.update_xaxes(title="probability", range=[0, top * 1.3], tickvals=probability_ticks(top), tickformat=".0%",
                     tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(tickmode="array", tickvals=rows, autorange="reversed", tickfont={"size": FONT_SIZE},
                     ticktext=[f"<b>{label}</b>" if w else label for label, w in zip(labels, written)])
    if picked and not any(written):
        names = ", ".join(shown(t) for t in display_tokens(picked))
        fig.add_annotation(text=f"written: {names} (not among these {len(rows)})",
                           xref="paper", yref="paper", x=1, y=0.02, xanchor="right", showarrow=False,
                           font={"size": TICK_FONT_SIZE, "color": DRAWN_COLOUR})
    return compact_layout(fig, title, height=int(np.clip(34 * len(rows) + 150, 280, 900)))


def training_curves(steps: Sequence[int], loss: Sequence[float], match_steps: Sequence[int] = (),
                    exact_match: Sequence[float] = (), title: str = "Training") -> go.Figure:
    """Training loss (left axis) and held-out exact match in [0, 1] (right axis) against the step; exact
    match is measured less often, at ``match_steps``."""
    if len(steps) != len(loss) or len(match_steps) != len(exact_match):
        raise VizError(f"{len(steps)} steps for {len(loss)} losses and {len(match_steps)} steps for "
                       f"{len(exact_match)} exact matches: each pair must match.")
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=list(steps), y=list(loss), mode="lines", name="training loss",
                             line={"color": LOSS_COLOUR, "width": 3},
                             hovertemplate="step %{x}<br>loss %{y:.4f}<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=list(match_steps), y=list(exact_match), mode="lines+markers", name="exact match",
                             line={"color": MATCH_COLOUR, "width": 3}, marker={"size": 8},
                             hovertemplate="step %{x}<br>exact match %{y:.1%}<extra></extra>"), secondary_y=True)
    fig.update_xaxes(title="training step", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title="loss (cross-entropy)", rangemode="tozero", tickfont={"size": TICK_FONT_SIZE},
                     secondary_y=False)
    fig.update_yaxes(title="held-out exact match", range=[0, 1.02], tickvals=[0, 0.25, 0.5, 0.75, 1.0],
                     tickformat=".0%", showgrid=False, tickfont={"size": TICK_FONT_SIZE}, secondary_y=True)
    base_layout(fig, title, height=380)
    return fig.update_layout(margin={"t": 90}, legend={"orientation": "h", "y": 1.0, "yanchor": "bottom",
                                                       "font": {"size": TICK_FONT_SIZE}})
