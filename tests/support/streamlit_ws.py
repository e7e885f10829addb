"""A visitor without a browser: Streamlit's own websocket protocol, as the browser speaks it.

The replica tests need many visitors at once on two cores, so no Chromium: each visitor loads the page by
HTTP (where nginx gives it its replica cookie), then opens ``/_stcore/stream`` (subprotocol ``streamlit``,
an ``Origin`` header, the cookie) and sends what the browser sends on connecting: a ``rerun_script``
BackMsg carrying the address bar's query string and page. The server answers with ForwardMsgs (protobuf)
until ``script_finished``. After a dropped socket, ``reconnect`` does what the browser's reconnect does: a
new socket and the same rerun from the URL. (A stand-in until bench/streamlit_client.py lands.)
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlparse

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import ClientConnection, connect

REPLICA_HEADER = "X-Vizcore-Replica"
COOKIE = "vizcore_replica"


@dataclass
class PageRun:
    """What one script run sent back."""

    seconds: float
    status: str  # ForwardMsg.script_finished's name, e.g. FINISHED_SUCCESSFULLY
    exceptions: list[str]  # the messages of exception elements on the page
    shown: bytes  # every delta, serialised: what the page drew (search it for a sentence)
    widgets: dict[str, str] = field(default_factory=dict)  # "<element type>:<label>" -> widget id


@dataclass
class Visitor:
    """One student: a cookie jar, a page with its query string, and at most one open websocket."""

    base: str  # http://host:port or https://host (a cluster's Ingress)
    page: str  # a URL path without the slash ("" is Home, "attention" the Explorer)
    query: dict[str, str]
    cookies: dict[str, str] = field(default_factory=dict)
    replicas: list[str] = field(default_factory=list)  # X-Vizcore-Replica of every answer, in order
    socket: ClientConnection | None = None

    @property
    def query_string(self) -> str:
        return urlencode(self.query)

    def _cookie_header(self) -> dict[str, str]:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}

    def _remember(self, headers) -> None:
        self.replicas.append(headers.get(REPLICA_HEADER) or "")
        for value in headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";")[0]

    def load(self, path: str | None = None) -> int:
        """GET the page (or ``path``, e.g. a static file) as the browser does first; returns the status."""
        url = f"{self.base}/{self.page if path is None else path}"
        if path is None and self.query:
            url += f"?{self.query_string}"
        request = urllib.request.Request(url, headers=self._cookie_header())
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            self._remember(response.headers)
            return response.status

    async def open(self) -> None:
        address = urlparse(self.base)
        scheme = "wss" if address.scheme == "https" else "ws"
        stream = f"{scheme}://{address.netloc}{address.path.rstrip('/')}/_stcore/stream"
        self.socket = await connect(stream, subprotocols=["streamlit"], origin=f"{address.scheme}://{address.netloc}",
                                    additional_headers=self._cookie_header(), max_size=None, open_timeout=30)
        self._remember(self.socket.response.headers)  # the upgrade's answer names the replica too

    async def run(self, timeout: float = 120.0, typed: dict[str, str] | None = None,
                  triggers: dict[str, str] | None = None, clicked: tuple[str, ...] = ()) -> PageRun:
        """Send the browser's rerun (this page, this query string; ``typed``: widget id -> the text typed into
        it; ``triggers``: widget id -> a component's trigger JSON; ``clicked``: the buttons pressed) and read until
        the run finishes. The page's new address (``page_info_changed``) becomes this visitor's query, as the
        browser's address bar takes it."""
        message = BackMsg()
        message.rerun_script.query_string = self.query_string
        message.rerun_script.page_name = self.page
        for widget_id, text in (typed or {}).items():
            message.rerun_script.widget_states.widgets.add(id=widget_id, string_value=text)
        for widget_id, value in (triggers or {}).items():
            message.rerun_script.widget_states.widgets.add(id=widget_id, json_trigger_value=value)
        for widget_id in clicked:
            message.rerun_script.widget_states.widgets.add(id=widget_id, trigger_value=True)
        started = time.perf_counter()
        await self.socket.send(message.SerializeToString())
        exceptions: list[str] = []
        shown: list[bytes] = []
        widgets: dict[str, str] = {}
        while True:
            remaining = timeout - (time.perf_counter() - started)
            forward = ForwardMsg.FromString(await asyncio.wait_for(self.socket.recv(), max(remaining, 0.001)))
            kind = forward.WhichOneof("type")
            if kind == "delta":
                shown.append(forward.delta.SerializeToString())
                element = forward.delta.new_element
                element_kind = element.WhichOneof("type")
                if element_kind == "exception":
                    exceptions.append(f"{element.exception.type}: {element.exception.message}")
                elif element_kind == "bidi_component":
                    widgets[f"component:{element.bidi_component.component_name}"] = element.bidi_component.id
                elif element_kind:
                    widget = getattr(element, element_kind)
                    if getattr(widget, "id", "") and hasattr(widget, "label"):
                        widgets[f"{element_kind}:{widget.label}"] = widget.id
            elif kind == "page_info_changed":
                self.query = dict(parse_qsl(forward.page_info_changed.query_string))
            elif kind == "script_finished":
                status = ForwardMsg.ScriptFinishedStatus.Name(forward.script_finished)
                if status != "FINISHED_EARLY_FOR_RERUN":
                    return PageRun(time.perf_counter() - started, status, exceptions, b"".join(shown), widgets)

    async def wait_closed(self, timeout: float = 30.0) -> None:
        """Read what is left (the server sends a page profile after a run) until the socket drops: raises
        the websockets ConnectionClosed it ends with, or TimeoutError if it stays open."""
        async def read_all() -> None:
            while True:
                await self.socket.recv()

        await asyncio.wait_for(read_all(), timeout)

    async def reconnect(self, timeout: float = 120.0) -> PageRun:
        """The browser's answer to a dropped socket: a new one (same cookie, same URL) and the page's rerun."""
        await self.close()
        await self.open()
        return await self.run(timeout)

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()
            self.socket = None
