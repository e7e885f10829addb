"""Writing a built-in model as a standard Hugging Face folder that plain ``transformers`` loads.

``export_model(name, out)`` loads the model exactly as the app does (``load_model``: its folder, then
its catalogue ``patch``, e.g. the MLM-tuned tensors applied to the embedded encoder), with its
fullest head (``HEAD_ORDER``: both pre-training heads, else the causal-LM head, else the masked-LM
head), and saves the merged fp32 result with ``save_pretrained``: ``config.json`` (``architectures``
names the class to load: ``BertForPreTraining`` for ``AutoModelForPreTraining``, ``BertLMHeadModel``
with ``is_decoder`` true for ``AutoModelForCausalLM``, ``BertForMaskedLM`` for
``AutoModelForMaskedLM``, ``BertModel`` for ``AutoModel``; no attention implementation is pinned),
``model.safetensors`` and the tokenizer files. Before the files are moved into ``out`` the folder is
loaded back with plain ``transformers`` and must give bit-identical outputs (every head's logits) on
a probe sentence pair with eager attention (the app's: it needs the attention weights). The default
SDPA kernel sums in another order and differs by float rounding (about 1e-5 on the logits).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import torch
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForPreTraining,
    PreTrainedModel,
)

from vizcore.errors import VizError
from vizcore.model.catalog import BUILTIN_MODELS
from vizcore.model.loading import LoadedModel, load_model

CHECK_TEXT = "The capital of France is [MASK]."
CHECK_PAIR = "It is a city on the Seine."  # the next-sentence head reads a pair
# A built-in's fullest head first, with the class plain transformers loads it with.
HEAD_ORDER = (("nsp", AutoModelForPreTraining), ("causal-lm", AutoModelForCausalLM), ("mlm", AutoModelForMaskedLM),
              ("base", AutoModel))
# The outputs compared after the reload: whichever of these the head gives.
CHECKED_OUTPUTS = ("prediction_logits", "seq_relationship_logits", "logits", "last_hidden_state")


def export_model(name: str, out: str | Path, force: bool = False) -> dict:
    """Write built-in ``name`` to folder ``out``; return what was written (JSON-serialisable).

    Raises VizError, before any loading, for an unknown name, an ``out`` that is a file or a
    non-empty folder (unless ``force``: then files of the same names are replaced), or that cannot
    be written.
    """
    builtin = BUILTIN_MODELS.get((name or "").strip())
    if builtin is None:
        raise VizError(f"Unknown built-in model '{name}': choose one of {', '.join(BUILTIN_MODELS)}.")
    out = Path(out).expanduser().resolve()
    created = _prepare_folder(out, force)
    head, auto = next((h, a) for h, a in HEAD_ORDER if h in builtin.heads)
    staging = None
    try:
        loaded = load_model(builtin.name, device="cpu", head=head)
        staging = Path(tempfile.mkdtemp(prefix=".export-", dir=out))
        _save(loaded, staging)
        _check_reload(loaded, staging, auto)
        files = _move_into(staging, out)
    except OSError as error:
        raise VizError(f"Could not write the model to '{out}': {error.strerror or error}.") from error
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        if created and not any(out.iterdir()):
            out.rmdir()
    return {
        "model": builtin.name,
        "path": str(out),
        "architecture": type(loaded.model).__name__,
        "auto_class": auto.__name__,
        "dtype": str(next(loaded.model.parameters()).dtype).removeprefix("torch."),
        "files": {f: (out / f).stat().st_size for f in files},
        "weights_sha256": weights_sha256(out),
    }


def _prepare_folder(out: Path, force: bool) -> bool:
    """Check ``out`` can take the export and create it; True when it was created here."""
    if out.exists() and not out.is_dir():
        raise VizError(f"'{out}' is a file: give --out a folder (new or empty).")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise VizError(f"'{out}' is not empty: give a new or empty folder, or --force to replace its model files.")
    existed = out.is_dir()
    try:
        out.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out).close()
    except OSError as error:
        raise VizError(f"Cannot write to '{out}': {error.strerror or error}.") from error
    return not existed


def _save(loaded: LoadedModel, folder: Path) -> None:
    tokenizer = loaded.tokenizer
    if loaded.is_decoder and tokenizer.eos_token_id is None and tokenizer.sep_token_id is not None:
        # A BERT-style decoder ends a text with [SEP], where the app's generation stops: plain
        # transformers' generate() must stop there too (the model is a fresh load, not the app's).
        loaded.model.generation_config.eos_token_id = tokenizer.sep_token_id
        loaded.model.generation_config.pad_token_id = tokenizer.pad_token_id
    if loaded.is_decoder:
        # The tokens training never taught (unused slots, [PAD], [MASK], ...): the app never draws them, so
        # plain transformers' generate() must not either (its SuppressTokensLogitsProcessor sets them to -inf).
        from vizcore.decoder.vocabulary import banned_tokens

        loaded.model.generation_config.suppress_tokens = banned_tokens(loaded).never.nonzero().flatten().tolist()
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    _drop_load_settings(folder / "tokenizer_config.json")


LOAD_SETTINGS = ("local_files_only",)  # how this process loaded the tokenizer (HF_HUB_OFFLINE), not what it is


def _drop_load_settings(path: Path) -> None:
    """transformers writes the tokenizer's load-time arguments into its config, so the same export gave
    other bytes with and without HF_HUB_OFFLINE set ("local_files_only": true / false): they are removed."""
    if not path.is_file():
        return
    config = json.loads(path.read_text(encoding="utf-8"))
    if any(key in config for key in LOAD_SETTINGS):
        kept = {key: value for key, value in config.items() if key not in LOAD_SETTINGS}
        path.write_text(json.dumps(kept, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def _check_reload(loaded: LoadedModel, folder: Path, auto: type) -> None:
    """The folder, loaded back by plain transformers, must give what the app's model gives, bit for bit."""
    reloaded = auto.from_pretrained(folder, attn_implementation="eager").eval()
    inputs = loaded.tokenizer(CHECK_TEXT, CHECK_PAIR, return_tensors="pt")
    with torch.no_grad():
        ours, theirs = _outputs(loaded.model, inputs), _outputs(reloaded, inputs)
    if ours.keys() != theirs.keys():
        raise VizError(f"The exported folder loads with other heads ({', '.join(theirs)}) than '{loaded.name}' "
                       f"({', '.join(ours)}); nothing was written.")
    for name, tensor in ours.items():
        if not torch.equal(tensor, theirs[name]):
            difference = (tensor - theirs[name]).abs().max().item()
            raise VizError(f"The exported folder does not reproduce '{loaded.name}' ({name}: max difference "
                           f"{difference:.3g}); nothing was written.")


def _outputs(model: PreTrainedModel, inputs) -> dict[str, torch.Tensor]:
    """Every head's logits (or the last hidden state of a bare model), by name."""
    output = model(**inputs, use_cache=False) if getattr(model.config, "is_decoder", False) else model(**inputs)
    return {name: output[name] for name in CHECKED_OUTPUTS if output.get(name) is not None}


def _move_into(staging: Path, out: Path) -> list[str]:
    """Copy, not rename: new files get the user's usual permissions (transformers writes some 0600)."""
    names = sorted(p.name for p in staging.iterdir() if p.is_file())
    for name in names:
        shutil.copyfile(staging / name, out / name)
    return names


def weights_sha256(folder: Path) -> str:
    """sha256 of the weights: of ``model.safetensors`` (of all ``*.safetensors`` in name order if sharded)."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")):
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
