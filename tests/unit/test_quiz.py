"""The quizzes before and after each lesson (vizcore/lessons/quiz.py): every lesson has one, a broken one is refused
with the file's name and item, each item's answer is the answer function's on the view the phase asks about, and the
two phases ask the same concept on different items (the embedded model's quizzes: tests/integration)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.test_lessons import GOOD_STEP, Tiny, write
from vizcore.errors import VizError
from vizcore.lessons.answers import ANSWERS
from vizcore.lessons.kinds import KINDS
from vizcore.lessons.lesson import load_lesson, load_lessons
from vizcore.lessons.quiz import MAX_ITEMS, MIN_ITEMS, asked, item_question, score

QUESTION = '[steps.question]\ntext = "Which head?"\nanswer = "largest"\nseries = "heads"\n'
QUIZ = '''
[quiz]
pre = { sentence = "One two three." }
post = { sentence = "Four five six." }
'''
ITEM = '\n[[quiz.items]]\nstep = 1\n'
TWO = ITEM + ITEM + 'id = "second"\n'  # two good items


def lesson_text(quiz: str) -> str:
    return GOOD_STEP + QUESTION + GOOD_STEP * 3 + quiz


def test_every_lesson_has_a_quiz_of_items_that_name_a_step():
    for lesson in load_lessons():
        assert lesson.quiz is not None, lesson.id
        assert MIN_ITEMS <= len(lesson.quiz.items) <= MAX_ITEMS
        assert lesson.quiz.sentences["pre"] != lesson.quiz.sentences["post"]
        for item in lesson.quiz.items:
            assert 1 <= item.step <= len(lesson.steps)


@pytest.mark.parametrize(("quiz", "message"), [
    (QUIZ.replace('pre = { sentence = "One two three." }', ""), "the quiz needs 'pre = { sentence"),
    (QUIZ.replace("Four five six.", "One two three."), "the quiz's two sentences are the same"),
    (QUIZ + TWO, "a quiz has 3 to 8 items"),
    (QUIZ + TWO + "\n[[quiz.items]]\nstep = 9\n", "quiz item 3: an item needs 'step', a step number from 1 to 4"),
    (QUIZ + ITEM * 3, "quiz item 2: the id 'step1' is used twice"),
    (QUIZ + TWO + ITEM + 'id = "b"\npre = { layer = 2 }\n', "quiz item 3: 'pre' cannot set layer"),
    (QUIZ + TWO + ITEM.replace("1", "2"), "quiz item 3: step 2 has no question; give the item a 'question'"),
    (QUIZ + TWO + ITEM + 'id = "b"\npost = { series = "rows" }\n', "(post): the kind 'head_grid' has no series"),
    (QUIZ + TWO + ITEM + 'id = "b"\npost = { answer = "concept" }\n', "(post): the answer 'concept' needs"),
    (QUIZ + TWO + ITEM + 'id = "b"\nwhen = 3\n', "an item has no when"),
])
def test_a_broken_quiz_is_refused_with_the_files_name_and_the_item(tmp_path, quiz, message):
    with pytest.raises(VizError, match="^01-x.toml") as error:
        load_lesson(write(tmp_path, lesson_text(quiz)))
    assert message in str(error.value)


def test_a_phase_overrides_the_view_and_the_question_and_keeps_the_rest(tmp_path):
    quiz = (QUIZ + ITEM + 'pre = { stat = "sep" }\npost = { answer = "smallest", text = "Which head least?" }\n'
            + ITEM.replace("1", "1\nid = \"again\"") + ITEM.replace("1", "1\nid = \"third\"\nfigures = false"))
    lesson = load_lesson(write(tmp_path, lesson_text(quiz)))
    sentence, kind, params, question = item_question(lesson, lesson.quiz.items[0], "pre")
    assert (sentence, kind, params["stat"], question.answer, question.text) == (
        "One two three.", "head_grid", "sep", "largest", "Which head?")
    sentence, kind, params, question = item_question(lesson, lesson.quiz.items[0], "post")
    assert (sentence, params["stat"], question.answer, question.text) == (
        "Four five six.", "previous", "smallest", "Which head least?")
    assert [item.id for item in lesson.quiz.items] == ["step1", "again", "third"]
    assert not lesson.quiz.items[2].figures


@pytest.fixture(scope="module")
def tiny(tiny_model_dir, tiny_mlm_dir):
    return Tiny({"bert": tiny_model_dir("bert"), "mlm": tiny_mlm_dir("bert"), "gpt2": tiny_model_dir("gpt2")})


def test_each_asked_answer_is_the_answer_function_on_the_phases_own_view(tmp_path, tiny):
    quiz = QUIZ + ITEM + 'post = { stat = "entropy" }\n' + ITEM.replace("1", '1\nid = "b"\nfigures = false') + \
        ITEM.replace("1", '1\nid = "c"\npost = { answer = "smallest" }')
    lesson = load_lesson(write(tmp_path, lesson_text(quiz)))
    built = []

    def build(text, kind, params):
        built.append((text, kind, dict(params)))
        return KINDS[kind].build(tiny, text, params)

    pre, post = asked(lesson, "pre", build), asked(lesson, "post", build)
    assert [b[0] for b in built] == ["One two three."] * 3 + ["Four five six."] * 3
    for one in pre + post:
        view = KINDS[one.kind].build(tiny, one.sentence, one.params)
        values = np.asarray(view.series["heads"].values)
        largest = view.series["heads"].labels[int(np.argmax(values))]
        smallest = view.series["heads"].labels[int(np.argmin(values))]
        assert one.answer.right == (smallest if (one.id, one in post) == ("c", True) else largest)
    assert pre[1].figures == () and pre[0].figures == (pre[0].view.figures[0],)
    assert post[0].params["stat"] == "entropy" and pre[0].params["stat"] == "previous"


def test_score_counts_the_right_choices_and_lists_the_missed_ones(tmp_path, tiny):
    lesson = load_lesson(write(tmp_path, lesson_text(QUIZ + ITEM + ITEM.replace("1", '1\nid = "b"')
                                                     + ITEM.replace("1", '1\nid = "c"'))))
    items = asked(lesson, "pre", lambda text, kind, params: KINDS[kind].build(tiny, text, params))
    right = items[0].answer.right
    wrong = next(c for c in items[1].answer.choices if c != items[1].answer.right)
    count, missed = score(items, {"step1": right, "b": wrong})
    assert count == 1 and [m.id for m in missed] == ["b", "c"]


def test_a_quiz_is_asked_only_before_or_after():
    lesson = load_lessons()[0]
    with pytest.raises(VizError, match="'pre' .* or 'post'"):
        asked(lesson, "during", lambda *a: None)


def test_every_quiz_question_uses_a_known_answer_function():
    for lesson in load_lessons():
        for item in lesson.quiz.items:
            for phase in ("pre", "post"):
                assert item_question(lesson, item, phase)[3].answer in ANSWERS
