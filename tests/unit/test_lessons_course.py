"""A presenter's keys as moves through the course (vizcore/lessons/course.py): checked against the course written
out here as one flat list of (lesson, step) positions, the order a clicker walks, and on the real lesson files."""

from __future__ import annotations

import pytest

from vizcore.lessons.course import move, speaker_notes
from vizcore.lessons.lesson import load_lessons

COURSE = {"a": 3, "b": 1, "c": 2}


def walk(course: dict[str, int]) -> list[tuple[str, int]]:
    """Every step of every lesson in order: what → pressed again and again shows."""
    return [(lesson, step) for lesson, total in course.items() for step in range(1, total + 1)]


def test_next_and_previous_walk_the_whole_course_across_lessons():
    order = walk(COURSE)
    for i, (lesson, step) in enumerate(order):
        assert move(COURSE, lesson, step, "next") == order[min(i + 1, len(order) - 1)]
        assert move(COURSE, lesson, step, "previous") == order[max(i - 1, 0)]


def test_next_from_a_lessons_last_step_opens_the_next_lessons_first():
    assert move(COURSE, "a", 3, "next") == ("b", 1)
    assert move(COURSE, "b", 1, "next") == ("c", 1)
    assert move(COURSE, "b", 1, "previous") == ("a", 3)
    assert move(COURSE, "c", 1, "previous") == ("b", 1)


def test_the_course_ends_stay_put():
    assert move(COURSE, "a", 1, "previous") == ("a", 1)
    assert move(COURSE, "c", 2, "next") == ("c", 2)


def test_home_and_end_stay_in_the_lesson():
    for lesson, total in COURSE.items():
        for step in range(1, total + 1):
            assert move(COURSE, lesson, step, "first") == (lesson, 1)
            assert move(COURSE, lesson, step, "last") == (lesson, total)


def test_a_clicker_walks_every_step_of_the_real_course():
    course = {lesson.id: len(lesson.steps) for lesson in load_lessons()}
    position, seen = (next(iter(course)), 1), []
    for _ in range(sum(course.values()) + 2):  # two presses more than steps: the last step stays
        seen.append(position)
        position = move(course, *position, "next")
    assert seen[:-2] == walk(course) and seen[-2:] == [walk(course)[-1]] * 2


@pytest.mark.parametrize(("lesson", "step", "action", "message"), [
    ("z", 1, "next", "unknown lesson 'z'"), ("a", 4, "next", "steps 1 to 3, not 4"),
    ("a", 1, "jump", "unknown action 'jump'")])
def test_a_bad_move_is_refused_with_what_is_wrong(lesson, step, action, message):
    with pytest.raises(ValueError, match=message):
        move(COURSE, lesson, step, action)


def test_speaker_notes_are_the_files_notes_or_else_the_claim_then_the_task_and_the_answer():
    from vizcore.lessons.answers import Answer

    lesson = load_lessons()[0]
    with_notes, without = lesson.steps[0], lesson.steps[2]
    assert with_notes.notes and without.notes == ""
    answer = Answer(choices=["a", "b"], right="b", reason="b gets 0.70")
    notes = speaker_notes(without, answer)
    question = f"Question: {without.question.text} Answer: b (b gets 0.70)."
    assert notes == [without.claim, f"Task: {without.task}", question]
    assert speaker_notes(with_notes, None) == [with_notes.notes, f"Task: {with_notes.task}"]
