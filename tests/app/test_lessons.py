"""The Lessons page in AppTest: every step of every lesson opens and carries its markers, a link opens lesson X at
step N, a bad link is reported, the buttons move, and a question answered right and wrong says so with the
model's number (the right answer computed here from the run's attention, independently of vizcore.lessons)."""

from __future__ import annotations

import re

import numpy as np

from vizcore.lessons.lesson import load_lessons

PAGE = "pages/lessons.py"
LESSONS = load_lessons()


def marker(at) -> tuple[str, int]:
    """The step's element's data-lesson and data-step, as the page drew them."""
    bodies = [h.proto.body for h in at.get("html") if "data-lesson" in h.proto.body]
    assert len(bodies) == 1, bodies
    found = re.search(r'data-lesson="([^"]+)" data-step="(\d+)"', bodies[0])
    return found.group(1), int(found.group(2))


def shown(markdown: str) -> str:
    """Markdown as read on screen: the page escapes the model's words (ui.feedback.plain)."""
    return markdown.replace("\\", "")


def param(at, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_every_step_of_every_lesson_opens_with_its_markers(new_app):
    at = new_app(PAGE).run()
    assert not at.exception
    for lesson in LESSONS:
        for number in range(1, len(lesson.steps) + 1):
            at.session_state["lessons.lesson"] = lesson.id
            at.session_state["lessons.step"] = number
            at.session_state["lessons.text"] = lesson.sentence
            at.run()
            where = f"{lesson.id} step {number}"
            assert not at.exception, where
            assert not at.error, (where, [e.value for e in at.error])
            assert marker(at) == (lesson.id, number), where
            assert (param(at, "lesson"), param(at, "step")) == (lesson.id, str(number))
            assert at.get("plotly_chart") or at.get("arrow_data_frame"), where
            if lesson.steps[number - 1].question is not None:
                assert at.radio(key=f"lessons.choice.{lesson.id}.{number}").options, where


def test_the_learners_own_sentence_is_used_by_every_step_or_a_step_says_what_it_needs(new_app):
    """A sentence with no [MASK] and no date: the masked-LM, translator and padding steps say what they need (one
    message, no traceback); every other step draws its view for the learner's sentence."""
    at = new_app(PAGE, text="Birds sing.").run()
    messages = set()
    for lesson in LESSONS:
        for number in range(1, len(lesson.steps) + 1):
            at.session_state["lessons.lesson"] = lesson.id
            at.session_state["lessons.step"] = number
            at.run()
            assert not at.exception and marker(at) == (lesson.id, number)
            assert param(at, "text") == "Birds sing."
            messages.update(e.value for e in at.error)
            if not at.error:
                assert at.get("plotly_chart") or at.get("arrow_data_frame")
    assert messages == {"The text has no mask: type [MASK] where a word should be predicted.",
                        "This sentence gives no alignment view: type a date in words, like the lesson's.",
                        "Both sentences have the same number of tokens, so nothing is padded: make one of them longer."}


def test_a_link_opens_lesson_x_at_step_n_on_its_sentence_and_the_buttons_move(new_app):
    at = new_app(PAGE, lesson="positions", step="3", text="A cat on a mat.").run()
    assert not at.exception and not at.warning
    assert marker(at) == ("positions", 3)
    assert at.text_input(key="lessons.text").value == "A cat on a mat."
    at.button(key="lessons.next").click().run()
    assert marker(at) == ("positions", 4) and param(at, "step") == "4"
    assert at.button(key="lessons.next").disabled  # the lesson's last step
    at.button(key="lessons.previous").click().run()
    assert marker(at) == ("positions", 3)
    assert param(at, "text") == "A cat on a mat."
    at.selectbox(key="lessons.picker.positions").set_value("masks").run()  # another lesson: its first step, sentence
    masks = next(lesson for lesson in LESSONS if lesson.id == "masks")
    assert marker(at) == ("masks", 1) and at.text_input(key="lessons.text").value == masks.sentence
    # the picker drawn now is the new lesson's: a browser's stale value for the one before runs no callback
    assert [box.key for box in at.selectbox if box.key.startswith("lessons.picker")] == ["lessons.picker.masks"]


def test_a_bad_link_is_reported_and_the_page_opens_on_the_first_lesson_and_step(new_app):
    at = new_app(PAGE, lesson="nonsense", step="2").run()
    assert not at.exception
    assert any("lesson='nonsense' was not used: here it is one of attention, heads," in w.value for w in at.warning)
    assert marker(at) == (LESSONS[0].id, 2)
    at = new_app(PAGE, lesson="heads", step="99").run()
    assert any("step='99' was not used" in w.value and "1 to 4" in w.value for w in at.warning)
    assert marker(at) == ("heads", 1) and param(at, "step") is None  # left out of the link until it changes
    at = new_app(PAGE, lesson="heads", step="two").run()
    assert any("step='two' was not used" in w.value for w in at.warning)
    assert marker(at) == ("heads", 1)


def test_a_question_answered_right_and_wrong(new_app):
    """Lesson 1, step 3: which key gets the most of 'it''s attention in layer 4, head 2."""
    from ui.state import get_run
    from vizcore.model.catalog import DEFAULT_MODEL

    lesson = LESSONS[0]
    step = lesson.steps[2]
    layer, head = step.params["layer"] - 1, step.params["head"] - 1
    run = get_run(DEFAULT_MODEL, "auto", lesson.sentence, None)
    query = run.tokens.index(step.params["query"])
    row = run.attention[layer, head, query]
    right = f"{int(np.argmax(row))}: {run.tokens[int(np.argmax(row))]}"

    at = new_app(PAGE, lesson=lesson.id, step="3").run()
    choice = at.radio(key=f"lessons.choice.{lesson.id}.3")
    assert right in choice.options
    choice.set_value(right).run()
    at.button(key="lessons.check").click().run()
    assert len(at.success) == 1 and f"{row.max():.2f}" in shown(at.success[0].value)
    wrong = next(option for option in choice.options if option != right)
    at.radio(key=f"lessons.choice.{lesson.id}.3").set_value(wrong).run()
    at.button(key="lessons.check").click().run()
    assert not at.success and len(at.error) == 1
    assert "Not quite" in at.error[0].value and f"{row.max():.2f}" in shown(at.error[0].value)


def test_the_learners_query_token_is_kept_from_step_to_step_and_decides_the_answer(new_app):
    from ui.state import get_run
    from vizcore.model.catalog import DEFAULT_MODEL

    lesson = LESSONS[0]
    run = get_run(DEFAULT_MODEL, "auto", lesson.sentence, None)
    street = run.tokens.index("street")
    at = new_app(PAGE, lesson=lesson.id, step="2").run()
    at.selectbox(key="lessons.query").set_value(street).run()
    at.button(key="lessons.next").click().run()
    assert marker(at) == (lesson.id, 3) and at.selectbox(key="lessons.query").value == street
    step = lesson.steps[2]
    row = run.attention[step.params["layer"] - 1, step.params["head"] - 1, street]
    right = f"{int(np.argmax(row))}: {run.tokens[int(np.argmax(row))]}"
    at.radio(key=f"lessons.choice.{lesson.id}.3").set_value(right).run()
    at.button(key="lessons.check").click().run()
    assert len(at.success) == 1 and f"‘{street}: street’" in shown(at.success[0].value)


def test_each_step_shows_its_link_and_the_lesson_downloads_as_a_handout(new_app):
    """The link under the step reopens it (the same parameters the address bar gets); the download button is there,
    and the handout it makes holds every step, built from the page's cached views."""
    from concurrent.futures import ThreadPoolExecutor
    from html.parser import HTMLParser

    from ui.lessons.share import LABEL, make_handout
    from vizcore.lessons.course import step_link
    from vizcore.model.catalog import DEFAULT_MODEL

    at = new_app(PAGE, lesson="heads", step="3", text="A cat on a mat.").run()
    assert not at.exception
    assert [c.value for c in at.code] == [step_link("heads", 3, "A cat on a mat.")]
    assert {name: param(at, name) for name in ("lesson", "step", "text")} == {
        "lesson": "heads", "step": "3", "text": "A cat on a mat."}
    buttons = at.get("download_button")
    assert [b.proto.label for b in buttons] == [LABEL] and buttons[0].proto.deferred_file_id
    # a click: the server calls the button's callable (make_handout) in a thread of its own, outside the page's run
    # (AppTest's runtime is gone once the run ends, so the callable is called here as the server would)
    lesson = next(lesson for lesson in LESSONS if lesson.id == "heads")
    with ThreadPoolExecutor(1) as pool:
        made = pool.submit(make_handout, lesson, DEFAULT_MODEL, "auto", "A cat on a mat.", "").result().decode()
    HTMLParser().feed(made)
    assert all(f"{i}. {step.title}" in made for i, step in enumerate(lesson.steps, 1)) and "A cat on a mat." in made
    assert 'class="problem"' not in made
    assert made.count('class="plotly-graph-div"') >= len(lesson.steps)
    at.session_state["shared.present"] = True  # presenter mode: the step alone, no link or button under it
    at.run()
    assert not at.exception and not at.get("download_button") and not at.code
