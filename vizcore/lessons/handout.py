"""A lesson as one offline HTML handout (issue 34 D): its title, sentence, model and date, then every step's title,
claim, figures (with their numbers as tables), task, question with its choices, and the answer computed from the
model, folded in an "Answer" box so a student predicts first; each step links back to the app.

Offline: nothing is fetched when the file is opened. plotly.js is written once (plotly's own copy,
``plotly.offline.get_plotlyjs()``, about 4.8 MB) and each plotly figure is a div drawn by it; an altair chart is
drawn to SVG by vl-convert (a pinned dependency, no browser needed) and embedded as an image. The figures are the
step kinds' own (``vizcore.lessons.kinds``): ``views`` lets the page pass its cached views, so nothing is drawn
twice.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import html
import re
from dataclasses import dataclass
from typing import Callable

from vizcore.errors import VizError
from vizcore.lessons.answers import ANSWERS, Answer
from vizcore.lessons.course import step_link
from vizcore.lessons.kinds import KINDS, Source
from vizcore.lessons.lesson import Lesson, Step
from vizcore.lessons.view import View
from vizcore.plot import HtmlFigure

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
SVG_WIDTH = 640  # an altair chart as wide as the app's column draws it
CSS = """
body { margin: 0; background: #fff; color: #000; font: 18px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { max-width: 60rem; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 2rem; margin: 0 0 .5rem; } h2 { font-size: 1.5rem; margin: 0 0 .5rem; } h3 { font-size: 1.2rem; }
section { border-top: 2px solid #000; padding: 1rem 0 1.5rem; }
.claim { font-size: 1.25rem; }
figure { margin: 1rem 0; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
figure img { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: .5rem 0; } th, td { border: 1px solid #555; padding: .15rem .5rem; }
td.value { text-align: right; font-variant-numeric: tabular-nums; }
details { margin: .5rem 0; } summary { cursor: pointer; font-weight: 600; }
details.answer { border: 2px solid #000; padding: .5rem .75rem; max-width: 40rem; }
a { color: #0645ad; overflow-wrap: anywhere; } a:focus, summary:focus { outline: 3px solid #000; outline-offset: 2px; }
code { font-size: .95em; overflow-wrap: anywhere; }
.problem { border-left: 4px solid #b00020; padding-left: .75rem; }
@media print { figure { break-inside: avoid; } }
"""


@dataclass(frozen=True)
class Handout:
    html: str
    figures: int  # figures embedded (plotly divs and SVG images)
    problems: tuple[str, ...]  # steps whose view or answer could not be computed, with the reason


def _text(value: object) -> str:
    return html.escape(str(value), quote=True)


def _markdown(caption: str) -> str:
    """A view's caption (markdown with `code` and **bold** only) as HTML."""
    out = _text(caption)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def _title(figure) -> str:
    """A figure's own title as plain text ('' when it has none); an altair chart's is its first (sub)chart's."""
    if hasattr(figure, "to_plotly_json"):
        title = figure.layout.title.text or ""
    else:
        title = _spec_title(figure.to_dict())
    return " ".join(re.sub(r"<[^>]+>", " ", title).split())


def _spec_title(spec: object) -> str:
    if isinstance(spec, dict):
        title = spec.get("title")
        if isinstance(title, dict):
            title = title.get("text")
        if isinstance(title, str) and title:
            return title
        spec = [value for key, value in spec.items() if key in ("vconcat", "hconcat", "concat", "layer", "spec")]
    if isinstance(spec, list):
        return next((found for found in map(_spec_title, spec) if found), "")
    return ""


def _fixed_width(spec: object) -> object:
    """A Vega-Lite spec with its ``width: "container"`` (Streamlit's column) set to SVG_WIDTH pixels."""
    if isinstance(spec, dict):
        return {key: SVG_WIDTH if key == "width" and value == "container" else _fixed_width(value)
                for key, value in spec.items()}
    if isinstance(spec, list):
        return [_fixed_width(value) for value in spec]
    return spec


def _svg(chart) -> str:
    """An altair chart as SVG, drawn by vl-convert (no browser, no network)."""
    try:
        import vl_convert as vlc
    except ImportError as error:  # requirements.txt pins it; a bare install may lack it
        raise VizError("this chart needs the package vl-convert-python (requirements.txt) to be drawn "
                       "offline") from error
    import altair as alt

    version = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return vlc.vegalite_to_svg(_fixed_width(chart.to_dict()), vl_version=version)


def _figure(figure, where: str, alternative: str) -> str:
    """One figure: a plotly div (drawn by the page's one copy of plotly.js; named for a screen reader by a caption
    only it reads, the chart draws its title itself) or an altair chart as an SVG image with its ``alt`` text."""
    if isinstance(figure, HtmlFigure):  # words that wrap (the masking draw): the HTML itself, its title as caption
        return f"<figure>{figure.body}<figcaption>{_text(figure.title)}</figcaption></figure>"
    named = f"{_title(figure) or 'A figure'}. {alternative}".strip()
    if hasattr(figure, "to_plotly_json"):
        # Streamlit's plotly theme grows the margins to fit the tick labels; plain plotly.js keeps the figure's
        # own small margins, which cut the layer numbers off the heatmaps (seen in Chromium).
        figure = copy.deepcopy(figure).update_xaxes(automargin=True).update_yaxes(automargin=True)
        body = figure.to_html(full_html=False, include_plotlyjs=False, div_id=where, config=PLOTLY_CONFIG)
        return f'<figure>{body}<figcaption class="visually-hidden">{_text(named)}</figcaption></figure>'
    svg = base64.b64encode(_svg(figure).encode("utf-8")).decode("ascii")
    return f'<figure><img src="data:image/svg+xml;base64,{svg}" alt="{_text(named)}"></figure>'


def _alternative(view: View) -> str:
    """Where a figure's numbers are written out, for a reader who cannot see it."""
    if view.series:
        return "Its numbers are in the tables under “The numbers behind the figures”."
    if view.numbers:
        return "Its main numbers are written under “The numbers behind the figures”."
    return ""


def _numbers(view: View) -> str:
    """The view's series as tables and its numbers as sentences: the figures' text alternative."""
    parts = []
    for name, series in view.series.items():
        rows = "".join(f"<tr><th scope=\"row\">{_text(label)}</th><td class=\"value\">{float(value):.4g}</td></tr>"
                       for label, value in zip(series.labels, series.values))
        parts.append(f"<table><caption>{_text(name)}</caption><thead><tr><th scope=\"col\">entry</th>"
                     f"<th scope=\"col\">value</th></tr></thead><tbody>{rows}</tbody></table>")
    if view.numbers:
        parts.append("<ul>" + "".join(f"<li>{_text(number.about())}</li>" for number in view.numbers.values())
                     + "</ul>")
    if not parts:
        return ""
    return "<details><summary>The numbers behind the figures</summary>" + "".join(parts) + "</details>"


def _question(step: Step, view: View | None) -> tuple[str, str | None]:
    """The question, its choices and the folded answer; and a problem, if the answer could not be computed."""
    question = step.question
    if question is None:
        return "", None
    head = f"<h3>Predict, then check</h3><p>{_text(question.text)}</p>"
    if view is None:
        return head, None
    try:
        answer: Answer = ANSWERS[question.answer](view, question.params)
    except VizError as error:
        return head + f'<p class="problem">The answer could not be computed: {_text(error)}</p>', str(error)
    choices = "".join(f"<li>{_text(choice)}</li>" for choice in answer.choices)
    return (head + f'<ol type="A">{choices}</ol><details class="answer"><summary>Answer</summary>'
            f"<p><strong>{_text(answer.right)}</strong>. The model's numbers: {_text(answer.reason)}.</p></details>",
            None)


def _step(lesson: Lesson, number: int, view: View | None, problem: str | None, question: str,
          link: str) -> tuple[str, int]:
    step = lesson.steps[number - 1]
    parts = [f'<section aria-labelledby="step-{number}"><h2 id="step-{number}">{number}. {_text(step.title)}</h2>',
             f'<p class="claim">{_text(step.claim)}</p>']
    figures = 0
    if view is not None:
        alternative = _alternative(view)
        for i, figure in enumerate(view.figures):
            try:
                parts.append(_figure(figure, f"step{number}-figure{i + 1}", alternative))
                figures += 1
            except VizError as error:
                parts.append(f'<p class="problem">A figure could not be drawn: {_text(error)}.</p>')
        if view.caption:
            parts.append(f"<p>{_markdown(view.caption)}</p>")
        parts.append(_numbers(view))
    else:
        parts.append(f'<p class="problem">This step\'s view could not be computed: {_text(problem)}</p>')
    parts.append(f"<p><strong>Your turn:</strong> {_text(step.task)}</p>")
    parts.append(question)
    parts.append(f'<p>Open this step in the app: <a href="{_text(link)}">{_text(link)}</a></p></section>')
    return "".join(parts), figures


def _built(source: Source, text: str) -> Callable[[Step], View]:
    """Each step's view built with its kind, once for steps that show the same view (lesson 7's two steps on one
    live training run)."""
    done: dict[tuple, View] = {}

    def view_of(step: Step) -> View:
        key = (step.kind, tuple(sorted((name, repr(value)) for name, value in step.params.items())))
        if key not in done:
            done[key] = KINDS[step.kind].build(source, text, step.params)
        return done[key]

    return view_of


def build_handout(lesson: Lesson, source: Source, text: str, *, base: str = "", model: str | None = None,
                  views: Callable[[Step], View] | None = None, today: dt.date | None = None) -> Handout:
    """``lesson`` on ``text`` as a handout. ``views``: each step's view (the page's cached one); by default built
    here with the step kind on ``source``. ``base``, ``model``: the app's address and the model for the links
    (``vizcore.lessons.course.step_link``). A step whose view or answer cannot be computed says why in the file."""
    view_of = views or _built(source, text)
    try:
        model_name = source.model().name
    except VizError as error:
        raise VizError(f"The handout needs the model: {error}") from error
    sections, figures, problems, plotly = [], 0, [], False
    for number, step in enumerate(lesson.steps, 1):
        view, problem = None, None
        try:
            view = view_of(step)
        except VizError as error:
            problem = str(error)
            problems.append(f"step {number}: {problem}")
        plotly = plotly or bool(view and any(hasattr(f, "to_plotly_json") for f in view.figures))
        question, answer_problem = _question(step, view)
        if answer_problem:
            problems.append(f"step {number}: {answer_problem}")
        section, drawn = _step(lesson, number, view, problem, question, step_link(lesson.id, number, text, base, model))
        sections.append(section)
        figures += drawn
    day = (today or dt.datetime.now(dt.timezone.utc).date()).isoformat()
    script = ""
    if plotly:
        from plotly.offline import get_plotlyjs

        script = f'<script type="text/javascript">{get_plotlyjs()}</script>'
    where = ("" if base else " (add each link to the app's address, e.g. http://localhost:8501)")
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="color-scheme" content="light"><title>{_text(lesson.title)}: handout</title>'
            f"<style>{CSS}</style>{script}</head><body><main><header><h1>{_text(lesson.title)}</h1>"
            f"<p>Sentence: <q>{_text(text)}</q></p><p>Model: <strong>{_text(model_name)}</strong> · computed on "
            f"{day} · {len(lesson.steps)} steps</p><p>Every number and answer below was computed from this model "
            f"on this sentence. Predict each answer before you open it; each step's link reopens it in the "
            f"app{_text(where)}.</p></header>{''.join(sections)}</main></body></html>\n")
    return Handout(html=page, figures=figures, problems=tuple(problems))


def handout(lesson: Lesson, source: Source, text: str, **options) -> str:
    """``lesson`` on ``text`` as one self-contained HTML file (``build_handout``'s options)."""
    return build_handout(lesson, source, text, **options).html
