"""Attention weights written straight into one ``[layer, head, query, key]`` buffer: no copy after a run.

A run returns attention as one float32 array. Stacking transformers' per-layer tensors copies all of it
(75 MB at 512 tokens on 6 x 12 heads: about 60 ms, more than a third of the forward pass). So models
are loaded with ``attn_implementation="vizcore-eager"``: transformers' eager attention, except that
while a run has a sink open, each layer of the BERT family writes its softmax into its slice of the
sink with the same softmax kernel (``aten._softmax.out``), so the numbers are eager's to the last bit
(tested), and masks are built as for eager. Only ``FAMILIES`` load this way; a layer whose own
eager code differs from BERT's runs it and its weights are copied into the sink. Training copies
(``module.training``) and calls outside a run are plain eager.

The same function is the one place where the attention probabilities can be changed before they
multiply the values: while ``edit_weights`` is open, each listed layer's probabilities ``(B, H, T, T)``
become ``function(layer, weights)`` (attention attribution scales them), in any batch, with gradients.
"""

from __future__ import annotations

import contextvars
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import torch
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, eager_mask
from transformers.models.bert.modeling_bert import eager_attention_forward as _bert_eager

from vizcore.errors import VizError

IMPLEMENTATION = "vizcore-eager"
# Families whose modeling code never asks for "eager" by name and whose attention is BERT's: they load
# with this implementation; others (GPT-2 checks for "eager") load with plain eager and are stacked.
FAMILIES = ("bert", "roberta", "xlm-roberta", "electra", "camembert")
_OPEN: contextvars.ContextVar[Sink | None] = contextvars.ContextVar("vizcore_attention_sink", default=None)
_EDIT: contextvars.ContextVar[Edit | None] = contextvars.ContextVar("vizcore_attention_edit", default=None)
_ROWS: contextvars.ContextVar[Rows | None] = contextvars.ContextVar("vizcore_attention_rows", default=None)
WeightEdit = Callable[[int, torch.Tensor], torch.Tensor]  # (layer, weights (B, H, T, T)) -> weights


@dataclass(frozen=True)
class Sink:
    buffer: torch.Tensor  # (L, H, T, T) float32
    layers: dict[int, int]  # id(attention module) -> layer index


@contextmanager
def open_sink(modules: list[torch.nn.Module], heads: int, tokens: int, device: torch.device) -> Iterator[torch.Tensor]:
    """For the body of the ``with``: layer i's attention module writes its weights into ``buffer[i]``."""
    buffer = torch.empty(len(modules), heads, tokens, tokens, device=device)
    sink = Sink(buffer, {id(m): i for i, m in enumerate(modules)})
    token = _OPEN.set(sink)
    try:
        yield sink.buffer
    finally:
        _OPEN.reset(token)


@dataclass(frozen=True)
class Edit:
    function: WeightEdit
    layers: dict[int, int]  # id(attention module) -> layer index


@contextmanager
def edit_weights(modules: list[torch.nn.Module], function: WeightEdit) -> Iterator[None]:
    """For the body of the ``with`` (in this thread only: a context variable): layer i's attention
    probabilities become ``function(i, weights)`` before they multiply the values."""
    token = _EDIT.set(Edit(function, {id(m): i for i, m in enumerate(modules)}))
    try:
        yield
    finally:
        _EDIT.reset(token)


@dataclass(frozen=True)
class Rows:
    lengths: tuple[int, ...]  # each batch row's real tokens (the rest is right padding)
    layers: frozenset[int]  # id(attention module)


@contextmanager
def by_rows(modules: list[torch.nn.Module], lengths: Sequence[int]) -> Iterator[None]:
    """For the body of the ``with`` (this thread only): in a right-padded batch of rows ``lengths`` long, each
    listed layer computes each row's attention on that row's own tokens, with the shapes of a run of that row
    alone, so its weights and output are that run's to the bit. Over a padded width instead, the matrix products
    and the softmax of a short row take other kernels (another order of summation; docs/BENCHMARKS.md,
    "serve-queue"). Padding positions get zero weights and a zero output (nothing real reads them)."""
    token = _ROWS.set(Rows(tuple(lengths), frozenset(id(m) for m in modules)))
    try:
        yield
    finally:
        _ROWS.reset(token)


def _same_code(a, b) -> bool:
    return a.__code__.co_code == b.__code__.co_code and a.__code__.co_consts == b.__code__.co_consts


def _own_eager(module: torch.nn.Module):
    return getattr(sys.modules[type(module).__module__], "eager_attention_forward", _bert_eager)


def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers' attention-function signature; (output (B, T, H, d_head), weights (B, H, T, T))."""
    eager = _own_eager(module)
    edit = _EDIT.get()
    if edit is not None and id(module) in edit.layers:
        return _edited(module, eager, edit, query, key, value, attention_mask, scaling)
    rows = _ROWS.get()
    if rows is not None and id(module) in rows.layers and query.shape[0] == len(rows.lengths) and not module.training:
        return _by_row(module, eager, rows.lengths, query, key, value, attention_mask, scaling)
    sink = _OPEN.get()
    layer = None if sink is None or module.training or query.shape[0] != 1 else sink.layers.get(id(module))
    if layer is None:
        return eager(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
    weights = sink.buffer[layer].unsqueeze(0)  # (1, H, T, T), a view into the sink
    if not _same_code(eager, _bert_eager) or query.dtype != weights.dtype:  # its own arithmetic, then a copy
        output, own = eager(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
        weights.copy_(own)
        return output, weights
    # BERT's eager attention line for line (modeling_bert.eager_attention_forward), with the softmax
    # written into the sink; dropout is the identity in eval mode.
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    torch.ops.aten._softmax.out(scores, -1, False, out=weights)
    output = torch.matmul(weights, value).transpose(1, 2).contiguous()
    return output, weights


AttentionInterface.register(IMPLEMENTATION, attention)
AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)  # the same additive masks as eager


def _by_row(module, eager, lengths: tuple[int, ...], query, key, value, attention_mask, scaling):
    """Each row's attention on its own first ``lengths[b]`` tokens: (output (B, T, H, d_head), weights (B, H, T, T))."""
    batch, heads, width, d_head = query.shape
    output = query.new_zeros(batch, width, heads, d_head)
    weights = query.new_zeros(batch, heads, width, width)
    for b, n in enumerate(lengths):
        mask = None if attention_mask is None else attention_mask[b:b + 1, :, :n, :n]
        own_output, own_weights = eager(module, query[b:b + 1, :, :n], key[b:b + 1, :, :n], value[b:b + 1, :, :n],
                                        mask, scaling=scaling, dropout=0.0)
        output[b, :n], weights[b, :, :n, :n] = own_output[0], own_weights[0]
    return output, weights


def _edited(module, eager, edit: Edit, query, key, value, attention_mask, scaling):
    """BERT's eager attention with the probabilities passed through the edit (dropout: eval mode only)."""
    if not _same_code(eager, _bert_eager) or module.training:
        raise VizError("Changing attention probabilities needs a BERT-family model in eval mode (BERT, RoBERTa, "
                       "ELECTRA, MiniLM); this one computes attention its own way.")
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    weights = edit.function(edit.layers[id(module)], torch.softmax(scores, dim=-1))
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights
