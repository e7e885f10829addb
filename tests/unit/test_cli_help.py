"""``python -m vizcore --help`` and every command's ``--help`` answer without importing torch or transformers.

The parser is built for every command (even ``--help``), so each topic's ``cli.py`` imports its heavy modules
inside its handlers and takes its choices from torch-free modules. Checked in this process (the unit tier
starts no process): vizcore is imported anew with every ``import`` of torch or transformers refused and
recorded, the parser built, and each command's help printed; vizcore's own modules are put back after.
tests/integration/test_cli.py checks the same in a fresh interpreter.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import sys
from typing import Iterator

HEAVY = ("torch", "transformers")


def _ours(name: str) -> bool:
    return name == "vizcore" or name.startswith("vizcore.")


@contextlib.contextmanager
def fresh_vizcore_refusing(heavy: tuple[str, ...]) -> Iterator[list[str]]:
    """vizcore's modules set aside (so its imports run again) and every import of ``heavy`` refused; yields
    the list of refused imports, as ``"importer -> module"``."""
    saved = {name: module for name, module in sys.modules.items() if _ours(name)}
    real_import = builtins.__import__
    refused: list[str] = []

    def guarded(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name.partition(".")[0] in heavy:
            refused.append(f"{(globals or {}).get('__name__', '?')} -> {name}")
            raise ImportError(f"{name} imported while building the command line")
        return real_import(name, globals, locals, fromlist, level)

    for name in saved:
        del sys.modules[name]
    builtins.__import__ = guarded
    try:
        yield refused
    finally:
        builtins.__import__ = real_import
        for name in [n for n in sys.modules if _ours(n)]:
            del sys.modules[name]
        sys.modules.update(saved)


def test_every_help_answers_without_torch_or_transformers():
    helps: dict[str, str] = {}
    with fresh_vizcore_refusing(HEAVY) as refused:
        try:
            from vizcore.cli import build_parser

            parser = build_parser()
            commands = list(parser._subparsers._group_actions[0].choices)
            for argv in [["--help"], *([command, "--help"] for command in commands)]:
                out = io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
                    parser.parse_args(argv)
                helps[" ".join(argv[:-1]) or "(top level)"] = out.getvalue()
        except ImportError:
            pass  # named in ``refused``
    assert not refused, f"building the parser or a --help imported: {', '.join(refused)}"
    assert len(commands) >= 18 and {"attention", "finetune", "attribute", "corpus"} <= set(commands)
    assert all(command in helps["(top level)"] for command in commands)
    for command in commands:
        assert helps[command].startswith(f"usage: python -m vizcore {command}") and "--format" in helps[command]
