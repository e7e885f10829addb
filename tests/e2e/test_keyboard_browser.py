"""Keyboard only (issue 30 B): the main task of the Explorer, Fill-mask, Generate and the Fine-tuning lab, done with
Tab, typing, Enter and the arrow keys, never the mouse, at 1024 x 768. Every control the task needs is reached by
Tab from the top of the page (no trap on the way: Tab moves on), and each shows its focus: at least a ring's worth
of its pixels (its perimeter, and 5 px around it) changes colour by 3:1 or more when focus arrives (WCAG 1.4.11
and 2.4.7, measured on screenshots with the focus on and off, not read from the CSS).
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from tests.e2e.conftest import LAPTOP, screenshot, wait_until_idle

MOST_TABS = 60  # from the top of a page to any control a main task needs (the sidebar's 20 stops included)
# The focused control's name: its label, else its text without Material icons' ligature names (an expander's
# "keyboard_arrow_right", a button's "download": read aloud as nothing, shown as a glyph).
FOCUSED_NAME = """() => { const e = document.activeElement; if (!e || e === document.body) return '';
  const label = e.getAttribute('aria-label') || (e.labels && e.labels[0] && e.labels[0].innerText);
  if (label) return label.trim();
  const text = e.cloneNode(true);
  text.querySelectorAll('[data-testid=stIconMaterial]').forEach(icon => icon.remove());
  return text.textContent.trim(); }"""
# The focused control's box: a radio's or a slider's input is hidden (clipped to nothing), and react-aria marks the
# element drawn for it (the option's label, the thumb) with data-focus-visible: that one's box is the control's.
FOCUSED_BOX = """() => { const e = document.activeElement;
  const drawn = ['radio', 'range'].includes(e.type) && e.closest('[data-focus-visible]');
  const r = (drawn || e).getBoundingClientRect(); return [r.x, r.y, r.width, r.height] }"""


def luminance(rgb: np.ndarray) -> np.ndarray:
    c = rgb / 255.0
    c = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return 0.2126 * c[..., 0] + 0.7152 * c[..., 1] + 0.0722 * c[..., 2]


# Whether a CSS transition or animation is running on the element, inside it, or on a box that holds it (a clean clone
# once measured a button's ring while it was still drawing: 455 of its 541 px).
SETTLED = """e => !document.getAnimations().some(a => a.playState === 'running' && a.effect && a.effect.target
  && (a.effect.target.contains(e) || e.contains(a.effect.target)))"""


def settled(page, element) -> None:
    """Wait until nothing animates on, in or around ``element`` (a condition, no fixed wait)."""
    page.wait_for_function(SETTLED, arg=element, timeout=10_000)


def focus_ring(page) -> tuple[int, int]:
    """(pixels whose colour changes by 3:1 or more when focus leaves the focused element, its perimeter), both in
    CSS px (the window's scale is 1). Focus leaves by Shift+Tab and comes back by Tab: the keyboard's own way."""
    element = page.evaluate_handle("() => document.activeElement")
    settled(page, element)  # an expander opened by Enter still sliding, a ring still fading in
    x, y, width, height = page.evaluate(FOCUSED_BOX)
    clip = {"x": max(0, x - 5), "y": max(0, y - 5), "width": width + 10, "height": height + 10}

    def shot():
        return np.asarray(Image.open(io.BytesIO(page.screenshot(clip=clip))).convert("RGB"), dtype=float)

    focused = shot()
    page.keyboard.press("Shift+Tab")
    settled(page, element)  # its ring fading out
    unfocused = shot()
    page.keyboard.press("Tab")
    a, b = luminance(focused), luminance(unfocused)
    ratio = (np.maximum(a, b) + 0.05) / (np.minimum(a, b) + 0.05)
    return int((ratio >= 3).sum()), int(2 * (width + height))


def tab_to(page, name: str, key: str = "Tab") -> int:
    """Press Tab (or ``key``: Shift+Tab goes back) until the control named ``name`` has the focus, check that its
    focus shows, and return the presses."""
    seen = []
    for presses in range(1, MOST_TABS + 1):
        page.keyboard.press(key)
        seen.append(page.evaluate(FOCUSED_NAME)[:30])
        if seen[-1].startswith(name):
            changed, perimeter = focus_ring(page)
            assert changed >= perimeter, f"{name}: the focus changes {changed} px at 3:1, less than its {perimeter}"
            return presses
    raise AssertionError(f"{name!r} not reached in {MOST_TABS} presses of {key}; on the way: {seen}")


def open_page(page, app_url: str, path: str) -> None:
    page.set_viewport_size(LAPTOP)
    page.goto(f"{app_url}/{path}")
    page.wait_for_selector('[data-testid="stMainBlockContainer"] h1', timeout=180_000)
    wait_until_idle(page, timeout_s=180)
    page.evaluate("document.activeElement && document.activeElement.blur()")  # the keyboard starts at the top


def type_over(page, text: str, submit: str) -> None:
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.keyboard.press(submit)
    wait_until_idle(page)


def test_the_explorer_by_keyboard_a_new_sentence_then_another_layer_and_head(app_url, page):
    open_page(page, app_url, "attention")
    tab_to(page, "Sentence")  # the sidebar's
    type_over(page, "Keyboards can explore attention too.", "Control+Enter")
    tab_to(page, "Attention view")
    view = page.locator(".ib-attention")
    layer, head = int(view.get_attribute("data-layer")), int(view.get_attribute("data-head"))
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector(f'.ib-attention[data-layer="{layer + 1}"][data-head="{head + 1}"]', timeout=60_000)
    caption = view.locator("table caption").inner_text()
    assert caption.startswith(f"Layer {layer + 1}, head {head + 1}:")
    assert "keyboards" in view.locator("table").inner_text()  # the new sentence's weights, read as a table
    screenshot(page, "keyboard-explorer")


def test_fill_mask_by_keyboard(app_url, page):
    open_page(page, app_url, "fill-mask")
    tab_to(page, "Sentence with [MASK]")
    type_over(page, "Paris is the [MASK] of France.", "Control+Enter")
    assert "paris is the [MASK] of france ." in page.get_by_text("Tokens:").first.inner_text()
    assert page.locator(".js-plotly-plot .barlayer").count() >= 1
    tab_to(page, "Predictions")  # the tab list is one stop of Tab; its arrow keys move along it, Enter opens
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    page.wait_for_selector('[role=tab][aria-selected=true]:has-text("Layer by layer")')
    wait_until_idle(page)
    assert page.locator(".js-plotly-plot .heatmaplayer").count() >= 1
    screenshot(page, "keyboard-fill-mask")


def test_generate_by_keyboard(app_url, page):
    open_page(page, app_url, "generate")
    tab_to(page, "Prompt")
    type_over(page, "The children opened the", "Enter")
    assert page.get_by_label("Prompt").input_value() == "The children opened the"
    tab_to(page, "Next token")
    page.keyboard.press("Enter")
    wait_until_idle(page)
    assert "step=1" in page.url or "steps=1" in page.url, page.url  # one token drawn, as a click draws it
    screenshot(page, "keyboard-generate")


def test_the_fine_tuning_lab_by_keyboard_train_then_stop(app_url, page):
    open_page(page, app_url, "finetune")
    tab_to(page, "Train")
    page.keyboard.press("Enter")
    stop = page.get_by_test_id("stTabs").get_by_role("button", name="Stop", exact=True)
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stTabs] button')].some("
                           "b => b.innerText.trim() === 'Stop' && !b.disabled)", timeout=120_000)
    tab_to(page, "Stop") if page.evaluate(FOCUSED_NAME) != "Stop" else None
    page.keyboard.press("Enter")
    page.get_by_text("Stopped").first.wait_for(timeout=120_000)
    assert not stop.is_enabled()
    screenshot(page, "keyboard-finetune")


def test_why_by_keyboard_a_new_sentence_the_settings_a_head_off_and_another_question(app_url, page):
    """Why?'s ablation: the radio and the slider show their focus too (their inputs are hidden: Streamlit's own
    marks were a grey row at 1.1:1 and a pink halo), and each does its work from the keyboard."""
    open_page(page, app_url, "why")
    tab_to(page, "Sentence")
    type_over(page, "Paris is the capital of France.", "Control+Enter")
    assert page.get_by_text("Sentence: Paris is the capital of [MASK].").is_visible()
    tab_to(page, "output set to zero")
    page.keyboard.press("ArrowRight")
    wait_until_idle(page)
    assert page.get_by_label("output set to its mean").is_checked()
    tab_to(page, "Words shown (top-k)")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector('[data-testid=stSliderThumbValue]:has-text("9")')
    wait_until_idle(page)
    assert page.locator(".js-plotly-plot .barlayer .point").count() == 2 * 9  # every head, heads off
    tab_to(page, "1")  # the head grid's layer 1, head 1: one stop a row, Enter switches the head off
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.search.includes('heads=1')")
    wait_until_idle(page)
    assert not page.get_by_text("No head is switched off").is_visible()
    screenshot(page, "keyboard-why")
    tab_to(page, "Switch heads off", "Shift+Tab")  # the question, back up the page: arrows move, Enter chooses
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    page.wait_for_selector('[role=radio][aria-checked=true]:has-text("Head importance")')
    wait_until_idle(page)
    assert page.get_by_role("button", name="Start").is_visible()
