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
