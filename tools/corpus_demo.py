"""The Corpus page's built-in demo: 1,119 offline English sentences and their precomputed corpus run.

``python -m tools.corpus_demo`` writes ``vizcore/data/corpus-demo.txt`` (the 519 sentences of the search
collection, then the first 600 sentences of ``ner-silver.conll`` with 8-30 words, detokenised) and runs
``python -m vizcore corpus --syntax`` on it with the embedded model into ``vizcore/data/corpus-demo/``.
The same input gives the same files (rerun it after changing the model or the measures).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

from vizcore.corpus.engine import Settings, run_corpus

DATA = Path(__file__).resolve().parents[1] / "vizcore" / "data"
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
                                  device="cpu"))  # paths relative to the repository: run from its root
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
