"""The positions modern models use: rotary (RoPE), linear biases (ALiBi) and learned relative biases.

Unlike the sinusoidal and learned tables (``encoding.py``), added once to the word vectors, these act
inside every attention layer, on the scores, and only through the distance between two tokens.

* **Rotary** (Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position Embedding"; used by
  LLaMA): each pair of query/key coordinates ``(x_2i, x_2i+1)`` at position ``m`` is rotated by the angle
  ``m·θ_i``, ``θ_i = 10000^(-2i/d)``. A rotation by ``mθ`` then one by ``-nθ`` is one by ``(m - n)θ``, so
  ``R(m)q · R(n)k = Σ_i Re[(q_2i + i q_2i+1) · conj(k_2i + i k_2i+1) · e^{i (m - n) θ_i}]``: a function of
  ``m - n`` alone. (Pairs here are adjacent coordinates, as in the paper; Hugging Face's LLaMA pairs
  coordinate i with i + d/2, the same rotation with the coordinates permuted.)
* **ALiBi** (Press et al. 2022, "Train Short, Test Long: Attention with Linear Biases"): no position
  vectors at all; head ``h`` adds ``-m_h·|i - j|`` to the score of query ``i`` for key ``j``, with slopes
  the geometric sequence ``2^(-8/n), 2^(-16/n), ..., 2^(-8)`` for ``n`` heads (a power of two; otherwise
  the paper's code takes the ``2^⌊log2 n⌋`` slopes and every other slope of twice as many). The paper's
  model is a decoder (keys ``j ≤ i`` only); for an encoder the distance is taken both ways, ``|i - j|``.
* **Learned relative bias** (Raffel et al. 2020, T5; MPNet, Song et al. 2020, uses the same): one learned
  number per head for each of 32 buckets of the signed distance, added to the scores of every layer.
  Distances below 8 each have their own bucket, longer ones share logarithmically wider buckets up to 128;
  keys before and after the query use separate halves.

Arrays are float64; score and bias matrices are ``[query, key]`` (with a leading head axis when per head).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vizcore.errors import VizError

if TYPE_CHECKING:  # torch and the model stack only where a model is used: the CLI's tables stay light
    from vizcore.model.loading import LoadedModel
    from vizcore.model.record import Run

ROTARY_BASE = 10_000.0
RELATIVE_BUCKETS = 32
RELATIVE_MAX_DISTANCE = 128
RELATIVE_BIAS_TENSOR = "encoder.relative_attention_bias.weight"
MAX_HEADS = 256


# ---- rotary --------------------------------------------------------------------------------------------

def rotary_frequencies(dim: int, base: float = ROTARY_BASE) -> np.ndarray:
    """``θ_i = base^(-2i/dim)`` for each coordinate pair i: shape ``[dim/2]``."""
    return base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)


def rotate(vectors: np.ndarray, positions: np.ndarray, base: float = ROTARY_BASE) -> np.ndarray:
    """RoPE: row t of ``vectors`` ``[T, dim]`` with each pair (2i, 2i+1) rotated by ``positions[t]·θ_i``."""
    vectors = np.asarray(vectors, dtype=np.float64)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * rotary_frequencies(vectors.shape[-1], base)  # (T, d/2)
    cos, sin = np.cos(angles), np.sin(angles)
    even, odd = vectors[..., 0::2], vectors[..., 1::2]
    out = np.empty_like(vectors)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


@dataclass(frozen=True)
class RotaryCheck:
    """One query vector and one key vector, placed at every position 0..N-1 and rotated there."""

    dim: int
    frequencies: np.ndarray  # θ_i, [dim/2]
    scores: np.ndarray  # [N, N]: R(m)q · R(n)k for query position m, key position n
    by_offset: np.ndarray  # [2N - 1]: the closed form g(m - n) for m - n = -(N-1) .. N-1
    max_diagonal_spread: float  # largest max - min along any diagonal m - n = const: rounding only
    max_closed_form_error: float  # largest |scores[m, n] - g(m - n)|
    unrotated: float  # q · k: what every cell would be without positions


def check_dim(dim: object, what: str = "dim") -> int:
    from vizcore.positional.encoding import MAX_DIM, _as_int

    d = _as_int(dim, what)
    if not 2 <= d <= MAX_DIM or d % 2:
        raise VizError(f"The {what} must be an even number from 2 to {MAX_DIM:,} (coordinates are rotated in "
                       f"pairs); got {d:,}.")
    return d


def rotary_check(positions: object, dim: object, seed: int = 0) -> RotaryCheck:
    """Rotary scores of a random unit-variance query and key (``seed``) at every pair of positions."""
    from vizcore.positional.encoding import MAX_POSITIONS, _as_int

    n, d = _as_int(positions, "number of positions"), check_dim(dim)
    if not 1 <= n <= MAX_POSITIONS // 4:
        raise VizError(f"Rotary scores take 1 to {MAX_POSITIONS // 4:,} positions (an N × N matrix); got {n:,}.")
    q, k = np.random.default_rng(seed).normal(size=(2, d))
    places = np.arange(n)
    scores = rotate(np.tile(q, (n, 1)), places) @ rotate(np.tile(k, (n, 1)), places).T  # (N, N)
    offsets = np.arange(-(n - 1), n)
    by_offset = rotary_by_offset(q, k, offsets)
    closed = by_offset[places[:, None] - places[None, :] + n - 1]
    spreads = [np.ptp(np.diagonal(scores, o)) for o in range(-(n - 1), n)]
    return RotaryCheck(dim=d, frequencies=rotary_frequencies(d), scores=scores, by_offset=by_offset,
                       max_diagonal_spread=float(max(spreads)),
                       max_closed_form_error=float(np.abs(scores - closed).max()), unrotated=float(q @ k))


def rotary_by_offset(q: np.ndarray, k: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``g(δ) = Σ_i Re[q̃_i · conj(k̃_i) · e^{iδθ_i}]`` with ``q̃_i = q_2i + i q_2i+1``: the score at offset δ."""
    q_pairs, k_pairs = q[0::2] + 1j * q[1::2], k[0::2] + 1j * k[1::2]
    phases = np.exp(1j * np.asarray(offsets, dtype=np.float64)[:, None] * rotary_frequencies(len(q))[None, :])
    return np.real((q_pairs * np.conj(k_pairs))[None, :] * phases).sum(axis=1)


# ---- ALiBi ---------------------------------------------------------------------------------------------

def check_heads(heads: object) -> int:
    from vizcore.positional.encoding import _as_int

    n = _as_int(heads, "number of heads")
    if not 1 <= n <= MAX_HEADS:
        raise VizError(f"The number of heads must be between 1 and {MAX_HEADS}; got {n:,}.")
    return n


def alibi_slopes(heads: object) -> np.ndarray:
    """Press et al.'s slopes for ``heads`` heads: ``2^(-8h/n)`` for h = 1..n when n is a power of two."""
    n = check_heads(heads)

    def geometric(count: int) -> list[float]:
        return [2.0 ** (-8.0 * h / count) for h in range(1, count + 1)]

    below = 2 ** int(math.floor(math.log2(n)))
    if below == n:
        return np.asarray(geometric(n))
    return np.asarray(geometric(below) + geometric(2 * below)[0::2][: n - below])


def alibi_bias(slopes: np.ndarray, length: int, causal: bool = False) -> np.ndarray:
    """``-slope·|i - j|`` for every head: ``[heads, query, key]``; ``causal`` sets keys after the query to -inf."""
    places = np.arange(length)
    distance = np.abs(places[:, None] - places[None, :]).astype(np.float64)  # (T, T)
    bias = -np.asarray(slopes, dtype=np.float64)[:, None, None] * distance[None] + 0.0  # + 0.0: no -0.0
    if causal:
        bias = np.where(places[None, :] > places[:, None], -np.inf, bias)
    return bias


def softmax(scores: np.ndarray) -> np.ndarray:
    shifted = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(shifted)
    return weights / weights.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class AlibiOnHead:
    """One head of a real sentence, its recorded pre-softmax scores with and without an ALiBi bias."""

    tokens: list[str]
    layer: int  # 0-based
    head: int
    slope: float
    scores: np.ndarray  # [T, T]: the model's pre-softmax scores, recomputed from its own Q and K
    bias: np.ndarray  # [T, T]
    weights: np.ndarray  # [T, T]: softmax(scores), the model's own attention
    biased: np.ndarray  # [T, T]: softmax(scores + bias)
    recompute_error: float  # max |weights - the run's attention|: the scores are the model's
    mean_distance: float  # average |i - j| under the weights
    biased_mean_distance: float


def pre_softmax_scores(loaded: LoadedModel, run: Run, layer: int) -> np.ndarray:
    """The scores a layer's softmax reads, ``[heads, query, key]``, from the run's recorded Q and K (one forward:
    ``run`` with ``Capture(qkv=True)``): ``QKᵀ/√d_k`` plus the model's own relative bias (MPNet) and
    causal mask (decoders)."""
    if run.queries is None or run.keys is None:
        raise VizError("This run recorded no queries and keys: run it with Capture(qkv=True).")
    q, k = run.queries[layer].astype(np.float64), run.keys[layer].astype(np.float64)  # (H, T, d_head)
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    relative = model_relative_bias(loaded)
    if relative is not None:
        t = scores.shape[-1]
        places = np.arange(t)
        scores = scores + relative[:, relative_buckets(places[:, None] - places[None, :])]  # (H, T, T)
    if loaded.is_decoder:
        scores = np.where(np.triu(np.ones(scores.shape[-2:], dtype=bool), 1), -np.inf, scores)
    return scores


def alibi_on_head(loaded: LoadedModel, run: Run, layer: int, head: int) -> AlibiOnHead:
    """What ALiBi's bias for head ``head`` (its slope among the model's heads) does to that head's attention."""
    from vizcore.model.contract import check_layer_head

    check_layer_head(loaded, layer, head)
    scores = pre_softmax_scores(loaded, run, layer)[head]
    slope = float(alibi_slopes(loaded.num_heads)[head])
    bias = alibi_bias(np.array([slope]), scores.shape[0], causal=loaded.is_decoder)[0]
    weights, biased = softmax(scores), softmax(scores + bias)
    places = np.arange(scores.shape[0])
    distance = np.abs(places[:, None] - places[None, :])
    return AlibiOnHead(
        tokens=list(run.tokens), layer=layer, head=head, slope=slope, scores=scores, bias=bias, weights=weights,
        biased=biased, recompute_error=float(np.abs(weights - run.attention[layer, head]).max()),
        mean_distance=float((weights * distance).sum(axis=1).mean()),
        biased_mean_distance=float((biased * distance).sum(axis=1).mean()))


# ---- learned relative bias (T5, MPNet) -----------------------------------------------------------------

def relative_buckets(offsets: np.ndarray, buckets: int = RELATIVE_BUCKETS,
                     max_distance: int = RELATIVE_MAX_DISTANCE) -> np.ndarray:
    """The bucket of each signed offset ``query - key`` (T5's bidirectional buckets, as MPNet uses them):
    keys at or before the query take buckets 0..buckets/2-1, keys after it the other half; within a half,
    distances below buckets/4 are exact, longer ones logarithmic up to ``max_distance``, then the last bucket."""
    offsets = np.asarray(offsets, dtype=np.int64)
    half = buckets // 2
    exact = half // 2
    distance = np.abs(offsets)
    with np.errstate(divide="ignore"):
        far = exact + (np.log(np.maximum(distance, 1) / exact) / math.log(max_distance / exact)
                       * (half - exact)).astype(np.int64)
    far = np.minimum(far, half - 1)
    return np.where(offsets < 0, half, 0) + np.where(distance < exact, distance, far)


@dataclass(frozen=True)
class RelativeBias:
    """A model's learned relative position bias: per bucket and, through the buckets, per distance."""

    model: str
    per_bucket: np.ndarray  # [heads, buckets]
    offsets: np.ndarray  # [2D + 1]: query - key from -D to D
    buckets_of_offsets: np.ndarray  # [2D + 1]
    per_offset: np.ndarray  # [heads, 2D + 1]: the number added to the score of a key at that offset

    def matrix(self, head: int, length: int) -> np.ndarray:
        """The ``[query, key]`` bias this head adds to every layer's scores for ``length`` tokens."""
        places = np.arange(length)
        return self.per_bucket[head, relative_buckets(places[:, None] - places[None, :])]


def relative_bias(name: str, table: np.ndarray, max_offset: int = RELATIVE_MAX_DISTANCE + 16) -> RelativeBias:
    """``table`` ``[buckets, heads]`` (the embedding's weight) spread over offsets -max_offset..max_offset."""
    per_bucket = np.asarray(table, dtype=np.float64).T  # (H, buckets)
    offsets = np.arange(-max_offset, max_offset + 1)
    buckets = relative_buckets(offsets, per_bucket.shape[1])
    return RelativeBias(model=name, per_bucket=per_bucket, offsets=offsets, buckets_of_offsets=buckets,
                        per_offset=per_bucket[:, buckets])


def relative_bias_from_folder(name: str, folder: str | Path) -> RelativeBias:
    """Read the bias straight from the folder's safetensors (no model is built: 32 × heads numbers)."""
    from safetensors import safe_open

    path = Path(folder) / "model.safetensors"
    try:
        with safe_open(str(path), framework="np") as weights:
            key = next((k for k in weights.keys() if k.endswith(RELATIVE_BIAS_TENSOR)), None)
            if key is None:
                raise VizError(f"'{name}' has no learned relative position bias ({RELATIVE_BIAS_TENSOR}).")
            return relative_bias(name, weights.get_tensor(key))
    except (OSError, ValueError) as error:  # safetensors reports a bad file as one of these
        raise VizError(f"The weights of '{name}' in {path} cannot be read: {error}") from error


def relative_bias_of(name: str) -> RelativeBias:
    """The learned relative bias of model ``name`` (a built-in, e.g. all-mpnet-base-v2, or a local folder);
    a VizError saying how to install it when it is a built-in not installed yet."""
    from vizcore.model.catalog import BUILTIN_MODELS

    builtin = BUILTIN_MODELS.get(name)
    folder = builtin.source() if builtin is not None else Path(name).expanduser()
    if not (Path(folder) / "model.safetensors").is_file():
        raise VizError(f"'{name}' has no model.safetensors to read a relative bias from.")
    return relative_bias_from_folder(name, folder)


def model_relative_bias(loaded: LoadedModel) -> np.ndarray | None:
    """A loaded model's relative bias ``[heads, buckets]`` when its architecture has one (MPNet), else None."""
    from vizcore.model import arch as archs

    path = archs.arch_of(loaded.model).extras.get("relative_bias")
    if path is None:
        return None
    return archs.get(loaded.model.base_model, path).weight.detach().double().cpu().numpy().T
