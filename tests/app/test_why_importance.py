"""AppTest: the Why? page's head importance, run as a background job on the shipped masked-LM with a few
sentences (and on a classifier fine-tuned on a tiny BERT), asserting on the maps and curves shown."""

import json
import time

import numpy as np
import pytest

from tests.app.conftest import decode_plotly
from vizcore.finetune.datasets import LabelledTexts, TrainTestData
from vizcore.finetune.training import FinetuneConfig, TrainingJob
from vizcore.model.loading import load_model

PAGE = "pages/why.py"
KEY_JOB = "why.importance.job"


def until_ended(at, timeout: float = 90):
    """Rerun the page (as its one-second poll does) until the job has ended; then once more."""
    deadline = time.monotonic() + timeout
    while not at.session_state[KEY_JOB].finished:
        assert time.monotonic() < deadline, "the importance job did not end in time"
        time.sleep(0.5)
        at.run()
    return at.run()


def charts(at) -> dict[str, dict]:
    """The page's plotly charts by title."""
    specs = [json.loads(element.proto.spec) for element in at.get("plotly_chart")]
    return {spec["layout"]["title"]["text"]: spec for spec in specs}


def chart(at, title_part: str) -> dict:
    found = [spec for title, spec in charts(at).items() if title_part in title]
    assert found, f"no chart titled {title_part!r} among {list(charts(at))}"
    return found[0]


def test_ranking_the_masked_lm_heads_shows_both_maps_their_correlation_and_the_pruning_curve(new_app):
    at = new_app(PAGE, part="importance", count="3").run()
    assert not at.exception and not at.error
    assert at.slider(key="why.importance.count").value == 3
    assert at.button(key="why.importance.stop").disabled
    at.button(key="why.importance.start").click().run()
    at = until_ended(at)
    job = at.session_state[KEY_JOB]
    assert job.status == "done", job.error
    result = job.result
    assert not at.exception and not at.error
    assert result.examples == 3 and result.gradient.shape == (6, 12)

    figure = chart(at, "Ablation")
    ablation, axes = figure["data"][0], figure["layout"]
    # 1-based labels: the axes' categories (plotly thins them to the chart's size)
    assert (axes["yaxis"]["title"]["text"], decode_plotly(ablation["y"])[0]) == ("layer", "1")
    assert (axes["xaxis"]["title"]["text"], decode_plotly(ablation["x"])[11]) == ("head", "12")
    np.testing.assert_allclose(decode_plotly(ablation["z"]), result.ablation[0], rtol=1e-6, atol=1e-7)
    assert "rank" in ablation["customdata"][0][0]
    gradient = chart(at, "Gradient")["data"][0]
    np.testing.assert_allclose(decode_plotly(gradient["z"]), result.gradient_normalised, rtol=1e-6)
    assert f"{result.correlation():.2f}" in chart(at, "Rank against rank")["layout"]["title"]["text"]

    pruning = chart(at, "Pruning")
    lines = {trace["name"]: decode_plotly(trace["y"]) for trace in pruning["data"]}
    assert len(lines) == 3 and all(values[0] == pytest.approx(result.plain[0]) for values in lines.values())
    assert pruning["layout"]["shapes"][0]["y0"] == pytest.approx(result.plain[0])  # the intact model's line

    at.radio(key="why.importance.gradient").set_value("raw").run()
    np.testing.assert_allclose(decode_plotly(chart(at, "Gradient")["data"][0]["z"]), result.gradient, rtol=1e-6)
    assert at.get("download_button")  # the JSON of result.to_dict(), strict JSON (no NaN)
    assert json.loads(json.dumps(result.to_dict(), allow_nan=False))["model"] == result.model
    assert at.query_params["target"] == "mlm" and at.query_params["count"] == "3"


def test_stop_ends_a_run_and_says_nothing_is_shown(new_app):
    at = new_app(PAGE, part="importance").run()
    at.slider(key="why.importance.count").set_value(30).run()
    at.button(key="why.importance.start").click().run()
    assert not at.button(key="why.importance.stop").disabled
    at.button(key="why.importance.stop").click().run()
    at = until_ended(at)
    assert at.session_state[KEY_JOB].status == "stopped"
    assert any("Stopped" in w.value for w in at.warning)
    assert not charts(at)


def test_the_classifier_target_explains_where_to_train_one_and_ranks_a_trained_one(new_app, tiny_bert_dir):
    at = new_app(PAGE, part="importance", target="classifier").run()
    assert any("Fine-tuning lab" in info.value for info in at.info)
    assert at.button(key="why.importance.start").disabled

    base = load_model(str(tiny_bert_dir), device="cpu")
    texts = ("A lovely meal.", "Great film.", "Kind staff.", "Cold soup.", "Dull film.", "Rude staff.")
    labels = np.array([1, 1, 1, 0, 0, 0])
    split = LabelledTexts(texts, labels, ("negative", "positive"))
    training = TrainingJob(base, TrainTestData(split, split, "test", "by hand"), FinetuneConfig(epochs=1)).start()
    training.join(60)
    at.session_state["finetune.job"] = training  # as if trained in this session's Fine-tuning lab
    at.run()
    assert at.slider(key="why.importance.count").max == len(texts)
    at.button(key="why.importance.start").click().run()
    at = until_ended(at)
    result = at.session_state[KEY_JOB].result
    assert result.target == "classifier" and result.metrics == ("loss", "accuracy")
    at.radio(key="why.importance.metric").set_value("accuracy").run()
    z = decode_plotly(chart(at, "Ablation")["data"][0]["z"])
    np.testing.assert_allclose(z, result.ablation[1], atol=1e-6)
    assert chart(at, "Ablation")["data"][0]["colorbar"]["title"]["text"] == "drop in accuracy"
