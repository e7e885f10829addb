"""The batched inference queue: inputs run together give each the record of its own run, and the queue is bounded."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest

from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel, load_model
from vizcore.model.run import Capture, prepare, run, run_batch
from vizcore.serve.queue import Counts, InferenceQueue, QueueFull, QueueTimeout, rows_apart
from vizcore.serve.settings import Limits, torch_threads

EVERYTHING = Capture(hidden=True, qkv=True, head_outputs=True, logits=True)
INPUTS = [  # several lengths, pairs among them, one input truncated to the model's 64 tokens
    ("The cat sat.", None),
    ("A much longer sentence, about a dog that chased the cat all the way round the garden.", None),
    ("Is this a pair?", "Yes: two sentences, one input."),
    ("Hi", None),
    ("word " * 80, None),
]
WAIT = 30.0  # seconds: a bound for a wait that ends at once when the code works, never a timing assertion


@pytest.fixture(scope="module", params=["bert", "distilbert", "gpt2", "mpnet"])
def loaded(request, tiny_model_dir) -> LoadedModel:
    head = "base" if request.param == "gpt2" else "mlm"  # a decoder has no masked-LM head
    return load_model(str(tiny_model_dir(request.param)), device="cpu", head=head)


@pytest.fixture(scope="module")
def bert(tiny_model_dir) -> LoadedModel:
    return load_model(str(tiny_model_dir("bert")), device="cpu")


def assert_same_run(batched, alone) -> None:
    """Every field of ``batched`` is ``alone``'s: the same values, and arrays of the same shape and dtype to 1e-6."""
    for field in dataclasses.fields(alone):
        a, b = getattr(alone, field.name), getattr(batched, field.name)
        if isinstance(a, np.ndarray):
            assert b.shape == a.shape and b.dtype == a.dtype, field.name
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-6, err_msg=field.name)
        else:
            assert b == a, field.name


class Forwards:
    """Counts the model's forward passes (a hook of the test's own, removed at the end)."""

    def __init__(self, loaded: LoadedModel) -> None:
        self.count, self.loaded = 0, loaded

    def __enter__(self) -> Forwards:
        self.handle = self.loaded.model.register_forward_hook(lambda *_: setattr(self, "count", self.count + 1))
        return self

    def __exit__(self, *exc) -> None:
        self.handle.remove()


def test_one_padded_batch_gives_each_input_the_record_of_its_own_run(loaded):
    alone = [run(loaded, text, pair, capture=EVERYTHING) for text, pair in INPUTS]
    with Forwards(loaded) as forwards:
        batched = run_batch(loaded, [prepare(loaded, text, pair) for text, pair in INPUTS], EVERYTHING)
    assert forwards.count == 1
    assert len({len(r.tokens) for r in alone}) == len(INPUTS) and alone[-1].truncated  # lengths all differ
    for b, a in zip(batched, alone, strict=True):
        assert_same_run(b, a)


def test_threads_asking_at_once_share_one_forward_pass(loaded):
    alone = [run(loaded, text, pair, capture=Capture(hidden=True)) for text, pair in INPUTS]
    queue = InferenceQueue(loaded, Limits(max_batch=len(INPUTS), window=WAIT))  # the batch fills before the window
    results: dict[int, object] = {}
    start = threading.Barrier(len(INPUTS))

    def student(i: int) -> None:
        start.wait()
        results[i] = queue.submit(*INPUTS[i], capture=Capture(hidden=True))

    threads = [threading.Thread(target=student, args=(i,)) for i in range(len(INPUTS))]
    with Forwards(loaded) as forwards:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
    apart = sum(len(a.tokens) in rows_apart(loaded) for a in alone)  # "Hi": 3 tokens, MKL's 1 to 3 rows
    assert 0 < apart < len(INPUTS)  # one forward for the others, one for each of these
    assert (forwards.count, queue.counts) == (1 + apart, Counts(1 + apart, len(INPUTS), len(INPUTS) - apart))
    for i, a in enumerate(alone):
        assert_same_run(results[i], a)


def test_a_batched_record_is_its_runs_to_the_bit_unless_its_token_count_is_apart(tiny_model_dir):
    """BERT (attention through the sink): each row's attention over its own tokens, as its run computes it."""
    bert = load_model(str(tiny_model_dir("bert")), device="cpu", head="mlm")
    apart = rows_apart(bert)
    items = [prepare(bert, " ".join(["word"] * n)) for n in range(1, 30, 2)]  # 3 to 31 tokens: widths differ
    exact = [item for item in items if item.num_tokens not in apart]
    assert len(exact) >= len(items) - 1
    for batched, item in zip(run_batch(bert, exact, EVERYTHING), exact, strict=True):
        alone = run(bert, item.text, capture=EVERYTHING)
        for field in ("attention", "hidden_states", "queries", "keys", "values", "head_outputs", "logits"):
            assert np.array_equal(getattr(batched, field), getattr(alone, field)), (item.num_tokens, field)


def test_a_request_whose_token_count_is_apart_runs_alone_and_the_others_batch_together(bert, monkeypatch):
    from vizcore.serve import queue as module

    texts = ["A first sentence.", "A second sentence.", "Two words", "A fourth one here."]
    items = [prepare(bert, text) for text in texts]
    lonely = items[2].num_tokens
    assert [item.num_tokens == lonely for item in items] == [False, False, True, False]
    monkeypatch.setattr(module, "rows_apart", lambda loaded: frozenset({lonely}))
    gate = Gate()
    queue = InferenceQueue(bert, Limits(max_batch=8, window=0), runner=gate)
    first = queue.put(items[0])
    gate.until_running(1)  # the others wait together while the first batch runs
    futures = [queue.put(item) for item in items[1:]]
    gate.opened.set()
    assert [f.result(WAIT).text for f in (first, *futures)] == texts
    assert gate.batches == [texts[:1], [texts[1], texts[3]], [texts[2]]]  # passed over, then alone


class Gate:
    """A runner that records each batch's inputs, then waits for ``open`` before running it."""

    def __init__(self, error: Exception | None = None) -> None:
        self.batches: list[list[str]] = []
        self.opened, self.error = threading.Event(), error

    def __call__(self, loaded, items, capture):
        self.batches.append([item.text for item in items])
        assert self.opened.wait(WAIT)
        if self.error is not None:
            raise self.error
        return run_batch(loaded, items, capture)

    def until_running(self, count: int) -> None:
        deadline = time.monotonic() + WAIT
        while len(self.batches) < count and time.monotonic() < deadline:
            time.sleep(0.001)


def test_what_waits_while_a_batch_runs_is_the_next_batch_in_order_and_at_most_max_batch(bert):
    gate = Gate()
    queue = InferenceQueue(bert, Limits(max_batch=3, window=0), runner=gate)
    texts = [f"Sentence number {i} of the class." for i in range(8)]
    first = queue.put(prepare(bert, texts[0]))
    gate.until_running(1)
    futures = [queue.put(prepare(bert, text)) for text in texts[1:]]
    gate.opened.set()
    runs = [f.result(WAIT) for f in (first, *futures)]
    assert gate.batches == [texts[:1], texts[1:4], texts[4:7], texts[7:]]
    assert [r.text for r in runs] == texts
    assert_same_run(runs[5], run(bert, texts[5]))


def test_a_batch_stays_under_its_attention_cells_and_a_longer_input_runs_alone(bert):
    gate = Gate()
    long, short = "word " * 40, [f"Short number {i}." for i in range(4)]  # 42 tokens (over the limit alone); 6
    queue = InferenceQueue(bert, Limits(max_batch=8, max_cells=3 * 20 * 20, window=0), runner=gate)
    first = queue.put(prepare(bert, short[0]))
    gate.until_running(1)
    texts = [short[1], short[2], long, short[3]]
    futures = [queue.put(prepare(bert, text)) for text in texts]
    gate.opened.set()
    assert [f.result(WAIT).text for f in (first, *futures)] == [short[0], *texts]
    assert gate.batches == [short[:1], short[1:3], [long], short[3:]]


def test_a_full_queue_refuses_at_once_and_the_waiting_runs_still_finish(bert):
    gate = Gate()
    queue = InferenceQueue(bert, Limits(max_batch=8, max_waiting=2, window=0), runner=gate)
    futures = [queue.put(prepare(bert, "The first one runs."))]
    gate.until_running(1)
    futures += [queue.put(prepare(bert, f"Waiting number {i}.")) for i in range(2)]
    with pytest.raises(QueueFull, match="busy"):
        queue.submit("One too many.")
    gate.opened.set()
    assert [f.result(WAIT).text for f in futures] == ["The first one runs.", "Waiting number 0.", "Waiting number 1."]


def test_an_error_in_a_batch_reaches_every_request_of_it_and_the_queue_goes_on(bert):
    gate = Gate(error=RuntimeError("the forward pass failed"))
    queue = InferenceQueue(bert, Limits(max_batch=3, window=WAIT), runner=gate)
    futures = [queue.put(prepare(bert, f"Sentence {i}.")) for i in range(3)]
    gate.opened.set()
    for future in futures:
        with pytest.raises(RuntimeError, match="forward pass failed"):
            future.result(WAIT)
    gate.error = None
    after = [queue.put(prepare(bert, f"After the error {i}.")) for i in range(3)]  # a full batch: no window
    assert [f.result(WAIT).text for f in after] == [f"After the error {i}." for i in range(3)]


def test_a_request_waits_at_most_its_timeout_and_one_given_up_is_not_run(bert):
    gate = Gate()
    queue = InferenceQueue(bert, Limits(window=0), runner=gate)
    first = queue.put(prepare(bert, "This one runs first."))
    gate.until_running(1)
    with pytest.raises(QueueTimeout, match="did not answer"):
        queue.submit("This one gives up while waiting.", timeout=0.01)
    gate.opened.set()
    assert first.result(WAIT).text == "This one runs first."
    assert queue.submit("The next one.").text == "The next one."
    assert gate.batches == [["This one runs first."], ["The next one."]]


def test_bad_input_is_refused_in_the_callers_thread_and_never_reaches_a_batch(bert):
    queue = InferenceQueue(bert)
    with Forwards(bert) as forwards, pytest.raises(VizError):
        queue.submit("   ")
    assert forwards.count == 0 and queue.waiting() == 0


def test_the_same_input_asked_twice_in_a_batch_is_one_row_and_each_gets_what_it_asked(bert):
    gate = Gate()
    queue = InferenceQueue(bert, Limits(max_batch=2, window=WAIT), runner=gate)
    item = prepare(bert, "The same sentence twice.")
    plain, deep = queue.put(item, Capture(hidden=False)), queue.put(item, Capture(hidden=True))
    gate.opened.set()
    assert_same_run(plain.result(WAIT), run(bert, item.text, capture=Capture(hidden=False)))
    assert_same_run(deep.result(WAIT), run(bert, item.text, capture=Capture(hidden=True)))
    assert gate.batches == [["The same sentence twice."]]


def test_settings_come_from_the_environment_and_a_bad_one_says_which():
    limits = Limits.from_env({"VIZCORE_QUEUE_BATCH": "4", "VIZCORE_QUEUE_WINDOW_MS": "0",
                              "VIZCORE_QUEUE_TIMEOUT": "2.5"})
    assert (limits.max_batch, limits.window, limits.timeout, limits.max_waiting) == (4, 0.0, 2.5, Limits().max_waiting)
    bad = (("VIZCORE_QUEUE_LENGTH", "0"), ("VIZCORE_QUEUE_BATCH", "2.5"), ("VIZCORE_QUEUE_TIMEOUT", "inf"))
    for name, value in bad:
        with pytest.raises(VizError, match=name):
            Limits.from_env({name: value})
    assert torch_threads({}) == 1 and torch_threads({"VIZCORE_TORCH_THREADS": " 2 "}) == 2
    with pytest.raises(VizError, match="VIZCORE_TORCH_THREADS"):
        torch_threads({"VIZCORE_TORCH_THREADS": "many"})


def test_threads_tokenising_at_once_each_get_their_own_encoding(bert):
    """Runs (no truncation unless too long) beside other pages' calls that truncate (as fill-mask's do)."""
    texts = ["word " * 80, "A short one.", "word " * 70 + "end", "Another short sentence."] * 4

    def encode(i: int) -> list[int]:
        if i % 2:
            return bert.tokenizer(texts[i], truncation=True, max_length=8)["input_ids"]
        return prepare(bert, texts[i]).encoding["input_ids"][0].tolist()

    expected = [encode(i) for i in range(len(texts))]
    wrong: list[int] = []

    def session(i: int) -> None:
        wrong.extend(i for _ in range(50) if encode(i) != expected[i])

    threads = [threading.Thread(target=session, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert wrong == []  # without vizcore.model.loading's lock, several in a thousand came out wrong


def test_an_idle_worker_ends_and_the_next_request_starts_another(bert, monkeypatch):
    from vizcore.serve import queue as module

    monkeypatch.setattr(module, "IDLE_EXIT", 0.01)
    queue = InferenceQueue(bert, Limits(window=0))
    first = queue.submit("Before the pause.")
    deadline = time.monotonic() + WAIT
    while queue._worker is not None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert queue._worker is None
    assert_same_run(queue.submit("After the pause."), run(bert, "After the pause."))
    assert first.text == "Before the pause." and queue.counts.forwards == 2
