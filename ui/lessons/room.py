"""A class that follows its teacher (issue 34 C): the Lessons page's part for the teacher and for the students.

The store: one per server process (``rooms()``: ``vizcore.lessons.stores.server_rooms``, shared by every session and
by the class channel's streams), in memory or, for replicas, the shared store ``VIZCORE_ROOMS`` names. This module
uses its contract (``Rooms``) only.

Teacher: ``/lessons?teach=1`` or *Start a class* opens a room at the step on screen; its code and secret stay in
this session (``lessons.class_code``, ``lessons.class_secret``: the secret is never in a link or on a page). Each
run, once the page has settled its step, ``teach`` sends the step to the room when it changed (``rooms.move``): so
every way of moving (picker, buttons, keys, a link, a typed sentence) moves the class. The page shows the code
(``data-room``), the students' link and its QR code, and the class's answers to the step's question, drawn in the
teacher's browser as they come (``listen.answers_chart``: no page run).

Student: ``/lessons?room=CODE`` (or the code typed in the box) follows the room. ``follow`` runs before the page
settles its step: when the teacher's position is not the one this session last followed, it moves the session there
as ``page.go_to`` does (and takes the teacher's sentence). The page then listens (``listen.follow``): the class
channel pushes each move, and the page asks for one rerun when the teacher has moved past what it drew; at rest no
run happens on the server. A student who moves themselves is on their own
(following pauses) until *Follow the teacher again*, or until they are back on the teacher's step. Their answer to
the step's question goes to the room under a random id kept in the session (``send_answer``): the teacher sees
counts, no names.
"""

from __future__ import annotations

import html
import ipaddress
import os
import secrets
import socket
from typing import Mapping, Sequence
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st

from ui.feedback import plain
from ui.lessons import listen, page
from ui.state import presenting
from vizcore.errors import VizError
from vizcore.lessons.figures import qr_svg_uri
from vizcore.lessons.lesson import Lesson
from vizcore.lessons.quiz import PHASE_NAMES
from vizcore.lessons.rooms import QUIZ_STEPS, Position, RoomError, Rooms, check_code, secret_hash, watch_token
from vizcore.lessons.stores import server_rooms
from vizcore.results.store import Row, new_report_key, now_iso, report_key_hash
from vizcore.results.stores import server_results

PAGE = page.PAGE
KEY_TEACH = f"{PAGE}.teach"  # "1": open a class in this run (the link's teach=1, or the Start button)
KEY_CODE = f"{PAGE}.class_code"  # the class this session teaches
KEY_SECRET = f"{PAGE}.class_secret"  # what moves it: in this session only
KEY_SENT = f"{PAGE}.class_sent"  # (lesson, step, text) last sent to the class
KEY_ENDED = f"{PAGE}.class_ended"  # the code of the class this teacher just ended (said once)
KEY_ROOM = f"{PAGE}.room"  # the class this session follows (the link's room=CODE, or the box)
KEY_FOLLOWED = f"{PAGE}.followed"  # the teacher's Position this session last followed
KEY_ON_OWN = f"{PAGE}.on_own"  # the student moved themselves: following paused
KEY_STUDENT = f"{PAGE}.student"  # this student's random id: their last answer to a step counts once
KEY_PROBLEM = f"{PAGE}.room_problem"  # the store's message for a code this session cannot follow (said once)
KEY_JOIN = f"{PAGE}.join_code"  # the box a code is typed in
KEY_CLASS_QUIZ = page.KEY_CLASS_QUIZ  # "pre"/"post": the quiz the teacher has open for the class, "" none
KEY_REPORT = f"{PAGE}.class_report"  # (code, report key) of the class this session taught: its report (ui/results)
KEY_NICKNAME = f"{PAGE}.nickname"  # a student's optional nickname (typed in a quiz)
STUDENT_ID_BYTES = 9
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}
# The class's code, large on the teacher's page and small in presenter mode, in the step's heading row (fixed in a
# corner it covered the step's Check button, then the lesson's name, at 1024 x 768); on a phone (a student's, 390
# px wide) the page's heading at 2 rem, not Streamlit's 2.75 (three lines before the step began).
CLASS_CSS = """<style>
@media (max-width: 640px) { [data-testid="stMain"] h1 { font-size: 2rem; } }
.class-code { line-height: 1.1; }
.class-code .label { font-size: 1rem; }
.class-code .code { font-size: 3.2rem; font-weight: 700; letter-spacing: 0.12em; font-family: monospace; }
.class-corner { display: inline-block; white-space: nowrap; font-size: 20px; font-weight: 700;
  padding: 0.1rem 0.5rem; border: 2px solid currentColor; border-radius: 0.3rem;
  color: light-dark(#000000, #FFFFFF); background: light-dark(#FFFFFF, #0E1117); }
</style>"""


def rooms() -> Rooms:
    """The server's rooms: shared by every session and the channel (the store has its own lock)."""
    return server_rooms()


# ---- where students open the class -----------------------------------------------------------------------

def lan_address() -> str | None:
    """This machine's address on its local network: the source address a UDP socket would use towards a private
    address (``connect`` on UDP sends nothing); None when there is no network."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 9))
            address = sock.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def student_link(page_url: str | None, code: str, lan: str | None, port: int = 8501) -> tuple[str, str | None]:
    """The students' link to the class, and a note for the teacher when it is not the address their browser used:
    ``page_url`` is the Lessons page as the teacher's browser opened it; localhost cannot be opened from a student's
    device, so it becomes this machine's network address ``lan`` (when there is one)."""
    parts = urlsplit(page_url or f"http://localhost:{port}/lessons")
    path = parts.path.rstrip("/")
    path = path if path.endswith("/lessons") else f"{path}/lessons"
    note = None
    if (parts.hostname or "") in LOCAL_HOSTS:
        if lan:
            note = (f"This browser opened the app as {parts.hostname}, which the students' devices cannot open: the "
                    f"link uses this computer's network address, {lan}. The students must be on the same network, "
                    "and the server must listen on it (streamlit run app.py --server.address 0.0.0.0).")
            parts = parts._replace(netloc=lan + (f":{parts.port}" if parts.port else ""))
        else:
            note = "This computer has no network address: only this computer can open the link."
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode({"room": code}), "")), note


def listens_on_this_computer_only(address: str | None) -> bool:
    """Whether a server listening on ``address`` (``server.address``; unset: every interface) can be reached only
    from this computer: ``make run`` listens on localhost, ``make serve`` on every interface."""
    host = (address or "").strip().strip("[]")
    if host in ("", "0.0.0.0", "::"):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


LOCAL_ONLY = ("**Students cannot reach this server**: it listens on this computer only (`make run`). To teach a class, "
              "stop it and start `make serve` (it listens on this computer's network address; see docs/SCALE.md), or "
              "`streamlit run app.py --server.address 0.0.0.0`, then open the class again. The code works meanwhile "
              "for other windows on this computer.")


def class_link(code: str) -> tuple[str, str | None]:
    return student_link(st.context.url, code, lan_address(), int(st.get_option("server.port") or 8501))


# ---- the teacher -----------------------------------------------------------------------------------------

def teaching() -> bool:
    return bool(st.session_state.get(KEY_CODE))


def start_class() -> None:
    """Callback of *Start a class*: the run that follows opens it at the step it settles."""
    st.session_state[KEY_TEACH] = "1"


def end_class() -> None:
    """Callback of *End the class*: the code answers 'ended' from now on."""
    state = st.session_state
    code = state.pop(KEY_CODE, None)
    secret = state.pop(KEY_SECRET, None)
    state.pop(KEY_SENT, None)
    state.pop(KEY_CLASS_QUIZ, None)
    if code:
        state[KEY_ENDED] = code
        try:
            rooms().close(code, secret)
        except RoomError:  # ended or expired already: nothing to close
            pass
        try:
            server_results().end_class(code)
        except VizError:  # the report says when it opened; a missing end time loses no answer
            pass


def teach(lesson_id: str, number: int, text: str) -> None:
    """The teacher's part of a run, once the page has settled its step: open the class when asked, and send the
    step to it when it is not the one sent last (a rerun on the same step sends nothing)."""
    state = st.session_state
    where = (lesson_id, number, text, state.get(KEY_CLASS_QUIZ) or "")
    try:
        if state.pop(KEY_TEACH, None) == "1" and not teaching():
            state[KEY_CODE], state[KEY_SECRET] = rooms().open(*where[:3])
            state[KEY_SENT] = where[:3] + ("",)
            for key in (KEY_ROOM, KEY_FOLLOWED, KEY_ON_OWN, KEY_ENDED):  # a teacher follows no one
                state.pop(key, None)
            report_key = new_report_key()
            server_results().open_class(state[KEY_CODE], report_key_hash(report_key))
            state[KEY_REPORT] = (state[KEY_CODE], report_key)
        if teaching() and state.get(KEY_SENT) != where:
            rooms().move(state[KEY_CODE], state[KEY_SECRET], *where)
            state[KEY_SENT] = where
    except VizError as error:  # the class expired (3 idle hours), a store is unreachable
        for key in (KEY_CODE, KEY_SECRET, KEY_SENT, KEY_CLASS_QUIZ):
            state.pop(key, None)
        st.error(f"The class cannot go on: {error}")


def _code_html(code: str, corner: bool) -> str:
    if corner:
        return f'<div class="class-corner" data-room="{code}" aria-label="Class code {code}">{code}</div>'
    return (f'<div class="class-code" data-room="{code}"><div class="label">Class code</div>'
            f'<div class="code">{code}</div></div>')


def heading_code() -> None:
    """In presenter mode, the class's code in the step's heading row, where it covers nothing."""
    if teaching():
        st.html(_code_html(st.session_state[KEY_CODE], corner=True), width="content")


def _qr_html(link: str, px: int) -> str:
    alt = html.escape(f"QR code for {link}", quote=True)
    return f'<img src="{qr_svg_uri(link)}" alt="{alt}" width="{px}" height="{px}" style="display:block">'


def teacher_panel() -> None:
    """The class's code, the students' link and its QR code, and *End the class*. In presenter mode the code stays
    small in a corner of the step and the rest is in the sidebar."""
    code = st.session_state[KEY_CODE]
    link, note = class_link(code)
    # Behind deploy.replicas the server listens on 127.0.0.1 and nginx on the address it names for the students
    local = listens_on_this_computer_only(os.environ.get("VIZCORE_PUBLIC_ADDRESS") or st.get_option("server.address"))
    if presenting():  # the code itself is in the step's heading row (heading_code, ui/lessons/step.py)
        with st.sidebar:
            if local:
                st.warning(LOCAL_ONLY)
            else:
                st.markdown(f"**Class {code}** · students open {link}")
                st.html(_qr_html(link, 180))
            st.button("End the class", key=f"{PAGE}.end_class", on_click=end_class)
            report_link()
        return
    # One row on the page (the step starts above the fold of a 1024 x 768 screen), the QR code and the large code
    # in the sidebar, where the teacher can show them.
    with st.container(border=True, key=f"{PAGE}-class"):
        badge, words, end = st.columns([1.4, 4, 2], vertical_alignment="center")
        badge.html(_code_html(code, corner=True))
        if local:
            words.markdown("**Students cannot reach this server** (`make run`): see the sidebar.")
        else:
            words.markdown(f"Students open **{link}**, scan the QR code in the sidebar, or type the code.")
        end.button("End the class", key=f"{PAGE}.end_class", on_click=end_class)
        if note and not local:
            st.caption(note)
    with st.sidebar:
        st.html(_code_html(code, corner=False))
        if local:
            st.warning(LOCAL_ONLY)
        else:
            st.html(_qr_html(link, 200))
        report_link()


def report_link() -> None:
    """Where the teacher finds the class's report and its key (the Class results page, in this same session)."""
    st.page_link("pages/results.py", label="Class report", icon=":material/analytics:",
                 help="The class's report and its key, on the Class results page.")


def class_answers(lesson: Lesson, number: int, choices: Sequence[str] | None) -> None:
    """The teacher's live chart of the class's answers (``choices``: the step's question's, None without one)."""
    if not teaching():
        return
    with st.sidebar if presenting() else st.container():
        question = lesson.steps[number - 1].question
        if question is None or choices is None:
            st.caption("This step has no question for the class.")
            return
        code = st.session_state[KEY_CODE]
        try:
            counts = rooms().tally(code, lesson.id, number)
        except RoomError as error:
            st.error(str(error))
            return
        listen.answers_chart(code, watch_token(secret_hash(st.session_state[KEY_SECRET])), lesson.id, number,
                             question.text, choices, counts, key=f"{PAGE}.class_chart")


# ---- the students ----------------------------------------------------------------------------------------

def following() -> str | None:
    """The code of the class this session follows, if any (a teacher follows none)."""
    return None if teaching() else st.session_state.get(KEY_ROOM) or None


def _leave(message: str) -> None:
    for key in (KEY_ROOM, KEY_FOLLOWED, KEY_ON_OWN):
        st.session_state.pop(key, None)
    st.session_state[KEY_PROBLEM] = message
    # Said at the top of the page, and where a student scrolled down to the question sees it too: a toast stays in
    # the window's corner until it is closed.
    st.toast(message, icon=":material/info:", duration="infinite")


def _go(position: Position, lessons: Mapping[str, Lesson]) -> None:
    """Move this session to the teacher's position, as ``page.go_to`` does, with the teacher's sentence."""
    if position.lesson in lessons:
        page.go_to(position.lesson, position.step)
        st.session_state[page.KEY_TEXT] = position.text
    st.session_state[KEY_FOLLOWED] = position


def follow(lessons: Mapping[str, Lesson]) -> None:
    """Before the page settles its step: a student following a class goes to the teacher's position when the
    teacher moved since this session last followed (unless on their own; back on the teacher's step by
    themselves, they follow again). A code that cannot be followed is said once, with the box to type another."""
    state = st.session_state
    code = following()
    if not code:
        return
    try:
        code = check_code(code)
        position = rooms().position(code)
    except RoomError as error:
        _leave(str(error))
        return
    state[KEY_ROOM] = code
    if state.get(KEY_ON_OWN):
        if (state.get(page.KEY_LESSON), state.get(page.KEY_STEP)) != (position.lesson, position.step):
            return
        state[KEY_ON_OWN] = False
    if state.get(KEY_FOLLOWED) != position:
        _go(position, lessons)


def notice_own_move(lesson_id: str, number: int) -> None:
    """After the page settled its step: a follower on another step than the teacher's moved themselves."""
    followed = st.session_state.get(KEY_FOLLOWED)
    if following() and followed is not None and (lesson_id, number) != (followed.lesson, followed.step):
        st.session_state[KEY_ON_OWN] = True


def rejoin() -> None:
    """Callback of *Follow the teacher again*: the next run goes to the teacher's current step."""
    st.session_state[KEY_ON_OWN] = False
    st.session_state.pop(KEY_FOLLOWED, None)


def _watch(code: str, titles: Mapping[str, str]) -> None:
    """The student's line: following (the page's ears rerun the app as soon as the teacher moves) or on their own
    (where the teacher is, and the button back)."""
    state = st.session_state
    try:
        position = rooms().position(code)
    except RoomError as error:
        _leave(str(error))
        st.rerun(scope="app")
    listen.follow(listen.events_url(code), position.moves, key=f"{PAGE}.follow")
    if not state.get(KEY_ON_OWN):
        if state.get(KEY_FOLLOWED) != position:  # the teacher moved during this run: the next one follows
            st.rerun(scope="app")
        st.caption(f"Following your teacher · class **{code}**")
        return
    with st.container(horizontal=True, vertical_alignment="center", key=f"{PAGE}-on-own"):
        st.info(f"You are on your own. Your teacher is at {plain(titles.get(position.lesson, position.lesson))}, "
                f"step {position.step}.")
        st.button("Follow the teacher again", key=f"{PAGE}.rejoin", on_click=rejoin, type="primary")


def join() -> None:
    """Callback of the box's *Join*: follow the typed code when the store knows it, else say why."""
    state = st.session_state
    try:
        code = check_code(state.get(KEY_JOIN) or "")
        rooms().position(code)
    except RoomError as error:
        state[KEY_PROBLEM] = str(error)
        return
    for key in (KEY_FOLLOWED, KEY_ON_OWN, KEY_PROBLEM):
        state.pop(key, None)
    state[KEY_ROOM] = code
    state[KEY_JOIN] = ""


def _join_box(problem: str | None) -> None:
    with st.expander("A class: join your teacher's, or start one", expanded=problem is not None):
        with st.form(key=f"{PAGE}-join", border=False, enter_to_submit=True):
            st.text_input("Class code (from your teacher's screen)", key=KEY_JOIN, max_chars=20,
                          placeholder="e.g. K7P 3QX")
            st.form_submit_button("Join the class", on_click=join)
        st.button("Start a class (I am the teacher)", key=f"{PAGE}.start_class", on_click=start_class,
                  help="Students who open its link or type its code follow you from step to step.")


def class_bar(lessons: Mapping[str, Lesson]) -> None:
    """The class's part at the top of the page: the teacher's panel, a student's line, or the box to join or start
    one (with the message of a code that could not be followed)."""
    state = st.session_state
    st.html(CLASS_CSS)
    # The messages go in a container that is always there: one put before the box only when there is a message
    # moved the box down the page's element tree, so Streamlit drew a new box and a student who had typed a wrong
    # code and pressed Enter lost the focus (to the page's top) with the message.
    notes = st.container()
    ended = state.pop(KEY_ENDED, None)
    if ended:
        notes.success(f"The class {ended} has ended: its code no longer works.")
    if teaching():
        teacher_panel()
        return
    problem = state.pop(KEY_PROBLEM, None)
    if problem:
        notes.error(problem)
    code = following()
    if code:
        _watch(code, {lesson_id: lesson.title for lesson_id, lesson in lessons.items()})
        return
    with st.sidebar if presenting() else st.container():
        _join_box(problem)


def student_id() -> str:
    """This browser session's random id: a student's answers and quizzes are stored under it, never a name."""
    return st.session_state.setdefault(KEY_STUDENT, secrets.token_urlsafe(STUDENT_ID_BYTES))


def send_answer(lesson_id: str, number: int, choice: str, right: bool, right_answer: str, question: str,
                model: str) -> None:
    """A follower's checked answer goes to the class (under a random id kept in this session; no name), and to the
    results store (phase ``step``: the class report's questions answered in class)."""
    code = following()
    if not code:
        return
    student = student_id()
    try:
        rooms().answer(code, student, lesson_id, number, choice)
        server_results().record([Row(code, lesson_id, "step", f"step{number}", student,
                                     str(st.session_state.get(KEY_NICKNAME) or "").strip(), choice, right, now_iso(),
                                     right_answer, question, model)])
    except VizError as error:
        st.warning(f"Your answer did not reach your teacher: {error}")
        return
    st.caption("Your answer went to your teacher (no name, only the count).")


# ---- the class's quizzes (ui/lessons/quiz.py draws them) --------------------------------------------------------

def open_class_quiz(phase: str) -> None:
    """Callback: the class's students see the lesson's quiz ``phase`` instead of the step (a move they follow)."""
    st.session_state[KEY_CLASS_QUIZ] = phase


def close_class_quiz() -> None:
    st.session_state[KEY_CLASS_QUIZ] = ""


def class_quiz() -> str | None:
    """The quiz open in this session's class: the one the teacher opened, or for a follower (not on their own) the
    one the teacher's position has open."""
    state = st.session_state
    if teaching():
        return state.get(KEY_CLASS_QUIZ) or None
    followed = state.get(KEY_FOLLOWED)
    if following() and not state.get(KEY_ON_OWN) and followed is not None:
        return followed.quiz or None
    return None


def quiz_buttons(lesson: Lesson) -> None:
    """The teacher's buttons: open the quiz before or after the lesson for the class, or close the open one."""
    if lesson.quiz is None:
        return
    with st.sidebar if presenting() else st.container(horizontal=True, key=f"{PAGE}-class-quiz"):
        if st.session_state.get(KEY_CLASS_QUIZ):
            st.button("Close the quiz", key=f"{PAGE}.close_class_quiz", on_click=close_class_quiz, type="primary",
                      help="The students go back to the step; the answers they submitted are kept.")
            return
        for phase in ("pre", "post"):
            st.button(f"Open the quiz {PHASE_NAMES[phase]}", key=f"{PAGE}.open_class_quiz_{phase}",
                      on_click=open_class_quiz, args=(phase,),
                      help=f"{len(lesson.quiz.items)} questions on each student's device; their answers are kept "
                           "for the class report (the Class results page).")


def quiz_scores(lesson: Lesson, phase: str) -> None:
    """The teacher's live chart of the class's scores in the open quiz (from the channel, as students submit)."""
    code = st.session_state[KEY_CODE]
    items = len(lesson.quiz.items)
    try:
        counts = rooms().tally(code, lesson.id, QUIZ_STEPS[phase])
    except RoomError as error:
        st.error(str(error))
        return
    listen.answers_chart(code, watch_token(secret_hash(st.session_state[KEY_SECRET])), lesson.id, QUIZ_STEPS[phase],
                         f"Scores so far (right answers of {items})", [f"{k} of {items}" for k in range(items + 1)],
                         counts, key=f"{PAGE}.class_quiz_chart")


def send_quiz_score(lesson_id: str, phase: str, right: int, items: int) -> None:
    """A follower's saved quiz, told to the teacher's chart as its score (the answers are in the results store)."""
    code = following()
    if code:
        try:
            rooms().answer(code, student_id(), lesson_id, QUIZ_STEPS[phase], f"{right} of {items}")
        except RoomError:  # the answers are saved; only the teacher's live chart misses this one
            pass
