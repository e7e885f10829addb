"""Which rooms store a server uses (``VIZCORE_ROOMS``): in memory for one process, a shared Redis for replicas.

Kept apart from vizcore/lessons/rooms.py: the Redis store imports that contract, so the contract cannot import it.
"""

from __future__ import annotations

import os
import threading

from vizcore.lessons.rooms import MemoryRooms, RoomError, Rooms


def open_rooms(url: str | None = None) -> Rooms:
    """The store a server uses: in memory for one process (``None``, ``""`` or ``memory``); a shared store for
    replicas (``redis://host:port/db``, vizcore/lessons/rooms_redis.py)."""
    if not url or url == "memory":
        return MemoryRooms()
    if url.startswith(("redis://", "rediss://", "unix://")):
        from vizcore.lessons.rooms_redis import RedisRooms

        return RedisRooms(url)
    raise RoomError(f"Unknown rooms store '{url}': use 'memory' or a redis://host:port/db address.")


_server: Rooms | None = None
_server_lock = threading.Lock()


def server_rooms() -> Rooms:
    """This server process's store (``VIZCORE_ROOMS``), one for every session and for the class channel's streams
    (vizcore/lessons/channel.py), which run outside any session: both must see the same in-memory rooms."""
    global _server
    with _server_lock:
        if _server is None:
            _server = open_rooms(os.environ.get("VIZCORE_ROOMS"))
        return _server
