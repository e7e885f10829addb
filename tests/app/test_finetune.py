"""AppTest: the Fine-tuning lab on a tiny random BERT (fast), asserting on what the page shows; sessions
sharing the server's one job queue."""

import json

import numpy as np
import pytest
import torch

from tests.app.conftest import decode_plotly, set_shared
from ui.jobs import job_queue
from ui.state import OTHER_MODEL
from vizcore.finetune import training as finetune

PAGE = "pages/finetune.py"


@pytest.fixture
def session(new_app, tiny_bert_dir):
    """``session()`` -> one more browser session on the page, with the tiny BERT chosen."""

    def make():
        at = new_app(PAGE).run()
        return set_shared(at, model_choice=OTHER_MODEL, model_other=str(tiny_bert_dir))

    return make


@pytest.fixture
def app(session):
    return session()


def chart(at, title_part: str) -> dict:
    for element in at.get("plotly_chart"):
        spec = json.loads(element.proto.spec)
        if title_part in spec["layout"]["title"]["text"]:
            return spec
    raise AssertionError(f"no chart titled {title_part!r}")


def train(at, timeout: float = 120):
    at.button(key="finetune.train").click().run()
    job = at.session_state["finetune.job"]
    job.join(timeout)
    assert job.finished and not job.running
    return job, at.run()


def test_page_shows_the_builtin_data_and_default_settings(app):
    assert not app.exception and not app.error
    assert app.title[0].value == "Fine-tuning lab"
    assert any("**348 training** (negative 174, positive 174) and **88 held-out**" in m.value for m in app.markdown)
    assert app.radio(key="finetune.mode").value == "head"
    assert app.number_input(key="finetune.lr_head").value == pytest.approx(2e-3)
    assert app.button(key="finetune.stop").disabled


def test_head_only_run_shows_accuracy_confusion_examples_and_no_head_change(app):
    app.number_input(key="finetune.epochs").set_value(2).run()
    job, app = train(app)
    assert not app.exception and job.status == "done"
    result = job.result
    accuracy = result.final_score
    assert app.metric[0].label == "Held-out accuracy" and app.metric[0].value == f"{accuracy:.1%}"
    confusion = decode_plotly(chart(app, "Confusion matrix")["data"][0]["z"])
    assert confusion.sum() == 88 and np.trace(confusion) / 88 == pytest.approx(accuracy)
    assert app.metric[1].label == "Held-out macro-F1" and app.metric[1].value == f"{result.scores['macro_f1']:.3f}"
    assert app.metric[3].value == f"{result.steps_done}/{result.total_steps}" == "44/44"
    table = app.dataframe[0].value
    assert len(table) == 88 and list(table.columns) == ["text", "label", "prediction", "confidence", "correct"]
    assert (table["correct"] == "✓").sum() == round(accuracy * 88)
    assert any("No head changed" in i.value for i in app.info)  # a frozen encoder keeps every attention weight
    pca = chart(app, "PCA")
    assert {trace["name"] for trace in pca["data"]} == {"negative", "positive"}


def test_full_run_changes_heads_and_shows_before_and_after_maps(app):
    app.radio(key="finetune.mode").set_value("full").run()
    app.number_input(key="finetune.epochs").set_value(1).run()
    app.number_input(key="finetune.lr_full").set_value(1e-3).run()
    job, app = train(app)
    change = decode_plotly(chart(app, "Change of each head's attention")["data"][0]["z"])
    assert change.shape == (2, 4) and change.max() > 0
    before = chart(app, "before fine-tuning · layer")
    after = chart(app, "after fine-tuning · layer")
    z_before, z_after = decode_plotly(before["data"][0]["z"]), decode_plotly(after["data"][0]["z"])
    assert z_before.shape == z_after.shape and not np.allclose(z_before, z_after)
    layer, head = np.unravel_index(change.argmax(), change.shape)
    assert f"layer {layer + 1}, head {head + 1}" in before["layout"]["title"]["text"]  # the most-changed head


def test_try_your_own_sentence_and_empty_sentence(app):
    app.number_input(key="finetune.epochs").set_value(1).run()
    job, app = train(app)
    app.text_input(key="finetune.try").set_value("What a lovely, kind waiter.").run()
    shown = [m.value for m in app.markdown if m.value.startswith("Prediction:")]
    probabilities = job.result.classifier(
        {k: v for k, v in job.loaded.tokenizer("What a lovely, kind waiter.", return_tensors="pt").items()}
    ).softmax(-1)[0].detach()
    best = int(torch.argmax(probabilities))
    assert shown == [f"Prediction: **{job.result.label_names[best]}** ({float(probabilities[best]):.1%})"]
    app.text_input(key="finetune.try").set_value("   ").run()
    assert not app.exception and "empty" in app.warning[0].value


def test_stop_keeps_the_partial_model(app):
    app.radio(key="finetune.mode").set_value("full").run()
    app.number_input(key="finetune.epochs").set_value(100).run()
    app.button(key="finetune.train").click().run()
    job = app.session_state["finetune.job"]
    while job.running and (job.snapshot()[0] is None or job.snapshot()[0].step < 2):
        job.join(0.05)
    app.button(key="finetune.stop").click().run()
    job.join(60)
    app.run()
    assert job.status == "stopped" and job.result.steps_done < job.result.total_steps
    assert any("Stopped" in w.value for w in app.warning)
    assert app.metric[3].value == f"{job.result.steps_done}/{job.result.total_steps}"


def test_upload_choice_asks_for_a_file(app):
    app.radio(key="finetune.source").set_value("Upload a CSV").run()
    assert not app.exception
    assert any("Upload a CSV to continue" in i.value for i in app.info)
    assert app.button(key="finetune.train").disabled


def test_unknown_model_is_a_clear_error_and_the_tiny_transformer_still_works(app):
    set_shared(app, model_choice=OTHER_MODEL, model_other="/no/such/model")
    assert not app.exception and "does not exist" in app.error[0].value
    app.number_input(key="finetune.tiny_steps").set_value(50).run()
    app.button(key="finetune.tiny_train").click().run()
    job = app.session_state["finetune.tiny_job"]
    job.join(60)
    app.run()
    assert not app.exception
    assert any("step 50/50" in p.proto.text for p in app.get("progress"))
    grid = chart(app, "Attention on")
    assert len(grid["data"]) == 2 * 4 and "at step 50" in grid["layout"]["title"]["text"]
    app.text_input(key="finetune.tiny_try_8").set_value("1 2 3").run()
    assert "exactly 8 digits" in app.warning[0].value


def infos(at) -> list[str]:
    return [element.value for element in at.info]


def test_a_second_session_waits_in_line_with_its_place_shown_and_runs_when_the_first_stops(session, monkeypatch):
    monkeypatch.setattr(job_queue(), "max_running", 1)  # the cap of a 2-core server, whatever runs the test
    first, second, third = session(), session(), session()
    first.radio(key="finetune.mode").set_value("full").run()
    first.number_input(key="finetune.epochs").set_value(100).run()
    first.button(key="finetune.train").click().run()
    long_run = first.session_state["finetune.job"]
    assert long_run.status == "running"

    second.number_input(key="finetune.epochs").set_value(1).run()
    second.button(key="finetune.train").click().run()
    waiting = second.session_state["finetune.job"]
    assert waiting.status == "waiting" and not second.exception
    assert any("**1st in line**" in text for text in infos(second))
    second.run()  # the next run (a poll) draws the buttons of a session whose run is in line
    assert second.button(key="finetune.train").disabled and not second.button(key="finetune.stop").disabled
    third.button(key="finetune.train").click().run()
    assert any("**2nd in line**" in text for text in infos(third))

    third.button(key="finetune.stop").click().run()  # Stop while waiting: out of the line, never runs
    assert third.session_state["finetune.job"].status == "stopped" and not third.exception
    assert any("Stopped before it started" in w.value for w in third.warning)
    assert not third.button(key="finetune.train").disabled
    assert any("**1st in line**" in text for text in infos(second.run()))

    first.button(key="finetune.stop").click().run()
    long_run.join(60)
    waiting.join(120)  # started by itself when the first run's slot freed, and ran its epoch
    second.run()
    assert long_run.status == "stopped" and waiting.status == "done"
    assert not infos(second) or not any("in line" in text for text in infos(second))
    assert second.metric[0].label == "Held-out accuracy"
    assert second.metric[0].value == f"{waiting.result.final_score:.1%}"


def test_a_run_that_fails_says_why_and_the_page_keeps_working(app, monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise RuntimeError("not enough memory: you tried to allocate 9 GB")

    monkeypatch.setattr(finetune, "train_task", out_of_memory)
    job, app = train(app)
    assert job.status == "error" and not app.exception
    assert [e.value for e in app.error] == [
        "Training failed: RuntimeError: not enough memory: you tried to allocate 9 GB"]
    assert not app.button(key="finetune.train").disabled and app.button(key="finetune.stop").disabled
    assert not app.metric  # no results from a run that failed


def test_the_tiny_transformer_text_says_what_the_model_is(app):
    text = next(m.value for m in app.markdown if "written from scratch" in m.value)
    assert "post-norm encoder layers, LayerNorm(x + sublayer(x))" in text and "pre-norm" not in text


def test_the_pair_task_trains_on_the_builtin_pairs_and_shows_the_segments(app):
    app.radio(key="finetune.task").set_value("pair").run()
    assert not app.exception and not app.error
    assert any("**384 training** (contradiction 128, entailment 128, neutral 128) and **96 held-out**" in m.value
               for m in app.markdown)
    assert app.number_input(key="finetune.pair.max_length").value == 128  # the pair task's own default
    app.radio(key="finetune.pooling").set_value("cls").run()
    app.number_input(key="finetune.epochs").set_value(1).run()
    job, app = train(app)
    assert not app.exception and job.status == "done" and job.task.name == "pair"
    assert job.config.pooling == "cls" and job.result.model.pooling == "cls"
    assert app.metric[0].label == "Held-out accuracy" and app.metric[0].value == f"{job.result.final_score:.1%}"
    table = app.dataframe[0].value
    assert len(table) == 96 and list(table.columns)[:3] == ["text", "second", "label"]
    strip = chart(app, "[CLS] A [SEP] B [SEP]")["data"][0]
    segments = [v for row in decode_plotly(strip["z"]).tolist() for v in row if v == v]  # NaN: empty cells
    pair = job.data.test
    tokens = job.result.tokenizer.tokenize(pair.texts[0]), job.result.tokenizer.tokenize(pair.second[0])
    assert segments == [0] * (len(tokens[0]) + 2) + [1] * (len(tokens[1]) + 1)
    app.text_input(key="finetune.pair.try_b").set_value("   ").run()
    assert any("second sentence" in w.value for w in app.warning)  # an empty B is named, not a traceback
