"""Views of attention beyond one head: pair filters, hiding special tokens, word merges, head means,
attention rollout and attention flow. All inputs follow the ``[layer, head, query, key]`` contract.

Definitions (also in docs/ATTENTION.md):

* Pair filters keep the rows of one segment and the columns of another (``A->B``: queries in A,
  keys in B). Weights are the model's own, not renormalised, so a filtered row sums to the share
  of attention that row sends into the other segment.
* Hiding special tokens drops their rows and columns and renormalises each remaining row to 1:
  the weights then say how attention is spread *among the ordinary tokens*.
* Merging word pieces into words sums the weights over the pieces of a key word (attention *to* a
  word is the total it receives) and averages them over the pieces of a query word (attention
  *from* a word is the mean of its pieces). Rows still sum to 1.
* Rollout (Abnar & Zuidema 2020): per layer the mean over heads ``A``, the residual added as
  ``0.5 A + 0.5 I``, rows renormalised, and the layers multiplied from the bottom up:
  ``R_1 = Â_1``, ``R_l = Â_l R_{l-1}``.
* Flow (Abnar & Zuidema 2020): the same residual-included matrices as capacities of a layered
  graph (one node per token per layer); the flow from output token ``q`` to input token ``k`` is
  the maximum flow between them. It costs one max-flow per pair, so it is limited to short inputs.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from vizcore.errors import VizError

PAIR_FILTERS = ("all", "A->B", "B->A", "A->A", "B->B")
FLOW_MAX_TOKENS = 40


@dataclass(frozen=True)
class TokenAxis:
    """The tokens along one axis of a matrix: their labels, positions in the input, and segments."""

    tokens: list[str]
    positions: np.ndarray  # int [n]: index of each row/column in the full token list
    segments: np.ndarray  # int [n]: 0 = A, 1 = B


def pair_selection(segment_ids: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Query and key positions kept by a pair filter (``all``, ``A->B``, ``B->A``, ``A->A``, ``B->B``)."""
    segment_ids = np.asarray(segment_ids)
    everything = np.arange(len(segment_ids))
    if name == "all":
        return everything, everything
    if name not in PAIR_FILTERS:
        raise VizError(f"Unknown pair filter '{name}': choose one of {', '.join(PAIR_FILTERS)}.")
    if not (segment_ids == 1).any():
        raise VizError("The pair filters need a second sentence: type one in the sidebar.")
    source, target = (0 if side == "A" else 1 for side in name.split("->"))
    return everything[segment_ids == source], everything[segment_ids == target]


def renormalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to sum to 1 (rows of zeros stay zero). Works on ``[..., query, key]``."""
    totals = matrix.sum(-1, keepdims=True)
    return np.divide(matrix, totals, out=np.zeros_like(matrix), where=totals > 0)


def drop_positions(matrix: np.ndarray, rows: np.ndarray, cols: np.ndarray, hidden: np.ndarray,
                   renormalise: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Remove the ``hidden`` positions from a ``[..., rows, cols]`` sub-matrix.

    ``rows``/``cols`` are the positions the sub-matrix already holds; returns the smaller matrix
    and the positions kept on each axis.
    """
    keep_rows = ~np.isin(rows, hidden)
    keep_cols = ~np.isin(cols, hidden)
    smaller = matrix[..., keep_rows, :][..., keep_cols]
    return (renormalise_rows(smaller) if renormalise else smaller), rows[keep_rows], cols[keep_cols]


def _is_punctuation(token: str) -> bool:
    text = token.replace("##", "").replace("Ġ", "").replace("▁", "").strip()
    return bool(text) and all(unicodedata.category(ch).startswith(("P", "S")) for ch in text)


def word_groups(tokens: list[str], offsets: list[tuple[int, int]], special_mask: np.ndarray,
                segment_ids: np.ndarray) -> list[list[int]]:
    """Group token positions into words.

    A token continues the previous word when both are ordinary (not special, not punctuation), in
    the same segment, and glued together in the text (its start offset equals the previous token's
    end offset), as WordPiece ``##`` pieces and BPE pieces without a leading space are. Special
    tokens and punctuation are words of their own.
    """
    groups: list[list[int]] = []
    for i, token in enumerate(tokens):
        glued = (
            i > 0 and groups
            and not special_mask[i] and not special_mask[i - 1]
            and segment_ids[i] == segment_ids[i - 1]
            and offsets[i][0] == offsets[i - 1][1] and offsets[i][1] > offsets[i][0]
            and not _is_punctuation(token) and not _is_punctuation(tokens[i - 1])
            and not token.startswith(("Ġ", "▁"))
        )
        if glued:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def word_label(tokens: list[str], group: list[int]) -> str:
    pieces = [tokens[group[0]]] + [tokens[i].removeprefix("##") for i in group[1:]]
    return "".join(pieces)


def merge_matrix(matrix: np.ndarray, row_groups: list[list[int]], col_groups: list[list[int]]) -> np.ndarray:
    """``[..., query, key]`` -> ``[..., query word, key word]``: mean over query pieces, sum over key pieces.

    Groups hold indices into the matrix's own rows/columns.
    """
    summed = np.stack([matrix[..., group].sum(-1) for group in col_groups], axis=-1)
    return np.stack([summed[..., group, :].mean(-2) for group in row_groups], axis=-2)


def regroup(positions: np.ndarray, groups: list[list[int]]) -> list[list[int]]:
    """Restrict word groups (over full token positions) to the given positions, as local indices."""
    where = {int(p): i for i, p in enumerate(positions)}
    local = [[where[p] for p in group if p in where] for group in groups]
    return [group for group in local if group]


def head_mean(attention: np.ndarray) -> np.ndarray:
    """``[layer, head, query, key]`` -> ``[layer, query, key]``: the mean over each layer's heads."""
    return np.asarray(attention, dtype=np.float64).mean(axis=1)


def residual_attention(attention: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """``[layer, query, key]`` of ``residual * I + (1 - residual) * head mean``, rows renormalised."""
    mean = head_mean(attention)
    eye = np.eye(mean.shape[-1])
    return renormalise_rows((1.0 - residual) * mean + residual * eye)


def attention_rollout(attention: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Rollout after every layer, ``[layer, query, key]``: entry ``l`` is ``Â_l ... Â_1``."""
    mixed = residual_attention(attention, residual)
    rolled = np.empty_like(mixed)
    current = np.eye(mixed.shape[-1])
    for layer in range(mixed.shape[0]):
        current = mixed[layer] @ current
        rolled[layer] = current
    return rolled


def attention_flow(attention: np.ndarray, queries: list[int] | None = None, residual: float = 0.5,
                   max_tokens: int = FLOW_MAX_TOKENS) -> np.ndarray:
    """Max-flow from each output token (after the last layer) to each input token, ``[query, key]``.

    Node ``(l, i)`` is token ``i`` after layer ``l`` (``l = 0`` is the input); the edge
    ``(l, i) -> (l-1, j)`` has capacity ``Â_l[i, j]``. Rows not in ``queries`` are left at 0.
    """
    import networkx as nx

    mixed = residual_attention(attention, residual)
    layers, n, _ = mixed.shape
    if n > max_tokens:
        raise VizError(f"Attention flow is limited to {max_tokens} tokens (this input has {n}): "
                       "it solves one max-flow problem per token pair. Use rollout for longer inputs.")
    graph = nx.DiGraph()
    for layer in range(layers):
        for i in range(n):
            for j in range(n):
                if mixed[layer, i, j] > 0:
                    graph.add_edge((layer + 1, i), (layer, j), capacity=float(mixed[layer, i, j]))
    flow = np.zeros((n, n))
    for q in range(n) if queries is None else queries:
        for k in range(n):
            flow[q, k] = nx.maximum_flow_value(graph, (layers, q), (0, k))
    return flow


@dataclass(frozen=True)
class ViewOptions:
    """How the page shows a matrix: which pair of segments, without specials, merged into words."""

    pair_filter: str = "all"
    hide_special: bool = False
    merge_words: bool = False


def apply_view(matrix: np.ndarray, tokens: list[str], offsets: list[tuple[int, int]], special_mask: np.ndarray,
               segment_ids: np.ndarray, options: ViewOptions) -> tuple[np.ndarray, TokenAxis, TokenAxis]:
    """A ``[..., T, T]`` matrix as the page shows it: pair filter, then hidden specials, then words.

    Returns the matrix and its row (query) and column (key) axes.
    """
    segment_ids = np.asarray(segment_ids)
    rows, cols = pair_selection(segment_ids, options.pair_filter)
    shown = matrix[..., rows, :][..., cols]
    if options.hide_special:
        hidden = np.flatnonzero(np.asarray(special_mask, dtype=bool))
        shown, rows, cols = drop_positions(shown, rows, cols, hidden, renormalise=True)
        if shown.shape[-1] == 0 or shown.shape[-2] == 0:
            raise VizError("Only special tokens are left once [CLS]/[SEP] are hidden: show them, or type words.")
    if not options.merge_words:
        return shown, _axis(tokens, rows, segment_ids), _axis(tokens, cols, segment_ids)
    groups = word_groups(tokens, offsets, special_mask, segment_ids)
    row_groups, col_groups = regroup(rows, groups), regroup(cols, groups)
    merged = merge_matrix(shown, row_groups, col_groups)
    return merged, _word_axis(tokens, rows, row_groups, segment_ids), _word_axis(tokens, cols, col_groups, segment_ids)


def _axis(tokens: list[str], positions: np.ndarray, segment_ids: np.ndarray) -> TokenAxis:
    return TokenAxis([tokens[p] for p in positions], np.asarray(positions), segment_ids[positions])


def _word_axis(tokens: list[str], positions: np.ndarray, groups: list[list[int]],
               segment_ids: np.ndarray) -> TokenAxis:
    firsts = np.array([positions[g[0]] for g in groups], dtype=int)
    labels = [word_label(tokens, [int(positions[i]) for i in g]) for g in groups]
    return TokenAxis(labels, firsts, segment_ids[firsts])
