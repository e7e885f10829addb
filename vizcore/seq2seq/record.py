"""The record of one encoder-decoder pass: plain numpy and Python, no torch.

Every encoder-decoder the app shows (the date translator trained here, a hub T5 / BART / Marian)
produces this one record, so the page, the figures and the CLI never ask which model it was.

Rows of ``decoder`` and ``cross`` are the decoder's positions. Position i reads ``decoder_tokens[i]``
(the start token, then the outputs so far) and predicts ``output_tokens[i]``; so row i of ``cross``
is where the model looked while writing output i. The end-of-sequence token is not an output row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vizcore.errors import VizError


@dataclass(frozen=True)
class Seq2SeqRun:
    """One pass. I = input tokens, O = output tokens, Le / Ld encoder / decoder layers, H heads."""

    model: str
    text: str
    input_tokens: list[str]  # [I] what the encoder read (words for the date translator, pieces for hub models)
    decoder_tokens: list[str]  # [O] what the decoder read: the start token, then output_tokens[:-1]
    output_tokens: list[str]  # [O] what the decoder wrote
    encoder: np.ndarray  # float32 [Le, H, I, I] encoder self-attention
    decoder: np.ndarray  # float32 [Ld, H, O, O] decoder masked self-attention (zero above the diagonal)
    cross: np.ndarray  # float32 [Ld, H, O, I] cross-attention: decoder queries, encoder keys / values
    gold: np.ndarray | None = None  # bool [O, I]: output j is aligned with input word i (known tasks only)

    def __post_init__(self) -> None:
        i, o = len(self.input_tokens), len(self.output_tokens)
        if len(self.decoder_tokens) != o:
            raise VizError(f"{len(self.decoder_tokens)} decoder tokens for {o} outputs: they must match.")
        for name, array, tail in (("encoder", self.encoder, (i, i)), ("decoder", self.decoder, (o, o)),
                                  ("cross", self.cross, (o, i))):
            if array.ndim != 4 or array.shape[2:] != tail:
                raise VizError(f"{name} attention has shape {array.shape}; "
                               f"expected [layer, head, {tail[0]}, {tail[1]}].")
        if self.gold is not None and self.gold.shape != (o, i):
            raise VizError(f"The gold alignment has shape {self.gold.shape}; expected ({o}, {i}).")

    @property
    def output(self) -> str:
        return "".join(self.output_tokens)

    def to_dict(self) -> dict:
        """JSON-ready; attention as nested lists [layer][head][row][column], 0-based."""
        return {"model": self.model, "text": self.text, "output": self.output,
                "input_tokens": list(self.input_tokens), "output_tokens": list(self.output_tokens),
                "decoder_tokens": list(self.decoder_tokens),
                "encoder_attention": self.encoder.tolist(), "decoder_attention": self.decoder.tolist(),
                "cross_attention": self.cross.tolist(),
                "gold_alignment": None if self.gold is None else self.gold.astype(int).tolist()}
