"""The server's cache of runs, bounded by bytes: a run at 512 tokens on a base-size model is hundreds of MB, one of
twenty tokens on the default model a few hundred KB, so a count of entries bounds neither memory nor reuse.

Least recently used first out, until what stays fits ``max_bytes``; an entry larger than the bound on its own is
kept, alone, while it is the newest (the page that asked for it reads it again on every rerun). Sessions that miss
the same key at once compute it once: the first computes, the others wait for its result (or its error).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Callable, Generic, Hashable, TypeVar

import numpy as np

Value = TypeVar("Value")


def nbytes(record: object) -> int:
    """The bytes of the numpy arrays in a dataclass record (a ``Run``): what dominates its memory."""
    return sum(int(value.nbytes) for field in dataclasses.fields(record)
               if isinstance(value := getattr(record, field.name), np.ndarray))


class ByteCache(Generic[Value]):
    """``get(key, compute)``: the cached value, or ``compute()``'s, kept while the cache stays under ``max_bytes``."""

    def __init__(self, max_bytes: int, size: Callable[[Value], int] = nbytes) -> None:
        self.max_bytes, self._size = max_bytes, size
        self._entries: OrderedDict[Hashable, tuple[Value, int]] = OrderedDict()  # oldest use first
        self._pending: dict[Hashable, Future] = {}
        self._lock = threading.Lock()
        self.bytes = 0

    def get(self, key: Hashable, compute: Callable[[], Value]) -> Value:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][0]
            pending = self._pending.get(key)
            if pending is None:
                self._pending[key] = mine = Future()
        if pending is not None:
            return pending.result()
        try:
            value = compute()
        except BaseException as error:
            with self._lock:
                del self._pending[key]
            mine.set_exception(error)
            raise
        with self._lock:
            del self._pending[key]
            self._keep(key, value)
        mine.set_result(value)
        return value

    def _keep(self, key: Hashable, value: Value) -> None:  # with self._lock held
        size = self._size(value)
        self._entries[key] = (value, size)
        self.bytes += size
        while self.bytes > self.max_bytes and len(self._entries) > 1:
            _, (_, freed) = self._entries.popitem(last=False)
            self.bytes -= freed

    def keys(self) -> list[Hashable]:
        """The cached keys, least recently used first."""
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0
