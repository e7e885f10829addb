"""The shipped date translator: load its weights once, translate a text, return one ``Seq2SeqRun``.

``translate`` decodes (greedy, or beam search of width 2-5), then runs the model once more with
teacher forcing on its own answer to collect the three attentions (the decoder is causal, so row i
is exactly what the step writing character i saw). Words outside the grammar are read as <unk>; the
model still answers, and the translation says the input is outside what it was trained on (and
why: an unknown word, a wrong order, or a date that does not exist).

The weights file (``vizcore/weights/date-translator.safetensors``, made by ``tools/date_training.py``)
carries the model's configuration in its metadata.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from vizcore.errors import VizError
from vizcore.seq2seq.dates import (
    OUTPUT_LENGTH,
    START,
    WORDS,
    ParsedDate,
    check_date_text,
    gold_alignment,
    input_ids,
    output_id,
    parse_date,
)
from vizcore.seq2seq.decoding import Decoding, beam_search, check_width, greedy
from vizcore.seq2seq.model import MAX_LENGTH, DateModelConfig, DateTransformer
from vizcore.seq2seq.record import Seq2SeqRun

MODEL_NAME = "date-translator"
WEIGHTS = Path(__file__).resolve().parents[1] / "weights" / f"{MODEL_NAME}.safetensors"
CARD = WEIGHTS.with_suffix(".json")


@dataclass(frozen=True)
class Translator:
    """A date model and the name its runs carry (the shipped one, or one trained on the page)."""

    model: DateTransformer
    name: str = MODEL_NAME


@dataclass(frozen=True)
class Translation:
    run: Seq2SeqRun  # the three attentions of the answer; gold when the input is in the grammar
    decoding: Decoding  # the answer step by step: each step's distribution, the beams' scores
    parsed: ParsedDate  # what the grammar makes of the input: the expected ISO date, or why there is none
    unknown_words: list[str]  # words read as <unk>

    @property
    def outside_training(self) -> bool:
        return self.parsed.outside_training

    @property
    def correct(self) -> bool | None:
        """The answer is the right date; None when the input has no right answer."""
        return None if self.parsed.iso is None else self.run.output == self.parsed.iso

    def to_dict(self) -> dict:
        """The run's fields plus what the grammar says and how the answer was decoded (JSON-ready)."""
        return {**self.run.to_dict(), "expected": self.parsed.iso, "correct": self.correct,
                "in_grammar": self.parsed.in_grammar, "real_date": self.parsed.real,
                "outside_training": self.outside_training, "reason": self.parsed.reason or None,
                "unknown_words": list(self.unknown_words), "beam": max(1, self.decoding.width),
                "score": self.decoding.score, "finished": self.decoding.finished}


def save_weights(model: DateTransformer, path: Path) -> None:
    """Float32 tensors with the model configuration as metadata."""
    from safetensors.torch import save_file

    tensors = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(path), metadata={"config": json.dumps(model.config.to_dict())})


def load_weights(path: Path) -> DateTransformer:
    from safetensors import safe_open
    from safetensors.torch import load_file

    if not Path(path).is_file():
        raise VizError(f"The date translator's weights are missing ({path}): restore them from git or run "
                       "`python -m tools.date_training train` and `... export`.")
    with safe_open(str(path), framework="pt") as handle:
        config = DateModelConfig(**json.loads(handle.metadata()["config"]))
    model = DateTransformer(config)
    model.load_state_dict(load_file(str(path)))
    return model.eval()


@functools.lru_cache(maxsize=1)
def load_translator() -> Translator:
    """The shipped model, loaded once per process and shared: read-only, never trained further."""
    model = load_weights(WEIGHTS)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return Translator(model)


def translate(text: str, beam: int = 1, translator: Translator | None = None) -> Translation:
    """Translate one date in words: greedy for ``beam`` 1, else beam search of that width (2-5)."""
    check_width(beam)
    parsed = parse_date(check_date_text(text))
    if len(parsed.tokens) > MAX_LENGTH:
        raise VizError(f"The text has {len(parsed.tokens)} words; the model reads at most {MAX_LENGTH}.")
    translator = translator or load_translator()
    source = input_ids(parsed.tokens)
    decoding = greedy(translator.model, source) if beam == 1 else beam_search(translator.model, source, beam)
    run = attention_run(translator, parsed, list(decoding.tokens))
    return Translation(run, decoding, parsed, [t for t in parsed.tokens if t not in WORDS])


@torch.no_grad()
def attention_run(translator: Translator, parsed: ParsedDate, outputs: list[str]) -> Seq2SeqRun:
    """One teacher-forced pass over ``outputs`` -> the record. The decoder reads <s> and all outputs; the last
    row (the one that writes the end token) is dropped, as the record wants."""
    source = torch.tensor([input_ids(parsed.tokens)])
    target = torch.tensor([[output_id(START)] + [output_id(t) for t in outputs]])  # (1, O + 1)
    found = translator.model.eval()(source, target)
    o = len(outputs)
    gold = gold_alignment(parsed) if parsed.in_grammar and o == OUTPUT_LENGTH else None
    return Seq2SeqRun(
        model=translator.name, text=parsed.text,
        input_tokens=list(parsed.tokens),
        decoder_tokens=[START] + outputs[:-1] if outputs else [], output_tokens=outputs,
        encoder=_array(found.encoder[0]), decoder=_array(found.decoder[0, :, :, :o, :o]),
        cross=_array(found.cross[0, :, :, :o]), gold=gold)


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.numpy().astype(np.float32)
