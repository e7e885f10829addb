"""One way to pick a layer and a head on every page: two number steppers, "Layer" and "Head", counted from 1.

The sidebar's model has one choice of layer and head for the whole session, under ``shared.layer`` and
``shared.head`` (1-based, as shown and linked; ``ui.state`` keeps them across page switches like the
sentence): Home, the Attention Explorer (its in-browser renderer writes the same keys), Attention step by
step and the Embeddings' queries and keys all show it. It starts where ``vizcore.model.heads.default_head``
says for the model's shape. A page whose layer and head belong to another model (Generate's, Translate's,
the next-sentence model, a corpus' results) or mean something else (the head that changed most) draws the
same steppers under its own keys.
"""

from __future__ import annotations

import streamlit as st

from ui import url_state
from ui.state import KEY_HEAD, KEY_LAYER
from vizcore.model.heads import default_head

KEYS = (KEY_LAYER, KEY_HEAD)
# The link's layer and head, 1-based; their top depends on the model and is checked where the steppers are drawn.
URL_PARAMS = {"layer": (KEY_LAYER, url_state.Integer(1)), "head": (KEY_HEAD, url_state.Integer(1))}
HOME_LINK = url_state.Link("home", URL_PARAMS)  # Home has no package of its own; its link is the layer and head


def settle(num_layers: int, num_heads: int, keys: tuple[str, str] = KEYS,
           default: tuple[int, int] | None = None) -> tuple[int, int]:
    """The layer and head (1-based) to show: the link's when this model has them (else reported), else the last
    chosen (brought inside this model), else ``default`` (1-based; the house default for this shape)."""
    if default is None:
        layer, head = default_head(num_layers, num_heads)
        default = (layer + 1, head + 1)
    return (url_state.settle(keys[0], default[0], 1, num_layers),
            url_state.settle(keys[1], default[1], 1, num_heads))


def layer_head(num_layers: int, num_heads: int, keys: tuple[str, str] = KEYS,
               labels: tuple[str, str] = ("Layer", "Head"), default: tuple[int, int] | None = None,
               where=st) -> tuple[int, int]:
    """Draw the two steppers side by side (in ``where``) and return (layer, head), 1-based."""
    settle(num_layers, num_heads, keys, default)
    left, right = where.columns(2)
    layer = left.number_input(labels[0], 1, num_layers, step=1, key=keys[0], help=f"1 to {num_layers}")
    head = right.number_input(labels[1], 1, num_heads, step=1, key=keys[1], help=f"1 to {num_heads}")
    return int(layer), int(head)
