"""The client-side attention renderer in Chromium, through its standalone HTML file (no server needed):
its matrices equal Python's, the test contract (data-layer/data-head, arrow keys), hover, grid, head view,
user text as text, and nothing loaded from the network."""

import itertools

import numpy as np
import pytest

from tests.e2e.conftest import LEGEND_PX, external_requests, screenshot
from tests.support.synthetic import EVIL, synthetic_run
from vizcore.attention.aggregate import PAIR_FILTERS, ViewOptions, apply_view
from vizcore.attention.payload import FULL_MAX_TOKENS, attention_payload, decode_layer, dequantise, quantise
from vizcore.attention.renderer import attention_view_html
from vizcore.colours import ATTENTION

VIEW = "#attention-view"


@pytest.fixture
def opened(page):
    """``opened(run, **kwargs)`` loads that run's standalone HTML file; dialogs and page errors are recorded."""
    page.dialogs, page.errors = [], []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: page.errors.append(str(error)))

    def open_run(run, **kwargs):
        page.set_content(attention_view_html(run, **kwargs))
        page.wait_for_selector(f"{VIEW}[data-head]")
        return page
    return open_run


def shown(page):
    return page.get_attribute(VIEW, "data-layer"), page.get_attribute(VIEW, "data-head")


JS_MATRIX = """async ([p, layer, head, options]) => {
    const codes = await InsideBertAttention.inflate(p.layers[layer]);
    const m = InsideBertAttention.viewMatrix(p, codes, head, options);
    return m.empty ? null : {values: Array.from(m.values), rows: m.rows.map(g => g.label),
                             cols: m.cols.map(g => g.label), rowSegments: m.rows.map(g => g.segment)};
}"""


def test_the_javascript_matrices_equal_pythons_for_every_filter(opened):
    run = synthetic_run(layers=2, heads=3)
    page = opened(run)
    payload = attention_payload(run)
    weights = decode_layer(payload["layers"]["1"], run.num_heads, len(run.tokens))  # what the browser has
    for pair_filter, hide, merge in itertools.product(PAIR_FILTERS, (False, True), (False, True)):
        options = ViewOptions(pair_filter, hide, merge)
        expected, rows, cols = apply_view(weights[2], run.tokens, run.offsets, run.special_mask, run.segment_ids,
                                          options)
        got = page.evaluate(JS_MATRIX, [payload, "1", 2, {"pairFilter": pair_filter, "hideSpecial": hide,
                                                           "mergeWords": merge}])
        values = np.array(got["values"]).reshape(expected.shape)
        np.testing.assert_allclose(values, expected, atol=1e-5, err_msg=str(options))
        assert got["rows"] == rows.tokens and got["cols"] == cols.tokens
        assert got["rowSegments"] == rows.segments.tolist()
    assert page.errors == []


def test_arrow_keys_switch_head_and_layer_and_the_element_says_what_it_drew(opened):
    page = opened(synthetic_run(layers=3, heads=4), layer=1, head=2)
    assert shown(page) == ("2", "3")
    assert page.evaluate(f"document.querySelector('{VIEW}').tabIndex") == 0
    page.focus(VIEW)
    for key, expected in (("ArrowRight", ("2", "4")), ("ArrowRight", ("2", "4")), ("ArrowLeft", ("2", "3")),
                          ("ArrowDown", ("3", "3")), ("ArrowUp", ("2", "3")), ("ArrowUp", ("1", "3"))):
        page.keyboard.press(key)
        assert shown(page) == expected, key
    assert page.locator(".ib-title").inner_text() == "synthetic · layer 1, head 3 · 12 tokens"


def test_the_heatmaps_text_alternative_is_a_table_of_its_largest_weights_and_follows_the_keys(opened):
    """What a screen reader reads instead of the canvas (issue 30 B): the head's 20 largest weights, largest
    first, as query, key and weight; the same numbers the canvas draws (8-bit, as the browser has them)."""
    run = synthetic_run(layers=2, heads=3)
    page = opened(run, layer=1, head=2)
    for key, head in ((None, 2), ("ArrowLeft", 1)):
        if key:
            page.focus(VIEW)
            page.keyboard.press(key)
        weights = dequantise(quantise(run.attention[1, head]))
        _, rows, cols = apply_view(weights, run.tokens, run.offsets, run.special_mask, run.segment_ids, ViewOptions())
        order = sorted(range(weights.size), key=lambda i: (-weights.flat[i], i))[:20]
        expected = [[rows.tokens[i // weights.shape[1]], cols.tokens[i % weights.shape[1]], f"{weights.flat[i]:.3f}"]
                    for i in order]
        table = page.locator(f"{VIEW} table")
        assert table.locator("caption").inner_text().startswith(f"Layer 2, head {head + 1}: the 20 largest of ")
        assert table.locator("th").all_inner_texts() == ["query", "key", "weight"]
        got = [row.locator("td").all_text_contents() for row in table.locator("tbody tr").all()]
        assert got == expected, key
        label = page.locator(f"{VIEW} canvas").first.get_attribute("aria-label")
        assert label.startswith(f"heatmap of layer 2, head {head + 1}:") and "largest weights" in label
    assert page.evaluate("getComputedStyle(document.querySelector('#attention-view .ib-sr')).clip") != "auto"


def test_in_the_grid_arrow_keys_move_the_frame_and_enter_opens_that_head(opened):
    page = opened(synthetic_run(layers=3, heads=4), view="grid")
    page.focus(VIEW)
    for key in ("ArrowDown", "ArrowRight", "ArrowRight"):
        page.keyboard.press(key)
    assert page.get_attribute(VIEW, "data-view") == "grid" and shown(page) == ("2", "3")
    assert "frame is on layer 2, head 3" in page.locator(f"{VIEW} canvas").first.get_attribute("aria-label")
    page.keyboard.press("Enter")
    assert page.get_attribute(VIEW, "data-view") == "heatmap" and shown(page) == ("2", "3")
    assert page.errors == []


def test_hover_shows_query_key_and_weight_with_markup_as_text(opened):
    run = synthetic_run(layers=1, heads=1)
    page = opened(run)
    canvas = page.locator(f"{VIEW} canvas").first
    box = canvas.bounding_box()
    # The cell of query 4 (the markup token) and key 5 ("cat"): 40 px cells at this size, labels left and
    # above, the legend (LEGEND_PX) right and 8 px below.
    n = len(run.tokens)
    left_edge = box["x"] + box["width"] - LEGEND_PX - n * 40
    top_edge = box["y"] + box["height"] - 8 - n * 40
    page.mouse.move(left_edge + 5 * 40 + 20, top_edge + 4 * 40 + 20)
    tip = page.locator(".ib-tip")
    weight = dequantise(quantise(run.attention[0, 0, 4, 5]))
    assert tip.inner_text() == f"query: {EVIL}\nkey: cat\nweight: {weight:.3f}"
    assert page.locator("img").count() == 0 and page.dialogs == []


JS_PIXELS = """([n, cells]) => {
    const canvas = document.querySelector("#attention-view canvas");
    const width = parseFloat(canvas.style.width), height = parseFloat(canvas.style.height);
    const ratio = canvas.width / width, ctx = canvas.getContext("2d");
    return cells.map(([q, k]) => Array.from(ctx.getImageData(Math.floor((width - 170 - n * 40 + k * 40 + 20) * ratio),
        Math.floor((height - 8 - n * 40 + q * 40 + 20) * ratio), 1, 1).data.slice(0, 3)));
}"""


def test_each_cell_is_drawn_in_the_python_scales_colour(opened):
    """The canvas paints a weight in ``colours.ATTENTION``'s colour for it on 0..1, as the plotly figures and
    their PNG/SVG exports do: the Explorer on screen looks like its exports and like Compare."""
    run = synthetic_run(layers=1, heads=1)
    page = opened(run)
    n = len(run.tokens)
    cells = [(q, k) for q in range(0, n, 3) for k in range(n)]
    drawn = page.evaluate(JS_PIXELS, [n, cells])
    for (q, k), rgb in zip(cells, drawn):
        weight = float(dequantise(quantise(run.attention[0, 0, q, k])))
        expected = ATTENTION.colour_at(weight, (0.0, 1.0))
        assert max(abs(a - int(expected[i:i + 2], 16)) for a, i in zip(rgb, (1, 3, 5))) <= 1, (q, k, rgb, expected)


def test_grid_click_opens_that_head_and_the_head_view_focuses_a_token(opened):
    page = opened(synthetic_run(layers=3, heads=4), view="grid")
    page.get_by_role("button", name="All heads").wait_for()
    assert page.get_attribute(VIEW, "data-view") == "grid"
    canvas = page.locator(f"{VIEW} canvas").first
    box = canvas.bounding_box()
    pitch = (box["width"] - LEGEND_PX - 36) / 4  # row labels "L3" are about 36 px
    page.mouse.click(box["x"] + 36 + 2.5 * pitch, box["y"] + 32 + 1.5 * pitch)  # layer 2, head 3
    assert page.get_attribute(VIEW, "data-view") == "heatmap" and shown(page) == ("2", "3")
    page.get_by_role("button", name="Head view").click()
    tokens = page.locator(".ib-token")
    assert EVIL in tokens.all_text_contents()
    tokens.nth(5).click()  # the query "cat"
    assert page.locator(".ib-status").inner_text().startswith("‘cat’ attends most to")
    assert page.locator(".ib-token.ib-dim").count() == tokens.count() - 1
    assert page.locator("img").count() == 0 and page.dialogs == [] and page.errors == []


def test_above_128_tokens_the_file_holds_one_layer_and_says_so(opened):
    run = synthetic_run(layers=2, heads=2, pair=False, words=FULL_MAX_TOKENS)
    page = opened(run, layer=1)
    assert shown(page) == ("2", "1")
    page.focus(VIEW)
    page.keyboard.press("ArrowUp")
    assert shown(page) == ("2", "1")  # not drawn: the element still names what is on screen
    assert "Layer 1 is not in this file" in page.locator(".ib-status").inner_text()
    page.get_by_role("button", name="All heads").click()
    assert page.get_attribute(VIEW, "data-view") == "grid"


def test_filters_in_the_file_change_the_drawn_matrix_and_nothing_leaves_the_machine(opened):
    page = opened(synthetic_run())
    page.get_by_role("checkbox", name="Hide [CLS]/[SEP]").check()
    page.get_by_role("checkbox", name="Merge word pieces").check()
    page.get_by_label("Pair").select_option("A->B")
    assert "[CLS]/[SEP] hidden" in page.locator(".ib-title").inner_text()
    screenshot(page, "renderer-standalone-filters")
    assert external_requests(page.requests_made) == [] and page.errors == []


BINARY_MOUNT = """async (bytes) => {
    const el = document.createElement("div");
    el.id = "binary-view";
    document.body.appendChild(el);
    const message = new Uint8Array(bytes.length + 7);  // Streamlit hands over a view into a larger message
    message.set(bytes, 7);
    InsideBertAttention.mount(el, message.subarray(7));
    const p = InsideBertAttention.readPayload(message.subarray(7));
    const codes = await InsideBertAttention.inflate(p.layers["1"]);
    return Array.from(InsideBertAttention.viewMatrix(p, codes, 2, p.options).values);
}"""


def test_the_binary_form_the_app_sends_draws_the_same_weights(opened):
    """The Streamlit component sends ``binary_payload`` (no base64): the renderer reads it to the same matrix."""
    from vizcore.attention.payload import binary_payload

    run = synthetic_run(layers=2, heads=3)
    page = opened(run)
    payload = attention_payload(run, layer=1, head=2)
    values = page.evaluate(BINARY_MOUNT, list(binary_payload(payload)))
    expected = decode_layer(payload["layers"]["1"], run.num_heads, len(run.tokens))[2]
    np.testing.assert_allclose(np.array(values).reshape(expected.shape), expected, atol=1e-6)
    page.wait_for_selector("#binary-view[data-head='3'][data-layer='2']")
    assert page.locator("#binary-view img").count() == 0  # the header's tokens (EVIL among them) stay text
    assert page.errors == [] and page.dialogs == []


FRESH_INPUT = """async ([first, second]) => {
    const el = document.createElement("div");
    el.id = "fresh-view";
    document.body.appendChild(el);
    const view = InsideBertAttention.mount(el, first);
    while (!el.dataset.head) await new Promise(done => setTimeout(done, 5));
    view.update(second);  // another sentence: its layers unpack in the background
    return {layer: el.dataset.layer || null, stale: el.querySelectorAll(".ib-stage.ib-stale canvas").length};
}"""


def test_a_new_input_dims_the_last_drawing_until_its_own_is_drawn(opened):
    first, second = synthetic_run(layers=2, heads=3, words=6), synthetic_run(layers=2, heads=3, words=9)
    page = opened(first)
    payloads = [attention_payload(run, layer=1, head=2) for run in (first, second)]
    assert page.evaluate(FRESH_INPUT, payloads) == {"layer": None, "stale": 1}  # dimmed, and not claimed
    page.wait_for_selector("#fresh-view[data-layer='2'][data-head='3']")
    assert page.locator("#fresh-view .ib-stale").count() == 0
    assert f"{len(second.tokens)} tokens" in page.locator("#fresh-view .ib-title").inner_text()


NO_INFLATE = """(payload) => {
    const inflate = window.DecompressionStream;
    delete window.DecompressionStream;  // a browser older than Chrome 80, Firefox 113, Safari 16.4
    const el = document.createElement("div");
    el.id = "old-browser";
    document.body.appendChild(el);
    InsideBertAttention.mount(el, payload);
    return new Promise(done => setTimeout(() => { window.DecompressionStream = inflate; done(); }, 200));
}"""


def test_a_browser_that_cannot_inflate_says_so_and_draws_nothing(opened):
    run = synthetic_run(layers=2, heads=3)
    page = opened(run)
    page.evaluate(NO_INFLATE, attention_payload(run, layer=1, head=2))
    page.wait_for_function("document.querySelector('#old-browser .ib-status').textContent.includes('cannot')")
    status = page.locator("#old-browser .ib-status").inner_text()
    assert "Layer 2 cannot be shown" in status and "DecompressionStream" in status
    assert page.locator("#old-browser").get_attribute("data-head") is None
    assert page.errors == []
