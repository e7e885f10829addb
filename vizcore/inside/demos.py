"""Demonstrations around scaled dot-product attention, measured rather than asserted.

- why √d_k: the variance of q·k for random unit-variance vectors grows like d_k, and unscaled scores
  saturate the softmax (low entropy);
- masks: padded keys get zero weight in a batch; a causal (look-ahead) mask on a real head;
- permutation: without position information self-attention cannot see word order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from vizcore.errors import VizError
from vizcore.inside.steps import (
    additive_mask,
    embedding_parts,
    layer_forward,
    layer_weights,
    norm_from,
    position_bias,
)
from vizcore.model.loading import LoadedModel
from vizcore.model.record import Run
from vizcore.model.run import check_text, forward, model_inputs

MAX_DK = 1024
D_K_CHOICES = tuple(2 ** i for i in range(11))  # 1 .. 1024


def entropy_bits(weights: np.ndarray) -> float:
    """Shannon entropy of one probability row, in bits (0 log 0 = 0)."""
    p = np.asarray(weights, dtype=np.float64)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class ScalingDemo:
    """q·k for random q, k with independent N(0, 1) entries, with and without the 1/√d_k."""

    d_k: int
    samples: int
    variance_unscaled: float  # measured Var(q·k); theory: d_k
    variance_scaled: float  # measured Var(q·k / √d_k); theory: 1
    scores: np.ndarray  # (keys,) one query against `keys` random keys, unscaled
    unscaled_weights: np.ndarray  # softmax(scores)
    scaled_weights: np.ndarray  # softmax(scores / √d_k)
    unscaled_entropy: float  # bits
    scaled_entropy: float
    max_entropy: float  # log2(keys): all keys equal


def scaling_demo(d_k: int, samples: int = 2000, keys: int = 10, seed: int = 0) -> ScalingDemo:
    if not 1 <= int(d_k) <= MAX_DK:
        raise VizError(f"d_k must be between 1 and {MAX_DK}; got {d_k}.")
    d_k = int(d_k)
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((samples, d_k)), rng.standard_normal((samples, d_k))
    dots = np.einsum("sd,sd->s", q, k)  # (samples,)
    query, key_set = rng.standard_normal(d_k), rng.standard_normal((keys, d_k))
    scores = key_set @ query
    unscaled, scaled = softmax(scores), softmax(scores / math.sqrt(d_k))
    return ScalingDemo(
        d_k=d_k, samples=samples, variance_unscaled=float(dots.var()),
        variance_scaled=float((dots / math.sqrt(d_k)).var()), scores=scores,
        unscaled_weights=unscaled, scaled_weights=scaled, unscaled_entropy=entropy_bits(unscaled),
        scaled_entropy=entropy_bits(scaled), max_entropy=math.log2(keys))


def variance_curve(dims: tuple[int, ...] = D_K_CHOICES, samples: int = 2000, seed: int = 0) -> list[dict]:
    """Measured Var(q·k) and Var(q·k/√d_k) for each d_k, next to the theory (d_k and 1)."""
    rows = []
    for d_k in dims:
        demo = scaling_demo(d_k, samples=samples, seed=seed)
        rows.append({"d_k": d_k, "measured Var(q·k)": demo.variance_unscaled, "theory": float(d_k),
                     "measured Var(q·k/√d_k)": demo.variance_scaled})
    return rows


def causal_weights(scaled_scores: np.ndarray) -> np.ndarray:
    """Softmax rows with every key after the query masked: (T, T), zero above the diagonal."""
    t = scaled_scores.shape[0]
    future = np.triu(np.ones((t, t), dtype=bool), k=1)
    return softmax(np.where(future, -np.inf, scaled_scores))


def weight_above_diagonal(weights: np.ndarray) -> float:
    """The largest weight any query gives to a later key (0 for a causal pattern)."""
    upper = np.triu(np.asarray(weights), k=1)
    return float(upper.max(initial=0.0))


@dataclass(frozen=True)
class PaddingDemo:
    """Two sentences in one batch: the shorter is padded to the longer one's length."""

    tokens: list[list[str]]  # per sentence, padded to T
    attention_mask: np.ndarray  # (2, T) 1 = real, 0 = padding
    short: int  # which sentence is shorter (0 or 1)
    weights: np.ndarray  # (T, T) the short sentence's weights in the batch, chosen layer and head
    max_on_padding: float  # largest weight any query gives a padded key, all layers and heads
    max_diff_vs_alone: float  # real rows/keys in the batch vs the sentence run alone, all layers and heads


def padding_demo(loaded: LoadedModel, first: str, second: str, layer: int, head: int) -> PaddingDemo:
    check_text(first, "first sentence")
    check_text(second, "second sentence")
    tokenizer = loaded.tokenizer
    if tokenizer.pad_token is None:
        raise VizError(f"'{loaded.name}' has no padding token, so it cannot batch sentences of different lengths.")
    batch = tokenizer([first, second], padding=True, truncation=True, max_length=loaded.max_length,
                      return_tensors="pt")
    mask = batch["attention_mask"]
    lengths = mask.sum(1).tolist()
    if lengths[0] == lengths[1]:
        raise VizError("Both sentences have the same number of tokens, so nothing is padded: "
                       "make one of them longer.")
    short = int(np.argmin(lengths))
    attention = _attentions(loaded, model_inputs(loaded, batch))  # (2, L, H, T, T)
    n = int(lengths[short])
    alone = tokenizer(first if short == 0 else second, truncation=True, max_length=loaded.max_length,
                      return_tensors="pt")
    alone_attention = _attentions(loaded, model_inputs(loaded, alone))[0]  # (L, H, n, n)
    padded_keys = mask[short].numpy() == 0
    return PaddingDemo(
        tokens=[tokenizer.convert_ids_to_tokens(ids) for ids in batch["input_ids"].tolist()],
        attention_mask=mask.numpy(), short=short, weights=attention[short, layer, head],
        max_on_padding=float(attention[short][..., padded_keys].max()),
        max_diff_vs_alone=float(np.abs(attention[short, :, :, :n, :n] - alone_attention).max()))


def _attentions(loaded: LoadedModel, inputs: dict[str, torch.Tensor]) -> np.ndarray:
    output = forward(loaded, inputs, hidden=False)  # a padded batch: the core's forward, no hooks
    return torch.stack(output.attentions, dim=1).float().cpu().numpy()  # (B, L, H, T, T)


@dataclass(frozen=True)
class PermutationDemo:
    """The whole encoder, recomputed, on the sentence and on its words shuffled."""

    tokens: list[str]
    order: np.ndarray  # (T,) shuffled position i holds original token order[i]
    diff_without_positions: float  # max |f(P X) - P f(X)| when X has no position embeddings
    diff_with_positions: float  # the same when positions stay put and only the words move
    change_without: np.ndarray  # (T,) per token: ‖f(P X)_i - (P f(X))_i‖
    change_with: np.ndarray


def shuffle_order(tokens: list[str], special: np.ndarray, seed: int = 0) -> np.ndarray:
    """A permutation of the non-special positions (specials stay), never the identity."""
    movable = np.flatnonzero(~special)
    if len(movable) < 2 or len(set(tokens[i] for i in movable)) < 2:
        raise VizError("The permutation demo needs at least two different words in the sentence.")
    rng = np.random.default_rng(seed)
    order = np.arange(len(tokens))
    while np.array_equal(order[movable], movable):
        order[movable] = rng.permutation(movable)
    return order


def permutation_demo(loaded: LoadedModel, run: Run, seed: int = 0) -> PermutationDemo:
    order = shuffle_order(run.tokens, run.special_mask, seed)
    parts = embedding_parts(loaded, run)
    norm = norm_from(loaded.model.base_model.embeddings.LayerNorm)
    segment = parts.segment if parts.segment is not None else 0.0
    no_positions = norm(torch.from_numpy(parts.word + segment))  # (T, d)
    with_positions = torch.from_numpy(parts.normed)
    weights = [layer_weights(loaded, i) for i in range(loaded.num_layers)]
    mask = additive_mask(torch.ones(len(run.tokens)))
    bias = position_bias(loaded, len(run.tokens))  # MPNet's relative positions: they go with the absolute ones

    def encoder(x: torch.Tensor, positions: bool = True) -> torch.Tensor:
        for w in weights:
            x = layer_forward(w, x, mask, bias if positions else None)["output"]
        return x

    idx = torch.from_numpy(order)
    # Without positions, shuffling the input rows only shuffles the output rows.
    plain = encoder(no_positions[idx], False) - encoder(no_positions, False)[idx]
    # With positions, words move but each slot keeps its position vector.
    shuffled_words = norm(torch.from_numpy(parts.word[order] + (segment[order] if parts.segment is not None else 0.0)
                                           + parts.position))
    positional = encoder(shuffled_words) - encoder(with_positions)[idx]
    return PermutationDemo(
        tokens=run.tokens, order=order, diff_without_positions=float(plain.abs().max()),
        diff_with_positions=float(positional.abs().max()), change_without=plain.norm(dim=1).numpy(),
        change_with=positional.norm(dim=1).numpy())
