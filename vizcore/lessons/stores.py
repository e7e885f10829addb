"""Which rooms store a server uses (``VIZCORE_ROOMS``): in memory for one process, a shared Redis for replicas.

Kept apart from vizcore/lessons/rooms.py: the Redis store imports that contract, so the contract cannot import it.
"""

from __future__ import annotations

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
