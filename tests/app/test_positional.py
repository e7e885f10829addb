"""AppTest: the Positional encoding page, asserting on the numbers it shows."""

import json
import math

import numpy as np
import pytest
import torch

from tests.app.conftest import decode_plotly, set_shared
from ui.state import OTHER_MODEL
from vizcore.model.loading import DEFAULT_MODEL, load_model

PAGE = "pages/positional.py"


@pytest.fixture
def app(new_app):
    return new_app(PAGE).run()


def chart(at, title_part: str) -> dict:
    """The first trace of the plotly chart whose title contains ``title_part``."""
    for element in at.get("plotly_chart"):
        spec = json.loads(element.proto.spec)
        if title_part in spec["layout"]["title"]["text"]:
            return spec
    raise AssertionError(f"no chart titled {title_part!r}")


def test_default_table_worked_example_and_offset_error(app):
    assert not app.exception and not app.error
    spec = chart(app, "Sinusoidal encoding, 64 positions × d_model 128")
    z = decode_plotly(spec["data"][0]["z"])
    assert z.shape == (64, 128) and "shape 64 × 128" in spec["layout"]["title"]["text"]
    assert z[5, 0] == pytest.approx(math.sin(5), abs=1e-6)
    assert z[9, 3] == pytest.approx(math.cos(9 / 10000 ** (2 / 128)), abs=1e-6)
    table = app.table[0].value
    expected = [f"{math.sin(5):.6f}", f"{math.cos(5):.6f}"]
    assert list(table["value from the table"]) == expected == ["-0.958924", "0.283662"]
    assert any("sin 5 ≈ **-0.959**" in m.value and "cos 5 ≈ **0.284**" in m.value for m in app.markdown)
    metric = app.metric[0]
    assert "M_3" in metric.label and "61 positions" in metric.label and float(metric.value) < 1e-12


def test_similarity_choice_and_offset_slider(app):
    app.radio(key="positional.similarity").set_value("dot").run()
    z = decode_plotly(chart(app, "Dot similarity")["data"][0]["z"])
    np.testing.assert_allclose(np.diag(z), 64.0, rtol=1e-6)  # d_model / 2
    app.slider(key="positional.offset").set_value(10).run()
    assert "M_10" in app.metric[0].label and "54 positions" in app.metric[0].label
    m = decode_plotly(chart(app, "M_10")["data"][0]["z"])
    assert m[0, 0] == pytest.approx(math.cos(10), abs=1e-6) and m[0, 1] == pytest.approx(math.sin(10), abs=1e-6)


def test_smaller_d_model_drops_dimensions_that_are_gone(app):
    app.number_input(key="positional.length").set_value(10).run()
    app.number_input(key="positional.d_model").set_value(4).run()
    assert not app.exception and not app.error
    assert app.multiselect(key="positional.dims").value == [0, 1]
    waves = chart(app, "waves")["data"]
    assert len(waves) == 2 and decode_plotly(waves[0]["y"])[5] == pytest.approx(math.sin(5), abs=1e-9)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("positional.length", 0, "between 1 and 2,048"),
    ("positional.length", 100000, "got 100,000"),
    ("positional.d_model", 7, "must be even"),
    ("positional.d_model", 0, "between 2 and 1,024"),
])
def test_bad_sizes_show_a_clear_message(app, key, value, message):
    app.number_input(key=key).set_value(value).run()
    assert not app.exception
    assert message in app.error[0].value
    assert not app.get("plotly_chart")


def test_learned_positions_are_the_embedded_models_own(app):
    weight = load_model(DEFAULT_MODEL, device="cpu").model.embeddings.position_embeddings.weight[:64]
    expected = torch.nn.functional.cosine_similarity(weight[:, None], weight[None, :], dim=-1).numpy()
    z = decode_plotly(chart(app, "Learned · shape")["data"][0]["z"])
    np.testing.assert_allclose(z, expected, atol=1e-5)
    assert any("512 positions × 384 dimensions" in m.value for m in app.markdown)
    scatter = chart(app, "Learned: PCA")["data"][0]
    assert scatter["text"][0] == "0"
    app.checkbox(key="positional.skip_first").check().run()
    scatter = chart(app, "Learned: PCA")["data"][0]
    assert scatter["text"][0] == "1" and len(scatter["text"]) == 63


def test_unknown_model_errors_but_the_sinusoidal_part_stays(app):
    set_shared(app, model_choice=OTHER_MODEL, model_other="/no/such/model")
    assert not app.exception
    assert "does not exist" in app.error[0].value
    assert chart(app, "Sinusoidal encoding")


def open_modern(at, tab: str):
    at.session_state["positional.modern"] = tab  # what a click on the lazy tab does (ui/layout.py)
    return at.run()


def test_rotary_tab_shows_scores_constant_along_each_diagonal(app):
    assert app.session_state["positional.modern"] == "Rotary (RoPE)"  # the first tab opens by default
    app.number_input(key="positional.rotary_positions").set_value(20).run()
    z = decode_plotly(chart(app, "Rotary scores")["data"][0]["z"]).astype(np.float64)
    assert z.shape == (20, 20)
    for offset in (-19, -3, 0, 5, 19):
        diagonal = np.diagonal(z, offset)
        assert np.ptp(diagonal) < 1e-5 * max(1.0, np.abs(diagonal).max())
    assert np.ptp(z) > 0.1  # but the score does change with the offset
    metrics = {m.label: float(m.value) for m in app.metric if "Largest" in m.label}
    assert len(metrics) == 2 and max(metrics.values()) < 1e-12
    app.number_input(key="positional.rotary_dim").set_value(7).run()
    assert not app.exception and "even number" in app.error[0].value


def test_alibi_tab_adds_the_slopes_bias_to_the_models_own_attention(app):
    open_modern(app, "ALiBi")
    assert not app.exception and not app.error
    slopes = decode_plotly(chart(app, "ALiBi slopes for 12 heads")["data"][0]["y"])
    expected = [2 ** (-8 * h / 8) for h in range(1, 9)] + [2 ** (-8 * h / 16) for h in (1, 3, 5, 7)]
    np.testing.assert_allclose(slopes, expected, rtol=1e-12)
    app.session_state["shared.head"] = 10
    app.run()
    before = decode_plotly(chart(app, "The model's attention")["data"][0]["z"]).astype(np.float64)
    after_spec = chart(app, "With −")
    after = decode_plotly(after_spec["data"][0]["z"]).astype(np.float64)
    slope = 2 ** (-8 * 3 / 16)  # head 10: the third slope of 16 heads, every other
    assert f"With −{slope:.4g}" in after_spec["layout"]["title"]["text"]
    t = before.shape[0]
    reweighted = before * np.exp(-slope * np.abs(np.subtract.outer(np.arange(t), np.arange(t))))
    np.testing.assert_allclose(after, reweighted / reweighted.sum(1, keepdims=True), atol=1e-5)
    assert "Average distance" in app.metric[-1].label


def test_relative_tab_says_how_to_install_or_reads_the_models_own_bias(app, tmp_path, monkeypatch, tiny_model_dir):
    from transformers import AutoModel

    from ui.positional.page import get_relative
    from vizcore.model import install

    get_relative.clear()
    monkeypatch.setenv("VIZCORE_MODELS_DIR", str(tmp_path))
    open_modern(app, "Learned relative bias")
    assert not app.exception and "install-model all-mpnet-base-v2" in app.info[0].value
    folder = tiny_model_dir("mpnet")  # stands in for the installed model: its own file, read as the page reads it
    monkeypatch.setattr(install, "installed_folder", lambda spec: folder)
    app.run()
    weight = AutoModel.from_pretrained(folder).encoder.relative_attention_bias.weight.detach().numpy()
    z = decode_plotly(chart(app, "bias per head and bucket")["data"][0]["z"])
    np.testing.assert_allclose(z, weight.T, atol=1e-6)
    lines = chart(app, "bias by offset")["data"]
    assert [line["name"] for line in lines] == ["head 1", "head 2", "head 3"]
    get_relative.clear()
