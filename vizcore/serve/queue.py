"""One bounded inference queue per model: runs asked for together by different sessions share one forward pass.

Streamlit runs every session's script in a thread of its own. When thirty students press Enter in the
same second, thirty forward passes would compete for two cores; here each request is tokenised and
checked in its own thread (bad input is refused there and never reaches a batch), then waits in the
model's queue. One worker thread takes what is waiting, at most ``Limits.max_batch`` requests whose padded
batch stays under ``Limits.max_cells`` attention cells, and runs them as one ``run_batch``: each request
gets the record ``run`` gives for its input, to the bit: in a batch each row's attention is computed over its own
tokens (``run_batch``), and an input whose token count the model's matrix products treat apart (``rows_apart``:
MKL multiplies 1 to 3 rows with other kernels than many, at one thread) runs alone (docs/BENCHMARKS.md,
"serve-queue"). An idle worker
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

import torch
from transformers.pytorch_utils import Conv1D

from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel
from vizcore.model.record import Run
from vizcore.model.run import DEFAULT_CAPTURE, Capture, Encoded, prepare, run_batch
from vizcore.serve.settings import Limits

LINEAR = (torch.nn.Linear, Conv1D)  # GPT-2's Conv1D is a linear layer with its weight transposed
Runner = Callable[[LoadedModel, Sequence[Encoded], Capture], list[Run]]
# Row counts probed by ``rows_apart``: from 12 rows on, MKL multiplied every row alike (1 and 2 threads, to 64).
PROBE_ROWS = 16
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
        self._apart: frozenset[int] | None = None  # the worker's ``rows_apart``, probed on its first batch
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
            if self._apart is None:
                self._apart = rows_apart(self.loaded)
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
            for request in list(self._waiting):  # a request that runs alone is passed over: the next batch is it
                if len(batch) == self.limits.max_batch or (batch and self._alone(batch[0])):
                    break
                if batch and self._alone(request):
                    continue
                if not self._fits(batch, request):
                    break
                self._waiting.remove(request)
                if request.future.set_running_or_notify_cancel():  # False: it timed out while waiting
                    batch.append(request)
            return batch

    def _alone(self, request: _Request) -> bool:
        """Whether ``request``'s token count is one of ``rows_apart``: in a batch its record would differ from
        its run's in the last bits."""
        return request.item.num_tokens in (self._apart or ())

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


def rows_apart(loaded: LoadedModel, probe: int = PROBE_ROWS) -> frozenset[int]:
    """The token counts (up to ``probe``) for which the model's matrix products do not compute each row as they
    do inside a larger batch: a run of that many tokens differs in the last bits from its row of a batch, so it
    runs alone. Probed in the calling thread (its torch threads decide the kernels) on every weight shape of the
    model's linear layers (``module.forward``: no hook runs), with random inputs: the kernel depends on the shape.
    """
    generator = torch.Generator().manual_seed(0)
    shapes: dict[tuple, torch.nn.Module] = {}
    for module in loaded.model.modules():
        weight = getattr(module, "weight", None)
        if isinstance(module, LINEAR) and weight is not None and weight.dim() == 2:
            shapes.setdefault((type(module), tuple(weight.shape)), module)
    apart: set[int] = set()
    with torch.inference_mode():
        for module in shapes.values():
            width = module.in_features if isinstance(module, torch.nn.Linear) else module.weight.shape[0]
            rows = torch.randn(1, 2 * probe, width, generator=generator).to(module.weight)
            many = module.forward(rows)
            apart |= {n for n in range(1, probe + 1) if not torch.equal(module.forward(rows[:, :n]), many[:, :n])}
    return frozenset(apart)


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
