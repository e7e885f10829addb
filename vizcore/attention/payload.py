"""The compact payload of the client-side attention renderer (``vizcore/static/attention_view.js``).

One JSON-serialisable dict, the same for its three hosts (the Streamlit component, the Jupyter
widget, the standalone HTML file). Weights are quantised to 8 bits on a square-root scale,
``q = round(255 sqrt(w))``, ``w = (q / 255)^2``, and sent per layer as ``uint8 [head, query, key]``,
deflated (zlib) and base64-encoded; the browser inflates them with its own ``DecompressionStream``.
The square root spends the codes where attention lives: a weight of 1/512 keeps 5 % of its value (a
linear 8-bit code would round it to 0 and empty a diffuse row), while the error stays under 1/255
(0.004) anywhere in [0, 1].

* Up to ``FULL_MAX_TOKENS`` tokens every layer is included, so layer and head switches need no
  server. Above that only the requested layers are (``layers=``); the renderer asks its host for
  another layer when one is chosen. A 512-token layer of 12 heads is 3.1 MB of codes; deflate halves
  a trained model's (1.5-1.8 MB for all-MiniLM-L6-v2 on prose), base64 adds a third.
* ``grid`` holds every head of every layer as at most ``GRID_CELLS`` x ``GRID_CELLS`` block means
  (the layers x heads overview), quantised against their largest value.
* ``scales`` carries the colour scales from ``vizcore.colours`` (``weight``: ``ATTENTION``, fixed 0..1;
  ``grid``: ``ATTENTION_BLOCKS``, 0 to the grid's largest block mean): the renderer has no colours of its
  own, so it draws exactly what the plotly figures and their exports draw.
* Tokens are display text (``plot.display_tokens``); ``wordOf`` gives each token's word (the groups
  of ``aggregate.word_groups``) and ``wordLabels`` each word's text, so the renderer applies the pair
  filter, hides [CLS]/[SEP] and merges word pieces exactly as ``aggregate.apply_view`` does.

Layers and heads are 0-based in the payload; the renderer shows them 1-based.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Callable

import numpy as np

from vizcore.attention.aggregate import PAIR_FILTERS, ViewOptions, word_groups, word_label
from vizcore.attention.figures import GRID_CELLS, downsample
from vizcore.colours import ATTENTION, ATTENTION_BLOCKS
from vizcore.errors import VizError
from vizcore.model.record import Run
from vizcore.plot import display_tokens

FULL_MAX_TOKENS = 128
VIEWS = ("heatmap", "grid", "lines")
LEVELS = 255
RENDERER_FONT = 18  # px, every label of the renderer (its own default too)
# zlib level 4: within 1 % of level 9's size on attention codes, at a tenth of its time (67 ms for a
# 512-token layer of 12 heads on one core here; level 1 is 36 ms and 6 % larger).
DEFLATE_LEVEL = 4
MAGIC = b"IBA2"  # the binary form's first bytes: Inside BERT attention, payload version 2


def quantise(weights: np.ndarray) -> np.ndarray:
    """Weights in [0, 1] -> uint8 ``round(255 sqrt(w))`` (clipped: float32 rows can exceed 1 by an ulp)."""
    return np.round(np.sqrt(np.clip(np.asarray(weights, dtype=np.float32), 0.0, 1.0)) * LEVELS).astype(np.uint8)


def dequantise(codes: np.ndarray) -> np.ndarray:
    """uint8 codes -> float32 weights ``(q / 255)^2``, as the renderer decodes them."""
    return np.square(np.asarray(codes, dtype=np.float32) / LEVELS)


def deflate_layer(attention: np.ndarray) -> bytes:
    """One layer ``[head, query, key]`` as its uint8 codes (row-major), deflated (zlib)."""
    return zlib.compress(np.ascontiguousarray(quantise(attention)).tobytes(), DEFLATE_LEVEL)


def encode_layer(attention: np.ndarray) -> str:
    """One layer as base64 of ``deflate_layer``: the payload's JSON form."""
    return base64.b64encode(deflate_layer(attention)).decode("ascii")


def decode_layer(packed: str | bytes, num_heads: int, num_tokens: int) -> np.ndarray:
    """The inverse of ``encode_layer`` (or of ``deflate_layer``, given bytes): float32 ``[head, query, key]``,
    the renderer's values."""
    raw = base64.b64decode(packed) if isinstance(packed, str) else packed
    codes = np.frombuffer(zlib.decompress(raw), dtype=np.uint8)
    return dequantise(codes.reshape(num_heads, num_tokens, num_tokens))


def grid_codes(attention: np.ndarray) -> dict:
    """Every head as block means, 8-bit against their largest value, for the layers x heads grid."""
    small = downsample(attention, GRID_CELLS)  # (L, H, c, c)
    top = float(small.max(initial=0.0)) or 1.0
    codes = np.round(small / top * LEVELS).astype(np.uint8)
    return {"cells": int(small.shape[-1]), "max": top, "data": base64.b64encode(codes.tobytes()).decode("ascii")}


def _words(result: Run) -> tuple[list[int], list[str]]:
    groups = word_groups(result.tokens, result.offsets, result.special_mask, result.segment_ids)
    word_of = [0] * len(result.tokens)
    for index, group in enumerate(groups):
        for position in group:
            word_of[position] = index
    labels = display_tokens([word_label(result.tokens, group) for group in groups])
    return word_of, labels


def loaded_layers(result: Run, layer: int) -> list[int]:
    """The layers a payload carries: all of them up to ``FULL_MAX_TOKENS`` tokens, else ``layer`` alone."""
    return list(range(result.num_layers)) if len(result.tokens) <= FULL_MAX_TOKENS else [layer]


def attention_payload(result: Run, layer: int = 0, head: int = 0, view: str = "heatmap",
                      options: ViewOptions = ViewOptions(), layers: list[int] | None = None,
                      controls: dict | None = None, title: str | None = None,
                      encode: Callable[[int], str | bytes] | None = None, grid: dict | None = None,
                      font: int = RENDERER_FONT, layer_url: str | None = None) -> dict:
    """The renderer's payload for ``result``, opening on ``layer``/``head`` (0-based) in ``view``.

    ``layers`` (0-based) overrides which layers' weights are included (default ``loaded_layers``).
    ``controls`` says which of the renderer's own controls to show: ``views`` (heatmap / grid /
    lines tabs), ``filters`` (pair filter, hide [CLS]/[SEP], merge word pieces), ``layerHead``.
    ``encode(layer)`` and ``grid`` let a caller reuse encodings it keeps (``encode_layer``, ``grid_codes``;
    or ``deflate_layer``'s bytes, for ``binary_payload``). ``font``: the size of every label in px (the
    projector setting draws at ``vizcore.plot.PROJECTOR_MIN_SIZE``). ``layer_url``: where the renderer fetches a
    layer the payload does not carry (``vizcore.attention.shelf``; it appends ``&layer=L``), and the next one ahead.
    """
    if not (0 <= layer < result.num_layers and 0 <= head < result.num_heads):
        raise VizError(f"Layer {layer + 1}, head {head + 1} is not in this model "
                       f"({result.num_layers} layers x {result.num_heads} heads).")
    if view not in VIEWS:
        raise VizError(f"Unknown view '{view}': choose one of {', '.join(VIEWS)}.")
    if options.pair_filter not in PAIR_FILTERS:
        raise VizError(f"Unknown pair filter '{options.pair_filter}': choose one of {', '.join(PAIR_FILTERS)}.")
    layers = loaded_layers(result, layer) if layers is None else sorted(set(layers))
    word_of, word_labels = _words(result)
    grid = grid or grid_codes(result.attention)
    payload = {
        "version": 2,
        "title": title or result.model,
        "numLayers": result.num_layers,
        "numHeads": result.num_heads,
        "n": len(result.tokens),
        "tokens": display_tokens(result.tokens),
        "special": np.asarray(result.special_mask, dtype=bool).astype(int).tolist(),
        "segments": np.asarray(result.segment_ids).astype(int).tolist(),
        "wordOf": word_of,
        "wordLabels": word_labels,
        "levels": LEVELS,
        "encoding": "sqrt8-deflate",
        "layers": {str(l): encode(l) if encode else encode_layer(result.attention[l]) for l in layers},
        "grid": grid,
        "scales": {"weight": ATTENTION.to_payload(), "grid": ATTENTION_BLOCKS.to_payload((0.0, grid["max"]))},
        "truncated": bool(result.truncated),
        "fullMaxTokens": FULL_MAX_TOKENS,
        "canFetch": True,
        "layerUrl": layer_url,
        "initial": {"layer": int(layer), "head": int(head), "view": view},
        "options": {"pairFilter": options.pair_filter, "hideSpecial": bool(options.hide_special),
                    "mergeWords": bool(options.merge_words)},
        "controls": {"views": True, "filters": True, "layerHead": True} | (controls or {}),
        "font": int(font),
    }
    payload["inputId"] = input_id(payload)
    return payload


def input_id(payload: dict) -> str:
    """A short digest of the input (model, tokens, grid), not of the layers carried, the options or the
    selection: handed a payload of the same input, the renderer keeps its selection and decoded layers."""
    content = {key: payload[key] for key in ("title", "numLayers", "numHeads", "tokens", "segments", "grid")}
    return hashlib.sha1(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]


def binary_payload(payload: dict) -> bytes:
    """The payload as one message of bytes, for a host that carries them (the Streamlit component): no
    base64, so its layers take a quarter fewer bytes than in the JSON form. ``MAGIC``, the JSON header's
    length (uint32, little-endian), the header, then each layer's deflated codes; the header's ``layers``
    maps each layer to ``{id, offset, length}`` in that tail (``id``: a digest that tells layers apart).
    Layers may be given as base64 text (``encode_layer``) or bytes (``deflate_layer``)."""
    header, tail, offset = {key: value for key, value in payload.items() if key != "layers"}, [], 0
    header["layers"] = {}
    for key, packed in payload["layers"].items():
        raw = base64.b64decode(packed) if isinstance(packed, str) else bytes(packed)
        header["layers"][key] = {"id": hashlib.sha1(raw).hexdigest()[:16], "offset": offset, "length": len(raw)}
        tail.append(raw)
        offset += len(raw)
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    return MAGIC + len(head).to_bytes(4, "little") + head + b"".join(tail)


def read_binary_payload(data: bytes) -> dict:
    """The inverse of ``binary_payload``, layers as bytes (what the renderer's ``readPayload`` does)."""
    if data[:4] != MAGIC:
        raise VizError("Not an attention view payload: it does not start with " + MAGIC.decode() + ".")
    length = int.from_bytes(data[4:8], "little")
    payload, start = json.loads(data[8:8 + length].decode()), 8 + length
    payload["layers"] = {key: data[start + at["offset"]:start + at["offset"] + at["length"]]
                         for key, at in payload["layers"].items()}
    return payload


def payload_bytes(payload: dict) -> int:
    return len(json.dumps(payload, separators=(",", ":")).encode())
