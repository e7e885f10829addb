"""Each neuron's k largest activations over a stream of batches, with memory bounded by k, not by the corpus.

Per batch, ``batch_top_k`` keeps each neuron's k largest activations over the batch's real tokens (special
tokens and padding are left out: [CLS] and [SEP] are in every sentence and would fill every list);
``top_k_rows`` merges such candidate lists (of batches, then shards) into each neuron's k largest. Merging
top-k lists gives the top-k of their union, so the result is the brute-force top-k over all tokens, whatever
the batches. Ties are broken by sentence id, then position (smaller first), so the order is deterministic.
"""

from __future__ import annotations

import numpy as np
import torch


def batch_top_k(activations: torch.Tensor, valid: torch.Tensor, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``activations`` ``(B, T, d_ff)`` of one layer, ``valid`` ``(B, T)`` bool (the tokens that count): per neuron,
    its ``k'`` = min(k, valid tokens) largest activations, float32 ``(d_ff, k')``, and their tokens as flat
    indices ``b * T + t``, int64 ``(d_ff, k')``."""
    flat = activations.reshape(-1, activations.shape[-1]).float()  # (B * T, d_ff)
    take = min(k, int(valid.sum()))
    masked = flat.masked_fill(~valid.reshape(-1, 1).to(flat.device), float("-inf"))
    values, index = torch.topk(masked.T, take, dim=1)  # (d_ff, k')
    return values.cpu().numpy(), index.cpu().numpy()


def top_k_rows(unit: np.ndarray, activation: np.ndarray, sentence_id: np.ndarray, position: np.ndarray,
               k: int) -> np.ndarray:
    """Indices of each unit's ``k`` largest activations among candidate rows (all ``(N,)``), sorted by unit,
    then activation (largest first), sentence id and position."""
    rows = _above_kth(unit, activation, k)
    order = np.lexsort((position[rows], sentence_id[rows], -activation[rows].astype(np.float64), unit[rows]))
    return rows[order[rank_in_unit(unit[rows][order]) < k]]


def _above_kth(unit: np.ndarray, activation: np.ndarray, k: int) -> np.ndarray:
    """The rows that can be in their unit's top ``k``: at least its k-th largest value (ties kept). A shard holds
    every unit the same number of times (each batch gives each neuron the same k'), so one partition of the
    dense ``[unit, candidate]`` matrix finds them, and the sort that follows has about k rows a unit instead of
    the shard's batches x k (5.9 million for 1,024 sentences of MiniLM). Otherwise: every row."""
    order = np.argsort(unit, kind="stable")
    counts = np.unique(unit, return_counts=True)[1]
    if len(counts) == 0 or (counts != counts[0]).any() or counts[0] <= k:
        return np.arange(len(unit))
    acts = activation[order].reshape(len(counts), counts[0])
    kth = np.partition(acts, counts[0] - k, axis=1)[:, counts[0] - k]  # each unit's k-th largest
    return np.sort(order[(acts >= kth[:, None]).ravel()])


def rank_in_unit(unit: np.ndarray) -> np.ndarray:
    """0, 1, 2 ... within each run of equal ``unit`` values (rows already sorted by unit)."""
    starts = np.flatnonzero(np.r_[True, unit[1:] != unit[:-1]])
    return np.arange(len(unit)) - np.repeat(starts, np.diff(np.r_[starts, len(unit)]))
