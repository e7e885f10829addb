"""Attention extraction: text (or a text pair) in, tokens and ``[layer, head, query, key]`` weights out.

A thin name over the one forward core (``vizcore.model.run``): the Attention Explorer, Home, the
CLI's ``attention`` command and the startup cache all call this, and it calls ``run``.
"""

from __future__ import annotations

from vizcore.model.loading import LoadedModel
from vizcore.model.record import Run
from vizcore.model.run import Capture, run

ATTENTION_ONLY = Capture(hidden=False)


def extract_attention(loaded: LoadedModel, text: str, pair: str | None = None) -> Run:
    """Tokens, offsets, specials, segments and attention for ``text`` (and ``pair``)."""
    return run(loaded, text, pair, capture=ATTENTION_ONLY)
