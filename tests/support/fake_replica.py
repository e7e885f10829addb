"""``python -m tests.support.fake_replica PORT NAME``: a stand-in for one app replica, for the replica tests.

It answers what nginx and the supervisor ask of a replica without importing the app: ``/_stcore/health``,
a static file under ``/static/`` (``static_body``: text of a few KB, with its type from its extension, as Streamlit
serves its bundles: uncompressed), any other path with ``NAME``, and a websocket on ``/_stcore/stream``
(subprotocol ``streamlit``) that answers every message with ``NAME``. Starts in a fraction of a second.
"""

from __future__ import annotations

import asyncio
import sys

from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.http11 import Response

STATIC_TYPES = {"js": "text/javascript", "css": "text/css", "json": "application/json", "svg": "image/svg+xml",
                "html": "text/html", "woff2": "font/woff2"}


def static_body(path: str) -> bytes:
    """What the stand-in serves for a static ``path``: 4 KB of text that names the path (compressible, as a bundle)."""
    return (f"/* {path} */ " + "function f(x) { return x + 1; } " * 128).encode()


async def main(port: int, name: str) -> None:
    def http(connection, request):
        if request.path.startswith("/_stcore/stream"):
            return None  # the websocket handshake goes on
        kind, body = "text/plain", b"ok" if request.path == "/_stcore/health" else name.encode()
        if request.path.startswith("/static/"):
            kind, body = STATIC_TYPES[request.path.rpartition(".")[2]], static_body(request.path)
        return Response(200, "OK", Headers({"Content-Type": kind, "Content-Length": str(len(body))}), body)

    async def stream(websocket):
        async for _message in websocket:
            await websocket.send(name)

    async with serve(stream, "127.0.0.1", port, process_request=http, subprotocols=["streamlit"]):
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
