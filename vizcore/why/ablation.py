"""Switch heads off and watch the answer change: head ablation on the masked-LM (and a classifier).

A head is ablated at the input of the attention's output projection W_O, where each head's output
sits in its own slice (``vizcore.model.run``): ``zero`` sets its slice to 0, ``mean`` to the head's mean
output over ``REFERENCE_SENTENCES`` (one vector per head, the same at every position: the head says
"what it usually says", and only what is specific to this sentence is lost). The model's weights are
never touched. Ablating no heads runs exactly the plain forward pass, so every number equals the
Fill-mask page's to the last bit.

Shapes: L layers, H heads, T tokens, M masks, V vocabulary, d_head = one head's width.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from vizcore.errors import VizError
from vizcore.finetune.analysis import js_divergence
from vizcore.finetune.classify import SequenceClassifier, encode_texts, predict_proba
from vizcore.finetune.tasks import collate, pad_id_of
from vizcore.mlm.fill_mask import forward as mlm_forward
from vizcore.mlm.fill_mask import top_predictions
from vizcore.model.loading import LoadedModel
from vizcore.model.run import HeadAblation, head_output_hooks, hooks, intervention_hooks
from vizcore.model.run import forward as core_forward
from vizcore.why.examples import REFERENCE_SENTENCES
from vizcore.why.targets import masked_input, word_id

MAX_TOP_K = 15  # words shown before and after, per mask: the page's slider and the CLI alike (issue 35 E)

MODES = ("zero", "mean")
Head = tuple[int, int]  # (layer, head), 0-based


def parse_heads(spec: str, num_layers: int, num_heads: int) -> list[Head]:
    """``"3:5,4:1"`` (1-based ``layer:head``, as in the UI and the CLI) -> ``[(2, 4), (3, 0)]``, checked."""
    heads: list[Head] = []
    for part in (p.strip() for p in (spec or "").split(",")):
        if not part:
            continue
        match = re.fullmatch(r"(\d+)\s*[:.]\s*(\d+)", part)
        if match is None:
            raise VizError(f"'{part}' is not a head: write layer:head, 1-based, e.g. 3:5 (layer 3, head 5).")
        layer, head = int(match[1]), int(match[2])
        if not (1 <= layer <= num_layers and 1 <= head <= num_heads):
            wrong = " and ".join(what for what, bad in ((f"layer {layer} (it has layers 1-{num_layers})",
                                                         not 1 <= layer <= num_layers),
                                                        (f"head {head} (heads 1-{num_heads} in each layer)",
                                                         not 1 <= head <= num_heads)) if bad)
            raise VizError(f"Layer {layer}, head {head} does not exist ({part}): the model has no {wrong}.")
        if (layer - 1, head - 1) not in heads:
            heads.append((layer - 1, head - 1))
    return heads


def format_heads(heads: Sequence[Head]) -> str:
    """The inverse of ``parse_heads``: ``[(2, 4), (3, 0)]`` -> ``"3:5,4:1"``."""
    return ",".join(f"{layer + 1}:{head + 1}" for layer, head in heads)


def head_means(loaded: LoadedModel, sentences: Sequence[str] = REFERENCE_SENTENCES,
               batch_size: int = 16) -> np.ndarray:
    """Each head's mean output over every real token of ``sentences``: float32 ``[L, H, d_head]``."""
    if not sentences:
        raise VizError("Mean ablation needs at least one reference sentence.")
    sums: dict[int, torch.Tensor] = {}
    count = 0

    def add(layer: int, heads: torch.Tensor) -> None:  # (B, T, H, d_head)
        real = current_mask[:, :, None, None].to(heads.dtype)  # (B, T, 1, 1)
        sums[layer] = sums.get(layer, 0) + (heads * real).sum((0, 1)).double()  # (H, d_head)

    specs = head_output_hooks(loaded, add)
    ids = encode_texts(loaded.tokenizer, list(sentences), loaded.max_length)
    for start in range(0, len(ids), batch_size):
        batch = collate(ids[start:start + batch_size], pad_id_of(loaded.tokenizer), loaded.device, loaded.model)
        current_mask = batch["attention_mask"]
        count += int(current_mask.sum())
        core_forward(loaded, batch, specs, hidden=False, attention=False, base_only=True)
    return (torch.stack([sums[i] for i in range(len(sums))]) / count).float().cpu().numpy()


def ablations(heads: Sequence[Head], mode: str, means: np.ndarray | None = None) -> list[HeadAblation]:
    if mode not in MODES:
        raise VizError(f"Unknown ablation mode '{mode}': choose zero or mean.")
    if mode == "mean" and means is None and heads:
        raise VizError("Mean ablation needs the heads' mean outputs (head_means).")
    return [HeadAblation(layer, head, None if mode == "zero" else means[layer, head]) for layer, head in heads]


@dataclass(frozen=True)
class MaskEffect:
    """One mask before and after: top-k each way, and the chosen word's probability each way."""

    index: int  # token position of the mask
    baseline: list  # [Prediction] (vizcore.mlm.fill_mask), top-k of the plain model
    ablated: list  # [Prediction], top-k with the heads switched off
    word: str | None
    word_before: float | None
    word_after: float | None
    compared: list[tuple[str, float, float]]  # (word, before, after) for the union of both top-k, best first

    def to_dict(self) -> dict:
        def plain(predictions: list) -> list[dict]:
            return [{"token": p.token, "score": p.score} for p in predictions]

        record = {"index": self.index, "baseline": plain(self.baseline), "ablated": plain(self.ablated)}
        if self.word is not None:
            record["word"] = {"token": self.word, "before": self.word_before, "after": self.word_after}
        return record


@dataclass(frozen=True)
class AblationResult:
    model: str
    text: str
    tokens: list[str]
    heads: list[Head]  # 0-based (layer, head)
    mode: str
    masks: list[MaskEffect]
    attention_before: np.ndarray  # float32 [L, H, T, T]
    attention_after: np.ndarray  # float32 [L, H, T, T]

    def attention_change(self) -> np.ndarray:
        """How far each head's attention moved, float32 ``[L, H]``: the Jensen-Shannon divergence (bits; 0 =
        unchanged, 1 = disjoint) between its rows before and after, averaged over query tokens, as the
        Fine-tuning lab measures what training changed. Layers up to the first ablated one do not move."""
        return js_divergence(self.attention_before, self.attention_after).mean(-1).astype(np.float32)

    def to_dict(self) -> dict:
        return {"model": self.model, "text": self.text, "tokens": list(self.tokens),
                "heads": [[layer, head] for layer, head in self.heads], "mode": self.mode,
                "masks": [m.to_dict() for m in self.masks]}


def ablate_mlm(loaded: LoadedModel, text: str, heads: Sequence[Head], mode: str = "zero", top_k: int = 5,
               word: str | None = None, means: np.ndarray | None = None) -> AblationResult:
    """The masked-LM's answer at every mask of ``text`` with and without ``heads`` (0-based), and every
    layer's attention both ways. ``word``: a word whose probability to follow (one token)."""
    if not 1 <= top_k <= MAX_TOP_K:
        raise VizError(f"top-k must be between 1 and {MAX_TOP_K}, not {top_k}.")
    if mode == "mean" and means is None and heads:
        means = head_means(loaded)
    specs = intervention_hooks(loaded, ablations(heads, mode, means))
    target = masked_input(loaded, text)
    chosen = None if word is None else word_id(loaded, word, "word to follow")
    before = mlm_forward(loaded, target.inputs, target.masks)
    after = mlm_forward(loaded, target.inputs, target.masks, specs=specs)
    ids = target.inputs["input_ids"][0]
    effects = []
    for i, (plain, changed) in enumerate(zip(top_predictions(loaded, ids, before.mask_logits, target.masks, top_k),
                                             top_predictions(loaded, ids, after.mask_logits, target.masks, top_k))):
        p_before, p_after = (out.mask_logits[i].float().softmax(-1) for out in (before, after))  # (V,) each
        union = list(dict.fromkeys([p.token_id for p in plain.predictions + changed.predictions]))
        compared = [(loaded.tokenizer.decode([t]).strip(), float(p_before[t]), float(p_after[t])) for t in union]
        probability = (None, None) if chosen is None else (float(p_before[chosen]), float(p_after[chosen]))
        effects.append(MaskEffect(plain.index, plain.predictions, changed.predictions,
                                  None if word is None else word.strip(), *probability, compared=compared))
    return AblationResult(model=loaded.name, text=text, tokens=target.tokens, heads=list(heads), mode=mode,
                          masks=effects, attention_before=_stack(before.attentions),
                          attention_after=_stack(after.attentions))


def _stack(attentions: Sequence[torch.Tensor]) -> np.ndarray:
    return torch.stack([a[0] for a in attentions]).float().cpu().numpy()  # (L, H, T, T)


@dataclass(frozen=True)
class ClassifierEffect:
    labels: tuple[str, ...]
    before: np.ndarray  # float32 [classes]: probabilities of the plain classifier
    after: np.ndarray  # float32 [classes]: with the heads switched off


def classifier_probabilities(classifier: SequenceClassifier, encoder: LoadedModel, text: str, max_length: int,
                             heads: Sequence[Head] = (), mode: str = "zero",
                             means: np.ndarray | None = None) -> np.ndarray:
    """Class probabilities ``[classes]`` of a fine-tuned classifier on ``text``, with ``heads`` of its
    encoder (``encoder``: the classifier's encoder as a LoadedModel) ablated."""
    specs = intervention_hooks(encoder, ablations(heads, mode, means)) if heads else []
    with hooks(classifier.encoder, specs):
        return predict_proba(classifier, encoder.tokenizer, [text], max_length)[0]


def ablate_classifier(classifier: SequenceClassifier, encoder: LoadedModel, labels: Sequence[str], text: str,
                      max_length: int, heads: Sequence[Head], mode: str = "zero",
                      means: np.ndarray | None = None) -> ClassifierEffect:
    """``means``: the encoder's ``head_means`` for mean ablation (computed here when not given)."""
    if mode == "mean" and heads and means is None:
        means = head_means(encoder)
    return ClassifierEffect(
        labels=tuple(labels),
        before=classifier_probabilities(classifier, encoder, text, max_length),
        after=classifier_probabilities(classifier, encoder, text, max_length, heads, mode, means))

