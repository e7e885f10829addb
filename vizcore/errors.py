"""The one exception type that carries a message meant for the user."""


class VizError(Exception):
    """A problem the user can fix; ``str(error)`` is one clear sentence saying what to do.

    The UI shows it with ``st.error`` and the CLI prints it as one line on stderr; neither shows a
    traceback for it.
    """
