"""What did the class learn (issue 50), in real browsers: one teacher (1024 x 768) and five students (two on 390 px
phones), each in a browser context of their own, take the quiz before the lesson, a step of it (two students answer
its question), and the quiz after it; the teacher ends the class; the server is killed with SIGKILL and started again
on the same results file; the teacher opens the report from a new browser with the class code and its key, and every
answer is counted there and in the CSV (pandas, one row per answer). The student's result and the report are
screenshotted at 1024 x 768 and on the phone, and axe finds nothing on them."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pandas as pd

from tests.e2e.conftest import (
    LAPTOP,
    ROOT,
    assert_accessible,
    chart_label_problems,
    screenshot,
    streamlit_server,
    wait_until_idle,
)
from tests.e2e.test_presenter_browser import at
from tests.support.class_follow import answer, choices, keep_console, wait_all
from vizcore.lessons.lesson import load_lessons

PHONE = {"width": 390, "height": 844}
LESSON = next(lesson for lesson in load_lessons() if lesson.id == "attention")
ITEMS = len(LESSON.quiz.items)
TIMEOUT_MS = 180_000


def take_quiz(page, phase: str, pick: int, nickname: str = "") -> int:
    """Answer every question of the open quiz with its ``pick``-th choice (wrapping), submit, wait for "saved";
    the score the page says."""
    page.wait_for_selector(f".lesson-quiz[data-phase={phase}]", state="attached", timeout=TIMEOUT_MS)
    radios = page.locator("[data-testid=stForm] [data-testid=stRadio]")
    assert radios.count() == ITEMS
    for i in range(ITEMS):
        options = radios.nth(i).locator("[role=radiogroup] label")
        options.nth((pick + i) % options.count()).click()
    if nickname:
        page.get_by_label("Nickname").fill(nickname)
    page.get_by_role("button", name="Submit my answers").click()
    saved = page.wait_for_selector(".quiz-saved", state="attached", timeout=TIMEOUT_MS)
    return int(saved.get_attribute("data-right"))


def report_key(teacher) -> str:
    """The teacher's session shows the class's report key on the Class results page (reached from the sidebar)."""
    teacher.get_by_role("link", name="Class report").click()
    shown = teacher.wait_for_selector("text=Report key of this class", timeout=TIMEOUT_MS).inner_text()
    key = re.search(r"([2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4})", shown).group(1)
    teacher.get_by_role("link", name="Lessons").click()
    teacher.wait_for_selector("[data-room]", timeout=TIMEOUT_MS)
    return key


def open_report(page, url: str, code: str, key: str) -> str:
    page.goto(f"{url}/results", timeout=TIMEOUT_MS)
    page.get_by_label("Class code").fill(code)
    page.get_by_label("Report key (shown to the teacher when the class opened)").fill(key)
    page.get_by_role("button", name="Open the report").click()
    page.wait_for_selector("text=what the class learned", timeout=TIMEOUT_MS)
    wait_until_idle(page)
    return page.locator("[data-testid=stMain]").inner_text()


def test_a_class_takes_both_quizzes_and_the_report_counts_every_answer_after_a_restart(browser, tmp_path,
                                                                                         monkeypatch):
    results = tmp_path / "results.sqlite3"
    monkeypatch.setenv("VIZCORE_RESULTS", str(results))
    sizes = [LAPTOP, LAPTOP, LAPTOP, PHONE, PHONE]
    contexts = [browser.new_context(viewport=LAPTOP)] + [browser.new_context(viewport=size) for size in sizes]
    try:
        with streamlit_server(["ui.launch"], "class-quiz.log", kill=True) as url:  # then SIGKILL: no shutdown runs
            teacher = keep_console(contexts[0].new_page())
            teacher.goto(f"{url}/lessons?teach=1&lesson=attention&step=1", timeout=TIMEOUT_MS)
            code = teacher.wait_for_selector("[data-room]", timeout=TIMEOUT_MS).get_attribute("data-room")
            key = report_key(teacher)
            students = [keep_console(context.new_page()) for context in contexts[1:]]
            for page in students:
                page.goto(f"{url}/lessons?room={code}", timeout=TIMEOUT_MS)
            wait_all(students, ("attention", 1), time.perf_counter(), 180)

            teacher.get_by_role("button", name="Open the quiz before the lesson").click()
            before = [take_quiz(page, "pre", k, nickname="Ada" if k == 0 else "") for k, page in enumerate(students)]
            teacher.wait_for_selector(f"[data-answered='{len(students)}']", state="attached", timeout=TIMEOUT_MS)
            teacher.get_by_role("button", name="Close the quiz").click()
            wait_all(students, ("attention", 1), time.perf_counter(), 120)

            for page in students[:2]:
                wait_until_idle(page)  # a click during the follow run's last drawing is lost with the old radio
            shown = choices(students[0])
            answer(students[:2], [shown[0], shown[-1]], timeout_s=60)  # the step's question, in class

            teacher.get_by_role("button", name="Open the quiz after the lesson").click()
            after = [take_quiz(page, "post", 0) for page in students]
            phone = students[3]
            wait_until_idle(phone)
            screenshot(phone, "quiz-student-result-phone")
            assert_accessible(phone, "the student's result on a phone")
            wait_until_idle(students[0])
            screenshot(students[0], "quiz-student-result")
            assert_accessible(students[0], "the student's result")
            teacher.get_by_role("button", name="Close the quiz").click()
            at(teacher)
            teacher.get_by_role("button", name="End the class").first.click()
            teacher.wait_for_selector(f"text=The class {code} has ended", timeout=TIMEOUT_MS)
            assert all(p.locator('[data-testid="stException"]').count() == 0 for p in [teacher, *students])

        answers = 2 * len(students) * ITEMS + 2
        with streamlit_server(["ui.launch"], "class-quiz-restarted.log") as url:  # the same results file
            for context, name in ((contexts[0], "quiz-report"), (contexts[4], "quiz-report-phone")):
                page = context.new_page()
                text = open_report(page, url, code, key)
                assert f"{len(students)} students · {answers} answers" in text
                assert "nicknames: Ada" in text
                total = len(students) * ITEMS
                assert f"Right before the lesson: {sum(before) / total:.0%} · after: {sum(after) / total:.0%}" in text
                screenshot(page, name)
                assert_accessible(page, name)
                assert chart_label_problems(page) == [], name

        exported = subprocess.run([sys.executable, "-m", "vizcore", "results", "export", "--format", "csv", "--class",
                                   code], cwd=ROOT, capture_output=True, text=True, check=True,
                                  env={**os.environ, "VIZCORE_RESULTS": str(results)})
        table = pd.read_csv(io.StringIO(exported.stdout))
        assert len(table) == answers and table["class"].eq(code).all()
        assert table.groupby("phase").size().to_dict() == {"post": len(students) * ITEMS,
                                                          "pre": len(students) * ITEMS, "step": 2}
        assert table["student"].nunique() == len(students)
    finally:
        for context in contexts:
            context.close()
