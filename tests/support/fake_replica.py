"""``python -m tests.support.fake_replica PORT NAME``: a stand-in for one app replica, for the replica tests.

It answers what nginx and the supervisor ask of a replica without importing the app: ``/_stcore/health``,
any other path with ``NAME``, and a websocket on ``/_stcore/stream`` (subprotocol ``streamlit``) that
answers every message with ``NAME``. Starts in a fraction of a second.
"""

from __future__ import annotations

import asyncio
import sys

from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.http11 import Response


async def main(port: int, name: str) -> None:
    def http(connection, request):
        if request.path.startswith("/_stcore/stream"):
            return None  # the websocket handshake goes on
        body = b"ok" if request.path == "/_stcore/health" else name.encode()
        return Response(200, "OK", Headers({"Content-Type": "text/plain", "Content-Length": str(len(body))}), body)

    async def stream(websocket):
        async for _message in websocket:
            await websocket.send(name)

    async with serve(stream, "127.0.0.1", port, process_request=http, subprotocols=["streamlit"]):
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
