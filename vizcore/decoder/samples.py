"""Many continuations of one prompt at once: one row per (settings, seed), drawn as one batch.

``sample_rows`` draws for each row what ``generate`` draws: the same never-drawn tokens removed, the same
shaping (``shaped_logits``), one seeded ``torch.Generator`` per row used the same way (``draw_rows``), the
same stop tokens. It saves work three ways: the model's key/value cache, so a step reads one new token
per sequence instead of the whole text again; one sequence for rows whose tokens so far are the same
(every seed of a greedy row, most seeds at a low temperature), its cache row copied when they part; and
finished rows leave the batch. 420 rows of 20 tokens then take seconds where ``generate`` one row after
another takes minutes. Its logits equal ``generate``'s to float32 rounding, not bit for bit (batched,
cached products), so a draw that falls on a boundary of the cumulative distribution may differ.
``python -m vizcore generate --samples K`` prints K continuations this way. Shapes: U = distinct
sequences in the batch, V = vocabulary.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import torch

from vizcore.decoder.generation import check_new_tokens, check_seed, prompt_ids
from vizcore.decoder.sampling import Settings, allowed_logits, draw_rows, shaped_logits
from vizcore.decoder.vocabulary import Banned, banned_tokens, stop_ids
from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel
from vizcore.model.run import forward

MAX_ROWS = 1000


@dataclass(frozen=True)
class Sample:
    settings: Settings
    seed: int
    token_ids: tuple[int, ...]  # the generated tokens; the stop token last when one was drawn
    text: str  # the prompt and the generated tokens, decoded

    def to_dict(self) -> dict:
        return {"seed": self.seed, "token_ids": list(self.token_ids), "text": self.text}


def _next_tokens(logits: torch.Tensor, rows: Sequence[tuple[Settings, int]], sequence_of: dict[int, int],
                 banned: Banned, generators: list[torch.Generator]) -> dict[int, int]:
    """The next token of each active row (``sequence_of``: row -> its sequence in ``logits`` (U, V)); each
    distinct (settings, sequence) is shaped once."""
    groups: dict[Settings, list[int]] = defaultdict(list)
    for row in sequence_of:
        groups[rows[row][0]].append(row)
    tokens = {}
    for settings, members in groups.items():
        mask = banned.mask(settings.whole_words)
        sequences = sorted({sequence_of[row] for row in members})
        if settings.greedy:
            best = dict(zip(sequences, allowed_logits(logits[sequences], mask).argmax(-1).tolist()))
            tokens.update({row: best[sequence_of[row]] for row in members})
            continue
        probs = shaped_logits(logits[sequences], settings, mask).softmax(-1).cpu()  # (K, V)
        which = [sequences.index(sequence_of[row]) for row in members]
        tokens.update(zip(members, draw_rows(probs, which, [generators[row] for row in members])))
    return tokens


def sample_rows(loaded: LoadedModel, prompt: str, rows: Sequence[tuple[Settings, int]],
                max_new_tokens: int = 20) -> list[Sample]:
    """One continuation of ``prompt`` per (settings, seed) row, up to ``max_new_tokens`` each (a row stops at
    its stop token), in the order of ``rows``."""
    if not 1 <= len(rows) <= MAX_ROWS:
        raise VizError(f"Ask for 1 to {MAX_ROWS:,} samples at once, not {len(rows):,}.")
    for settings, seed in rows:
        settings.check()
        check_seed(seed)
    check_new_tokens(max_new_tokens)
    prompt_tokens = prompt_ids(loaded, prompt).to(loaded.device)  # (1, T): one sequence so far
    banned, stop = banned_tokens(loaded), stop_ids(loaded.tokenizer)
    generators = [torch.Generator().manual_seed(seed) for _, seed in rows]
    drawn: list[list[int]] = [[] for _ in rows]
    sequence_of = dict.fromkeys(range(len(rows)), 0)  # active row -> its sequence in the batch
    batch, past = prompt_tokens, None  # (U, T), then (U, 1): the new token of each sequence
    for _ in range(min(max_new_tokens, loaded.max_length - int(prompt_tokens.shape[1]))):
        output = forward(loaded, {"input_ids": batch, "past_key_values": past, "use_cache": True}, hidden=False,
                         attention=False)
        past = output.past_key_values
        tokens = _next_tokens(output.logits[:, -1], rows, sequence_of, banned, generators)
        children: dict[tuple[int, int], int] = {}  # (sequence, token) -> the next step's sequence
        for row, token in tokens.items():
            drawn[row].append(token)
            if token in stop:
                del sequence_of[row]
            else:
                sequence_of[row] = children.setdefault((sequence_of[row], token), len(children))
        if not children:
            break
        past.reorder_cache(torch.tensor([parent for parent, _ in children], device=loaded.device))
        batch = torch.tensor([[token] for _, token in children], device=loaded.device)
    prompt_list = prompt_tokens[0].tolist()
    decode = loaded.tokenizer.decode
    return [Sample(settings=settings, seed=seed, token_ids=tuple(row),
                   text=decode(prompt_list + row, skip_special_tokens=True))
            for (settings, seed), row in zip(rows, drawn)]
