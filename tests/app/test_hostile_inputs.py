"""AppTest: hostile input on every page that takes text (issue 15, deliverable F).

Each case drives one hostile value through one page's widget, upload or link and checks, in the same
AppTest session: a clear message or the correct normal result, no traceback in any element, the
typed value still in its widget after an error, nothing rendered as live HTML, and then that the page
shows its normal result again (equal to what it showed before any hostile input) for a normal
sentence. One session per page is shared by all its cases (module scope), so a case that breaks the
session also fails every later case of that page. Step by step and the Fine-tuning lab run on the
tiny random BERT (64 positions), the other pages on the built-in models.
"""

from __future__ import annotations

import io
import json
import re
import zipfile

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from transformers import AutoTokenizer

from tests.app.conftest import APP, TIMEOUT, decode_plotly, open_tab, renderer_head
from ui.state import OTHER_MODEL
from vizcore.attention.payload import read_binary_payload
from vizcore.mlm.weights import DEFAULT_WEIGHTS, MLM_MODEL, WEIGHTS_ENV
from vizcore.model.catalog import DEFAULT_MODEL, embedded_minilm_path

NORMAL = "The cat sat on the mat."
NORMAL_MASKED = "The capital of France is [MASK]."
MASK = "[MASK]"
TYPED_MASK = re.compile(r"\[mask\]|<mask>", re.IGNORECASE)

SENTENCES = {
    "empty": "",
    "whitespace": " \t  ",
    "newlines": "\n\n\r\n\n",
    "unicode-spaces": "\u00a0\u2028\u3000\u2003",
    "zero-width-only": "\u200b\ufeff\u200d",
    "control-only": "\x00\x07\x1b\x7f",
    "100k-chars": "many words here " * 6_250,
    "250k-chars": "x" * 250_000,
    "emoji-zwj-skin-tones": "👩‍👩‍👧‍👦 waves 👋🏽 at 🏳️‍🌈 and 🧑🏿‍💻",
    "cjk": "我爱自然语言处理。東京は日本の首都です。한국어 문장",
    "rtl": "שלום עולם مرحبا بالعالم",
    "mixed-rtl-ltr": "The word שלום means peace and مرحبا means hello.",
    "bidi-override": "\u202egnirts desrever\u202c then normal",
    "control-chars-ansi": "bell\x07 null\x00 \x1b[31mred\x1b[0m text",
    "unusual-code-points": "\ufffd \uffff \U0010ffff \ue000 \U0001d400\U0001d401 ok",
    "script-tag": "<script>alert(1)</script>",
    "html-markdown": "**bold** $x^2$ [link](javascript:alert(1)) <img src=x onerror=alert(1)> # h",
    "600-masks": "[MASK] " * 600,
    "masks-without-spaces": "[MASK][MASK]x[MASK]",
    "special-tokens-only": "[CLS] [SEP]",
    "zero-width-inside-words": "zero\u200bwidth\ufeffjoin\u200der words",
    "combining-marks": "Z\u0337\u0322\u0348a\u0335\u0321l\u0338g\u0336o\u0334 e\u0301te\u0301",
    "single-char": "a",
    "numbers-only": "3.14159 2718 -42 1e10",
    "long-word-10k": "a" * 10_000,
}
BLANK = {"empty", "whitespace", "newlines", "unicode-spaces", "zero-width-only", "control-only"}
# A subset for the second boxes (pair, compare, padding, masking rule, fine-tuned prediction).
SECOND_BOX = ["whitespace", "zero-width-only", "250k-chars", "100k-chars", "emoji-zwj-skin-tones",
              "script-tag", "control-chars-ansi", "600-masks"]
MODEL_IDS = {
    "dot-dot-slash": ("../", "no config.json"),
    "dot-dot-x": ("../../x", "does not exist"),
    "etc-passwd": ("/etc/passwd", "is a file"),
    "backslashes": ("..\\..", "does not exist"),
    "hub-id-with-spaces": ("bert base uncased", "neither a built-in model"),
    "empty-other": ("", None),  # each page says how to fill it in (checked per page)
    "5000-chars": ("x" * 5_000, "too long"),
    "hub-url": ("https://huggingface.co/bert-base-uncased", "give the hub id 'bert-base-uncased'"),
    "script-tag": ("<script>alert(1)</script>", "neither a built-in model"),
}
# Messages some sections of a page may show for an unusual but valid sentence while the page's main
# result is still shown (step by step's demos).
STEP_SECTION_ERRORS = ("two different words", "same number of tokens")
MARKERS = ("<script>alert", "<img src=x", "onerror=alert")


# ---- checks shared by every page ---------------------------------------------------------------

def values(at: AppTest, kind: str) -> list[str]:
    return [str(element.value) for element in at.get(kind)]


def assert_clean(at: AppTest) -> None:
    """No exception element, no traceback text in any message, nothing hostile rendered as live HTML."""
    assert not at.exception, [e.value for e in at.exception]
    for kind in ("error", "warning", "info", "success", "markdown", "caption", "text", "code"):
        for value in values(at, kind):
            assert "Traceback" not in value, (kind, value[:300])
    for kind in ("markdown", "caption"):
        for element in at.get(kind):
            if element.proto.allow_html:
                assert not any(m in element.proto.body for m in MARKERS), element.proto.body[:300]
    for element in at.get("html"):
        assert not any(m in element.proto.body for m in MARKERS)
    for element in at.get("iframe"):
        assert not any(m in element.proto.srcdoc for m in MARKERS)
    for element in at.get("plotly_chart"):
        spec = element.proto.spec.lower()
        assert "<script" not in spec and "<img" not in spec, "markup reached a chart unescaped"


def message(at: AppTest, kind: str, part: str) -> str:
    """The ``kind`` message (error, warning, info) containing ``part``; fails listing what was shown."""
    shown = values(at, kind)
    for value in shown:
        if part in value:
            return value
    raise AssertionError(f"no {kind} containing {part!r}; shown: {shown}, errors: {values(at, 'error')}")


def chart(at: AppTest, key: str) -> dict:
    for element in at.get("plotly_chart"):
        if element.proto.id.endswith(key):
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart {key}; have {[e.proto.id.rsplit('-', 1)[-1] for e in at.get('plotly_chart')]}")


RENDERER_KEYS = ("home.view", "attention.renderer")  # the client-side view (ui/attention_component.py)


def first_z(at: AppTest, key: str | None = None) -> np.ndarray:
    if key in RENDERER_KEYS:
        for element in at.get("bidi_component"):
            if element.proto.id.endswith(key):
                return renderer_head(read_binary_payload(element.proto.bytes))
        raise AssertionError(f"no attention view {key}")
    spec = chart(at, key) if key else json.loads(at.get("plotly_chart")[0].proto.spec)
    return decode_plotly(spec["data"][0]["z"])


def row_sum_tolerance(key: str) -> float:
    return 0.06 if key in RENDERER_KEYS else 1e-4  # the view's 8-bit weights, up to 512 per row


# ---- tokens the page should show ---------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm_tokenizer():
    return AutoTokenizer.from_pretrained(str(embedded_minilm_path()))


def token_count(tokenizer, text: str, pair: str | None, limit: int) -> tuple[int, bool]:
    """Tokens shown for ``text`` (and ``pair``) by a model reading ``limit``, and whether it was cut."""
    full = len(tokenizer(text, pair)["input_ids"])
    return min(full, limit), full > limit


# ---- sessions ----------------------------------------------------------------------------------

def drive(at: AppTest, **shared: str) -> AppTest:
    """Set the sidebar (through session state: AppTest drops sidebar widgets of an st.navigation app
    after their first run) and run. Unset values take the page's base values."""
    for name, value in {**at.base, **shared}.items():
        at.session_state[f"shared.{name}"] = value
    return at.run()


def open_page(page: str | None, **base: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    if page:
        at.switch_page(page).run()
    at.base = {"text": NORMAL, "pair": "", "model_choice": DEFAULT_MODEL, "model_other": "", **base}
    drive(at)
    assert_clean(at)
    return at


@pytest.fixture(scope="module")
def home():
    at = open_page(None)
    at.normal = first_z(at, "home.view")
    return at


@pytest.fixture(scope="module")
def explorer():
    at = open_page("pages/attention.py")
    at.normal = first_z(at, "attention.renderer")
    return at


@pytest.fixture(scope="module")
def step(tiny_bert_dir):
    at = open_page("pages/inside.py", model_choice=OTHER_MODEL, model_other=str(tiny_bert_dir))
    open_tab(at, "step_by_step.tab", "The layer, step by step")  # the weights (only the open tab runs)
    at.normal = first_z(at, "step_by_step.weights")
    at.tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_dir))
    return at


@pytest.fixture(scope="module")
def fill(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    if not DEFAULT_WEIGHTS.is_file():  # as tests/app/test_fill_mask.py: a weights file made here
        from tests.support.mlm_weights import make_mlm_weights

        patch.setenv(WEIGHTS_ENV, str(make_mlm_weights(tmp_path_factory.mktemp("hostile-mlm") / "mlm.safetensors")))
    at = open_page("pages/mlm.py")
    at.normal = bars(at)
    yield at
    patch.undo()


@pytest.fixture(scope="module")
def positional():
    at = open_page("pages/positional.py")
    at.normal = first_z(at, "positional.learned_similarity")
    return at


@pytest.fixture(scope="module")
def finetune(tiny_bert_dir):
    at = open_page("pages/finetune.py", model_choice=OTHER_MODEL, model_other=str(tiny_bert_dir))
    assert builtin_counts_shown(at)
    return at


def builtin_counts_shown(at: AppTest) -> bool:
    return any("**348 training** (negative 174, positive 174)" in m for m in values(at, "markdown"))


def reset_fill(at: AppTest) -> AppTest:
    """Fill-mask's own model and sentences back to normal, so one failed case does not fail the next."""
    at.session_state["fill_mask.model_choice"] = MLM_MODEL
    at.session_state["fill_mask.text"] = NORMAL_MASKED
    at.session_state["fill_mask.rule_text"] = NORMAL
    at.session_state["fill_mask.tab"] = "Predictions"
    return drive(at)


def bars(at: AppTest) -> list[tuple[list[str], list[float]]]:
    """Every mask's bar chart on the Fill-mask page: (words, scores)."""
    found = []
    for number in range(64):
        try:
            spec = chart(at, f"fill_mask.bars{number}")
        except AssertionError:
            break
        found.append((spec["layout"]["yaxis"]["ticktext"], decode_plotly(spec["data"][0]["x"]).tolist()))
    return found


# ---- the shared sentence: Home, Attention Explorer, step by step ---------------------------------

SENTENCE_PAGES = {
    # page fixture, the chart with the current sentence's [query, key] weights, tokens the model reads
    "home": ("home", "home.view", 512),
    "explorer": ("explorer", "attention.renderer", 512),
    "step": ("step", "step_by_step.weights", 64),
}


def page_session(request, name: str) -> AppTest:
    at = request.getfixturevalue(SENTENCE_PAGES[name][0])
    if name == "explorer":  # other cases open other views
        at.session_state["attention.view"] = "heatmap"
    return at


def check_sentence_result(at: AppTest, page: str, tokenizer, text: str, pair: str | None) -> None:
    """The page shows the model's weights for exactly the tokens of ``text`` (and ``pair``)."""
    _, key, limit = SENTENCE_PAGES[page]
    n, cut = token_count(tokenizer, text, pair, limit)
    z = first_z(at, key)
    assert z.shape == (n, n), f"{z.shape} shown for {n} tokens"
    if (text, pair) != (NORMAL, None):  # the hostile input's weights, not the normal sentence's
        assert z.shape != at.normal.shape or not np.array_equal(z, at.normal)
    np.testing.assert_allclose(z.sum(1), 1.0, atol=row_sum_tolerance(key))
    if cut:
        message(at, "warning", f"at most {limit}")
    else:
        assert not at.warning, values(at, "warning")
    errors = values(at, "error")
    allowed = STEP_SECTION_ERRORS if page == "step" else ()
    assert all(any(a in e for a in allowed) for e in errors), errors


def check_recovers(at: AppTest, page: str) -> None:
    """Back to the normal sentence in the same session: the page shows what it showed at the start."""
    drive(at, text=NORMAL, pair="")
    assert_clean(at)
    assert not at.error and not at.warning, values(at, "error") + values(at, "warning")
    np.testing.assert_array_equal(first_z(at, SENTENCE_PAGES[page][1]), at.normal)


@pytest.mark.parametrize("name", SENTENCES)
@pytest.mark.parametrize("page", SENTENCE_PAGES)
def test_hostile_sentence(request, minilm_tokenizer, page, name):
    at = page_session(request, page)
    tokenizer = at.tokenizer if page == "step" else minilm_tokenizer
    text = SENTENCES[name]
    drive(at, text=text)
    assert_clean(at)
    if name in BLANK:
        message(at, "error", "is empty")
        assert at.session_state["shared.text"] == text  # the typed text is kept
    elif name == "250k-chars":
        message(at, "error", "the limit is 200,000")
        assert at.session_state["shared.text"] == text
    else:
        check_sentence_result(at, page, tokenizer, text, None)
    check_recovers(at, page)


@pytest.mark.parametrize("name", SECOND_BOX)
@pytest.mark.parametrize("page", SENTENCE_PAGES)
def test_hostile_second_sentence(request, minilm_tokenizer, page, name):
    at = page_session(request, page)
    tokenizer = at.tokenizer if page == "step" else minilm_tokenizer
    pair = SENTENCES[name]
    drive(at, text=NORMAL, pair=pair)
    assert_clean(at)
    if name == "250k-chars":
        message(at, "error", "second sentence has 250,000 characters")
        assert at.session_state["shared.pair"] == pair
    else:  # a blank second sentence (spaces or invisible characters only) means no pair
        check_sentence_result(at, page, tokenizer, NORMAL, None if name in BLANK else pair)
    check_recovers(at, page)


# ---- the model box ("Other: hub id or local folder"), shared by every page, and Fill-mask's own ---

def normal_model_result(at: AppTest, page: str) -> None:
    if page in SENTENCE_PAGES:
        check_recovers(at, page)
    elif page == "positional":
        drive(at)
        assert_clean(at)
        assert not at.error, values(at, "error")
        np.testing.assert_array_equal(first_z(at, "positional.learned_similarity"), at.normal)
    else:
        drive(at)
        assert_clean(at)
        assert not at.error and builtin_counts_shown(at)


@pytest.mark.parametrize("name", MODEL_IDS)
@pytest.mark.parametrize("page", [*SENTENCE_PAGES, "positional", "finetune"])
def test_hostile_model_id_in_the_sidebar(request, page, name):
    at = request.getfixturevalue(SENTENCE_PAGES[page][0] if page in SENTENCE_PAGES else page)
    model_id, expected = MODEL_IDS[name]
    drive(at, text="Keep this sentence.", model_choice=OTHER_MODEL, model_other=model_id)
    assert_clean(at)
    message(at, "error", expected or "No model given")
    if page != "finetune":  # the lab draws on after the error, and AppTest then forgets sidebar values
        assert at.session_state["shared.text"] == "Keep this sentence."
        assert at.session_state["shared.model_other"] == model_id
    if page == "positional":  # the model-free part of the page stays
        assert chart(at, "positional.table")
    normal_model_result(at, page)


@pytest.mark.parametrize("name", MODEL_IDS)
def test_hostile_model_id_on_fill_mask(fill, name):
    model_id, expected = MODEL_IDS[name]
    kept = "Keep this [MASK] please."
    reset_fill(fill)
    fill.text_area(key="fill_mask.text").set_value(kept).run()
    fill.selectbox(key="fill_mask.model_choice").set_value(OTHER_MODEL).run()
    fill.text_input(key="fill_mask.model_other").set_value(model_id).run()
    assert_clean(fill)
    if expected is None:
        message(fill, "warning", "Type a hub id or a local folder")
    else:
        message(fill, "error", expected)
    assert fill.text_input(key="fill_mask.model_other").value == model_id
    assert fill.session_state["fill_mask.text"] == kept  # the sentence box is not drawn, but kept
    fill.selectbox(key="fill_mask.model_choice").set_value(MLM_MODEL).run()
    assert_clean(fill)
    assert fill.text_area(key="fill_mask.text").value == kept and len(bars(fill)) == 1
    fill.text_area(key="fill_mask.text").set_value(NORMAL_MASKED).run()
    assert bars(fill) == fill.normal


# ---- Fill-mask: its own masked sentence and the masking-rule sentence ----------------------------

def masked_variant(name: str) -> str:
    """The hostile sentence with a mask added (blank ones as they are: they must stay blank)."""
    text = SENTENCES[name]
    return text if name in BLANK else f"{text} {MASK}."


FILL_CASES = {f"{name}+mask": masked_variant(name) for name in SENTENCES}
FILL_CASES.update({"no-mask-cjk": SENTENCES["cjk"], "17-masks": "[MASK] " * 17,
                   "lowercase-and-roberta-masks": "the [mask] sat on <MASK>.", "600-masks": SENTENCES["600-masks"]})


@pytest.mark.parametrize("name", FILL_CASES)
def test_hostile_masked_sentence(fill, minilm_tokenizer, name):
    text = FILL_CASES[name]
    reset_fill(fill)
    fill.text_area(key="fill_mask.text").set_value(text).run()
    assert_clean(fill)
    typed = len(TYPED_MASK.findall(text))
    prepared = TYPED_MASK.sub(MASK, text)
    ids = minilm_tokenizer(prepared)["input_ids"]
    shown_masks = ids[:512].count(minilm_tokenizer.mask_token_id)
    if name.split("+")[0] in BLANK:
        message(fill, "error", "is empty")
    elif name.startswith("250k"):
        message(fill, "error", "the limit is 200,000")
    elif typed == 0:
        message(fill, "error", "no mask")
    elif typed > 16:
        message(fill, "error", f"The text has {typed} masks")
    elif shown_masks == 0:
        message(fill, "error", "past the first 512")
    else:
        assert not fill.error, values(fill, "error")
        shown = bars(fill)
        assert len(shown) == shown_masks and all(len(words) == 5 for words, _ in shown)
        tokens = next(m for m in values(fill, "markdown") if m.startswith("Tokens: "))
        assert tokens.count("`") == 2 * min(len(ids), 512)  # every token shown, each in its own code span
    if fill.error:
        assert fill.text_area(key="fill_mask.text").value == text  # the typed text is kept
    fill.text_area(key="fill_mask.text").set_value(NORMAL_MASKED).run()
    assert_clean(fill)
    assert bars(fill) == fill.normal


@pytest.mark.parametrize("name", SECOND_BOX + ["empty", "special-tokens-only"])
def test_hostile_masking_rule_sentence(fill, name):
    text = SENTENCES[name]
    reset_fill(fill)
    open_tab(fill, "fill_mask.tab", "80/10/10 masking")  # ui/layout.py: only the open tab runs
    fill.text_area(key="fill_mask.rule_text").set_value(text).run()
    assert_clean(fill)
    if name in BLANK or name in ("special-tokens-only", "600-masks"):  # typed special tokens are never selected
        message(fill, "error", "is empty" if name in BLANK else "no ordinary tokens")
        assert fill.text_area(key="fill_mask.rule_text").value == text
    elif name == "250k-chars":
        message(fill, "error", "the limit is 200,000")
    else:
        assert not fill.error, values(fill, "error")
        assert chart(fill, "fill_mask.strip") and chart(fill, "fill_mask.rates")
    fill.text_area(key="fill_mask.rule_text").set_value(NORMAL).run()
    assert_clean(fill)
    assert not fill.error and chart(fill, "fill_mask.strip")
    assert bars(open_tab(fill, "fill_mask.tab", "Predictions")) == fill.normal


# ---- page-specific text boxes: Explorer's compare, step by step's padding batch ------------------

def test_every_explorer_view_with_a_markup_emoji_rtl_sentence(explorer):
    text = "<script>alert(1)</script> **b** $x^2$ <img src=x onerror=alert(1)> 👩‍👩‍👧‍👦 שלום \x1b[31m e\u0301"
    for view in ("heatmap", "grid", "lines", "bertviz", "aggregate", "values", "stats", "compare", "export"):
        explorer.session_state["attention.view"] = view
        drive(explorer, text=text)
        assert_clean(explorer)
        assert not explorer.error, (view, values(explorer, "error"))
        assert explorer.get("plotly_chart") or explorer.get("iframe") or explorer.get("bidi_component"), view
    explorer.session_state["attention.view"] = "heatmap"
    check_recovers(explorer, "explorer")


@pytest.mark.parametrize("name", SECOND_BOX + ["empty"])
def test_hostile_sentence_to_compare_with(explorer, minilm_tokenizer, name):
    text = SENTENCES[name]
    explorer.session_state["attention.view"] = "compare"
    explorer.session_state["attention.compare_mode"] = "sentences"
    explorer.session_state["attention.compare_text"] = text
    drive(explorer)
    assert_clean(explorer)
    if name in BLANK:
        message(explorer, "error", "is empty")
    elif name == "250k-chars":
        message(explorer, "error", "the limit is 200,000")
    else:
        assert not explorer.error, values(explorer, "error")
        n, _ = token_count(minilm_tokenizer, text, None, 512)
        second = chart(explorer, "attention.compare")["data"][1]  # the second of the figure's two maps
        assert decode_plotly(second["z"]).shape == (n, n)
    assert explorer.text_input(key="attention.compare_text").value == text
    explorer.session_state["attention.view"] = "heatmap"
    check_recovers(explorer, "explorer")


@pytest.mark.parametrize("name", SECOND_BOX + ["empty"])
def test_hostile_padding_sentence(step, name):
    text = SENTENCES[name]
    open_tab(step, "step_by_step.tab", "Masks")
    step.text_input(key="step_by_step.pad_other").set_value(text)
    drive(step)
    assert_clean(step)
    if name in BLANK:
        message(step, "error", "second sentence is empty")
    elif name == "250k-chars":
        message(step, "error", "the limit is 200,000")
    elif not any("same number of tokens" in e for e in values(step, "error")):
        assert not step.error, values(step, "error")
        padded = first_z(step, "step_by_step.padded")
        assert padded.shape[0] == padded.shape[1] and np.allclose(padded.sum(1), 1.0, atol=1e-4)
    assert step.text_input(key="step_by_step.pad_other").value == text
    np.testing.assert_array_equal(first_z(step, "step_by_step.bidir"), step.normal)  # the rest of the tab
    step.text_input(key="step_by_step.pad_other").set_value("It was tired.")
    drive(step)
    assert chart(step, "step_by_step.padded")
    open_tab(step, "step_by_step.tab", "The layer, step by step")
    check_recovers(step, "step")


# ---- links with hostile query parameters (each a fresh session: links are read on the first run) --

LONG_TEXT, TOO_LONG = SENTENCES["100k-chars"], SENTENCES["250k-chars"]
LINKS = {
    "layer-abc-head-minus-1": ("pages/attention.py", {"layer": "abc", "head": "-1"},
                               ("warning", "layer='abc' was not used: it must be a whole number")),
    "layer-999": ("pages/attention.py", {"layer": "999"},
                  ("warning", "layer='999' was not used: it must be a whole number from 1 to 6 here")),
    "layer-0-head-1.5": ("pages/attention.py", {"layer": "0", "head": "1.5"},
                         ("warning", "head='1.5' was not used: it must be a whole number")),
    "view-script": ("pages/attention.py", {"view": "<script>alert(1)</script>"}, ("warning", "it is one of heatmap")),
    "text-100k": ("pages/attention.py", {"text": LONG_TEXT}, ("warning", "at most 512")),
    "text-250k": ("pages/attention.py", {"text": TOO_LONG}, ("error", "the limit is 200,000")),
    "model-dot-dot": ("pages/attention.py", {"model": "../../x"}, ("error", "does not exist")),
    "home-pair-250k": (None, {"text": "<script>alert(1)</script>", "pair": TOO_LONG},
                       ("error", "second sentence has 250,000")),
    "home-model-passwd": (None, {"model": "/etc/passwd"}, ("error", "is a file")),
    "step-model-5000-chars": ("pages/inside.py", {"model": "x" * 5_000}, ("error", "too long")),
    "positional-model-dot-dot": ("pages/positional.py", {"model": "../../x"}, ("error", "does not exist")),
    "finetune-model-url": ("pages/finetune.py", {"model": "https://huggingface.co/bert-base-uncased"},
                           ("error", "give the hub id")),
    "fill-mask-600-masks": ("pages/mlm.py", {"masked": SENTENCES["600-masks"]}, ("error", "600 masks")),
    "fill-mask-model-dot-dot": ("pages/mlm.py", {"mlm": "../../x"}, ("warning", "mlm='../../x' was not used: Model "
                                                                               "folder '../../x' does not exist")),
    "fill-mask-model-nope": ("pages/mlm.py", {"mlm": "nope"}, ("warning", "mlm='nope' was not used: Could not load")),
}


@pytest.mark.parametrize("name", LINKS)
def test_hostile_link(new_app, tiny_bert_dir, name):
    page, params, (kind, part) = LINKS[name]
    at = new_app(**params).run()
    if page:  # AppTest keeps Home's rewritten address bar across switch_page; a browser has the link's
        at.query_params.clear()
        at.query_params.update(params)
        at.switch_page(page).run()
    assert_clean(at)
    message(at, kind, part)
    if "text" in params and kind == "error":
        assert at.session_state["shared.text"] == params["text"]  # the link's text is kept
    if page == "pages/mlm.py":  # its own sentence and model
        at.session_state["fill_mask.model_choice"] = MLM_MODEL
        at.session_state["fill_mask.text"] = NORMAL_MASKED
        at.run()
        assert_clean(at)
        assert not at.error and len(bars(at)) == 1
        return
    at.base = {"text": NORMAL, "pair": "", "model_choice": DEFAULT_MODEL, "model_other": ""}
    if page == "pages/inside.py":  # the tiny model keeps this quick
        at.base.update(model_choice=OTHER_MODEL, model_other=str(tiny_bert_dir))
    drive(at)
    if page == "pages/inside.py":
        open_tab(at, "step_by_step.tab", "The layer, step by step")
    assert_clean(at)
    assert not at.error, values(at, "error")
    if page in (None, "pages/attention.py", "pages/inside.py"):
        key = {None: "home.view", "pages/attention.py": "attention.renderer",
               "pages/inside.py": "step_by_step.weights"}[page]
        assert first_z(at, key).shape == (9, 9)
    elif page == "pages/positional.py":
        assert chart(at, "positional.learned_similarity")
    else:
        assert builtin_counts_shown(at)


# ---- the Fine-tuning lab: CSV uploads, the prediction box, the tiny Transformer's digits box ------

GOOD_CSV = ("text,label\n" + "".join(f"good thing {i},pos\nbad thing {i},neg\n" for i in range(10))).encode()
GOOD_COUNTS = "**16 training** (neg 8, pos 8) and **4 held-out**"


def rows(*pairs: tuple[str, str], repeat: int = 1) -> str:
    return "".join(f"{t},{label}\n" for _ in range(repeat) for t, label in pairs)


def spreadsheet() -> bytes:
    """A zip archive, as an .xlsx file is, with compressed (binary) content."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/sharedStrings.xml", "<sst>" + "".join(f"<si>row {i}</si>" for i in range(300)) + "</sst>")
    return buffer.getvalue()


CSVS = {
    "unbalanced-quotes": (b'text,label\n"this never ends,pos\nok,neg\n', "could not be read as CSV"),
    "latin-1": ("text,label\ncafé très bon,pos\nmauvais,neg\n".encode("latin-1"), "is not UTF-8"),
    "utf-16-with-bom": (("text,label\n" + rows(("très bon", "pos"), ("mauvais", "neg"), repeat=10)).encode("utf-16"),
                        None),
    "empty-file": (b"", "is empty"),
    "header-only": (b"text,label\n", "nothing to train on"),
    "one-column": (b"text\nhello\nworld\n", "only one column"),
    "semicolon-separated": (b"text;label\nhello;pos\nbye;neg\n", "only one column"),
    "other-column-names": (("sentence,stars\n" + rows(("nice", "5"), ("awful", "1"), repeat=10)).encode(), None),
    "one-class": (("text,label\n" + rows(("fine", "pos"), repeat=10)).encode(), "only one class"),
    "one-row": (b"text,label\nhello,pos\n", "only one class"),
    "two-rows": (b"text,label\nhello,pos\nbye,neg\n", "Too few rows"),
    "more-fields-than-header": (b"text,label\nhello, world,pos\nbye,neg\n", "more fields than"),
    "binary-renamed": (bytes(range(256)) * 8, "is not a text file"),
    "png-renamed": (b"\x89PNG\r\n\x1a\n" + bytes(300), "is not a text file"),
    "spreadsheet-renamed": (spreadsheet(), "is not a text file"),
    "utf-16-without-bom": (("text,label\n" + rows(("bon", "pos"), ("mauvais", "neg"), repeat=5)).encode("utf-16-le"),
                           "UTF-16 text without a byte-order mark"),
    "51-labels": (("text,label\n" + "".join(f"t{i},l{i}\n" for i in range(51))).encode(), "the limit is 20"),
    "text-over-5000-chars": (b"text,label\n" + b"a" * 6000 + b",pos\nb,neg\n", "longer than 5,000"),
    "markup-labels": (("text,label\n" + rows(("a", "<script>alert(1)</script>"), ("b", "**bold**"), repeat=5)).encode(),
                      None),
    "nul-and-control-bytes": (("text,label\n" + rows(("hel\x00lo \x1b[31m", "pos"), ("bye\x07", "neg"), repeat=5)
                               ).encode(), None),
}


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.file_uploader(key="finetune.upload").set_value((f"{name}.csv", data, "text/csv"))
    return drive(at)


@pytest.mark.parametrize("name", CSVS)
def test_hostile_csv_upload(finetune, name):
    data, expected = CSVS[name]
    if finetune.radio(key="finetune.source").value != "Upload a CSV":
        finetune.radio(key="finetune.source").set_value("Upload a CSV")
        drive(finetune)
    upload(finetune, name, data)
    assert_clean(finetune)
    if expected is None:
        assert not finetune.error, values(finetune, "error")
        counts = next(m for m in values(finetune, "markdown") if "training**" in m)
        if name == "markup-labels":  # shown as text, not as markup
            assert "\\<script\\>" in counts and "\\*\\*bold\\*\\*" in counts
        assert not finetune.button(key="finetune.train").disabled
    else:
        message(finetune, "error", expected)
        assert finetune.button(key="finetune.train").disabled
        assert finetune.file_uploader(key="finetune.upload").value.name == f"{name}.csv"  # still chosen
    upload(finetune, "good", GOOD_CSV)  # the next file works, whatever the last one was
    assert_clean(finetune)
    assert not finetune.error, values(finetune, "error")
    assert any(GOOD_COUNTS in m for m in values(finetune, "markdown"))
    assert not finetune.button(key="finetune.train").disabled


@pytest.fixture(scope="module")
def trained(finetune):
    """The lab after a short head-only run on the built-in data (the prediction box needs a model)."""
    finetune.radio(key="finetune.source").set_value("Built-in sentiment set")
    finetune.radio(key="finetune.mode").set_value("head")
    finetune.number_input(key="finetune.epochs").set_value(1)
    drive(finetune)
    finetune.button(key="finetune.train").click()
    drive(finetune)
    finetune.session_state["finetune.job"].join(120)
    drive(finetune)
    assert finetune.session_state["finetune.job"].status == "done"
    return finetune


def prediction(at: AppTest) -> str | None:
    return next((m for m in values(at, "markdown") if m.startswith("Prediction:")), None)


@pytest.mark.parametrize("name", SECOND_BOX + ["empty", "long-word-10k"])
def test_hostile_sentence_to_classify(trained, name):
    text = SENTENCES[name]
    trained.text_input(key="finetune.try").set_value(text)
    drive(trained)
    assert_clean(trained)
    if name in BLANK:
        message(trained, "warning", "is empty")
        assert prediction(trained) is None
    elif name == "250k-chars":
        message(trained, "warning", "the limit is 200,000")
    else:
        shown = prediction(trained)
        assert shown and ("negative" in shown or "positive" in shown)
    assert trained.text_input(key="finetune.try").value == text
    trained.text_input(key="finetune.try").set_value("What a lovely, kind waiter.")
    drive(trained)
    assert_clean(trained)
    assert prediction(trained)


TINY_DIGITS = {
    "empty": ("", "exactly 8 digits"),
    "too-few": ("1 2 3", "exactly 8 digits"),
    "letters": ("a b c d e f g h", "Type 8 digits"),
    "out-of-range": ("10 1 2 3 4 5 6 7", "exactly 8 digits"),
    "script-tag": ("<script>alert(1)</script>", "Type 8 digits"),
    "100k-chars": ("1 " * 50_000, "exactly 8 digits"),
    "arabic-indic-digits": ("١ ٢ ٣ ٤ ٥ ٦ ٧ ٨", None),  # int() reads them: a normal result
}


@pytest.fixture(scope="module")
def tiny_trained(finetune):
    finetune.number_input(key="finetune.tiny_steps").set_value(50)
    drive(finetune)
    finetune.button(key="finetune.tiny_train").click()
    drive(finetune)
    finetune.session_state["finetune.tiny_job"].join(60)
    drive(finetune)
    return finetune


@pytest.mark.parametrize("name", TINY_DIGITS)
def test_hostile_digits_for_the_tiny_transformer(tiny_trained, name):
    text, expected = TINY_DIGITS[name]
    key = "finetune.tiny_try_8"
    tiny_trained.text_input(key=key).set_value(text)
    drive(tiny_trained)
    assert_clean(tiny_trained)
    if expected:
        message(tiny_trained, "warning", expected)
    else:
        assert any(m.startswith("Model output:") for m in values(tiny_trained, "markdown"))
    assert tiny_trained.text_input(key=key).value == text
    tiny_trained.text_input(key=key).set_value("1 2 3 4 5 6 7 8")
    drive(tiny_trained)
    assert any(m.startswith("Model output:") for m in values(tiny_trained, "markdown"))
