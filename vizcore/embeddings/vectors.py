"""Sentence vectors: one vector per text, pooled from one layer's token vectors (or the last four's).

A text -> tokens ([CLS] ... [SEP]) -> the encoder -> hidden states ``(T, D)`` of a layer -> pooling:

* ``mean``: the average over the text's real tokens, [CLS] and [SEP] included (padding excluded): what
  sentence-transformers' ``Pooling`` does for all-MiniLM-L6-v2, the embedded model;
* ``cls``: the first token's vector ([CLS]);
* ``max``: the largest value of each dimension over the real tokens.

``layer`` is ``"last"`` (the encoder's output), an int ``i`` = the output of encoder layer ``i`` (0-based,
``0..L-1``), or ``"last4"``: the pooled vectors of the last four layers side by side, ``(4 * D,)``, in
layer order (BERT's "concatenate the last four hidden layers" feature-based recipe).

Texts are cut where sentence-transformers cuts them when the model folder says so
(``sentence_bert_config.json``'s ``max_seq_length``, 256 for the embedded model), else at the model's
maximum. With the defaults (mean, last), ``sentence_vectors(..., normalize=True)`` returns what
sentence-transformers' ``encode`` returns for the embedded model, whose last module normalises
(tests/integration/test_embeddings_st.py). Cosines do not depend on the normalisation.

Speed: texts are tokenised at once, sorted by length and batched (so a batch pads little, as
sentence-transformers does), run under ``inference_mode`` with SDPA attention (``sdpa_twin``: the
app's models are loaded with eager attention, which returns weights, is slower and is not needed
here), and without the other layers' hidden states unless a layer other than the last is asked for.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import itertools
import json
import threading
import weakref
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from transformers import PreTrainedModel

from vizcore.embeddings import LAYER_CHOICES, MAX_BATCH, POOLINGS  # noqa: F401  (re-exported)
from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel, install_output_hooks
from vizcore.model.run import check_text, forward

POOLING_NAMES = {"mean": "mean of the tokens", "cls": "[CLS] token", "max": "max over the tokens"}
LAST4 = "last4"
Layer = int | str  # "last", "last4" or a 0-based encoder layer index
# model -> its SDPA twin (sdpa_twin); the twin holds no reference to the model, so an entry goes with it.
_TWINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_TWIN_LOCK = threading.Lock()
_NO_TWIN = object()


def parse_layer(text: str, num_layers: int) -> Layer:
    """A layer as the CLI and the UI write it (1-based ``"1"``..``"L"``, ``"last"``, ``"last4"``) -> its code
    value (0-based int, ``"last"``, ``"last4"``). Raises VizError with the choices."""
    value = str(text).strip().lower()
    if value in ("", "last"):
        return "last"
    if value == LAST4:
        _check_last4(num_layers)
        return LAST4
    try:
        number = int(value)
    except ValueError:
        raise VizError(f"Layer '{str(text)[:40]}' is not a layer: give {_choices(num_layers)}.") from None
    if not 1 <= number <= num_layers:
        raise VizError(f"Layer {number} does not exist: give {_choices(num_layers)}.")
    return number - 1


def _choices(num_layers: int) -> str:
    return f"a number from 1 to {num_layers} (this model's layers, 1-based), last or last4"


def _check_last4(num_layers: int) -> None:
    if num_layers < 4:
        raise VizError(f"last4 needs a model with at least 4 layers; this one has {num_layers}: pick one layer.")


def layer_label(layer: Layer) -> str:
    """The layer as people read it: ``"last"``, ``"last4"`` or the 1-based number."""
    return layer if isinstance(layer, str) else str(layer + 1)


def hidden_indices(layer: Layer, num_layers: int) -> tuple[int, ...]:
    """Indices into ``hidden_states`` (0 = embeddings, i = output of layer i - 1) that ``layer`` pools."""
    if layer == "last":
        return (num_layers,)
    if layer == LAST4:
        _check_last4(num_layers)
        return tuple(range(num_layers - 3, num_layers + 1))
    if isinstance(layer, (int, np.integer)) and not isinstance(layer, bool) and 0 <= layer < num_layers:
        return (int(layer) + 1,)
    raise VizError(f"Layer {layer!r} does not exist: use 0..{num_layers - 1} (0-based), 'last' or 'last4'.")


def check_pooling(pooling: str) -> str:
    if pooling not in POOLINGS:
        raise VizError(f"Unknown pooling '{str(pooling)[:40]}': choose {', '.join(POOLINGS)}.")
    return pooling


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """``hidden`` (B, T, D), ``mask`` (B, T) of 1 for real tokens -> (B, D)."""
    if pooling == "cls":
        return hidden[:, 0]
    real = mask.unsqueeze(-1).to(torch.bool)  # (B, T, 1)
    if pooling == "max":
        return hidden.masked_fill(~real, float("-inf")).amax(1)
    weights = real.to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)


def st_max_length(loaded: LoadedModel) -> int | None:
    """sentence-transformers' ``max_seq_length`` for the model's folder (or its hub cache), None when the folder
    has no ``sentence_bert_config.json``; no network."""
    return _read_max_length(str(getattr(loaded.model, "name_or_path", "") or ""))


@lru_cache(maxsize=32)
def _read_max_length(source: str) -> int | None:
    settings = _folder_json(source, "sentence_bert_config.json")
    length = settings.get("max_seq_length") if isinstance(settings, dict) else None
    return int(length) if isinstance(length, int) and length > 0 else None


def _folder_json(source: str, name: str) -> dict | list | None:
    path = Path(source) / name if source else None
    if path is None or not path.is_file():
        try:  # a hub id: its cached file, if any
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(source, name) if source else None
        except (ValueError, OSError):
            cached = None
        path = Path(cached) if isinstance(cached, str) else None
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def sequence_limit(loaded: LoadedModel, max_length: int | None = None) -> int:
    """Tokens read per text: ``max_length``, else sentence-transformers' ``max_seq_length`` for this
    folder, else the model's maximum; never more than the model's maximum."""
    if max_length is not None and max_length < 2:
        raise VizError(f"The maximum length must be at least 2 tokens; got {max_length}.")
    limit = max_length or st_max_length(loaded) or loaded.max_length
    return min(int(limit), loaded.max_length)


def tokenize(loaded: LoadedModel, texts: Sequence[str], limit: int) -> list[list[int]]:
    """Token ids with special tokens, truncated to ``limit``; every text checked (blank, too long, bytes)."""
    if len(texts) == 0:
        raise VizError("There are no texts to embed: give at least one.")
    for i, text in enumerate(texts):
        check_text(text, f"text {i + 1}" if len(texts) > 1 else "text")
    return loaded.tokenizer(list(texts), truncation=True, max_length=limit, verbose=False)["input_ids"]


def _pad_id(loaded: LoadedModel) -> int:
    tokenizer = loaded.tokenizer
    return next((int(t) for t in (tokenizer.pad_token_id, tokenizer.eos_token_id) if t is not None), 0)


def _batch(loaded: LoadedModel, rows: list[list[int]], accepts_types: bool) -> dict[str, torch.Tensor]:
    """Right-padded (B, T) tensors on the model's device; all one segment."""
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), _pad_id(loaded), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    inputs = {"input_ids": ids, "attention_mask": mask}
    if accepts_types:
        inputs["token_type_ids"] = torch.zeros_like(ids)
    return {name: tensor.to(loaded.device) for name, tensor in inputs.items()}


def sdpa_twin(loaded: LoadedModel) -> LoadedModel:
    """The loaded model with PyTorch's SDPA attention, for passes that need no attention weights.

    The app loads models with eager attention because its pages show attention weights; SDPA returns none
    but is faster on long texts: 1.6x at 160 tokens on average, the same on short sentences
    (docs/BENCHMARKS.md). The twin is a second module
    tree around the *same* weight tensors (only the small Python objects are copied, ~10 ms once per
    model), with its own config, so the shared model's config is never touched. It has transformers' own
    output hooks and no other: a hook another session has on the shared model for a moment (an ablation)
    is not copied, and none of ours reaches it (use ``fast_attention=False`` for a pass with hooks).
    A model that is already SDPA, or whose architecture has no SDPA path, is returned as it is.
    """
    model = loaded.model
    if getattr(model.config, "_attn_implementation", None) == "sdpa":
        return loaded
    with _TWIN_LOCK:
        twin = _TWINS.get(model)
        if twin is None:
            twin = _TWINS[model] = _make_twin(model)
    return loaded if twin is _NO_TWIN else dataclasses.replace(loaded, model=twin)


def _make_twin(model: torch.nn.Module) -> torch.nn.Module | object:
    same = {id(t): t for t in itertools.chain(model.parameters(), model.buffers())}
    twin = copy.deepcopy(model, memo=same)  # memo: every weight maps to itself, not to a copy
    try:
        twin.set_attn_implementation("sdpa")
    except (ValueError, ImportError):
        return _NO_TWIN
    if twin.config._attn_implementation != "sdpa":
        return _NO_TWIN
    for module in twin.modules():
        for kept in (module._forward_hooks, module._forward_pre_hooks, module._forward_hooks_with_kwargs,
                     module._forward_hooks_always_called, module._forward_pre_hooks_with_kwargs):
            kept.clear()
        if isinstance(module, PreTrainedModel):
            module._output_capturing_hooks_installed = False
    install_output_hooks(twin)
    return twin


def _accepts_token_types(loaded: LoadedModel) -> bool:
    return "token_type_ids" in inspect.signature(loaded.model.base_model.forward).parameters


def _pooled_batch(loaded: LoadedModel, inputs: dict[str, torch.Tensor], pooling: str,
                  indices: tuple[int, ...]) -> torch.Tensor:
    """One forward pass of the bare encoder -> (B, len(indices) * D)."""
    last_only = indices == (loaded.num_layers,)
    output = forward(loaded, inputs, hidden=not last_only, attention=False, base_only=True)
    states = [output.last_hidden_state] if last_only else [output.hidden_states[i] for i in indices]
    return torch.cat([pool(h, inputs["attention_mask"], pooling) for h in states], dim=-1)


def sentence_vectors(loaded: LoadedModel, texts: Sequence[str], pooling: str = "mean", layer: Layer = "last",
                     batch_size: int = 32, max_length: int | None = None,
                     on_progress: Callable[[int, int], None] | None = None, normalize: bool = False,
                     fast_attention: bool = True) -> np.ndarray:
    """One vector per text, in input order: float32 ``(N, D)``, or ``(N, 4 * D)`` for ``last4``.

    ``max_length`` (tokens) defaults to ``sequence_limit``; ``normalize`` scales each vector to length 1.
    ``on_progress(done, total)`` is called after each batch with the number of texts done.
    ``fast_attention`` runs the model's SDPA twin (``sdpa_twin``; the same numbers to ~1e-7), False the
    model as loaded.
    """
    check_pooling(pooling)
    indices = hidden_indices(layer, loaded.num_layers)
    if not 1 <= batch_size <= MAX_BATCH:
        raise VizError(f"The batch size must be between 1 and {MAX_BATCH}; got {batch_size}.")
    rows = tokenize(loaded, texts, sequence_limit(loaded, max_length))
    loaded = sdpa_twin(loaded) if fast_attention else loaded
    order = np.argsort([-len(row) for row in rows], kind="stable")  # longest first: little padding per batch
    accepts_types, parts = _accepts_token_types(loaded), []
    for start in range(0, len(order), batch_size):
        chosen = order[start: start + batch_size]
        inputs = _batch(loaded, [rows[i] for i in chosen], accepts_types)
        parts.append(_pooled_batch(loaded, inputs, pooling, indices).float().cpu().numpy())
        if on_progress is not None:
            on_progress(min(start + batch_size, len(order)), len(order))
    vectors = np.empty((len(rows), parts[0].shape[1]), dtype=np.float32)
    vectors[order] = np.concatenate(parts)
    return unit_rows(vectors) if normalize else vectors


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero): (N, D) float32."""
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` (N, D) -> cosine similarities (N, N), float64; a zero vector has cosine 0 with all."""
    x = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    unit = x / np.where(norms > 0, norms, 1.0)
    return np.clip(unit @ unit.T, -1.0, 1.0)


def similarity(loaded: LoadedModel, a: str, b: str, pooling: str = "mean", layer: Layer = "last") -> float:
    """The cosine of the two texts' vectors."""
    return float(cosine_matrix(sentence_vectors(loaded, [a, b], pooling, layer))[0, 1])
