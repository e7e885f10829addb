"""One word in different contexts: its vector in each sentence, layer by layer, and their cosines.

A word's vector in a sentence is the mean of its word pieces' hidden states ("riverbank" ->
``river`` + ``##bank``: both pieces, averaged), at every hidden state: 0 is the embedding layer's
output (token + position embeddings, + segment on BERT: ``vizcore.inside.steps.input_sum``; before any
attention), ``i`` the output of layer ``i``.
The first whole-word occurrence in each sentence is used, whatever its case.

The classroom point (Ethayarajh 2019, "How contextual are contextualized word representations?"): at
the embedding layer the word's vectors are nearly the same in every sentence (they differ by position
only: no attention has mixed the neighbours in yet), and through the layers the vectors of the same
sense stay closer than those of different senses. Raw cosines between BERT vectors are high for any
two tokens (the space is anisotropic), so the gap between same-sense and different-sense pairs is what
to read, not the level.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import torch

from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel
from vizcore.model.run import check_text, encode, forward, is_blank, model_inputs

MIN_CONTEXTS, MAX_CONTEXTS = 2, 10
MAX_WORD_CHARS = 40
SENSE_MARK = "|"  # a line "sentence | sense" gives the sentence a sense label


@dataclass(frozen=True)
class Context:
    sentence: str
    sense: str = ""  # a short label ("river", "money"); empty when not given


@dataclass(frozen=True)
class ContextSet:
    """A built-in example: a word with two senses, three sentences each."""

    word: str
    title: str
    contexts: tuple[Context, ...]


def _contexts(sense: str, *sentences: str) -> tuple[Context, ...]:
    return tuple(Context(s, sense) for s in sentences)


CONTEXT_SETS: dict[str, ContextSet] = {s.word: s for s in (
    ContextSet("bank", "bank: of a river / for money", (
        *_contexts("river", "We sat on the bank of the river and watched the boats.",
                   "The river overflowed its bank after the storm.",
                   "Ducks nested along the muddy bank of the stream."),
        *_contexts("money", "She deposited her salary at the bank on Monday.",
                   "The bank approved the loan for their new house.",
                   "He robbed a bank and fled with the cash."))),
    ContextSet("bat", "bat: the animal / for baseball", (
        *_contexts("animal", "A bat flew out of the cave at dusk.",
                   "The bat hung upside down from the branch and slept.",
                   "Every night the bat hunts moths with its sonar."),
        *_contexts("sport", "He swung the bat and hit the ball over the fence.",
                   "The player dropped his bat and ran to first base.",
                   "She bought a new wooden bat for the baseball season."))),
    ContextSet("light", "light: not heavy / not dark", (
        *_contexts("weight", "The suitcase was light enough to carry with one hand.",
                   "She packed a light jacket for the summer trip.",
                   "Aluminium is a light metal used in aircraft."),
        *_contexts("brightness", "Turn on the light, it is dark in here.",
                   "The morning light came through the window.",
                   "Plants need light and water to grow."))),
    ContextSet("bark", "bark: of a dog / of a tree", (
        *_contexts("dog", "The dogs bark at every stranger who walks by.",
                   "I heard a loud bark from the neighbour's garden.",
                   "Our puppy learned to bark when someone knocks."),
        *_contexts("tree", "The bark of the old oak was rough and cracked.",
                   "Beetles live under the bark of dead trees.",
                   "Cinnamon is made from the dried bark of a tree."))),
    ContextSet("match", "match: a game / to light a fire", (
        *_contexts("game", "Our team won the football match on Saturday.",
                   "The tennis match lasted almost five hours.",
                   "Thousands of fans watched the final match of the season."),
        *_contexts("fire", "He struck a match to light the candle.",
                   "The match went out in the wind before the fire caught.",
                   "Keep the match away from the gas stove."))),
)}


@dataclass(frozen=True)
class WordInContexts:
    """The word's vector in each sentence at every hidden state, and where it was found."""

    word: str
    contexts: tuple[Context, ...]
    pieces: tuple[tuple[str, ...], ...]  # the word's pieces in each sentence
    spans: tuple[tuple[int, int], ...]  # (start, end) characters of the occurrence used
    vectors: np.ndarray  # (S, L + 1, D) float32: sentence, hidden state (0 = embeddings), dimension

    @property
    def num_states(self) -> int:
        return int(self.vectors.shape[1])

    def cosines(self) -> np.ndarray:
        """(L + 1, S, S) float64: the cosine between every two sentences' vectors at each hidden state."""
        x = self.vectors.astype(np.float64)
        unit = x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
        return np.clip(np.einsum("sld,tld->lst", unit, unit), -1.0, 1.0)

    def pairs(self) -> list[tuple[int, int]]:
        return list(combinations(range(len(self.contexts)), 2))

    def same_sense(self, i: int, j: int) -> bool | None:
        """True / False when both sentences have a sense label, None otherwise."""
        a, b = self.contexts[i].sense, self.contexts[j].sense
        return None if not a or not b else a == b

    def sense_means(self) -> dict[str, np.ndarray]:
        """Mean cosine over same-sense and over different-sense pairs at each hidden state, ``(L + 1,)``
        each; only the kinds of pair that exist (none without labels)."""
        cos, groups = self.cosines(), {"same sense": [], "different senses": []}
        for i, j in self.pairs():
            same = self.same_sense(i, j)
            if same is not None:
                groups["same sense" if same else "different senses"].append(cos[:, i, j])
        return {name: np.mean(rows, axis=0) for name, rows in groups.items() if rows}


def state_label(index: int) -> str:
    """Hidden state ``index`` as the page names it: 0 is the embedding layer, ``i`` is layer i."""
    return "embeddings" if index == 0 else f"layer {index}"


def parse_contexts(text: str) -> tuple[Context, ...]:
    """One sentence per line, optionally ``sentence | sense``; blank lines are skipped."""
    contexts = []
    for line in (text or "").splitlines():
        sentence, _, sense = line.partition(SENSE_MARK)
        if not is_blank(sentence):
            contexts.append(Context(sentence.strip(), sense.strip()))
    return tuple(contexts)


def find_word(word: str, sentence: str) -> tuple[int, int] | None:
    """Characters (start, end) of the first whole-word occurrence of ``word`` in ``sentence``, any case."""
    match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", sentence, flags=re.IGNORECASE)
    return match.span() if match else None


def check_inputs(word: str, contexts: tuple[Context, ...]) -> str:
    """The word, stripped; VizError naming the first sentence without it (or too few / many sentences)."""
    word = (word or "").strip()
    if is_blank(word):
        raise VizError("Type the word to follow through the sentences.")
    if len(word) > MAX_WORD_CHARS:
        raise VizError(f"The word has {len(word)} characters; type one word (at most {MAX_WORD_CHARS}).")
    if not MIN_CONTEXTS <= len(contexts) <= MAX_CONTEXTS:
        raise VizError(f"Give {MIN_CONTEXTS} to {MAX_CONTEXTS} sentences, one per line; there are {len(contexts)}.")
    for number, context in enumerate(contexts, start=1):
        check_text(context.sentence, f"sentence {number}")
        if find_word(word, context.sentence) is None:
            raise VizError(f"Sentence {number} does not contain the word '{word}': “{context.sentence[:100]}”. "
                           "Put the word in it as a whole word, or remove the line.")
    return word


def _word_states(loaded: LoadedModel, sentence: str, span: tuple[int, int],
                 number: int) -> tuple[tuple[str, ...], np.ndarray]:
    """The pieces covering ``span`` and their mean hidden state at every layer: (pieces, (L + 1, D))."""
    encoding, _ = encode(loaded, sentence)
    offsets = encoding["offset_mapping"][0].tolist()
    special = encoding["special_tokens_mask"][0].tolist()
    start, end = span
    chosen = [i for i, (a, b) in enumerate(offsets) if not special[i] and b > a and a < end and b > start]
    if not chosen:
        raise VizError(f"In sentence {number} the word falls after the first {len(offsets)} tokens this model "
                       "reads: shorten the sentence.")
    output = forward(loaded, model_inputs(loaded, encoding), hidden=True, attention=False, base_only=True)
    states = torch.stack([h[0, chosen] for h in output.hidden_states])  # (L + 1, pieces, D)
    tokens = loaded.tokenizer.convert_ids_to_tokens(encoding["input_ids"][0, chosen].tolist())
    return tuple(tokens), states.mean(1).float().cpu().numpy()


def word_in_contexts(loaded: LoadedModel, word: str, contexts: tuple[Context, ...]) -> WordInContexts:
    """Run the model on each sentence; the word's vector (mean of its pieces) at every hidden state."""
    word = check_inputs(word, contexts)
    spans = tuple(find_word(word, c.sentence) for c in contexts)
    found = [_word_states(loaded, c.sentence, span, n) for n, (c, span) in enumerate(zip(contexts, spans), 1)]
    return WordInContexts(word=word, contexts=contexts, pieces=tuple(p for p, _ in found), spans=spans,
                          vectors=np.stack([v for _, v in found]).astype(np.float32))
