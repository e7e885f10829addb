"""AppTest: the "Attention, step by step" page, asserting the numbers shown against the model's own."""

import json

import numpy as np
import pytest
import torch

from tests.app.conftest import decode_plotly, set_shared
from tests.app.conftest import open_tab as open_tab_of
from ui.state import DEFAULT_TEXT, OTHER_MODEL
from vizcore.attention.extract import extract_attention
from vizcore.model.heads import default_head
from vizcore.model.loading import DEFAULT_MODEL, load_model

PAGE = "pages/inside.py"
LAYER, HEAD = (i + 1 for i in default_head(6, 12))  # where every page opens for all-MiniLM-L6-v2 (1-based)


@pytest.fixture
def app(new_app):
    return new_app(PAGE).run()


@pytest.fixture(scope="module")
def minilm():
    return load_model(DEFAULT_MODEL, device="cpu")


def chart(at, key: str) -> dict:
    for element in at.get("plotly_chart"):
        if element.proto.id.endswith(key) or key in element.proto.id:
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart {key!r}")


def open_tab(at, label: str):
    return open_tab_of(at, "step_by_step.tab", label)


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_only_the_open_tab_runs_and_a_value_set_in_a_tab_survives_a_visit_to_another(app):
    assert [tab.label for tab in app.tabs] == ["Input embeddings", "The layer, step by step", "Why √d_k", "Masks",
                                               "Word order", "Neurons"]
    assert len(app.get("plotly_chart")) == 5  # the embeddings' five matrices, not the other tabs' 20 charts
    assert "max |Δ| vs the model's own layer-1 input" in metrics(app)
    open_tab(app, "Why √d_k")
    assert {element.proto.id.rsplit("-", 1)[-1] for element in app.get("plotly_chart")} == {
        "step_by_step.variance", "step_by_step.softmax"}
    app.select_slider(key="step_by_step.dk").set_value(256).run()
    open_tab(app, "Word order")
    assert "Var(q·k / √d_k)" not in metrics(app) and "the same, with position embeddings" in metrics(app)
    open_tab(app, "Why √d_k")
    assert app.select_slider(key="step_by_step.dk").value == 256 and "Var(q·k), 2,000 random pairs" in metrics(app)


def test_default_sentence_every_check_passes_and_weights_are_the_models(app, minilm):
    assert not app.exception and not app.error
    shown = metrics(app)
    for label in (f"max |Δ| attention, layer {LAYER} head {HEAD}", "max |Δ| attention, all 12 heads",
                  f"max |Δ| layer {LAYER} output",
                  "max |Δ| vs the model's own layer-1 input", "max |output − model's own hidden state|"):
        assert float(shown[label]) <= 1e-5, label
        if label.startswith("max |Δ| vs"):  # the last check is the next tab's
            shown = metrics(open_tab(app, "The layer, step by step"))
    own = extract_attention(minilm, DEFAULT_TEXT).attention
    weights = decode_plotly(chart(app, "step_by_step.weights")["data"][0]["z"])
    np.testing.assert_allclose(weights, own[LAYER - 1, HEAD - 1], atol=1e-5)
    assert "shape 16 × 16" in chart(app, "step_by_step.weights")["layout"]["title"]["text"]
    assert "shape 16 × 1536" in chart(app, "step_by_step.ffn1")["layout"]["title"]["text"]
    assert "shape 16 × 32" in chart(app, "step_by_step.q")["layout"]["title"]["text"]


def test_layer_and_head_steppers_are_one_based(app, minilm):
    app.number_input(key="shared.layer").set_value(4).run()
    app.number_input(key="shared.head").set_value(7).run()
    assert not app.exception
    shown = metrics(app)
    assert float(shown["max |Δ| attention, layer 4 head 7"]) <= 1e-5 and float(shown["max |Δ| layer 4 output"]) <= 1e-5
    open_tab(app, "The layer, step by step")
    weights = decode_plotly(chart(app, "step_by_step.weights")["data"][0]["z"])
    np.testing.assert_allclose(weights, extract_attention(minilm, DEFAULT_TEXT).attention[3, 6], atol=1e-5)
    open_tab(app, "Masks")
    causal = decode_plotly(chart(app, "step_by_step.causal")["data"][0]["z"])
    assert np.triu(causal, 1).max() == 0.0 and np.allclose(causal.sum(1), 1.0, atol=1e-5)


def test_embedding_parts_table_and_pair_segments(app):
    set_shared(app, text="The cat sat.", pair="It slept.")
    assert not app.exception
    ids = app.dataframe[0].value
    assert list(ids.iloc[0]) == ["[CLS]", "the", "cat", "sat", ".", "[SEP]", "it", "slept", ".", "[SEP]"]
    assert list(ids.loc["segment id"]) == ["0"] * 6 + ["1"] * 4
    assert float(metrics(app)["max |Δ| vs the model's own layer-1 input"]) <= 1e-5


def test_sqrt_dk_demo_measures_the_variance(app):
    open_tab(app, "Why √d_k")
    app.select_slider(key="step_by_step.dk").set_value(256).run()
    shown = metrics(app)
    assert float(shown["Var(q·k), 2,000 random pairs"].replace(",", "")) == pytest.approx(256, rel=0.12)
    assert float(shown["Var(q·k / √d_k)"]) == pytest.approx(1.0, rel=0.12)
    bars = chart(app, "step_by_step.softmax")["data"]
    assert "entropy" in bars[0]["name"] and "√256" in bars[1]["name"]


def test_padding_demo_and_its_bad_input(app):
    shown = metrics(open_tab(app, "Masks"))
    assert shown["Largest weight on the 10 [PAD] keys (all layers, heads)"] == "0.0e+00"
    assert float(shown["max |Δ| vs the sentence run alone (real tokens)"]) <= 1e-5
    padded = decode_plotly(chart(app, "step_by_step.padded")["data"][0]["z"])
    assert padded.shape == (16, 16) and padded[:, 6:].max() == 0.0
    app.text_input(key="step_by_step.pad_other").set_value("").run()
    assert not app.exception and "empty" in app.error[0].value
    assert "Weight on later keys (largest), masked" in metrics(app)  # the rest of the tab still runs


def test_permutation_demo(app):
    shown = metrics(open_tab(app, "Word order"))
    assert float(shown["max |f(shuffled) − shuffled f(original)|, no positions"]) <= 1e-5
    assert float(shown["the same, with position embeddings"]) > 0.5
    before = app.text[0].value
    app.number_input(key="step_by_step.seed").set_value(5).run()
    assert app.text[0].value != before and app.text[0].value.startswith("Shuffled: [CLS]")


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_sentence_is_a_clear_message(app, text):
    set_shared(app, text=text)
    assert not app.exception and "empty" in app.error[0].value


def test_markup_emoji_and_a_one_word_sentence(app):
    set_shared(app, text="<script>alert(1)</script> 🦊")
    assert not app.exception and float(metrics(app)[f"max |Δ| layer {LAYER} output"]) <= 1e-5
    assert "[UNK]" in app.dataframe[0].value.iloc[0].tolist()
    set_shared(app, text="Hello")
    open_tab(app, "Word order")
    assert not app.exception and "two different words" in app.error[0].value


def test_100k_characters_are_truncated_with_a_warning_and_still_exact(app):
    set_shared(app, text="many words here " * 6250)
    assert not app.exception
    assert "at most 512" in app.warning[0].value
    assert float(metrics(app)[f"max |Δ| layer {LAYER} output"]) <= 1e-5


def test_decoder_shows_its_own_causal_pattern(app, tiny_model_dir):
    set_shared(app, model_choice=OTHER_MODEL, model_other=str(tiny_model_dir("gpt2")))
    assert not app.exception
    assert "decoder" in app.warning[0].value
    assert metrics(app)["Largest weight on a later key (0 = causal)"] == "0.0e+00"


def test_unknown_model_is_a_clear_message(app):
    set_shared(app, model_choice=OTHER_MODEL, model_other="/no/such/model")
    assert not app.exception and "does not exist" in app.error[0].value



def test_mpnet_layer_shows_its_relative_bias_and_every_check_passes(app, tiny_model_dir):
    import torch

    folder = tiny_model_dir("mpnet")
    set_shared(app, model_choice=OTHER_MODEL, model_other=str(folder))
    shown = metrics(open_tab(app, "The layer, step by step"))
    assert not app.exception and not app.error
    checks = [label for label in shown if label.startswith("max |")]
    assert len(checks) == 5 and all(float(shown[label]) <= 1e-5 for label in checks), shown
    layer, head = default_head(2, 4)  # where the page opens for a 2 x 4 model (0-based here)
    encoder = load_model(str(folder), device="cpu").model.base_model.encoder
    bias = decode_plotly(chart(app, "step_by_step.bias")["data"][0]["z"])
    with torch.no_grad():  # transformers' own bias for this many tokens
        own = encoder.compute_position_bias(torch.zeros(1, len(bias), 1))[0, head].numpy()
    np.testing.assert_allclose(bias, own, atol=1e-5)
    assert "QKᵀ/√8 + B + mask" in chart(app, "step_by_step.weights")["layout"]["title"]["text"]


def test_the_neurons_tab_shows_the_sentence_s_strongest_neurons_and_its_factors(app, minilm):
    """Against the default model's feed-forward activations read with a hook of the test's own."""
    read = {}
    block = minilm.model.encoder.layer[LAYER - 1].intermediate
    handle = block.register_forward_hook(lambda m, i, o: read.__setitem__("a", o.detach()))
    try:
        with torch.inference_mode():
            minilm.model(**minilm.tokenizer(DEFAULT_TEXT, return_tensors="pt"))
    finally:
        handle.remove()
    activations = read["a"][0].numpy()  # (T, d_ff)
    at = open_tab(app, "Neurons")
    assert not at.exception, [e.value for e in at.exception]
    strongest = next(f.value for f in at.dataframe if "activation" in f.value.columns)
    words = activations[1:-1]  # without [CLS] and [SEP]
    assert strongest["activation"].iloc[0] == pytest.approx(words.max(), abs=1e-4)
    assert strongest["neuron"].iloc[0] == np.unravel_index(words.argmax(), words.shape)[1] + 1
    bars = chart(at, "step_by_step.neuron_bars")["data"][0]
    np.testing.assert_allclose(decode_plotly(bars["y"]), activations[:, strongest["neuron"].iloc[0] - 1], atol=1e-4)
    assert "5 factors of layer" in chart(at, "step_by_step.factors_heatmap")["layout"]["title"]["text"]
    assert len(next(f.value for f in at.dataframe if "factor" in f.value.columns)) == 5
