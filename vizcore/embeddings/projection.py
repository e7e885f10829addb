"""Token vectors from many sentences, projected to 2-D or 3-D; and one head's queries and keys in one space.

* ``token_vectors``: every token's hidden state at one layer (0 = the embedding layer's output), over
  many sentences, whole sentences until ``max_tokens`` (said in ``TokenPoints.total_tokens``).
* ``query_key_vectors``: one head's query and key vectors (the outputs of W_Q and W_K, bias included,
  that head's slice), read with forward hooks that exist only inside ``run.hooks`` (``run.forward``).
* ``pca`` (numpy SVD, signs fixed so reruns agree) and ``umap_projection`` (umap-learn, seeded: the same
  numbers on every run, single-threaded).
* ``joint_space``: AttentionViz's normalisation (Yeh et al. 2023) so that a query lies near the keys it
  attends to. Attention is softmax(q·k / sqrt(d)) over the keys of one sentence, so two changes leave
  every attention weight as it is: adding one vector t to every key adds q·t to all of a query's scores
  (the softmax does not move), and multiplying queries by c and keys by 1/c keeps every q·k. We choose
  c so that queries and keys spread equally around their centres (AttentionViz equalises mean lengths;
  measured from the centres, the scaling cannot pull the centres apart again), then t so that the keys'
  mean equals the queries' mean. Then queries and keys share one cloud instead of two far-apart ones
  (UMAP keeps only near neighbours), and |q - k|^2 = |q|^2 + |k|^2 - 2 q·k is small where q·k is large.
  The translation has a price, measured by ``distance_agreement`` (ideally -1): for one query, its
  distances to the keys then follow |k - mean k|^2 / c^2 - 2 (q - mean q)·k, the part of its scores
  that differs between queries; the part every query shares, (mean q)·k (e.g. "everyone looks at
  [SEP]"), no longer shows as distance.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from vizcore.embeddings.vectors import _accepts_token_types, _batch
from vizcore.errors import VizError
from vizcore.model import arch as archs
from vizcore.model.loading import LoadedModel
from vizcore.model.run import Hook, check_text, forward

MAX_TOKENS = 2_000  # points in one projection: UMAP stays within seconds, the browser draws them smoothly
MAX_TEXTS = 1_000
BATCH = 32
METHODS = {"pca": "PCA", "umap": "UMAP"}
UMAP_NEIGHBOURS, UMAP_MIN_DIST = 15, 0.1
UMAP_EPOCHS = 200  # umap-learn's own choice for large data; its 500 for small data doubles the wait (measured)


@dataclass(frozen=True)
class TokenPoints:
    """What each point is: ``(N,)`` per-token facts, in sentence order."""

    texts: tuple[str, ...]  # the sentences used (the first ones, up to the token cap)
    tokens: tuple[str, ...]
    words: tuple[str, ...]  # the whole word each piece belongs to, lower case ("[CLS]" for specials)
    sentence: np.ndarray  # (N,) int: index into ``texts``
    position: np.ndarray  # (N,) int: token position in its sentence (0 = the first token, [CLS])
    special: np.ndarray  # (N,) bool
    total_texts: int  # sentences given
    total_tokens: int  # tokens the given sentences have (with the same special-token choice)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def capped(self) -> bool:
        return len(self.texts) < self.total_texts


@dataclass(frozen=True)
class TokenCloud:
    points: TokenPoints
    vectors: np.ndarray  # (N, D) float32
    state: int  # hidden state: 0 = embeddings, i = output of layer i


@dataclass(frozen=True)
class QueryKeyCloud:
    points: TokenPoints
    queries: np.ndarray  # (N, d_head) float32
    keys: np.ndarray  # (N, d_head) float32
    layer: int  # 0-based
    head: int  # 0-based


@dataclass(frozen=True)
class Projection:
    coords: np.ndarray  # (N, dims) float32
    method: str  # "pca" | "umap"
    explained: np.ndarray | None  # PCA: (dims,) share of the variance along each axis


@dataclass(frozen=True)
class JointSpace:
    queries: np.ndarray  # (N, d) scaled queries
    keys: np.ndarray  # (N, d) translated and scaled keys
    translation: np.ndarray  # (d,) added to every key (after scaling)
    scale: float  # queries x scale, keys / scale


@dataclass(frozen=True)
class JointProjection:
    """Queries and keys of one head projected together: rows ``0..N-1`` are queries, ``N..2N-1`` keys."""

    projection: Projection  # (2N, dims)
    normalised: bool  # AttentionViz's translation and scaling applied before projecting
    scale: float  # the scaling c (1 when not normalised)
    agreement: dict[str, float]  # distance_agreement: "raw", "normalised" (head dimensions) and "shown"


# ---- the sentences and their tokens ------------------------------------------------------------------

def _check_texts(texts: Sequence[str]) -> tuple[str, ...]:
    texts = tuple(t.strip() for t in texts if t and t.strip())
    if not texts:
        raise VizError("There are no sentences: give at least one, one per line.")
    if len(texts) > MAX_TEXTS:
        raise VizError(f"{len(texts):,} sentences is more than {MAX_TEXTS:,}: use fewer.")
    for number, text in enumerate(texts, start=1):
        check_text(text, f"sentence {number}")
    return texts


def spread(texts: Sequence[str], count: int) -> tuple[str, ...]:
    """``count`` texts taken evenly from first to last (a collection written in topic blocks keeps them all)."""
    if count >= len(texts):
        return tuple(texts)
    return tuple(texts[int(i)] for i in np.linspace(0, len(texts) - 1, max(count, 1)).round())


def _word_texts(text: str, word_ids: list[int | None], offsets: list[tuple[int, int]], tokens: list[str]) -> list[str]:
    """Each token's whole word: the text from its word's first piece to its last, lower case."""
    spans: dict[int, tuple[int, int]] = {}
    for word, (a, b) in zip(word_ids, offsets):
        if word is not None:
            start, end = spans.get(word, (a, b))
            spans[word] = (min(start, a), max(end, b))
    return [token if word is None else text[slice(*spans[word])].lower() for word, token in zip(word_ids, tokens)]


def tokenize_texts(loaded: LoadedModel, texts: Sequence[str], max_tokens: int = MAX_TOKENS,
                   special: bool = False) -> tuple[TokenPoints, list[list[int]], list[np.ndarray]]:
    """Whole sentences, in order, while their kept tokens fit in ``max_tokens``: the points, each used
    sentence's token ids, and the positions kept in each (special tokens dropped unless ``special``)."""
    texts = _check_texts(texts)
    if not loaded.tokenizer.is_fast:
        raise VizError(f"'{loaded.name}' has no fast tokenizer, which this view needs to group pieces into words.")
    encoding = loaded.tokenizer(list(texts), truncation=True, max_length=loaded.max_length, verbose=False,
                                return_offsets_mapping=True, return_special_tokens_mask=True)
    kept = [np.flatnonzero(special | ~np.asarray(m, dtype=bool)) for m in encoding["special_tokens_mask"]]
    sizes = np.array([len(k) for k in kept])
    used = max(1, int(np.searchsorted(np.cumsum(sizes), max_tokens, side="right")))
    columns: dict[str, list] = {name: [] for name in ("tokens", "words", "sentence", "position", "special")}
    for i in range(used):
        tokens = encoding.tokens(i)
        words = _word_texts(texts[i], encoding.word_ids(i), encoding["offset_mapping"][i], tokens)
        marks = encoding["special_tokens_mask"][i]
        for p in kept[i]:
            for name, value in zip(columns, (tokens[p], words[p], i, p, bool(marks[p]))):
                columns[name].append(value)
    points = TokenPoints(texts=texts[:used], tokens=tuple(columns["tokens"]), words=tuple(columns["words"]),
                         sentence=np.asarray(columns["sentence"], dtype=np.int64),
                         position=np.asarray(columns["position"], dtype=np.int64),
                         special=np.asarray(columns["special"], dtype=bool), total_texts=len(texts),
                         total_tokens=int(sizes.sum()))
    return points, encoding["input_ids"][:used], kept[:used]


def _batches(loaded: LoadedModel, ids: list[list[int]], kept: list[np.ndarray],
             run_batch: Callable[[dict[str, torch.Tensor]], list[torch.Tensor]]) -> list[np.ndarray]:
    """Run ``run_batch`` on padded batches; each of its (B, T, ...) outputs, kept positions only, stacked
    over every sentence in order: a list of (N, ...) float32 arrays."""
    accepts_types, parts = _accepts_token_types(loaded), []
    for start in range(0, len(ids), BATCH):
        outputs = run_batch(_batch(loaded, ids[start: start + BATCH], accepts_types))
        parts.append([torch.cat([out[b, torch.as_tensor(kept[start + b])] for b in range(out.shape[0])])
                      .float().cpu().numpy() for out in outputs])
    return [np.concatenate(column) for column in zip(*parts)]


# ---- what is read from the model --------------------------------------------------------------------

def token_vectors(loaded: LoadedModel, texts: Sequence[str], state: int, max_tokens: int = MAX_TOKENS,
                  special: bool = False) -> TokenCloud:
    """Hidden state ``state`` (0 = embeddings, i = output of layer i) of every kept token: ``(N, D)``."""
    if not 0 <= state <= loaded.num_layers:
        raise VizError(f"Layer {state} does not exist: 0 (embeddings) to {loaded.num_layers}.")
    points, ids, kept = tokenize_texts(loaded, texts, max_tokens, special)

    def run_batch(inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        return [forward(loaded, inputs, hidden=True, attention=False, base_only=True).hidden_states[state]]

    (vectors,) = _batches(loaded, ids, kept, run_batch)
    return TokenCloud(points, vectors, state)


def _query_key_hooks(loaded: LoadedModel, layer: int, read: dict[str, torch.Tensor]) -> list[Hook]:
    """Hooks that keep layer ``layer``'s projected queries and keys, ``(B, T, H * d_head)``, in ``read``."""
    attn = archs.arch_of(loaded.model)
    attn = attn.stacks[attn.main_stack].self_attention
    block = archs.blocks(loaded.model)[layer]

    def keep(name: str, part: int | None) -> Callable:
        def hook(module, inputs, output):
            read[name] = (output if part is None else output.chunk(3, dim=-1)[part]).detach()
        return hook

    if attn.qkv is not None:  # GPT-2's fused c_attn: queries, keys, values side by side
        return [(archs.get(block, attn.qkv), "post", keep(n, i)) for i, n in enumerate(("queries", "keys"))]
    return [(archs.get(block, path), "post", keep(name, None))
            for name, path in (("queries", attn.query), ("keys", attn.key))]


def query_key_vectors(loaded: LoadedModel, texts: Sequence[str], layer: int, head: int,
                      max_tokens: int = MAX_TOKENS, special: bool = True) -> QueryKeyCloud:
    """Head ``head`` of layer ``layer`` (0-based): its query and key vector at every kept token."""
    if not (0 <= layer < loaded.num_layers and 0 <= head < loaded.num_heads):
        raise VizError(f"Layer {layer + 1}, head {head + 1} does not exist: the model has {loaded.num_layers} layers x "
                       f"{loaded.num_heads} heads (1-based).")
    points, ids, kept = tokenize_texts(loaded, texts, max_tokens, special)

    def run_batch(inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        read: dict[str, torch.Tensor] = {}
        forward(loaded, inputs, _query_key_hooks(loaded, layer, read), hidden=False, attention=False, base_only=True)
        return [read[n].reshape(*read[n].shape[:2], loaded.num_heads, -1)[:, :, head] for n in ("queries", "keys")]

    queries, keys = _batches(loaded, ids, kept, run_batch)
    return QueryKeyCloud(points, queries, keys, layer, head)


# ---- projections ------------------------------------------------------------------------------------

def _check_points(points: np.ndarray, dims: int, least: int) -> np.ndarray:
    if dims not in (2, 3):
        raise VizError(f"Project to 2 or 3 dimensions, not {dims}.")
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or len(points) < least:
        raise VizError(f"A projection needs at least {least} points; there are {len(points)}: add sentences.")
    return points


def pca(points: np.ndarray, dims: int = 2) -> Projection:
    """The first ``dims`` principal components of ``points`` (N, D): coordinates (N, dims) and each axis's
    share of the total variance. Each axis points so that its largest loading is positive."""
    centred = _check_points(points, dims, 2)
    centred = centred - centred.mean(0, keepdims=True)
    _, singular, axes = np.linalg.svd(centred, full_matrices=False)
    axes = axes[:dims]
    axes = axes * np.sign(axes[np.arange(len(axes)), np.abs(axes).argmax(1)])[:, None]
    variance = singular ** 2
    coords = centred @ axes.T
    if coords.shape[1] < dims:  # fewer points or dimensions than axes: the rest are flat
        coords = np.pad(coords, ((0, 0), (0, dims - coords.shape[1])))
    explained = np.zeros(dims)
    explained[: min(dims, len(variance))] = variance[:dims] / max(variance.sum(), 1e-30)
    return Projection(coords.astype(np.float32), "pca", explained)


def umap_projection(points: np.ndarray, dims: int = 2, seed: int = 0, neighbours: int = UMAP_NEIGHBOURS,
                    min_dist: float = UMAP_MIN_DIST) -> Projection:
    """UMAP (McInnes et al. 2018) to ``dims``; seeded and single-threaded, so every run gives the same numbers.

    Equal vectors (a word at the same position at the embedding layer, every sentence's [CLS] query in
    a low layer) are laid out once and share their point: with repeated rows umap-learn 0.5 gives a
    different layout on each run, seed or not (measured). The first call in a process compiles
    umap-learn's numba code (tens of seconds on 2 cores)."""
    points = _check_points(points, dims, 2)
    distinct, where = np.unique(points.astype(np.float32), axis=0, return_inverse=True)
    if len(distinct) < dims + 3:
        raise VizError(f"UMAP needs at least {dims + 3} different vectors; there are {len(distinct)}: add sentences.")
    import umap  # 3-20 s to import (numba): only when asked for

    init = "spectral" if len(distinct) > dims + 8 else "random"  # too few points for a spectral start
    k = min(neighbours, len(distinct) - 1)
    with warnings.catch_warnings():  # "transform will be unavailable": nothing here transforms new points
        warnings.filterwarnings("ignore", message=r"precomputed_knn\[2\]", category=UserWarning)
        reducer = umap.UMAP(n_components=dims, n_neighbors=k, min_dist=min_dist, n_epochs=UMAP_EPOCHS,
                            random_state=seed, n_jobs=1, init=init, precomputed_knn=exact_neighbours(distinct, k))
        return Projection(reducer.fit_transform(distinct)[where.ravel()].astype(np.float32), "umap", None)


def exact_neighbours(points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, None]:
    """Each point's ``k`` nearest points (itself first) and their distances, for umap-learn's ``precomputed_knn``:
    what umap-learn computes itself for fewer than 4,096 points (its own euclidean distance between every pair, a
    stable sort of each row), so the layout is the same to the bit (measured on 300 random points when this was
    written; tests/unit/test_embeddings_projection.py checks the neighbours against loops).
    Its own sort is numba code compiled for parallel loops at the first call of a process, about half of a first
    UMAP's wait (profiled), for a sort numpy does at once."""
    from sklearn.metrics import pairwise_distances
    from umap.distances import named_distances

    distances = pairwise_distances(points, metric=named_distances["euclidean"])
    order = np.argsort(distances, axis=1, kind="mergesort")[:, :k].astype(np.int32)
    return order, np.take_along_axis(distances, order, axis=1), None


def project(points: np.ndarray, method: str, dims: int, seed: int = 0) -> Projection:
    if method == "pca":
        return pca(points, dims)
    if method == "umap":
        return umap_projection(points, dims, seed)
    raise VizError(f"Unknown projection '{method}': choose {' or '.join(METHODS)}.")


# ---- AttentionViz's joint query-key space -----------------------------------------------------------

def joint_space(queries: np.ndarray, keys: np.ndarray) -> JointSpace:
    """Scale queries by c and keys by 1/c so both spread equally around their centres (c^2 = mean |k - mean k|
    / mean |q - mean q|), then translate the keys so their mean is the queries' mean: no attention weight
    changes (see the module's docstring). Scaling first keeps the two centres together."""
    q, k = np.asarray(queries, dtype=np.float64), np.asarray(keys, dtype=np.float64)
    q_spread = np.linalg.norm(q - q.mean(0), axis=1).mean()
    k_spread = np.linalg.norm(k - k.mean(0), axis=1).mean()
    scale = float(np.sqrt(k_spread / q_spread)) if q_spread > 0 and k_spread > 0 else 1.0
    q, k = q * scale, k / scale
    translation = q.mean(0) - k.mean(0)
    return JointSpace(q.astype(np.float32), (k + translation).astype(np.float32), translation.astype(np.float32),
                      scale)


def distance_agreement(queries: np.ndarray, keys: np.ndarray, sentence: np.ndarray) -> float:
    """How well distance ranks keys as attention does: for each query, the Pearson correlation between
    its scores q·k and its distances |q - k| to the keys of its own sentence (the keys its softmax
    compares), averaged over the queries. -1: the nearest key is always the most attended."""
    found = []
    for s in np.unique(sentence):
        q, k = queries[sentence == s].astype(np.float64), keys[sentence == s].astype(np.float64)
        if len(k) < 2:
            continue
        dots = q @ k.T  # (n, n): one row per query
        dists = np.linalg.norm(q[:, None] - k[None], axis=-1)
        a, b = dots - dots.mean(1, keepdims=True), dists - dists.mean(1, keepdims=True)
        spread = np.sqrt((a * a).sum(1) * (b * b).sum(1))
        found.append((a * b).sum(1)[spread > 0] / spread[spread > 0])
    rows = np.concatenate(found) if found else np.zeros(0)
    return float(rows.mean()) if rows.size else 0.0


def project_queries_keys(cloud: QueryKeyCloud, method: str, dims: int, normalise: bool = True,
                         seed: int = 0) -> JointProjection:
    """Queries and keys in one projection (AttentionViz), with ``joint_space`` first when ``normalise``; how
    well distance follows q·k in the head's dimensions, with and without it, and in the projection."""
    space = joint_space(cloud.queries, cloud.keys)
    queries, keys = (space.queries, space.keys) if normalise else (cloud.queries, cloud.keys)
    projection = project(np.concatenate([queries, keys]), method, dims, seed)
    n, sentence = len(cloud.points), cloud.points.sentence
    agreement = {"raw": distance_agreement(cloud.queries, cloud.keys, sentence),
                 "normalised": distance_agreement(space.queries, space.keys, sentence),
                 "shown": distance_agreement(projection.coords[:n], projection.coords[n:], sentence)}
    return JointProjection(projection, normalise, space.scale if normalise else 1.0, agreement)
