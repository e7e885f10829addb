"""What counts as text to read, without torch: the CLI's file readers refuse bad input before any model import.

``read_file`` and ``decode_upload`` are the one way an uploaded or named file becomes text (training sets,
CoNLL, SQuAD, texts to embed): each caller says only what its file should hold and how to fix it.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from pathlib import Path

from vizcore.errors import VizError

# Longer texts are refused before tokenising (a paste of a whole book); anything the model cannot
# take in one pass is truncated to its maximum length and reported.
MAX_CHARS = 200_000
_SURROGATE = re.compile("[\ud800-\udfff]")  # argv bytes that are not UTF-8 (PEP 383)


def is_blank(text: str | None) -> bool:
    """True when the text has nothing a tokenizer keeps: only spaces, invisible format characters
    (zero-width space, byte-order mark, joiners) and control characters."""
    return text is None or all(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in text)


def check_text(text: str | None, what: str = "text") -> str:
    if is_blank(text):
        raise VizError(f"The {what} is empty: type a sentence.")
    if len(text) > MAX_CHARS:
        raise VizError(f"The {what} has {len(text):,} characters; the limit is {MAX_CHARS:,}. Shorten it.")
    if bad := _SURROGATE.search(text):
        raise VizError(f"The {what} has an invalid character at position {bad.start() + 1:,} (bytes that are "
                       "not UTF-8?): retype it, or save it as UTF-8.")
    return text


def check_pair(text: str, pair: str | None) -> None:
    """Two sentences where the second is required (next sentence prediction): each checked, a missing B said."""
    check_text(text, "sentence A")
    if pair is None or not pair.strip():
        raise VizError("Next sentence prediction needs a second sentence (B): type one (on the command line, "
                       "--pair).")
    check_text(pair, "sentence B")


def _check_size(size: int, name: str, shrink: str, max_bytes: int) -> None:
    if size > max_bytes:
        raise VizError(f"'{name}' is {size / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.0f} MB. {shrink}")


def read_file(path: str | Path, what: str, shrink: str, max_bytes: int) -> bytes:
    """The bytes of a file named on the command line, its size checked before reading. ``what`` names the
    file in a message ("CSV file"); ``shrink`` says how to make it smaller."""
    path = Path(path)
    if not path.exists():
        raise VizError(f"{what} '{path}' does not exist.")
    if not path.is_file():
        raise VizError(f"'{path}' is not a file (a folder?): give a file's path.")
    _check_size(path.stat().st_size, path.name, shrink, max_bytes)
    try:
        return path.read_bytes()
    except OSError as error:
        raise VizError(f"'{path}' cannot be read: {error.strerror}.") from error


def decode_upload(data: bytes, name: str, needs: str, fix: str, shrink: str, max_bytes: int) -> str:
    """An uploaded file's text: UTF-8 (with or without a byte-order mark), or UTF-16 when a byte-order mark
    says so (Excel's "Unicode text", some editors). VizError for a file that is too large, UTF-16 without
    a mark, a binary file (a NUL in its first line, or among its first bytes when they do not decode),
    other bytes that do not decode, or nothing but blanks; the message ends with ``fix`` (how to save it),
    ``needs`` (what an empty file should hold) or ``shrink``."""
    _check_size(len(data), name, shrink, max_bytes)
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    # Latin text in UTF-16 has a NUL in every other byte; a renamed spreadsheet or other binary does not.
    head = data[:64]
    if not utf16 and len(head) >= 8 and (not any(head[0::2]) or not any(head[1::2])):
        raise VizError(f"'{name}' looks like UTF-16 text without a byte-order mark. {fix}")
    binary = VizError(f"'{name}' is not a text file (a spreadsheet or other binary file?). {fix}")
    try:
        text = data.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as error:
        if not utf16 and b"\x00" in data[:4096]:  # an image, a zip, a PDF: not text in another encoding
            raise binary from error
        raise VizError(f"'{name}' is not {'UTF-16' if utf16 else 'UTF-8'} text (byte {error.start:,} is invalid). "
                       f"{fix}") from error
    if "\x00" in text.partition("\n")[0]:  # no header or first text holds a NUL; a stray one later is text
        raise binary
    if is_blank(text):
        raise VizError(f"'{name}' is empty: it needs {needs}.")
    return text
