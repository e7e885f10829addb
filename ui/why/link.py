"""The Why? page's link, declared once: the part on screen, the masked word, and each part's own parameters."""

from __future__ import annotations

from ui import url_state
from ui.why import ablation, attribution, edges, importance, patching, weights
from ui.why.page import KEY_PART, KEY_WORD, PARTS

LINK = url_state.Link(
    "why", {"part": (KEY_PART, url_state.OneOf(tuple(PARTS))), "word": (KEY_WORD, url_state.Choice())},
    selector="part",
    sections={"ablation": ablation.URL_PARAMS, "importance": importance.URL_PARAMS,
              "patching": patching.URL_PARAMS, "attribution": attribution.URL_PARAMS,
              "attention": edges.URL_PARAMS,
              "circuits": weights.URL_PARAMS})
