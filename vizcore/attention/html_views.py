"""Self-contained HTML views of attention that work with no network: our own head view, and
bertviz's head, model and neuron views with the libraries they need inlined.

bertviz loads RequireJS, D3 and jQuery from CDNs, so in a classroom without internet nothing
renders. Here D3 v5 and jQuery 3 (from the npm registry, licences beside them in
``vizcore/static/``) are inlined first, then a ten-line ``require`` shim hands them to bertviz's own
JavaScript. Every piece of user text enters a page only as JSON inside a ``<script>``, with ``<``,
``>`` and ``&`` written as ``\\u003c``, ``\\u003e``, ``\\u0026``, and is put on screen with
``textContent`` / jQuery ``.text()``: a sentence holding ``<script>`` or ``<img onerror=...>`` shows
as text.
"""

from __future__ import annotations

import html
import re
import uuid
from pathlib import Path

import numpy as np

from vizcore.attention.aggregate import pair_selection
from vizcore.attention.renderer import script_json
from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel
from vizcore.model.record import Run
from vizcore.model.run import Capture, run
from vizcore.plot import display_tokens

STATIC = Path(__file__).resolve().parents[1] / "static"
HEAD_VIEW_MAX_TOKENS = 200
BERTVIZ_MAX_TOKENS = 64  # head and model view: every weight of every head is in the page
NEURON_MAX_TOKENS = 32  # neuron view also carries every query and key vector
LINE_THRESHOLD = 0.01
DECIMALS = 4  # weights in the pages are rounded: 4 decimals, a third of the bytes of full floats

_REQUIRE_SHIM = """
window.require = window.requirejs = function (names, callback) {
  var found = {d3: window.d3, jquery: window.jQuery};
  callback.apply(null, names.map(function (name) { return found[name]; }));
};
"""


def _rounded(matrix: np.ndarray) -> list:
    return np.round(np.asarray(matrix, dtype=np.float64), DECIMALS).tolist()


def _page(title: str, body: str, scripts: list[str], background: str = "white") -> str:
    inline = "\n".join(f"<script>\n{code}\n</script>" for code in scripts)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title>"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">"
        f"<style>html,body{{overflow:auto}}body{{font-family:Helvetica,Arial,sans-serif;font-size:16px;background:{background};margin:8px}}"
        ".token{font-size:16px;cursor:pointer}.token.dim{opacity:.35}select{font-size:16px}</style>"
        f"</head><body>\n{body}\n{inline}\n</body></html>\n"
    )


def head_view_html(result: Run, layer: int, heads: list[int], initial_head: int,
                   pair_filter: str = "all") -> str:
    """Our own head view of ``layer`` (0-based) for the given heads (0-based), as a standalone page."""
    rows, cols = pair_selection(result.segment_ids, pair_filter)
    if max(len(rows), len(cols)) > HEAD_VIEW_MAX_TOKENS:
        raise VizError(f"The head view draws at most {HEAD_VIEW_MAX_TOKENS} tokens (this input has "
                       f"{len(result.tokens)}): use the heatmap, which has no limit.")
    tokens = display_tokens(result.tokens)
    data = {
        "title": f"{result.model} · layer {layer + 1}" + (f" · {pair_filter}" if pair_filter != "all" else ""),
        "left": [tokens[i] for i in rows],
        "right": [tokens[j] for j in cols],
        "leftSegments": result.segment_ids[rows].tolist(),
        "rightSegments": result.segment_ids[cols].tolist(),
        "heads": {f"head {h + 1}": _rounded(result.attention[layer, h][np.ix_(rows, cols)]) for h in heads},
        "initialHead": f"head {initial_head + 1}",
        "threshold": LINE_THRESHOLD,
    }
    body = ("<div><strong id=\"head-title\"></strong> <label>Head: <select id=\"head-select\"></select></label></div>"
            "<div id=\"head-status\" style=\"margin:6px 0;color:#333\"></div><div id=\"head-view\"></div>")
    script = (STATIC / "head_view.js").read_text()
    return _page("Head view", body, [f"window.HEAD_VIEW = {script_json(data)};", script])


# bertviz numbers its layer and head menus from 0 (each option's text is its index); the app counts from 1.
# Its menus are filled once its code has run (inside require's callback), so relabel whenever they change.
_ONE_BASED_MENUS = """
(function () {
  function relabel() {
    document.querySelectorAll("select#layer option, select#att_head option").forEach(function (option) {
      var shown = String(Number(option.value) + 1);
      if (option.textContent !== shown) option.textContent = shown;
    });
  }
  new MutationObserver(relabel).observe(document.body, {childList: true, subtree: true});
  relabel();
})();
"""


def _libraries() -> list[str]:
    return [(STATIC / "d3.v5.min.js").read_text(), (STATIC / "jquery.v3.min.js").read_text(), _REQUIRE_SHIM]


def _bertviz_js(name: str) -> str:
    """bertviz's own view code, minus its ``require.config`` that points at CDNs (the shim serves both)."""
    import bertviz

    code = (Path(bertviz.__file__).resolve().parent / name).read_text()
    return re.sub(r"require\.config\(\{.*?\}\);", "", code, count=1, flags=re.S)


def _check_bertviz_length(result: Run, limit: int, view: str) -> None:
    if len(result.tokens) > limit:
        raise VizError(f"bertviz's {view} is limited here to {limit} tokens (this input has {len(result.tokens)}): "
                       "it puts every weight of every head into the page. Use the heatmap or the grid.")


def _bertviz_filters(result: Run, attention: np.ndarray) -> list[dict]:
    tokens = display_tokens(result.tokens)
    names = ["all"] + (["A->A", "B->B", "A->B", "B->A"] if (result.segment_ids == 1).any() else [])
    filters = []
    for name in names:
        rows, cols = pair_selection(result.segment_ids, name)
        filters.append({"name": "All" if name == "all" else name.replace("->", " -> "),
                        "attn": _rounded(attention[:, :, rows][:, :, :, cols]),
                        "left_text": [tokens[i] for i in rows], "right_text": [tokens[j] for j in cols]})
    return filters


def _filter_select(filters: list[dict]) -> str:
    if len(filters) < 2:
        return ""
    options = "".join(f'<option value="{i}">{html.escape(f["name"])}</option>' for i, f in enumerate(filters))
    return f'Attention: <select id="filter">{options}</select>'


def bertviz_head_view_html(result: Run, layer: int = 0) -> str:
    """bertviz's head view (all layers and heads, its own controls), offline."""
    _check_bertviz_length(result, BERTVIZ_MAX_TOKENS, "head view")
    filters = _bertviz_filters(result, result.attention)
    vis_id = f"bertviz-{uuid.uuid4().hex}"
    params = {"attention": filters, "default_filter": "0", "root_div_id": vis_id, "layer": layer, "heads": None,
              "include_layers": list(range(result.num_layers))}
    body = (f'<div id="{vis_id}"><span style="user-select:none">Layer: <select id="layer"></select> '
            f"{_filter_select(filters)}</span><div id='vis'></div></div>")
    code = _bertviz_js("head_view.js").replace("PYTHON_PARAMS", script_json(params))
    return _page("bertviz head view", body, [*_libraries(), code, _ONE_BASED_MENUS])


def bertviz_model_view_html(result: Run) -> str:
    """bertviz's model view (every layer x head as a thumbnail; click one to enlarge), offline."""
    _check_bertviz_length(result, BERTVIZ_MAX_TOKENS, "model view")
    filters = _bertviz_filters(result, result.attention)
    vis_id = f"bertviz-{uuid.uuid4().hex}"
    # include_layers and include_heads are only labels in bertviz's model view (the weights are not filtered
    # by them here): 1-based, as the app counts.
    params = {"attention": filters, "default_filter": "0", "display_mode": "light", "root_div_id": vis_id,
              "include_layers": list(range(1, result.num_layers + 1)),
              "include_heads": list(range(1, result.num_heads + 1)), "total_heads": result.num_heads}
    body = (f'<div id="{vis_id}"><span style="user-select:none">{_filter_select(filters)}</span>'
            "<div id='vis'></div></div>")
    code = _bertviz_js("model_view.js").replace("PYTHON_PARAMS", script_json(params))
    return _page("bertviz model view", body, [*_libraries(), code])


def queries_and_keys(loaded: LoadedModel, result: Run) -> tuple[np.ndarray, np.ndarray]:
    """Per-head query and key vectors ``[layer, head, T, d_head]``, read by the core's hooks in one run."""
    if loaded.is_decoder:
        raise VizError(f"The neuron view needs a BERT-style encoder; '{loaded.name}' is a decoder.")
    recorded = run(loaded, result.text, result.pair, capture=Capture(hidden=False, qkv=True))
    return recorded.queries, recorded.keys


def bertviz_neuron_view_html(loaded: LoadedModel, result: Run, layer: int = 0, head: int = 0) -> str:
    """bertviz's neuron view: how query and key vectors produce one head's weights, offline."""
    _check_bertviz_length(result, NEURON_MAX_TOKENS, "neuron view")
    queries, keys = queries_and_keys(loaded, result)
    tokens = display_tokens(result.tokens)
    is_pair = (result.segment_ids == 1).any()
    data = {}
    for name, code in (("all", "all"), ("A->A", "aa"), ("B->B", "bb"), ("A->B", "ab"), ("B->A", "ba")):
        if code != "all" and not is_pair:
            continue
        rows, cols = pair_selection(result.segment_ids, name)
        data[code] = {"attn": _rounded(result.attention[:, :, rows][:, :, :, cols]),
                      "queries": _rounded(queries[:, :, rows]), "keys": _rounded(keys[:, :, cols]),
                      "left_text": [tokens[i] for i in rows], "right_text": [tokens[j] for j in cols]}
    vis_id = f"bertviz-{uuid.uuid4().hex}"
    params = {"attention": data, "default_filter": "all", "root_div_id": vis_id, "bidirectional": not loaded.is_decoder,
              "display_mode": "light", "layer": layer, "head": head}
    pair_options = ("<span class=\"dropdown-label\">Attention: </span><select id=\"filter\">"
                    "<option value=\"all\">All</option><option value=\"aa\">Sentence A -> Sentence A</option>"
                    "<option value=\"ab\">Sentence A -> Sentence B</option><option value=\"ba\">Sentence B -> "
                    "Sentence A</option><option value=\"bb\">Sentence B -> Sentence B</option></select>"
                    ) if is_pair else ""
    body = (f'<div id="{vis_id}" style="padding:8px"><span style="user-select:none">'
            '<span class="dropdown-label">Layer: </span><select id="layer"></select> '
            '<span class="dropdown-label">Head: </span><select id="att_head"></select> '
            f"{pair_options}</span><div id='vis'></div></div>")
    scripts = [*_libraries(), f"window.bertviz_params = {script_json(params)};", _bertviz_js("neuron_view.js"),
               _ONE_BASED_MENUS]
    return _page("bertviz neuron view", body, scripts)
