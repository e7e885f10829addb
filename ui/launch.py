"""``python -m ui.launch [streamlit options]``: ``streamlit run app.py`` with the server's settings checked first.

What ``make run`` and ``make serve`` start. Before Streamlit: a wrong ``VIZCORE_*`` setting stops it in one line,
malloc is tuned, ``kill -USR1`` writes every thread's stack to the log. The warm-up (torch, the default model) is
app.py's lifespan (``ui/warm.py``), so a plain ``streamlit run app.py`` has it too. Behaviour is otherwise exactly
``streamlit run app.py``.
"""

from __future__ import annotations

import faulthandler
import signal
import sys
from pathlib import Path

APP = str(Path(__file__).resolve().parents[1] / "app.py")


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
        from vizcore.results.stores import server_results

        server_results()  # opened now (created, migrated): a folder it cannot write or a database down stops here
    except VizError as error:
        sys.exit(f"vizcore: {error}")
    sys.argv = ["streamlit", "run", APP, *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
