"""The attention view's layers, kept per run and fetched by the browser (issue 49 B).

Above ``payload.FULL_MAX_TOKENS`` tokens the view's payload carries one layer (a 512-token layer of 12 heads is
1.5-1.8 MB deflated). A layer switch used to be a page run that sent the next layer: 270-380 ms at 512 tokens in
Chromium. Now the payload names a URL of the run's layers, ``GET /api/attention/layer?view=TOKEN&layer=L``
(0-based), served by the app's own server (``st.App`` routes, app.py), and the view fetches the layer it switches
to, and the next one ahead, with no page run: the run that records the selection sends no layer again.
The server deflates the run's other layers in the background once the view is sent, so a fetch finds them ready.

* ``LayerShelf`` keeps each run's deflated layers and grid while the run itself is alive (runs live in the server's
  cache of runs; weak references here), and names each run with an unguessable token: a URL shows that run's
  weights only to whoever was given the token (the page that shows the run).
* The route answers the layer's deflated codes (``payload.deflate_layer``), with the same 16-character id the
  binary payload gives a layer (``X-Layer-Id``), cacheable by the browser (a token's layers never change); an
  unknown token, a run no longer kept or a layer out of range is a 404 with an empty body, a malformed request 400.
  Behind replicas the sticky cookie brings the request to the process that holds the run; if it cannot, the
  view asks the page for the layer (the run before this change).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache, partial

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from vizcore.attention.payload import deflate_layer, grid_codes
from vizcore.model.record import Run

PATH = "/api/attention/layer"
_ENCODER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vizcore-layers")
HEADERS = {"Cache-Control": "private, max-age=3600", "X-Content-Type-Options": "nosniff"}


class LayerShelf:
    """Each run's encoded layers and grid, and its token, kept while the run is alive. Keyed by identity, not by
    (model, text): a run recomputed for the same text gets fresh encodings and a new token."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # the weakref callback may run in a collection inside a call
        self._items: dict[int, tuple[weakref.ref, dict]] = {}
        self._tokens: dict[str, int] = {}

    def _item(self, result: Run) -> dict:
        with self._lock:
            item = self._items.get(id(result))
            if item is None or item[0]() is not result:
                token = secrets.token_urlsafe(16)
                item = (weakref.ref(result, partial(self._forget, id(result))), {"token": token})
                self._items[id(result)] = item
                self._tokens[token] = id(result)
            return item[1]

    def _forget(self, key: int, _dead: weakref.ref) -> None:
        with self._lock:
            item = self._items.get(key)
            if item is not None and item[0]() is None:
                del self._items[key]
                self._tokens.pop(item[1]["token"], None)

    def token(self, result: Run) -> str:
        return self._item(result)["token"]

    def encoded(self, result: Run, layer: int) -> bytes:
        """``deflate_layer`` of ``result``'s layer (0-based), computed once."""
        stored = self._item(result)
        if layer not in stored:
            stored[layer] = deflate_layer(result.attention[layer])
        return stored[layer]

    def encode_all_soon(self, result: Run) -> None:
        """Deflate the run's other layers in the background (one thread for the process, the run's layers in
        order), so a layer the view fetches is ready when asked for: 70 ms a 512-token layer on one core, once a
        run. Only a weak reference waits in the queue: a run dropped meanwhile is not encoded."""
        stored = self._item(result)
        with self._lock:
            if stored.get("queued"):
                return
            stored["queued"] = True
        _ENCODER.submit(self._encode_all, weakref.ref(result))

    def _encode_all(self, ref: weakref.ref) -> None:
        for layer in range(ref().num_layers if ref() is not None else 0):
            result = ref()
            if result is None:
                return
            self.encoded(result, layer)
            del result

    def grid(self, result: Run) -> dict:
        stored = self._item(result)
        if "grid" not in stored:
            stored["grid"] = grid_codes(result.attention)
        return stored["grid"]

    def run_of(self, token: str) -> Run | None:
        with self._lock:
            key = self._tokens.get(token)
            item = self._items.get(key) if key is not None else None
            return item[0]() if item is not None else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


@lru_cache(maxsize=1)
def server_shelf() -> LayerShelf:
    """The process's shelf: the pages put their runs on it, the route reads them."""
    return LayerShelf()


def layer_id(raw: bytes) -> str:
    """The id ``payload.binary_payload`` gives the same bytes: the view tells a fetched layer from a sent one."""
    return hashlib.sha1(raw).hexdigest()[:16]


def layer_url(token: str) -> str:
    return f"{PATH}?view={token}"


def routes(shelf: Callable[[], LayerShelf] = server_shelf) -> list[Route]:
    async def layer(request: Request) -> Response:
        token, number = request.query_params.get("view", ""), request.query_params.get("layer", "")
        if not token or len(token) > 64 or not number.isdigit() or len(number) > 4:
            return Response(status_code=400)
        result = shelf().run_of(token)
        if result is None or not 0 <= int(number) < result.num_layers:
            return Response(status_code=404)
        raw = await run_in_threadpool(shelf().encoded, result, int(number))  # deflate: ~70 ms for 512 tokens
        return Response(raw, media_type="application/octet-stream", headers={**HEADERS, "X-Layer-Id": layer_id(raw)})

    return [Route(PATH, layer, methods=["GET"])]
