"""Defect 2 of issue 15: a direct link to the Attention Explorer with ``?model=minilm-mlm-tuned``.

Run in a fresh interpreter: in this one, another test may already have imported
``vizcore.mlm.weights``, which is what used to make the built-in known (and hid the defect).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.app.conftest import APP, renderer_head
from tests.app.test_attention import QUANTUM
from ui.state import DEFAULT_TEXT
from vizcore.attention.extract import extract_attention
from vizcore.model.catalog import DEFAULT_MODEL, MLM_MODEL
from vizcore.model.loading import load_model

ROOT = Path(APP).parent
OPEN_LINK = f"""
import json, sys
from streamlit.testing.v1 import AppTest
from vizcore.attention.payload import read_binary_payload
assert not any(m.startswith("vizcore.mlm") for m in sys.modules)
at = AppTest.from_file({APP!r}, default_timeout=600)
for name, value in {{"model": {MLM_MODEL!r}, "layer": "2", "head": "3"}}.items():
    at.query_params[name] = value
at.run().switch_page("pages/attention.py").run()
views = at.get("bidi_component")
print(json.dumps({{"exceptions": [e.value for e in at.exception], "errors": [e.value for e in at.error],
                  "url_model": at.query_params.get("model"),
                  "payload": read_binary_payload(views[0].proto.bytes) if views else None}}, default=bytes.hex))
"""

def test_a_fresh_server_opens_the_explorer_on_the_masked_lm_builtin():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", OPEN_LINK], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    shown = json.loads(out.stdout.strip().splitlines()[-1])
    assert shown["exceptions"] == [] and shown["errors"] == []
    assert shown["url_model"] in (MLM_MODEL, [MLM_MODEL]) and shown["payload"] is not None
    shown["payload"]["layers"] = {key: bytes.fromhex(value) for key, value in shown["payload"]["layers"].items()}
    shown_head = renderer_head(shown["payload"])  # what the browser draws: 8-bit weights
    assert shown["payload"]["initial"]["layer"] == 1 and shown["payload"]["initial"]["head"] == 2
    tuned = extract_attention(load_model(MLM_MODEL, device="cpu"), DEFAULT_TEXT).attention[1, 2]
    np.testing.assert_allclose(shown_head, tuned, atol=QUANTUM)
    embedded = extract_attention(load_model(DEFAULT_MODEL, device="cpu"), DEFAULT_TEXT).attention[1, 2]
    assert np.abs(shown_head - embedded).max() > 2 * QUANTUM  # the built-in's own weights, not the embedded model's
