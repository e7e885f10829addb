"""The notebook widget's JavaScript module (``vizcore.notebook``) in Chromium, driven through anywidget's
front-end contract: ``render({model, el})`` with a model that has ``get``, ``set``, ``save_changes``,
``send`` and ``on``/``off``. JupyterLab itself is not installed here; the host below is the smallest one
that keeps that contract, and the Python side of each message is the widget's own code."""

import pytest

from tests.e2e.conftest import ARTIFACTS, external_requests
from tests.support.synthetic import EVIL, synthetic_run
from vizcore.attention.payload import FULL_MAX_TOKENS
from vizcore.attention.renderer import script_json

HOST = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:12px">
<div id="cell"></div>
<script>
window.ESM = %s; window.PAYLOAD = %s;
window.sent = []; window.saved = [];
const handlers = {};
window.model = {
  values: {payload: window.PAYLOAD, selection: window.PAYLOAD.initial},
  get(name) { return this.values[name]; },
  set(name, value) { this.values[name] = value; },
  save_changes() { window.saved.push(JSON.parse(JSON.stringify(this.values.selection))); },
  send(message) { window.sent.push(message); },
  on(event, handler) { handlers[event] = handler; },
  off(event) { delete handlers[event]; },
  push(payload) { this.values.payload = payload; handlers["change:payload"] && handlers["change:payload"](); },
};
const url = URL.createObjectURL(new Blob([window.ESM], {type: "text/javascript"}));
import(url).then(function (module) {
  module.default.render({model: window.model, el: document.getElementById("cell")});
});
</script></body></html>"""
VIEW = ".ib-attention[data-head]"


@pytest.fixture
def widget_page(page):
    from vizcore.notebook import attention_widget

    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))

    def show(run, **kwargs):
        widget = attention_widget(run, **kwargs)
        page.set_content(HOST % (script_json(widget._esm), script_json(widget.payload)))
        page.wait_for_selector(VIEW)
        return widget
    return show


def test_the_widget_draws_switches_and_reports_its_selection(widget_page, page):
    widget_page(synthetic_run(layers=3, heads=4), layer=1, head=2)
    view = page.locator(VIEW)
    assert (view.get_attribute("data-layer"), view.get_attribute("data-head")) == ("2", "3")
    view.focus()
    view.press("ArrowLeft")
    view.press("ArrowDown")
    assert (view.get_attribute("data-layer"), view.get_attribute("data-head")) == ("3", "2")
    assert page.evaluate("window.saved") == [{"layer": 1, "head": 1, "view": "heatmap"},
                                             {"layer": 2, "head": 1, "view": "heatmap"}]
    page.get_by_role("button", name="Head view").click()
    assert EVIL in page.locator(".ib-token").all_text_contents()
    assert page.locator("img").count() == 0 and page.dialogs == []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "notebook-widget.png"), full_page=True)
    assert external_requests(page.requests_made) == []


def test_the_widget_asks_the_kernel_for_a_missing_layer_and_draws_it(widget_page, page):
    run = synthetic_run(layers=3, heads=2, pair=False, words=FULL_MAX_TOKENS)
    widget = widget_page(run, layer=0)
    view = page.locator(VIEW)
    view.focus()
    view.press("ArrowDown")
    assert view.get_attribute("data-layer") == "1"  # layer 2 is not in the widget yet
    assert "Loading layer 2" in page.locator(".ib-status").inner_text()
    assert page.evaluate("window.sent") == [{"type": "layer", "layer": 1}]
    widget._message(widget, page.evaluate("window.sent[0]"), [])  # the kernel's side of the message
    page.evaluate("payload => window.model.push(payload)", widget.payload)
    page.wait_for_selector(f"{VIEW}[data-layer='2']", timeout=10_000)  # drawn once inflated
    assert view.get_attribute("data-head") == "1"
