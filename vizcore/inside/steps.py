"""One encoder layer recomputed by hand from the model's own weights, step by step, in float64.

Supported: post-LayerNorm BERT-family encoders, i.e. models whose layers live in ``encoder.layer``
(BERT, RoBERTa, MiniLM, ELECTRA-style), MPNet (the same layer under other names, plus a learned
relative position bias) and DistilBERT (``transformer.layer``). Decoders (GPT-2) and pre-LayerNorm
models are refused with a clear message.

The layer, for input X of shape (T, d) and head h with d_k = d / H::

    Q = X W_Q + b_Q, K = X W_K + b_K, V = X W_V + b_V          (this head's d_k columns)
    A = softmax(Q Kᵀ / √d_k + B_h + mask)                      (T, T), rows sum to 1
    heads = concat_h(A_h V_h) ;  attn = LN(heads W_O + b_O + X)
    out = LN(act(attn W_1 + b_1) W_2 + b_2 + attn)

B_h is MPNet's relative position bias (0 for the others): one learned number per head and bucket of
the offset query - key (32 buckets, T5's), looked up once per sentence and added in every layer.

The recomputation uses only matrix products written here (never the model's modules), and is
compared with the model's own attention weights and hidden states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from vizcore.errors import VizError
from vizcore.model import arch as archs
from vizcore.model.contract import check_layer_head
from vizcore.model.loading import LoadedModel
from vizcore.model.record import Run
from vizcore.model.run import Capture, run
from vizcore.positional.modern import model_relative_bias, relative_buckets

MASKED = float(torch.finfo(torch.float32).min)  # what transformers adds for a masked key: "minus infinity"
TOLERANCE = 1e-5  # recomputed vs the model's own numbers


@dataclass(frozen=True)
class Linear:
    weight: torch.Tensor  # (out, in), float64
    bias: torch.Tensor  # (out,)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight.T + self.bias


@dataclass(frozen=True)
class Norm:
    weight: torch.Tensor
    bias: torch.Tensor
    eps: float

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)  # biased variance, as LayerNorm uses
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


@dataclass(frozen=True)
class LayerWeights:
    """Float64 copies of one layer's parameters (never the live modules)."""

    query: Linear
    key: Linear
    value: Linear
    out: Linear
    norm1: Norm
    ffn_in: Linear
    ffn_out: Linear
    norm2: Norm
    num_heads: int
    activation: str


def linear_from(module: torch.nn.Linear) -> Linear:
    return Linear(module.weight.detach().to("cpu", torch.float64), module.bias.detach().to("cpu", torch.float64))


def norm_from(module: torch.nn.LayerNorm) -> Norm:
    return Norm(module.weight.detach().to("cpu", torch.float64), module.bias.detach().to("cpu", torch.float64),
                float(module.eps))


def architecture(loaded: LoadedModel) -> str:
    """``bert`` (``encoder.layer``), ``mpnet`` or ``distilbert`` (``transformer.layer``); VizError otherwise."""
    base = loaded.model.base_model
    config = loaded.model.config
    if loaded.is_decoder:
        raise VizError(f"'{loaded.name}' is a decoder: the step-by-step recomputation supports BERT-family "
                       "encoders (BERT, RoBERTa, MiniLM, MPNet, DistilBERT). Its causal pattern is shown under Masks.")
    if getattr(config, "model_type", "") == "mpnet":
        return "mpnet"
    if hasattr(getattr(base, "encoder", None), "layer") and hasattr(base.encoder.layer[0], "attention") \
            and hasattr(base.encoder.layer[0].attention, "self"):
        if getattr(config, "model_type", "") in ("albert", "xlm-roberta-xl") or getattr(config, "pre_norm", False):
            raise VizError(f"'{loaded.name}' ({config.model_type}) is not a post-LayerNorm BERT layer.")
        return "bert"
    if hasattr(getattr(base, "transformer", None), "layer") and config.model_type == "distilbert":
        return "distilbert"
    raise VizError(f"'{loaded.name}' ({getattr(config, 'model_type', '?')}) is not supported here: the "
                   "step-by-step page recomputes BERT-family encoders (encoder.layer), MPNet and DistilBERT.")


def layer_weights(loaded: LoadedModel, layer: int) -> LayerWeights:
    """The parameters of layer ``layer`` (0-based)."""
    kind = architecture(loaded)
    check_layer_head(loaded, layer, 0)
    base, config = loaded.model.base_model, loaded.model.config
    if kind == "bert":
        block = base.encoder.layer[layer]
        attention = block.attention
        return LayerWeights(
            query=linear_from(attention.self.query), key=linear_from(attention.self.key),
            value=linear_from(attention.self.value),
            out=linear_from(attention.output.dense), norm1=norm_from(attention.output.LayerNorm),
            ffn_in=linear_from(block.intermediate.dense), ffn_out=linear_from(block.output.dense),
            norm2=norm_from(block.output.LayerNorm), num_heads=loaded.num_heads, activation=str(config.hidden_act))
    if kind == "mpnet":
        block = base.encoder.layer[layer]
        attention = block.attention
        return LayerWeights(
            query=linear_from(attention.attn.q), key=linear_from(attention.attn.k), value=linear_from(attention.attn.v),
            out=linear_from(attention.attn.o), norm1=norm_from(attention.LayerNorm),
            ffn_in=linear_from(block.intermediate.dense), ffn_out=linear_from(block.output.dense),
            norm2=norm_from(block.output.LayerNorm), num_heads=loaded.num_heads, activation=str(config.hidden_act))
    block = base.transformer.layer[layer]
    attention = block.attention
    return LayerWeights(
        query=linear_from(attention.q_lin), key=linear_from(attention.k_lin), value=linear_from(attention.v_lin),
        out=linear_from(attention.out_lin), norm1=norm_from(block.sa_layer_norm),
        ffn_in=linear_from(block.ffn.lin1), ffn_out=linear_from(block.ffn.lin2),
        norm2=norm_from(block.output_layer_norm),
        num_heads=loaded.num_heads, activation=str(config.activation))


def activate(x: torch.Tensor, name: str) -> torch.Tensor:
    """The feed-forward non-linearity named in the config, written out from its formula."""
    if name == "gelu":
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "relu":
        return torch.clamp(x, min=0.0)
    raise VizError(f"The activation '{name}' is not supported here (gelu, gelu_new, relu are).")


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(T, d) -> (H, T, d_k)."""
    t, d = x.shape
    return x.reshape(t, num_heads, d // num_heads).transpose(0, 1)


def position_bias(loaded: LoadedModel, length: int) -> torch.Tensor | None:
    """The relative position bias every layer adds to its scores, ``(H, T, T)`` float64, or None when the model
    has none. Computed once per sentence: head h's number for bucket(query - key), from the model's own table."""
    table = model_relative_bias(loaded)  # (H, buckets)
    if table is None:
        return None
    places = np.arange(length)
    buckets = relative_buckets(places[:, None] - places[None, :], table.shape[1])  # (T, T)
    return torch.from_numpy(table[:, buckets])


def layer_forward(weights: LayerWeights, x: torch.Tensor, mask: torch.Tensor,
                  bias: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Every intermediate of one layer for all heads. ``x`` (T, d) float64, ``mask`` (T, T) additive, ``bias``
    (H, T, T) the relative position bias (MPNet) or None."""
    h = weights.num_heads
    q, k, v = (split_heads(lin(x), h) for lin in (weights.query, weights.key, weights.value))  # (H, T, d_k)
    scores = q @ k.transpose(1, 2)  # (H, T, T)
    scaled = scores / math.sqrt(q.shape[-1])
    masked = scaled + (0.0 if bias is None else bias) + mask
    attention = torch.softmax(masked, dim=-1)  # (H, T, T)
    head_outputs = attention @ v  # (H, T, d_k)
    concat = head_outputs.transpose(0, 1).reshape(x.shape)  # (T, d)
    projected = weights.out(concat)
    attn_norm = weights.norm1(projected + x)
    ffn_hidden = activate(weights.ffn_in(attn_norm), weights.activation)  # (T, d_ff)
    ffn_out = weights.ffn_out(ffn_hidden)
    output = weights.norm2(ffn_out + attn_norm)
    return {"q": q, "k": k, "v": v, "scores": scores, "scaled": scaled, "masked": masked,
            "attention": attention, "head_outputs": head_outputs, "concat": concat, "projected": projected,
            "attn_norm": attn_norm, "ffn_hidden": ffn_hidden, "ffn_out": ffn_out, "output": output}


def additive_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """(T,) 1 = real token, 0 = padding -> (T, T) to add to every query row: 0 or MASKED per key."""
    keys = (1.0 - attention_mask.to(torch.float64)) * MASKED
    return keys[None, :].expand(attention_mask.shape[0], -1)


def run_model(loaded: LoadedModel, text: str, pair: str | None = None) -> Run:
    """The model's own numbers for one input (attention and hidden states), from the one forward core."""
    architecture(loaded)
    return run(loaded, text, pair, capture=Capture(hidden=True))


@dataclass(frozen=True)
class LayerSteps:
    """Layer ``layer``, head ``head`` (0-based) recomputed for one sentence. T tokens, d hidden, d_k per head."""

    tokens: list[str]
    layer: int
    head: int
    num_heads: int
    x: np.ndarray  # (T, d) the layer's input
    q: np.ndarray  # (T, d_k) this head
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray  # (T, T) Q Kᵀ
    scaled: np.ndarray  # (T, T) / √d_k
    bias: np.ndarray | None  # (T, T) this head's relative position bias, added to the scaled scores (MPNet)
    mask: np.ndarray  # (T,) added to every row: 0 or MASKED per key
    weights: np.ndarray  # (T, T) softmax rows
    head_output: np.ndarray  # (T, d_k) A V
    concat: np.ndarray  # (T, d) all heads side by side
    projected: np.ndarray  # (T, d) concat W_O + b_O
    attn_norm: np.ndarray  # (T, d) LN(projected + x)
    ffn_hidden: np.ndarray  # (T, d_ff) after the activation
    ffn_out: np.ndarray  # (T, d)
    output: np.ndarray  # (T, d) LN(ffn_out + attn_norm)
    model_weights: np.ndarray  # (T, T) the model's own weights for this head
    model_output: np.ndarray  # (T, d) the model's own hidden state after this layer
    attention_diff: float  # max |recomputed - model| over this head's weights
    all_heads_diff: float  # the same over every head of the layer
    output_diff: float  # max |recomputed - model| over the layer output

    @property
    def d_k(self) -> int:
        return int(self.q.shape[1])


def layer_steps(loaded: LoadedModel, run: Run, layer: int, head: int) -> LayerSteps:
    """Recompute layer ``layer``'s every step for head ``head`` from the model's input to that layer."""
    check_layer_head(loaded, layer, head)
    weights = layer_weights(loaded, layer)
    x = torch.from_numpy(run.hidden_states[layer]).to(torch.float64)
    mask = additive_mask(torch.ones(len(run.tokens)))
    bias = position_bias(loaded, len(run.tokens))
    parts = {name: value.numpy() for name, value in layer_forward(weights, x, mask, bias).items()}
    own = run.attention[layer]
    return LayerSteps(
        tokens=run.tokens, layer=layer, head=head, num_heads=weights.num_heads, x=x.numpy(),
        q=parts["q"][head], k=parts["k"][head], v=parts["v"][head], scores=parts["scores"][head],
        scaled=parts["scaled"][head], bias=None if bias is None else bias[head].numpy(), mask=mask[0].numpy(),
        weights=parts["attention"][head],
        head_output=parts["head_outputs"][head], concat=parts["concat"], projected=parts["projected"],
        attn_norm=parts["attn_norm"], ffn_hidden=parts["ffn_hidden"], ffn_out=parts["ffn_out"],
        output=parts["output"], model_weights=own[head], model_output=run.hidden_states[layer + 1],
        attention_diff=float(np.abs(parts["attention"][head] - own[head]).max()),
        all_heads_diff=float(np.abs(parts["attention"] - own).max()),
        output_diff=float(np.abs(parts["output"] - run.hidden_states[layer + 1]).max()),
    )


@dataclass(frozen=True)
class EmbeddingParts:
    """BERT's input: token + position (+ segment) embeddings, summed, then LayerNorm. Each (T, d)."""

    tokens: list[str]
    token_ids: np.ndarray
    position_ids: np.ndarray
    segment_ids: np.ndarray | None
    word: np.ndarray
    position: np.ndarray
    segment: np.ndarray | None
    summed: np.ndarray
    normed: np.ndarray
    model_output: np.ndarray  # hidden_states[0]
    max_abs_diff: float


def input_sum(loaded: LoadedModel) -> str:
    """What the model adds up as its input, in words: "token + position + segment" for BERT, "token + position" for a
    model with no segment table (MPNet, DistilBERT) or whose tokenizer makes no segments (RoBERTa's single row)."""
    embeddings = loaded.model.base_model.embeddings
    segments = (architecture(loaded) == "bert" and getattr(embeddings, "token_type_embeddings", None) is not None
                and "token_type_ids" in loaded.tokenizer.model_input_names)
    return "token + position + segment" if segments else "token + position"


def embedding_parts(loaded: LoadedModel, run: Run) -> EmbeddingParts:
    """Look the rows up in the model's tables and add them; compare with the model's own layer-0 input."""
    kind = architecture(loaded)
    embeddings = loaded.model.base_model.embeddings
    # The rows asked for, in float64: converting the whole word table first (30,522 x 384 for MiniLM, 94 MB in
    # float64) was a third of the step-by-step page's CPU with a class on it (py-spy, 30 students).
    rows = lambda module, ids: (module.weight.detach()[torch.as_tensor(ids, dtype=torch.long)]  # noqa: E731
                                .to("cpu", torch.float64).numpy())
    n = len(run.tokens)
    _, offset = archs.position_table(loaded.model)
    position_ids = np.arange(n) + offset  # RoBERTa's rows start after its padding index
    word = rows(embeddings.word_embeddings, run.input_ids)
    position = rows(embeddings.position_embeddings, position_ids)
    segment = None
    segment_ids = run.segment_ids if kind == "bert" else None
    if kind == "bert" and getattr(embeddings, "token_type_embeddings", None) is not None:
        # A tokenizer that makes no token_type_ids (RoBERTa's) leaves every token in segment 0.
        makes_segments = "token_type_ids" in loaded.tokenizer.model_input_names
        segment_ids = run.segment_ids if makes_segments else np.zeros(n, dtype=np.int64)
        segment = rows(embeddings.token_type_embeddings, segment_ids)
    summed = word + position + (segment if segment is not None else 0.0)
    normed = norm_from(embeddings.LayerNorm)(torch.from_numpy(summed)).numpy()
    return EmbeddingParts(
        tokens=run.tokens, token_ids=run.input_ids, position_ids=position_ids, segment_ids=segment_ids,
        word=word, position=position, segment=segment, summed=summed, normed=normed,
        model_output=run.hidden_states[0], max_abs_diff=float(np.abs(normed - run.hidden_states[0]).max()))
