"""AppTest: the Fine-tuning lab's question answering on a tiny random BERT, asserting on what the page shows
(figures, tables, spans) against independent computations."""

import json

import numpy as np
import pytest

from tests.app.conftest import set_shared
from tests.unit.test_finetune_qa import official_f1
from ui.feedback import plain
from ui.state import OTHER_MODEL
from vizcore.finetune.qa import QASet
from vizcore.finetune.qa_predict import answer_question
from vizcore.finetune.qa_task import QA

PAGE = "pages/finetune.py"


@pytest.fixture
def app(new_app, tiny_bert_dir):
    at = set_shared(new_app(PAGE).run(), model_choice=OTHER_MODEL, model_other=str(tiny_bert_dir))
    return at.radio(key="finetune.task").set_value("qa").run()


def html_of(at) -> str:
    return "".join(element.proto.body for element in at.get("html"))


def frame_with(at, column: str):
    """The value of the dataframe that has ``column`` (AppTest's dataframes carry no key)."""
    return next(frame.value for frame in at.dataframe if column in frame.value.columns)


def trained(app):
    app.number_input(key="finetune.qa.epochs").set_value(1).run()
    app.button(key="finetune.train").click().run()
    job = app.session_state["finetune.job"]
    job.join(180)
    assert job.status == "done"
    return job, app.run()


def test_the_builtin_questions_and_the_tasks_defaults_are_shown(app):
    assert not app.exception and not app.error
    assert any("**342 training questions** over 60 passages and **79 held-out** over 14" in m.value
               for m in app.markdown)
    assert app.number_input(key="finetune.qa.max_length").value == 384
    sample = app.expander[0]
    assert sample.label == "A passage and its questions: Honeybees"
    assert "How many queens does a colony normally have? → **a single queen** (characters 96 to 110)" in \
        [m.value for m in sample.markdown][1]
    app.radio(key="finetune.qa.source").set_value("Upload questions").run()
    assert any("Upload a file to continue" in i.value for i in app.info)
    assert app.button(key="finetune.train").disabled


def test_a_run_shows_scores_every_question_one_reading_and_your_own(app):
    job, app = trained(app)
    assert not app.exception, app.exception
    result, test = job.result, job.data.test
    assert app.metric[0].label == "Held-out token F1" and app.metric[0].value == f"{result.final_score:.1%}"
    assert app.metric[1].label == "Held-out exact match"
    scores = frame_with(app, "answers from")
    assert scores["answers from"].iloc[-1] == "the fine-tuned model"
    assert scores["token F1"].iloc[-1] == pytest.approx(result.scores["token_f1"])
    assert scores["token F1"].iloc[0] == pytest.approx(result.history.evals[0]["token_f1"])

    table = frame_with(app, "predicted")
    assert len(table) == 79 and table["token F1"].is_monotonic_increasing  # mistakes first
    gold = {e.question: e.answers[0].text for e in test.examples}
    recomputed = [official_f1(p, gold[q]) for q, p in zip(table["question"], table["predicted"])]
    assert np.allclose(recomputed, table["token F1"])
    assert table["token F1"].mean() == pytest.approx(result.scores["token_f1"])

    bars = [c for c in app.get("plotly_chart") if "Start and end probabilities" in c.proto.spec]
    assert len(bars) == 2  # a held-out question and your own
    page = html_of(app)
    assert "predicted answer" in page and "gold answer" in page
    assert app.selectbox(key="finetune.qa.example").value == table.index[0]  # the worst answer first

    spec = next(json.loads(c.proto.spec) for c in app.get("plotly_chart")
                if "Passage token vectors of 16 held-out questions" in c.proto.spec)
    shown = {t["name"]: len(t["customdata"]) for t in spec["data"] if t["xaxis"] == "x"}
    features = QA.encode(result.tokenizer, QASet(test.examples[:16]), job.config.max_length)
    passage = sum(f.passage[1] - f.passage[0] + 1 for f in features)
    answer_tokens = sum(f.end - f.start + 1 for f in features if f.start > 0)  # 0: cut off by the tiny window
    assert answer_tokens > 0
    assert shown == {"the gold answer": answer_tokens, "rest of the passage": passage - answer_tokens}


def test_your_own_passage_is_answered_and_an_empty_one_is_a_warning(app):
    job, app = trained(app)
    passage = "The bridge was opened in 1932 by the mayor of the city. It is made of steel."
    app.text_area(key="finetune.qa.try_passage").set_value(passage).run()
    app.text_input(key="finetune.qa.try_question").set_value("When was the bridge opened?").run()
    expected = answer_question(job.result.model, job.result.tokenizer, passage, "When was the bridge opened?",
                               job.result.config.max_length)
    assert any(m.value.startswith(f"Answer: **{plain(expected.answer)}**") for m in app.markdown)
    app.text_area(key="finetune.qa.try_passage").set_value("   ").run()
    assert not app.exception and any("Type a passage and a question" in w.value for w in app.warning)
