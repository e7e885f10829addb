"""The original Transformer, encoder and decoder, written as the tutorials write it, small enough to train here.

As in *Attention Is All You Need* and *The Annotated Transformer*: word embeddings plus the fixed
sinusoidal positions (``vizcore.finetune.tiny.PositionalEncoding``); encoder layers of self-attention
and a position-wise feed-forward network; decoder layers of masked (causal) self-attention,
cross-attention (queries from the decoder, keys and values from the encoder's output) and the
feed-forward network; every sublayer post-norm, LayerNorm(x + sublayer(x)); then the output Linear,
whose softmax is the next token's distribution. ``attention`` returns ``(output, weights)`` so every
layer hands its weights up, and ``forward`` returns all three attentions.

Two choices differ from the paper, both for a small model trained in minutes on a toy task with
unlimited data: no dropout (nothing to regularise), and embeddings not scaled by sqrt(d_model)
(``nn.Embedding`` starts at N(0, 1), already as large as the positions; see ``tiny.TinyTransformer``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from vizcore.errors import VizError
from vizcore.finetune.tiny import PositionalEncoding
from vizcore.seq2seq.dates import INPUT_VOCAB, OUTPUT_VOCAB, PAD

MAX_LENGTH = 32  # positions in the sinusoidal table: the longest date is 11 words, the output 11 characters


@dataclass(frozen=True)
class DateModelConfig:
    d_model: int = 64
    heads: int = 4
    encoder_layers: int = 2
    decoder_layers: int = 1
    d_ff: int = 128

    def validate(self) -> "DateModelConfig":
        if not 1 <= self.heads <= 8 or self.d_model % self.heads or self.d_model % 2:
            raise VizError(f"d_model ({self.d_model}) must be even and split evenly over 1 to 8 heads; "
                           f"got {self.heads} heads.")
        if not (1 <= self.encoder_layers <= 4 and 1 <= self.decoder_layers <= 4):
            raise VizError("Use 1 to 4 encoder layers and 1 to 4 decoder layers.")
        if not 8 <= self.d_model <= 256 or not 8 <= self.d_ff <= 1024:
            raise VizError(f"Use d_model 8 to 256 and d_ff 8 to 1,024; got {self.d_model} and {self.d_ff}.")
        return self

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Seq2SeqOutput:
    logits: torch.Tensor  # (B, O, V) before the softmax
    encoder: torch.Tensor  # (B, Le, H, I, I) encoder self-attention
    decoder: torch.Tensor  # (B, Ld, H, O, O) decoder masked self-attention
    cross: torch.Tensor  # (B, Ld, H, O, I) cross-attention


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention. q (B, H, T, d_k), k and v (B, H, S, d_k), mask broadcastable to
    (B, H, T, S), True where a query may look -> output (B, H, T, d_k), weights (B, H, T, S)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # exp(-inf) = 0: a masked key gets no weight at all
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def causal_mask(length: int, device: torch.device | None = None) -> torch.Tensor:
    """bool (T, T): position i may look at positions 0..i only."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


class MultiHeadAttention(nn.Module):
    """Separate query, key and value projections, so one module serves self- and cross-attention."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.query, self.key, self.value = (nn.Linear(d_model, d_model) for _ in range(3))
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, memory: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries from x (B, T, D), keys and values from memory (B, S, D) -> (B, T, D), weights (B, H, T, S)."""
        b, t, d = x.shape

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, -1, self.heads, self.d_k).transpose(1, 2)  # (B, H, T or S, d_k)

        mixed, weights = attention(split(self.query(x)), split(self.key(memory)), split(self.value(memory)), mask)
        return self.out(mixed.transpose(1, 2).reshape(b, t, d)), weights


def feed_forward(d_model: int, d_ff: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))


class EncoderLayer(nn.Module):
    """h = LayerNorm(x + self-attention(x)); out = LayerNorm(h + FFN(h))."""

    def __init__(self, d_model: int, heads: int, d_ff: int):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, heads)
        self.feed_forward = feed_forward(d_model, d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, I, D), mask (B, 1, 1, I) -> (B, I, D), weights (B, H, I, I)."""
        mixed, weights = self.self_attention(x, x, mask)
        x = self.norm1(x + mixed)
        return self.norm2(x + self.feed_forward(x)), weights


class DecoderLayer(nn.Module):
    """h = LayerNorm(y + masked self-attention(y)); c = LayerNorm(h + cross-attention(h, memory));
    out = LayerNorm(c + FFN(c))."""

    def __init__(self, d_model: int, heads: int, d_ff: int):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, heads)
        self.cross_attention = MultiHeadAttention(d_model, heads)
        self.feed_forward = feed_forward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))

    def forward(self, y: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor,
                memory_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """y (B, O, D), memory (B, I, D) -> (B, O, D), self weights (B, H, O, O), cross weights (B, H, O, I)."""
        mixed, self_weights = self.self_attention(y, y, self_mask)
        y = self.norm1(y + mixed)
        looked, cross_weights = self.cross_attention(y, memory, memory_mask)
        y = self.norm2(y + looked)
        return self.norm3(y + self.feed_forward(y)), self_weights, cross_weights


class DateTransformer(nn.Module):
    """Words in (``INPUT_VOCAB``), characters out (``OUTPUT_VOCAB``)."""

    def __init__(self, config: DateModelConfig):
        super().__init__()
        self.config = config.validate()
        d = config.d_model
        self.source_embed = nn.Embedding(len(INPUT_VOCAB), d)
        self.target_embed = nn.Embedding(len(OUTPUT_VOCAB), d)
        self.position = PositionalEncoding(d, MAX_LENGTH)
        self.encoder = nn.ModuleList(EncoderLayer(d, config.heads, config.d_ff) for _ in range(config.encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(d, config.heads, config.d_ff) for _ in range(config.decoder_layers))
        self.generator = nn.Linear(d, len(OUTPUT_VOCAB))  # the output Linear; its softmax is the distribution

    def encode(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """source ids (B, I), <pad> = 0 -> memory (B, I, D), its mask (B, 1, 1, I), attention (B, Le, H, I, I)."""
        mask = (source != INPUT_VOCAB.index(PAD))[:, None, None, :]  # no query looks at padding
        x = self.position(self.source_embed(source))
        maps = []
        for layer in self.encoder:
            x, weights = layer(x, mask)
            maps.append(weights)
        return x, mask, torch.stack(maps, dim=1)

    def decode(self, target: torch.Tensor, memory: torch.Tensor,
               memory_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """target ids (B, O) (start token first) -> logits (B, O, V), self (B, Ld, H, O, O), cross (B, Ld, H, O, I)."""
        y = self.position(self.target_embed(target))
        self_mask = causal_mask(target.size(1), target.device)  # (O, O), the same for every sequence
        selfs, crosses = [], []
        for layer in self.decoder:
            y, self_weights, cross_weights = layer(y, memory, self_mask, memory_mask)
            selfs.append(self_weights)
            crosses.append(cross_weights)
        return self.generator(y), torch.stack(selfs, dim=1), torch.stack(crosses, dim=1)

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> Seq2SeqOutput:
        """source (B, I) word ids, target (B, O) character ids read by the decoder (teacher forcing)."""
        memory, memory_mask, encoder = self.encode(source)  # (B, I, D)
        logits, decoder, cross = self.decode(target, memory, memory_mask)  # (B, O, V)
        return Seq2SeqOutput(logits, encoder, decoder, cross)
