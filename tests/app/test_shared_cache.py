"""One server-wide cache: one model object per (name, device, head), one cache of runs for every page."""

import threading

import numpy as np
import pytest

from ui.attention.page import attention_for
from ui.inside import page as inside
from ui.state import clear_caches, get_model, get_queue, get_run
from vizcore.model.run import Capture, run
from vizcore.serve.queue import InferenceQueue

WAIT = 30.0  # seconds: a bound for a wait that ends at once when the code works, never a timing assertion


def test_a_model_is_loaded_once_however_it_is_asked_for(tiny_bert_dir):
    name = str(tiny_bert_dir)
    assert get_model(name, "cpu") is get_model(name, "cpu", "base") is get_model(name, device="cpu")
    assert get_model(name, "cpu", "mlm") is not get_model(name, "cpu")


def test_pages_share_one_cache_of_runs(tiny_bert_dir):
    name, text = str(tiny_bert_dir), "Every page reads the same run."
    first = get_run(name, "cpu", text, None)
    assert attention_for(name, "cpu", text, None) is first  # the Explorer's compare view
    deep = inside.get_run(name, "cpu", text, None)  # step by step: the same cache, with hidden states
    assert deep is get_run(name, "cpu", text, None, hidden=True) and deep.hidden_states is not None
    assert first.hidden_states is None and (deep.attention == first.attention).all()


@pytest.fixture
def fresh_caches():
    """The server's caches emptied before and after: the queue is made again with this test's settings."""
    clear_caches()
    yield
    clear_caches()


def at_once(function, arguments: list) -> list:
    """``function`` of each argument in a thread of its own, all released together (as sessions are)."""
    results: dict[int, object] = {}
    start = threading.Barrier(len(arguments))

    def session(i: int) -> None:
        start.wait()
        results[i] = function(arguments[i])

    threads = [threading.Thread(target=session, args=(i,)) for i in range(len(arguments))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    return [results[i] for i in range(len(arguments))]


def test_sessions_asking_for_different_sentences_at_once_share_one_forward_pass(tiny_bert_dir, fresh_caches,
                                                                                monkeypatch):
    monkeypatch.setenv("VIZCORE_QUEUE_BATCH", "4")
    monkeypatch.setenv("VIZCORE_QUEUE_WINDOW_MS", str(WAIT * 1000))  # the batch fills long before
    name, texts = str(tiny_bert_dir), [f"Student {i} typed a sentence of {'many ' * i}words." for i in range(4)]
    loaded = get_model(name, "cpu")
    alone = [run(loaded, text, capture=Capture(hidden=False)) for text in texts]
    calls = []
    handle = loaded.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        shared = at_once(lambda text: get_run(name, "cpu", text, None), texts)
    finally:
        handle.remove()
    assert len(calls) == 1 and get_queue(name, "cpu").counts.largest == 4
    for together, own in zip(shared, alone):
        assert together.tokens == own.tokens and together.hidden_states is None
        np.testing.assert_allclose(together.attention, own.attention, rtol=0, atol=1e-6)


def test_sessions_asking_for_the_same_sentence_at_once_compute_it_once(tiny_bert_dir, fresh_caches, monkeypatch):
    name, text = str(tiny_bert_dir), "Thirty students, one sentence."
    queue = get_queue(name, "cpu")
    submitted = []

    def submit(*args, **kwargs):
        submitted.append(args)
        return InferenceQueue.submit(queue, *args, **kwargs)

    monkeypatch.setattr(queue, "submit", submit)
    shared = at_once(lambda _: get_run(name, "cpu", text, None), [None] * 6)
    assert len(submitted) == 1 and all(r is shared[0] for r in shared)  # Streamlit's lock per cache key
