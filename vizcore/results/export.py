"""The stored answers as CSV and JSON (one row per answer), and the class report as one offline HTML page. No
streamlit.

CSV and JSON have the columns of ``vizcore.results.store.COLUMNS``: class, lesson, phase (pre, post, step), question,
student (the random id), nickname, answer, correct (true/false), answered_at (ISO 8601, UTC), then the right answer,
the question as shown and the model. An empty store gives the header alone (CSV) or ``[]`` (JSON).

The HTML report is offline like the lessons' handouts (vizcore/lessons/handout.py): plotly.js is written once into
the file, each chart has its numbers written beside it, nothing is fetched when it is opened.
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import io
import json
from typing import Iterable

from vizcore.results.report import ClassReport, LessonReport, QuestionReport
from vizcore.results.store import COLUMNS, Row

FORMATS = ("csv", "json")


def csv_text(rows: Iterable[Row]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        record = row.record()
        record["correct"] = "true" if record["correct"] else "false"
        writer.writerow(record.values())
    return out.getvalue()


def json_text(rows: Iterable[Row]) -> str:
    return json.dumps([row.record() for row in rows], ensure_ascii=False, indent=1) + "\n"


def _text(value: object) -> str:
    return html.escape(str(value), quote=True)


def share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def gain(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}"


def wrong_answer(question: QuestionReport) -> str:
    """"rome (3, after)": the most common wrong answer, how many gave it and when; "—" when nobody was wrong."""
    if question.wrong is None:
        return "—"
    return f"{question.wrong} ({question.wrong_count}, {'after' if question.wrong_phase == 'post' else 'before'})"


def _question_row(question: QuestionReport, base: str) -> str:
    wrong = _text(wrong_answer(question))
    link = f"{base.rstrip('/')}{question.link}"
    return (f"<tr><th scope=\"row\">{_text(question.text)}</th><td>{question.before[0]}/{question.before[1]} "
            f"({share(question.share_before)})</td><td>{question.after[0]}/{question.after[1]} "
            f"({share(question.share_after)})</td><td>{gain(question.gain)}</td><td>{wrong}</td>"
            f"<td>{_text(question.suggests) or '—'}</td><td><a href=\"{_text(link)}\">step {question.step}</a></td>"
            "</tr>")


QUESTION_HEAD = ("<thead><tr><th scope=\"col\">question</th><th scope=\"col\">right before</th><th scope=\"col\">"
                 "right after</th><th scope=\"col\">normalised gain</th><th scope=\"col\">most common wrong answer"
                 "</th><th scope=\"col\">what it suggests</th><th scope=\"col\">taught in</th></tr></thead>")


def _lesson(lesson: LessonReport, base: str, index: int) -> str:
    from vizcore.results.figures import distribution_text, score_distribution

    figure = score_distribution(lesson).to_html(full_html=False, include_plotlyjs=False, div_id=f"scores{index}",
                                               config={"displaylogo": False, "responsive": True})
    rows = "".join(_question_row(question, base) for question in lesson.questions)
    return (f"<section><h2>{_text(lesson.title)}</h2><p>Right before the lesson: {share(lesson.mean_before)} · "
            f"after: {share(lesson.mean_after)} · the class's normalised gain: {gain(lesson.gain)}</p>"
            f"<figure>{figure}<figcaption>{_text(distribution_text(lesson))}</figcaption></figure>"
            f"<table>{QUESTION_HEAD}<tbody>{rows}</tbody></table></section>")


CSS = """
body { margin: 0; background: #fff; color: #000; font: 18px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { max-width: 72rem; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 2rem; margin: 0 0 .5rem; } h2 { font-size: 1.5rem; }
section { border-top: 2px solid #000; padding: 1rem 0 1.5rem; }
table { border-collapse: collapse; margin: .5rem 0; } th, td { border: 1px solid #555; padding: .2rem .5rem;
  text-align: left; vertical-align: top; }
a { color: #0645ad; } a:focus { outline: 3px solid #000; outline-offset: 2px; }
@media print { section { break-inside: avoid; } }
"""


def report_html(report: ClassReport, base: str = "", today: dt.date | None = None) -> str:
    """The class report as one self-contained HTML page (``base``: the app's address, for the steps' links)."""
    from plotly.offline import get_plotlyjs

    day = (today or dt.datetime.now(dt.timezone.utc).date()).isoformat()
    lessons = "".join(_lesson(lesson, base, i) for i, lesson in enumerate(report.lessons, 1)) or \
        "<p>No quiz was taken in this class.</p>"
    steps = ""
    if report.steps:
        rows = "".join(f"<tr><th scope=\"row\">{_text(s.lesson)} · step {s.step}: {_text(s.text)}</th><td>{s.right}/"
                       f"{s.answered}</td><td>{_text(s.wrong or '—')}</td></tr>" for s in report.steps)
        steps = ("<section><h2>The lessons' questions, answered in class</h2><table><thead><tr><th scope=\"col\">"
                 "question</th><th scope=\"col\">right</th><th scope=\"col\">most common wrong answer</th></tr>"
                 f"</thead><tbody>{rows}</tbody></table></section>")
    names = ""
    if report.nicknames:
        names = "<p>Nicknames typed by students: " + _text(", ".join(sorted(report.nicknames.values()))) + "</p>"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" '
            f'content="light"><title>Class {_text(report.code)}: report</title><style>{CSS}</style>'
            f'<script type="text/javascript">{get_plotlyjs()}</script></head><body><main><header>'
            f"<h1>Class {_text(report.code)}: what the class learned</h1><p>{report.students} students · "
            f"{report.answers} answers · written {day}</p>{names}<p>Normalised gain: (after − before) / (1 − before), "
            "the share of what was left to learn that was learned.</p></header>"
            f"{lessons}{steps}</main></body></html>\n")
