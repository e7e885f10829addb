"""The offline masked-LM: the embedded all-MiniLM-L6-v2 plus the tensors MLM training changed.

``tools.mlm_training export`` writes ``vizcore/weights/minilm-mlm.safetensors`` (fp16, only what
changed: encoder layers, the MLM head, the [MASK] row of the word embeddings) and
``minilm-mlm.json`` (metrics, corpus, learning curve). The built-in model ``minilm-mlm-tuned`` is
listed in ``vizcore.model.catalog`` and names ``checked_source`` and ``apply_trained_weights`` here:
loading it reads the embedded encoder and applies those tensors, so the weights in the repo stay a
few MB. ``VIZCORE_MLM_WEIGHTS`` points to another weights file (the metrics file is looked for
beside it, same stem, ``.json``).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import torch
from transformers import PreTrainedModel

from vizcore.errors import VizError
from vizcore.model.catalog import MLM_LABEL, MLM_MODEL, embedded_minilm_path  # noqa: F401  (MLM_MODEL: re-exported)

MASK_ROW_KEY = "mask_embedding"  # the [MASK] row of the word embeddings, stored beside the changed tensors

ONLINE_ALTERNATIVE = "bert-base-uncased"
WEIGHTS_ENV = "VIZCORE_MLM_WEIGHTS"
DEFAULT_WEIGHTS = Path(__file__).resolve().parents[1] / "weights" / "minilm-mlm.safetensors"
EXPORT_HINT = (
    "python -m tools.mlm_training build-corpus --work-dir .mlm-work, then train --work-dir .mlm-work, "
    "then export --work-dir .mlm-work"
)


def weights_path() -> Path:
    """Where the shipped (or, with ``VIZCORE_MLM_WEIGHTS``, another) weights file is."""
    return Path(os.environ.get(WEIGHTS_ENV) or DEFAULT_WEIGHTS).expanduser()


def metrics_path() -> Path:
    return weights_path().with_suffix(".json")


def weights_available() -> bool:
    return weights_path().is_file()


def checked_source() -> Path:
    """The catalogue's ``folder`` of ``minilm-mlm-tuned``: the embedded encoder's folder, once the
    trained tensors are known to exist (so a missing file fails before seconds of loading)."""
    if not weights_available():
        raise VizError(
            f"The masked-LM weights '{weights_path()}' are missing: make them with {EXPORT_HINT} "
            f"(or, online, use {ONLINE_ALTERNATIVE})."
        )
    return embedded_minilm_path()


# A file may carry heads the model being loaded does not have (a bare encoder reads the masked-LM's
# file; a masked-LM reads the NSP file's pooler and classifier): those are skipped, nothing else is.
_HEADS_A_MODEL_MAY_LACK = ("cls.", "pooler.", "bert.pooler.")


def apply_changed_state(model, state: dict[str, torch.Tensor], mask_id: int) -> None:
    """Load ``changed_state`` (or the shipped fp16 file) into a BertForMaskedLM or a bare BertModel."""
    is_mlm = hasattr(model, "cls")
    own = model.state_dict()
    updates, unfit = {}, []
    for key, value in state.items():
        if key == MASK_ROW_KEY:
            continue
        target = key if is_mlm else key.removeprefix("bert.")
        if target in own:
            updates[target] = value.to(own[target].dtype)
        elif not target.startswith(_HEADS_A_MODEL_MAY_LACK):
            unfit.append(key)
    if unfit or not updates:
        raise ValueError(f"weights do not fit this model: {unfit[:3] or 'no tensor of the file is in it'}")
    model.load_state_dict(updates, strict=False)
    if MASK_ROW_KEY not in state:  # a file of later layers only (the next-sentence run's)
        return
    embeddings = model.bert.embeddings if is_mlm else model.embeddings
    with torch.no_grad():
        embeddings.word_embeddings.weight[mask_id] = state[MASK_ROW_KEY].to(embeddings.word_embeddings.weight.dtype)


@lru_cache(maxsize=1)
def _mask_token_id() -> int:
    from transformers import AutoTokenizer

    return int(AutoTokenizer.from_pretrained(str(embedded_minilm_path())).mask_token_id)


def apply_weights_file(model: PreTrainedModel, path: Path, what: str, require_head: str | None = None) -> None:
    """A shipped file of changed tensors (``apply_changed_state``) into a freshly loaded model, or a
    VizError saying what to do; ``require_head``: a key prefix the file must cover (the trained head)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        state = load_file(str(path))
    except (OSError, SafetensorError) as error:
        raise VizError(f"The {what} weights '{path}' could not be read ({error}); re-run the export.") from error
    try:
        apply_changed_state(model, state, _mask_token_id())
    except (KeyError, ValueError, RuntimeError) as error:
        raise VizError(f"The {what} weights '{path}' do not fit the embedded encoder: {error}") from error
    if require_head:
        untrained = [k for k in model.state_dict() if k.startswith(require_head) and k not in state
                     and not k.endswith("decoder.weight")]  # the decoder is tied to the word embeddings
        if untrained:
            raise VizError(f"The {what} weights '{path}' lack the trained head ({untrained[0]}); re-run the export.")


def apply_trained_weights(model: PreTrainedModel, head: str) -> None:
    """The catalogue's ``patch`` of ``minilm-mlm-tuned``: the trained tensors into a fresh
    BertForMaskedLM (or BertModel)."""
    apply_weights_file(model, weights_path(), "masked-LM", require_head="cls." if head == "mlm" else None)


def read_metrics(path: Path) -> dict | None:
    """What an export recorded beside its weights (best checkpoint, corpus, curve), or None when there is
    no readable metrics file (the UI then shows the model without its numbers)."""
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return None


def training_metrics() -> dict | None:
    return read_metrics(metrics_path())


def summary_line() -> str:
    """One sentence for the UI: what the model is and how well it was measured to do."""
    metrics = training_metrics()
    text = (f"{MLM_LABEL}: the embedded all-MiniLM-L6-v2 fine-tuned in this repo on offline English text "
            f"to predict masked words. Online? `{ONLINE_ALTERNATIVE}` is the original BERT masked-LM.")
    if metrics and "best" in metrics:
        best = metrics["best"]
        # two decimals: one would round 59.97 % up to the 60 % goal
        text += (f" Measured: {best['heldout_top5']:.2%} top-5 / {best['heldout_top1']:.2%} top-1 on held-out "
                 f"masked tokens after {best['step']:,} steps; {best['probes_right']} of 40 everyday probes.")
    return text
