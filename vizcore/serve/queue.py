"""One bounded inference queue per model: runs asked for together by different sessions share one forward pass.

Streamlit runs every session's script in a thread of its own. When thirty students press Enter in the
same second, thirty forward passes would compete for two cores; here each request is tokenised and
checked in its own thread (bad input is refused there and never reaches a batch), then waits in the
model's queue. One worker thread takes what is waiting, at most ``Limits.max_batch`` requests whose padded
batch stays under ``Limits.max_cells`` attention cells, and runs them as one ``run_batch``: each request
gets the record ``run`` gives for its input (to float rounding: 1e-6 on the tiny test models, a few 1e-6 on
the default model for inputs under 16 tokens, docs/BENCHMARKS.md, "serve-queue"). An idle worker
waits ``Limits.window`` seconds after a first request for others; a busy one takes whatever arrived while
it worked. Bounded: a full queue refuses at once (``QueueFull``), a request waits at most its timeout
(``QueueTimeout``), and an error in a batch reaches every request of that batch.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import deque
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Callable, Sequence

from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel
from vizcore.model.record import Run
from vizcore.model.run import DEFAULT_CAPTURE, Capture, Encoded, prepare, run_batch
from vizcore.serve.settings import Limits

Runner = Callable[[LoadedModel, Sequence[Encoded], Capture], list[Run]]
IDLE_EXIT = 30.0  # seconds: an idle worker thread ends (the next request starts another), so none outlives its queue


class QueueFull(VizError):
    """The model's queue holds ``max_waiting`` requests: this one is refused at once rather than left waiting."""


class QueueTimeout(VizError):
    """A request waited longer than its timeout for its run."""


@dataclass
class _Request:
    item: Encoded
    capture: Capture
    future: Future


@dataclass
class Counts:
    """What a queue has done: forward passes, requests answered by them, the largest batch."""

    forwards: int = 0
    served: int = 0
    largest: int = 0


class InferenceQueue:
    """The queue of one loaded model. ``submit`` from any thread; the forward passes run in the queue's worker."""

    def __init__(self, loaded: LoadedModel, limits: Limits | None = None, runner: Runner = run_batch) -> None:
        self.loaded, self.limits, self._runner = loaded, limits or Limits(), runner
        self._waiting: deque[_Request] = deque()
        self._changed = threading.Condition()
        self._worker: threading.Thread | None = None
        self.counts = Counts()

    def submit(self, text: str, pair: str | None = None, capture: Capture = DEFAULT_CAPTURE,
               timeout: float | None = None) -> Run:
        """``run(loaded, text, pair, capture=capture)``, computed in a batch with whatever else is waiting."""
        future = self.put(prepare(self.loaded, text, pair), capture)
        wait = self.limits.timeout if timeout is None else timeout
        try:
            return future.result(timeout=wait)
        except FutureTimeout:
            future.cancel()  # still waiting: it leaves the queue; already running: its result is dropped
            raise QueueTimeout(f"The model did not answer within {wait:g} s (the server is busy): try again in "
                               "a moment.") from None

    def put(self, item: Encoded, capture: Capture = DEFAULT_CAPTURE) -> Future:
        """Queue one ``prepare``d input; the future gets its ``Run`` or the batch's exception."""
        request = _Request(item, capture, Future())
        with self._changed:
            if len(self._waiting) >= self.limits.max_waiting:
                raise QueueFull(f"The server is busy: {len(self._waiting)} runs are already waiting for the model. "
                                "Try again in a few seconds.")
            self._waiting.append(request)
            if self._worker is None:
                self._start()
            self._changed.notify()
        return request.future

    def _start(self) -> None:  # with self._changed held
        self._worker = threading.Thread(target=self._work, name="vizcore-inference", daemon=True)
        self._worker.start()

    def waiting(self) -> int:
        with self._changed:
            return len(self._waiting)

    def _work(self) -> None:
        try:
            batch = self._take(idle=True)
            while batch is not None:
                self._serve(batch)
                batch = self._take(idle=False)
        finally:
            with self._changed:
                if self._worker is threading.current_thread():  # ended by an error: another takes over
                    self._worker = None
                    if self._waiting:
                        self._start()

    def _take(self, idle: bool) -> list[_Request] | None:
        """The next batch, in arrival order; None (and the worker ends) after ``IDLE_EXIT`` seconds idle.
        After a batch, what arrived meanwhile goes at once; after idling, the others get ``window`` to arrive."""
        with self._changed:
            if idle or not self._waiting:
                if not self._changed.wait_for(lambda: self._waiting, timeout=IDLE_EXIT):
                    self._worker = None  # under the lock: a request arriving now starts a new worker
                    return None
                deadline = time.monotonic() + self.limits.window
                while len(self._waiting) < self.limits.max_batch and (left := deadline - time.monotonic()) > 0:
                    self._changed.wait(left)
            batch: list[_Request] = []
            while self._waiting and len(batch) < self.limits.max_batch and self._fits(batch, self._waiting[0]):
                request = self._waiting.popleft()
                if request.future.set_running_or_notify_cancel():  # False: it timed out while waiting
                    batch.append(request)
            return batch

    def _fits(self, batch: list[_Request], request: _Request) -> bool:
        width = max(r.item.num_tokens for r in (*batch, request))
        return not batch or (len(batch) + 1) * width * width <= self.limits.max_cells

    def _serve(self, batch: list[_Request]) -> None:
        if not batch:
            return
        unique: dict[tuple[str, str | None], Encoded] = {}
        for request in batch:  # the same input asked twice (e.g. with and without hidden states): one row
            unique.setdefault((request.item.text, request.item.pair), request.item)
        try:
            runs = dict(zip(unique, self._runner(self.loaded, list(unique.values()), _union(r.capture for r in batch)),
                            strict=True))
            answers = [_as_asked(runs[r.item.text, r.item.pair], r.capture) for r in batch]
        except Exception as error:  # every request of the batch hears of it, and the worker goes on
            for request in batch:
                request.future.set_exception(error)
            return
        self.counts.forwards += 1
        self.counts.served += len(batch)
        self.counts.largest = max(self.counts.largest, len(batch))
        for request, answer in zip(batch, answers):
            request.future.set_result(answer)


def _union(captures) -> Capture:
    captures = list(captures)
    return Capture(**{f.name: any(getattr(c, f.name) for c in captures) for f in dataclasses.fields(Capture)})


def _as_asked(record: Run, capture: Capture) -> Run:
    """``record`` without what ``capture`` did not ask for (a batch captures what any of its requests asked)."""
    drop = {"hidden_states": not capture.hidden, "queries": not capture.qkv, "keys": not capture.qkv,
            "values": not capture.qkv, "head_outputs": not capture.head_outputs, "logits": not capture.logits,
            "neurons": not capture.neurons}
    changes = {name: None for name, gone in drop.items() if gone and getattr(record, name) is not None}
    return dataclasses.replace(record, **changes) if changes else record
