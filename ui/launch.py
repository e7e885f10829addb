"""``python -m ui.launch [streamlit options]``: ``streamlit run app.py`` that warms up while it starts.

A cold start spends most of its time importing torch and transformers and loading the default
model. Streamlit only runs app.py when the first browser connects, so this launcher does that work
in a background thread while the server boots, filling the same ``st.cache_resource`` the pages
use, and refreshes the disk cache of the opening heatmaps (``vizcore.model.startup_cache``) that lets the
Home page show the default sentence before torch has finished importing. Behaviour is otherwise
exactly ``streamlit run app.py``.
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
import time
from pathlib import Path

APP = str(Path(__file__).resolve().parents[1] / "app.py")
FIRST_PAGE_WAIT = 8.0  # seconds the warm-up waits for a first browser before loading the model anyway
RUNTIME_WAIT = 30.0  # seconds; the server creates its runtime within a second or two of starting
STATIC_FILES_GRACE = 3.0  # after the first run the browser fetches and runs the chart library (~2.5 s here)


def _wait_for_runtime() -> None:
    """Streamlit's runtime starts with the server (app.py's ``st.App``); ``ui.state`` declares
    ``st.cache_data`` functions, which log "No runtime found" when declared before it exists."""
    from streamlit import runtime

    deadline = time.monotonic() + RUNTIME_WAIT
    while not runtime.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _warm_up() -> None:
    import logging

    _wait_for_runtime()  # the server has configured Streamlit's loggers by then: quieten one after that
    # Outside a browser session Streamlit warns that there is no script context; here that is expected.
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").setLevel(logging.ERROR)
    try:
        from ui.state import FIRST_PAGE_SHOWN, get_model, import_model_stack
        from vizcore.attention.examples import DEFAULT_TEXT
        from vizcore.model import startup_cache
        from vizcore.model.catalog import DEFAULT_MODEL

        if startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, None) is not None:
            # The first page can come from the disk cache: let it reach the browser first. Importing
            # torch now would compete with it for the CPU (2 cores: this thread, Streamlit's server
            # thread and the browser) and delay it by seconds. Nobody connecting soon? Go anyway.
            FIRST_PAGE_SHOWN.wait(timeout=FIRST_PAGE_WAIT)
            time.sleep(STATIC_FILES_GRACE)
        import_model_stack()

        # Fills the server's model cache, then recomputes the opening sentences and checks them bit
        # for bit against the disk cache (or writes it), so the next start can show them at once.
        report = startup_cache.prepare(get_model(DEFAULT_MODEL, "auto"))
        statuses = sorted({entry["status"] for entry in report["entries"]})
        import torch

        print(f"vizcore: {report['model']} ready on {report['device']} (torch threads: {torch.get_num_threads()}, "
              f"VIZCORE_TORCH_THREADS); opening heatmaps "
              f"{'/'.join(statuses)} in {report['cache_dir']}", file=sys.stderr)
        # A first page run that draws a figure also pays for plotly's lazy imports and its first
        # serialisation (about 2.5 s measured on 2 cores); pay them here, while nobody waits.
        import numpy as np

        from vizcore.plot import attention_heatmap

        attention_heatmap(np.full((2, 2), 0.5, dtype=np.float32), ["[CLS]", "[SEP]"]).to_json()
        # altair draws the training curves (Fine-tuning lab, its lesson): its import validates with jsonschema,
        # which compiles a grammar at import (3.2 s under the suite's load, 9 s for the lessons' first fine-tuning
        # step on a fresh server): pay it here too.
        import altair  # noqa: F401
    except Exception as error:  # a warm-up must never stop the server; the page reports real errors
        print(f"warm-up skipped: {error}", file=sys.stderr)
    finally:
        from vizcore.serve.memory import freeze_what_is_loaded

        freeze_what_is_loaded()


def main(argv: list[str]) -> None:
    from vizcore.serve.memory import tune_malloc

    tune_malloc()  # before any other thread allocates (it says why: a class's memory goes back to the system)
    # `kill -USR1 <pid>` writes every thread's stack to stderr (the server's log), the server going on: what a page
    # run that never ends is waiting for (tests/support/class_follow.py asks for it when a student is stuck)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    from streamlit.web import cli

    from vizcore.errors import VizError
    from vizcore.serve.settings import check_environment

    try:  # a wrong VIZCORE_* setting is said now, in one line, not as an error on every page later
        check_environment()
    except VizError as error:
        sys.exit(f"vizcore: {error}")
    threading.Thread(target=_warm_up, name="vizcore-warm-up", daemon=True).start()
    sys.argv = ["streamlit", "run", APP, *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
