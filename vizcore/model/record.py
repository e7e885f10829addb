"""The record of one forward pass: plain numpy and Python, no torch.

Kept apart from ``vizcore.model.run`` (which needs torch and transformers) so the app can show a
cached run before those seconds-long imports have finished.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vizcore.model.contract import check_attention


@dataclass(frozen=True)
class Run:
    """Everything one forward pass tells. T = tokens after truncation, L layers, H heads, d hidden.

    Always present: the input (tokens, offsets, masks, segments) and ``attention``. What else is
    there depends on what the run captured (``vizcore.model.run.Capture``); absent means None.
    """

    model: str
    text: str
    pair: str | None
    tokens: list[str]
    offsets: list[tuple[int, int]]  # char spans into text (segment A) or pair (segment B); (0, 0) for specials
    special_mask: np.ndarray  # bool [T]
    segment_ids: np.ndarray  # int [T]: 0 = A, 1 = B
    attention: np.ndarray  # float32 [layer, head, query, key]; each row sums to 1
    truncated: bool
    num_input_tokens: int  # tokens the full input would have had, before truncation
    input_ids: np.ndarray | None = None  # int [T]
    hidden_states: np.ndarray | None = None  # float32 [L + 1, T, d]: the embeddings, then each layer's output
    queries: np.ndarray | None = None  # float32 [L, H, T, d_head]
    keys: np.ndarray | None = None
    values: np.ndarray | None = None
    head_outputs: np.ndarray | None = None  # float32 [L, H, T, d_head]: softmax(QKᵀ) V per head, before W_O
    neurons: np.ndarray | None = None  # float32 [L, T, d_ff]: the feed-forward activations act(x W_1 + b_1)
    logits: np.ndarray | None = None  # float32 [T, vocab] when the model has an LM head
    next_sentence_logits: np.ndarray | None = None  # float32 [2] (IsNext, NotNext) with BERT's NSP head

    def __post_init__(self) -> None:
        check_attention(self.attention, num_tokens=len(self.tokens))

    @property
    def num_layers(self) -> int:
        return int(self.attention.shape[0])

    @property
    def num_heads(self) -> int:
        return int(self.attention.shape[1])

    def to_dict(self, include_attention: bool = True) -> dict:
        data = {
            "model": self.model,
            "text": self.text,
            "pair": self.pair,
            "tokens": list(self.tokens),
            "offsets": [list(span) for span in self.offsets],
            "special_mask": self.special_mask.astype(bool).tolist(),
            "segment_ids": self.segment_ids.astype(int).tolist(),
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "num_tokens": len(self.tokens),
            "num_input_tokens": self.num_input_tokens,
            "truncated": self.truncated,
            "shape": "[layer][head][query][key]",
        }
        if include_attention:  # 8 decimals (error <= 5e-9) keeps a 512-token export half the size
            data["attention"] = np.round(self.attention.astype(np.float64), 8).tolist()
        return data
