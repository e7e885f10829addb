"""A disk cache of the default model's attention for the sentences the app opens with.

Why: on a 2-core machine, importing torch and transformers takes most of the seconds before the
first heatmap. With this cache the Home page shows the embedded model's real attention for the
default sentence (and the example sentences) while those imports still run; any other sentence,
model or device runs the model as usual.

Entries are written only from a fresh computation of the embedded model on the CPU (by the server's
warm-up and by ``python -m vizcore prepare``), and an entry is used only when its key matches
exactly: cache format, every file of the model folder (path, size, modification time), the
versions of torch, transformers, tokenizers and numpy, the source of the extraction code, the CPU
count and thread settings, the text and the pair. Every warm-up recomputes the entries and checks
them bit for bit against what is stored. A missing or damaged entry is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
import time
import zipfile
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vizcore.attention.examples import startup_inputs
from vizcore.model.catalog import DEFAULT_MODEL, embedded_minilm_path, runs_on_cpu
from vizcore.model.record import Run

if TYPE_CHECKING:
    from vizcore.model.loading import LoadedModel

FORMAT = 1
CACHE_ENV = "VIZCORE_CACHE_DIR"
_CODE = ("attention/extract.py", "model/contract.py", "model/record.py", "model/run.py", "model/sink.py",
         "model/loading.py", "model/startup_cache.py")
_PACKAGES = ("torch", "transformers", "tokenizers", "numpy")
_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
_MAX_BYTES = 8 * 2**20  # startup sentences are short; never let a long input fill the disk


def cache_dir() -> Path:
    """``$VIZCORE_CACHE_DIR``, else ``$XDG_CACHE_HOME/vizcore/startup`` (``~/.cache/vizcore/startup``)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "vizcore" / "startup"


_VIZCORE = Path(__file__).resolve().parents[1]


def fingerprint() -> dict:
    """Everything a cached result depends on besides the text (cheap: file stats, no hashing of weights).

    Every page run that shows a sentence asks for it (``ui.state.get_run``), so its slow parts are kept: the
    packages' versions (read from their metadata files: 3 ms a call, about a tenth of a Home page run's CPU)
    once a process, as the process cannot import other versions of them; the code's hash once per state of its
    files (size, modification time)."""
    folder = embedded_minilm_path()
    files = sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
                   for p in folder.rglob("*") if p.is_file())
    code_files = tuple((_VIZCORE / name).stat() for name in _CODE)
    return {
        "format": FORMAT,
        "model": DEFAULT_MODEL,
        "files": files,
        "code": _code_hash(tuple((s.st_size, s.st_mtime_ns) for s in code_files)),
        "versions": dict(_versions()),  # a copy: a caller may change its dict
        "cpus": os.cpu_count(),
        "threads": {name: os.environ.get(name) for name in _THREAD_ENV},
    }


@functools.lru_cache(maxsize=4)
def _code_hash(stats: tuple[tuple[int, int], ...]) -> str:
    """The extraction code's hash; ``stats`` (each file's size and modification time) only key the cache."""
    return hashlib.sha256(b"".join((_VIZCORE / name).read_bytes() for name in _CODE)).hexdigest()


@functools.cache
def _versions() -> dict[str, str]:
    return {package: metadata.version(package) for package in _PACKAGES}


def entry_path(text: str, pair: str | None) -> Path:
    key = json.dumps({"fingerprint": fingerprint(), "text": text, "pair": pair}, sort_keys=True)
    return cache_dir() / f"{hashlib.sha256(key.encode()).hexdigest()}.npz"


@lru_cache(maxsize=1)
def _stored_inputs() -> frozenset[tuple[str, str | None]]:
    return frozenset(startup_inputs())


def _pair(pair: str | None) -> str | None:
    return pair if pair and pair.strip() else None


def load(model: str, device: str, text: str, pair: str | None) -> Run | None:
    """The cached result for these exact inputs, or None (not the default model on the CPU, or a miss). Only the
    opening sentences are stored: any other input is a miss at once, without the fingerprint (4 ms of file
    stats, code hashing and package versions, which every page run of a student's own sentence paid)."""
    pair = _pair(pair)
    if model != DEFAULT_MODEL or not runs_on_cpu(device) or (text, pair) not in _stored_inputs():
        return None
    try:
        path = entry_path(text, pair)
    except OSError:  # the model folder cannot be read: the page's model load will say why
        return None
    return _read(path, text, pair)


def _read(path: Path, text: str, pair: str | None) -> Run | None:
    try:
        if not path.is_file():
            return None
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta["text"] != text or meta["pair"] != pair:
                return None
            return Run(
                model=meta["model"], text=text, pair=pair, tokens=list(meta["tokens"]),
                offsets=[(int(a), int(b)) for a, b in data["offsets"].tolist()],
                special_mask=data["special_mask"].astype(bool), segment_ids=data["segment_ids"].astype(np.int64),
                attention=data["attention"].astype(np.float32, copy=False), truncated=bool(meta["truncated"]),
                num_input_tokens=int(meta["num_input_tokens"]),
            )
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
        return None  # unreadable or damaged: the model computes it instead


def same_result(a: Run, b: Run) -> bool:
    """Bit-for-bit equality of everything a result shows."""
    return (a.model, a.text, a.pair, a.tokens, a.offsets, a.truncated, a.num_input_tokens) == \
        (b.model, b.text, b.pair, b.tokens, b.offsets, b.truncated, b.num_input_tokens) \
        and np.array_equal(a.special_mask, b.special_mask) and np.array_equal(a.segment_ids, b.segment_ids) \
        and a.attention.dtype == b.attention.dtype and np.array_equal(a.attention, b.attention)


def store(result: Run, device: str) -> str:
    """Write a freshly computed result; returns ``written``, ``verified`` (already stored, bit-equal),
    ``replaced`` (a stored entry differed), ``skipped`` (not the default model on the CPU, not an opening
    sentence, or too big)
    or ``unwritable`` (the cache folder cannot be written)."""
    if (result.model != DEFAULT_MODEL or device != "cpu" or result.attention.nbytes > _MAX_BYTES
            or (result.text, _pair(result.pair)) not in _stored_inputs()):
        return "skipped"
    path = entry_path(result.text, result.pair)
    previous = _read(path, result.text, result.pair)  # the same key: fingerprint the files once
    if previous is not None and same_result(previous, result):
        return "verified"
    meta = {"model": result.model, "text": result.text, "pair": result.pair, "tokens": result.tokens,
            "truncated": result.truncated, "num_input_tokens": result.num_input_tokens}
    partial = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A file of this writer's own (N replicas warm up at once; containers sharing the folder can have the
        # same process id), then renamed into place: a reader sees the old entry or a new one, never half.
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp.npz",
                                         delete=False) as handle:
            partial = Path(handle.name)
            np.savez(handle, meta=np.array(json.dumps(meta)), offsets=np.asarray(result.offsets, dtype=np.int64),
                     special_mask=result.special_mask, segment_ids=result.segment_ids, attention=result.attention)
        partial.chmod(0o644)  # as np.savez made it: other users' servers may read the same folder
        os.replace(partial, path)
    except OSError:
        if partial is not None:
            with contextlib.suppress(OSError):
                partial.unlink()
        return "unwritable"  # e.g. a read-only home: the app still works, it just starts slower
    return "written" if previous is None else "replaced"


def prepare(loaded: LoadedModel | None = None) -> dict:
    """Compute the startup sentences with the default model and store them (what the warm-up does)."""
    from vizcore.attention.extract import extract_attention
    from vizcore.model.loading import load_model

    started = time.perf_counter()
    loaded = loaded or load_model(DEFAULT_MODEL)
    entries = []
    for text, pair in startup_inputs():
        result = extract_attention(loaded, text, pair)
        status = store(result, loaded.device.type)
        entries.append({"text": text, "pair": pair, "tokens": len(result.tokens), "status": status})
    return {"model": loaded.name, "device": str(loaded.device), "cache_dir": str(cache_dir()),
            "entries": entries, "seconds": round(time.perf_counter() - started, 2)}
