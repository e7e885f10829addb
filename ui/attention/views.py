"""The Attention Explorer's views: each draws one part of the page from a cached result."""

from __future__ import annotations

from functools import partial

import numpy as np
import streamlit as st

from ui.attention import page as ua
from ui.attention_component import attention_view
from ui.feedback import or_stop
from ui.layout import for_screen
from ui.state import OTHER_MODEL, Selection, model_choices, model_or_stop
from vizcore.attention.aggregate import FLOW_MAX_TOKENS, ViewOptions, apply_view, attention_flow
from vizcore.attention.exports import ALL_HEADS_MAX_TOKENS, attention_csv, attention_json
from vizcore.attention.figures import (
    GRID_CELLS,
    HeadMap,
    attention_pair,
    difference_heatmap,
    flow_bars,
    merged_labels,
    special_mass_chart,
    statistic_heatmap,
)
from vizcore.attention.head_stats import LABELS, STATISTICS, statistics_table
from vizcore.attention.html_views import (
    BERTVIZ_MAX_TOKENS,
    HEAD_VIEW_MAX_TOKENS,
    LINE_THRESHOLD,
    NEURON_MAX_TOKENS,
    bertviz_head_view_html,
    bertviz_model_view_html,
    bertviz_neuron_view_html,
    head_view_html,
)
from vizcore.attention.payload import FULL_MAX_TOKENS
from vizcore.attention.renderer import attention_view_html
from vizcore.errors import VizError
from vizcore.model.record import Run
from vizcore.norms.figures import norm_share_heatmap, residual_norm_heatmap, sink_chart, value_size_bars
from vizcore.plot import attention_heatmap

KEY_IMAGE_FORMAT = "attention.image_format"


def chart_config() -> dict:
    """Plotly's camera button saves the chart in the browser (offline), as PNG or SVG (Export view)."""
    image_format = st.session_state.get(KEY_IMAGE_FORMAT, "png")
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": image_format, "scale": 2 if image_format == "png" else 1}}


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


def shown_matrix(matrix: np.ndarray, result: Run, options: ViewOptions):
    """``apply_view`` with a clear message (and a stopped page) when the options leave nothing."""
    return or_stop(apply_view, matrix, result.tokens, result.offsets, result.special_mask, result.segment_ids, options)


def heatmap_view(result: Run, layer: int, head: int, options: ViewOptions, key: str,
                 matrix: np.ndarray | None = None, title: str | None = None) -> None:
    source = result.attention[layer - 1, head - 1] if matrix is None else matrix
    shown, rows, cols = shown_matrix(source, result, options)
    title = title or f"{result.model} · layer {layer}, head {head} · {len(result.tokens)} tokens"
    figure = attention_heatmap(shown, rows.tokens, cols.tokens, title, rows.segments, cols.segments)
    st.plotly_chart(for_screen(figure), key=key, config=chart_config())
    caption = ("Rows are query tokens (who attends), columns key tokens (attended to); hover a cell for "
               "the exact weight. Use the camera icon for a PNG.")
    if (result.segment_ids == 1).any():
        caption += " Labels: sentence A in blue, sentence B in orange italics."
    st.caption(" ".join(part for part in (caption, options_caption(options)) if part))


def renderer_view(result: Run, view: str, layer: int, head: int, options: ViewOptions) -> None:
    """The head heatmap or the layers x heads grid, drawn in the browser (ui/attention_component.py):
    arrow keys, the view's own steppers and a click in the grid switch with no server round trip."""
    attention_view(result, key="attention.renderer", keys={"layer": ua.KEY_LAYER, "head": ua.KEY_HEAD,
                                                          "view": ua.KEY_VIEW},
                   layer=layer, head=head, view=view, options=options)
    if view == "grid":
        st.caption("Rows are layers, columns heads; the black frame marks the selected head. Click a head to "
                   f"open it as a heatmap. Each head is shown as at most {GRID_CELLS} × {GRID_CELLS} block means.")
        return
    caption = ("Rows are query tokens (who attends), columns key tokens (attended to); hover a cell for the "
               "weight. Click the view, then ←/→ change the head and ↑/↓ the layer at once. Weights are sent "
               "to the browser in 8 bits (±0.004); the Export view has the exact numbers and images.")
    if (result.segment_ids == 1).any():
        caption += " Labels: sentence A in blue, sentence B in orange italics."
    st.caption(" ".join(part for part in (caption, options_caption(options)) if part))


def _table_clicked(table) -> None:
    rows = st.session_state.get("attention.stats_table", {}).get("selection", {}).get("rows", [])
    if rows:
        row = table.iloc[rows[0]]
        ua.open_head(int(row["layer"]), int(row["head"]))


def statistics_view(result: Run, sel: Selection) -> None:
    stats = ua.statistics(ua.result_key(sel), result)
    table = statistics_table(stats)
    st.markdown("Per-head statistics after Clark et al. 2019, *What does BERT look at?* Each is a mean over "
                "the query tokens. Sort by clicking a column header; **select a row to open that head**.")
    st.dataframe(table, key="attention.stats_table", on_select=lambda: _table_clicked(table),
                 selection_mode="single-row", hide_index=True, height=360,
                 column_config={LABELS[s]: st.column_config.NumberColumn(format="%.3f") for s in STATISTICS})
    st.plotly_chart(for_screen(special_mass_chart(stats["cls"], stats["sep"],
                                                  "Attention mass on [CLS] and [SEP] per layer")),
                    key="attention.special_mass", config=chart_config())
    chosen = st.selectbox("Statistic as a layers × heads map", STATISTICS, format_func=LABELS.get,
                          key="attention.stat_map")
    st.plotly_chart(for_screen(statistic_heatmap(stats[chosen], LABELS[chosen], f"{LABELS[chosen]} per head")),
                    key="attention.stat_heatmap", config=chart_config())
    st.caption("[CLS] = the special token at position 0; [SEP] = every other special token; punctuation = "
               "ordinary tokens made only of punctuation or symbols. Entropy is in nats (0 = all weight on "
               f"one token; log n = {np.log(len(result.tokens)):.2f} = spread evenly over all {len(result.tokens)}).")


@st.cache_data(max_entries=16, show_spinner="Solving max-flow problems…")
def _flow_row(key: tuple, query: int, _result: Run) -> np.ndarray:
    return attention_flow(_result.attention, queries=[query])[query]


def aggregate_view(result: Run, sel: Selection, layer: int, options: ViewOptions) -> None:
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


def flow_view(result: Run, sel: Selection, n: int) -> None:
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
    st.plotly_chart(for_screen(figure), key="attention.flow", config=chart_config())
    st.caption(f"Attention flow (Abnar & Zuidema 2020), limited to {FLOW_MAX_TOKENS} tokens: the layers form "
               "a graph with one node per token per layer and edge capacities from the residual-included "
               "head means (0.5·A + 0.5·I); each bar is the maximum flow from the chosen output token to "
               "one input token (at most 1). Bars need not sum to 1.")


def value_weighted_view(result: Run, sel: Selection, layer: int, head: int, options: ViewOptions) -> None:
    """Kobayashi et al. (2020): each weight beside ||alpha f(x)||, what it moves; the sinks; the residual norms."""
    norms = or_stop(ua.value_norms_for, *ua.result_key(sel))
    weights, rows, cols = shown_matrix(norms.weights[layer - 1, head - 1], result, options)
    shares, _, _ = shown_matrix(norms.norm_shares(layer - 1, head - 1), result, options)
    # One under another: side by side, at 1024 px, a sentence's column labels ran into each other
    raw = attention_heatmap(weights, rows.tokens, cols.tokens, f"Weights α · layer {layer}, head {head}",
                            rows.segments, cols.segments)
    st.plotly_chart(for_screen(raw), key="attention.values_weights", config=chart_config())
    weighted = norm_share_heatmap(shares, rows.tokens, cols.tokens, f"‖αf(x)‖ · layer {layer}, head {head}",
                                  rows.segments, cols.segments)
    st.plotly_chart(for_screen(weighted), key="attention.values_norms", config=chart_config())
    st.caption("Above, the weights α; below, ‖α f(x)‖ (Kobayashi et al. 2020): each weight times the length of "
               "what the key token sends, its value vector through the head's part of W_O, shown as a share of "
               "the row's total so both maps use one colour scale. Where the second map is paler than the first, "
               "the head looks at a token that moves little. " + options_caption(options))
    st.plotly_chart(for_screen(value_size_bars(norms.value_norms[layer - 1, head - 1], norms.tokens,
                                               f"‖f(x)‖ per key token · layer {layer}, head {head}")),
                    key="attention.values_sizes", config=chart_config())
    st.plotly_chart(for_screen(sink_chart(norms.sink_shares(), "Sinks: share on [CLS], [SEP], punctuation")),
                    key="attention.values_sinks", config=chart_config())
    st.caption("Per layer, the share of each query's attention that goes to [CLS], [SEP] and punctuation "
               "(solid: weights, dashed: norms), averaged over heads and queries. A large weight with a small "
               "norm is a sink: the head parks there and takes almost nothing.")
    residual = residual_norm_heatmap(norms.residual_norms, norms.tokens, "Residual stream: ‖h‖ per token")
    st.plotly_chart(for_screen(residual), key="attention.values_residual", config=chart_config())
    st.caption("The length of each token's hidden state after each layer (row 0: the embeddings). A token far "
               "longer than the rest carries a massive activation (Sun et al. 2024). Post-norm models (BERT) "
               "normalise every layer's output, which keeps these lengths close.")


@st.cache_data(max_entries=8, show_spinner="Building the view…")
def _html(key: tuple, kind: str, layer: int, head: int, pair_filter: str, _result: Run,
          _sel: Selection | None = None) -> str:
    if kind == "lines":
        return head_view_html(_result, layer, [head], head, pair_filter)
    if kind == "standalone":
        return head_view_html(_result, layer, list(range(_result.num_heads)), head, pair_filter)
    if kind == "head":
        return bertviz_head_view_html(_result, layer)
    if kind == "model":
        return bertviz_model_view_html(_result)
    return bertviz_neuron_view_html(model_or_stop(_sel), _result, layer, head)


def html_or_stop(sel: Selection, result: Run, kind: str, layer: int, head: int,
                 pair_filter: str = "all") -> str:
    return or_stop(_html, ua.result_key(sel), kind, layer - 1, head - 1, pair_filter, result, sel, show=st.info)


def lines_view(result: Run, layer: int, head: int, options: ViewOptions) -> None:
    """The head view with lines, drawn by the same client-side renderer as the heatmap."""
    attention_view(result, key="attention.renderer", keys={"layer": ua.KEY_LAYER, "head": ua.KEY_HEAD},
                   layer=layer, head=head, view="lines", options=options)
    st.caption(f"Layer {layer}, head {head}: queries on the left, keys on the right; a line's opacity is its "
               f"weight (lines under {LINE_THRESHOLD} are left out until you hover). Hover or tap a token to "
               "see only its lines; click the view, then ←/→ change the head and ↑/↓ the layer at once."
               + (" Sentence A in blue, B in orange italics." if (result.segment_ids == 1).any() else "")
               + " " + options_caption(options))


def bertviz_view(result: Run, sel: Selection, layer: int, head: int) -> None:
    kinds = {"head": "Head view", "model": "Model view", "neuron": "Neuron view"}
    kind = st.radio("bertviz view", list(kinds), format_func=kinds.get, horizontal=True, key="attention.bertviz")
    page = html_or_stop(sel, result, kind, layer, head)
    n = len(result.tokens)
    height = {"head": 24 * n + 120, "model": 130 * result.num_layers + 120, "neuron": 28 * n + 220}[kind]
    st.iframe(page, height=int(min(height, 5000)))
    st.caption(f"bertviz {kinds[kind].lower()} (Vig 2019), rendered offline: D3 and jQuery are served from this "
               "app, not a CDN. Its menus count layers and heads from 1, as the rest of the app does. Limited to "
               f"{BERTVIZ_MAX_TOKENS} tokens (neuron view {NEURON_MAX_TOKENS}) because bertviz puts every weight "
               "into the page; weights are rounded to 4 decimals.")


def _minimal_pair(text: str) -> str:
    for a, b in (("tired", "wide"), ("wide", "tired")):
        if a in text:
            return text.replace(a, b)
    return "The animal didn't cross the street because it was too wide."


def _side_by_side(first: Run, second: Run, layer: int, head: int,
                  options: ViewOptions, names: tuple[str, str]) -> None:
    maps, heads = [], []
    for result in (first, second):
        l, h = min(layer, result.num_layers), min(head, result.num_heads)  # a smaller second model: its last
        matrix, rows, cols = shown_matrix(result.attention[l - 1, h - 1], result, options)
        maps.append(HeadMap(matrix, rows.tokens, cols.tokens, rows.segments, cols.segments))
        heads.append(f"layer {l}, head {h}")
    short = tuple(name.rsplit("/", 1)[-1] for name in names)  # a hub id's repository name fits under its map
    if heads[0] == heads[1]:
        figure = attention_pair(*maps, short, f"{short[0]} and {short[1]} · {heads[0]}")
    else:
        figure = attention_pair(*maps, tuple(f"{n}, {h}" for n, h in zip(short, heads)), f"{short[0]} and {short[1]}")
    st.plotly_chart(for_screen(figure), key="attention.compare", config=chart_config())
    a, b = maps[0].matrix, maps[1].matrix
    if a.shape != b.shape:
        st.info(f"The two have {a.shape[0]} and {b.shape[0]} tokens: a difference needs the same number of "
                "tokens, position by position. Try a minimal pair that swaps one word for one word.")
        return
    figure = difference_heatmap(a, b, merged_labels(maps[0].rows, maps[1].rows),
                                merged_labels(maps[0].cols, maps[1].cols), f"Difference: {names[0]} minus {names[1]}")
    st.plotly_chart(for_screen(figure), key="attention.difference", config=chart_config())
    st.caption("Red (positive on the colour bar): more attention in the first, blue (negative): more in the "
               "second. Tokens that differ are shown as "
               f"first/second. Largest change: {np.abs(a - b).max():.3f}.")


def compare_view(result: Run, sel: Selection, layer: int, head: int, options: ViewOptions) -> None:
    modes = {"sentences": "Two sentences", "models": "Two models"}
    mode = st.radio("Compare", list(modes), format_func=modes.get, horizontal=True, key="attention.compare_mode")
    if mode == "sentences":
        if "attention.compare_text" not in st.session_state:
            st.session_state["attention.compare_text"] = _minimal_pair(sel.text)
        other = st.text_input("Second sentence to compare with the sidebar's", key="attention.compare_text")
        try:
            second = ua.attention_for(sel.model, sel.device, other, sel.pair)
        except VizError as error:
            st.error(str(error))
            return
        _side_by_side(result, second, layer, head, options, ("sidebar sentence", "second sentence"))
        return
    choices = [m for m in model_choices() if m not in (sel.model, OTHER_MODEL)]
    other_model = st.selectbox("Second model", choices, key="attention.compare_model",
                               help="Built-in models work offline; hub ids need internet or a local cache.")
    try:
        second = ua.attention_for(other_model, sel.device, sel.text, sel.pair)
    except VizError as error:
        st.error(str(error))
        return
    _side_by_side(result, second, layer, head, options, (sel.model, other_model))


def export_view(result: Run, sel: Selection, layer: int, head: int, options: ViewOptions) -> None:
    st.markdown("**Attention as data.** CSV is long format, one row per weight: `layer,head,query_index,"
                "query_token,key_index,key_token,weight` (layer and head from 1). JSON holds `tokens` and "
                "`attention` as `[query][key]` for one head, `[layer][head][query][key]` for all heads.")
    stem = f"attention-L{layer}-H{head}"
    columns = st.columns(2)
    columns[0].download_button("This head as CSV", partial(attention_csv, result, layer - 1, head - 1),
                               file_name=f"{stem}.csv", mime="text/csv", key="attention.dl_head_csv")
    columns[0].download_button("This head as JSON", partial(attention_json, result, layer - 1, head - 1),
                               file_name=f"{stem}.json", mime="application/json", key="attention.dl_head_json")
    if len(result.tokens) <= ALL_HEADS_MAX_TOKENS:
        columns[1].download_button("All heads as CSV", partial(attention_csv, result),
                                   file_name="attention-all-heads.csv", mime="text/csv", key="attention.dl_all_csv")
        columns[1].download_button("All heads as JSON", partial(attention_json, result),
                                   file_name="attention-all-heads.json", mime="application/json",
                                   key="attention.dl_all_json")
    else:
        columns[1].info(f"All-heads files are limited to {ALL_HEADS_MAX_TOKENS} tokens (this input has "
                        f"{len(result.tokens)}): export one head at a time.")
    # The views as files in a row of their own: two columns, not a third one, hold their labels whole at 1024 px
    st.markdown("**Views as files.** Self-contained HTML: opens in any browser with no network.")
    views = st.columns(2)
    views[0].download_button("Heatmap, grid and head view as HTML",
                             partial(attention_view_html, result, layer - 1, head - 1, "heatmap", options),
                             file_name=f"attention-L{layer}-H{head}.html", mime="text/html",
                             key="attention.dl_view_html")
    views[0].caption("The views of this page drawn in the browser: switch heads and layers, hover, filter. "
                     f"Every layer up to {FULL_MAX_TOKENS} tokens, else layer {layer}.")
    if len(result.tokens) <= HEAD_VIEW_MAX_TOKENS:
        page = html_or_stop(sel, result, "standalone", layer, head, options.pair_filter)
        views[1].download_button("bertviz head view as HTML", page, file_name=f"head-view-L{layer}.html",
                                 mime="text/html", key="attention.dl_html")
        views[1].caption(f"bertviz's head view of layer {layer}, all heads.")
    st.markdown("**Figures as images.** Every chart's camera icon (top right of the chart, on hover) saves it "
                "in your browser, offline. Choose its format here:")
    st.radio("Image format", ["png", "svg"], horizontal=True, key=KEY_IMAGE_FORMAT,
             format_func=lambda f: f.upper() + (" (2x resolution)" if f == "png" else " (vector, for papers)"))
    heatmap_view(result, layer, head, options, key="attention.export_heatmap")


def show_view(view: str, result: Run, sel: Selection, layer: int, head: int,
              options: ViewOptions) -> None:
    if view in ("heatmap", "grid"):
        renderer_view(result, view, layer, head, options)
    elif view == "stats":
        statistics_view(result, sel)
    elif view == "aggregate":
        aggregate_view(result, sel, layer, options)
    elif view == "values":
        value_weighted_view(result, sel, layer, head, options)
    elif view == "lines":
        lines_view(result, layer, head, options)
    elif view == "bertviz":
        bertviz_view(result, sel, layer, head)
    elif view == "compare":
        compare_view(result, sel, layer, head, options)
    elif view == "export":
        export_view(result, sel, layer, head, options)
