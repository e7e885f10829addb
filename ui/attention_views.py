"""The Attention Explorer's views: each draws one part of the page from a cached result."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import attention as ua
from ui.state import Selection
from vizcore.aggregate import FLOW_MAX_TOKENS, ViewOptions, apply_view, attention_flow
from vizcore.attention import AttentionResult
from vizcore.errors import VizError
from vizcore.figures_attention import (
    flow_bars,
    head_grid,
    head_heatmap,
    special_mass_chart,
    statistic_heatmap,
)
from vizcore.head_stats import LABELS, STATISTICS, statistics_table

CHART_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def options_caption(options: ViewOptions) -> str:
    notes = []
    if options.pair_filter != "all":
        notes.append(f"pair filter {options.pair_filter.replace('->', '→')}: queries of the first "
                     "sentence named, keys of the second; weights are the model's own, so a row sums "
                     "to the share sent into that sentence")
    if options.hide_special:
        notes.append("[CLS]/[SEP] hidden, every row renormalised to sum to 1")
    if options.merge_words:
        notes.append("word pieces merged: sum over a key word's pieces, mean over a query word's pieces")
    return ("Shown with " + "; ".join(notes) + ".") if notes else ""


def shown_matrix(matrix: np.ndarray, result: AttentionResult, options: ViewOptions):
    """``apply_view`` with a clear message (and a stopped page) when the options leave nothing."""
    try:
        return apply_view(matrix, result.tokens, result.offsets, result.special_mask, result.segment_ids, options)
    except VizError as error:
        st.error(str(error))
        st.stop()


def heatmap_view(result: AttentionResult, layer: int, head: int, options: ViewOptions, key: str,
                 matrix: np.ndarray | None = None, title: str | None = None) -> None:
    source = result.attention[layer - 1, head - 1] if matrix is None else matrix
    shown, rows, cols = shown_matrix(source, result, options)
    title = title or f"{result.model} · layer {layer}, head {head} · {len(result.tokens)} tokens"
    figure = head_heatmap(shown, rows.tokens, cols.tokens, title, rows.segments, cols.segments)
    st.plotly_chart(figure, key=key, config=CHART_CONFIG)
    caption = ("Rows are query tokens (who attends), columns key tokens (attended to); hover a cell for "
               "the exact weight. Use the camera icon for a PNG.")
    if (result.segment_ids == 1).any():
        caption += " Labels: sentence A in blue, sentence B in orange."
    st.caption(" ".join(part for part in (caption, options_caption(options)) if part))


def _grid_clicked() -> None:
    state = st.session_state.get("attention.grid")
    points = (state or {}).get("selection", {}).get("points", [])
    if not points:
        return
    heads = st.session_state.get("attention.grid_heads", 1)
    point = points[0]
    index = point.get("point_index", point.get("point_number"))
    if index is None:
        return
    ua.open_head(int(index) // heads + 1, int(index) % heads + 1)


def grid_view(result: AttentionResult, sel: Selection, layer: int, head: int) -> None:
    small = ua.grid_matrices(ua.result_key(sel), result)
    st.session_state["attention.grid_heads"] = result.num_heads
    figure = head_grid(small, f"{result.model} · all {result.num_layers} layers × {result.num_heads} heads",
                       selected=(layer - 1, head - 1))
    st.plotly_chart(figure, key="attention.grid", on_select=_grid_clicked, selection_mode="points",
                    config=CHART_CONFIG)
    n = len(result.tokens)
    note = (f" Each head is shown at {small.shape[-1]} × {small.shape[-1]} cells, each the mean of a block of "
            f"about {n / small.shape[-1]:.0f} × {n / small.shape[-1]:.0f} weights, so the page stays fast; "
            "open a head to see every weight.") if small.shape[-1] < n else ""
    st.caption("Rows are layers, columns heads; the red frame marks the selected head. Click a head to "
               "open it as a heatmap." + note)


def _table_clicked(table) -> None:
    rows = st.session_state.get("attention.stats_table", {}).get("selection", {}).get("rows", [])
    if rows:
        row = table.iloc[rows[0]]
        ua.open_head(int(row["layer"]), int(row["head"]))


def statistics_view(result: AttentionResult, sel: Selection) -> None:
    stats = ua.statistics(ua.result_key(sel), result)
    table = statistics_table(stats)
    st.markdown("Per-head statistics after Clark et al. 2019, *What does BERT look at?* Each is a mean over "
                "the query tokens. Sort by clicking a column header; **select a row to open that head**.")
    st.dataframe(table, key="attention.stats_table", on_select=lambda: _table_clicked(table),
                 selection_mode="single-row", hide_index=True, height=360,
                 column_config={LABELS[s]: st.column_config.NumberColumn(format="%.3f") for s in STATISTICS})
    st.plotly_chart(special_mass_chart(stats["cls"], stats["sep"], "Attention mass on [CLS] and [SEP] per layer"),
                    key="attention.special_mass", config=CHART_CONFIG)
    chosen = st.selectbox("Statistic as a layers × heads map", STATISTICS, format_func=LABELS.get,
                          key="attention.stat_map")
    st.plotly_chart(statistic_heatmap(stats[chosen], LABELS[chosen], f"{LABELS[chosen]} per head"),
                    key="attention.stat_heatmap", config=CHART_CONFIG)
    st.caption("[CLS] = the special token at position 0; [SEP] = every other special token; punctuation = "
               "ordinary tokens made only of punctuation or symbols. Entropy is in nats (0 = all weight on "
               f"one token; log n = {np.log(len(result.tokens)):.2f} = spread evenly over all {len(result.tokens)}).")


@st.cache_data(max_entries=16, show_spinner="Solving max-flow problems…")
def _flow_row(key: tuple, query: int, _result: AttentionResult) -> np.ndarray:
    return attention_flow(_result.attention, queries=[query])[query]


def aggregate_view(result: AttentionResult, sel: Selection, layer: int, options: ViewOptions) -> None:
    kinds = {"mean": "Mean over the layer's heads", "rollout": "Attention rollout (up to the layer)",
             "flow": "Attention flow (one token)"}
    kind = st.radio("Aggregation", list(kinds), format_func=kinds.get, horizontal=True, key="attention.aggregate")
    n = len(result.tokens)
    if kind == "flow":
        flow_view(result, sel, n)
        return
    matrices = ua.aggregates(ua.result_key(sel), result)
    title = (f"{result.model} · mean of layer {layer}'s {result.num_heads} heads" if kind == "mean"
             else f"{result.model} · attention rollout through layers 1–{layer}")
    heatmap_view(result, layer, 0, options, key="attention.aggregate_heatmap",
                 matrix=matrices[kind][layer - 1], title=title)
    if kind == "rollout":
        st.caption("Rollout (Abnar & Zuidema 2020): each layer's head mean with the residual connection "
                   "added as 0.5·A + 0.5·I, rows renormalised, multiplied from layer 1 up to the chosen "
                   "layer. A row says how much each input token contributes to that token's representation.")


def flow_view(result: AttentionResult, sel: Selection, n: int) -> None:
    if n > FLOW_MAX_TOKENS:
        st.info(f"Attention flow is limited to inputs of at most {FLOW_MAX_TOKENS} tokens (this one has {n}): "
                "it solves one max-flow problem per token pair. Use rollout for longer inputs.")
        return
    query = st.selectbox("Output token", range(n), format_func=lambda i: f"{i}: {result.tokens[i]}",
                         key="attention.flow_query")
    values = _flow_row(ua.result_key(sel), int(query), result)
    figure = flow_bars(values, result.tokens,
                       f"Attention flow from '{result.tokens[query]}' (after layer {result.num_layers}) "
                       "to each input token", "max flow")
    st.plotly_chart(figure, key="attention.flow", config=CHART_CONFIG)
    st.caption(f"Attention flow (Abnar & Zuidema 2020), limited to {FLOW_MAX_TOKENS} tokens: the layers form "
               "a graph with one node per token per layer and edge capacities from the residual-included "
               "head means (0.5·A + 0.5·I); each bar is the maximum flow from the chosen output token to "
               "one input token (at most 1). Bars need not sum to 1.")


def show_view(view: str, result: AttentionResult, sel: Selection, layer: int, head: int,
              options: ViewOptions) -> None:
    if view == "heatmap":
        heatmap_view(result, layer, head, options, key="attention.heatmap")
    elif view == "grid":
        grid_view(result, sel, layer, head)
    elif view == "stats":
        statistics_view(result, sel)
    elif view == "aggregate":
        aggregate_view(result, sel, layer, options)
