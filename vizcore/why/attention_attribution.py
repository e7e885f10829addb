"""Attention attribution (Hao, Dong, Wei & Xu, "Self-Attention Attribution", AAAI 2021).

Integrated gradients over the attention probabilities instead of the input. For layer ``l`` with
attention ``A`` ``[H, T, T]`` (every head), ``F(αA)`` is the output explained (the masked-LM answer's
probability at the mask, or a fine-tuned classifier's class probability: the targets of
``vizcore.why.attribution``) when layer ``l``'s probabilities are replaced by ``αA`` (the other layers
compute theirs as usual, as in the paper's code), and

    Attr(A) = A ⊙ ∫_0^1 ∂F(αA)/∂A dα  ≈  A ⊙ (1/m) Σ_k ∂F(α_k A)/∂A,   α_k = (k − ½)/m

(the midpoint Riemann sum; the paper writes the right one, α_k = k/m, which is first-order only).
Completeness: ``Σ_{h,q,k} Attr = F(A) − F(0·A)`` for each layer, up to the sum's error, reported as
``gap``. The probabilities are changed through ``vizcore.model.run.attention_edit``.

* heads are ranked by the maximum of their attribution over (query, key), the paper's I_h;
* the attribution tree (the paper's Section 4.3): per layer, the attributions summed over heads,
  ``[T, T]`` (query, key); edges at or above ``threshold`` x that layer's maximum are kept; from the
  positions F reads at the top (the mask; a classifier's [CLS], or every token it mean-pools), layer
  by layer down, an edge is added when its query is already in the tree (a token is in the tree at a
  layer when it is at the layer above: the residual carries it), and its key joins the tree. Edges
  from a token to itself are left out (the residual already carries it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vizcore.errors import VizError
from vizcore.finetune.training import FinetuneResult
from vizcore.model.loading import LoadedModel
from vizcore.model.run import attention_edit
from vizcore.why.attribution import MAX_STEPS, Target, answer_target, batch_rows, class_target

DEFAULT_STEPS = 20  # the fewest of 5, 10, 20, 50 with every layer's gap under 1 % on the examples (docs/WHY.md)
DEFAULT_THRESHOLD = 0.4  # the paper's τ for the tree, a fraction of each layer's largest edge


@dataclass(frozen=True)
class Edge:
    layer: int
    query: int  # the token that reads (in the tree at layer + 1)
    key: int  # the token read from (joins the tree at layer)
    score: float  # the attribution summed over heads
    share: float  # score / the layer's largest summed attribution


@dataclass(frozen=True)
class AttentionAttribution:
    model: str
    tokens: list[str]
    answer: str  # the answer word, or the class name
    mask_index: int | None  # None for a classifier
    roots: tuple[int, ...]  # the positions F reads: where the tree starts
    steps: int
    attention: np.ndarray  # float32 [L, H, T, T]
    attributions: np.ndarray  # float32 [L, H, T, T]
    f_input: float  # F(A): the answer's probability
    f_zero: np.ndarray  # float64 [L]: F with layer l's attention all 0

    @property
    def head_scores(self) -> np.ndarray:
        """[L, H]: each head's largest attribution (the paper's importance I_h)."""
        return self.attributions.max(axis=(2, 3))

    @property
    def layer_sums(self) -> np.ndarray:
        """[L]: the attributions of every head of a layer, summed; completeness says ``f_input - f_zero``."""
        return self.attributions.astype(np.float64).sum(axis=(1, 2, 3))

    @property
    def gaps(self) -> np.ndarray:
        """[L]: |sum − (F(A) − F(0))| / |F(A) − F(0)| per layer (inf where the difference is 0)."""
        delta = self.f_input - self.f_zero
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(delta != 0, np.abs(self.layer_sums - delta) / np.abs(delta), np.inf)

    @property
    def layers(self) -> list[int]:
        """The layers attributed (the others are 0)."""
        return [int(i) for i in np.flatnonzero(np.isfinite(self.f_zero))]

    def ranked_heads(self) -> list[tuple[int, int, float]]:
        """(layer, head, score), strongest first."""
        scores = self.head_scores
        order = np.argsort(-scores, axis=None, kind="stable")
        return [(int(i // scores.shape[1]), int(i % scores.shape[1]), float(scores.flat[i])) for i in order
                if int(i // scores.shape[1]) in self.layers]

    def tree(self, threshold: float = DEFAULT_THRESHOLD) -> list[Edge]:
        return attribution_tree(self.attributions, self.roots, threshold)

    def to_dict(self, threshold: float = DEFAULT_THRESHOLD) -> dict:
        delta = self.f_input - self.f_zero
        return {"model": self.model, "tokens": list(self.tokens), "target": {"token": self.answer,
                "score": self.f_input}, "mask_index": self.mask_index, "roots": list(self.roots), "steps": self.steps,
                "attributions": self.attributions.tolist(), "head_scores": self.head_scores.tolist(),
                "heads_ranked": [{"layer": layer, "head": head, "score": score}
                                 for layer, head, score in self.ranked_heads()],
                "completeness": [{"layer": layer, "sum": float(self.layer_sums[layer]), "delta": float(delta[layer]),
                                  "f_zero": float(self.f_zero[layer]),
                                  "gap": float(self.gaps[layer]) if np.isfinite(self.gaps[layer]) else None}
                                 for layer in self.layers],
                "tree": {"threshold": threshold, "edges": [e.__dict__ for e in self.tree(threshold)]}}


def check_steps(steps: int) -> int:
    if not 1 <= steps <= MAX_STEPS:
        raise VizError(f"The number of steps must be between 1 and {MAX_STEPS:,}; got {steps:,}.")
    return int(steps)


def check_threshold(threshold: float) -> float:
    if not 0.0 < threshold <= 1.0:
        raise VizError(f"The tree's threshold is a fraction of each layer's largest edge, above 0 and at most 1; "
                       f"got {threshold}.")
    return float(threshold)


def attribution_tree(attributions: np.ndarray, roots: int | tuple[int, ...],
                     threshold: float = DEFAULT_THRESHOLD) -> list[Edge]:
    """The tree of the strongest edges from ``roots`` at the top down to the input, top layer first
    (``attributions`` ``[L, H, T, T]``; see the module's docstring)."""
    check_threshold(threshold)
    summed = attributions.astype(np.float64).sum(axis=1)  # (L, T, T) [layer, query, key]
    edges, reached = [], {roots} if isinstance(roots, int) else set(roots)
    for layer in range(summed.shape[0] - 1, -1, -1):
        top = summed[layer].max()
        if top <= 0:
            continue
        keys = set()
        for query in sorted(reached):
            for key in np.flatnonzero(summed[layer, query] >= threshold * top):
                if key != query:
                    edges.append(Edge(layer, query, int(key), float(summed[layer, query, key]),
                                      float(summed[layer, query, key] / top)))
                    keys.add(int(key))
        reached |= keys
    return edges


def _probability(target: Target, encoder: torch.nn.Module, rows: int, grad: bool = False,
                 edit=None) -> torch.Tensor:
    """F per row, (rows,), of ``rows`` copies of the target's input, with ``edit`` changing attention."""
    inputs = {name: value.expand(rows, -1) for name, value in target.inputs.items()}
    if edit is None:
        return target.probability(inputs, [target.readout[0]] * rows, grad)
    with attention_edit(encoder, edit):
        return target.probability(inputs, [target.readout[0]] * rows, grad)


def _layer(target: Target, encoder: torch.nn.Module, layer: int, weights: torch.Tensor,
           steps: int) -> tuple[np.ndarray, float]:
    """(Attr [H, T, T] of one layer, F with that layer's attention all 0), ``weights`` (H, T, T)."""
    alphas = (torch.arange(steps, dtype=weights.dtype) + 0.5) / steps
    total = torch.zeros_like(weights)
    size = batch_rows(target.num_tokens, steps)
    for start in range(0, steps, size):
        scaled = (alphas[start:start + size, None, None, None] * weights).requires_grad_(True)  # (B, H, T, T)
        f = _probability(target, encoder, len(scaled), grad=True,
                         edit=lambda i, w, s=scaled: s.to(w.dtype) if i == layer else w)
        (grad,) = torch.autograd.grad(f.sum(), scaled)
        total += grad.sum(0)
    zero = _probability(target, encoder, 1, edit=lambda i, w: w * 0 if i == layer else w)
    return (weights * total / steps).float().cpu().numpy(), float(zero[0])


def attribute_attention(target: Target, encoder: torch.nn.Module, model: str, steps: int = DEFAULT_STEPS,
                        layers: list[int] | None = None) -> AttentionAttribution:
    """Attention attribution of every head of ``layers`` (None: all; 0-based; the others stay 0) of
    ``encoder`` (the model whose attention ``target`` runs through) for ``target``'s output."""
    steps = check_steps(steps)
    attention = torch.stack([a[0] for a in target.attention(target.inputs)]).detach()  # (L, H, T, T)
    count = attention.shape[0]
    chosen = list(range(count)) if layers is None else layers
    if any(not 0 <= layer < count for layer in chosen):
        raise VizError(f"Layers are 1 to {count} for this model.")
    attributions = np.zeros(tuple(attention.shape), dtype=np.float32)
    f_zero = np.full(count, np.nan)
    for layer in chosen:
        attributions[layer], f_zero[layer] = _layer(target, encoder, layer, attention[layer], steps)
    f_input = float(_probability(target, encoder, 1)[0])
    return AttentionAttribution(model=model, tokens=list(target.tokens), answer=target.token,
                                mask_index=target.mask_index, roots=tuple(target.readout), steps=steps,
                                attention=attention.float().cpu().numpy(), attributions=attributions,
                                f_input=f_input, f_zero=f_zero)


def attention_attribution(loaded: LoadedModel, text: str, answer: str | None = None, steps: int = DEFAULT_STEPS,
                          layers: list[int] | None = None) -> AttentionAttribution:
    """For the probability of ``answer`` (default: the model's top prediction) at the first mask of ``text``."""
    steps = check_steps(steps)
    return attribute_attention(answer_target(loaded, text, answer), loaded.model, loaded.name, steps, layers)


def class_attention_attribution(result: FinetuneResult, text: str, label: int | None = None,
                                steps: int = DEFAULT_STEPS) -> AttentionAttribution:
    """For the fine-tuned classifier's probability of class ``label`` (default: its prediction) for ``text``."""
    steps = check_steps(steps)
    return attribute_attention(class_target(result, text, label), result.classifier.encoder,
                               result.model_name, steps)
