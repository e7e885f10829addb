"""torch's threads in the server: set once, so that a class's concurrent sessions do not oversubscribe the cores.

torch starts with one intra-op thread per core (2 here) and as many inter-op threads. Streamlit runs each
session's script in its own thread, and with torch's OpenMP backend every Python thread that calls into
torch gets a team of its own: thirty sessions computing at once would be sixty busy threads on two cores,
and OpenMP's waiting threads spin. The forward passes go through one worker per model
(``vizcore.serve.queue``), so one intra-op thread each leaves the other core to the sessions' own work
(measured in docs/BENCHMARKS.md, "serve-queue"). ``VIZCORE_TORCH_THREADS`` changes it (e.g. a machine
serving one user, or a GPU box).
"""

from __future__ import annotations

import threading
from typing import Mapping

from vizcore.serve.settings import torch_threads

_SET = threading.Lock()
_done: list[int] = []


def configure_torch_threads(environ: Mapping[str, str] | None = None) -> int:
    """Give torch ``torch_threads()`` intra-op threads and one inter-op thread, once per process (later
    calls return the first answer). Threads started later inherit the setting. Returns the intra-op count."""
    with _SET:
        if not _done:
            import torch

            threads = torch_threads(environ)
            torch.set_num_threads(threads)
            try:
                torch.set_num_interop_threads(1)
            except RuntimeError:  # too late: inter-op work has already started in this process; harmless
                pass
            _done.append(threads)
        return _done[0]
