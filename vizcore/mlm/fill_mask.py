"""Masked-word prediction with any Hugging Face masked-LM, in the stages of HF's FillMaskPipeline.

``preprocess`` (validate, put the model's own mask token in, tokenise, find the masks) ->
``forward`` (the model only: logits, hidden states, attention) -> ``postprocess`` (softmax over the
vocabulary at each mask, top-k, plain records). Results equal ``pipeline("fill-mask")``'s, token for
token and score for score; on top of them this module gives what a class wants to see:

* every mask's top-k, and ``fill_iteratively``: fill the masks one at a time, most confident first;
* the masked positions' attention rows, ``[layer, head, mask, key]``;
* the logit lens: the MLM head applied to every layer's hidden states (layer 0 = embeddings),
  showing how the prediction forms through the layers; and, for the offline masked-LM, the tuned lens
  (``vizcore.mlm.tuned_lens``): the same head after a per-layer affine translator trained for it;
* ``maskable_words`` / ``mask_word`` for "click a word to mask it".

``[MASK]`` or ``<mask>`` typed literally (any case) works for every model: it becomes the model's own
mask token (``[MASK]`` for BERT, ``<mask>`` for RoBERTa).
"""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from transformers import BatchEncoding, PreTrainedModel
from transformers.utils import ModelOutput

from vizcore.errors import VizError
from vizcore.mlm.tuned_lens import TunedLens, check_lens_fits, kl_to_final, tuned_lens_for
from vizcore.model.loading import LoadedModel
from vizcore.model.run import Hook, check_text, encode, model_inputs
from vizcore.model.run import forward as core_forward

LITERAL_MASK = "[MASK]"
TYPED_MASK = re.compile(r"\[mask\]|<mask>", re.IGNORECASE)  # what users type, whatever the model's own token
MAX_MASKS = 16  # iterative filling runs the model once per mask
MAX_TOP_K = 100
MAX_WORDS = 80  # words offered for "click a word to mask it"


@dataclass(frozen=True)
class Prediction:
    """One candidate for one mask. ``token`` is the decoded word, stripped; ``token_str`` as HF decodes it."""

    token_id: int
    token: str
    token_str: str
    score: float
    sequence: str

    def to_dict(self) -> dict:
        return {"token": self.token, "score": self.score, "token_id": self.token_id, "sequence": self.sequence}


@dataclass(frozen=True)
class MaskPredictions:
    index: int  # token position of the mask in ``tokens``
    predictions: list[Prediction]

    def to_dict(self) -> dict:
        return {"index": self.index, "predictions": [p.to_dict() for p in self.predictions]}


@dataclass(frozen=True)
class LogitLens:
    """Top predictions of the MLM head read off every layer. L1 = layers + 1 (row 0 = embeddings)."""

    token_ids: np.ndarray  # int [L1, mask, k]
    tokens: list[list[list[str]]]  # [L1][mask][k] decoded words
    probs: np.ndarray  # float32 [L1, mask, k]
    final_token_probs: np.ndarray  # float32 [L1, mask]: probability, per layer, of the final top-1 word
    kl_to_final: np.ndarray | None = None  # float32 [L1, mask]: KL(final distribution || this row's), nats

    @property
    def num_rows(self) -> int:
        return int(self.probs.shape[0])


@dataclass(frozen=True)
class FillMaskResult:
    model: str
    text: str  # as typed
    tokens: list[str]
    mask_indices: list[int]
    masks: list[MaskPredictions]
    mask_attention: np.ndarray  # float32 [layer, head, mask, key]
    lens: LogitLens | None
    lens_note: str  # why there is no lens, when there is none
    truncated: bool
    num_input_tokens: int
    tuned_lens: LogitLens | None = None  # the same rows read through the tuned lens's translators
    tuned_note: str = ""  # why there is no tuned lens, when there is none

    def to_dict(self) -> dict:
        return {"model": self.model, "text": self.text, "tokens": list(self.tokens),
                "masks": [m.to_dict() for m in self.masks], "truncated": self.truncated,
                "num_input_tokens": self.num_input_tokens}


@dataclass(frozen=True)
class FillStep:
    """One step of iterative filling: the mask chosen (highest top-1 probability) and what it became."""

    index: int
    token_id: int
    token: str
    score: float
    text: str  # the sentence after this step, remaining masks shown as the mask token


# ---- preprocess --------------------------------------------------------------------------------

def mask_token_of(loaded: LoadedModel) -> str:
    mask = loaded.tokenizer.mask_token
    if mask is None or loaded.tokenizer.mask_token_id is None:
        raise VizError(f"'{loaded.name}' has no mask token: it is not a masked-LM. Pick a masked-LM model.")
    return mask


def prepare_text(loaded: LoadedModel, text: str) -> str:
    """The text with every typed ``[MASK]`` / ``<mask>`` written as this model's mask token; at least one mask."""
    check_text(text)
    mask = mask_token_of(loaded)
    prepared = TYPED_MASK.sub(lambda _: mask, text)
    count = prepared.count(mask)  # as typed: the model may read only some of them
    if count == 0:
        raise VizError(f"The text has no mask: type {LITERAL_MASK} where a word should be predicted.")
    if count > MAX_MASKS:
        raise VizError(f"The text has {count:,} masks; at most {MAX_MASKS} are predicted at once. Remove some.")
    return prepared


def preprocess(loaded: LoadedModel, text: str) -> tuple[BatchEncoding, list[int], int]:
    """Tokenise (truncating to the model's limit). Returns the encoding, mask positions, untruncated length."""
    encoding, full_length = encode(loaded, prepare_text(loaded, text))
    ids = encoding["input_ids"][0]
    masks = torch.nonzero(ids == loaded.tokenizer.mask_token_id).flatten().tolist()
    if not masks:
        raise VizError(f"Every mask lies past the first {loaded.max_length} tokens, which is all this model "
                       "reads: shorten the text or move the mask forward.")
    return encoding, masks, full_length


# ---- forward -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class MaskedForward:
    """What one forward pass gives. M = masks, V = vocabulary, L1 = layers + 1, T = tokens."""

    mask_logits: torch.Tensor  # (M, V)
    hidden_states: tuple[torch.Tensor, ...]  # L1 x (1, T, D)
    attentions: tuple[torch.Tensor, ...]  # L x (1, H, T, T)
    head: Callable[[torch.Tensor], torch.Tensor] | None  # the MLM head, when it may be applied on its own


def mlm_head(model: PreTrainedModel) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """hidden (N, D) -> logits (N, V): the part of the model after the encoder, or None when unknown."""
    for name in ("cls", "lm_head", "predictions"):  # BERT; RoBERTa, XLM-R; ALBERT
        if isinstance(getattr(model, name, None), torch.nn.Module):
            return getattr(model, name)
    if hasattr(model, "vocab_projector"):  # DistilBERT
        return lambda h: model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(h))))
    return None


_HEAD_CHECKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> head reproduces its logits


def separable_head(loaded: LoadedModel) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The MLM head, if head(encoder output) equals the model's own logits (checked once per model, on a
    short input). Then the vocabulary projection, as costly as the whole encoder for MiniLM, can be
    done at the masks only, and the head can read every layer (the logit lens)."""
    model = loaded.model
    if model not in _HEAD_CHECKED:
        _HEAD_CHECKED[model] = _head_agrees(loaded)
    return mlm_head(model) if _HEAD_CHECKED[model] else None


def _head_agrees(loaded: LoadedModel) -> bool:
    """The check's own forward passes run in a thread of their own: the first call may come from inside a
    caller's attention edit, open sink or hooks (all of which act in their thread only), which must not
    change the check's short input (attention attribution's scaled weights met it with 5 tokens where they
    had 9, on a freshly loaded model)."""
    model = loaded.model
    head, base = mlm_head(model), getattr(model, "base_model", None)
    if head is None or base is None or base is model:
        return False
    agrees: list[bool] = []
    failed: list[BaseException] = []

    def check() -> None:
        try:
            inputs = model_inputs(loaded, loaded.tokenizer("a b c", return_tensors="pt"))
            with torch.inference_mode():
                full = model(**inputs).logits[0]
                split = head(base(**inputs).last_hidden_state[0])
            agrees.append(full.shape == split.shape and torch.allclose(full, split, atol=1e-4, rtol=1e-4))
        except BaseException as error:  # raised again in the caller's thread
            failed.append(error)

    thread = threading.Thread(target=check, name="vizcore-head-check")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return agrees[0]


def logits_at(loaded: LoadedModel, inputs: dict[str, torch.Tensor], rows: torch.Tensor, cols: torch.Tensor,
              specs: Sequence[Hook] = (), details: bool = False,
              grad: bool = False) -> tuple[torch.Tensor, ModelOutput]:
    """Vocabulary logits ``(N, V)`` at positions ``(rows[i], cols[i])`` of a batch run with ``specs``, and the
    model's output. The MLM head is applied at those positions only when it is separable (the rest of the
    vocabulary projection is never computed). ``details``: every layer's hidden states and attention too;
    ``grad``: the graph is kept (gradients with respect to embeddings or head scales)."""
    head = separable_head(loaded)
    output = core_forward(loaded, inputs, specs, hidden=details, attention=details, base_only=head is not None,
                          grad=grad)
    with torch.enable_grad() if grad else torch.inference_mode():
        if head is not None:
            return head(output.last_hidden_state[rows, cols]), output
        if getattr(output, "logits", None) is None:
            raise VizError(f"'{loaded.name}' gives no vocabulary logits: load it with its masked-LM head.")
        return output.logits[rows, cols], output


def forward(loaded: LoadedModel, inputs: dict[str, torch.Tensor], masks: list[int],
            details: bool = True, specs: Sequence[Hook] = ()) -> MaskedForward:
    """The model only; with ``details``, every layer's hidden states and attention weights too.
    ``specs``: hooks of an intervention (the Why? page's head ablation); none for the plain answer."""
    rows = torch.zeros(len(masks), dtype=torch.long)
    mask_logits, output = logits_at(loaded, inputs, rows, torch.as_tensor(masks), specs, details=details)
    return MaskedForward(mask_logits=mask_logits, hidden_states=output.hidden_states or (),
                         attentions=output.attentions or (), head=separable_head(loaded))


# ---- postprocess -------------------------------------------------------------------------------

def decode_token(loaded: LoadedModel, token_id: int) -> str:
    return loaded.tokenizer.decode([token_id])


def top_predictions(loaded: LoadedModel, input_ids: torch.Tensor, mask_logits: torch.Tensor, masks: list[int],
                    top_k: int) -> list[MaskPredictions]:
    """Softmax over the vocabulary at each mask, top-k; ``sequence`` written the way HF's pipeline does.

    input_ids: (T,), mask_logits: (M, V).
    """
    probs = mask_logits.float().softmax(-1)  # (M, V)
    values, ids = probs.topk(min(top_k, probs.shape[-1]))
    single = len(masks) == 1
    pad = loaded.tokenizer.pad_token_id
    results = []
    for mask, row_values, row_ids in zip(masks, values.tolist(), ids.tolist()):
        predictions = []
        for score, token_id in zip(row_values, row_ids):
            filled = input_ids.clone()
            filled[mask] = token_id
            if pad is not None:
                filled = filled[filled != pad]
            text = decode_token(loaded, token_id)
            predictions.append(Prediction(
                token_id=token_id, token=text.strip(), token_str=text, score=float(score),
                sequence=loaded.tokenizer.decode(filled.tolist(), skip_special_tokens=single)))
        results.append(MaskPredictions(index=mask, predictions=predictions))
    return results


NOT_ASKED = "The layer-by-layer view was not asked for (fill_mask with lenses=False)."
NO_LENS = ("The layer-by-layer view needs a masked-LM head that reproduces the output of {model} from its last "
           "hidden state; this one does not, so it is not shown.")


def read_lens(loaded: LoadedModel, head: Callable[[torch.Tensor], torch.Tensor], hidden: torch.Tensor,
              top_k: int) -> LogitLens:
    """The MLM head on hidden states (L1, M, D) whose last row is the model's output: top-k per row, the
    probability of the final top-1 word and the KL to the final distribution."""
    with torch.inference_mode():
        logits = head(hidden).float()  # (L1, M, V)
    probs = logits.softmax(-1)
    values, ids = probs.topk(min(top_k, probs.shape[-1]), dim=-1)  # (L1, M, k)
    final = probs[:, torch.arange(hidden.shape[1]), ids[-1, :, 0]]  # (L1, M)
    words = [[[decode_token(loaded, i).strip() for i in row] for row in layer] for layer in ids.tolist()]
    return LogitLens(token_ids=ids.numpy(), tokens=words, probs=values.numpy().astype(np.float32),
                     final_token_probs=final.numpy().astype(np.float32),
                     kl_to_final=kl_to_final(logits).numpy().astype(np.float32))


def mask_hidden_states(output: MaskedForward, masks: list[int]) -> torch.Tensor:
    """Every layer's hidden state at the masks. (L1, M, D)"""
    return torch.stack([h[0, masks] for h in output.hidden_states])


def logit_lens(loaded: LoadedModel, output: MaskedForward, masks: list[int],
               top_k: int) -> tuple[LogitLens | None, str]:
    """The MLM head on every layer's hidden state at the masks; the last row is the prediction itself."""
    if output.head is None or not output.hidden_states:
        return None, NO_LENS.format(model=type(loaded.model).__name__)
    return read_lens(loaded, output.head, mask_hidden_states(output, masks), top_k), ""


def tuned_lens(loaded: LoadedModel, output: MaskedForward, masks: list[int], top_k: int,
               lens: TunedLens | None = None) -> tuple[LogitLens | None, str]:
    """The MLM head on every layer's hidden state at the masks after that layer's translator (``lens``, or the
    shipped one when the model is the one it was trained for); None and why when there is none."""
    if output.head is None or not output.hidden_states:
        return None, NO_LENS.format(model=type(loaded.model).__name__)
    hidden = mask_hidden_states(output, masks)  # (L1, M, D)
    if lens is None:
        lens, note = tuned_lens_for(loaded.name, hidden.shape[0] - 1, hidden.shape[-1])
        if lens is None:
            return None, note
    check_lens_fits(lens, hidden)
    with torch.inference_mode():
        moved = lens(hidden)
    return read_lens(loaded, output.head, moved, top_k), ""


def fill_mask(loaded: LoadedModel, text: str, top_k: int = 5, lens_top_k: int = 5,
              lens: TunedLens | None = None, lenses: bool = True) -> FillMaskResult:
    """Every mask's top-k, the masks' attention rows, the logit lens and the tuned lens (``lens``, or the
    shipped one for the model it was trained for), from one forward pass. ``lenses=False``: neither lens (both
    None, with ``NOT_ASKED`` as the note), for a caller that does not draw the layer-by-layer view; the lenses read
    the MLM head at every layer, more than the rest of the work on a short sentence."""
    if not 1 <= top_k <= MAX_TOP_K:
        raise VizError(f"top-k must be between 1 and {MAX_TOP_K}, not {top_k}.")
    if not 1 <= lens_top_k <= MAX_TOP_K:
        raise VizError(f"The lens's top-k must be between 1 and {MAX_TOP_K}, not {lens_top_k}.")
    encoding, masks, full_length = preprocess(loaded, text)
    output = forward(loaded, model_inputs(loaded, encoding), masks)
    input_ids = encoding["input_ids"][0]
    attention = torch.stack([a[0][:, masks, :] for a in output.attentions])  # (L, H, M, T)
    if lenses:
        logit, note = logit_lens(loaded, output, masks, lens_top_k)
        tuned, tuned_note = tuned_lens(loaded, output, masks, lens_top_k, lens)
    else:
        logit, note, tuned, tuned_note = None, NOT_ASKED, None, NOT_ASKED
    return FillMaskResult(
        model=loaded.name, text=text,
        tokens=loaded.tokenizer.convert_ids_to_tokens(input_ids.tolist()),
        mask_indices=masks, masks=top_predictions(loaded, input_ids, output.mask_logits, masks, top_k),
        mask_attention=attention.float().cpu().numpy(), lens=logit, lens_note=note, tuned_lens=tuned,
        tuned_note=tuned_note,
        truncated=full_length > len(input_ids), num_input_tokens=full_length,
    )


# ---- several masks, one at a time --------------------------------------------------------------

def fill_iteratively(loaded: LoadedModel, text: str) -> list[FillStep]:
    """Fill the masks one by one: each step runs the model, fills the mask it is surest of with its
    top-1 word, and goes on with that word in place (so later choices see the earlier ones)."""
    encoding, masks, _ = preprocess(loaded, text)
    inputs = model_inputs(loaded, encoding)
    ids = inputs["input_ids"].clone()
    remaining, steps = list(masks), []
    while remaining:
        logits = forward(loaded, {**inputs, "input_ids": ids}, remaining, details=False).mask_logits  # (R, V)
        best = logits.float().softmax(-1).max(-1)  # values, ids: (R,)
        pick = int(best.values.argmax())
        index, token_id = remaining.pop(pick), int(best.indices[pick])
        ids[0, index] = token_id
        steps.append(FillStep(index=index, token_id=token_id, token=decode_token(loaded, token_id).strip(),
                              score=float(best.values[pick]), text=readable_text(loaded, ids[0])))
    return steps


def readable_text(loaded: LoadedModel, ids: torch.Tensor) -> str:
    """Decode without [CLS]/[SEP]/padding but keeping the masks that are still open."""
    tokenizer = loaded.tokenizer
    hidden = set(tokenizer.all_special_ids) - {tokenizer.mask_token_id}
    return tokenizer.decode([i for i in ids.tolist() if i not in hidden])


# ---- click a word to mask it -------------------------------------------------------------------

@dataclass(frozen=True)
class Word:
    start: int  # character span in the text
    end: int
    text: str


def maskable_words(loaded: LoadedModel, text: str) -> list[Word]:
    """The words of ``text`` as the tokenizer splits them (up to MAX_WORDS), without existing masks
    and without punctuation-only pieces."""
    if not text or not text.strip():
        return []
    encoding = loaded.tokenizer(text[:20_000], add_special_tokens=False, return_offsets_mapping=True,
                                verbose=False)
    spans: dict[int, list[int]] = {}
    for word_id, (start, end) in zip(encoding.word_ids(), encoding["offset_mapping"]):
        if word_id is not None and end > start:
            span = spans.setdefault(word_id, [start, end])
            span[0], span[1] = min(span[0], start), max(span[1], end)
    taken = [(m.start(), m.end()) for m in TYPED_MASK.finditer(text)]
    if loaded.tokenizer.mask_token:
        taken += [(m.start(), m.end()) for m in re.finditer(re.escape(loaded.tokenizer.mask_token), text)]
    words = []
    for start, end in spans.values():
        piece = text[start:end]
        if any(ch.isalnum() for ch in piece) and not any(a < end and start < b for a, b in taken):
            words.append(Word(start=start, end=end, text=piece))
    return words[:MAX_WORDS]


def mask_word(text: str, word: Word) -> str:
    """``text`` with ``word`` replaced by a literal [MASK]."""
    if text[word.start:word.end] != word.text:
        raise VizError("The sentence changed since the words were listed: pick the word again.")
    return text[:word.start] + LITERAL_MASK + text[word.end:]
