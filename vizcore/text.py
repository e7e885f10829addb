"""What counts as text to read, without torch: the CLI's file readers refuse bad input before any model import."""

from __future__ import annotations

import unicodedata

# Longer texts are refused before tokenising (a paste of a whole book); anything the model cannot
# take in one pass is truncated to its maximum length and reported.
MAX_CHARS = 200_000


def is_blank(text: str | None) -> bool:
    """True when the text has nothing a tokenizer keeps: only spaces, invisible format characters
    (zero-width space, byte-order mark, joiners) and control characters."""
    return text is None or all(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in text)
