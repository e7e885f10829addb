"""The client-side renderer's colours, run in node: its colour table is the Python scale it is handed
(``vizcore.colours``), so the Explorer's canvas, the HTML export and the notebook widget draw a weight in the
colour the plotly figures and their PNG/SVG exports give it (tests/unit/test_colours.py checks those)."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from tests.support.synthetic import synthetic_run
from vizcore.attention.payload import attention_payload
from vizcore.attention.renderer import RENDERER_JS
from vizcore.colours import ATTENTION, ATTENTION_BLOCKS


@pytest.mark.skipif(shutil.which("node") is None, reason="runs the renderer's JavaScript in node")
def test_the_renderers_colours_equal_the_python_scales(tmp_path):
    payload = attention_payload(synthetic_run(layers=1, heads=1))
    probe = tmp_path / "probe.js"
    probe.write_text(RENDERER_JS.read_text() + f"""
const scales = {json.dumps(payload["scales"])};
const out = {{}}, fractions = [0, 1 / 512, 0.02, 0.1, 0.3, 0.6, 0.9, 1];
for (const name of Object.keys(scales)) {{
  const scale = scales[name], high = scale.range[1];
  out[name] = {{table: Array.from(InsideBertAttention.colourTable(scale)),
               index: fractions.map(f => InsideBertAttention.colourIndex(scale, f * high))}};
}}
console.log(JSON.stringify(out));
""")
    shown = json.loads(subprocess.run(["node", str(probe)], capture_output=True, text=True, check=True).stdout)
    for name, scale in (("weight", ATTENTION), ("grid", ATTENTION_BLOCKS)):
        low, high = payload["scales"][name]["range"]
        table = np.array(shown[name]["table"]).reshape(256, 3)
        for i in range(256):
            value = low + (high - low) * (i / 255) ** (1 / scale.power)
            expected = [int(scale.colour_at(value, (low, high))[k:k + 2], 16) for k in (1, 3, 5)]
            assert np.abs(table[i] - expected).max() <= 1, (name, i)
        fractions = np.array([0, 1 / 512, 0.02, 0.1, 0.3, 0.6, 0.9, 1])  # none at a .5 to round
        assert shown[name]["index"] == np.round(255 * fractions ** scale.power).astype(int).tolist()
