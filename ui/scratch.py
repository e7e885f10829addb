"""Temporary folders of this server's sessions (a corpus run's input and results), removed when it stops.

``streamlit run app.py`` serves an ``st.App`` through uvicorn, which ends a SIGTERM or Ctrl+C by
re-raising the signal after a graceful shutdown: ``atexit`` handlers never run then, so the App's
lifespan (app.py) calls ``remove_all`` on the way out. ``atexit`` still covers processes without a
server (AppTest, scripts).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

_FOLDERS: list[str] = []
_LOCK = threading.Lock()


def new_folder(prefix: str) -> Path:
    """A fresh folder under the system's temp folder, removed by ``remove_all``."""
    folder = tempfile.mkdtemp(prefix=prefix)
    with _LOCK:
        _FOLDERS.append(folder)
    return Path(folder)


def remove_all() -> None:
    with _LOCK:
        folders, _FOLDERS[:] = list(_FOLDERS), []
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


atexit.register(remove_all)
