"""The link promise on every page (README, "Sharing a view"): a value the page cannot use is reported with its name
and value, left out (the control keeps the value it has without the link) and dropped from the rewritten link.

The parameters come from each page's one declaration (``url_state.Link``), not from a list kept here: a parameter
added to a page is walked without touching this file. One AppTest session per page; each new link is a new
first visit (the page's ``<page>.url_read`` flag cleared), so the page reads it as it would a pasted link.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ui import layer_head, url_state
from ui.attention import page as attention
from ui.corpus import page as corpus
from ui.decoder import page as generate
from ui.embeddings.link import LINK as EMBEDDINGS
from ui.inside import page as inside
from ui.lessons import page as lessons
from ui.mlm.link import LINK as FILL_MASK
from ui.positional import page as positional
from ui.seq2seq import page as translate
from ui.why.link import LINK as WHY

ROOT = Path(__file__).resolve().parents[2]
LINKS = {
    "pages/home.py": layer_head.HOME_LINK,
    "pages/lessons.py": lessons.LINK,
    "pages/attention.py": attention.LINK,
    "pages/inside.py": inside.LINK,
    "pages/positional.py": positional.LINK,
    "pages/mlm.py": FILL_MASK,
    "pages/decoder.py": generate.LINK,
    "pages/seq2seq.py": translate.LINK,
    "pages/embeddings.py": EMBEDDINGS,
    "pages/why.py": WHY,
    "pages/corpus.py": corpus.LINK,
    "pages/finetune.py": None,  # the shared text, pair and model only
    "pages/results.py": None,  # the same: a class's report opens with its code and key typed, never from a link
}
NOT_A_NUMBER, OUT_OF_RANGE, EMPTY = "abc", "999999999", ""


def test_every_page_is_walked():
    assert set(LINKS) == {str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py")}


def must_refuse(parse, value: str) -> bool | None:
    """Whether the page must report ``value`` (None: free text, any value is one). A value the parser takes may
    still be wrong for the page (a layer this model lacks, a word not in the sentence): the page checks it where
    the control is drawn, and must refuse it too; only an empty word list is a real value."""
    if isinstance(parse, url_state.Text):
        return None
    try:
        parse(value)
    except ValueError:
        return True
    return value != EMPTY


def visit(at, page: str, link: url_state.Link, params: dict[str, str]):
    """Open ``page`` on a link holding ``params`` (and the shared sentence) as a first visit would."""
    at.session_state[f"{link.page}.url_read"] = False
    at.query_params.clear()
    at.query_params.update({"text": "The cat sat on the mat because it was tired.", **params})
    return at.switch_page(page).run()


def check(at, link: url_state.Link, bad: dict[str, str], before: dict[str, object]) -> list[str]:
    """What broke the promise for each refused value of ``bad`` (names -> values) against ``before``."""
    params = link.all()
    warnings = " ".join(w.value for w in at.warning)
    failures = [f"exception: {e.value}" for e in at.exception] + [f"error shown: {e.value}" for e in at.error]
    for name, value in bad.items():
        key, parse = params[name]
        if not must_refuse(parse, value):
            continue
        if f"The link's {name}={value!r} was not used" not in warnings:
            failures.append(f"{name}={value!r}: no message naming it")
        if at.session_state.get(key) != before.get(key):
            failures.append(f"{name}={value!r}: {key} is {at.session_state.get(key)!r}, without the link "
                            f"{before.get(key)!r}")
        if at.query_params.get(name) == value:
            failures.append(f"{name}={value!r}: still in the rewritten link")
    return failures


def snapshot(at, link: url_state.Link) -> dict[str, object]:
    return {key: at.session_state.get(key) for key, _ in link.all().values()}


def checked(params: url_state.Params) -> list[str]:
    """The parameters that can hold a wrong value (free text cannot)."""
    return [name for name, (_, parse) in params.items() if not isinstance(parse, url_state.Text)]


def walk(at, page: str, link: url_state.Link) -> list[str]:
    """Every parameter with each bad value, section by section (a section's parameters are drawn only while
    the selector shows it). The empty value goes to every parameter that refuses it at once (every parser sees
    it; an empty word list is a value)."""
    params = link.all()
    before = snapshot(at, link)
    everything = {name: EMPTY for name in checked(params) if must_refuse(params[name][1], EMPTY)}
    failures = check(visit(at, page, link, everything), link, everything, before)
    default = at.session_state.get(link.params[link.selector][0]) if link.selector else None
    sections = [default, *(s for s in link.sections if s != default)] if link.selector else [None]
    for section in sections:
        chosen = {link.selector: section} if link.selector else {}
        if section != default:
            visit(at, page, link, chosen)
            before = snapshot(at, link)
        names = checked({**link.sections.get(section, {}), **link.params}) if section == default \
            else checked(link.sections[section])
        names = [name for name in names if name != link.selector]
        for value in (NOT_A_NUMBER, OUT_OF_RANGE):
            bad = dict.fromkeys(names, value)
            visit(at, page, link, {**chosen, **bad})
            failures += [f"[{section or page}] {f}" for f in check(at, link, bad, before)]
    if link.selector:
        before = snapshot(at, link)
        visit(at, page, link, {link.selector: NOT_A_NUMBER})
        failures += check(at, link, {link.selector: NOT_A_NUMBER}, before)
    return failures


@pytest.mark.parametrize("page", [p for p, link in LINKS.items() if link is not None])
def test_a_bad_link_value_is_reported_left_out_and_dropped_on_every_page(new_app, page):
    link = LINKS[page]
    at = new_app().run()
    at.query_params.clear()  # Home's link; a browser switching pages drops it
    at.switch_page(page).run()  # the page without a link: what its controls start on
    assert not at.exception
    failures = walk(at, page, link)
    assert at.session_state[f"{link.page}.url_read"], f"{page} does not read its link through {link.page}"
    assert not failures, "\n".join(failures)


def test_a_long_sentence_is_said_to_be_cut_and_too_long_for_the_link(new_app):
    sentence = "The cat sat on the [MASK]. " + "It slept on the mat all day. " * 160  # about 1,300 tokens
    at = new_app().run()
    for page in ("pages/home.py", "pages/attention.py", "pages/why.py"):
        at.session_state["shared.text"] = sentence  # AppTest forgets the sidebar's values between runs
        at.switch_page(page).run()
        assert not at.exception, page
        assert any("tokens; this model reads at most 512" in w.value for w in at.warning), page
        assert any(f"The link leaves out text ({len(sentence):,} characters)" in c.value for c in at.caption), page
        assert "text" not in at.query_params


def test_a_long_search_query_is_said_to_be_cut_and_stays_in_the_link_up_to_its_limit(new_app):
    at = new_app().run().switch_page("pages/embeddings.py")
    query = "a b " * 350  # 1,400 characters, 700 tokens
    at.query_params.update({"view": "search", "query": query})
    at.run()
    assert not at.exception
    assert any("The query has 702 tokens; this model reads at most" in w.value for w in at.warning)
    assert at.query_params["query"] == query
    at.text_input(key="embeddings.search.query").set_value("Stars at night. " * 150).run()  # 2,400 characters
    assert "query" not in at.query_params
    assert any("The link leaves out query (2,400 characters)" in c.value for c in at.caption)


def test_sentences_cut_for_their_vectors_are_counted(new_app):
    at = new_app().run().switch_page("pages/embeddings.py")
    at.query_params.update({"view": "similarity", "sentences": "a b " * 300 + "\nA short one.\nAnother short one."})
    at.run()
    assert not at.exception
    assert any(w.value.startswith("1 of the sentences has more than") for w in at.warning)
