"""``python -m vizcore results``: the stored answers and a class's report, from the store the server uses
(``VIZCORE_RESULTS``, vizcore/results/stores.py).

* ``results export --format csv|json [--class CODE] [-o FILE]``: every stored answer, one row each (the columns of
  vizcore/results/export.py); on an empty store, the header alone (CSV) or ``[]``. On stdout unless ``-o``.
* ``results report --class CODE [-o FILE]``: the class's report as one offline HTML page (default
  ``class-CODE-report.html``); prints where it went. The command line reads the store directly: whoever can run it
  on the server can read the file anyway, so it asks for no teacher's key.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vizcore.cliargs import RawOutput, add_format_option


def _store():
    from vizcore.results.stores import server_results

    return server_results()


def _code(typed: str | None) -> str | None:
    from vizcore.lessons.rooms import check_code

    return None if typed is None else check_code(typed)


def _write(output: str, text: str) -> None:
    from vizcore.errors import VizError

    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as error:
        raise VizError(f"cannot write {output}: {error.strerror or error}.") from error


def _export(args: argparse.Namespace):
    from vizcore.results.export import csv_text, json_text

    rows = _store().answers(_code(args.class_code))
    text = csv_text(rows) if args.format == "csv" else json_text(rows)
    if args.output:
        _write(args.output, text)
        return {"file": args.output, "answers": len(rows), "format": args.format}
    return RawOutput(text)


def _report(args: argparse.Namespace) -> dict:
    from vizcore.lessons.lesson import load_lessons
    from vizcore.results.export import report_html
    from vizcore.results.report import class_report

    code = _code(args.class_code)
    rows = _store().answers(code)
    report = class_report(code, {lesson.id: lesson for lesson in load_lessons()}, rows)
    output = args.output or f"class-{code}-report.html"
    _write(output, report_html(report, base=args.base))
    return {"class": code, "file": output, "students": report.students, "answers": report.answers,
            "lessons": [lesson.lesson for lesson in report.lessons]}


def register(subparsers: argparse._SubParsersAction) -> None:
    from vizcore.lessons.cli import APP_ADDRESS

    parser = subparsers.add_parser("results", help="the quizzes' and questions' stored answers: export them, or "
                                                   "write a class's report",
                                   description="results export --format csv|json [--class CODE]: every stored answer; "
                                               "results report --class CODE: the class's report as HTML.")
    actions = parser.add_subparsers(dest="action", metavar="export|report", required=True)
    export = actions.add_parser("export", help="every stored answer, one row each, as CSV or JSON")
    export.add_argument("--format", choices=["csv", "json"], default="csv", help="CSV (default) or JSON")
    export.add_argument("--class", dest="class_code", help="only this class's answers (its code)")
    export.add_argument("-o", "--output", help="write to this file instead of stdout")
    export.set_defaults(handler=_export)
    report = actions.add_parser("report", help="a class's report as one offline HTML page")
    report.add_argument("--class", dest="class_code", required=True, help="the class's code")
    report.add_argument("-o", "--output", help="the HTML file (default: class-CODE-report.html)")
    report.add_argument("--base", default=APP_ADDRESS, help="the app's address for the steps' links (default: "
                                                            "%(default)s)")
    add_format_option(report)
    report.set_defaults(handler=_report)
