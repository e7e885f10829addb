"""The base-size masked-LM ``mpnet-mlm-tuned`` (issue 48): the installed all-mpnet-base-v2 plus the tensors trained in
this repository (``python -m tools.mpnet_mlm train``, then ``export``).

``vizcore/weights/mpnet-mlm.safetensors`` holds low-rank adapters for every layer, MPNet's masked-LM head and the
``<mask>`` row (``vizcore.mlm.adapters``), fp16, a few MB; ``mpnet-mlm.json`` beside it what was measured (held-out
and demo-set top-1, top-5 and copied top-1, the curve, the data). Loading merges them into the plain encoder, so the
pages, the CLI and ``export-model`` see an ordinary ``MPNetForMaskedLM``. ``VIZCORE_MPNET_MLM_WEIGHTS`` points to
another weights file.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from transformers import PreTrainedModel

from vizcore.errors import VizError
from vizcore.model.catalog import BASE_MLM_LABEL, BASE_MLM_MODEL, BASE_MODEL
from vizcore.model.catalog import base_mlm_weights as weights_path

EXPORT_HINT = "python -m tools.mpnet_mlm train, then python -m tools.mpnet_mlm export"


def weights_available() -> bool:
    return weights_path().is_file()


def checked_source() -> Path:
    """The catalogue's ``folder`` of ``mpnet-mlm-tuned``: the installed base model's folder, once the trained
    tensors are known to exist."""
    from vizcore.model.install import mpnet_path

    if not weights_available():
        raise VizError(f"The base-size masked-LM's weights '{weights_path()}' are missing: make them with "
                       f"{EXPORT_HINT}.")
    return mpnet_path()


@lru_cache(maxsize=1)
def _mask_token_id() -> int:
    from transformers import AutoTokenizer

    from vizcore.model.install import mpnet_path

    return int(AutoTokenizer.from_pretrained(str(mpnet_path())).mask_token_id)


def apply_trained_weights(model: PreTrainedModel, head: str) -> None:
    """The catalogue's ``patch``: merge the shipped adapters, head and ``<mask>`` row into the fresh model."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from vizcore.mlm.adapters import merge_changed_state

    path = weights_path()
    try:
        state = load_file(str(path))
    except (OSError, SafetensorError) as error:
        raise VizError(f"The base-size masked-LM's weights '{path}' could not be read ({error}); "
                       f"re-run the export.") from error
    try:
        merge_changed_state(model, state, _mask_token_id())
    except (KeyError, ValueError, RuntimeError) as error:
        raise VizError(f"The base-size masked-LM's weights '{path}' do not fit {BASE_MODEL}: {error}") from error


def training_metrics() -> dict | None:
    from vizcore.mlm.weights import read_metrics

    return read_metrics(weights_path().with_suffix(".json"))


def summary_line() -> str:
    """One sentence for the UI: what the model is and what it was measured to do."""
    text = (f"{BASE_MLM_LABEL}: the installed base-size {BASE_MODEL} (12 layers x 12 heads) with low-rank adapters "
            "and a masked-LM head trained in this repo to fill blanks again.")
    metrics = training_metrics()
    if metrics and "best" in metrics:
        best = metrics["best"]
        text += (f" Measured: {best['heldout_top1']:.1%} top-1 on held-out masked words; on {best['demo_sentences']} "
                 f"well-known cloze sentences it never trained on, {best['demo_top1']:.0%} right first and "
                 f"{best['demo_copied']:.0%} copied from the sentence.")
    return text


__all__ = ["BASE_MLM_MODEL", "apply_trained_weights", "checked_source", "summary_line", "weights_path"]
