"""Beam search: keep the ``width`` most probable continuations at every step, not only the best one.

The same search as transformers' ``model.generate(num_beams=width, do_sample=False,
early_stopping=..., length_penalty=...)`` (5.x), one prompt, tested token for token and score for score:

* a beam's score is the sum of its tokens' log-probabilities (log-softmax of the logits, float32);
* the tokens generation never draws (``vizcore.decoder.vocabulary``; with ``whole_words``, the word
  continuations too) get -inf after the log-softmax, where transformers' ``suppress_tokens`` puts it in a
  beam search: a beam's score stays the model's own log-probability of its tokens;
* each step ranks every (beam, next token) pair by that sum and looks at the best
  ``max(2, 1 + number of stop tokens) * width`` of them;
* a candidate that ends with a stop token (``stop_ids``), or reaches ``max_new_tokens``, is finished
  when it ranks among the first ``width``: it becomes a hypothesis scored
  ``sum of log-probabilities / (generated tokens, stop token included) ** length_penalty``, and only the
  ``width`` best hypotheses are kept;
* the ``width`` best unfinished candidates are the next step's beams;
* the search ends when ``width`` hypotheses are finished (``early_stopping=True``), or, with
  ``early_stopping=False`` (transformers' default), when moreover the best beam, scored at its current
  length, cannot beat the worst hypothesis; or when no beam is left;
* the answer is the hypotheses, best first.

Width 1 is greedy decoding. Temperature, top-k and top-p play no part (no sampling). Each step reruns
the model on each beam's whole sequence (``next_token_logits``, the one forward core; no key/value
cache), so scores agree with transformers' cached ones to float32 rounding, not bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vizcore.decoder.generation import check_new_tokens, next_token_logits, prompt_ids
from vizcore.decoder.vocabulary import banned_tokens, stop_ids
from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel

MAX_WIDTH = 5


@dataclass(frozen=True)
class Beam:
    """One continuation after the prompt. ``score``: the sum of its tokens' log-probabilities; for a
    finished hypothesis ``normalised`` is the score divided by length ** length_penalty."""

    token_ids: tuple[int, ...]
    text: str  # the generated tokens, decoded
    score: float
    parent: int  # which beam of the previous step (0-based, best first) it extends; -1 at the first step
    finished: bool = False
    normalised: float | None = None
    token: str = ""  # the newest token, decoded

    def to_dict(self) -> dict:
        return {"token_ids": list(self.token_ids), "text": self.text, "token": self.token, "score": self.score,
                "parent": self.parent, "finished": self.finished, "normalised": self.normalised}


@dataclass(frozen=True)
class BeamStep:
    beams: list[Beam]  # the beams that go on, best first
    finished: list[Beam]  # hypotheses that ended at this step (kept among the best ``width``)

    def to_dict(self) -> dict:
        return {"beams": [b.to_dict() for b in self.beams], "finished": [b.to_dict() for b in self.finished]}


@dataclass(frozen=True)
class BeamSearch:
    model: str
    prompt: str
    prompt_tokens: list[str]
    width: int
    length_penalty: float
    early_stopping: bool
    steps: list[BeamStep]
    hypotheses: list[Beam]  # the answer: finished sequences, best (highest ``normalised``) first

    def to_dict(self) -> dict:
        return {"model": self.model, "prompt": self.prompt, "prompt_tokens": list(self.prompt_tokens),
                "width": self.width, "length_penalty": self.length_penalty, "early_stopping": self.early_stopping,
                "steps": [s.to_dict() for s in self.steps], "hypotheses": [h.to_dict() for h in self.hypotheses]}


def check_width(width: int) -> int:
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_WIDTH:
        raise VizError(f"The beam width must be a whole number from 1 (greedy) to {MAX_WIDTH}, not {width!r}.")
    return width


def _candidates(loaded: LoadedModel, ids: torch.Tensor, beams: list[Beam], keep: int,
                banned: torch.Tensor) -> list[tuple[float, int, int]]:
    """The ``keep`` best (summed log-probability, beam index, token id) over every beam's next token."""
    totals = []
    for beam in beams:
        sequence = torch.cat([ids, torch.tensor([beam.token_ids], dtype=ids.dtype, device=ids.device)], dim=1)
        log_probs = next_token_logits(loaded, sequence).float().log_softmax(-1)  # [V]
        log_probs = log_probs.masked_fill(banned.to(log_probs.device), -torch.inf)
        totals.append(log_probs + torch.tensor(beam.score, dtype=torch.float32))
    flat = torch.stack(totals).flatten()  # [beams * V], beam-major as transformers ranks them
    values, indices = torch.topk(flat, min(keep, flat.numel()))
    vocabulary = totals[0].numel()
    return [(float(v), int(i) // vocabulary, int(i) % vocabulary) for v, i in zip(values.tolist(), indices.tolist())]


def beam_search(loaded: LoadedModel, prompt: str, width: int = 3, max_new_tokens: int = 20,
                length_penalty: float = 1.0, early_stopping: bool = True, stop: set[int] | None = None,
                whole_words: bool = False) -> BeamSearch:
    """Beam search after ``prompt``, every step recorded. ``stop``: the stop tokens (default ``stop_ids``);
    ``whole_words``: no token that continues the previous word."""
    check_width(width)
    check_new_tokens(max_new_tokens)
    ids = prompt_ids(loaded, prompt)
    banned = banned_tokens(loaded).mask(whole_words)
    stop = stop_ids(loaded.tokenizer) if stop is None else set(stop)
    keep = max(2, 1 + len(stop)) * width
    limit = min(max_new_tokens, loaded.max_length - int(ids.shape[1]))
    decode = loaded.tokenizer.decode
    beams = [Beam(token_ids=(), text="", score=0.0, parent=-1)]
    hypotheses: list[Beam] = []
    steps: list[BeamStep] = []
    for length in range(1, limit + 1):
        candidates = _candidates(loaded, ids, beams, keep, banned)
        running, ended = [], []
        for rank, (score, parent, token) in enumerate(candidates):
            beam = Beam(beams[parent].token_ids + (token,), "", score, parent if length > 1 else -1)
            if token in stop or length == limit:
                if rank < width and not (early_stopping and len(hypotheses) == width):
                    ended.append(beam)
            elif len(running) < width:
                running.append(beam)
        ended = [_finish(b, decode, length, length_penalty) for b in ended]
        hypotheses = sorted(hypotheses + ended, key=lambda h: -h.normalised)[:width]
        beams = [_named(b, decode) for b in running]
        steps.append(BeamStep(beams=beams, finished=[h for h in ended if h in hypotheses]))
        if _done(beams, hypotheses, width, length, length_penalty, early_stopping):
            break
    return BeamSearch(model=loaded.name, prompt=prompt,
                      prompt_tokens=loaded.tokenizer.convert_ids_to_tokens(ids[0].tolist()), width=width,
                      length_penalty=length_penalty, early_stopping=early_stopping, steps=steps,
                      hypotheses=hypotheses)


def _named(beam: Beam, decode) -> Beam:
    return Beam(beam.token_ids, decode(list(beam.token_ids)), beam.score, beam.parent,
                token=decode([beam.token_ids[-1]]))


def _finish(beam: Beam, decode, length: int, length_penalty: float) -> Beam:
    return Beam(beam.token_ids, decode(list(beam.token_ids)), beam.score, beam.parent, finished=True,
                normalised=beam.score / length ** length_penalty, token=decode([beam.token_ids[-1]]))


def _done(beams: list[Beam], hypotheses: list[Beam], width: int, length: int, length_penalty: float,
          early_stopping: bool) -> bool:
    """transformers' stopping rule: no beam left, or ``width`` hypotheses and (with ``early_stopping``
    False) the best beam at its present length no better than the worst hypothesis."""
    if not beams:
        return True
    if len(hypotheses) < width:
        return False
    return early_stopping or beams[0].score / length ** length_penalty <= hypotheses[-1].normalised
