"""The client-side attention renderer's three hosts, around one JavaScript file.

``vizcore/static/attention_view.js`` defines ``InsideBertAttention.mount(element, payload, host)``
(see ``vizcore/attention/payload.py`` for the payload). Each host adds a few lines around it:

* ``streamlit_module_js``: an ES module for ``st.components.v2.component`` (the app's pages); a
  switch or a grid click is reported with ``setStateValue("selection", {layer, head, view})``;
* ``widget_esm``: an anywidget module (Jupyter); the payload is the widget's ``payload`` trait, a
  switch is written to ``selection`` and a missing layer is asked for with a custom message;
* ``attention_view_html``: one self-contained HTML file that opens offline.

No torch here: Home shows a cached run through the component while torch is still importing.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from vizcore.attention.aggregate import ViewOptions
from vizcore.attention.payload import FULL_MAX_TOKENS, attention_payload
from vizcore.model.record import Run

RENDERER_JS = Path(__file__).resolve().parents[1] / "static" / "attention_view.js"


def renderer_js() -> str:
    return RENDERER_JS.read_text(encoding="utf-8")


def script_json(value: object) -> str:
    """JSON that is safe inside ``<script>``: no ``</script>``, ``<!--`` or HTML entity can form."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


_STREAMLIT_ADAPTER = """
export default function (component) {
  const {data, parentElement, setStateValue} = component;
  let view = parentElement.__insideBertView;
  if (!view) {
    const el = document.createElement("div");
    parentElement.appendChild(el);
    const asked = {};  // the URL and layer of each fetch under way or done: one request per layer
    view = globalThis.InsideBertAttention.mount(el, data, {
      onSelect: function (selection) { setStateValue("selection", selection); },
      reportDelay: 250,  // a run of arrow keys is one page run, after the keys rest
      // A layer the payload does not carry: from the run's layer URL (vizcore/attention/shelf.py), no page run;
      // if that fails, the page is asked for it and its next run sends it.
      onRequestLayer: function (layer) {
        const base = view && view.layerUrl();
        if (!base) { setStateValue("missing", layer); return; }
        const url = base + "&layer=" + layer;
        if (asked[url]) return;
        asked[url] = true;
        fetch(url, {credentials: "same-origin"}).then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.arrayBuffer().then(function (buffer) {
            view.receive(layer, {id: response.headers.get("X-Layer-Id") || url, bytes: new Uint8Array(buffer)});
          });
        }).catch(function () {
          delete asked[url];
          setStateValue("missing", layer);
        });
      },
    });
    parentElement.__insideBertView = view;
  } else {
    view.update(data);
  }
}
"""

_WIDGET_ADAPTER = """
export default {
  render({model, el}) {
    const root = document.createElement("div");
    el.appendChild(root);
    const view = globalThis.InsideBertAttention.mount(root, model.get("payload"), {
      onSelect: function (selection) { model.set("selection", selection); model.save_changes(); },
      onRequestLayer: function (layer) { model.send({type: "layer", layer: layer}); },
    });
    const changed = function () { view.update(model.get("payload")); };
    model.on("change:payload", changed);
    // Notebook 7 reads its shortcuts on the document in the capture phase, before the view sees the key:
    // command mode's ArrowDown/ArrowRight moved the cell cursor and the view never switched (JupyterLab
    // reads them after the view). Lumino skips shortcuts for a key inside [data-lm-suppress-shortcuts]:
    // an arrow key in the view is marked so on the window, which the key reaches first. Other keys are
    // left to the notebook.
    const arrows = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown"];
    const mark = function (event) {
      root.toggleAttribute("data-lm-suppress-shortcuts", arrows.includes(event.key) && root.contains(event.target));
    };
    window.addEventListener("keydown", mark, true);
    return function () {
      model.off("change:payload", changed);
      window.removeEventListener("keydown", mark, true);
    };
  },
};
"""


def streamlit_module_js() -> str:
    return renderer_js() + "\n" + _STREAMLIT_ADAPTER


def widget_esm() -> str:
    return renderer_js() + "\n" + _WIDGET_ADAPTER


def attention_view_html(result: Run, layer: int = 0, head: int = 0, view: str = "heatmap",
                        options: ViewOptions = ViewOptions()) -> str:
    """Heatmap, layers x heads grid and head view of ``result`` in one file that opens offline.

    Every layer is in the file up to ``FULL_MAX_TOKENS`` tokens; above that only ``layer`` (0-based),
    and the grid's block means of every head. User text enters only as escaped JSON.
    """
    payload = attention_payload(result, layer, head, view, options)
    payload["canFetch"] = False
    title = f"Attention · {result.model}"
    note = ("" if len(result.tokens) <= FULL_MAX_TOKENS else
            f"<p>Above {FULL_MAX_TOKENS} tokens this file holds layer {layer + 1} in full; "
            "the grid shows every head.</p>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title>"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">"
        "<style>body{margin:12px;background:#fff}</style></head><body>\n"
        f"{note}<div id=\"attention-view\"></div>\n"
        f"<script>\n{renderer_js()}\n</script>\n"
        f"<script>\nInsideBertAttention.mount(document.getElementById(\"attention-view\"), {script_json(payload)});\n"
        "</script>\n</body></html>\n"
    )
