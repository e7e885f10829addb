"""Entry point: page config, navigation and the shared sidebar (model, device, sentence).

This file has two roles. Streamlit runs it as ``__main__`` for every run of every session
(``main()``). Before that, ``streamlit run app.py`` (also ``make run`` and ``uvicorn app:app``)
finds the ``st.App`` at the bottom and imports this file once as the module ``app``, before the
server accepts its first connection: the only moment at which the app can speak before a session.
"""

import contextlib

import streamlit as st


def main() -> None:
    from ui import layout
    from ui.state import import_model_stack, sidebar

    st.set_page_config(page_title="Inside BERT: attention explorer", page_icon="🔍", layout="wide")
    pages = [
        st.Page("pages/home.py", title="Home", icon=":material/home:", url_path="home", default=True),
        st.Page("pages/lessons.py", title="Lessons", icon=":material/school:", url_path="lessons"),
        st.Page("pages/attention.py", title="Attention Explorer", icon=":material/grid_on:", url_path="attention"),
        st.Page("pages/inside.py", title="Attention, step by step", icon=":material/stairs:",
                url_path="step-by-step"),
        st.Page("pages/positional.py", title="Positional encoding", icon=":material/waves:", url_path="positional"),
        st.Page("pages/mlm.py", title="Pre-training: masked words", icon=":material/edit_note:",
                url_path="fill-mask"),
        st.Page("pages/decoder.py", title="Generate", icon=":material/auto_awesome:", url_path="generate"),
        st.Page("pages/seq2seq.py", title="Translate: the whole Transformer", icon=":material/translate:",
                url_path="translate"),
        st.Page("pages/finetune.py", title="Fine-tuning lab", icon=":material/model_training:", url_path="finetune"),
        st.Page("pages/embeddings.py", title="Embeddings", icon=":material/scatter_plot:", url_path="embeddings"),
        st.Page("pages/why.py", title="Why?", icon=":material/psychology_alt:", url_path="why"),
        st.Page("pages/corpus.py", title="Corpus: many sentences", icon=":material/library_books:",
                url_path="corpus"),
        st.Page("pages/results.py", title="Class results", icon=":material/analytics:", url_path="results"),
    ]
    sidebar()
    layout.apply()
    page = st.navigation(pages, expanded=True)  # all thirteen pages named: past twelve, Streamlit folds the list
    unknown = _unknown_page(pages)
    if unknown is not None:  # Streamlit would run Home in its place, silently
        st.title("Page not found")
        st.error(f"This app has no page '/{unknown}'. Its pages:")
        for each in pages:
            st.page_link(each)
        return
    if page.url_path:  # loaded already by the server's warm-up (ui/warm.py); AppTest has none, the pages need it
        import_model_stack()
    page.run()


def _unknown_page(pages: list) -> str | None:
    """The page name the browser asked for when no page has it (a mistyped or an old link), else None."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    asked = (getattr(ctx.pages_manager, "intended_page_name", None) or "") if ctx else ""
    asked = asked.strip("/")
    known = {each.url_path for each in pages}
    return asked if asked and asked not in known and not getattr(ctx.pages_manager, "intended_page_script_hash",
                                                                   None) else None


if __name__ == "__main__":
    main()
else:
    from streamlit.runtime.pages_manager import PagesManager

    # Direct links on a fresh server. Streamlit 1.67 decides once per process, when the first
    # session starts, whether a folder named pages/ beside this file makes the app a legacy (v1)
    # multipage app (PagesManager.uses_pages_directory, None until then). While it is True, each
    # run goes through the pages/ files instead of this file: /attention runs pages/attention.py
    # without the sidebar under a list of file names, /fill-mask answers "Page not found". Only
    # st.navigation sets it back to False, too late for the first visitors. No config option
    # covers it, so the app, which is navigation-only, says so here, before any session exists.
    # tests/e2e/test_direct_links_browser.py fails if this stops working.
    PagesManager.uses_pages_directory = False

    # pandas, imported here once, before any session. plotly's validators look pandas up in sys.modules
    # without importing it (get_module(..., should_load=False)); while one session's thread is still
    # importing pandas, another session's figure found the half-made module and died with "partially
    # initialized module 'pandas' has no attribute 'Series'" (seen with eight first visitors at once on a
    # fresh server; tests/integration/test_server_entry.py). About 0.4 s, before the first connection.
    import pandas  # noqa: F401

    @contextlib.asynccontextmanager
    async def _lifespan(_app):
        import asyncio

        from ui.warm import warm_up

        # Streamlit's runtime has started, uvicorn does not accept a connection yet: the first students find the
        # model loaded (ui/warm.py says why and what it costs).
        await asyncio.to_thread(warm_up)
        try:
            yield None
        finally:
            from ui import scratch  # the sessions' temporary folders; atexit never runs under uvicorn's signals

            scratch.remove_all()

    def _stopping() -> bool:
        from streamlit.runtime import Runtime, RuntimeState

        return Runtime.exists() and Runtime.instance().state in (RuntimeState.STOPPING, RuntimeState.STOPPED)

    # The class channel (vizcore/lessons/channel.py): a class's moves pushed to its students' pages as server-sent
    # events, from this same server, under `make run`, `make serve` and a plain `streamlit run app.py` alike.
    from vizcore.lessons.board import notes_board
    from vizcore.lessons.channel import ClassChannel
    from vizcore.lessons.stores import server_rooms

    class_channel = ClassChannel(server_rooms, notes_board, stopping=_stopping)
    # The attention view's layers above 128 tokens, fetched by the view itself (vizcore/attention/shelf.py).
    from vizcore.attention import shelf

    app = st.App(__file__, lifespan=_lifespan, routes=[*class_channel.routes(), *shelf.routes()])
