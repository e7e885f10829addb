"""Positional encodings: the sinusoidal table of Vaswani et al. (2017) and a model's learned positions.

Sinusoidal, for position ``pos`` (counted from 0) and dimension pair ``i``::

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Each (sin, cos) pair turns at its own frequency, so moving k positions is the same rotation for
every position: ``PE(pos + k) = M_k · PE(pos)`` with ``M_k`` block-diagonal (one 2x2 rotation per
pair). Arrays are ``[position, dimension]``, float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from vizcore.errors import VizError

if TYPE_CHECKING:  # torch and the model stack only for learned positions: the CLI table stays light

    from vizcore.model.loading import LoadedModel

MAX_POSITIONS = 2048
MAX_DIM = 1024
BASE = 10_000.0
SIMILARITIES = ("cosine", "dot")


def check_size(positions: object, d_model: object) -> tuple[int, int]:
    """Validate a table size; the message says which number is wrong and what is allowed."""
    n, d = _as_int(positions, "length (number of positions)"), _as_int(d_model, "d_model")
    if not 1 <= n <= MAX_POSITIONS:
        raise VizError(f"The length must be between 1 and {MAX_POSITIONS:,} positions; got {n:,}.")
    if not 2 <= d <= MAX_DIM:
        raise VizError(f"d_model must be between 2 and {MAX_DIM:,}; got {d:,}.")
    if d % 2:
        raise VizError(f"d_model must be even (dimensions come in sin/cos pairs); got {d:,}. Try {d + 1:,}.")
    return n, d


def _as_int(value: object, what: str) -> int:
    if isinstance(value, bool):
        raise VizError(f"The {what} must be a whole number; got {value!r}.")
    try:
        number = float(value)  # accepts "64", 64.0
    except (TypeError, ValueError):
        raise VizError(f"The {what} must be a whole number; got {value!r}.") from None
    if not math.isfinite(number) or number != int(number):
        raise VizError(f"The {what} must be a whole number; got {value!r}.")
    return int(number)


def frequencies(d_model: int) -> np.ndarray:
    """Angular frequency of each sin/cos pair, ``1 / 10000^(2i/d_model)``: shape ``[d_model/2]``."""
    return 1.0 / BASE ** (np.arange(0, d_model, 2, dtype=np.float64) / d_model)


def sinusoidal_encoding(positions: int, d_model: int) -> np.ndarray:
    """The sinusoidal table for positions 0..positions-1: float64 ``[positions, d_model]``."""
    n, d = check_size(positions, d_model)
    angles = np.arange(n, dtype=np.float64)[:, None] * frequencies(d)[None, :]  # (N, d/2)
    table = np.empty((n, d), dtype=np.float64)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def similarity(vectors: np.ndarray, kind: str = "cosine") -> np.ndarray:
    """Pairwise similarity of the rows: ``dot`` products or ``cosine`` of the angle. Shape ``[N, N]``."""
    if kind not in SIMILARITIES:
        raise VizError(f"Unknown similarity '{kind}': choose one of {', '.join(SIMILARITIES)}.")
    vectors = np.asarray(vectors, dtype=np.float64)
    if kind == "cosine":
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms == 0.0, 1.0, norms)
    return vectors @ vectors.T


def offset_map(k: int, d_model: int) -> np.ndarray:
    """``M_k`` with ``PE(pos + k) = M_k @ PE(pos)`` for every pos: block-diagonal ``[d_model, d_model]``.

    For one pair (sin wp, cos wp): sin w(p+k) = cos wk·sin wp + sin wk·cos wp and
    cos w(p+k) = -sin wk·sin wp + cos wk·cos wp, a rotation by the angle wk.
    """
    _, d = check_size(1, d_model)
    angles = int(k) * frequencies(d)
    matrix = np.zeros((d, d), dtype=np.float64)
    even = np.arange(0, d, 2)
    matrix[even, even] = np.cos(angles)
    matrix[even, even + 1] = np.sin(angles)
    matrix[even + 1, even] = -np.sin(angles)
    matrix[even + 1, even + 1] = np.cos(angles)
    return matrix


@dataclass(frozen=True)
class OffsetCheck:
    """How well ``M_k`` maps each row of a table onto the row k positions later."""

    k: int
    pairs: int  # number of (pos, pos + k) pairs checked
    max_abs_error: float


def check_offset(table: np.ndarray, k: int) -> OffsetCheck:
    """Apply ``M_k`` to rows 0..N-k-1 of a sinusoidal table and compare with rows k..N-1."""
    n, d = table.shape
    if not 1 <= k < n:
        raise VizError(f"The offset k must be between 1 and {n - 1} for a table of {n} positions; got {k}.")
    shifted = table[:-k] @ offset_map(k, d).T  # (N-k, d): each row is M_k · PE(pos)
    return OffsetCheck(k=int(k), pairs=n - k, max_abs_error=float(np.abs(shifted - table[k:]).max()))


def worked_example(d_model: int = 4) -> list[dict]:
    """The tutorials' example, PE(5, 0) = sin 5 and PE(5, 1) = cos 5, read from the table itself."""
    table = sinusoidal_encoding(6, d_model)
    return [
        {"entry": "PE(5, 0)", "formula": "sin(5 / 10000^(0/d))", "closed form": "sin 5", "value": table[5, 0]},
        {"entry": "PE(5, 1)", "formula": "cos(5 / 10000^(0/d))", "closed form": "cos 5", "value": table[5, 1]},
    ]


@dataclass(frozen=True)
class Projection:
    """Rows projected on their first principal components."""

    coordinates: np.ndarray  # [N, components]
    explained: np.ndarray  # fraction of variance per component, [components]


def principal_components(vectors: np.ndarray, components: int = 2) -> Projection:
    """PCA by SVD of the centred rows; the sign of each axis is fixed so the first row is >= 0."""
    centred = np.asarray(vectors, dtype=np.float64)
    centred = centred - centred.mean(axis=0, keepdims=True)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    components = min(components, len(s))
    coordinates = u[:, :components] * s[:components]
    signs = np.where(coordinates[0] < 0, -1.0, 1.0)
    total = float((s ** 2).sum()) or 1.0
    return Projection(coordinates=coordinates * signs, explained=s[:components] ** 2 / total)


@dataclass(frozen=True)
class LearnedPositions:
    """A model's trained position table, from its first usable row."""

    model: str
    table: np.ndarray  # float64 [positions, hidden]
    first_row: int  # RoBERTa-style tables start after padding_idx: position 0 is row padding_idx + 1
    available: int  # how many positions the model has in total


def learned_positions(loaded: "LoadedModel", positions: int) -> LearnedPositions:
    """The first ``positions`` rows of the model's absolute position embeddings.

    Supported: BERT-family (``embeddings.position_embeddings``, incl. DistilBERT and RoBERTa) and
    GPT-2 (``wpe``). Models with rotary or relative positions have no such table: a VizError says so.
    """
    import torch

    from vizcore.model.arch import position_table

    try:
        module, first = position_table(loaded.model)
    except VizError as error:
        raise VizError(f"'{loaded.name}' has no learned absolute position table ({error}): pick a BERT-, "
                       "DistilBERT-, RoBERTa- or GPT-2-style model.") from error
    weight = module.weight.detach().to("cpu", torch.float64).numpy()
    available = weight.shape[0] - first
    n = min(_as_int(positions, "number of positions"), available)
    if n < 2:
        raise VizError("Show at least 2 positions to compare learned position embeddings.")
    return LearnedPositions(model=loaded.name, table=weight[first:first + n], first_row=first,
                            available=available)


def offset_spread(matrix: np.ndarray) -> float:
    """Largest spread (max - min) along any diagonal of a square matrix.

    For sinusoidal encodings, PE(p)·PE(q) = Σ_i cos(w_i (p - q)): it depends only on the offset
    p - q, so every diagonal is constant and the spread is rounding noise.
    """
    n = matrix.shape[0]
    spreads = [np.ptp(np.diagonal(matrix, offset)) for offset in range(-(n - 1), n)]
    return float(max(spreads))
