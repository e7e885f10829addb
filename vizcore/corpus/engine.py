"""A corpus job: sentences -> shards -> the per-batch function (local or on Ray) -> ``DIR/``.

``DIR`` holds, for a run over N sentences of a model with L layers and H heads:

* ``heads.parquet/part-XXXXX.parquet``: one row per sentence, layer and head (0-based): ``sentence_id``,
  ``layer``, ``head`` and the measures of ``vizcore.attention.head_stats``; ``pyarrow.parquet.read_table``
  reads the folder as one table;
* ``sentences/part-XXXXX.parquet``: ``sentence_id``, ``text``, ``num_tokens``, ``truncated`` (and ``arcs``,
  ``unaligned_arcs`` with syntax); a shard is finished when this file exists (written last, by rename);
* with syntax, ``syntax/{hits,offsets,examples}/part-XXXXX.parquet`` (each shard's counts), and once every
  shard is finished, ``relations.parquet`` and ``examples.parquet`` (``vizcore.corpus.relations``);
* with ``neurons`` = k, ``neurons/{hits,tokens}/part-XXXXX.parquet`` (each shard's top k per feed-forward
  neuron, and the tokens of the sentences in them), and once every shard is finished, ``neurons.parquet``
  (the corpus's top k per neuron with their contexts, ``vizcore.neurons.corpus``);
* ``run.json`` (what the shards were made from: a rerun with other settings is refused) and
  ``summary.json``.

Shards are ``shard_size`` consecutive sentences of the input; a rerun keeps finished shards and computes
the rest (resumable). Within a shard, sentences are sorted by length and cut into batches of
``batch_size`` (little padding), and each batch goes through ``measures.measure_batch``: in this process
(``local``) or in a Ray actor pool (``ray``, ``vizcore.corpus.ray_engine``).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vizcore.corpus import relations as rel
from vizcore.corpus.inputs import Corpus, read_corpus
from vizcore.corpus.measures import MEASURES, Worker, cached_parser, make_worker, measure_batch  # noqa: F401
from vizcore.corpus.settings import DEFAULT_SHARD, ENGINES, MAX_BATCH, Settings  # noqa: F401  (re-exported)
from vizcore.errors import VizError
from vizcore.neurons.corpus import shard_neurons, write_neuron_results

Progress = Callable[[int, int], None]  # (sentences done, total)


@dataclass(frozen=True)
class Shard:
    index: int
    sentence_ids: np.ndarray  # int64, sorted by text length
    texts: list[str]

    @property
    def name(self) -> str:
        return f"part-{self.index:05d}.parquet"

    def table(self) -> pa.Table:
        return pa.table({"sentence_id": pa.array(self.sentence_ids, pa.int64()), "text": pa.array(self.texts)})

    def batches(self, size: int) -> Iterator[pa.Table]:
        table = self.table()
        for start in range(0, len(table), size):
            yield table.slice(start, size)


def shards_of(corpus: Corpus, shard_size: int) -> list[Shard]:
    """Consecutive ``shard_size`` sentences per shard, each sorted by length (stable) for batching."""
    shards = []
    for index, start in enumerate(range(0, len(corpus), shard_size)):
        texts = corpus.texts[start:start + shard_size]
        order = np.argsort([len(t) for t in texts], kind="stable")
        shards.append(Shard(index, corpus.ids[start:start + shard_size][order], [texts[i] for i in order]))
    return shards


def fingerprint(corpus: Corpus) -> str:
    digest = hashlib.sha256()
    for sentence_id, text in zip(corpus.ids.tolist(), corpus.texts):
        digest.update(f"{sentence_id}\t{text}\n".encode())
    return digest.hexdigest()


# ---- writing a shard --------------------------------------------------------------------------------

def write_atomic(table: pa.Table, path: Path) -> None:
    """Written to a temporary name and renamed: a shard file is whole or absent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    try:
        pq.write_table(table, partial, compression="zstd")
        os.replace(partial, path)
    except OSError as error:
        raise VizError(f"Could not write '{path}': {error.strerror or error}.") from error
    finally:
        partial.unlink(missing_ok=True)


def heads_table(records: pa.Table, layers: int, heads: int) -> pa.Table:
    """Per-sentence records -> one row per sentence, layer and head (0-based)."""
    n = len(records)
    values = np.asarray(records.column("measures").combine_chunks().flatten(), dtype=np.float32)
    values = values.reshape(n, layers * heads, len(MEASURES))
    ids = records.column("sentence_id").to_numpy()
    columns = {"sentence_id": pa.array(np.repeat(ids, layers * heads), pa.int64()),
               "layer": pa.array(np.tile(np.repeat(np.arange(layers), heads), n), pa.int16()),
               "head": pa.array(np.tile(np.arange(heads), n * layers), pa.int16())}
    for i, name in enumerate(MEASURES):
        columns[name] = pa.array(values[:, :, i].ravel(), pa.float32())
    return pa.table(columns)


def write_shard(out: Path, shard: Shard, records: pa.Table, layers: int, heads: int, syntax: bool,
                neurons: int = 0) -> None:
    records = records.sort_by("sentence_id")
    write_atomic(heads_table(records, layers, heads), out / "heads.parquet" / shard.name)
    texts = dict(zip(shard.sentence_ids.tolist(), shard.texts))
    sentences = {"sentence_id": records.column("sentence_id"),
                 "text": pa.array([texts[i] for i in records.column("sentence_id").to_pylist()]),
                 "num_tokens": records.column("num_tokens"), "truncated": records.column("truncated")}
    if syntax:
        counts = rel.shard_counts(records, layers, heads)
        for kind, table in counts.items():
            write_atomic(table, out / "syntax" / kind / shard.name)
        unaligned = records.column("unaligned").to_numpy()
        aligned = [len(r) for r in records.column("arc_relation").to_pylist()]
        sentences["arcs"] = pa.array(np.asarray(aligned) + unaligned, pa.int32())  # every arc of the parse
        sentences["unaligned_arcs"] = pa.array(unaligned, pa.int32())
    if neurons:
        for kind, table in shard_neurons(records, neurons).items():
            write_atomic(table, out / "neurons" / kind / shard.name)
    write_atomic(pa.table(sentences), out / "sentences" / shard.name)  # last: the shard is finished


# ---- the run ----------------------------------------------------------------------------------------

def prepare_out(out: Path, manifest: dict) -> None:
    """Create ``out`` or check that it holds shards of this same run (resume)."""
    if out.exists() and not out.is_dir():
        raise VizError(f"The output '{out}' is a file: give a folder name for the results.")
    previous = out / "run.json"
    if previous.exists():
        try:
            old = json.loads(previous.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if old != manifest:
            changed = sorted(k for k in manifest if not isinstance(old, dict) or old.get(k) != manifest[k])
            raise VizError(f"'{out}' holds results of another run (different {', '.join(changed) or 'run.json'}): "
                           "give a new --out folder, or delete it to start over.")
    elif out.exists() and any(out.iterdir()):
        raise VizError(f"'{out}' is not empty and holds no corpus run: give a new or empty --out folder.")
    try:
        out.mkdir(parents=True, exist_ok=True)
        previous.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    except OSError as error:
        raise VizError(f"Cannot write into '{out}': {error.strerror or error}.") from error


def run_corpus(settings: Settings, worker: Worker | None = None, progress: Progress | None = None,
               stop: threading.Event | None = None, corpus: Corpus | None = None) -> dict:
    """Run (or resume) the job; returns the summary (also written to ``DIR/summary.json``).

    ``worker``: a model already loaded (the app's shared one) for the local engine. ``stop``: set it to end
    the run after the current batch; finished shards stay for a rerun.
    """
    settings = settings.validate()
    corpus = corpus or read_corpus(settings.input, settings.text_column)
    out = Path(settings.out).expanduser()
    shards = shards_of(corpus, settings.shard_size)
    if settings.engine == "local" and worker is None:
        worker = make_worker(settings.model, settings.device, settings.syntax)
    layers, heads = _shape(settings, worker)
    manifest = {"model": settings.model, "syntax": settings.syntax, "shard_size": settings.shard_size,
                "sentences": len(corpus), "fingerprint": fingerprint(corpus), "layers": layers, "heads": heads}
    if settings.neurons:  # only then: the folders of runs without neurons stay resumable
        manifest["neurons"] = settings.neurons
    prepare_out(out, manifest)
    pending = [s for s in shards if not (out / "sentences" / s.name).exists()]
    done = len(corpus) - sum(len(s.texts) for s in pending)
    report = _counter(done, len(corpus), progress)
    start = time.perf_counter()
    timings = {}
    if settings.engine == "local":
        _run_local(worker, pending, settings, out, layers, heads, report, stop)
    else:
        from vizcore.corpus.ray_engine import run_ray

        timings = run_ray(settings, pending, lambda shard, records: write_shard(
            out, shard, records, layers, heads, settings.syntax, settings.neurons), report, stop)
    seconds = time.perf_counter() - start
    return finish(out, settings, corpus, shards, pending, seconds, stopped=bool(stop and stop.is_set()),
                  timings=timings)


def _shape(settings: Settings, worker: Worker | None) -> tuple[int, int]:
    if worker is not None:
        return worker.loaded.num_layers, worker.loaded.num_heads
    from vizcore.model.loading import load_config, resolve_source

    config = load_config(settings.model, resolve_source(settings.model)[0])
    return int(config.num_hidden_layers), int(config.num_attention_heads)


def _counter(done: int, total: int, progress: Progress | None) -> Callable[[int], None]:
    count = [done]
    if progress is not None:
        progress(done, total)

    def add(n: int) -> None:
        count[0] += n
        if progress is not None:
            progress(count[0], total)
    return add


def _run_local(worker: Worker, pending: list[Shard], settings: Settings, out: Path, layers: int, heads: int,
               report: Callable[[int], None], stop: threading.Event | None) -> None:
    for shard in pending:
        parts = []
        for batch in shard.batches(settings.batch_size):
            if stop is not None and stop.is_set():
                return
            parts.append(measure_batch(worker, batch, settings.neurons))
            report(len(batch))
        write_shard(out, shard, pa.concat_tables(parts), layers, heads, settings.syntax, settings.neurons)


def finish(out: Path, settings: Settings, corpus: Corpus, shards: list[Shard], pending: list[Shard],
           seconds: float, stopped: bool, timings: dict | None = None) -> dict:
    finished = [s for s in shards if (out / "sentences" / s.name).exists()]
    sentences = [pq.read_table(out / "sentences" / s.name) for s in finished]
    computed = sum(len(s.texts) for s in pending if s in finished)
    summary = {
        "sentences": len(corpus), "skipped": corpus.skipped,
        "truncated": int(sum(pa.compute.sum(t.column("truncated")).as_py() or 0 for t in sentences)),
        "model": settings.model, "engine": settings.engine, "seconds": round(seconds, 3),
        "input": str(settings.input), "text_column": corpus.column, "out": str(out),
        "syntax": settings.syntax, "batch_size": settings.batch_size, "shard_size": settings.shard_size,
        "shards": len(shards), "shards_finished": len(finished), "shards_reused": len(shards) - len(pending),
        "sentences_computed": computed,
        "sentences_per_second": round(computed / seconds, 1) if seconds > 0 and computed else None,
        "complete": len(finished) == len(shards) and not stopped,
    }
    if settings.engine == "ray":
        summary["ray_address"] = settings.ray_address or "local"
        summary["workers"] = settings.workers
        summary.update(timings or {})
    if settings.syntax and summary["complete"]:
        arcs = sum(pa.compute.sum(t.column("arcs")).as_py() or 0 for t in sentences)
        unaligned = sum(pa.compute.sum(t.column("unaligned_arcs")).as_py() or 0 for t in sentences)
        summary.update(arcs=int(arcs), unaligned_arcs=int(unaligned))
        rel.write_results(out, [s.name for s in shards], write_atomic)
    if settings.neurons:
        summary["neurons"] = settings.neurons
        if summary["complete"]:
            write_neuron_results(out, [s.name for s in shards], settings.neurons, write_atomic)
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary
