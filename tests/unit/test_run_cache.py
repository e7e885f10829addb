"""The server's cache of runs is bounded by bytes: the least recently used go first, and a key is computed once."""

import threading

import numpy as np
import pytest

from vizcore.errors import VizError
from vizcore.model.record import Run
from vizcore.serve.cache import ByteCache, nbytes
from vizcore.serve.settings import DEFAULT_RUN_CACHE_MB, run_cache_bytes

WAIT = 30.0  # seconds: a bound for a wait that ends at once when the code works, never a timing assertion


def record(tokens: int, layers: int = 2, heads: int = 2) -> Run:
    attention = np.full((layers, heads, tokens, tokens), 1 / tokens, dtype=np.float32)
    return Run(model="m", text="x " * tokens, pair=None, tokens=["x"] * tokens, offsets=[(0, 0)] * tokens,
               special_mask=np.zeros(tokens, bool), segment_ids=np.zeros(tokens, np.int64), attention=attention,
               truncated=False, num_input_tokens=tokens)


def test_a_runs_size_is_the_bytes_of_its_arrays():
    run = record(10)
    assert nbytes(run) == 2 * 2 * 10 * 10 * 4 + 10 * 1 + 10 * 8  # attention, special mask, segments


def test_entries_are_evicted_by_size_least_recently_used_first():
    sizes = {"a": 40, "b": 30, "c": 20, "d": 50}
    cache = ByteCache(100, size=lambda key: sizes[key])
    for key in "abc":
        assert cache.get(key, lambda key=key: key) == key
    assert cache.keys() == ["a", "b", "c"] and cache.bytes == 90
    assert cache.get("a", lambda: pytest.fail("a is cached")) == "a"  # a is now the most recently used
    cache.get("d", lambda: "d")  # 140 bytes: b goes (the oldest use), then 110: c goes
    assert cache.keys() == ["a", "d"] and cache.bytes == 90


def test_one_entry_over_the_bound_is_kept_alone_while_it_is_the_newest():
    cache = ByteCache(100, size=len)
    cache.get(1, lambda: "x" * 60)
    cache.get(2, lambda: "y" * 300)
    assert cache.keys() == [2] and cache.bytes == 300
    cache.get(3, lambda: "z" * 10)
    assert cache.keys() == [3] and cache.bytes == 10


def test_runs_fill_the_cache_up_to_its_bytes():
    run = record(16)  # 4,256 bytes
    cache = ByteCache(10 * nbytes(run))
    for i in range(25):
        cache.get(i, lambda: run)
    assert cache.keys() == list(range(15, 25)) and cache.bytes == 10 * nbytes(run)


def test_sessions_missing_one_key_at_once_compute_it_once_and_an_error_reaches_them_all():
    cache, started, release, calls = ByteCache(1000, size=len), threading.Event(), threading.Event(), []

    def compute():
        calls.append(1)
        started.set()
        assert release.wait(WAIT)
        return "value"

    results = []
    first = threading.Thread(target=lambda: results.append(cache.get("k", compute)))
    first.start()
    assert started.wait(WAIT)
    others = [threading.Thread(target=lambda: results.append(cache.get("k", compute))) for _ in range(4)]
    for thread in others:
        thread.start()
    release.set()
    for thread in (first, *others):
        thread.join(WAIT)
    assert calls == [1] and results == ["value"] * 5

    def fail():
        raise VizError("the model failed")

    with pytest.raises(VizError, match="failed"):
        cache.get("bad", fail)
    assert cache.keys() == ["k"] and cache.get("bad", lambda: "later") == "later"  # an error is not kept


def test_the_bound_comes_from_the_environment_in_megabytes_and_a_bad_one_says_which():
    assert run_cache_bytes({}) == DEFAULT_RUN_CACHE_MB * 2**20
    assert run_cache_bytes({"VIZCORE_RUN_CACHE_MB": " 0.5 "}) == 2**19
    for bad in ("0", "-3", "lots", "inf"):
        with pytest.raises(VizError, match="VIZCORE_RUN_CACHE_MB"):
            run_cache_bytes({"VIZCORE_RUN_CACHE_MB": bad})
