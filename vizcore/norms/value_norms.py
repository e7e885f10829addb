"""Value-weighted attention after Kobayashi et al. (EMNLP 2020), "Attention is Not Only a Weight".

A head's output at query i is ``sum_j alpha_ij f(x_j)`` with ``f(x_j) = (x_j W_V + b_V) W_O`` (the value
vector, with its bias, through the head's own rows of W_O; W_O's bias is shared by the heads and left out).
A large weight on a token whose ``f(x_j)`` is short moves little: ``||alpha_ij f(x_j)||`` says how much
token j really adds to token i in that head. Since ``alpha_ij >= 0`` it is ``alpha_ij ||f(x_j)||``.

Everything comes from one run of the forward core (``vizcore.model.run``) that captures the values
(``Capture(qkv=True)``) and the hidden states; W_O is read per head through ``vizcore.model.arch``, so
every family the core runs (BERT-likes, DistilBERT, GPT-2) is covered. Shapes: ``[layer, head, query, key]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vizcore.attention.head_stats import token_classes
from vizcore.errors import VizError
from vizcore.model import arch as archs
from vizcore.model.loading import LoadedModel
from vizcore.model.run import Capture, run

SINKS = ("cls", "sep", "punctuation")
SINK_LABELS = {"cls": "[CLS]", "sep": "[SEP]", "punctuation": "punctuation"}


@dataclass(frozen=True)
class ValueNorms:
    """One sentence's weights beside what they move. L layers, H heads, T tokens."""

    model: str
    tokens: list[str]
    special_mask: np.ndarray  # bool [T]
    offsets: list[tuple[int, int]]
    segment_ids: np.ndarray  # int [T]
    weights: np.ndarray  # float32 [L, H, T, T]: alpha
    value_norms: np.ndarray  # float32 [L, H, T]: ||f(x_j)|| per key token
    residual_norms: np.ndarray  # float32 [L + 1, T]: ||hidden state||, embeddings first

    @property
    def norms(self) -> np.ndarray:
        """``||alpha_ij f(x_j)||``, float32 ``[L, H, T, T]``."""
        return self.weights * self.value_norms[:, :, None, :]

    def norm_shares(self, layer: int, head: int) -> np.ndarray:
        """One head's norms as a share of their row's total, ``[T, T]``: each row sums to 1, as the weights do."""
        norms = self.weights[layer, head] * self.value_norms[layer, head][None, :]
        return norms / np.maximum(norms.sum(-1, keepdims=True), np.finfo(np.float32).tiny)

    def sink_shares(self) -> dict[str, dict[str, np.ndarray]]:
        """Per layer, the share on [CLS], [SEP] and punctuation, ``{"weights" | "norms": {sink: float64 [L]}}``:
        the sum over that kind of key token, as a share of the row's total, averaged over heads and queries."""
        classes = token_classes(self.tokens, self.special_mask)
        # Row sums by einsum, never a second [L, H, T, T] array (1.5 s -> 0.1 s at 512 tokens)
        totals = np.einsum("lhqk,lhk->lhq", self.weights, self.value_norms)
        totals = np.maximum(totals, np.finfo(np.float32).tiny)
        shares: dict[str, dict[str, np.ndarray]] = {"weights": {}, "norms": {}}
        for sink in SINKS:
            mask = classes[sink].astype(np.float32)
            shares["weights"][sink] = np.einsum("lhqk,k->lhq", self.weights, mask).mean((1, 2), dtype=np.float64)
            moved = np.einsum("lhqk,lhk->lhq", self.weights, self.value_norms * mask)
            shares["norms"][sink] = (moved / totals).mean((1, 2), dtype=np.float64)
        return shares

def output_vectors(values: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``f(x_j)``: each head's values ``[H, T, d_head]`` through its rows of W_O ``[H, d_head, d]`` -> ``[H, T, d]``."""
    return np.einsum("htk,hkd->htd", values, out)


def value_norms(loaded: LoadedModel, text: str, pair: str | None = None) -> ValueNorms:
    """Run the model once on ``text`` (and ``pair``) and weigh every attention weight by what it moves."""
    if archs.arch_of(loaded.model).kind == "encoder-decoder":
        raise VizError(f"'{loaded.name}' is an encoder-decoder: value-weighted attention reads one stack's "
                       "self-attention in one run; use an encoder (BERT, DistilBERT, RoBERTa) or a decoder (GPT-2).")
    record = run(loaded, text, pair, capture=Capture(hidden=True, qkv=True))
    sizes = []
    for layer in range(record.num_layers):
        out = archs.head_weights(loaded.model, layer, loaded.num_heads).out.float().cpu().numpy()
        vectors = output_vectors(record.values[layer], out)  # (H, T, d)
        sizes.append(np.linalg.norm(vectors, axis=-1))
    hidden = record.hidden_states  # (L + 1, T, d)
    return ValueNorms(model=record.model, tokens=record.tokens, special_mask=record.special_mask,
                      offsets=record.offsets, segment_ids=record.segment_ids, weights=record.attention,
                      value_norms=np.stack(sizes).astype(np.float32),
                      residual_norms=np.linalg.norm(hidden, axis=-1).astype(np.float32))


def to_json(result: ValueNorms, digits: int = 8) -> dict:
    """The CLI's record: ``{"model", "tokens", "weights", "norms"}``, both ``[layer][head][query][key]``, with
    ``residual_norms`` ``[state][token]`` (state 0 = the embeddings) and ``sinks`` ``{"weights" | "norms": {"cls" |
    "sep" | "punctuation": [one share per layer]}}``."""
    return {"model": result.model, "tokens": list(result.tokens),
            "weights": np.round(result.weights.astype(np.float64), digits).tolist(),
            "norms": np.round(result.norms.astype(np.float64), digits).tolist(),
            "shape": "[layer][head][query][key]",
            "residual_norms": np.round(result.residual_norms.astype(np.float64), digits).tolist(),
            "sinks": {name: {sink: np.round(v, digits).tolist() for sink, v in shares.items()}
                      for name, shares in result.sink_shares().items()}}
