"""How many parameters each component of a model holds, counted from its own tensors.

Components (BERT-family names, DistilBERT's in brackets): ``embeddings`` (token, position, segment tables and
their LayerNorm), ``attention Q, K, V`` (``query``/``key``/``value`` [``q_lin``/``k_lin``/``v_lin``]),
``attention output W_O`` (``attention.output.dense`` [``out_lin``]), ``LayerNorm`` (the two in each layer),
``feed-forward`` (``intermediate.dense`` and ``output.dense`` [``ffn.lin1``/``ffn.lin2``]), ``other`` (a pooler,
a task head). Each parameter tensor is counted once, in the first component whose pattern its name matches.
"""

from __future__ import annotations

import re

import torch

COMPONENTS: tuple[tuple[str, str], ...] = (
    ("embeddings", r"(^|\.)embeddings\.|(^|\.)wte\.|(^|\.)wpe\."),
    ("attention Q, K, V", r"\.(query|key|value|q_lin|k_lin|v_lin)\."),
    ("attention output W_O", r"attention\.output\.dense\.|\.out_lin\."),
    ("LayerNorm", r"(LayerNorm|layer_norm)\."),
    ("feed-forward", r"intermediate\.dense\.|\.output\.dense\.|\.ffn\.lin[12]\."),
)
OTHER = "other"


def component_of(name: str) -> str:
    """The component a parameter named ``name`` belongs to (``OTHER`` when no pattern matches)."""
    return next((component for component, pattern in COMPONENTS if re.search(pattern, name)), OTHER)


def parameter_counts(model: torch.nn.Module) -> dict[str, int]:
    """Parameters per component, in the order of ``COMPONENTS`` then ``OTHER`` (components with none left out).
    The values sum to the model's total (``sum(p.numel() for p in model.parameters())``)."""
    counts = {component: 0 for component, _ in COMPONENTS} | {OTHER: 0}
    for name, parameter in model.named_parameters():
        counts[component_of(name)] += parameter.numel()
    return {component: count for component, count in counts.items() if count}
