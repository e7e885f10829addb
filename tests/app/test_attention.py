"""AppTest: the Attention Explorer page, each view, URL state and bad input, asserting on what is shown."""

import base64
import json

import numpy as np
import pytest

from tests.app.conftest import decode_plotly, plotly_traces, renderer_head, renderer_payload, set_shared
from ui.state import DEFAULT_TEXT
from vizcore.attention.extract import extract_attention
from vizcore.model.heads import default_head
from vizcore.model.loading import load_model

PAGE = "pages/attention.py"
QUANTUM = 1 / 255 + 1e-6  # the browser gets 8-bit weights (square-root scale)


@pytest.fixture(scope="module")
def reference():
    """The default sentence's attention computed directly, to check what the page shows."""
    return extract_attention(load_model("all-MiniLM-L6-v2", device="cpu"), DEFAULT_TEXT)


@pytest.fixture
def explorer(new_app):
    """The page opened like a shared link: app.py runs first (it reads text/pair/model), then the page.

    AppTest keeps the first run's address bar across switch_page (Home writes its own view there);
    a browser opening the link has the link's parameters, so they are set again.
    """
    def make(**params):
        at = new_app(**params).run()
        at.query_params.clear()
        at.query_params.update(params)
        at.switch_page(PAGE).run()
        at.pinned = {name: params[name] for name in ("text", "pair") if name in params}
        return at
    return make


def rerun(at):
    """Run again with the sidebar's sentence kept: AppTest forgets sidebar values on later runs of an
    st.navigation app (a real browser keeps them), so they are pinned through session state."""
    for name, value in getattr(at, "pinned", {}).items():
        at.session_state[f"shared.{name}"] = value
    return at.run()


def param(at, name):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def spec(at, index=0):
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def test_url_opens_the_given_layer_and_head_with_the_models_weights(explorer, reference):
    at = explorer(layer="2", head="3")
    assert not at.exception and not at.error
    assert not at.number_input  # the renderer's own steppers choose the head: one set of controls
    payload = renderer_payload(at)
    assert payload["initial"] == {"layer": 1, "head": 2, "view": "heatmap"}
    np.testing.assert_allclose(renderer_head(payload), reference.attention[1, 2], atol=QUANTUM)
    assert sorted(payload["layers"]) == [str(l) for l in range(6)]  # switches in the browser need no server
    assert not at.get("plotly_chart")
    assert param(at, "layer") == "2" and param(at, "head") == "3"
    assert param(at, "text") == DEFAULT_TEXT and param(at, "view") == "heatmap"


def test_the_server_views_sliders_and_the_renderer_share_one_selection(explorer, reference):
    at = explorer(view="aggregate")
    at.number_input(key="shared.layer").set_value(6)
    rerun(at)
    at.number_input(key="shared.head").set_value(12)
    rerun(at)
    assert param(at, "layer") == "6" and param(at, "head") == "12"
    at.radio(key="attention.view").set_value("heatmap")
    rerun(at)
    assert not at.number_input
    np.testing.assert_allclose(renderer_head(renderer_payload(at)), reference.attention[5, 11], atol=QUANTUM)
    assert param(at, "layer") == "6" and param(at, "head") == "12" and param(at, "view") == "heatmap"


def test_a_switch_in_the_browser_moves_the_selection_and_the_url(explorer):
    """What the component's callback does after a grid click (layer 4, head 5, back to the heatmap)."""
    from ui.attention_component import store_selection

    at = explorer(view="grid")
    before = renderer_payload(at)
    store_selection(at.session_state, "attention.renderer", {"layer": "shared.layer", "head": "shared.head",
                                                             "view": "attention.view"},
                    {"layer": 3, "head": 4, "view": "heatmap"})
    rerun(at)
    assert (at.session_state["shared.layer"], at.session_state["shared.head"]) == (4, 5)
    assert at.radio(key="attention.view").value == "heatmap"
    assert param(at, "layer") == "4" and param(at, "head") == "5" and param(at, "view") == "heatmap"
    assert renderer_payload(at) == before  # the browser already shows it: the same data, sent as a reference


def test_bad_url_values_are_reported_and_ignored(explorer):
    at = explorer(layer="99", head="x", view="nope")
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "layer='99'" in warnings and "head='x'" in warnings and "view='nope'" in warnings
    layer, _ = default_head(6, 12)
    assert at.session_state["shared.layer"] == layer + 1 and renderer_payload(at)["initial"]["layer"] == layer
    assert param(at, "layer") is None and param(at, "view") is None  # the refused values left the link


def test_grid_view_shows_every_head_and_highlights_the_selected_one(explorer, reference):
    at = explorer(view="grid", layer="4", head="7")
    payload = renderer_payload(at)
    assert payload["initial"] == {"layer": 3, "head": 6, "view": "grid"}
    n, grid = len(reference.tokens), payload["grid"]
    assert n <= 24 and grid["cells"] == n  # short sentence: shown at full resolution
    codes = np.frombuffer(base64.b64decode(grid["data"]), dtype=np.uint8).reshape(6, 12, n, n)
    np.testing.assert_allclose(codes[3, 6] / 255 * grid["max"], reference.attention[3, 6], atol=grid["max"] / 510)
    assert "Click a head" in at.caption[0].value


def test_pair_filter_and_hidden_specials_change_the_matrix(explorer):
    at = explorer(text="The cat sat.", pair="It was tired.")
    assert at.selectbox(key="attention.pair_filter").disabled is False
    at.selectbox(key="attention.pair_filter").set_value("A->B")
    rerun(at)
    payload = renderer_payload(at)
    assert payload["options"]["pairFilter"] == "A->B"  # the browser applies it (tests/e2e/test_renderer_browser.py)
    assert payload["segments"] == [0] * 6 + [1] * 5  # [CLS] the cat sat . [SEP] -> it was tired . [SEP]
    assert "A→B" in at.caption[0].value
    at.toggle(key="attention.hide_special").set_value(True)
    rerun(at)
    assert renderer_payload(at)["options"] == {"pairFilter": "A->B", "hideSpecial": True, "mergeWords": False}
    assert renderer_payload(at)["inputId"] == payload["inputId"]  # same input: the browser keeps its weights
    assert "renormalised" in at.caption[0].value


def test_merge_words_shows_whole_words(explorer):
    at = explorer(text="Tokenization is unbelievable.")
    at.toggle(key="attention.merge_words").set_value(True)
    rerun(at)
    payload = renderer_payload(at)
    assert payload["options"]["mergeWords"] is True
    assert [payload["wordLabels"][w] for w in sorted(set(payload["wordOf"]))] == [
        "[CLS]", "tokenization", "is", "unbelievable", ".", "[SEP]"]


def test_statistics_table_lists_every_head_and_a_row_opens_it(explorer, reference):
    at = explorer(view="stats")
    table = at.dataframe[0].value
    assert len(table) == 72
    row = table[(table["layer"] == 3) & (table["head"] == 4)].iloc[0]
    assert row["mass on self"] == pytest.approx(np.diagonal(reference.attention[2, 3]).mean(), abs=1e-6)
    cls_chart = spec(at, 0)["data"][0]
    np.testing.assert_allclose(cls_chart["y"] if isinstance(cls_chart["y"], list) else decode_plotly(cls_chart["y"]),
                               reference.attention[:, :, :, 0].mean((1, 2)), atol=1e-6)


def test_aggregations_show_head_mean_rollout_and_flow(explorer, reference):
    at = explorer(view="aggregate", layer="2")
    np.testing.assert_allclose(decode_plotly(plotly_traces(at)[0]["z"]), reference.attention[1].mean(0), atol=1e-6)
    at.radio(key="attention.aggregate").set_value("rollout")
    rerun(at)
    assert "Rollout" in at.caption[-1].value
    z = decode_plotly(plotly_traces(at)[0]["z"])
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-5)
    at.radio(key="attention.aggregate").set_value("flow")
    rerun(at)
    assert not at.exception
    assert "limited to 40 tokens" in at.caption[-1].value
    bars = plotly_traces(at)[0]
    assert len(bars["x"]) == len(reference.tokens)


def test_flow_is_refused_for_long_inputs_with_a_message(explorer):
    at = explorer(view="aggregate", text="word " * 60)
    at.radio(key="attention.aggregate").set_value("flow")
    rerun(at)
    assert not at.exception
    assert "at most 40 tokens" in at.info[0].value


@pytest.mark.parametrize("text, message", [("   ", "empty"), ("x" * 200_001, "limit")])
def test_bad_sentences_give_a_clear_error(explorer, text, message):
    at = explorer()
    set_shared(at, text=text)
    assert not at.exception
    assert message in at.error[0].value


def test_markup_in_the_sentence_reaches_the_view_as_data(explorer):
    at = explorer(text="<script>alert(1)</script> hi")
    tokens = renderer_payload(at)["tokens"]
    assert tokens[:4] == ["[CLS]", "<", "script", ">"]  # JSON data, set with textContent in the browser
    at.radio(key="attention.view").set_value("aggregate")
    rerun(at)
    labels = plotly_traces(at)[0]["x"]  # plotly charts escape it
    assert "&lt;" in labels and "<" not in "".join(labels)


def iframe_html(at, index=0):
    return at.get("iframe")[index].proto.srcdoc


def test_head_view_is_the_renderers_lines_view_of_the_selected_head(explorer, reference):
    at = explorer(view="lines", layer="5", head="2")
    payload = renderer_payload(at)
    assert payload["initial"] == {"layer": 4, "head": 1, "view": "lines"}
    np.testing.assert_allclose(renderer_head(payload), reference.attention[4, 1], atol=QUANTUM)
    assert "Hover or tap a token" in at.caption[0].value
    assert not at.get("iframe")  # no longer the separate HTML page


def test_bertviz_views_render_offline_and_limit_long_inputs(explorer):
    at = explorer(view="bertviz", text="<img src=x onerror=alert(1)> The cat sat.")
    for kind, marker in (("head", "head_view"), ("model", "total_heads"), ("neuron", "bertviz_params")):
        at.radio(key="attention.bertviz").set_value(kind)
        rerun(at)
        assert not at.exception, kind
        page = iframe_html(at)
        assert "d3js.org v5" in page and "cdnjs" not in page and "<img" not in page, kind
        assert marker in page or kind == "head", kind
    assert "offline" in at.caption[0].value
    at.pinned["text"] = "word " * 40  # 42 tokens: over the neuron view's limit of 32
    rerun(at)
    assert "limited here to 32 tokens" in at.info[0].value


def test_compare_two_sentences_shows_both_and_their_difference(explorer):
    at = explorer(view="compare", layer="3", head="4")
    assert at.text_input(key="attention.compare_text").value.endswith("too wide.")
    pair, difference = plotly_traces(at, 0), plotly_traces(at, 1)[0]  # the two maps are one figure
    first, second = (decode_plotly(t["z"]) for t in pair)
    np.testing.assert_allclose(decode_plotly(difference["z"]), first - second, atol=1e-6)
    assert any("tired/wide" in label for label in difference["x"])
    assert any("tired/wide" in label for label in pair[0]["y"]) and pair[0]["y"] == pair[1]["y"]  # one row of labels
    at.text_input(key="attention.compare_text").set_value("A much longer sentence with many more words in it.")
    rerun(at)
    assert "a difference needs the same number of tokens" in at.info[0].value


def test_compare_two_models_reports_a_model_that_cannot_load(explorer):
    at = explorer(view="compare")
    at.radio(key="attention.compare_mode").set_value("models")
    rerun(at)
    at.selectbox(key="attention.compare_model").set_value("bert-base-uncased")
    rerun(at)
    assert not at.exception
    assert at.error and "bert-base-uncased" in at.error[0].value


def test_export_offers_files_and_the_image_format(explorer):
    at = explorer(view="export", layer="2", head="5")
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["This head as CSV", "This head as JSON", "All heads as CSV", "All heads as JSON",
                      "Heatmap, grid and head view as HTML", "bertviz head view as HTML"]
    at.radio(key="attention.image_format").set_value("svg")
    rerun(at)
    config = json.loads(at.get("plotly_chart")[0].proto.config)
    assert config["toImageButtonOptions"]["format"] == "svg"


def test_export_limits_all_heads_files_for_long_inputs(explorer):
    at = explorer(view="export", text="word " * 140)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "All heads as CSV" not in labels and "This head as CSV" in labels
    assert "limited to 128 tokens" in at.info[0].value


def value_weighted_shares(layer: int, head: int) -> np.ndarray:
    """||alpha_ij f(x_j)|| of one head as row shares, from the embedded model's own forward: the value output
    read with a plain hook, W_O's columns of the head from the state dict (Kobayashi et al. 2020)."""
    import torch

    loaded = load_model("all-MiniLM-L6-v2", device="cpu")
    attention = loaded.model.encoder.layer[layer].attention
    read = {}
    handle = attention.self.value.register_forward_hook(lambda m, i, o: read.setdefault("v", o[0]))
    try:
        with torch.no_grad():
            output = loaded.model(**loaded.tokenizer(DEFAULT_TEXT, return_tensors="pt"), output_attentions=True)
    finally:
        handle.remove()
    d_head = read["v"].shape[-1] // loaded.num_heads
    columns = slice(head * d_head, (head + 1) * d_head)
    f = read["v"][:, columns] @ attention.output.dense.weight[:, columns].T  # (T, d)
    norms = output.attentions[layer][0, head, :, :, None] * f[None]  # (T, T, d): alpha_ij f(x_j)
    norms = norms.norm(dim=-1).numpy()
    return norms / norms.sum(-1, keepdims=True)


def test_value_weighted_view_shows_weights_beside_what_they_move(explorer, reference):
    at = explorer(view="values", layer="2", head="3")
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 5  # weights, norms, value lengths, sinks, residual norms
    np.testing.assert_allclose(decode_plotly(plotly_traces(at, 0)[0]["z"]), reference.attention[1, 2], atol=1e-6)
    shares = decode_plotly(plotly_traces(at, 1)[0]["z"])
    np.testing.assert_allclose(shares, value_weighted_shares(1, 2), atol=1e-5)
    assert spec(at, 1)["data"][0]["colorscale"] == spec(at, 0)["data"][0]["colorscale"]  # one colour scale
    assert spec(at, 1)["data"][0]["zmax"] == 1
    cls_weights = plotly_traces(at, 3)[0]
    assert cls_weights["name"] == "[CLS]: weights α"
    np.testing.assert_allclose(decode_plotly(cls_weights["y"]), reference.attention[..., 0].mean((1, 2)), atol=1e-6)
    residual = decode_plotly(plotly_traces(at, 4)[0]["z"])
    assert residual.shape == (reference.num_layers + 1, len(reference.tokens))
    assert param(at, "view") == "values"


def test_model_sizes_are_measured_on_the_button_only_with_counts_and_grids(explorer, monkeypatch, tiny_model_dir):
    from ui.attention import side_by_side as part
    from vizcore.finetune.tiny import TinyConfig, TinyTransformer
    from vizcore.model import install
    from vizcore.model.loading import load_model

    folder = str(tiny_model_dir("mpnet"))
    monkeypatch.setattr(part, "compared_models", lambda selected: (folder, "all-mpnet-base-v2", "tiny-transformer"))
    monkeypatch.setattr(part, "LENGTHS", (16, 100))
    monkeypatch.setattr(install, "installed_folder", lambda spec=None: None)
    measured = []
    monkeypatch.setattr(part, "measure", lambda names, device, real=part.measure: measured.append(names) or
                        real(names, device))
    app = explorer()
    assert not app.exception and not app.dataframe and not measured  # nothing measured on a rerun
    app.button(key="attention.sizes.measure").click().run()
    assert not app.exception and len(measured) == 1
    table = app.dataframe[0].value
    assert list(table.columns) == [folder, "all-mpnet-base-v2", "tiny-transformer"]
    totals = [sum(p.numel() for p in model.parameters())
              for model in (load_model(folder, device="cpu").model, TinyTransformer(TinyConfig()))]
    assert table.loc["total parameters", folder] == f"{totals[0]:,}"
    assert table.loc["total parameters", "tiny-transformer"] == f"{totals[1]:,}"
    assert "install-model all-mpnet-base-v2" in table.loc["layers", "all-mpnet-base-v2"]
    assert table.loc["forward, 100 tokens", folder] == "—" and table.loc["forward, 16 tokens", folder].endswith(" ms")
    assert table.loc["d_k = d / heads", folder] == "8"
    grid = renderer_payload(app, index=1)  # the Explorer's view first, then the open tab's grid
    assert grid["initial"]["view"] == "grid" and (grid["numLayers"], grid["numHeads"]) == (2, 4)
    rerun(app)
    assert len(measured) == 1 and app.dataframe[0].value.equals(table)  # a rerun shows the cached measurement
