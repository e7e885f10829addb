"""A lesson as an offline HTML handout (vizcore/lessons/handout.py) and its command, on tiny random models: the file
parses, fetches nothing, carries every step's text, figures and question, and each folded answer is the one an
independent computation written here gives; the step links reopen each step; the command writes the file and
refuses a lesson that does not exist."""

from __future__ import annotations

import base64
import datetime as dt
import json
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from plotly.offline import get_plotlyjs

from tests.unit.test_cli_hostile import run_main
from tests.unit.test_lessons import GOOD_STEP, TEXT, Tiny, write
from vizcore.lessons.course import step_link
from vizcore.lessons.handout import build_handout
from vizcore.lessons.lesson import load_lesson

STEPS = '''
[[steps]]
title = "Weights & softmax"
claim = "Softmax turns the scores into weights that sum to 1."
task = "Find the key with the most weight."
view = { kind = "query_steps", layer = 2, head = 3, show = "weights", query = "it" }
[steps.question]
text = "Which key gets the most attention weight?"
answer = "largest"
series = "weights"

[[steps]]
title = "Every head"
claim = "Some heads look at the previous token."
task = "Find the brightest cell."
view = { kind = "head_grid", stat = "previous" }
[steps.question]
text = "Which head attends most to the previous token?"
answer = "largest"
series = "heads"

[[steps]]
title = "Later keys"
claim = "An encoder looks both ways."
task = "Look above the diagonal."
view = { kind = "attention_map", layer = 1, head = 4 }
[steps.question]
text = "Does any query give less than 0.5 of its attention to later keys?"
answer = "below"
number = "later"
limit = 0.5
yes = "yes, under 0.5"
no = "no, 0.5 or more"

[[steps]]
title = "A layer the model lacks"
claim = "This step asks for layer 9."
task = "Read the message."
view = { kind = "attention_map", layer = 9, head = 1 }
'''
PLOTLY_FIGURES = 2 + 2 + 1  # query_steps (weights), head_grid, attention_map
DAY = dt.date(2026, 1, 2)
BASE = "http://class.example:8501"


class Page(HTMLParser):
    """What a reader and a browser get from the file: tags with attributes, each section's text, scripts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.headings: list[str] = []
        self.sections: list[str] = []  # each step's text
        self.answers: list[str] = []  # each folded answer's text
        self.scripts: list[str] = []
        self.figcaptions: list[str] = []
        self._open: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag in ("h1", "h2", "h3"):
            self.headings.append(tag)
        if tag == "section":
            self.sections.append("")
        if tag in ("details", "script", "figcaption"):  # open until their end tag (the file nests none in another)
            answer = tag == "details" and "answer" in (attrs.get("class") or "")
            self._open.append("answer" if answer else tag)
            {"answer": self.answers, "script": self.scripts, "figcaption": self.figcaptions}.get(
                self._open[-1], []).append("")

    def handle_endtag(self, tag):
        if tag in ("details", "script", "figcaption"):
            self._open.pop()

    def handle_data(self, data):
        if "script" in self._open:
            self.scripts[-1] += data
            return
        if self.sections:
            self.sections[-1] += data
        if "answer" in self._open:
            self.answers[-1] += data
        if "figcaption" in self._open:
            self.figcaptions[-1] += data


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return Tiny({"bert": tiny_model_dir("bert")})  # the steps here need the encoder only


@pytest.fixture(scope="module")
def made(tiny, tmp_path_factory):
    lesson = load_lesson(write(tmp_path_factory.mktemp("lesson"), STEPS))
    result = build_handout(lesson, tiny, TEXT, base=BASE, model="my-model", today=DAY)
    page = Page()
    page.feed(result.html)
    page.close()
    return lesson, result, page


def test_the_handout_parses_with_a_language_and_headings_in_order(made):
    lesson, result, page = made
    assert page.tags[0] == ("html", {"lang": "en"})
    assert page.headings[0] == "h1" and page.headings.count("h1") == 1
    assert page.headings.count("h2") == len(lesson.steps)
    levels = [int(h[1]) for h in page.headings]
    assert all(b <= a + 1 for a, b in zip(levels, levels[1:]))  # no level skipped



def test_the_header_names_the_lesson_sentence_model_and_date(made, tiny):
    lesson, result, _ = made
    header = result.html.split("<section")[0]
    assert f"<h1>{lesson.title}</h1>" in header and "too tired." in header
    assert f"Model: <strong>{tiny.model().name}</strong> · computed on {DAY.isoformat()}" in header


def test_nothing_is_fetched_and_plotly_js_is_written_once(made):
    _, result, page = made
    for tag, attrs in page.tags:
        for name in ("src", "href"):
            if tag in ("script", "link", "img", "iframe") and attrs.get(name):
                assert attrs[name].startswith("data:"), (tag, attrs[name][:80])
    plotly_js = get_plotlyjs()
    assert sum(plotly_js in script for script in page.scripts) == 1
    assert result.html.count(plotly_js[:2000]) == 1


def test_every_step_has_its_title_claim_task_question_and_link(made):
    lesson, _, page = made
    assert len(page.sections) == len(lesson.steps)
    links = [attrs["href"] for tag, attrs in page.tags if tag == "a"]
    for number, (step, text) in enumerate(zip(lesson.steps, page.sections), 1):
        assert f"{number}. {step.title}" in text and step.claim in text and step.task in text
        if step.question is not None:
            assert step.question.text in text
        query = parse_qs(urlsplit(links[number - 1]).query)
        assert links[number - 1].startswith(f"{BASE}/lessons?")
        assert query == {"lesson": [lesson.id], "step": [str(number)], "text": [TEXT], "model": ["my-model"]}
        assert links[number - 1] == step_link(lesson.id, number, TEXT, BASE, "my-model")


def test_each_plotly_figure_is_a_div_with_a_text_alternative(made):
    _, result, page = made
    divs = [attrs for tag, attrs in page.tags if tag == "div" and "plotly-graph-div" in (attrs.get("class") or "")]
    assert len(divs) == result.figures == PLOTLY_FIGURES
    assert len(page.figcaptions) == PLOTLY_FIGURES  # each names its figure and says where its numbers are
    assert all(c.endswith("Its numbers are in the tables under “The numbers behind the figures”.")
               for c in page.figcaptions)
    assert page.figcaptions[0].startswith("Query 10: it against every key, layer 2, head 3")
    tables = [attrs for tag, attrs in page.tags if tag == "table"]
    assert len(tables) == 3 + 1 + 1  # each series a table: scores, weights, contributions; heads; row


def test_the_figures_axes_make_room_for_their_labels_whatever_the_template(tiny, tmp_path, monkeypatch):
    """Plain plotly.js keeps a figure's own small margins (the app's server draws with no template): each axis
    grows them to fit its tick labels, as Streamlit's theme does in the app. Without it the layer numbers of
    the heatmaps were cut off (seen in Chromium)."""
    import plotly.io as pio

    monkeypatch.setattr(pio.templates, "default", "none")
    result = build_handout(load_lesson(write(tmp_path, STEPS)), tiny, TEXT, base=BASE, model="m", today=DAY)
    assert result.html.count('"automargin":true') == 2 * PLOTLY_FIGURES


def test_an_altair_chart_is_an_svg_image_drawn_offline_and_no_plotly_js_is_written_without_plotly(tmp_path, tiny):
    """The lessons' altair chart (the tiny Transformer's accuracy curve), as the step kind draws it."""
    from vizcore.finetune.figures import tiny_accuracy_curve
    from vizcore.lessons.view import View

    history = [{"step": s, "token_accuracy": s / 40, "sequence_accuracy": s / 80} for s in (10, 20, 30)]
    chart = tiny_accuracy_curve(history, 30)
    lesson = load_lesson(write(tmp_path, GOOD_STEP * 4))
    first = lesson.steps[0]
    result = build_handout(lesson, tiny, TEXT, views=lambda step: View(figures=[chart] if step is first else []))
    page = Page()
    page.feed(result.html)
    images = [attrs for tag, attrs in page.tags if tag == "img"]
    assert len(images) == result.figures == 1 and not page.scripts
    svg = base64.b64decode(images[0]["src"].removeprefix("data:image/svg+xml;base64,")).decode("utf-8")
    assert svg.startswith("<svg") and "Held-out accuracy" in svg and "on 512 sequences" in svg
    assert 'width="' in svg and images[0]["alt"].startswith("Held-out accuracy.")


def test_a_step_whose_view_fails_says_why_and_the_rest_is_there(made):
    lesson, result, page = made
    assert result.problems == (f"step {len(lesson.steps)}: This step shows layer 9, head 1; the model on screen has "
                               "2 layers of 4 heads. Pick the default model in the sidebar.",)
    assert "could not be computed: This step shows layer 9" in page.sections[-1]


def test_each_folded_answer_is_the_one_computed_here_from_the_model(made, tiny):
    _, _, page = made
    own = tiny.run(TEXT)
    a = own.attention.astype(np.float64)  # [layer, head, query, key]
    q = own.tokens.index("it")
    k = int(np.argmax(a[1, 2, q]))
    previous = np.diagonal(a, offset=-1, axis1=-2, axis2=-1).mean(-1)  # [layer, head]
    layer, head = np.unravel_index(np.argmax(previous), previous.shape)
    later = np.triu(a[0, 3], k=1).sum(-1).max()
    expected = [f"{k}: {own.tokens[k]}", f"layer {layer + 1}, head {head + 1}",
                "yes, under 0.5" if later < 0.5 else "no, 0.5 or more"]
    assert len(page.answers) == len(expected)
    questions = [text for step, text in zip(made[0].steps, page.sections) if step.question is not None]
    for answer, right, text in zip(page.answers, expected, questions):
        assert answer.startswith(f"Answer{right}. The model's numbers: ")
        assert right in text.split("Answer")[0]  # among the choices, shown before the folded answer
    assert f"{a[1, 2, q, k]:.2f}" in page.answers[0] and f"{later:.2f}" in page.answers[2]


# ---- the command: python -m vizcore lessons handout ------------------------------------------------------------

def test_the_command_writes_the_handout_and_lists_what_it_could_not_compute(capsys, tmp_path, tiny_bert_dir):
    out = tmp_path / "attention.html"
    code, printed, err = run_main(capsys, "lessons", "handout", "--lesson", "attention", "--model",
                                  str(tiny_bert_dir), "--device", "cpu", "-o", str(out))
    record = json.loads(printed)
    assert code == 0 and not err and record["file"] == str(out) and record["bytes"] == out.stat().st_size
    page = Page()
    page.feed(out.read_text(encoding="utf-8"))
    assert record["steps"] == len(page.sections) == 5
    # lesson 1 shows layer 4 of the default model: the tiny one has 2, and the handout says so for those steps
    assert len(record["problems"]) == 4 and all("layer 4, head 2" in p for p in record["problems"])
    assert "Why divide by √d_k" in page.sections[4] and len(page.answers) == 1
    links = [attrs["href"] for tag, attrs in page.tags if tag == "a"]
    assert links[4].startswith("http://localhost:8501/lessons?lesson=attention&step=5&text=The%20animal")


def test_the_command_refuses_a_lesson_that_does_not_exist(capsys, tmp_path):
    out = tmp_path / "x.html"
    code, printed, err = run_main(capsys, "lessons", "handout", "--lesson", "atention", "-o", str(out))
    assert code == 2 and not printed and not out.exists()
    assert err.startswith("error: python -m vizcore lessons: No lesson 'atention'; the lessons are attention, heads")
