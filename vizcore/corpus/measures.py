"""The one per-batch function of a corpus job, the same for the local and the Ray engine.

``measure_batch(worker, batch)`` takes a pyarrow table with ``sentence_id`` and ``text`` and returns a
pyarrow table with one row per sentence: ``sentence_id``, ``num_tokens``, ``truncated`` and ``measures``
(``[layer, head, measure]`` flattened, float32, the measures of ``vizcore.attention.head_stats``); with a
parser, also the sentence's arcs (``arc_relation``, ``arc_offset`` ``[A, 2]``, ``hits`` and ``weights``
``[A, 2, layer, head]`` flattened; see ``vizcore.corpus.syntax``). With ``neurons`` = k > 0, also the
sentence's ``tokens`` (special ones blank) and its part of the batch's top-k per feed-forward neuron
(``vizcore.neurons.topk``): the lists ``neuron_layer``, ``neuron``, ``neuron_position`` and
``neuron_activation``, one entry per (neuron, token of this sentence) among that neuron's k largest
activations in the batch.

Stages as in the app's one-sentence core (``vizcore.model.run``): tokenise (truncated to the model's
maximum, and counted) -> one padded forward pass with eager attention -> per sentence, the attention of
its real tokens (padding is masked, so its keys get weight 0) -> the measures of ``head_statistics``, for
the whole batch at once (``batch_measures``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
import pyarrow as pa
import torch

from vizcore.attention.head_stats import STATISTICS, token_classes
from vizcore.corpus import syntax
from vizcore.model.loading import LoadedModel, load_model
from vizcore.model.run import Hook, forward, model_inputs, neuron_hooks
from vizcore.neurons.topk import batch_top_k

MEASURES = STATISTICS  # entropy, max_weight, cls, sep, punctuation, self, previous, next


@dataclass(frozen=True)
class Worker:
    """What one process (or Ray actor) holds: a model, and spaCy's parser when syntax is asked for."""

    loaded: LoadedModel
    parser: object | None = None


@lru_cache(maxsize=1)
def cached_parser():
    """spaCy's parser, loaded once per process."""
    return syntax.load_parser()


def make_worker(model: str, device: str, syntax: bool) -> Worker:
    """A model (and spaCy's parser) for one process or Ray actor."""
    return Worker(load_model(model, device=device), cached_parser() if syntax else None)


@dataclass(frozen=True)
class Encoded:
    ids: list[list[int]]
    offsets: list[np.ndarray]  # int [T, 2] per sentence
    special: list[np.ndarray]  # bool [T]
    tokens: list[list[str]]
    full_lengths: list[int]  # tokens before truncation


def encode_texts(loaded: LoadedModel, texts: list[str]) -> Encoded:
    """Tokenised once; only the texts longer than the model's maximum again, truncated."""
    def tokenise(some: list[str], truncation: bool):
        return loaded.tokenizer(some, truncation=truncation, max_length=loaded.max_length if truncation else None,
                                return_offsets_mapping=True, return_special_tokens_mask=True, verbose=False)

    enc = tokenise(texts, truncation=False)
    ids, offsets, special = enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"]
    full = [len(row) for row in ids]
    long = [i for i, n in enumerate(full) if n > loaded.max_length]
    if long:
        cut = tokenise([texts[i] for i in long], truncation=True)
        for j, i in enumerate(long):
            ids[i], offsets[i] = cut["input_ids"][j], cut["offset_mapping"][j]
            special[i] = cut["special_tokens_mask"][j]
    return Encoded(ids, [np.asarray(o, dtype=np.int64).reshape(-1, 2) for o in offsets],
                   [np.asarray(s, dtype=bool) for s in special],
                   [loaded.tokenizer.convert_ids_to_tokens(row) for row in ids], full)


def batch_attention(loaded: LoadedModel, ids: list[list[int]], specs: Sequence[Hook] = ()) -> np.ndarray:
    """One forward pass over right-padded ``ids`` (with ``specs``' hooks): float32 ``[B, L, H, T, T]``
    (T = the longest)."""
    width = max(len(row) for row in ids)
    tokenizer = loaded.tokenizer
    pad = next((t for t in (tokenizer.pad_token_id, tokenizer.eos_token_id) if t is not None), 0)
    input_ids = torch.full((len(ids), width), int(pad), dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    encoding = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(input_ids)}
    output = forward(loaded, model_inputs(loaded, encoding), specs, hidden=False, attention=True)
    return torch.stack(output.attentions, dim=1).float().cpu().numpy()  # (B, L, H, T, T)


def batch_measures(attention: np.ndarray, encoded: Encoded) -> np.ndarray:
    """``head_statistics`` for every sentence of a padded batch at once: float32 ``[B, L, H, measure]``.

    The same definitions, computed in float64 over each sentence's real queries only (padded keys carry
    weight 0); ``tests/unit/test_corpus_engine.py`` checks them against ``head_statistics`` one by one.
    """
    b, layers, heads, t, _ = attention.shape
    lengths = np.array([len(row) for row in encoded.ids])
    query = np.arange(t)[None, :] < lengths[:, None]  # (B, T)
    keys = {name: np.zeros((b, t), dtype=bool) for name in ("cls", "sep", "punctuation")}
    for i, (tokens, special) in enumerate(zip(encoded.tokens, encoded.special)):
        for name, mask in token_classes(tokens, special).items():
            keys[name][i, : len(mask)] = mask
    out = np.zeros((b, layers, heads, len(MEASURES)))
    pairs = np.maximum(lengths - 1, 1)[:, None]  # neighbours per sentence (previous / next)
    for layer in range(layers):
        a = attention[:, layer].astype(np.float64)  # (B, H, T, T)

        def over_queries(x: np.ndarray, mask: np.ndarray = query, count: np.ndarray = lengths[:, None]) -> np.ndarray:
            return (x * mask[:, None, :]).sum(-1) / count  # (B, H)

        rows = {
            "entropy": -(a * np.log(np.where(a > 0, a, 1.0))).sum(-1), "max_weight": a.max(-1),
            **{name: (a * mask[:, None, None, :]).sum(-1) for name, mask in keys.items()},
            "self": np.diagonal(a, axis1=-2, axis2=-1),
        }
        for i, name in enumerate(MEASURES[:6]):
            out[:, layer, :, i] = over_queries(rows[name])
        out[:, layer, :, 6] = over_queries(np.diagonal(a, offset=-1, axis1=-2, axis2=-1), query[:, 1:], pairs)
        out[:, layer, :, 7] = over_queries(np.diagonal(a, offset=1, axis1=-2, axis2=-1), query[:, 1:], pairs)
    return out.astype(np.float32)


def measure_batch(worker: Worker, batch: pa.Table, neurons: int = 0) -> pa.Table:
    """The per-sentence records of one batch (see the module docstring); ``neurons``: the top-k kept per
    feed-forward neuron (0: none)."""
    texts = [str(t) for t in batch.column("text").to_pylist()]
    encoded = encode_texts(worker.loaded, texts)
    found: list[tuple[int, np.ndarray, np.ndarray]] = []
    specs = _neuron_specs(worker.loaded, encoded, neurons, found) if neurons else ()
    attention = batch_attention(worker.loaded, encoded.ids, specs)
    measures = list(batch_measures(attention, encoded).reshape(len(texts), -1))  # (L*H*8,) per sentence
    columns = {
        "sentence_id": pa.array(batch.column("sentence_id").to_numpy(), pa.int64()),
        "num_tokens": pa.array([len(row) for row in encoded.ids], pa.int32()),
        "truncated": pa.array([full > len(row) for full, row in zip(encoded.full_lengths, encoded.ids)], pa.bool_()),
        "measures": pa.array(measures, pa.list_(pa.float32())),
    }
    if worker.parser is not None:
        columns.update(_syntax_columns(worker.parser, texts, encoded, attention))
    if neurons:
        columns.update(_neuron_columns(encoded, found))
    return pa.table(columns)


def _neuron_specs(loaded: LoadedModel, encoded: Encoded, k: int, found: list) -> list[Hook]:
    """Hooks that keep, per layer, each neuron's top ``k`` over the batch's real non-special tokens in ``found``
    (``(layer, values (d_ff, k'), flat token indices (d_ff, k'))``): one layer's activations at a time."""
    width = max(len(row) for row in encoded.ids)
    valid = torch.zeros((len(encoded.ids), width), dtype=torch.bool)
    for i, special in enumerate(encoded.special):
        valid[i, : len(special)] = torch.as_tensor(~special)

    def keep(layer: int, activations: torch.Tensor) -> None:
        if valid.any():
            found.append((layer, *batch_top_k(activations, valid, k)))
    return neuron_hooks(loaded, keep)


def _neuron_columns(encoded: Encoded, found: list) -> dict[str, pa.Array]:
    """The batch's top-k hits, split into the lists of the sentences they are in."""
    width = max(len(row) for row in encoded.ids)
    parts = {"layer": [], "neuron": [], "row": [], "position": [], "activation": []}
    for layer, values, flat in found:  # (d_ff, k')
        parts["layer"].append(np.full(values.size, layer))
        parts["neuron"].append(np.repeat(np.arange(values.shape[0]), values.shape[1]))
        parts["row"].append(flat.ravel() // width)
        parts["position"].append(flat.ravel() % width)
        parts["activation"].append(values.ravel())
    hits = {name: np.concatenate(p) if p else np.zeros(0, np.int64) for name, p in parts.items()}
    order = np.argsort(hits["row"], kind="stable")
    cuts = np.searchsorted(hits["row"][order], np.arange(1, len(encoded.ids)))
    split = {name: np.split(values[order], cuts) for name, values in hits.items()}
    return {
        "tokens": pa.array([[t if not s else "" for t, s in zip(tokens, special)]  # specials blank: no context
                            for tokens, special in zip(encoded.tokens, encoded.special)], pa.list_(pa.string())),
        "neuron_layer": pa.array(split["layer"], pa.list_(pa.int16())),
        "neuron": pa.array(split["neuron"], pa.list_(pa.int16())),
        "neuron_position": pa.array(split["position"], pa.list_(pa.int16())),
        "neuron_activation": pa.array(split["activation"], pa.list_(pa.float32())),
    }


def _syntax_columns(parser, texts: list[str], encoded: Encoded, attention: np.ndarray) -> dict[str, pa.Array]:
    scores = []
    for b, parse in enumerate(syntax.parse_texts(parser, texts)):
        n = len(encoded.ids[b])
        scores.append(syntax.score_arcs(attention[b, :, :, :n, :n], encoded.offsets[b], encoded.special[b], parse))
    return {
        "arc_relation": pa.array([list(s.relations) for s in scores], pa.list_(pa.string())),
        "arc_offset": pa.array([s.offsets.ravel() for s in scores], pa.list_(pa.int32())),
        "hits": pa.array([s.hits.ravel() for s in scores], pa.list_(pa.bool_())),
        "weights": pa.array([s.weights.ravel() for s in scores], pa.list_(pa.float32())),
        "unaligned": pa.array([s.unaligned for s in scores], pa.int32()),
    }
