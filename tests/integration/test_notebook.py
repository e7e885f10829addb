"""The example notebook runs to completion in a real kernel (nbclient) with the embedded model, offline,
and its widgets carry the renderer and the model's weights; the widget asks for missing layers."""

import json
import os
from pathlib import Path

import nbformat
import numpy as np
from nbclient import NotebookClient

from tests.support.synthetic import EVIL, synthetic_run
from vizcore.attention.payload import FULL_MAX_TOKENS, decode_layer

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "attention.ipynb"


def test_the_example_notebook_runs_and_shows_widgets(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYTHONPATH", str(NOTEBOOK.parents[1]) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) == 2
    states = notebook.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    payloads = [s["state"]["payload"] for s in states.values() if "payload" in s.get("state", {})]
    first = next(p for p in payloads if "cat" in p["tokens"])
    assert first["initial"] == {"layer": 2, "head": 0, "view": "heatmap"}
    assert sorted(first["layers"]) == [str(l) for l in range(6)]
    head = decode_layer(first["layers"]["2"], 12, first["n"])[0]
    np.testing.assert_allclose(head.sum(-1), 1.0, atol=0.02)
    esm = next(s["state"]["_esm"] for s in states.values() if "payload" in s.get("state", {}))
    assert "InsideBertAttention" in esm and "model.send" in esm
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "(6, 12, 9, 9) = [layer, head, query, key]" in printed and "'layer': 2" in printed
    page = (tmp_path / "attention-view.html").read_text()
    assert 'InsideBertAttention.mount(document.getElementById("attention-view")' in page


def test_the_widget_sends_a_layer_it_is_asked_for_and_keeps_text_as_data():
    from vizcore.notebook import attention_widget

    run = synthetic_run(layers=3, heads=2, pair=False, words=FULL_MAX_TOKENS)
    widget = attention_widget(run, layer=1)
    assert list(widget.payload["layers"]) == ["1"] and EVIL in widget.payload["tokens"]
    widget._message(widget, {"type": "layer", "layer": 2}, [])
    assert sorted(widget.payload["layers"]) == ["1", "2"]
    np.testing.assert_allclose(decode_layer(widget.payload["layers"]["2"], 2, len(run.tokens)), run.attention[2],
                               atol=1 / 255 + 1e-6)
    widget._message(widget, {"type": "layer", "layer": 7}, [])  # not a layer of this model: ignored
    assert sorted(widget.payload["layers"]) == ["1", "2"]
    assert json.loads(json.dumps(widget.payload)) == widget.payload  # plain JSON for the frontend
