"""Streamlit's browser protocol without a browser: one simulated browser tab over ``/_stcore/stream``.

What a browser tab does, message for message (Streamlit 1.67, ``web/server/starlette/starlette_websocket.py`` and
``runtime/app_session.py``): it opens a websocket on ``/_stcore/stream`` with the subprotocol ``streamlit`` and an
``Origin`` header, sends a ``BackMsg.rerun_script`` (a ``ClientState``: the query string, the page as its URL path
on the first visit or as its ``page_script_hash`` afterwards, and the values of the widgets on screen), and
draws the ``ForwardMsg``s that follow (``new_session``, ``delta``s, ``navigation``, ...) until ``script_finished``.
``StreamlitTab`` does the same and keeps, for each run, its time, what the main area showed and what went wrong.

No Streamlit runtime here: only its protobuf messages (``streamlit.proto``) and the ``websockets`` client that
Streamlit itself depends on.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.RootContainer_pb2 import RootContainer
from streamlit.proto.Slider_pb2 import Slider

# What can go wrong with a page run, as the bench counts it: the app raised (an exception element, or the script
# did not compile), the app said so itself (an st.error box: bad input, a model that would not load), the page
# asked for does not exist, no script_finished within the timeout, the server closed the socket, or a file of
# the page (``load_static``) did not come.
ERROR_KINDS = ("exception", "error_box", "page_not_found", "timeout", "dropped", "http")
RUN_TIMEOUT = 120.0  # seconds a run may take before it counts as one that does not finish
_FINAL = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR}


@dataclass
class PageRun:
    """One request and what came back until its ``script_finished`` (or until it failed)."""

    page: str
    seconds: float = 0.0
    error: str | None = None  # one of ERROR_KINDS
    detail: str = ""
    main: list[bytes] = field(default_factory=list)  # the main area's elements as they arrived (serialised protos)
    arrived: list[float] = field(default_factory=list)  # seconds from the request to each of ``main``'s elements
    messages: int = 0
    started: float = 0.0  # time.perf_counter() at the request

    @property
    def ok(self) -> bool:
        return self.error is None

    def shows(self, text: str) -> bool:
        """Whether ``text`` (UTF-8) appears in an element of the main area (not the sidebar)."""
        needle = text.encode("utf-8")
        return any(needle in element for element in self.main)

    def seen_after(self, text: str) -> float | None:
        """Seconds from the request to the first element of the main area showing ``text``, None if none did: when
        the reader saw it, which may be before the run ended (``seconds``)."""
        needle = text.encode("utf-8")
        return next((at for element, at in zip(self.main, self.arrived) if needle in element), None)

    def text(self) -> str:
        """The main area's elements as one text (their serialised protos, decoded: strings readable, numbers not)."""
        return "\n".join(element.decode("utf-8", errors="replace") for element in self.main)

    def fail(self, kind: str, detail: str) -> None:
        if self.error is None:  # the first thing that went wrong is the one reported
            self.error, self.detail = kind, detail[:300]


@dataclass
class Widget:
    """A widget on screen: its id (``$$ID-<hash>-<key>``), the ``WidgetState`` field its value goes in, the value
    (None: none yet, as a radio with ``index=None``; such a widget is not sent until it has one)."""

    id: str
    field: str
    value: object

    @property
    def key(self) -> str:
        return self.id.split("-", 2)[-1]


class StreamlitTab:
    """One browser tab on a Streamlit app: ``await tab.open("attention", "text=...")``, then ``switch``/``type``.

    One websocket, one Streamlit session. A reader task drains the socket all the time, as a browser does:
    a client that stops reading fills the server's send queue, and the server drops it.
    """

    def __init__(self, url: str, timeout: float = RUN_TIMEOUT, connect_timeout: float = RUN_TIMEOUT,
                 cookies: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        self.url = url
        self.origin = f"{parts.scheme}://{parts.netloc}"
        scheme = "wss" if parts.scheme == "https" else "ws"
        self.stream_url = f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}/_stcore/stream"
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self.cookies = dict(cookies or {})  # sent with the upgrade: nginx's replica cookie, as a browser has it
        self.pages: dict[str, str] = {}  # URL path ("" for the default page) -> page_script_hash
        self.page_hash = ""
        self.query = ""
        self.widgets: dict[str, Widget] = {}  # id -> widget, those of the last run
        self.buttons: dict[str, str] = {}  # key, and label, of each button of the last run -> its widget id
        self._socket: websockets.ClientConnection | None = None
        self._inbox: asyncio.Queue[ForwardMsg | None] = asyncio.Queue()
        self._reader: asyncio.Task | None = None
        self.closed_because = ""
        self.upgrade_headers: dict[str, str] = {}

    async def connect(self) -> None:
        self._socket = await websockets.connect(
            self.stream_url, subprotocols=["streamlit"], origin=self.origin, max_size=None,
            open_timeout=self.connect_timeout, additional_headers=_cookie_header(self.cookies),
            # A browser sends no protocol pings (nor, outside a hosting frame, Streamlit's app_heartbeat): the
            # websockets client's keepalive closed every socket of a 100-student class whose server was too busy
            # to answer within 20 s, which no browser would have done.
            ping_interval=None)
        # The server's answer to the upgrade, names in lower case (behind nginx: which replica took the socket).
        self.upgrade_headers = {name.lower(): value for name, value in self._socket.response.headers.raw_items()}
        self._reader = asyncio.create_task(self._read())

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)

    async def _read(self) -> None:
        try:
            async for data in self._socket:
                msg = ForwardMsg()
                msg.ParseFromString(data)
                self._inbox.put_nowait(msg)
        except websockets.ConnectionClosed as closed:
            self.closed_because = str(closed)
        finally:
            self.closed_because = self.closed_because or "the server closed the socket"
            self._inbox.put_nowait(None)  # the socket is gone: wakes a run that waits

    async def open(self, page: str, query: str = "") -> PageRun:
        """A first visit by URL: ``http://host/<page>?<query>`` (``page`` "" is the default page). Connects if needed;
        the time counts from the connection's start, as a student's does from pressing Enter in the address bar."""
        start = time.perf_counter()
        run = PageRun(page)
        if self._socket is None:
            try:
                await self.connect()
            except (OSError, websockets.InvalidHandshake, asyncio.TimeoutError) as error:
                run.fail("dropped", f"could not connect: {error!r}")
                run.seconds = time.perf_counter() - start
                return run
        self.query = query
        return await self._rerun(run, start, page_name=page)

    async def switch(self, page: str, query: str = "") -> PageRun:
        """A click on the page in the sidebar's navigation (with ``query``: a link to the page carrying parameters)."""
        if page not in self.pages:
            return await self.open(page, query)  # a page the navigation does not list: ask for it by URL path
        self.query = query
        return await self._rerun(PageRun(page), time.perf_counter(), page_hash=self.pages[page])

    async def type(self, key: str, value: object) -> PageRun:
        """A new value in the widget whose key is ``key`` (as typed, then Enter or a click elsewhere): one rerun."""
        widget = next((w for w in self.widgets.values() if w.key == key), None)
        run = PageRun(self._page_path())
        if widget is None:
            shown = sorted(w.key for w in self.widgets.values())
            run.fail("exception", f"no widget with key {key!r} on the page: {shown}")
            return run
        widget.value = value
        return await self._rerun(run, time.perf_counter(), page_hash=self.page_hash)

    async def click(self, name: str, values: dict[str, object] | None = None) -> PageRun:
        """A click on the button ``name`` (its key, or its label: a form's submit button may have no key), after
        ``values`` (widget key -> value) are given: one rerun carrying them and the click. A form is submitted this
        way: the browser sends a form's values only with its submit button's click, in the same rerun."""
        run = PageRun(self._page_path())
        unknown = [key for key in values or {} if not any(w.key == key for w in self.widgets.values())]
        if name not in self.buttons or unknown:
            shown = sorted(w.key for w in self.widgets.values())
            run.fail("exception", f"no button {name!r} ({sorted(self.buttons)}) or no widgets {unknown} ({shown})")
            return run
        for key, value in (values or {}).items():
            next(w for w in self.widgets.values() if w.key == key).value = value
        return await self._rerun(run, time.perf_counter(), page_hash=self.page_hash, clicked=self.buttons[name])

    def widget_value(self, key: str) -> object:
        return next((w.value for w in self.widgets.values() if w.key == key), None)

    def _page_path(self) -> str:
        return next((path for path, h in self.pages.items() if h == self.page_hash), "")

    async def _rerun(self, run: PageRun, start: float, page_name: str = "", page_hash: str = "",
                     clicked: str = "") -> PageRun:
        while not self._inbox.empty():  # anything left from before (a late page_info_changed) is not this run's
            if self._inbox.get_nowait() is None:
                self._inbox.put_nowait(None)
                break
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query
        state.page_name = page_name
        state.page_script_hash = page_hash
        for widget in self.widgets.values():
            if widget.value is not None:
                entry = state.widget_states.widgets.add()
                entry.id = widget.id
                _set_value(entry, widget.field, widget.value)
        if clicked:  # a trigger: true for this rerun only, as a button's click is
            state.widget_states.widgets.add(id=clicked, trigger_value=True)
        run.started = start
        try:
            await self._socket.send(msg.SerializeToString())
            await asyncio.wait_for(self._collect(run), self.timeout)
        except asyncio.TimeoutError:
            run.fail("timeout", f"no script_finished within {self.timeout:.0f} s")
        except websockets.ConnectionClosed as closed:
            run.fail("dropped", str(closed))
        run.seconds = time.perf_counter() - start
        return run

    async def _collect(self, run: PageRun) -> None:
        """Read this run's messages until its last ``script_finished`` (an ``st.rerun`` ends one run and starts
        the next: ``FINISHED_EARLY_FOR_RERUN`` is not the end)."""
        widgets: dict[str, Widget] = {}
        buttons: dict[str, str] = {}
        while True:
            msg = await self._inbox.get()
            if msg is None:
                self._inbox.put_nowait(None)
                run.fail("dropped", self.closed_because)
                return
            run.messages += 1
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = msg.new_session.page_script_hash
                widgets, buttons = {}, {}  # a new run draws the page again: its widgets are the ones on screen
            elif kind == "navigation":
                self.pages = {page.url_pathname: page.page_script_hash for page in msg.navigation.app_pages}
                self.page_hash = msg.navigation.page_script_hash or self.page_hash
            elif kind == "delta":
                self._read_delta(msg, run, widgets, buttons)
            elif kind == "page_not_found":
                run.fail("page_not_found", f"page {msg.page_not_found.page_name!r} not found")
            elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
                error = msg.session_event.script_compilation_exception
                run.fail("exception", f"{error.type}: {error.message}")
            elif kind == "script_finished" and msg.script_finished in _FINAL:
                self.widgets, self.buttons = widgets, buttons
                return

    def _read_delta(self, msg: ForwardMsg, run: PageRun, widgets: dict[str, Widget], buttons: dict[str, str]) -> None:
        if msg.delta.WhichOneof("type") != "new_element":
            return
        element = msg.delta.new_element
        kind = element.WhichOneof("type")
        if msg.metadata.delta_path and msg.metadata.delta_path[0] == RootContainer.MAIN:
            run.main.append(element.SerializeToString())
            run.arrived.append(time.perf_counter() - run.started)
        if kind == "exception":
            run.fail("exception", f"{element.exception.type}: {element.exception.message}")
        elif kind == "alert" and element.alert.format == Alert.ERROR:
            run.fail("error_box", element.alert.body)
        proto = getattr(element, kind) if kind else None
        widget_id = getattr(proto, "id", "") if proto is not None and "id" in proto.DESCRIPTOR.fields_by_name else ""
        if widget_id and kind == "button":
            buttons[Widget(widget_id, "", None).key] = buttons[proto.label] = widget_id
        elif widget_id:
            known = self.widgets.get(widget_id)
            reported = _reported_value(kind, proto)
            if reported is not None:
                field_name, value = reported
                # The browser keeps what it has unless the server sets the value (set_value): a widget's own
                # value survives reruns; a new widget starts at what the server sent.
                if known is not None and known.value is not None and not getattr(proto, "set_value", False):
                    value = known.value
                widgets[widget_id] = Widget(widget_id, field_name, value)


def _reported_value(kind: str, proto) -> tuple[str, object] | None:
    """(``WidgetState`` field, value) a browser reports for a widget element, None for a widget this client does not
    report (buttons, which only report clicks; components; uploads): the server keeps their last values. The value
    is None for a text box or a choice with none yet (``value=None``, ``index=None``): there is nothing to report
    until one is given, but its id is known."""
    set_value = getattr(proto, "set_value", False)
    if kind in ("text_area", "text_input"):
        if proto.HasField("value"):
            return "string_value", proto.value
        return "string_value", proto.default if proto.HasField("default") else None
    if kind == "checkbox":
        return "bool_value", proto.value if set_value else proto.default
    if kind in ("selectbox", "radio"):
        if proto.HasField("raw_value"):
            return "string_value", proto.raw_value
        return "string_value", proto.options[proto.default] if proto.HasField("default") else None
    if kind == "number_input":
        if proto.HasField("value"):
            return "double_value", proto.value
        return ("double_value", proto.default) if proto.HasField("default") else None
    if kind == "slider":
        values = list(proto.value if set_value else proto.default)
        if proto.type == Slider.SELECT_SLIDER:
            return "string_array_value", [proto.options[int(i)] for i in values]
        return "double_array_value", values
    if kind == "button_group":
        return "string_array_value", list(proto.raw_values) if set_value else [
            proto.options[i].content for i in proto.default]
    if kind == "multiselect":
        return "string_array_value", list(proto.raw_values) if set_value else [proto.options[i] for i in proto.default]
    return None


def _cookie_header(cookies: dict[str, str]) -> dict[str, str]:
    return {"Cookie": "; ".join(f"{name}={value}" for name, value in cookies.items())} if cookies else {}


def _set_value(entry, field_name: str, value: object) -> None:
    if field_name.endswith("_array_value"):
        getattr(entry, field_name).data.extend(value)
    else:
        setattr(entry, field_name, value)


# What a browser without a cache fetches before it opens the websocket: the page, the scripts and styles it names
# (Streamlit 1.67's index.html preloads about 60), the server's health and host config; then, for the first chart,
# the plotly chunk (4.7 MB before compression). Other lazily loaded chunks (fonts, other elements) are left out.
_ASSET = re.compile(r'(?:src|href)="\./(static/[^"]+\.(?:js|css))"')
_PLOTLY_CHUNK = re.compile(rb"PlotlyChart\.[\w-]+\.js")
BROWSER_CONNECTIONS = 6  # parallel HTTP/1.1 connections a browser opens to one host


async def load_static(url: str, timeout: float = RUN_TIMEOUT) -> tuple[int, str]:
    """Fetch a Streamlit page's files as a fresh browser would (gzip accepted). Returns (bytes received over the
    wire, "" or what failed)."""
    base = url.rstrip("/")
    limits = httpx.Limits(max_connections=BROWSER_CONNECTIONS)
    received = 0
    async with httpx.AsyncClient(timeout=timeout, limits=limits, headers={"Accept-Encoding": "gzip"}) as client:

        async def get(path: str) -> bytes:
            nonlocal received
            response = await client.get(f"{base}/{path}")
            response.raise_for_status()
            received += response.num_bytes_downloaded
            return response.content

        try:
            page = (await get("")).decode("utf-8", errors="replace")
            assets = sorted(set(_ASSET.findall(page)))
            bodies = await asyncio.gather(get("_stcore/health"), get("_stcore/host-config"),
                                          *(get(path) for path in assets))
            chunk = next((m.group().decode() for body in bodies for m in [_PLOTLY_CHUNK.search(body)] if m), None)
            if chunk:
                await get(f"static/js/{chunk}")
        except (httpx.HTTPError, OSError) as error:
            return received, f"{type(error).__name__}: {error}"
    return received, ""
