"""The one per-batch function of a corpus job, the same for the local and the Ray engine.

``measure_batch(worker, batch)`` takes a pyarrow table with ``sentence_id`` and ``text`` and returns a
pyarrow table with one row per sentence: ``sentence_id``, ``num_tokens``, ``truncated`` and ``measures``
(``[layer, head, measure]`` flattened, float32, the measures of ``vizcore.attention.head_stats``); with a
parser, also the sentence's arcs (``arc_relation``, ``arc_offset`` ``[A, 2]``, ``hits`` and ``weights``
``[A, 2, layer, head]`` flattened; see ``vizcore.corpus.syntax``).

Stages as in the app's one-sentence core (``vizcore.model.run``): tokenise (truncated to the model's
maximum, and counted) -> one padded forward pass with eager attention -> per sentence, the attention of
its real tokens ``[:n, :n]`` (padding is masked, so its keys get weight 0) -> ``head_statistics``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import torch

from vizcore.attention.head_stats import STATISTICS, head_statistics
from vizcore.corpus import syntax
from vizcore.model.loading import LoadedModel
from vizcore.model.run import forward, model_inputs

MEASURES = STATISTICS  # entropy, max_weight, cls, sep, punctuation, self, previous, next


@dataclass(frozen=True)
class Worker:
    """What one process (or Ray actor) holds: a model, and spaCy's parser when syntax is asked for."""

    loaded: LoadedModel
    parser: object | None = None


@dataclass(frozen=True)
class Encoded:
    ids: list[list[int]]
    offsets: list[np.ndarray]  # int [T, 2] per sentence
    special: list[np.ndarray]  # bool [T]
    tokens: list[list[str]]
    full_lengths: list[int]  # tokens before truncation


def encode_texts(loaded: LoadedModel, texts: list[str]) -> Encoded:
    tokenizer = loaded.tokenizer
    full = tokenizer(texts, truncation=False, verbose=False)["input_ids"]
    enc = tokenizer(texts, truncation=True, max_length=loaded.max_length, return_offsets_mapping=True,
                    return_special_tokens_mask=True, verbose=False)
    ids = enc["input_ids"]
    return Encoded(ids, [np.asarray(o, dtype=np.int64).reshape(-1, 2) for o in enc["offset_mapping"]],
                   [np.asarray(s, dtype=bool) for s in enc["special_tokens_mask"]],
                   [tokenizer.convert_ids_to_tokens(row) for row in ids], [len(row) for row in full])


def batch_attention(loaded: LoadedModel, ids: list[list[int]]) -> np.ndarray:
    """One forward pass over right-padded ``ids``: float32 ``[B, L, H, T, T]`` (T = the longest)."""
    width = max(len(row) for row in ids)
    tokenizer = loaded.tokenizer
    pad = next((t for t in (tokenizer.pad_token_id, tokenizer.eos_token_id) if t is not None), 0)
    input_ids = torch.full((len(ids), width), int(pad), dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    encoding = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(input_ids)}
    output = forward(loaded, model_inputs(loaded, encoding), hidden=False, attention=True)
    return torch.stack(output.attentions, dim=1).float().cpu().numpy()  # (B, L, H, T, T)


def measure_batch(worker: Worker, batch: pa.Table) -> pa.Table:
    """The per-sentence records of one batch (see the module docstring)."""
    texts = [str(t) for t in batch.column("text").to_pylist()]
    encoded = encode_texts(worker.loaded, texts)
    attention = batch_attention(worker.loaded, encoded.ids)
    measures = []
    for b, n in enumerate(len(row) for row in encoded.ids):
        stats = head_statistics(attention[b, :, :, :n, :n], encoded.tokens[b], encoded.special[b])
        measures.append(np.stack([stats[m] for m in MEASURES], axis=-1).astype(np.float32).ravel())  # (L*H*8,)
    columns = {
        "sentence_id": pa.array(batch.column("sentence_id").to_numpy(), pa.int64()),
        "num_tokens": pa.array([len(row) for row in encoded.ids], pa.int32()),
        "truncated": pa.array([full > len(row) for full, row in zip(encoded.full_lengths, encoded.ids)], pa.bool_()),
        "measures": pa.array(measures, pa.list_(pa.float32())),
    }
    if worker.parser is not None:
        columns.update(_syntax_columns(worker.parser, texts, encoded, attention))
    return pa.table(columns)


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
