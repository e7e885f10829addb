"""A corpus read from a file: one sentence per line of a text file, or per row of a CSV / Parquet column.

Blank lines (or empty cells) are skipped and counted; every sentence keeps its 0-based line number (the
0-based data row of a CSV or Parquet file) as ``sentence_id``, so results join back to the input.
Every problem a user can cause (missing file, non-UTF-8 bytes, a binary file, a missing column) is one
``VizError`` sentence.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vizcore.errors import VizError
from vizcore.text import MAX_CHARS, is_blank  # no torch: a bad file is refused in a fraction of a second

TEXT_COLUMNS = ("text", "sentence", "sentences", "texts")  # a column taken without being named
_SNIFF = 8192  # bytes looked at to tell a binary file
@dataclass(frozen=True)
class Corpus:
    """Sentences in file order with their 0-based line (row) numbers."""

    texts: tuple[str, ...]
    ids: np.ndarray  # int64 [N]: 0-based line (row) number of each sentence
    skipped: int  # blank lines or empty cells
    source: str
    column: str | None = None

    def __len__(self) -> int:
        return len(self.texts)


def read_corpus(path: str | Path, text_column: str | None = None) -> Corpus:
    """A ``.csv`` or ``.parquet`` file gives one sentence per row of ``text_column`` (default: the only
    column, or the one named text / sentence); any other file is UTF-8 text, one sentence per line."""
    path = Path(path)
    if not path.exists():
        raise VizError(f"Input file '{path}' does not exist.")
    if not path.is_file():
        raise VizError(f"'{path}' is not a file: give a text file (one sentence per line), a .csv or a .parquet file.")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        cells, column = _parquet_cells(path, text_column)
    else:
        text = _decode(_read_bytes(path), path.name)
        if suffix == ".csv":
            cells, column = _csv_cells(text, path.name, text_column)
        elif text_column is not None:
            raise VizError(f"--text-column was given, but '{path.name}' is plain text (not .csv or .parquet): "
                           "leave it out for one sentence per line.")
        else:
            cells, column = _lines(text), None
    return _corpus(cells, path.name, column)


def from_lines(lines: list[str], name: str) -> Corpus:
    """Sentences typed in a box, one per line, checked like a file's (``name`` is what messages call them)."""
    return _corpus(list(lines), name, None)


def _corpus(cells: list[str | None], name: str, column: str | None) -> Corpus:
    kept = [(i, cell.strip()) for i, cell in enumerate(cells) if not is_blank(cell)]
    if not kept:
        raise VizError(f"'{name}' has no sentences" + (f" in column '{column}'" if column else "")
                       + ": it needs one sentence per line.")
    for i, cell in kept:
        if len(cell) > MAX_CHARS:
            raise VizError(f"Line {i:,} (0-based) of '{name}' has {len(cell):,} characters; the limit is "
                           f"{MAX_CHARS:,}: split it into sentences.")
    return Corpus(tuple(c for _, c in kept), np.array([i for i, _ in kept], dtype=np.int64),
                  len(cells) - len(kept), name, column)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise VizError(f"'{path}' cannot be read: {error.strerror}.") from error


def _decode(data: bytes, name: str) -> str:
    if b"\x00" in data[:_SNIFF]:
        raise VizError(f"'{name}' is not a text file (a binary file, a spreadsheet or UTF-16?): save it as UTF-8 "
                       "text, one sentence per line.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n")
        raise VizError(f"'{name}' is not UTF-8: byte {error.start:,} (line {line:,}, 0-based) is invalid. "
                       "Save it as UTF-8 and try again.") from error


def _lines(text: str) -> list[str]:
    """The lines of ``text``; only \\n, \\r\\n and \\r end a line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":  # the newline that ends the last line
        lines.pop()
    return lines


def _pick_column(header: list[str], column: str | None, name: str) -> str:
    have = ", ".join(f"'{h}'" for h in header[:20])
    if column is not None:
        if column not in header:
            raise VizError(f"'{name}' has no column '{column}' (columns: {have}): choose one with --text-column.")
        return column
    if len(header) == 1:
        return header[0]
    named = [h for h in header if h.lower() in TEXT_COLUMNS]
    if len(named) == 1:
        return named[0]
    raise VizError(f"'{name}' has several columns ({have}): name the one with the sentences (--text-column NAME).")


def _csv_cells(text: str, name: str, column: str | None) -> tuple[list[str | None], str]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [h.strip() for h in next(reader, [])]
        if not any(header):
            raise VizError(f"'{name}' has no header line: a CSV's first line names its columns.")
        chosen = _pick_column(header, column, name)
        at = header.index(chosen)
        cells = [record[at] if at < len(record) else None for record in reader]
    except csv.Error as error:
        raise VizError(f"'{name}' could not be read as CSV near line {reader.line_num:,}: {error} "
                       "(put texts with commas or line breaks in double quotes).") from error
    return cells, chosen


def _parquet_cells(path: Path, column: str | None) -> tuple[list[str | None], str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as error:
        raise VizError(f"'{path.name}' is not a readable Parquet file: {str(error).splitlines()[0]}") from error
    chosen = _pick_column(list(schema.names), column, path.name)
    if not (pa.types.is_string(schema.field(chosen).type) or pa.types.is_large_string(schema.field(chosen).type)):
        raise VizError(f"Column '{chosen}' of '{path.name}' holds {schema.field(chosen).type}, not text: "
                       "choose the text column with --text-column.")
    try:
        return pq.read_table(path, columns=[chosen]).column(0).to_pylist(), chosen
    except (pa.ArrowException, OSError) as error:
        raise VizError(f"'{path.name}' could not be read: {str(error).splitlines()[0]}") from error
