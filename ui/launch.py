"""``python -m ui.launch [streamlit options]``: ``streamlit run app.py`` that warms up while it starts.

A cold start spends most of its time importing torch and transformers and loading the default
model. Streamlit only runs app.py when the first browser connects, so this launcher does that work
in a background thread while the server boots, filling the same ``st.cache_resource`` the pages
use. Behaviour is otherwise exactly ``streamlit run app.py``.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _warm_up() -> None:
    import logging

    # Outside a browser session Streamlit warns that there is no script context; here that is expected.
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").setLevel(logging.ERROR)
    try:
        from ui.state import DEFAULT_TEXT, get_attention
        from vizcore.models import DEFAULT_MODEL

        result = get_attention(DEFAULT_MODEL, "auto", DEFAULT_TEXT, None)
        # The first page run also pays for plotly's lazy imports and its first figure serialisation
        # (about 2.5 s measured on 2 cores); pay them here, while nobody waits.
        from vizcore.figures import attention_heatmap

        attention_heatmap(result.attention[0, 0], result.tokens).to_json()
    except Exception as error:  # a warm-up must never stop the server; the page reports real errors
        print(f"warm-up skipped: {error}", file=sys.stderr)


def main(argv: list[str]) -> None:
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web import cli

    # A folder named pages/ beside app.py makes a fresh server treat a direct link such as
    # /attention as a legacy (v1) page that runs without app.py and its sidebar, until some session
    # has run app.py's st.navigation. The app is navigation-only (v2), so say so before it starts.
    PagesManager.uses_pages_directory = False

    threading.Thread(target=_warm_up, name="vizcore-warm-up", daemon=True).start()
    sys.argv = ["streamlit", "run", APP, *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
