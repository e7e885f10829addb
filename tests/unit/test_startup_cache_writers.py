"""Many writers of one startup-cache entry at once (N replicas warming up together, or replicas in containers
whose process ids are the same, sharing one cache folder): every reader sees a whole entry or none."""

from __future__ import annotations

import threading

import numpy as np

from vizcore.attention.examples import startup_inputs
from vizcore.model import startup_cache
from vizcore.model.catalog import DEFAULT_MODEL
from vizcore.model.record import Run

TEXT = next(text for text, pair in startup_inputs() if pair is None)  # the cache holds the opening sentences only
TOKENS = 9


def _run(value: int) -> Run:
    """A result whose every number is ``value``: a mix of two writers' files would show two values."""
    tokens = [f"t{value}"] * TOKENS
    return Run(model=DEFAULT_MODEL, text=TEXT, pair=None, tokens=tokens, offsets=[(value, value)] * TOKENS,
               special_mask=np.zeros(TOKENS, bool), segment_ids=np.zeros(TOKENS, np.int64),
               attention=np.full((6, 12, TOKENS, TOKENS), value, np.float32), truncated=False,
               num_input_tokens=TOKENS)


def test_writers_of_one_entry_at_once_leave_whole_entries_only(tmp_path, monkeypatch):
    monkeypatch.setenv(startup_cache.CACHE_ENV, str(tmp_path))
    writers, rounds = 4, 8
    statuses: list[str] = []
    seen: list[Run | None] = []
    start = threading.Barrier(writers + 1)

    def write(value: int) -> None:
        start.wait()
        for _ in range(rounds):
            statuses.append(startup_cache.store(_run(value), "cpu"))

    def read() -> None:
        start.wait()
        for _ in range(writers * rounds):
            seen.append(startup_cache.load(DEFAULT_MODEL, "cpu", TEXT, None))

    threads = [threading.Thread(target=write, args=(value,)) for value in range(1, writers + 1)]
    threads.append(threading.Thread(target=read))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert "unwritable" not in statuses, "a writer's file was taken from under it"
    final = startup_cache.load(DEFAULT_MODEL, "cpu", TEXT, None)
    assert final is not None
    for result in [*filter(None, seen), final]:
        value = int(result.attention.flat[0])
        assert startup_cache.same_result(result, _run(value)), "an entry mixes two writers' results"
    assert [path.name for path in tmp_path.iterdir()] == [startup_cache.entry_path(TEXT, None).name], \
        "a writer's temporary file was left behind"
