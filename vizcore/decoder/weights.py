"""The offline causal LM: the embedded all-MiniLM-L6-v2 plus the tensors next-token training changed.

``tools.clm_training export`` writes ``vizcore/weights/minilm-causal.safetensors`` (fp16, only what
changed from the embedded encoder: every encoder layer, the position and segment embeddings, the head's
transform and bias, and the masked-LM's [MASK] row) and ``minilm-causal.json`` (held-out measures of
the shipped file, corpus, learning curve). The built-in ``minilm-causal-tuned`` (``vizcore.model.catalog``)
loads the embedded encoder as ``BertLMHeadModel`` with ``is_decoder=True`` (a causal mask on the same
weights) and applies those tensors here. ``VIZCORE_CAUSAL_WEIGHTS`` points to another weights file.
"""

from __future__ import annotations

import os
from pathlib import Path

from transformers import PreTrainedModel

from vizcore.errors import VizError
from vizcore.model.catalog import CAUSAL_LABEL, embedded_minilm_path

WEIGHTS_ENV = "VIZCORE_CAUSAL_WEIGHTS"
DEFAULT_WEIGHTS = Path(__file__).resolve().parents[1] / "weights" / "minilm-causal.safetensors"
EXPORT_HINT = "python -m tools.clm_training train --work-dir .clm-work, then export --work-dir .clm-work"
ONLINE_ALTERNATIVE = "gpt2"


def weights_path() -> Path:
    return Path(os.environ.get(WEIGHTS_ENV) or DEFAULT_WEIGHTS).expanduser()


def checked_source() -> Path:
    """The catalogue's ``folder``: the embedded encoder's folder, once the trained tensors exist."""
    if not weights_path().is_file():
        raise VizError(f"The causal-LM weights '{weights_path()}' are missing: make them with {EXPORT_HINT} "
                       f"(or, online, use {ONLINE_ALTERNATIVE}).")
    return embedded_minilm_path()


def apply_trained_weights(model: PreTrainedModel, head: str) -> None:
    """The catalogue's ``patch``: the trained tensors into a fresh BertLMHeadModel (or BertModel)."""
    from vizcore.mlm.weights import apply_weights_file

    apply_weights_file(model, weights_path(), "causal-LM", require_head="cls." if head == "causal-lm" else None)


def training_metrics() -> dict | None:
    from vizcore.mlm.weights import read_metrics

    return read_metrics(weights_path().with_suffix(".json"))


def summary_line() -> str:
    """One sentence for the UI: what the model is and how well it was measured to do."""
    text = (f"{CAUSAL_LABEL}: the MLM-tuned MiniLM turned decoder (a causal mask on the same weights) and "
            f"trained in this repo on offline English text to predict the next token. It is small and "
            f"was trained for a few hours on a CPU: expect plausible next words, not GPT-2. "
            f"Online? `{ONLINE_ALTERNATIVE}` is a real GPT.")
    metrics = training_metrics()
    if metrics and "shipped" in metrics:
        shipped = metrics["shipped"]
        text += (f" Measured: {shipped['heldout_top5']:.1%} top-5 / {shipped['heldout_top1']:.1%} top-1 next-token "
                 f"accuracy and perplexity {shipped['heldout_perplexity']:.0f} on held-out text, after "
                 f"{metrics['best']['step']:,} steps.")
    return text
