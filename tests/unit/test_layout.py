"""The house keeps its shape: the README's layout tree names every folder there is, vizcore's imports
have no cycle, nothing in vizcore imports streamlit or the tools, and a topic's page, its ui package and
its vizcore package have the same name."""

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
    packages |= {str(p.parent.relative_to(ROOT)) for p in (ROOT / "ui").glob("*/__init__.py")}
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


# The only modules directly in ui/: what several topics use. A topic's own UI goes in ui/<topic>/.
SHARED_UI = {
    "state": "the cached model and run wrappers, the shared sidebar",
    "warm": "the server's warm-up before it listens (app.py's lifespan)",
    "url_state": "links in and out",
    "layer_head": "the one layer and head picker, and the session's choice",
    "feedback": "errors, user text in markdown, the chart config",
    "jobs": "the server's one queue of background jobs",
    "attention_component": "the in-browser attention view, drawn by Home and the Explorer",
    "launch": "make run's server command",
    "scratch": "the sessions' temporary folders",
    "layout": "the app's page layout rules (padding on narrow screens)",
}
FRONT_PAGE = "home"  # the front page: named for what it is, it reads only the shared modules


def vizcore_topics() -> set[str]:
    return {p.parent.name for p in (ROOT / "vizcore").glob("*/__init__.py")}


def ui_packages() -> set[str]:
    return {p.parent.name for p in (ROOT / "ui").glob("*/__init__.py")}


def ui_topics_imported(path: Path) -> set[str]:
    """The ui packages a file imports (``from ui.why import page``, ``from ui import why``, ``import ui.why.page``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            parts = node.module.split(".")
            if parts[0] == "ui":
                found |= {parts[1]} if len(parts) > 1 else {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("ui.")}
    return found & ui_packages()


def page_aliases() -> set[str]:
    """The pages' URL names (``st.Page(url_path=...)`` in app.py) as module names: fill_mask, step_by_step..."""
    aliases = set()
    for node in ast.walk(ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.keyword) and node.arg == "url_path" and isinstance(node.value, ast.Constant):
            aliases.add(node.value.value.replace("-", "_"))
    return aliases - {FRONT_PAGE}


def test_ui_holds_the_shared_modules_and_one_package_per_vizcore_topic():
    topics = vizcore_topics()
    prefixes = topics | page_aliases()
    for path in (ROOT / "ui").rglob("*.py"):
        parts = path.relative_to(ROOT / "ui").with_suffix("").parts
        where = path.relative_to(ROOT)
        if len(parts) == 1:
            assert parts[0] in {"__init__", *SHARED_UI}, (
                f"{where} is a topic's code outside its package: move it to ui/<topic>/ (topics: vizcore's "
                f"packages {sorted(topics)}), or, if several topics use it, declare it in SHARED_UI")
            continue
        package, name = parts[0], parts[-1]
        assert len(parts) == 2, f"{where}: a ui package is one level deep (ui/{package}/<module>.py)"
        assert package in topics, f"{where}: ui/{package}/ is not named as a vizcore package ({sorted(topics)})"
        assert (ROOT / "ui" / package / "__init__.py").is_file(), f"ui/{package}/ has no __init__.py"
        carried = [t for t in prefixes if name == t or name.startswith(f"{t}_")]
        assert not carried, (f"{where} carries a topic's name ({carried[0]}): inside ui/{package}/ a module is named "
                             "for what it is (ui/why/ablation.py, not ui/why/why_ablation.py)")


def test_a_page_its_ui_package_and_its_vizcore_package_have_the_same_name():
    topics, packages = vizcore_topics(), ui_packages()
    pages = {p.stem: p for p in (ROOT / "pages").glob("*.py")}
    for name, path in pages.items():
        if name != FRONT_PAGE:
            assert name in topics, f"pages/{name}.py is not named as a vizcore package ({sorted(topics)})"
        others = ui_topics_imported(path) - {name}
        assert not others, (f"pages/{name}.py imports topic code from ui/{sorted(others)[0]}/: a page's own UI "
                            f"is in ui/{name}/ (shared code in the ui modules {sorted(SHARED_UI)})")
    orphans = packages - set(pages)
    assert not orphans, f"ui/{sorted(orphans)[0]}/ has no page of its name in pages/"
