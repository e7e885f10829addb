"""What the server does once, before its first connection, when it imports app.py as the module ``app``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_server_import_loads_pandas_before_any_session():
    """plotly's validators look pandas up in sys.modules without importing it: a session drawing a figure
    while another session's thread was still importing pandas met the half-made module ("partially
    initialized module 'pandas' has no attribute 'Series'", eight first visitors at once on a fresh
    server). A race cannot be shown on demand, so the test checks its cause is gone: pandas is whole in
    sys.modules once the server has imported app.py, before any session runs."""
    code = ("import sys\n"
            "assert 'pandas' not in sys.modules\n"
            "import app\n"
            "assert app.app is not None and hasattr(sys.modules.get('pandas'), 'Series'), 'no pandas yet'\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
