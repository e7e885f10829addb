"""Semantic search: a query's sentence vector against a collection's, ranked by cosine similarity.

The collection is the built-in one (``vizcore/data/search-collection.txt``: 519 everyday English sentences
written for this project, see vizcore/data/README.md) or the user's texts, one per line of a ``.txt``
file or one per row of a CSV column (``read_texts``). Blank lines are skipped and counted; each text
keeps the number of the line it starts on, so results can be traced back to the file.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from vizcore.embeddings.vectors import Layer, cosine_matrix, sentence_vectors
from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel
from vizcore.model.run import check_text, is_blank
from vizcore.text import decode_upload, read_file

COLLECTION_PATH = Path(__file__).resolve().parents[1] / "data" / "search-collection.txt"
MAX_BYTES = 5_000_000  # 5 MB
SHRINK = "Split it into smaller files."
MAX_TEXTS = 20_000  # about a minute and a half of embedding on 2 CPU cores (docs/BENCHMARKS.md)
MAX_TEXT_CHARS = 10_000  # one text; the model reads its first few hundred tokens (~1,000 characters) anyway
TEXT_COLUMNS = ("text", "sentence", "sentences", "texts")  # a CSV column taken without being named


@dataclass(frozen=True)
class Hit:
    rank: int  # 1-based
    index: int  # 0-based position in the collection
    text: str
    score: float  # cosine similarity with the query

    def to_dict(self) -> dict:
        return {"rank": self.rank, "index": self.index, "text": self.text, "score": self.score}


@dataclass(frozen=True)
class Texts:
    """Texts read from a file, in file order, with the 1-based line each starts on."""

    texts: tuple[str, ...]
    lines: tuple[int, ...]
    skipped_blank: int  # blank lines (or empty CSV cells) left out
    source: str  # the file's name
    column: str | None = None  # the CSV column read, None for plain text

    def __len__(self) -> int:
        return len(self.texts)


@lru_cache(maxsize=1)
def builtin_collection() -> tuple[str, ...]:
    """The built-in search collection: one sentence per line of ``search-collection.txt``."""
    return read_texts(COLLECTION_PATH.read_bytes(), COLLECTION_PATH.name).texts


def search(loaded: LoadedModel, query: str, texts: Sequence[str], top_k: int = 10, pooling: str = "mean",
           layer: Layer = "last", vectors: np.ndarray | None = None) -> list[Hit]:
    """The ``top_k`` texts closest to ``query`` by cosine, best first (ties: earlier text first).

    ``vectors`` (N, D): the collection's vectors from ``sentence_vectors`` with the same pooling and layer,
    so a caller embeds a collection once and searches it many times.
    """
    check_text(query, "query")
    if len(texts) == 0:
        raise VizError("The collection is empty: give at least one text to search.")
    if top_k < 1:
        raise VizError(f"top_k must be at least 1; got {top_k}.")
    query_vector = sentence_vectors(loaded, [query], pooling, layer)
    if vectors is None:
        vectors = sentence_vectors(loaded, texts, pooling, layer)
    if vectors.ndim != 2 or vectors.shape != (len(texts), query_vector.shape[1]):
        raise VizError(f"The collection's vectors have shape {tuple(vectors.shape)}; {len(texts)} texts with this "
                       f"pooling and layer need ({len(texts)}, {query_vector.shape[1]}): embed them again.")
    scores = cosine_matrix(np.concatenate([query_vector, vectors]))[0, 1:]  # (N,)
    best = np.argsort(-scores, kind="stable")[:top_k]
    return [Hit(rank, int(i), texts[i], float(scores[i])) for rank, i in enumerate(best, start=1)]


def read_text_file(path: str | Path, column: str | None = None) -> Texts:
    """``read_texts`` for a file on disk, with fix-it messages for a missing, unreadable or huge file."""
    data = read_file(path, "Input file", SHRINK, MAX_BYTES)
    return read_texts(data, Path(path).name, column)


def read_texts(data: bytes, name: str, column: str | None = None) -> Texts:
    """One text per line (a ``.csv`` name: one per row of ``column``, or of the only / the ``text`` column).

    Blank lines are skipped and counted. Raises VizError for an empty, binary, mis-encoded or too large
    file, too many texts, or a text that is too long."""
    text = decode_upload(data, name, "one text per line", "Save it as plain text (UTF-8), one text per line.",
                         SHRINK, MAX_BYTES)
    is_csv = name.lower().endswith(".csv")
    if column is not None and not is_csv:
        raise VizError(f"A column was given, but '{name}' is not a .csv file: leave the column out for plain "
                       "text (one text per line).")
    rows, chosen = _csv_rows(text, name, column) if is_csv else (_lines(text), None)
    kept = [(number, cell.strip()) for number, cell in rows if not is_blank(cell)]
    if not kept:
        raise VizError(f"'{name}' has no text" + (f" in column '{chosen}'" if chosen else "")
                       + ": it needs one text per line.")
    if len(kept) > MAX_TEXTS:
        raise VizError(f"'{name}' has {len(kept):,} texts; the limit is {MAX_TEXTS:,}. Split it into smaller files.")
    for number, cell in kept:
        if len(cell) > MAX_TEXT_CHARS:
            raise VizError(f"Line {number:,} of '{name}' has {len(cell):,} characters; the limit is "
                           f"{MAX_TEXT_CHARS:,} (the model reads only the first few hundred tokens): split it.")
    return Texts(tuple(c for _, c in kept), tuple(n for n, _ in kept), len(rows) - len(kept), name, chosen)


def _lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, line) for each line; only \\n, \\r\\n and \\r end a line (not form feeds)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":  # the newline that ends the last line
        lines.pop()
    return list(enumerate(lines, start=1))


def _csv_rows(text: str, name: str, column: str | None) -> tuple[list[tuple[int, str]], str]:
    """(line the row starts on, the cell of the chosen column) per data row, and the column's name."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [h.strip() for h in next(reader)]
        if not any(header):
            raise VizError(f"'{name}' starts with an empty line: a CSV's first line names its columns.")
        chosen = _pick_column(header, column, name)
        at, rows, previous = header.index(chosen), [], reader.line_num
        for record in reader:
            if record:  # csv gives [] for an empty line
                rows.append((previous + 1, record[at] if at < len(record) else ""))
            previous = reader.line_num
    except csv.Error as error:
        raise VizError(f"'{name}' could not be read as CSV near line {reader.line_num:,}: {error} "
                       "(put texts that contain commas or line breaks in double quotes).") from error
    return rows, chosen


def _pick_column(header: list[str], column: str | None, name: str) -> str:
    have = ", ".join(f"'{h}'" for h in header[:20])
    if column is not None:
        if column.strip() not in header:
            raise VizError(f"'{name}' has no column '{column}' (columns: {have}): choose one of them.")
        return column.strip()
    if len(header) == 1:
        return header[0]
    named = [h for h in header if h.lower() in TEXT_COLUMNS]
    if len(named) == 1:
        return named[0]
    raise VizError(f"'{name}' has several columns ({have}): choose the one that holds the texts "
                   "(--column NAME on the command line).")
