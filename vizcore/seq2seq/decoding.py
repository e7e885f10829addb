"""Decoding one character at a time: greedy and beam search, every step recorded.

The encoder runs once; each step reruns the decoder on the start token and the characters written
so far (no key/value cache: the model is tiny, and the code stays the textbook loop). Because the
decoder's self-attention is causal, the step that writes character i sees exactly what a single
teacher-forced pass over the finished output sees at row i.

* Greedy: at each step the most probable next token (the arg-max of the softmax).
* Beam search of width k: every beam's next-token distribution; each (beam, token) pair scored by
  the beam's summed log-probability plus the token's; the k best continue. A pair ending with the
  end token becomes a finished hypothesis when it ranks among the step's k best (as in transformers;
  this is what makes width 1 greedy), and the k best hypotheses are kept. The search ends when no beam left
  can beat the worst of k hypotheses (log-probabilities only fall, so none ever will), or at
  ``MAX_STEPS``. Scores are plain sums (no length penalty): every correct answer has the same
  length. Width 1 is greedy, token for token and score for score (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vizcore.errors import VizError
from vizcore.seq2seq.dates import END, OUTPUT_LENGTH, OUTPUT_VOCAB, START, output_id
from vizcore.seq2seq.model import DateTransformer

MAX_STEPS = OUTPUT_LENGTH + 2  # room for one character too many before giving up on the end token
MAX_WIDTH = 5


@dataclass(frozen=True)
class GreedyStep:
    token: str  # the token written at this step
    probability: float
    distribution: np.ndarray  # float32 [V] the softmax over OUTPUT_VOCAB this step chose from

    def to_dict(self) -> dict:
        return {"token": self.token, "probability": self.probability,
                "distribution": dict(zip(OUTPUT_VOCAB, self.distribution.tolist()))}


@dataclass(frozen=True)
class Beam:
    tokens: tuple[str, ...]  # written so far (no start token); a finished beam ends with the end token
    score: float  # sum of the tokens' log-probabilities
    parent: int  # the beam of the previous step it extends (0-based, best first); -1 at the first step

    def to_dict(self) -> dict:
        return {"tokens": list(self.tokens), "text": characters(self.tokens), "score": self.score,
                "parent": self.parent}


@dataclass(frozen=True)
class BeamStep:
    distributions: np.ndarray  # float32 [beams read, V]: each beam's next-token softmax at this step
    beams: list[Beam]  # the beams that go on, best first
    finished: list[Beam]  # hypotheses that ended at this step and are among the best ``width``

    def to_dict(self) -> dict:
        return {"distributions": [dict(zip(OUTPUT_VOCAB, row)) for row in self.distributions.tolist()],
                "beams": [b.to_dict() for b in self.beams], "finished": [b.to_dict() for b in self.finished]}


@dataclass(frozen=True)
class Decoding:
    """The answer and how it was reached: ``steps`` are GreedyStep (width 1 by ``greedy``) or BeamStep."""

    width: int  # 0 for greedy, else the beam width
    tokens: tuple[str, ...]  # the answer, without the end token
    score: float  # its summed log-probability (end token included when it ended)
    finished: bool  # it ended with the end token (not cut at MAX_STEPS)
    steps: list
    hypotheses: list[Beam]  # beam search: every kept hypothesis, best first; greedy: its one answer

    @property
    def text(self) -> str:
        return "".join(self.tokens)

    def to_dict(self) -> dict:
        return {"method": "greedy" if self.width == 0 else "beam", "width": self.width, "output": self.text,
                "score": self.score, "finished": self.finished, "steps": [s.to_dict() for s in self.steps],
                "hypotheses": [h.to_dict() for h in self.hypotheses]}


def characters(tokens: tuple[str, ...] | list[str]) -> str:
    return "".join(t for t in tokens if t != END)


def check_width(width: object) -> int:
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_WIDTH:
        raise VizError(f"The beam width must be a whole number from 1 to {MAX_WIDTH}, not {width!r}.")
    return width


def _next_log_probs(model: DateTransformer, memory: torch.Tensor, mask: torch.Tensor,
                    prefixes: list[tuple[str, ...]]) -> torch.Tensor:
    """Log-softmax of the next token after each prefix (all the same length): (len(prefixes), V)."""
    ids = torch.tensor([[output_id(START)] + [output_id(t) for t in p] for p in prefixes])  # (W, t+1)
    n = len(prefixes)
    logits = model.decode(ids, memory.expand(n, -1, -1), mask.expand(n, -1, -1, -1))[0]  # (W, t+1, V)
    return logits[:, -1].float().log_softmax(-1)


@torch.no_grad()
def greedy(model: DateTransformer, source: list[int]) -> Decoding:
    """Greedy decoding of one input (word ids)."""
    memory, mask, _ = model.eval().encode(torch.tensor([source]))
    written: tuple[str, ...] = ()
    steps, score = [], 0.0
    while len(written) < MAX_STEPS and END not in written:
        log_probs = _next_log_probs(model, memory, mask, [written])[0]  # (V,)
        best = int(log_probs.argmax())
        score += float(log_probs[best])
        written += (OUTPUT_VOCAB[best],)
        steps.append(GreedyStep(OUTPUT_VOCAB[best], float(log_probs[best].exp()), log_probs.exp().numpy()))
    answer = Beam(written, score, -1)
    return Decoding(0, tuple(t for t in written if t != END), score, END in written, steps, [answer])


@torch.no_grad()
def beam_search(model: DateTransformer, source: list[int], width: int = 3) -> Decoding:
    """Beam search of ``width`` (1-5) over one input (word ids); see the module docstring for the rule."""
    check_width(width)
    memory, mask, _ = model.eval().encode(torch.tensor([source]))
    beams, hypotheses, steps = [Beam((), 0.0, -1)], [], []
    for length in range(1, MAX_STEPS + 1):
        log_probs = _next_log_probs(model, memory, mask, [b.tokens for b in beams])  # (W, V)
        totals = log_probs + torch.tensor([b.score for b in beams])[:, None]
        values, flat = totals.flatten().topk(min(2 * width, totals.numel()))  # 2k: k may end, k go on
        going, ended = [], []
        for rank, (value, index) in enumerate(zip(values.tolist(), flat.tolist())):
            parent, token = divmod(index, len(OUTPUT_VOCAB))
            beam = Beam(beams[parent].tokens + (OUTPUT_VOCAB[token],), value, parent if length > 1 else -1)
            if OUTPUT_VOCAB[token] == END or length == MAX_STEPS:
                if rank < width:
                    ended.append(beam)
            elif len(going) < width:
                going.append(beam)
        hypotheses = sorted(hypotheses + ended, key=lambda h: -h.score)[:width]
        steps.append(BeamStep(log_probs.exp().numpy(), going, [h for h in ended if h in hypotheses]))
        beams = going
        if not beams or (len(hypotheses) == width and beams[0].score <= hypotheses[-1].score):
            break
    best = hypotheses[0]
    return Decoding(width, tuple(t for t in best.tokens if t != END), best.score, best.tokens[-1] == END,
                    steps, hypotheses)


@torch.no_grad()
def greedy_ids(model: DateTransformer, source: torch.Tensor, steps: int = OUTPUT_LENGTH + 1) -> torch.Tensor:
    """Greedy decoding of a padded batch (B, I) for ``steps`` tokens -> ids (B, steps), for evaluation."""
    memory, mask, _ = model.eval().encode(source)
    ids = torch.full((source.size(0), 1), output_id(START))
    for _ in range(steps):
        logits = model.decode(ids, memory, mask)[0][:, -1]  # (B, V)
        ids = torch.cat([ids, logits.argmax(-1, keepdim=True)], dim=1)
    return ids[:, 1:]


def texts(ids: torch.Tensor) -> list[str]:
    """The characters of each row of ``greedy_ids`` up to its end token (all of it if none)."""
    out = []
    for row in ids.tolist():
        tokens = [OUTPUT_VOCAB[i] for i in row]
        out.append("".join(tokens[: tokens.index(END)] if END in tokens else tokens))
    return out
