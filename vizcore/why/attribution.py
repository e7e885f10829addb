"""Token attribution: which input tokens one output depends on, by four methods side by side.

The output ``f`` is a probability: a masked-LM answer's at the ``[MASK]`` (the first one when the
sentence has several: the others stay masked, and ``mask_index`` says which one is explained), or a
fine-tuned classifier's class probability on the unmasked sentence. Each method gives one number
per token, ``[T]``:

* gradient x input (Shrikumar et al. 2017): the gradient of ``f`` with respect to a token's word
  embedding times that embedding, summed over the embedding's dimensions;
* integrated gradients (Sundararajan et al. 2017, with Captum): the same product with the gradient
  averaged on the straight path from ``BASELINE`` to the input. Completeness: the attributions sum
  to ``f(x) - f(baseline)`` up to the path integral's quadrature error, reported as ``gap``; the
  path's points run in batched backward passes (``batch_rows`` of them at once);
* occlusion (leave one out): ``f(x) - f(x without token i)``, each ordinary token removed from the
  sequence (not replaced), the shorter sequences batched (all at once for a short sentence);
* attention rollout (Abnar & Zuidema 2020): attention averaged over heads with the residual added,
  ``0.5 A + 0.5 I``, rows renormalised, multiplied through the layers; the row of the position ``f``
  reads (the mask; for a classifier, the mean of the rows it pools, or [CLS]'s row).

The special tokens ([CLS], [SEP]) and the mask are kept in every perturbed input, so integrated
gradients and occlusion give them 0; rank correlations (Spearman) are over the ordinary tokens only.
Gradients are taken with respect to word embeddings: the model adds positions and segments itself,
to the input and to the baseline alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from vizcore.attention.aggregate import attention_rollout
from vizcore.errors import VizError
from vizcore.finetune.classify import encode_texts
from vizcore.finetune.tasks import collate, pad_id_of
from vizcore.finetune.training import FinetuneResult
from vizcore.mlm.fill_mask import decode_token
from vizcore.model.loading import LoadedModel
from vizcore.model.run import check_text
from vizcore.model.run import forward as core_forward
from vizcore.why.importance import rank_correlation as spearman
from vizcore.why.targets import mask_logits, masked_input, word_id

METHODS = {
    "integrated-gradients": "Integrated gradients",
    "grad-x-input": "Gradient × input",
    "occlusion": "Occlusion (leave one out)",
    "rollout": "Attention rollout",
}
# The sentences on which DEFAULT_STEPS was chosen (the measured gaps are in docs/WHY.md).
EXAMPLES = (
    "The capital of France is [MASK].",
    "The cat sat on the [MASK].",
    "She drank a cup of [MASK] every morning.",
    "The sun rises in the [MASK].",
    "I wrote the letter with a [MASK].",
    "Birds can [MASK] in the sky.",
    "He went to the [MASK] to buy some bread.",
)
QUADRATURES = ("gausslegendre", "riemann_trapezoid", "riemann_middle", "riemann_left", "riemann_right")
QUADRATURE = "gausslegendre"  # Captum's default; its riemann_trapezoid weights sum to 1 - 1/steps
DEFAULT_STEPS = 50  # the fewest of 16, 32, 50, 64, 100, 200 with a gap under 1 % on every example
MAX_STEPS = 400  # the page's slider and the CLI alike (issue 35 E); 8x the default, far past a 1 % gap
# Occlusion runs the model once per token and integrated gradients 50 times with gradients: at 128 tokens
# all four methods take about 6 s on two CPU cores, at 250 about 17 s.
MAX_TOKENS = 128
BASELINE = ("every ordinary token's word embedding replaced by the padding token's; [CLS], [SEP] and the "
            "[MASK] kept; the model adds positions and segments to both")
# Path points per batched pass: attention costs T x T per head and point, so the batch shrinks with the
# square of the length (a 12-token sentence runs all 50 points at once, 512 tokens one at a time);
# beyond 64 points a pass is no faster per point on a CPU (measured), only bigger.
_BATCH_CELLS = 2 ** 18
_BATCH_ROWS = 64

Probability = Callable[[dict[str, torch.Tensor], Sequence[int], bool], torch.Tensor]


@dataclass(frozen=True)
class Target:
    """The output explained, ``f``, a probability, on one sequence of T tokens."""

    token: str  # the answer word, or the class name
    output: int  # the answer's vocabulary id, or the class index
    tokens: list[str]
    inputs: dict[str, torch.Tensor]  # the sequence: input_ids and the rest, (1, T) each
    ordinary: np.ndarray  # bool [T]: the tokens attributed (not special, not the mask)
    readout: tuple[int, ...]  # the positions f reads (the mask; the pooled tokens): rollout's rows
    embeddings: torch.nn.Module  # the model's word embeddings
    pad_id: int
    probability: Probability  # (batch of inputs, each row's mask position, grad) -> f per row, (B,)
    attention: Callable[[dict[str, torch.Tensor]], tuple[torch.Tensor, ...]]  # inputs -> L x (1, H, T, T)
    mask_index: int | None = None  # the explained mask's position (None for a classifier)

    @property
    def num_tokens(self) -> int:
        return len(self.tokens)


def answer_target(loaded: LoadedModel, text: str, answer: str | None = None) -> Target:
    """f = the probability of ``answer`` (default: the top prediction) at the first mask of ``text``."""
    masked = masked_input(loaded, text)
    _check_length(masked.num_tokens)
    mask = masked.masks[0]
    if answer is None or not answer.strip():
        answer_id = int(mask_logits(loaded, masked.inputs, mask).argmax(-1)[0])
    else:
        answer_id = word_id(loaded, answer)
    special = set(loaded.tokenizer.all_special_ids)

    def probability(batch: dict[str, torch.Tensor], positions: Sequence[int], grad: bool) -> torch.Tensor:
        return mask_logits(loaded, batch, positions, grad=grad).float().softmax(-1)[:, answer_id]

    def attention(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        return core_forward(loaded, batch, hidden=False, attention=True, base_only=True).attentions

    ids = masked.inputs["input_ids"][0].tolist()
    return Target(token=decode_token(loaded, answer_id).strip(), output=answer_id, tokens=masked.tokens,
                  inputs=masked.inputs, ordinary=np.array([i not in special for i in ids]), readout=(mask,),
                  embeddings=loaded.model.get_input_embeddings(), pad_id=pad_id_of(loaded.tokenizer),
                  probability=probability, attention=attention, mask_index=mask)


def class_target(result: FinetuneResult, text: str, label: int | None = None) -> Target:
    """f = the fine-tuned classifier's probability of class ``label`` (default: its prediction) for ``text``."""
    classifier, tokenizer = result.classifier, result.tokenizer
    device = next(classifier.parameters()).device
    ids = encode_texts(tokenizer, [check_text(text)], result.config.max_length)[0]
    _check_length(len(ids))
    inputs = collate([ids], pad_id_of(tokenizer), device, classifier.encoder)
    with torch.no_grad():
        chosen = int(classifier(inputs).argmax(-1)[0]) if label is None else label
    if not 0 <= chosen < len(result.label_names):
        raise VizError(f"Class {chosen} does not exist: the classifier has {len(result.label_names)} classes "
                       f"({', '.join(result.label_names)}).")

    def probability(batch: dict[str, torch.Tensor], positions: Sequence[int], grad: bool) -> torch.Tensor:
        with torch.enable_grad() if grad else torch.no_grad():
            return classifier(batch).float().softmax(-1)[:, chosen]

    def attention(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        with torch.no_grad():
            return classifier.encoder(**batch, output_attentions=True).attentions

    special = set(tokenizer.all_special_ids)
    return Target(token=result.label_names[chosen], output=chosen, tokens=tokenizer.convert_ids_to_tokens(ids),
                  inputs=inputs, ordinary=np.array([i not in special for i in ids]),
                  readout=(0,) if classifier.pooling == "cls" else tuple(range(len(ids))),
                  embeddings=classifier.encoder.get_input_embeddings(), pad_id=pad_id_of(tokenizer),
                  probability=probability, attention=attention)


def _check_length(count: int) -> None:
    if count > MAX_TOKENS:
        raise VizError(f"Token attribution is limited to {MAX_TOKENS} tokens (this input has {count}): it runs the "
                       "model once per token, and dozens of times with gradients. Shorten the sentence.")


# ---- f of word embeddings ----------------------------------------------------------------------

def f_of_embeddings(target: Target, embeds: torch.Tensor, grad: bool = True) -> torch.Tensor:
    """f (B,) of word embeddings ``embeds`` (B, T, D); with ``grad``, differentiable with respect to them."""
    rows = embeds.shape[0]
    rest = {name: value.expand(rows, -1) for name, value in target.inputs.items() if name != "input_ids"}
    return target.probability({"inputs_embeds": embeds, **rest}, [target.readout[0]] * rows, grad)


def input_embeddings(target: Target) -> torch.Tensor:
    """The sequence's word embeddings, (1, T, D), detached."""
    with torch.no_grad():
        return target.embeddings(target.inputs["input_ids"]).detach()


def baseline_embeddings(target: Target) -> torch.Tensor:
    """``BASELINE``: the ordinary tokens' word embeddings replaced by the padding token's, (1, T, D)."""
    ids = target.inputs["input_ids"].clone()
    ids[0, torch.as_tensor(target.ordinary, device=ids.device)] = target.pad_id
    with torch.no_grad():
        return target.embeddings(ids).detach()


# ---- the methods -------------------------------------------------------------------------------

def grad_x_input(target: Target) -> np.ndarray:
    """Gradient x input per token, [T]: the sum over d of df/de[t, d] * e[t, d]."""
    embeds = input_embeddings(target).requires_grad_(True)
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(f_of_embeddings(target, embeds).sum(), embeds)
    return (grad * embeds).sum(-1)[0].detach().float().cpu().numpy()


@dataclass(frozen=True)
class Integrated:
    """Integrated gradients per token, [T], and the completeness check."""

    attributions: np.ndarray  # [T]
    f_input: float  # f(x)
    f_baseline: float  # f(baseline)
    steps: int
    quadrature: str

    @property
    def total(self) -> float:
        """The sum of the attributions; completeness says it equals ``delta``."""
        return float(self.attributions.sum())

    @property
    def delta(self) -> float:
        """f(x) - f(baseline)."""
        return self.f_input - self.f_baseline

    @property
    def gap(self) -> float:
        """|sum - delta| / |delta|: the path integral's relative error (inf when delta is 0)."""
        return abs(self.total - self.delta) / abs(self.delta) if self.delta else float("inf")


def check_steps(steps: int, quadrature: str = QUADRATURE) -> int:
    """``steps`` when integrated gradients can take it; a VizError otherwise."""
    if quadrature not in QUADRATURES:
        raise VizError(f"Unknown quadrature '{quadrature}': choose {', '.join(QUADRATURES)}.")
    low = 1 if quadrature == "gausslegendre" else 2
    if not low <= steps <= MAX_STEPS:
        raise VizError(f"The number of steps must be between {low} and {MAX_STEPS:,}; got {steps:,}.")
    return int(steps)


def batch_rows(num_tokens: int, steps: int) -> int:
    """Path points per batched backward pass: all of them for a short sentence, fewer for a long one."""
    return max(1, min(steps, _BATCH_ROWS, _BATCH_CELLS // (num_tokens * num_tokens)))


def integrated_gradients(target: Target, steps: int = DEFAULT_STEPS, internal_batch_size: int | None = None,
                         quadrature: str = QUADRATURE) -> Integrated:
    """Integrated gradients from ``baseline_embeddings`` to the input in ``steps`` points of ``quadrature``,
    ``internal_batch_size`` of them per forward and backward pass (default: ``batch_rows``)."""
    from captum.attr import IntegratedGradients  # here: captum imports matplotlib, which the CLI's parser needs not

    steps = check_steps(steps, quadrature)
    x, baseline = input_embeddings(target), baseline_embeddings(target)
    explainer = IntegratedGradients(lambda embeds: f_of_embeddings(target, embeds))
    with torch.enable_grad():
        attributions = explainer.attribute(x, baselines=baseline, n_steps=steps, method=quadrature,
                                           internal_batch_size=internal_batch_size or batch_rows(x.shape[1], steps))
    ends = f_of_embeddings(target, torch.cat([x, baseline]), grad=False)
    return Integrated(attributions=attributions.sum(-1)[0].detach().float().cpu().numpy(),
                      f_input=float(ends[0]), f_baseline=float(ends[1]), steps=steps, quadrature=quadrature)


def occlusion(target: Target) -> np.ndarray:
    """f(x) - f(x without token i) per token, [T]; 0 for the special tokens and the mask (never removed)."""
    removed = np.flatnonzero(target.ordinary)
    result = np.zeros(target.num_tokens, dtype=np.float32)
    if removed.size == 0:
        return result
    columns, mask = torch.arange(target.num_tokens), target.readout[0]
    full = target.probability(target.inputs, [mask], False)  # (1,)
    rows = 4 * batch_rows(target.num_tokens, _BATCH_ROWS)  # no backward pass: four times the rows fit
    for start in range(0, removed.size, rows):
        chunk = removed[start:start + rows]
        batch = {name: torch.cat([value[:, columns != i] for i in chunk]) for name, value in target.inputs.items()}
        without = target.probability(batch, [mask - int(i < mask) for i in chunk], False)  # (R,)
        result[chunk] = (full - without).float().cpu().numpy()
    return result


def rollout(target: Target) -> np.ndarray:
    """Attention rollout from the position(s) f reads to each token, [T] (the mean of those rows)."""
    layers = target.attention(target.inputs)
    attention = torch.stack([a[0] for a in layers]).float().cpu().numpy()  # [layer, head, query, key]
    return attention_rollout(attention)[-1][list(target.readout)].mean(0).astype(np.float32)


# ---- every method, and how they agree ----------------------------------------------------------

def rank_correlation(scores: dict[str, np.ndarray], ordinary: np.ndarray) -> np.ndarray:
    """Spearman's rank correlation between methods over the ordinary tokens, [method, method] in the
    order of ``scores`` (nan where fewer than 2 tokens, or a method gives them all the same value)."""
    columns = [np.asarray(values)[ordinary] for values in scores.values()]
    return np.array([[spearman(a, b) for b in columns] for a in columns])


@dataclass(frozen=True)
class Attribution:
    """Every method asked for, on one target: attributions [T] each, and their rank correlations."""

    token: str  # what f is the probability of
    score: float  # f(x)
    tokens: list[str]
    ordinary: np.ndarray  # bool [T]
    mask_index: int | None
    scores: dict[str, np.ndarray]  # method -> [T]
    integrated: Integrated | None  # when integrated gradients was asked for
    correlation: np.ndarray  # [method, method] in the order of ``scores``


def check_methods(methods: Sequence[str]) -> list[str]:
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise VizError(f"Unknown method '{unknown[0] if unknown else ''}': choose {', '.join(METHODS)}.")
    return list(methods)


def attribute(target: Target, methods: Sequence[str] = tuple(METHODS), steps: int = DEFAULT_STEPS) -> Attribution:
    """Run ``methods`` (keys of ``METHODS``) on ``target``."""
    scores, integrated = {}, None
    for method in check_methods(methods):
        if method == "integrated-gradients":
            integrated = integrated_gradients(target, steps)
            scores[method] = integrated.attributions
        else:
            scores[method] = {"grad-x-input": grad_x_input, "occlusion": occlusion, "rollout": rollout}[method](target)
    score = float(target.probability(target.inputs, [target.readout[0]], False)[0])
    return Attribution(token=target.token, score=score, tokens=list(target.tokens), ordinary=target.ordinary,
                       mask_index=target.mask_index, scores=scores, integrated=integrated,
                       correlation=rank_correlation(scores, target.ordinary))


def _completeness(ig: Integrated | None) -> dict | None:
    if ig is None:
        return None
    return {"sum": ig.total, "delta": ig.delta, "gap": ig.gap if np.isfinite(ig.gap) else None,
            "f_input": ig.f_input, "f_baseline": ig.f_baseline, "steps": ig.steps, "quadrature": ig.quadrature,
            "baseline": BASELINE}


def _common(attribution: Attribution, model: str) -> dict:
    return {"model": model, "tokens": attribution.tokens,
            "target": {"token": attribution.token, "score": attribution.score},
            "mask_index": attribution.mask_index, "ordinary": [bool(v) for v in attribution.ordinary]}


def to_json(attribution: Attribution, method: str, model: str) -> dict:
    """The CLI's record of one method (field names fixed): ``completeness`` for integrated gradients,
    with ``sum`` (of the attributions) and ``delta`` (f(x) - f(baseline)); null for the other methods."""
    ig = attribution.integrated if method == "integrated-gradients" else None
    return {**_common(attribution, model), "method": method,
            "attributions": [float(v) for v in attribution.scores[method]], "completeness": _completeness(ig)}


def to_dict(attribution: Attribution, model: str, text: str) -> dict:
    """Every method at once (the page's download): attributions per method, completeness, the rank correlations."""
    methods = list(attribution.scores)
    correlation = [[float(v) if np.isfinite(v) else None for v in row] for row in attribution.correlation]
    return {**_common(attribution, model), "text": text, "methods": methods,
            "attributions": {m: [float(v) for v in attribution.scores[m]] for m in methods},
            "completeness": _completeness(attribution.integrated),
            "correlation": {"methods": methods, "spearman": correlation}}
