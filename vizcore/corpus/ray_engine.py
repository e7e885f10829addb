"""The Ray engine: Ray Data ``map_batches`` over an actor pool, one model per actor, the same per-batch function.

Without an address, Ray starts a local runtime (``num_cpus`` = the workers, no dashboard; about 8 s on 2
cores) and stops it at the end; with ``--ray-address`` it joins that cluster, whose nodes must have this
project installed (the same requirements). A block is one shard (sorted by length); each actor loads the
model once (``make_worker``) and calls ``measures.measure_batch`` on the shard's consecutive batches of
``batch_size`` sentences, the local engine's very batches; the records stream back to the driver, which
writes each shard as soon as all its sentences are in (so a stopped run resumes). Shards are the unit
of parallelism: a run has at most as many busy actors as unfinished shards.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable
from unittest import mock

import pyarrow as pa

from vizcore.errors import VizError

ROOT = Path(__file__).resolve().parents[2]
# Each actor holds one CPU and runs torch on one thread. The thread count decides how torch's CPU matrix
# products split their sums, so a local run on one thread gives these actors' numbers bit for bit.
ACTOR_THREADS = 1


class _Actor:
    """One model per actor; torch on one thread (the actor holds one CPU)."""

    def __init__(self, model: str, device: str, syntax: bool, threads: int, batch_size: int, neurons: int) -> None:
        import torch

        from vizcore.corpus.measures import make_worker

        torch.set_num_threads(threads)
        self.worker = make_worker(model, device, syntax)
        self.batch_size = batch_size
        self.neurons = neurons

    def __call__(self, shard: pa.Table) -> pa.Table:
        """One block is one shard, sorted by length: cut into the local engine's very batches."""
        from vizcore.corpus.measures import measure_batch

        return pa.concat_tables([measure_batch(self.worker, shard.slice(start, self.batch_size), self.neurons)
                                 for start in range(0, len(shard), self.batch_size)])


def start_ray(settings) -> bool:
    """Connect to the cluster or start a local runtime; True if this call started it (and should stop it)."""
    import ray

    for name in ("ray", "ray.data"):  # the summary and our progress bar say what matters
        logging.getLogger(name).setLevel(logging.ERROR)
    if ray.is_initialized():
        return False
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
                        "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}}
    try:
        if settings.ray_address:
            ray.init(address=settings.ray_address, log_to_driver=False, runtime_env=env,
                     logging_level=logging.ERROR)
        else:
            # A local runtime's workers inherit the environment its processes start with: no runtime_env, so
            # the workers Ray starts with the runtime serve the actors (a runtime_env starts other ones beside
            # them: a 46 s test run took 36 s without it). The environment is this process's again afterwards.
            with mock.patch.dict(os.environ, env["env_vars"]):
                ray.init(num_cpus=settings.workers, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR)
    except Exception as error:  # Ray raises a bare Exception when its local node does not start within its 30 s
        said = str(error).splitlines()[0] if str(error) else type(error).__name__
        hint = "" if settings.ray_address else (" On a busy machine Ray's local start can take longer than it waits:"
                                                " try again, or run with --engine local.")
        raise VizError(f"Could not start or reach Ray ({settings.ray_address or 'local'}): {said}.{hint}") from error
    return True


def run_ray(settings, pending: list, write: Callable[[object, pa.Table], None], report: Callable[[int], None],
            stop: threading.Event | None = None) -> dict:
    """Compute the ``pending`` shards on Ray and ``write(shard, records)`` each one as it completes.

    Returns timings for the summary: ``ray_start_seconds`` (starting or joining Ray) and
    ``ray_first_records_seconds`` (from then to the first records: actors starting, loading the model)."""
    if not pending:
        return {}
    try:
        import ray
        import ray.data
    except ImportError as error:
        raise VizError("The ray engine needs Ray Data: pip install 'ray[data]' (see requirements.txt).") from error
    begin = time.perf_counter()
    started = start_ray(settings)
    timings = {"ray_start_seconds": round(time.perf_counter() - begin, 3)}
    try:
        first = _stream(ray, settings, pending, write, report, stop)
    finally:
        if started:
            ray.shutdown()
    if first is not None:
        timings["ray_first_records_seconds"] = round(first - begin - timings["ray_start_seconds"], 3)
    return timings


def _stream(ray, settings, pending: list, write, report, stop) -> float | None:
    """Returns when (perf_counter) the first records arrived."""
    ray.data.DataContext.get_current().enable_progress_bars = False
    owner = {}
    for shard in pending:
        owner.update(dict.fromkeys(shard.sentence_ids.tolist(), shard))
    # One block per shard; the actor cuts it into the local engine's batches: the same padding, the same numbers.
    dataset = ray.data.from_arrow([shard.table() for shard in pending])
    records = dataset.map_batches(
        _Actor, fn_constructor_kwargs={"model": settings.model, "device": settings.device,
                                       "syntax": settings.syntax, "threads": ACTOR_THREADS,
                                       "batch_size": settings.batch_size, "neurons": settings.neurons},
        batch_size=None, batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=settings.workers),
        num_cpus=1, num_gpus=1 if settings.device == "cuda" else 0)
    waiting: dict[int, list[pa.Table]] = {s.index: [] for s in pending}
    got: dict[int, int] = {s.index: 0 for s in pending}
    first = None
    for batch in records.iter_batches(batch_size=None, batch_format="pyarrow"):
        first = first or time.perf_counter()
        if stop is not None and stop.is_set():
            return first
        by_shard: dict[int, list[int]] = {}
        for row, sentence_id in enumerate(batch.column("sentence_id").to_pylist()):
            by_shard.setdefault(owner[sentence_id].index, []).append(row)
        for index, rows in by_shard.items():
            waiting[index].append(batch.take(rows))
            got[index] += len(rows)
            shard = owner[batch.column("sentence_id")[rows[0]].as_py()]
            if got[index] == len(shard.texts):
                write(shard, pa.concat_tables(waiting.pop(index)))
        report(len(batch))
    return first
