"""Attention views in Jupyter (JupyterLab, Notebook 7, VS Code), offline: the app's renderer as an anywidget.

    from vizcore.notebook import attention_view
    attention_view("The cat sat on the mat.", model="all-MiniLM-L6-v2")

The widget runs ``vizcore/static/attention_view.js`` (the same file as the app and the HTML export):
heatmap with hover, layers x heads grid (click a head), head view with lines, pair filter, hidden
[CLS]/[SEP], merged word pieces; ←/→ change the head and ↑/↓ the layer in the browser. Layers and heads
are 0-based here as everywhere in code (the view shows them from 1). Above ``FULL_MAX_TOKENS`` tokens the
widget holds the chosen layer and asks the kernel for another one when it is picked.

``anywidget`` is imported only when a widget is made, so ``import vizcore`` does not need it.
"""

from __future__ import annotations

from functools import cache

from vizcore.attention.aggregate import ViewOptions
from vizcore.attention.payload import attention_payload, encode_layer
from vizcore.attention.renderer import widget_esm
from vizcore.errors import VizError
from vizcore.model.catalog import DEFAULT_MODEL
from vizcore.model.record import Run

CONTROLS = {"views": True, "filters": True, "layerHead": True}


@cache
def _widget_class() -> type:
    try:
        import anywidget
        import traitlets
    except ImportError as error:
        raise VizError("The notebook view needs anywidget: pip install anywidget (it is in requirements.txt).") \
            from error

    class AttentionWidget(anywidget.AnyWidget):
        """One run's attention in the renderer. ``selection`` follows the view: {layer, head, view}, 0-based."""

        _esm = widget_esm()
        payload = traitlets.Dict().tag(sync=True)
        selection = traitlets.Dict().tag(sync=True)

        def __init__(self, result: Run, payload: dict, **kwargs) -> None:
            super().__init__(payload=payload, selection=dict(payload["initial"]), **kwargs)
            self._result = result
            self.on_msg(self._message)

        def _message(self, _widget, content: dict, _buffers) -> None:
            if content.get("type") == "layer":
                self.add_layer(int(content["layer"]))

        def add_layer(self, layer: int) -> None:
            """Send layer ``layer`` (0-based) to the view, which asked for it (inputs over 128 tokens)."""
            if not 0 <= layer < self._result.num_layers or str(layer) in self.payload["layers"]:
                return
            layers = {**self.payload["layers"], str(layer): encode_layer(self._result.attention[layer])}
            self.payload = {**self.payload, "layers": layers}

        @property
        def result(self) -> Run:
            return self._result

    return AttentionWidget


def attention_widget(result: Run, layer: int = 0, head: int = 0, view: str = "heatmap",
                     options: ViewOptions = ViewOptions()):
    """A widget showing ``result`` (a ``Run``), opening on ``layer``/``head`` (0-based) in ``view``
    (``heatmap``, ``grid`` or ``lines``)."""
    payload = attention_payload(result, layer, head, view, options, controls=CONTROLS)
    return _widget_class()(result, payload)


@cache
def _loaded(model: str, device: str):
    from vizcore.model.loading import load_model

    return load_model(model, device=device)


def attention_view(text: str, model: str = DEFAULT_MODEL, pair: str | None = None, device: str = "auto",
                   layer: int = 0, head: int = 0, view: str = "heatmap", pair_filter: str = "all",
                   hide_special: bool = False, merge_words: bool = False):
    """Run ``model`` (a built-in name, a local folder or a hub id) on ``text`` (and ``pair``) and return the
    widget; the model is loaded once per (model, device) in this kernel. Errors are ``VizError`` with a
    message that says what to do."""
    from vizcore.attention.extract import extract_attention

    result = extract_attention(_loaded(model, device), text, pair)
    return attention_widget(result, layer, head, view, ViewOptions(pair_filter, hide_special, merge_words))
