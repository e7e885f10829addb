"""The server's settings for a class, from environment variables: plain Python (no torch), so the launcher can
check them before the server starts and say which one is wrong."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from vizcore.errors import VizError

TORCH_THREADS = "VIZCORE_TORCH_THREADS"
DEFAULT_TORCH_THREADS = 1  # vizcore.serve.threads says why; docs/BENCHMARKS.md, "serve-queue", measures it
RUN_CACHE_MB = "VIZCORE_RUN_CACHE_MB"
# The server's runs (vizcore.serve.cache): about 900 runs of 20 tokens on the default model with their hidden
# states (0.3 MB each; 4,500 without), or one 512-token run on a 12 x 12 base-size model (150 MB of attention)
# beside a class's sentences.
DEFAULT_RUN_CACHE_MB = 256


@dataclass(frozen=True)
class Limits:
    """What one model's queue accepts. ``max_cells`` bounds a batch's padded attention, ``B x T x T`` cells per
    layer and head (8 sentences of 128 tokens: 38 MB of float32 on the default model's 6 x 12 heads); one request
    longer than that still runs, alone."""

    max_batch: int = 8
    max_waiting: int = 256  # 100 students at once must all get in: 32 batches of 8, about 2 s of forward passes
    max_cells: int = 8 * 128 * 128
    window: float = 0.005  # seconds an idle worker waits after a first request for others to arrive
    timeout: float = 60.0  # seconds a request waits for its run, queueing included

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """The defaults, changed by whichever of ``ENVIRONMENT``'s variables are set (the window in
        milliseconds, the timeout in seconds); VizError naming the variable for a value that is not one."""
        environ = os.environ if environ is None else environ
        changes: dict[str, float] = {}
        for field, name in ENVIRONMENT.items():
            if environ.get(name, "").strip():
                changes[field] = setting(name, environ[name], whole=field.startswith("max_"), zero=field == "window")
        if "window" in changes:
            changes["window"] /= 1000
        return cls(**changes)


ENVIRONMENT = {"max_batch": "VIZCORE_QUEUE_BATCH", "max_waiting": "VIZCORE_QUEUE_LENGTH",
               "window": "VIZCORE_QUEUE_WINDOW_MS", "timeout": "VIZCORE_QUEUE_TIMEOUT"}


def setting(name: str, text: str, whole: bool = True, zero: bool = False) -> float:
    """The number in environment variable ``name``: positive (or 0 when ``zero``), whole when ``whole``."""
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 or (zero and value == 0)) or value == float("inf"):
        kind = "a whole number" if whole else "a number"
        raise VizError(f"{name}={text!r} is not a valid setting: give {kind} above 0{' (or 0)' if zero else ''}.")
    return value


def torch_threads(environ: Mapping[str, str] | None = None) -> int:
    """torch's intra-op threads asked for: ``VIZCORE_TORCH_THREADS`` (a whole number above 0) or the default."""
    environ = os.environ if environ is None else environ
    text = environ.get(TORCH_THREADS, "").strip()
    return int(setting(TORCH_THREADS, text)) if text else DEFAULT_TORCH_THREADS


def run_cache_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The bound of the server's cache of runs in bytes: ``VIZCORE_RUN_CACHE_MB`` (MB above 0) or the default."""
    environ = os.environ if environ is None else environ
    text = environ.get(RUN_CACHE_MB, "").strip()
    return int((setting(RUN_CACHE_MB, text, whole=False) if text else DEFAULT_RUN_CACHE_MB) * 2**20)


STREAMS_PER_ADDRESS_ENV = "VIZCORE_STREAMS_PER_ADDRESS"
STREAMS_PER_ADDRESS = 8  # a student's tabs, a teacher's page and notes window fit; a loop opening streams does not


def streams_per_address(environ: Mapping[str, str] | None = None) -> int:
    """The class channel's open event streams allowed per client address (vizcore/lessons/channel.py)."""
    value = (os.environ if environ is None else environ).get(STREAMS_PER_ADDRESS_ENV, "").strip()
    return int(setting(STREAMS_PER_ADDRESS_ENV, value)) if value else STREAMS_PER_ADDRESS


def fill_mask_choice(environ: Mapping[str, str] | None = None) -> str:
    """``VIZCORE_FILL_MASK_MODEL``: one of the built-in masked-LMs, or "" for the app's choice
    (``vizcore.model.catalog.fill_mask_model``)."""
    from vizcore.model.catalog import FILL_MASK_ENV, FILL_MASK_MODELS

    value = (os.environ if environ is None else environ).get(FILL_MASK_ENV, "").strip()
    if value and value not in FILL_MASK_MODELS:
        raise VizError(f"{FILL_MASK_ENV}={value!r} is not a valid setting: give one of {', '.join(FILL_MASK_MODELS)} "
                       "(or leave it unset: the base-size one when it is installed).")
    return value


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """VizError for the first of the server's variables that is set to something that is not a valid value."""
    torch_threads(environ)
    run_cache_bytes(environ)
    Limits.from_env(environ)
    streams_per_address(environ)
    fill_mask_choice(environ)
    from vizcore.results.stores import check_results

    check_results(environ)
