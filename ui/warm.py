"""The server's warm-up, done before it listens: what every first page run of a class needs.

A fresh server's first page runs used to pay for importing torch and transformers (3.3 s here), loading the default
model, plotly's first figure and altair's import (1.1 s), while the first students were already waiting: a class
arriving as soon as the server answered its health check waited p95 4.8 s (30 students) for Home. Streamlit's
``st.App`` runs its lifespan (app.py) after its runtime has started and before uvicorn accepts a connection, so the
warm-up runs there, under ``make run``, ``make serve`` and a plain ``streamlit run app.py`` alike: the health check
answers once the server can serve a class at rest. It also refreshes the disk cache of the opening heatmaps
(``vizcore.model.startup_cache``) and leaves what it loaded out of the full garbage collection.

The cost moved, not added: the health check answers about 4 s later, and the model is ready then, 6 s earlier than
when it loaded after the first page (docs/BENCHMARKS.md, "startup" and "classroom").
"""

from __future__ import annotations

import logging
import sys


def warm_up() -> None:
    """Load and import what the first page runs need; a failure is one line in the log, never a stopped server (the
    pages report real errors)."""
    # Outside a browser session Streamlit warns that there is no script context; here that is expected.
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").setLevel(logging.ERROR)
    try:
        from ui.state import get_model, import_model_stack
        from vizcore.model import startup_cache
        from vizcore.model.catalog import DEFAULT_MODEL

        import_model_stack()
        # Fills the server's model cache, then recomputes the opening sentences and checks them bit for bit against
        # the disk cache (or writes it).
        report = startup_cache.prepare(get_model(DEFAULT_MODEL, "auto"))
        statuses = sorted({entry["status"] for entry in report["entries"]})
        import torch

        print(f"vizcore: {report['model']} ready on {report['device']} (torch threads: {torch.get_num_threads()}, "
              f"VIZCORE_TORCH_THREADS); opening heatmaps {'/'.join(statuses)} in {report['cache_dir']}",
              file=sys.stderr)
        # A first page run that draws a figure also pays for plotly's lazy imports and its first serialisation.
        import numpy as np

        from vizcore.plot import attention_heatmap

        attention_heatmap(np.full((2, 2), 0.5, dtype=np.float32), ["[CLS]", "[SEP]"]).to_json()
        # altair draws the training curves (Fine-tuning lab, its lesson): its import validates with jsonschema,
        # which compiles a grammar at import (1.1 s here, 9 s for a lesson's first fine-tuning step on a busy server).
        import altair  # noqa: F401

        import ui.layout  # noqa: F401  (what app.py's first run imports: the pages' shared parts)
        import ui.lessons.room  # noqa: F401
    except Exception as error:  # noqa: BLE001  (a warm-up must never stop the server)
        print(f"warm-up skipped: {error}", file=sys.stderr)
    finally:
        from vizcore.serve.memory import freeze_what_is_loaded

        freeze_what_is_loaded()
