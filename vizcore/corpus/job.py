"""A small corpus run as a background job of the app's one queue (``vizcore.jobs``): progress, stop, resume.

The job runs the local engine with a model already loaded (the server's shared one: a forward pass
without hooks leaves it as it was) and writes into its own folder; the page polls ``done`` / ``total``.
"""

from __future__ import annotations

from vizcore.corpus.engine import Settings, run_corpus
from vizcore.corpus.measures import Worker
from vizcore.jobs import BackgroundJob


class CorpusJob(BackgroundJob):
    name = "vizcore-corpus"
    kind = "corpus run"
    failure = "The corpus run failed"
    again = "Run again"
    done_word = "computed"

    def __init__(self, settings: Settings, worker: Worker) -> None:
        self.settings = settings.validate()
        self.worker = worker
        super().__init__()
        self.done, self.total = 0, 0
        self.summary: dict | None = None

    def _progress(self, done: int, total: int) -> None:
        self.check_released()
        self.done, self.total = done, total

    def _run(self) -> None:
        self.summary = run_corpus(self.settings, worker=self.worker, progress=self._progress, stop=self._stop)

    def _release(self) -> None:
        self.worker = None
