"""The pre-training page's link (/fill-mask), declared once: the masked-LM and its sentence, and the next-sentence
section's pair and model."""

from __future__ import annotations

from ui import url_state
from ui.mlm import nsp
from ui.mlm.page import KEY_MODEL_CHOICE, KEY_TEXT, model_from_link

LINK = url_state.Link("fill_mask", {"mlm": (KEY_MODEL_CHOICE, url_state.Text(model_from_link)),
                                    "masked": (KEY_TEXT, url_state.Text()), **nsp.URL_PARAMS})
