"""The base-size masked-LM (issue 48): all-mpnet-base-v2 plus low-rank adapters and MPNet's masked-LM head, trained
in this repository (``python -m tools.mpnet_mlm train``).

What training changes, and so what ships (``vizcore/weights/mpnet-mlm.safetensors``, fp16, a few MB):

* for each of the 12 layers' six matrices (attention q, k, v, o; the feed-forward's two), a pair ``A`` (r x in),
  ``B`` (out x r): the layer's weight becomes ``W + B A`` (the adapter's scale is folded into ``B`` when saved);
* MPNet's masked-LM head: dense, layer norm and the output bias (its decoder is the word embeddings, tied);
* the ``<mask>`` row of the word embeddings.

Training wraps the six matrices (``add_adapters``) so that only ``A`` and ``B`` learn; the app loads the plain
encoder and **merges** the file into it (``merge_changed_state``), so the model the pages show is an ordinary
``MPNetForMaskedLM`` with nothing of this module in its forward pass, and ``export-model`` writes weights that plain
transformers loads.
"""

from __future__ import annotations

import torch
from torch import nn

MASK_ROW_KEY = "mask_embedding"
ADAPTED = ("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o", "intermediate.dense",
           "output.dense")
HEAD_KEYS = ("lm_head.dense.weight", "lm_head.dense.bias", "lm_head.layer_norm.weight", "lm_head.layer_norm.bias",
             "lm_head.bias")


class Adapter(nn.Module):
    """A frozen ``nn.Linear`` plus a trained low-rank update: ``base(x) + scale * (x A^T) B^T``.

    ``B`` starts at zero, so a fresh adapter changes nothing (LoRA, Hu et al. 2021)."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float | None = None) -> None:
        super().__init__()
        self.base = base
        self.a = nn.Parameter(torch.randn(rank, base.in_features) / base.in_features ** 0.5)
        self.b = nn.Parameter(torch.zeros(base.out_features, rank))
        self.scale = (alpha if alpha is not None else 2 * rank) / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.a.T.to(x.dtype)) @ (self.b.T.to(x.dtype) * self.scale)


def _parent(model: nn.Module, dotted: str) -> tuple[nn.Module, str]:
    *path, last = dotted.split(".")
    module = model
    for part in path:
        module = getattr(module, part)
    return module, last


def adapted_names(model: nn.Module) -> list[str]:
    """The dotted names of the matrices that get adapters, layer by layer ("mpnet.encoder.layer.0.attention.attn.q")."""
    prefix = "mpnet." if hasattr(model, "mpnet") else ""
    count = len((model.mpnet if prefix else model).encoder.layer)
    return [f"{prefix}encoder.layer.{i}.{name}" for i in range(count) for name in ADAPTED]


def add_adapters(model: nn.Module, rank: int) -> dict[str, Adapter]:
    """Wrap every adapted matrix of an ``MPNetForMaskedLM`` in an ``Adapter``; returns them by dotted name."""
    adapters = {}
    for name in adapted_names(model):
        parent, last = _parent(model, name)
        adapters[name] = Adapter(getattr(parent, last), rank)
        setattr(parent, last, adapters[name])
    return adapters


def changed_state(model: nn.Module, adapters: dict[str, Adapter], mask_id: int) -> dict[str, torch.Tensor]:
    """What ships: each adapter's ``A`` and scaled ``B``, the head's trained tensors, the ``<mask>`` row."""
    state = {}
    for name, adapter in adapters.items():
        state[f"{name}.lora_a"] = adapter.a.detach().clone()
        state[f"{name}.lora_b"] = (adapter.b.detach() * adapter.scale).clone()
    own = model.state_dict()
    for key in HEAD_KEYS:
        state[key] = own[key].detach().clone()
    state[MASK_ROW_KEY] = model.mpnet.embeddings.word_embeddings.weight[mask_id].detach().clone()
    return state


def load_changed_state(model: nn.Module, adapters: dict[str, Adapter], state: dict[str, torch.Tensor],
                       mask_id: int) -> None:
    """The inverse of ``changed_state`` on a model that still has its adapters (training's ``--init-from``)."""
    with torch.no_grad():
        for name, adapter in adapters.items():
            adapter.a.copy_(state[f"{name}.lora_a"])
            adapter.b.copy_(state[f"{name}.lora_b"] / adapter.scale)
        _load_head_and_mask(model, state, mask_id)


def _load_head_and_mask(model: nn.Module, state: dict[str, torch.Tensor], mask_id: int) -> None:
    if hasattr(model, "lm_head"):
        own = dict(model.named_parameters())
        for key in HEAD_KEYS:
            own[key].copy_(state[key].to(own[key].dtype))
    encoder = model.mpnet if hasattr(model, "mpnet") else model
    words = encoder.embeddings.word_embeddings.weight
    words[mask_id] = state[MASK_ROW_KEY].to(words.dtype)


def _key(name: str) -> str:
    """A matrix's name as the file has it (the masked-LM's: "mpnet.encoder..."), from a bare encoder's too."""
    return name if name.startswith("mpnet.") else f"mpnet.{name}"


def check_state(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Raise ValueError unless ``state`` holds exactly one adapter pair for every adapted matrix of ``model``
    (with fitting shapes), the head's tensors and the ``<mask>`` row."""
    for name in adapted_names(model):
        parent, last = _parent(model, name)
        weight = getattr(parent, last).weight
        a, b = state.get(f"{_key(name)}.lora_a"), state.get(f"{_key(name)}.lora_b")
        if a is None or b is None:
            raise ValueError(f"no adapter for {name}")
        if a.shape[1] != weight.shape[1] or b.shape[0] != weight.shape[0] or a.shape[0] != b.shape[1]:
            raise ValueError(f"the adapter of {name} has shapes {tuple(a.shape)}, {tuple(b.shape)}; "
                             f"the matrix is {tuple(weight.shape)}")
    missing = [k for k in (*HEAD_KEYS, MASK_ROW_KEY) if k not in state]
    if missing:
        raise ValueError(f"the file lacks {missing[0]}")


def merge_changed_state(model: nn.Module, state: dict[str, torch.Tensor], mask_id: int) -> None:
    """Apply a shipped file to a plain ``MPNetForMaskedLM`` (or the bare ``MPNetModel``: the head is skipped):
    each adapted weight becomes ``W + B A``, computed in float32 then cast to the weight's dtype."""
    check_state(model, state)
    with torch.no_grad():
        for name in adapted_names(model):
            parent, last = _parent(model, name)
            weight = getattr(parent, last).weight
            delta = state[f"{_key(name)}.lora_b"].float() @ state[f"{_key(name)}.lora_a"].float()
            weight.copy_((weight.float() + delta.to(weight.device)).to(weight.dtype))
        _load_head_and_mask(model, state, mask_id)


def new_mpnet_mlm(attn: str = "eager"):
    """``MPNetForMaskedLM`` with all-mpnet-base-v2's encoder and a fresh head (its decoder tied to the word
    embeddings)."""
    from transformers import MPNetForMaskedLM
    from transformers.utils import logging as hf_logging

    from vizcore.model.install import mpnet_path

    hf_logging.set_verbosity_error()
    return MPNetForMaskedLM.from_pretrained(str(mpnet_path()), attn_implementation=attn)
