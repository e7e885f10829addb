"""The teacher's class report and a student's own results (issue 50 C), computed from the stored answers. No streamlit.

For each quiz question: the share of the class right before and after the lesson, the normalised gain
``g = (after - before) / (1 - before)`` (Hake 1998: the share of the possible gain that was made; undefined when
everyone was right before), the most common wrong answer (after the lesson when there are answers after it, else
before) and what it suggests (the quiz item's own words for that choice, else what that kind of question's wrong
answer usually means). For each lesson: every student's score before and after (a student's unanswered question
counts as missed), the class's mean shares and their normalised gain. The lesson steps' questions answered in class
(phase ``step``) get the share right and the most common wrong answer.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

from vizcore.lessons.course import step_link
from vizcore.lessons.lesson import Lesson
from vizcore.lessons.quiz import item_question
from vizcore.results.store import Row

# What a wrong answer to each kind of question usually means, when the quiz item does not say it for that choice.
GENERIC = {
    "largest": "read the largest value from another row or column, or the colour scale the wrong way round",
    "smallest": "read the smallest value from another row or column, or the colour scale the wrong way round",
    "below": "expected the opposite of what the model's numbers show",
    "closest": "took another quantity for this one",
    "concept": "holds the idea in this wrong answer",
}


@dataclass(frozen=True)
class QuestionReport:
    lesson: str
    question: str  # the quiz item's id
    step: int  # the step that teaches it
    text: str  # as asked after the lesson (the words before may differ)
    before: tuple[int, int]  # (right, answered)
    after: tuple[int, int]
    wrong: str | None  # the most common wrong answer
    wrong_count: int
    wrong_phase: str | None  # "pre" or "post"
    suggests: str
    link: str  # the step that teaches it

    @property
    def share_before(self) -> float | None:
        return self.before[0] / self.before[1] if self.before[1] else None

    @property
    def share_after(self) -> float | None:
        return self.after[0] / self.after[1] if self.after[1] else None

    @property
    def gain(self) -> float | None:
        return normalised_gain(self.share_before, self.share_after)


@dataclass(frozen=True)
class StepReport:
    lesson: str
    step: int
    text: str
    right: int
    answered: int
    wrong: str | None
    wrong_count: int


@dataclass(frozen=True)
class LessonReport:
    lesson: str
    title: str
    items: int
    scores_before: tuple[int, ...]  # one per student who took the quiz before, in [0, items]
    scores_after: tuple[int, ...]
    questions: tuple[QuestionReport, ...]

    @property
    def mean_before(self) -> float | None:
        return sum(self.scores_before) / (len(self.scores_before) * self.items) if self.scores_before else None

    @property
    def mean_after(self) -> float | None:
        return sum(self.scores_after) / (len(self.scores_after) * self.items) if self.scores_after else None

    @property
    def gain(self) -> float | None:
        return normalised_gain(self.mean_before, self.mean_after)


@dataclass(frozen=True)
class ClassReport:
    code: str
    students: int
    answers: int
    nicknames: Mapping[str, str]  # student -> nickname, only for students who typed one
    lessons: tuple[LessonReport, ...]
    steps: tuple[StepReport, ...]


def normalised_gain(before: float | None, after: float | None) -> float | None:
    """``(after - before) / (1 - before)``; None when either is missing or everyone was right before."""
    if before is None or after is None or before >= 1.0:
        return None
    return (after - before) / (1.0 - before)


def _most_common_wrong(rows: Sequence[Row]) -> tuple[str | None, int]:
    wrong = Counter(row.answer for row in rows if not row.correct)
    if not wrong:
        return None, 0
    answer, count = min(wrong.items(), key=lambda pair: (-pair[1], pair[0]))  # ties: the first in text order
    return answer, count


def suggestion(lesson: Lesson, item_id: str, phase: str, wrong: str | None) -> str:
    """What the wrong answer ``wrong`` to item ``item_id`` as ``phase`` asked it suggests."""
    if wrong is None:
        return ""
    item = next((each for each in lesson.quiz.items if each.id == item_id), None)
    if item is None:
        return ""
    if wrong in item.suggests:
        return item.suggests[wrong]
    return GENERIC[item_question(lesson, item, phase)[3].answer]


def _question(lesson: Lesson, item, rows: Sequence[Row]) -> QuestionReport:
    mine = [row for row in rows if row.question == item.id]
    by_phase = {phase: [row for row in mine if row.phase == phase] for phase in ("pre", "post")}
    counted = {phase: (sum(row.correct for row in found), len(found)) for phase, found in by_phase.items()}
    phase = "post" if by_phase["post"] else "pre"
    wrong, count = _most_common_wrong(by_phase[phase])
    return QuestionReport(
        lesson=lesson.id, question=item.id, step=item.step, text=item_question(lesson, item, "post")[3].text,
        before=counted["pre"], after=counted["post"], wrong=wrong, wrong_count=count,
        wrong_phase=phase if wrong is not None else None, suggests=suggestion(lesson, item.id, phase, wrong),
        link=step_link(lesson.id, item.step, lesson.sentence))


def _scores(lesson: Lesson, rows: Sequence[Row], phase: str) -> tuple[int, ...]:
    ids = {item.id for item in lesson.quiz.items}
    right: Counter[str] = Counter()
    took = set()
    for row in rows:
        if row.phase == phase and row.question in ids:
            took.add(row.student)
            right[row.student] += int(row.correct)
    return tuple(sorted(right[student] for student in took))


def lesson_report(lesson: Lesson, rows: Sequence[Row]) -> LessonReport:
    rows = [row for row in rows if row.lesson == lesson.id]
    return LessonReport(lesson=lesson.id, title=lesson.title, items=len(lesson.quiz.items),
                        scores_before=_scores(lesson, rows, "pre"), scores_after=_scores(lesson, rows, "post"),
                        questions=tuple(_question(lesson, item, rows) for item in lesson.quiz.items))


def _steps(lessons: Mapping[str, Lesson], rows: Sequence[Row]) -> tuple[StepReport, ...]:
    grouped: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if row.phase == "step":
            grouped.setdefault((row.lesson, row.question), []).append(row)
    order = {lesson_id: i for i, lesson_id in enumerate(lessons)}
    out = []
    for (lesson_id, question), found in grouped.items():
        wrong, count = _most_common_wrong(found)
        step = int(question.removeprefix("step")) if question.removeprefix("step").isdigit() else 0
        out.append(StepReport(lesson_id, step, found[-1].question_text, sum(r.correct for r in found), len(found),
                              wrong, count))
    return tuple(sorted(out, key=lambda s: (order.get(s.lesson, len(order)), s.step)))


def class_report(code: str, lessons: Mapping[str, Lesson], rows: Sequence[Row]) -> ClassReport:
    """The report of the class ``code`` from its stored ``rows``: the lessons with quiz answers, in course order."""
    taken = {row.lesson for row in rows if row.phase in ("pre", "post")}
    nicknames = {}
    for row in rows:
        if row.nickname:
            nicknames[row.student] = row.nickname
    return ClassReport(code=code, students=len({row.student for row in rows}), answers=len(rows), nicknames=nicknames,
                       lessons=tuple(lesson_report(lesson, rows) for lesson_id, lesson in lessons.items()
                                     if lesson_id in taken and lesson.quiz is not None),
                       steps=_steps(lessons, rows))


@dataclass(frozen=True)
class Missed:
    question: str
    text: str
    answer: str
    right: str
    step: int
    link: str


@dataclass(frozen=True)
class OwnResult:
    """A student's result in one quiz: their score and the questions they missed, each with the step teaching it."""

    lesson: str
    phase: str
    right: int
    items: int
    missed: tuple[Missed, ...]


def own_result(lesson: Lesson, phase: str, rows: Sequence[Row]) -> OwnResult:
    """From one student's stored ``rows`` (any lessons, any phases): their result in ``lesson``'s ``phase`` quiz."""
    mine = {row.question: row for row in rows if row.lesson == lesson.id and row.phase == phase}
    missed = []
    for item in lesson.quiz.items:
        row = mine.get(item.id)
        if row is None or not row.correct:
            text = row.question_text if row else item_question(lesson, item, phase)[3].text
            missed.append(Missed(item.id, text, row.answer if row else "", row.right_answer if row else "", item.step,
                                 step_link(lesson.id, item.step, lesson.sentence)))
    return OwnResult(lesson.id, phase, len(lesson.quiz.items) - len(missed), len(lesson.quiz.items), tuple(missed))
