"""The house keeps its shape: the README's layout tree names every folder there is, vizcore's imports
have no cycle, and nothing in vizcore imports streamlit or the tools."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def layout_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Layout", 1)[1]
    return section.split("```", 2)[1]


def test_the_readme_layout_names_every_code_folder_and_nothing_that_is_gone():
    named = set()
    for line in layout_block().splitlines():
        first = line.split("  ")[0].strip()
        if not first:
            continue
        match = re.fullmatch(r"([\w/]+)/\{([\w,]+)\}/", first)
        paths = [f"{match.group(1)}/{part}" for part in match.group(2).split(",")] if match else [first.rstrip("/")]
        for path in paths:
            assert (ROOT / path).exists(), f"README layout names {path}, which does not exist"
            named.add(path)
    packages = {str(p.parent.relative_to(ROOT)) for p in (ROOT / "vizcore").rglob("__init__.py")}
    packages |= {str(p.relative_to(ROOT)) for p in (ROOT / "vizcore").iterdir()
                 if p.is_dir() and p.name != "__pycache__"}
    missing = sorted(packages - named)
    assert not missing, f"README layout does not name {missing}"
    for folder in ("pages", "ui", "tools", "bench", "tests/unit", "tests/integration", "tests/support", "tests/app",
                   "tests/e2e"):
        assert folder in named


def imports_of(path: Path, package: str) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in modules if m.split(".")[0] in (package, "streamlit", "tools")}


def module_graph() -> dict[str, set[str]]:
    files = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
             for p in (ROOT / "vizcore").rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    return {mod: {r for r in map(resolve, imports_of(path, "vizcore"))
                  if r and r != mod and not mod.startswith(r + ".")}
            for mod, path in files.items()}


def test_vizcore_has_no_import_cycle():
    graph = module_graph()
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join(trail + [node, nxt])}"
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])


def test_vizcore_never_imports_streamlit_or_the_tools():
    for path in (ROOT / "vizcore").rglob("*.py"):
        bad = {m for m in imports_of(path, "vizcore") if m.split(".")[0] in ("streamlit", "tools")}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
