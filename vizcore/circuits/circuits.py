"""Circuits from the weights, after Elhage et al. (2021), "A Mathematical Framework for Transformer Circuits".

No sentence, no forward pass: products of each head's matrices, read through ``vizcore.model.arch``
(``head_weights``, ``token_embeddings``) in the row convention ``x @ W``. W_E is the token embedding
table alone: no positions, no segment embedding, no LayerNorm folded in, no biases (see docs/WHY.md).

* **QK circuit** of head h: ``scaling * W_E W_Q^h (W_K^h)^T W_E^T``, the score a query token gives a key
  token before positions, biases and LayerNorm, restricted to the ``N`` most frequent tokens of the
  offline English text ``vizcore/data/corpus-demo.txt`` (tokenised with the model's own tokenizer).
* **OV circuit**: ``W_E W_V^h W_O^h W_E^T`` on the same tokens, W_E^T standing in for the unembedding (tied
  in BERT and GPT-2). Its copying score is the paper's ``Re(sum lambda) / sum |lambda|`` over its
  eigenvalues, in [-1, 1]: 1 when attending to a token raises that same token's logit (a copying head).
  The N x N matrix's nonzero eigenvalues are those of the d_head x d_head ``W_O E^T E W_V``.
* **Composition** of head a (layer l) into head b (layer l + 1): ``||W_A W_B||_F / (||W_A||_F ||W_B||_F)`` with
  W_A = a's ``W_OV = W_V W_O`` and W_B = b's ``W_QK = W_Q W_K^T`` (Q), ``W_QK^T`` (K) or ``W_OV`` (V). Norms of the
  d x d products are taken through d_head x d_head Gram matrices, never forming them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vizcore.errors import VizError
from vizcore.model import arch as archs
from vizcore.model.loading import LoadedModel

FREQUENCY_TEXT = Path(__file__).resolve().parents[1] / "data" / "corpus-demo.txt"
FREQUENCY_SOURCE = "vizcore/data/corpus-demo.txt"
DEFAULT_TOKENS = 500  # most frequent tokens the QK and OV circuits are restricted to
MAX_TOP = 200
KINDS = ("q", "k", "v")


@dataclass(frozen=True)
class Circuits:
    """Every head of one model. L layers, H heads, N frequent tokens."""

    model: str
    token_ids: np.ndarray  # int64 [N], most frequent first
    ov_copying: np.ndarray  # float64 [L, H]
    composition: dict[str, np.ndarray]  # "q" | "k" | "v": float64 [L - 1, H, H], [l, a, b]: head a of l into b of l + 1


def frequent_tokens(loaded: LoadedModel, count: int = DEFAULT_TOKENS) -> np.ndarray:
    """The ``count`` most frequent token ids of the offline English text (ties: the smaller id first)."""
    if count < 1:
        raise VizError(f"The circuits need at least 1 frequent token, not {count}.")
    lines = [line for line in FREQUENCY_TEXT.read_text(encoding="utf-8").splitlines() if line.strip()]
    ids = loaded.tokenizer(lines, add_special_tokens=False)["input_ids"]
    counts = Counter(i for sentence in ids for i in sentence)
    ranked = sorted(counts, key=lambda i: (-counts[i], i))
    return np.asarray(ranked[:count], dtype=np.int64)


def _weights(loaded: LoadedModel, layer: int) -> archs.HeadWeights:
    return archs.head_weights(loaded.model, layer, loaded.num_heads)


def _numpy(tensor) -> np.ndarray:
    return tensor.double().cpu().numpy()


def check_head(loaded: LoadedModel, layer: int, head: int) -> None:
    if not (0 <= layer < loaded.num_layers and 0 <= head < loaded.num_heads):
        raise VizError(f"Layer {layer + 1}, head {head + 1} does not exist: the model has {loaded.num_layers} layers x "
                       f"{loaded.num_heads} heads (counted from 1).")


def qk_scores(loaded: LoadedModel, token_ids: np.ndarray, layer: int, head: int) -> np.ndarray:
    """The QK circuit on ``token_ids``: ``[query token, key token]``, float64."""
    check_head(loaded, layer, head)
    weights = _weights(loaded, layer)
    embeddings = _numpy(archs.token_embeddings(loaded.model)[token_ids])  # (N, d)
    queries = embeddings @ _numpy(weights.query[head])  # (N, d_head)
    keys = embeddings @ _numpy(weights.key[head])
    return weights.scaling * queries @ keys.T


def qk_top(loaded: LoadedModel, token_ids: np.ndarray, layer: int, head: int, top: int = 10) -> list[dict]:
    """The ``top`` (query, key) pairs the head's QK circuit scores highest, best first."""
    if not 1 <= top <= MAX_TOP:
        raise VizError(f"--top must be from 1 to {MAX_TOP}, not {top}.")
    scores = qk_scores(loaded, token_ids, layer, head)
    flat = np.argsort(-scores, axis=None, kind="stable")[:top]
    names = loaded.tokenizer.convert_ids_to_tokens(token_ids.tolist())
    return [{"query_token": names[q], "key_token": names[k], "score": float(scores[q, k])}
            for q, k in zip(*np.unravel_index(flat, scores.shape))]


def copying_score(eigenvalues: np.ndarray) -> float:
    """Elhage et al.'s ``Re(sum lambda) / sum |lambda|``: 1 for a pure copier, -1 for a pure anti-copier."""
    total = float(np.abs(eigenvalues).sum())
    return float(np.real(eigenvalues.sum()) / total) if total > 0 else 0.0


def ov_copying(loaded: LoadedModel, token_ids: np.ndarray) -> np.ndarray:
    """Every head's OV copying score on ``token_ids``, ``[L, H]``."""
    embeddings = _numpy(archs.token_embeddings(loaded.model)[token_ids])
    gram = embeddings.T @ embeddings  # (d, d): E^T E
    scores = np.zeros((loaded.num_layers, loaded.num_heads))
    for layer in range(loaded.num_layers):
        weights = _weights(loaded, layer)
        small = _numpy(weights.out) @ gram @ _numpy(weights.value)  # (H, d_head, d_head): W_O E^T E W_V
        scores[layer] = [copying_score(np.linalg.eigvals(m)) for m in small]
    return scores


def _gram_left(left: np.ndarray) -> np.ndarray:  # (H, d, k) -> (H, k, k): L^T L
    return np.einsum("hdi,hdj->hij", left, left)


def _gram_right(right: np.ndarray) -> np.ndarray:  # (H, k, d) -> (H, k, k): R R^T
    return np.einsum("hid,hjd->hij", right, right)


def _frobenius(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``||L_h R_h||_F`` per head, ``[H]``: ``tr(L^T L R R^T)``."""
    return np.sqrt(np.maximum(np.einsum("hij,hji->h", _gram_left(left), _gram_right(right)), 0.0))


def composition_norms(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``||A_i B_j||_F / (||A_i||_F ||B_j||_F)`` for factored ``A = L1 R1`` and ``B = L2 R2`` (each ``(H, d, k)``,
    ``(H, k, d)``), ``[H_a, H_b]``: ``||L1 M R2||^2 = tr(M^T (L1^T L1) M (R2 R2^T))`` with ``M = R1 L2``."""
    (l1, r1), (l2, r2) = a, b
    middle = np.einsum("aid,bdj->abij", r1, l2)  # (Ha, Hb, k, k)
    left, right = _gram_left(l1), _gram_right(r2)
    inner = np.einsum("abki,akl,ablj,bji->ab", middle, left, middle, right, optimize=True)
    norms = np.sqrt(np.maximum(inner, 0.0))
    return norms / np.maximum(np.outer(_frobenius(l1, r1), _frobenius(l2, r2)), np.finfo(np.float64).tiny)


def composition(loaded: LoadedModel) -> dict[str, np.ndarray]:
    """Q-, K- and V-composition of every head into every head of the next layer, ``[L - 1, H, H]`` each."""
    layers = [_weights(loaded, layer) for layer in range(loaded.num_layers)]
    scores = {kind: [] for kind in KINDS}
    for before, after in zip(layers, layers[1:]):
        ov = (_numpy(before.value), _numpy(before.out))  # W_OV = W_V W_O: (H, d, d_head) (H, d_head, d)
        query, key = _numpy(after.query), _numpy(after.key)
        readers = {"q": (query, key.transpose(0, 2, 1)),  # W_QK = W_Q W_K^T
                   "k": (key, query.transpose(0, 2, 1)),  # W_QK^T = W_K W_Q^T
                   "v": (_numpy(after.value), _numpy(after.out))}
        for kind in KINDS:
            scores[kind].append(composition_norms(ov, readers[kind]))
    empty = np.zeros((0, loaded.num_heads, loaded.num_heads))
    return {kind: np.stack(values) if values else empty for kind, values in scores.items()}


def circuits(loaded: LoadedModel, count: int = DEFAULT_TOKENS) -> Circuits:
    """Every head's OV copying score and the composition scores of ``loaded`` (no sentence)."""
    token_ids = frequent_tokens(loaded, count)
    return Circuits(model=loaded.name, token_ids=token_ids, ov_copying=ov_copying(loaded, token_ids),
                    composition=composition(loaded))


def head_record(loaded: LoadedModel, result: Circuits, layer: int, head: int, top: int = 10) -> dict:
    """The CLI's record of one head (0-based): ``{"model", "layer", "head", "qk_top", "ov_copying"}``, with the
    composition of each head of the layer before into this one (``composition_from_previous``, ``[head]``)."""
    check_head(loaded, layer, head)
    before = {kind: (result.composition[kind][layer - 1, :, head].tolist() if layer > 0 else [])
              for kind in KINDS}
    return {"model": result.model, "layer": layer, "head": head,
            "qk_top": qk_top(loaded, result.token_ids, layer, head, top),
            "ov_copying": float(result.ov_copying[layer, head]),
            "composition_from_previous": before,
            "frequent_tokens": len(result.token_ids), "frequency_source": FREQUENCY_SOURCE}
