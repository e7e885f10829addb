"""Streamlit side of the shared state: cached model/attention wrappers and the shared sidebar.

The sidebar is drawn by ``app.py`` on every run, so its widgets (model, device, sentence, pair)
keep their values across pages. Pages read them through ``selection()``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import streamlit as st

from ui.feedback import or_stop
from vizcore.attention.examples import DEFAULT_TEXT

# No torch or transformers here: they take seconds to import, and the first page (sidebar, cached
# Home heatmap) needs neither. vizcore.model.loading and vizcore.attention.extract are imported where they are used.
from vizcore.model import startup_cache
from vizcore.model.catalog import BUILTIN_MODELS, DEFAULT_MODEL, SUGGESTED_HUB_MODELS, available_devices
from vizcore.model.record import Run
from vizcore.serve.cache import ByteCache

if TYPE_CHECKING:
    from vizcore.model.loading import LoadedModel
    from vizcore.serve.queue import InferenceQueue

OTHER_MODEL = "Other: hub id or local folder…"
KEY_MODEL_CHOICE = "shared.model_choice"
KEY_MODEL_OTHER = "shared.model_other"
KEY_DEVICE = "shared.device"
KEY_TEXT = "shared.text"
KEY_PAIR = "shared.pair"
# The session's layer and head of the sidebar's model, 1-based (ui/layer_head.py draws them): kept across pages.
KEY_LAYER = "shared.layer"
KEY_HEAD = "shared.head"
# The projector setting (ui/layout.py): from the sidebar's toggle or a link's ?present=1, kept in every link.
KEY_PRESENT = "shared.present"
PRESENT_VALUES = {"1": True, "0": False}
_MODEL_STACK = threading.Lock()


def import_model_stack() -> None:
    """Import torch, transformers and the vizcore modules built on them, one thread at a time.

    The launcher's warm-up imports them while a browser session may need them too. Two threads
    importing transformers at once can trip Python's import deadlock detection, which hands one
    of them a half-initialised module ("cannot import name 'BatchEncoding' from 'transformers'",
    seen here in the startup benchmark). Never call this while holding another lock. torch gets the
    server's thread count here (``vizcore.serve.threads``: VIZCORE_TORCH_THREADS, default 1), once.
    """
    with _MODEL_STACK:
        import transformers.models.bert.modeling_bert  # noqa: F401  (the default model's classes)

        import vizcore.attention.extract  # noqa: F401  (imports vizcore.model.loading, torch and transformers)
        from vizcore.serve.threads import configure_torch_threads

        configure_torch_threads()


@dataclass(frozen=True)
class Selection:
    model: str
    device: str
    text: str
    pair: str | None


def get_model(name: str, device: str = "auto", head: str = "base") -> LoadedModel:
    """One loaded model per (name, device, head) for the whole server. Read-only: never train it."""
    return _load_model(name, device, head)


@st.cache_resource(show_spinner="Loading the model (once per server)…", max_entries=4)
def _load_model(name: str, device: str, head: str) -> LoadedModel:
    # Always called with all three arguments: Streamlit keys a cache on the arguments as passed, so
    # get_model(n, d) and get_model(n, d, "base") would otherwise load the same model twice.
    import_model_stack()
    from vizcore.model.loading import load_model
    from vizcore.serve.memory import freeze_what_is_loaded

    loaded = load_model(name, device=device, head=head)
    freeze_what_is_loaded(f"with {name} ({head})")  # a model loaded after the start: out of every run's full GC
    return loaded


def get_run(name: str, device: str, text: str, pair: str | None, hidden: bool = False) -> Run:
    """The one server-wide cache of runs (``vizcore.model.run``): every page's run of a sentence.

    ``hidden`` also keeps the hidden states (step by step); without it, the opening sentences can
    come from the disk cache while torch still loads. The memory cache is asked first: the disk cache's file
    stats and read were a tenth of a class's follow run (a student's page rerun when the teacher moves), on every
    run of a page that shows an opening sentence.
    """
    # One cache for the server, bounded by bytes (VIZCORE_RUN_CACHE_MB): at n = 512 on 12 x 12 heads a run's
    # weights are 150 MB, at 20 tokens on the default model 60 KB. Values are shared, not copied (cache_data
    # would unpickle a fresh copy on every rerun); a Run is frozen and pages only read it. Sessions missing the
    # same key at once compute it once (tests/app/test_shared_cache.py); different sentences asked at once share
    # a forward pass in the model's queue.
    def compute() -> Run:
        if not hidden:
            cached = startup_cache.load(name, device, text, pair)
            if cached is not None:
                return cached
        import_model_stack()
        from vizcore.model.run import Capture

        with st.spinner("Running the model…"):
            return get_queue(name, device).submit(text, pair, capture=Capture(hidden=hidden))

    return _runs().get((name, device, text, pair, hidden), compute)


@st.cache_resource(show_spinner=False)
def _runs() -> ByteCache[Run]:
    from vizcore.serve.settings import run_cache_bytes

    return ByteCache(run_cache_bytes())


def get_queue(name: str, device: str = "auto") -> InferenceQueue:
    """The inference queue of the loaded model (name, device): one for the whole server."""
    loaded = get_model(name, device)
    return _queue(name, device, id(loaded), loaded)


@st.cache_resource(show_spinner=False, max_entries=4)
def _queue(name: str, device: str, model_id: int, _loaded: LoadedModel) -> InferenceQueue:
    # Keyed by the model object's id too: a model evicted from _load_model and loaded again gets a new queue.
    from vizcore.serve.queue import InferenceQueue
    from vizcore.serve.settings import Limits

    return InferenceQueue(_loaded, Limits.from_env())


def clear_caches() -> None:
    """Forget every loaded model and run, as a server restart would (tests change files under them)."""
    _load_model.clear()
    _runs().clear()
    _queue.clear()


def init_from_query_params() -> None:
    """A shared link (``?text=...&pair=...&model=...``) sets the sidebar once, on the first run."""
    if "shared.initialised" in st.session_state:
        return
    st.session_state["shared.initialised"] = True
    params = st.query_params
    st.session_state[KEY_TEXT] = params.get("text", DEFAULT_TEXT)
    st.session_state[KEY_PAIR] = params.get("pair", "")
    present = params.get("present", "0")
    st.session_state[KEY_PRESENT] = PRESENT_VALUES.get(present, False)
    if present not in PRESENT_VALUES:
        st.warning(f"The link's present={present[:80]!r} was not used: it is 1 (the projector setting) or 0.")
    model = params.get("model", DEFAULT_MODEL)
    if model in model_choices():
        st.session_state[KEY_MODEL_CHOICE] = model
    else:
        st.session_state[KEY_MODEL_CHOICE] = OTHER_MODEL
        st.session_state[KEY_MODEL_OTHER] = model


def model_choices() -> list[str]:
    return [*BUILTIN_MODELS, *SUGGESTED_HUB_MODELS, OTHER_MODEL]


def model_label(name: str) -> str:
    """A model as the sidebar lists it: a built-in's size beside its name, and whether it still needs installing."""
    builtin = BUILTIN_MODELS.get(name)
    if builtin is None or not builtin.size:
        return name
    return f"{name} ({builtin.size})" + ("" if builtin.installed() else ", not installed")


def set_sentence(text: str, pair: str = "") -> None:
    """Callback for example buttons: runs before the widgets are drawn, so it may set their values."""
    st.session_state[KEY_TEXT] = text
    st.session_state[KEY_PAIR] = pair


def sidebar() -> Selection:
    """Draw the shared controls (call once per run, from app.py) and return what they say."""
    init_from_query_params()
    # Re-assigning pins the values: Streamlit drops a widget's state on a page switch when the
    # widget was not drawn in the previous run, and the sentence must survive every switch.
    for key in (KEY_MODEL_CHOICE, KEY_MODEL_OTHER, KEY_DEVICE, KEY_TEXT, KEY_PAIR, KEY_LAYER, KEY_HEAD, KEY_PRESENT):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    with st.sidebar:
        st.header("Model and sentence")
        choice = st.selectbox("Model", model_choices(), key=KEY_MODEL_CHOICE, format_func=model_label,
                              help="Built-in models work offline; hub ids need internet or a local cache.")
        if choice in BUILTIN_MODELS and not BUILTIN_MODELS[choice].installed():
            st.caption(BUILTIN_MODELS[choice].install_hint())
        if choice == OTHER_MODEL:
            st.text_input("Hub id or local folder", key=KEY_MODEL_OTHER, placeholder="bert-base-uncased")
        st.selectbox("Device", available_devices(), key=KEY_DEVICE,
                     help="auto = CUDA GPU if present, else Apple MPS, else CPU")
        st.text_area("Sentence", key=KEY_TEXT, height=110)
        st.text_input("Second sentence (optional, makes a pair)", key=KEY_PAIR)
        st.toggle("Projector setting", key=KEY_PRESENT,
                  help="Larger type and stronger contrast for a room: text at least 24 px, charts re-drawn for "
                       "it, and the sidebar folded away (» at the top left opens it). A link with ?present=1 "
                       "opens any page this way.")
    return selection()


def segmented_choice(label: str, options: dict[str, str], key: str, default: str) -> str:
    """A segmented control over ``options`` (value -> label), kept under ``key``: a value it does not
    offer (none yet) starts it at ``default``, and so does a click that unselects the chosen one."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default
    return st.segmented_control(label, list(options), key=key, format_func=options.get,
                                label_visibility="collapsed") or default


def selection() -> Selection:
    """The shared choices, with defaults when the sidebar was not drawn (e.g. a page tested alone)."""
    state = st.session_state
    choice = state.get(KEY_MODEL_CHOICE, DEFAULT_MODEL)
    model = (state.get(KEY_MODEL_OTHER) or "").strip() if choice == OTHER_MODEL else choice
    pair = (state.get(KEY_PAIR) or "").strip() or None
    return Selection(model=model, device=state.get(KEY_DEVICE, "auto"),
                     text=state.get(KEY_TEXT, DEFAULT_TEXT), pair=pair)


def presenting() -> bool:
    """The projector setting is on for this session (the sidebar's toggle, or ?present=1 in the link)."""
    return bool(st.session_state.get(KEY_PRESENT, False))


def model_or_stop(sel: Selection, head: str = "base") -> LoadedModel:
    """The selected model, or a clear error on the page (the sentence and choices stay as they are)."""
    return or_stop(get_model, sel.model, sel.device, head)


def attention_or_stop(sel: Selection) -> Run:
    return or_stop(get_run, sel.model, sel.device, sel.text, sel.pair)


def warn_if_truncated(result: Run) -> None:
    warn_if_longer(result.num_input_tokens, len(result.tokens))


def warn_if_longer(num_tokens: int, limit: int, what: str = "The input") -> None:
    """The one notice for an input cut to what the model reads (every page that reads a sentence says it)."""
    if num_tokens > limit:
        st.warning(f"{what} has {num_tokens:,} tokens; this model reads at most {limit:,}, so only the first "
                   f"{limit:,} are used.")


def warn_if_too_long(loaded: LoadedModel, text: str, pair: str | None = None, what: str = "The input") -> None:
    """``warn_if_longer`` for a text the page tokenises itself (a query, a sentence explained)."""
    from vizcore.model.run import input_length

    warn_if_longer(input_length(loaded, text, pair), loaded.max_length, what)
