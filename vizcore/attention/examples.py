"""The example sentences the app opens with: the classic ones of the Transformer/BERT tutorials."""

from __future__ import annotations

DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."

# (button label, sentence, second sentence or ""): the first two differ in one word, so a class can
# compare where "it" looks in each.
EXAMPLES: list[tuple[str, str, str]] = [
    ("…it was too tired.", DEFAULT_TEXT, ""),
    ("…it was too wide.", "The animal didn't cross the street because it was too wide.", ""),
    ("The cat sat…", "The cat sat on the mat.", ""),
    ("…the dog chased…", "The cat that the dog chased was brown.", ""),
    ("Pair: cat / dog", "The cat sat on the mat.", "The dog lay on the rug."),
]


def startup_inputs() -> list[tuple[str, str | None]]:
    """(text, pair) for the default sentence and every example, each once."""
    seen: dict[tuple[str, str | None], None] = {(DEFAULT_TEXT, None): None}
    for _, text, pair in EXAMPLES:
        seen[(text, pair or None)] = None
    return list(seen)
