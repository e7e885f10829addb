"""The Lessons page's ears: small components that hold a stream of the class channel (vizcore/lessons/channel.py)
open while the page is on screen, so that nothing on the server runs while a class is at rest.

- ``follow``: a student's page (and a speaker notes window) asks Streamlit for one rerun of the whole app when the
  channel says the teacher (the presenter) has moved past what this run drew (``moves``), or that the class ended.
  A whole-app rerun and not a fragment's: when a rerun request meets a run that has just ended, Streamlit drops the
  ended run's last messages (``AppSession``: "Ignoring event from non-current ScriptRunner"), which only hurts when
  the new run is a fragment's and does not draw them again; and a fragment's trigger sent in the same batch as a
  student's click took the click with it (Streamlit's frontend sends one moment's widget updates under the first
  fragment id among them). Neither can happen to a whole-app rerun.
- ``answers_chart``: the teacher's chart of the class's answers to the step's question, drawn in the browser from
  the channel's counts as the students answer: no page run at all.

Each component keeps one ``EventSource`` per page (on ``globalThis``) across the page's runs, opens a new one only
when its address changes (another class, another step) and closes it when the component leaves the page.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence
from urllib.parse import urlencode

import streamlit as st

from vizcore.lessons.channel import PREFIX, WATCH_COOKIE

_FOLLOW_JS = """
export default function (component) {
  const {data, setTriggerValue, parentElement} = component;
  const ears = globalThis.__classFollow = globalThis.__classFollow || {};
  ears.shown = data.moves;
  ears.send = setTriggerValue;
  const ask = (what, at) => { ears.asked = at.moves; ears.asks = (ears.asks || 0) + 1; ears.send(what, at); };
  const heard = event => {
    const at = JSON.parse(event.data);
    ears.heard = at;
    ears.events = (ears.events || 0) + 1;
    // One rerun per move the page has not drawn. A heartbeat asks again for a move still not drawn: a rerun lost
    // with a dropped connection is asked for once more, 15 s later.
    if (at.moves > ears.shown && (ears.asked !== at.moves || event.type === 'heartbeat')) ask('moved', at);
  };
  if (ears.url !== data.url || ears.owner !== parentElement) {
    if (ears.source) ears.source.close();
    ears.url = data.url;
    ears.owner = parentElement;
    ears.asked = null;
    ears.opened = (ears.opened || 0) + 1;
    const source = ears.source = new EventSource(data.url);
    source.addEventListener('position', heard);
    source.addEventListener('heartbeat', heard);
    source.addEventListener('ended', () => { source.close(); ears.send('ended', true); });
  } else if (ears.heard && ears.heard.moves > ears.shown && ears.asked !== ears.heard.moves) {
    ask('moved', ears.heard);  // heard while this run was on its way, of a move past the one it drew
  }
  parentElement.setAttribute('data-class-follow', String(ears.opened));
  return () => {
    if (ears.owner !== parentElement) return;  // a newer mount owns the stream
    if (ears.source) ears.source.close();
    ears.source = ears.url = ears.owner = null;
  };
}
"""

_CHART_CSS = """
.class-chart { font-size: 1rem; line-height: 1.4; }
.class-chart .title { font-weight: 700; margin: 0 0 0.25rem 0; }
.class-chart table { border-collapse: collapse; width: 100%; }
.class-chart th { text-align: left; font-weight: 400; padding: 0.15rem 0.75rem 0.15rem 0; }
.class-chart th[scope=row], .class-chart thead th:first-child { width: 1%; white-space: nowrap; }
.class-chart td { padding: 0.15rem 0; }
.class-chart .bar { display: inline-block; height: 1.1rem; vertical-align: middle;
  background: light-dark(#1f5fa8, #8ab4f8);
  border-radius: 2px; margin-right: 0.4rem; }
.class-chart .count { font-weight: 700; font-variant-numeric: tabular-nums; }
.class-chart .text { margin: 0.35rem 0 0 0; font-size: 0.95rem; }
"""

_CHART_JS = """
function rows(choices, counts) {
  const shown = [...new Set(choices)];
  for (const choice of Object.keys(counts)) if (!shown.includes(choice)) shown.push(choice);
  return shown.map(choice => [choice, Number(counts[choice] || 0)]);
}
const escape = text => String(text).replace(/[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;',
  '"': '&quot;', "'": '&#39;'}[c]));

function draw(root, data, counts) {
  const table = rows(data.choices, counts);
  const answered = table.reduce((sum, [, n]) => sum + n, 0);
  const most = Math.max(1, ...table.map(([, n]) => n));
  const body = table.map(([choice, n]) =>
    `<tr><th scope="row">${escape(choice)}</th><td><span class="bar" style="width:${(70 * n / most).toFixed(1)}%">`
    + `</span><span class="count">${n}</span></td></tr>`).join('');
  root.innerHTML = `<div class="class-chart" role="group" aria-label="The class's answers">`
    + `<p class="title">The class's answers · ${answered} student${answered === 1 ? '' : 's'} answered</p>`
    + `<p class="question">${escape(data.question)}</p>`
    + `<table><thead><tr><th scope="col">answer</th><th scope="col">students</th></tr></thead>`
    + `<tbody>${body}</tbody></table>`
    + `<p class="text class-answers-text">Answers: ${escape(table.map(([c, n]) =>
        `${c}: ${n} answer${n === 1 ? '' : 's'}`).join('; '))}</p>`
    + `</div>`;
  root.setAttribute('data-answered', String(answered));
}

export default function (component) {
  const {data, parentElement} = component;
  const ears = globalThis.__classAnswers = globalThis.__classAnswers || {};
  ears.data = data;
  const root = parentElement.querySelector('.class-chart-root') || parentElement;
  if (ears.url !== data.url || ears.owner !== parentElement) {
    if (ears.source) ears.source.close();
    ears.url = data.url;
    ears.owner = parentElement;
    ears.counts = data.counts;
    document.cookie = `${data.cookie}=${data.token}; path=${data.path}; SameSite=Strict`;
    const source = ears.source = new EventSource(data.url);
    source.addEventListener('tally', event => {
      ears.counts = JSON.parse(event.data).counts;
      draw(root, ears.data, ears.counts);
    });
    source.addEventListener('ended', () => source.close());
  }
  draw(root, data, ears.counts);
  return () => {
    if (ears.owner !== parentElement) return;
    if (ears.source) ears.source.close();
    ears.source = ears.url = ears.owner = null;
  };
}
"""


@st.cache_resource(show_spinner=False)
def _follow_component() -> Callable:
    return st.components.v2.component("lessons.follow", js=_FOLLOW_JS, isolate_styles=False)


@st.cache_resource(show_spinner=False)
def _chart_component() -> Callable:
    return st.components.v2.component("lessons.class_answers", html='<div class="class-chart-root"></div>',
                                      css=_CHART_CSS, js=_CHART_JS, isolate_styles=False)


def follow(url: str, moves: int, key: str) -> None:
    """Rerun the app once the channel at ``url`` says the move count is past ``moves`` (what this run drew), or
    that the class ended. Nothing is drawn (no height, nothing to focus)."""
    _follow_component()(key=key, data={"url": url, "moves": int(moves)}, height=0,
                        on_moved_change=_nothing, on_ended_change=_nothing)


def events_url(code: str) -> str:
    return f"{PREFIX}/events?room={code}"


def notes_url(presenter: str) -> str:
    return f"{PREFIX}/notes?" + urlencode({"presenter": presenter})


def answers_chart(code: str, token: str, lesson: str, step: int, question: str, choices: Sequence[str],
                  counts: Mapping[str, int], key: str) -> None:
    """The teacher's live chart of the answers to step ``step`` of ``lesson``: ``counts`` as this run read them,
    then the channel's (with the class's watch token, in a cookie for the channel's path only)."""
    url = f"{PREFIX}/answers?" + urlencode({"room": code, "lesson": lesson, "step": step})
    _chart_component()(key=key, data={"url": url, "token": token, "cookie": WATCH_COOKIE, "path": PREFIX,
                                      "question": question, "choices": list(choices), "counts": dict(counts)})


def chart_text(choices: Sequence[str], counts: Mapping[str, int]) -> str:
    """What the chart says, as the browser draws it (tests compare): "Answers: animal: 3 answers; street: 1 answer"."""
    from vizcore.lessons.figures import answer_counts, answers_text

    return "Answers: " + answers_text(answer_counts(choices, counts))


def _nothing() -> None:
    """A trigger's callback: the rerun it causes is the point."""

