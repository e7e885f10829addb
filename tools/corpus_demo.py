"""The Corpus page's built-in demo: 1,119 offline English sentences and their precomputed corpus run.

``python -m tools.corpus_demo`` writes ``vizcore/data/corpus-demo.txt`` (the 519 sentences of the search
collection, then the first 600 sentences of ``ner-silver.conll`` with 8-30 words, detokenised) and runs
``python -m vizcore corpus --syntax --neurons 20`` on it with the embedded model into
``vizcore/data/corpus-demo/``.
The same input gives the same files (rerun it after changing the model or the measures). It then
writes the relation table of docs/CORPUS.md (between its markers) from ``relations.parquet``, beside
Clark et al.'s BERT-base figures (``CLARK``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

from vizcore.corpus.engine import Settings, run_corpus
from vizcore.corpus.relations import best_heads
from vizcore.corpus.results import load_results

DATA = Path(__file__).resolve().parents[1] / "vizcore" / "data"
DOC = DATA.parents[1] / "docs" / "CORPUS.md"
MARK = ("<!-- begin:relations -->", "<!-- end:relations -->")
NEURONS = 20  # top examples kept per feed-forward neuron (neurons.parquet, the Neurons tab)
# Clark et al. (2019), Table 1 (BERT-base, WSJ, Stanford dependencies): relation -> (head layer-index, accuracy %,
# baseline %, baseline offset). spaCy's English labels are ClearNLP's, which keep these names, except that
# Stanford's "nn" is spaCy's "compound".
CLARK = {
    "all": ("7-6", 34.5, 26.3, 1), "prep": ("7-4", 66.7, 61.8, -1), "pobj": ("9-6", 76.3, 34.6, -2),
    "det": ("8-11", 94.3, 51.7, 1), "compound": ("4-10", 70.4, 70.2, 1), "nsubj": ("8-2", 58.5, 45.5, 1),
    "amod": ("4-10", 75.6, 68.3, 1), "dobj": ("8-10", 86.8, 40.0, -2), "advmod": ("7-6", 48.8, 40.2, 1),
    "aux": ("4-10", 81.1, 71.5, 1), "poss": ("7-6", 80.5, 47.7, 1), "auxpass": ("4-10", 82.5, 40.5, 1),
    "ccomp": ("8-1", 48.8, 12.4, -2), "mark": ("8-2", 50.7, 14.5, 2), "prt": ("6-7", 99.1, 91.4, -1),
}
SILVER_SENTENCES = 600
_NO_SPACE_BEFORE = re.compile(r" (?=[,.;:!?%)\]}]|'s\b|'re\b|'ve\b|'ll\b|'d\b|'m\b|n't\b)")
_NO_SPACE_AFTER = re.compile(r"(?<=[(\[{$]) ")


def silver_sentences(path: Path, count: int) -> list[str]:
    """The first ``count`` sentences of a CoNLL file with 8-30 words, joined back into plain text."""
    sentences, words = [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("# "):
            continue
        if line.strip():
            words.append(line.split("\t")[0])
            continue
        if 8 <= len(words) <= 30 and '"' not in words:
            sentences.append(detokenise(words))
        words = []
        if len(sentences) == count:
            break
    return sentences


def detokenise(words: list[str]) -> str:
    return _NO_SPACE_AFTER.sub("", _NO_SPACE_BEFORE.sub("", " ".join(words)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    collection = (DATA / "search-collection.txt").read_text(encoding="utf-8").splitlines()
    lines = [line for line in collection if line.strip()] + silver_sentences(DATA / "ner-silver.conll",
                                                                               SILVER_SENTENCES)
    root = DATA.parents[1]
    source, out = (DATA / "corpus-demo.txt").relative_to(root), (DATA / "corpus-demo").relative_to(root)
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    summary = run_corpus(Settings(input=str(source), out=str(out), syntax=True, batch_size=args.batch_size,
                                  device="cpu", neurons=NEURONS))  # paths relative to the repository: run from its root
    print(json.dumps(summary))
    write_relation_table(out)


def relation_rows(out: Path) -> list[str]:
    """Per relation of ``CLARK``: this model's best head over both directions beside the paper's."""
    results = load_results(out)
    best = best_heads(results.relations)
    rows = []
    for relation, (head, accuracy, baseline, offset) in CLARK.items():
        mine = best[best["relation"] == relation].sort_values("accuracy", ascending=False)
        if mine.empty:
            rows.append(f"| {relation} | 0 | — | — | — | {head} | {accuracy} | {baseline} ({offset:+d}) |")
            continue
        m = mine.iloc[0]
        rows.append(f"| {relation} | {m['count']:,} | {m['layer'] + 1}-{m['head'] + 1} ({m['direction']}) | "
                    f"{100 * m['accuracy']:.1f} | {100 * m['baseline_accuracy']:.1f} ({m['baseline_offset']:+d}) | "
                    f"{head} | {accuracy} | {baseline} ({offset:+d}) |")
    return rows


def write_relation_table(out: Path) -> None:
    header = ("| relation | arcs here | best head here (direction) | accuracy here % | best offset here % | "
              "Clark et al. BERT-base head | accuracy % | best offset % |\n|---|---|---|---|---|---|---|---|")
    block = "\n".join([MARK[0], header, *relation_rows(out), MARK[1]])
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(MARK[0]), text.index(MARK[1]) + len(MARK[1])
    DOC.write_text(text[:start] + block + text[end:], encoding="utf-8")


if __name__ == "__main__":
    main()
