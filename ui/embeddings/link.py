"""The Embeddings page's link, declared once: the view on screen, the controls several views share, and each
view's own parameters."""

from __future__ import annotations

from ui import url_state
from ui.embeddings import contexts, queries, search, similarity, tokens
from ui.embeddings.page import URL_PARAMS

SECTIONS = {"similarity": similarity, "search": search, "contexts": contexts, "tokens": tokens, "queries": queries}
LINK = url_state.Link("embeddings", URL_PARAMS, selector="view",
                      sections={name: module.URL_PARAMS for name, module in SECTIONS.items()})
