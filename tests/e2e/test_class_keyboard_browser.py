"""A class by keyboard only (issue 34 C with issue 30 B's rule): Tab, Shift+Tab, Enter, Space and typing, never the
mouse, at 1024 x 768. A teacher opens the class box and starts a class; a student, in a browser of their own, types
a code misread off the screen (Enter sends it: the page says why it is not a code), then the right one (lower
case, with a space, as a student copies it off a projector) and joins, moves on by themselves, and
comes back with *Follow the teacher again* to the step the teacher has moved to in the meantime (each of the teacher's
moves pushed to the student's page, which runs once per move and never at rest) and follows the next move; the teacher
ends the class and the student's page says so. Every control is reached by Tab or Shift+Tab and shows its focus
(``tab_to``: a ring of pixels changing by 3:1, measured on screenshots)."""

from __future__ import annotations

from tests.e2e.conftest import LAPTOP, count_finished_runs, screenshot, wait_until_idle
from tests.e2e.test_keyboard_browser import FOCUSED_NAME, open_page, tab_to
from tests.e2e.test_presenter_browser import at, press
from tests.support.class_follow import wait_all, wait_listening

FOLLOW_TIMEOUT_S = 60  # following at all; how fast is bench/class_replicas.py's
RUN_ENDS_MS = 30_000  # a run that has drawn its first element finishes
BOX = "A class: join your teacher's"  # the expander's summary
START = "Start a class"
END = "End the class"
JOIN = "Join the class"
CODE_BOX = "Class code"
NEXT = "Next →"
REJOIN = "Follow the teacher again"


def test_a_class_by_keyboard_start_join_wander_follow_again_and_end(browser, app_url):
    teacher_context, student_context = browser.new_context(viewport=LAPTOP), browser.new_context(viewport=LAPTOP)
    try:
        teacher = teacher_context.new_page()
        open_page(teacher, app_url, "lessons?lesson=attention&step=1")
        tab_to(teacher, BOX)
        teacher.keyboard.press("Enter")  # opens the expander
        tab_to(teacher, START)
        teacher.keyboard.press("Enter")
        code = teacher.wait_for_selector("[data-room]", timeout=60_000).get_attribute("data-room")
        assert at(teacher) == ("attention", 1)

        student = count_finished_runs(student_context.new_page())
        open_page(student, app_url, "lessons")
        tab_to(student, BOX)
        student.keyboard.press("Space")
        tab_to(student, CODE_BOX)
        student.keyboard.type("0O1I00")  # a code misread off the screen, sent with Enter: said, and typed again
        student.keyboard.press("Enter")
        student.get_by_text("'0O1I00' is not a class code").wait_for(timeout=60_000)
        assert student.evaluate(FOCUSED_NAME).startswith(CODE_BOX), "the focus left the code box"
        student.keyboard.press("Control+A")
        student.keyboard.type(f"{code[:3].lower()} {code[3:].lower()}")
        tab_to(student, JOIN)
        student.keyboard.press("Space")
        student.get_by_text(f"Following your teacher · class {code}").wait_for(timeout=60_000)
        wait_all([student], ("attention", 1), 0, FOLLOW_TIMEOUT_S)
        screenshot(student, "class-keyboard-student-joined")
        # The page listens on one stream of the class channel and runs nothing while the class is at rest.
        wait_listening(student)

        tab_to(student, NEXT)  # on their own: two steps ahead of the teacher
        student.keyboard.press("Enter")
        student.get_by_text("You are on your own").wait_for(timeout=60_000)
        wait_all([student], ("attention", 2), 0, FOLLOW_TIMEOUT_S)
        assert student.evaluate(FOCUSED_NAME) == NEXT, "the focus left Next when the step changed"
        student.keyboard.press("Enter")
        wait_all([student], ("attention", 3), 0, FOLLOW_TIMEOUT_S)
        wait_until_idle(student, quiet_ms=300)
        runs = student.finished_runs

        tab_to(teacher, NEXT)  # the teacher moves meanwhile: the student stays where they are, told where it is
        press(teacher, "Enter", ("attention", 2))
        assert teacher.evaluate(FOCUSED_NAME) == NEXT, "the focus left Next when the step changed"
        student.get_by_text("Your teacher is at").filter(has_text="step 2").wait_for(timeout=FOLLOW_TIMEOUT_S * 1000)
        assert student.locator(".lesson-step").get_attribute("data-step") == "3"
        wait_until_idle(student, quiet_ms=300)
        assert student.finished_runs - runs == 1, "one run of the student's page for the teacher's move, none at rest"
        screenshot(student, "class-keyboard-student-on-own")

        tab_to(student, REJOIN, key="Shift+Tab")  # back up the page from Next
        student.keyboard.press("Space")
        wait_all([student], ("attention", 2), 0, FOLLOW_TIMEOUT_S)
        student.get_by_text(f"Following your teacher · class {code}").wait_for(timeout=30_000)
        press(teacher, "Enter", ("attention", 3))  # following again: the next move is pushed to the student
        wait_all([student], ("attention", 3), 0, FOLLOW_TIMEOUT_S)

        tab_to(teacher, END, key="Shift+Tab")  # up from Next to the class's panel
        screenshot(teacher, "class-keyboard-teacher")
        teacher.keyboard.press("Enter")
        teacher.get_by_text(f"The class {code} has ended").wait_for(timeout=60_000)
        # The message is drawn first in its run; the run's stale elements stay until it finishes (a clean clone
        # counted the student's old line between the two): what must happen is that they go.
        # every element with the code gone (the badge and the sidebar's large code): a locator's wait_for is strict and
        # failed at once when the ending run had not yet replaced both (a loaded clean clone, 7d8a2f1)
        teacher.wait_for_function("() => !document.querySelector('[data-room]')", timeout=RUN_ENDS_MS)
        student.get_by_text("has ended").first.wait_for(timeout=FOLLOW_TIMEOUT_S * 1000)
        student.get_by_text("Following your teacher").wait_for(state="detached", timeout=RUN_ENDS_MS)
        screenshot(student, "class-keyboard-student-ended")
        assert all(page.locator('[data-testid="stException"]').count() == 0 for page in (teacher, student))
    finally:
        teacher_context.close()
        student_context.close()
