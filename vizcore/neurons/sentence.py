"""One sentence's feed-forward neurons: every layer's activations from the one forward core, the strongest
neurons, one neuron over the tokens, and the non-negative factors of a layer (or of all layers).

Layers, neurons and positions are 0-based here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vizcore.errors import VizError
from vizcore.model.record import Run
from vizcore.neurons.nmf import ITERATIONS, nmf


@dataclass(frozen=True)
class SentenceNeurons:
    model: str
    tokens: list[str]
    special: np.ndarray  # bool [T]
    activations: np.ndarray  # float32 [L, T, d_ff]
    truncated: bool

    @property
    def num_layers(self) -> int:
        return int(self.activations.shape[0])

    @property
    def width(self) -> int:
        """d_ff: the neurons of one layer."""
        return int(self.activations.shape[2])


def sentence_neurons(loaded, text: str, pair: str | None = None) -> SentenceNeurons:
    """One forward pass (``vizcore.model.run``) with the feed-forward activations captured."""
    from vizcore.model.run import Capture, run

    return from_run(run(loaded, text, pair, capture=Capture(hidden=False, neurons=True)))


def from_run(record: Run) -> SentenceNeurons:
    if record.neurons is None:
        raise VizError("This run did not capture the feed-forward neurons (Capture(neurons=True)).")
    return SentenceNeurons(record.model, list(record.tokens), np.asarray(record.special_mask, dtype=bool),
                           record.neurons, record.truncated)


def check_neuron(s: SentenceNeurons, layer: int, neuron: int | None = None) -> None:
    """VizError (1-based in the message, as flags and the app count) unless the layer and neuron exist."""
    if not 0 <= layer < s.num_layers:
        raise VizError(f"Layer {layer + 1} does not exist: '{s.model}' has {s.num_layers} layers (counted from 1).")
    if neuron is not None and not 0 <= neuron < s.width:
        raise VizError(f"Neuron {neuron + 1} does not exist: each layer of '{s.model}' has {s.width} feed-forward "
                       "neurons (counted from 1).")


def neuron_over_tokens(s: SentenceNeurons, layer: int, neuron: int) -> np.ndarray:
    """float32 ``[T]``: neuron ``neuron`` of layer ``layer`` at every token (special tokens included)."""
    check_neuron(s, layer, neuron)
    return s.activations[layer, :, neuron]


def strongest(s: SentenceNeurons, top: int = 10, layer: int | None = None) -> list[dict]:
    """The ``top`` largest activations at the sentence's non-special tokens (of ``layer``, or of every layer):
    records ``{"layer", "neuron", "position", "token", "activation"}``, largest first (0-based)."""
    if layer is not None:
        check_neuron(s, layer)
    acts = s.activations if layer is None else s.activations[layer:layer + 1]
    acts = np.where(s.special[None, :, None], -np.inf, acts)  # (L', T, d_ff)
    flat = np.argsort(-acts, axis=None, kind="stable")[:top]
    records = []
    for index in flat:
        l, t, n = np.unravel_index(index, acts.shape)
        if not np.isfinite(acts[l, t, n]):
            break
        records.append({"layer": int(l) + (layer or 0), "neuron": int(n), "position": int(t),
                        "token": s.tokens[t], "activation": float(acts[l, t, n])})
    return records


@dataclass(frozen=True)
class SentenceFactors:
    tokens: list[str]  # the tokens factorised
    positions: list[int]  # their positions in the sentence
    layer: int | None  # None: every layer's neurons side by side
    strengths: np.ndarray  # float64 [F, T']: each factor at each token, as Ecco draws it
    top_neurons: list[list[dict]]  # per factor, its largest loadings: {"layer", "neuron", "weight"}
    relative_error: float  # ||A - W H||_F / ||A||_F
    errors: np.ndarray  # after each update


def sentence_factors(s: SentenceNeurons, factors: int, layer: int | None = None, special: bool = False,
                     iterations: int = ITERATIONS, seed: int = 0, neurons_per_factor: int = 5) -> SentenceFactors:
    """NMF (``vizcore.neurons.nmf``) of the tokens x neurons matrix of ``layer`` (None: all layers), clipped at 0.

    Special tokens are left out unless ``special``: [CLS] and [SEP] carry activations far larger than the words'
    in this family of models, and would take the factors for themselves."""
    if layer is not None:
        check_neuron(s, layer)
    keep = [t for t in range(len(s.tokens)) if special or not s.special[t]]
    if not keep:
        raise VizError("The sentence has no tokens besides the special ones: type some words.")
    acts = s.activations if layer is None else s.activations[layer:layer + 1]  # (L', T, d_ff)
    matrix = np.maximum(acts[:, keep], 0).transpose(1, 0, 2).reshape(len(keep), -1)  # (T', L' * d_ff)
    if factors > len(keep):
        raise VizError(f"{factors} factors for {len(keep)} tokens: choose at most one factor per token.")
    result = nmf(matrix, factors, iterations, seed)
    tops = []
    for component in result.components:
        best = np.argsort(-component, kind="stable")[:neurons_per_factor]
        tops.append([{"layer": int(i // s.width) + (layer or 0), "neuron": int(i % s.width),
                      "weight": float(component[i])} for i in best])
    norm = float(np.linalg.norm(matrix))
    return SentenceFactors([s.tokens[t] for t in keep], keep, layer, result.strengths.T, tops,
                           float(result.errors[-1] / norm) if norm else 0.0, result.errors)
