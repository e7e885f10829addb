"""Hub encoder-decoders (T5, BART, Marian opus-mt): the three attentions of a real model, as a ``Seq2SeqRun``.

Stages, as in Hugging Face pipelines: load (the config first, so a model without a decoder is refused
before its weights are fetched) -> decode greedily, or take the target the user gives -> one
teacher-forced forward with ``output_attentions`` -> ``Seq2SeqRun`` (plain numpy).

Greedy decoding is written here, one full decoder pass per step (no key/value cache: a few dozen short
steps), so each step's distribution is the one the page shows. It takes the model's most probable
token, following the generation rules a checkpoint ships that change *which* token greedy writes:
``bad_words_ids`` of one token are never written (Marian's ``<pad>``), ``forced_bos_token_id`` is the
first output, ``forced_eos_token_id`` the output at the length limit; exactly what
``model.generate(do_sample=False, num_beams=1)`` does with them. Beam, length and n-gram settings in a
checkpoint's generation config (bart-base's ``num_beams=4, no_repeat_ngram_size=3``) play no part.

The end token is not an output: it ends the run (see ``vizcore.seq2seq.record``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import (
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.utils import logging as transformers_logging

from vizcore.errors import VizError
from vizcore.model.catalog import SUGGESTED_HUB_SEQ2SEQ
from vizcore.model.loading import (
    LOAD_LOCK,
    first_line,
    install_output_hooks,
    is_causal,
    load_config,
    offline_hint,
    pick_device,
    resolve_source,
)
from vizcore.model.run import check_text
from vizcore.seq2seq.record import Seq2SeqRun

MAX_NEW_TOKENS = 128  # the longest output (and given target) the views take
DEFAULT_NEW_TOKENS = 40
MAX_SOURCE_TOKENS = 256  # encoder attention is [layers, heads, I, I]: a page, not a book
TOP_K = 10


@dataclass(frozen=True)
class LoadedSeq2Seq:
    """An encoder-decoder ready for inference, with the generation rules greedy decoding follows.
    Shared between sessions: treat it as read-only."""

    name: str
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    device: torch.device
    start_id: int  # the decoder's first input (T5 and Marian: <pad>; BART: </s>)
    end_ids: frozenset[int]  # writing one of these ends the output
    banned_ids: tuple[int, ...] = ()  # never written (one-token bad_words_ids)
    forced_first: int | None = None  # forced_bos_token_id: always the first output
    forced_last: int | None = None  # forced_eos_token_id: the output at the length limit


@dataclass(frozen=True)
class StepDistribution:
    """Decoder position ``step`` (0-based): the next-token distribution after reading
    ``decoder_tokens[:step + 1]``, over the tokens greedy decoding may write (banned ones excluded)."""

    step: int
    tokens: list[str]  # [k] the most probable, best first, as the tokenizer spells them
    token_ids: list[int]  # [k]
    probabilities: np.ndarray  # float32 [k]
    chosen: str  # what was written here: output_tokens[step]
    chosen_id: int
    chosen_probability: float
    chosen_rank: int  # 0-based rank of the written token (0 for greedy unless a rule forced it)

    def to_dict(self) -> dict:
        return {"step": self.step, "tokens": list(self.tokens), "token_ids": list(self.token_ids),
                "probabilities": self.probabilities.tolist(), "chosen": self.chosen, "chosen_id": self.chosen_id,
                "chosen_probability": self.chosen_probability, "chosen_rank": self.chosen_rank}


# ---- loading --------------------------------------------------------------------------------------

def load_seq2seq(name: str, device: str = "auto") -> LoadedSeq2Seq:
    """Load a hub id or a local folder as an encoder-decoder with eager attention (SDPA returns no weights).

    Raises VizError with a fix-it message: no network and nothing cached, no such model, or a model
    without a decoder (BERT) or without an encoder (GPT-2).
    """
    torch_device = pick_device(device)
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    source, _ = resolve_source(name)
    config = load_config(name, source)
    if not getattr(config, "is_encoder_decoder", False):
        raise VizError(_not_encoder_decoder(name, config))
    with LOAD_LOCK:
        model = _load_weights(name, source, config)
        model.to(torch_device).eval()
        for parameter in model.parameters():
            parameter.requires_grad_(False)
        install_output_hooks(model)
    return _with_rules(name.strip(), model, _load_tokenizer(name, source), torch_device)


def _not_encoder_decoder(name: str, config: PretrainedConfig) -> str:
    kind = "a decoder only (no encoder to read a source)" if is_causal(config) else "an encoder only (no decoder)"
    return (f"'{name}' is {kind}: these views need an encoder-decoder, such as "
            f"{', '.join(SUGGESTED_HUB_SEQ2SEQ)}.")


def _load_weights(name: str, source: str, config: PretrainedConfig) -> PreTrainedModel:
    try:
        return AutoModelForSeq2SeqLM.from_pretrained(source, config=config, attn_implementation="eager")
    except ValueError as error:
        raise VizError(f"'{name}' cannot be loaded as an encoder-decoder: {first_line(error)}") from error
    except OSError as error:
        raise VizError(offline_hint(name) if not Path(source).is_dir() else
                       f"Weights in '{source}' could not be read: {first_line(error)}") from error


def _load_tokenizer(name: str, source: str) -> PreTrainedTokenizerBase:
    # Any tokenizer: Marian's is SentencePiece in Python (no fast one), and these views need no offsets.
    try:
        return AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as error:
        raise VizError(f"The tokenizer of '{name}' could not be loaded: {first_line(error)}") from error


def _with_rules(name: str, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                device: torch.device) -> LoadedSeq2Seq:
    rules, config = model.generation_config, model.config
    start = rules.decoder_start_token_id if rules.decoder_start_token_id is not None else config.decoder_start_token_id
    end = rules.eos_token_id if rules.eos_token_id is not None else tokenizer.eos_token_id
    if start is None or end is None:
        raise VizError(f"'{name}' names no decoder start or end token in its config: it cannot decode.")
    return LoadedSeq2Seq(
        name=name, model=model, tokenizer=tokenizer, device=device, start_id=int(start),
        end_ids=frozenset([end] if isinstance(end, int) else end),
        banned_ids=tuple(ids[0] for ids in rules.bad_words_ids or () if len(ids) == 1),
        forced_first=rules.forced_bos_token_id, forced_last=rules.forced_eos_token_id)


# ---- one pass -------------------------------------------------------------------------------------

def source_ids(loaded: LoadedSeq2Seq, text: str) -> torch.Tensor:
    """The source as the encoder reads it, (1, I), special tokens included."""
    ids = loaded.tokenizer(check_text(text, "source text"), return_tensors="pt")["input_ids"]
    if ids.shape[1] > MAX_SOURCE_TOKENS:
        raise VizError(f"The source text is {ids.shape[1]:,} tokens long; these views take up to "
                       f"{MAX_SOURCE_TOKENS}. Shorten it.")
    return ids.to(loaded.device)


def target_ids(loaded: LoadedSeq2Seq, target: str) -> list[int]:
    """A given target as outputs: its tokens as the tokenizer writes labels, without the end token."""
    ids = loaded.tokenizer(text_target=check_text(target, "target text"))["input_ids"]
    ids = ids[:-1] if ids and ids[-1] in loaded.end_ids else ids
    if not ids or len(ids) > MAX_NEW_TOKENS:
        raise VizError(f"The target text gives {len(ids)} tokens; these views take 1 to {MAX_NEW_TOKENS}.")
    return ids


def step_logits(loaded: LoadedSeq2Seq, source: torch.Tensor, decoder_ids: list[int]) -> torch.Tensor:
    """float32 [len(decoder_ids), V]: row i is the next-token logits after reading decoder_ids[:i + 1]."""
    decoder = torch.tensor([decoder_ids], device=loaded.device)
    with torch.no_grad():
        logits = loaded.model(input_ids=source, decoder_input_ids=decoder).logits  # (1, T, V)
    return logits[0].float()


def allowed(loaded: LoadedSeq2Seq, logits: torch.Tensor) -> torch.Tensor:
    """The logits with the banned tokens at -inf (they can never be written)."""
    logits = logits.clone()
    logits[..., list(loaded.banned_ids)] = float("-inf")
    return logits


def greedy_ids(loaded: LoadedSeq2Seq, source: torch.Tensor, max_new_tokens: int = DEFAULT_NEW_TOKENS) -> list[int]:
    """The outputs of greedy decoding, the end token not included (see the module docstring for the rules)."""
    if not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        raise VizError(f"The number of new tokens must be between 1 and {MAX_NEW_TOKENS}, not {max_new_tokens}.")
    outputs: list[int] = []
    for step in range(max_new_tokens):
        if step == 0 and loaded.forced_first is not None:
            chosen = loaded.forced_first
        elif step == max_new_tokens - 1 and loaded.forced_last is not None:
            chosen = loaded.forced_last
        else:
            chosen = int(allowed(loaded, step_logits(loaded, source, [loaded.start_id, *outputs])[-1]).argmax())
        if chosen in loaded.end_ids:
            break
        outputs.append(chosen)
    return outputs


def translate(loaded: LoadedSeq2Seq, text: str, target: str | None = None,
              max_new_tokens: int = DEFAULT_NEW_TOKENS) -> Seq2SeqRun:
    """Greedy-decode ``text`` (or read the given ``target``) and record the three attentions.

    Shapes: encoder [Le, H, I, I], decoder [Ld, H, O, O], cross [Ld, H, O, I]; I source tokens with
    their specials, O outputs. Row i of decoder and cross reads decoder_tokens[i] and writes output i.
    """
    source = source_ids(loaded, text)
    outputs = target_ids(loaded, target) if target is not None else greedy_ids(loaded, source, max_new_tokens)
    if not outputs:
        raise VizError(f"'{loaded.name}' wrote only its end token for this text: there is nothing to show. "
                       "Try a longer text, or give a target.")
    decoder = torch.tensor([[loaded.start_id, *outputs[:-1]]], device=loaded.device)
    with torch.no_grad():
        out = loaded.model(input_ids=source, decoder_input_ids=decoder, output_attentions=True)

    def stacked(attentions: tuple[torch.Tensor, ...]) -> np.ndarray:  # L x (1, H, rows, cols) -> [L, H, rows, cols]
        return torch.stack(attentions)[:, 0].float().cpu().numpy()

    tokens = loaded.tokenizer.convert_ids_to_tokens
    return Seq2SeqRun(model=loaded.name, text=text, input_tokens=tokens(source[0].tolist()),
                      decoder_tokens=tokens(decoder[0].tolist()), output_tokens=tokens(outputs),
                      encoder=stacked(out.encoder_attentions), decoder=stacked(out.decoder_attentions),
                      cross=stacked(out.cross_attentions))


def next_token_steps(loaded: LoadedSeq2Seq, run: Seq2SeqRun, k: int = TOP_K) -> list[StepDistribution]:
    """Per output step, the ``k`` most probable next tokens and the written one, from one teacher-forced
    forward of ``run``'s source and decoder tokens (a run of this model, from ``translate``)."""
    if run.model != loaded.name:
        raise VizError(f"This run is of '{run.model}', not '{loaded.name}': translate with this model first.")
    ids = loaded.tokenizer.convert_tokens_to_ids
    source = torch.tensor([ids(run.input_tokens)], device=loaded.device)
    logits = allowed(loaded, step_logits(loaded, source, ids(run.decoder_tokens)))  # (O, V)
    probs = logits.softmax(-1)
    # Ranked by logit: far down the list float32 probabilities underflow to ties at 0, logits do not.
    top = logits.topk(min(k, logits.shape[-1]), dim=-1).indices  # (O, k)
    steps = []
    for step, chosen in enumerate(ids(run.output_tokens)):
        steps.append(StepDistribution(
            step=step, tokens=loaded.tokenizer.convert_ids_to_tokens(top[step].tolist()),
            token_ids=top[step].tolist(), probabilities=probs[step, top[step]].cpu().numpy(),
            chosen=run.output_tokens[step], chosen_id=chosen, chosen_probability=float(probs[step, chosen]),
            chosen_rank=int((logits[step] > logits[step, chosen]).sum())))
    return steps
