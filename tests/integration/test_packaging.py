"""`pip install .` gives `import vizcore`, the `vizcore` command and the renderer's files: a wheel is built from a
copy of the project and installed into a fresh venv (no network: --no-deps, --no-build-isolation)."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "requirements.txt", "LICENSE", "NOTICE"):
        shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("vizcore", "tools"):
        shutil.copytree(ROOT / package, source / package, ignore=ignore)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, timeout=600)
    return next((tmp_path / "dist").glob("inside_bert-*.whl"))


def test_the_wheel_holds_the_renderer_and_a_fresh_venv_gets_vizcore_and_its_command(tmp_path):
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    for path in ("vizcore/static/attention_view.js", "vizcore/notebook.py", "vizcore/attention/renderer.py",
                 "vizcore/static/head_view.js"):
        assert path in names, path
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "vizcore = vizcore.cli:main" in entry_points
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata
    for licence in ("LICENSE", "NOTICE"):  # the licence and the list of shipped models and data travel with the wheel
        assert any(n.endswith(f".dist-info/licenses/{licence}") for n in names), licence

    # A venv without its own pip (ensurepip was 4.3 of this test's 11 CPU-s), filled by this interpreter's pip.
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python, command = venv / "bin" / "python", venv / "bin" / "vizcore"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, timeout=600)
    check = ("import vizcore, importlib.resources as r; "
             "print(vizcore.__file__); print(r.files('vizcore').joinpath('static/attention_view.js').is_file())")
    out = subprocess.run([str(python), "-c", check], capture_output=True, text=True, check=True, cwd=tmp_path)
    location, found = out.stdout.split()
    assert location.startswith(str(venv)) and found == "True"
    # The command, with the app's dependencies borrowed from this interpreter (the wheel was installed without them).
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"], "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([str(command), "models", "--format", "json"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "all-MiniLM-L6-v2" in json.dumps(json.loads(out.stdout))
