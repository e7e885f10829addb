"""Where each architecture keeps its parts: the one place that knows module paths.

Everything that reaches inside a model (hooks, the step-by-step recomputation, learned positions,
the masked-LM head, export) asks an ``Arch`` instead of hard-coding ``encoder.layer[i].attention``.
Supported families: BERT (and MiniLM, ELECTRA-style encoders, and BERT as a causal decoder),
RoBERTa, MPNet, DistilBERT, GPT-2-like decoders, and the encoder-decoders BART and T5.

Paths are dotted attribute paths: a stack's ``layers`` from the base model (``model.base_model``),
the rest from one block of that stack. ``out`` is the attention's output projection W_O: its input
is every head's output side by side, ``(batch, T, heads * d_head)``, which is where head outputs are
read, zeroed or replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from vizcore.errors import VizError


@dataclass(frozen=True)
class Attn:
    """One attention module of a block: its projections (``qkv`` when fused, as GPT-2's c_attn)."""

    query: str | None
    key: str | None
    value: str | None
    out: str
    qkv: str | None = None


@dataclass(frozen=True)
class Stack:
    """A tower of identical blocks: an encoder or a decoder."""

    layers: str
    self_attention: Attn
    cross_attention: Attn | None = None
    # The module whose output is the feed-forward's hidden activation act(x W_1 + b_1), (batch, T, d_ff): the
    # "neurons" (Geva et al. 2021's keys' coefficients); None where it is not a module of its own.
    neurons: str | None = None


@dataclass(frozen=True)
class Arch:
    family: str
    kind: str  # "encoder" | "decoder" | "encoder-decoder"
    stacks: dict[str, Stack]  # "encoder" and/or "decoder"
    positions: str | None  # the learned position table, from the base model; None when relative (T5)
    position_offset: int = 0  # row of the table for position 0 (RoBERTa starts after its padding index)
    mlm_head: str | None = None  # from the top-level model (``AutoModelForMaskedLM``)
    post_norm: bool = True  # LayerNorm(x + sublayer(x)) as in BERT; GPT-2 and T5 normalise first
    embeddings: str | None = "embeddings"  # from the base model: its output is hidden state 0
    final_norm: str | None = None  # pre-norm models: the last hidden state is this module's output
    extras: dict = field(default_factory=dict, compare=False)

    @property
    def main_stack(self) -> str:
        """The stack whose attention the app shows by default: the encoder if there is one."""
        return "encoder" if "encoder" in self.stacks else "decoder"


_BERT_ATTN = Attn("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense")
_MPNET_ATTN = Attn("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o")
_BART_SELF = Attn("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj")
_BART_CROSS = Attn("encoder_attn.q_proj", "encoder_attn.k_proj", "encoder_attn.v_proj", "encoder_attn.out_proj")
_T5_SELF = Attn("layer.0.SelfAttention.q", "layer.0.SelfAttention.k", "layer.0.SelfAttention.v",
                "layer.0.SelfAttention.o")
_T5_CROSS = Attn("layer.1.EncDecAttention.q", "layer.1.EncDecAttention.k", "layer.1.EncDecAttention.v",
                 "layer.1.EncDecAttention.o")
_BERT_LIKE = ("bert", "roberta", "xlm-roberta", "electra", "camembert", "minilm")


def arch_of(model: torch.nn.Module) -> Arch:
    """The adapter for a loaded model (a base model or one with a head); VizError if unknown."""
    config = model.config
    family = getattr(config, "model_type", "") or ""
    decoder = bool(getattr(config, "is_decoder", False))
    if family in _BERT_LIKE:
        offset = int(config.pad_token_id) + 1 if family in ("roberta", "xlm-roberta", "camembert") else 0
        head = "lm_head" if family in ("roberta", "xlm-roberta", "camembert") else "cls"
        return Arch(family, "decoder" if decoder else "encoder",
                    {"decoder" if decoder else "encoder": Stack("encoder.layer", _BERT_ATTN, neurons="intermediate")},
                    positions="embeddings.position_embeddings", position_offset=offset, mlm_head=head)
    if family == "mpnet":  # BERT's layout under other names, plus a relative position bias shared by all layers
        return Arch(family, "encoder", {"encoder": Stack("encoder.layer", _MPNET_ATTN, neurons="intermediate")},
                    positions="embeddings.position_embeddings", position_offset=int(config.pad_token_id) + 1,
                    mlm_head="lm_head", extras={"relative_bias": "encoder.relative_attention_bias"})
    if family == "distilbert":
        return Arch(family, "encoder", {"encoder": Stack("transformer.layer", Attn(
            "attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin"), neurons="ffn.activation")},
            positions="embeddings.position_embeddings", mlm_head="vocab_projector")
    if family == "gpt2":
        return Arch(family, "decoder",
                    {"decoder": Stack("h", Attn(None, None, None, "attn.c_proj", qkv="attn.c_attn"),
                                      neurons="mlp.act")},
                    positions="wpe", post_norm=False, embeddings="drop", final_norm="ln_f")
    if family in ("bart", "mbart", "marian"):
        return Arch(family, "encoder-decoder",
                    {"encoder": Stack("encoder.layers", _BART_SELF),
                     "decoder": Stack("decoder.layers", _BART_SELF, _BART_CROSS)},
                    positions="encoder.embed_positions", position_offset=2 if family == "bart" else 0, embeddings=None)
    if family == "t5":
        return Arch(family, "encoder-decoder",
                    {"encoder": Stack("encoder.block", _T5_SELF),
                     "decoder": Stack("decoder.block", _T5_SELF, _T5_CROSS)},
                    positions=None, post_norm=False, embeddings=None, final_norm="encoder.final_layer_norm")
    raise VizError(f"Model type '{family or type(model).__name__}' is not supported for looking inside: "
                   "use a BERT, RoBERTa, MPNet, DistilBERT, GPT-2, BART or T5 model.")


def get(root: torch.nn.Module, path: str) -> torch.nn.Module:
    """``root.a.b.0.c`` for ``path`` ``"a.b.0.c"`` (numbers index a ModuleList)."""
    module = root
    for part in path.split("."):
        module = module[int(part)] if part.isdigit() else getattr(module, part)
    return module


def blocks(model: torch.nn.Module, stack: str | None = None) -> torch.nn.ModuleList:
    """The blocks of a stack (default: the main one), from a base model or a model with a head."""
    arch = arch_of(model)
    return get(model.base_model, arch.stacks[stack or arch.main_stack].layers)


def position_table(model: torch.nn.Module) -> tuple[torch.nn.Embedding, int]:
    """The learned position table and the row of position 0; VizError when positions are relative."""
    arch = arch_of(model)
    if arch.positions is None:
        raise VizError(f"'{arch.family}' has no table of learned positions (it uses relative position biases).")
    return get(model.base_model, arch.positions), arch.position_offset


def mlm_head(model: torch.nn.Module) -> torch.nn.Module:
    arch = arch_of(model)
    if arch.mlm_head is None or not hasattr(model, arch.mlm_head.split(".")[0]):
        raise VizError(f"This '{arch.family}' model has no masked-LM head.")
    return get(model, arch.mlm_head)


@dataclass(frozen=True)
class HeadWeights:
    """One layer's self-attention matrices, split per head, in the row convention ``x @ W`` (``x`` a hidden state,
    ``(d,)``): head h's query is ``x @ query[h]`` plus its bias, its part of the output ``z @ out[h]`` (``z`` its
    output, ``(d_head,)``). Biases are left out (the output projection's is shared by the heads). Its scores
    are ``scaling * q . k``."""

    query: torch.Tensor  # (H, d, d_head)
    key: torch.Tensor  # (H, d, d_head)
    value: torch.Tensor  # (H, d, d_head)
    out: torch.Tensor  # (H, d_head, d)
    scaling: float


def _row_weight(module: torch.nn.Module) -> torch.Tensor:
    """W with ``y = x @ W + b``: a Linear stores W transposed, GPT-2's Conv1D as it is."""
    weight = module.weight.detach()
    return weight.T if isinstance(module, torch.nn.Linear) else weight


def head_weights(model: torch.nn.Module, layer: int, num_heads: int) -> HeadWeights:
    """Layer ``layer`` (0-based, main stack)'s W_Q, W_K, W_V, W_O per head, read from the module the forward runs."""
    arch = arch_of(model)
    attn = arch.stacks[arch.main_stack].self_attention
    block = blocks(model)[layer]
    if attn.qkv is not None:  # fused (GPT-2's c_attn): one (d, 3 d) matrix, Q | K | V along the output
        weights = _row_weight(get(block, attn.qkv)).chunk(3, dim=1)
    else:
        weights = tuple(_row_weight(get(block, path)) for path in (attn.query, attn.key, attn.value))
    out = _row_weight(get(block, attn.out))  # (H * d_head, d)
    d, d_head = out.shape[1], out.shape[0] // num_heads

    def split(w: torch.Tensor) -> torch.Tensor:  # (d, H * d_head) -> (H, d, d_head)
        return w.reshape(w.shape[0], num_heads, d_head).permute(1, 0, 2)

    module = get(block, (attn.query or attn.qkv).rpartition(".")[0])
    scaling = 1.0 if arch.family == "t5" else float(getattr(module, "scaling", d_head ** -0.5))  # T5 scales none
    return HeadWeights(*(split(w) for w in weights), out.reshape(num_heads, d_head, d), scaling=scaling)


def token_embeddings(model: torch.nn.Module) -> torch.Tensor:
    """The token embedding table W_E, ``(vocab, d)`` (no positions, no segments, no LayerNorm)."""
    return model.get_input_embeddings().weight.detach()
