"""AppTest: the lab's token classification (NER) task on a tiny random BERT: the silver/held-out data said
plainly, CoNLL uploads with their messages, and a run's results checked against independent computations."""

from __future__ import annotations

import json

import pytest
import torch

from tests.app.conftest import set_shared
from ui.state import OTHER_MODEL
from vizcore.finetune.entities import entity_scores
from vizcore.finetune.token_task import predict_entities, predict_tags

PAGE = "pages/finetune.py"
KEY = "finetune.token."
GOOD = "".join(f"Name{i}\tB-PER\nvisited\tO\nNew\tI-LOC\nYork\tI-LOC\n\n" for i in range(12)).encode()


@pytest.fixture
def app(new_app, tiny_bert_dir):
    at = set_shared(new_app(PAGE).run(), model_choice=OTHER_MODEL, model_other=str(tiny_bert_dir))
    return at.radio(key="finetune.task").set_value("token").run()


def table(at, column: str):
    """The first dataframe on the page with this column (AppTest does not keep a dataframe's key)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def html_of(at) -> list[str]:
    return [element.proto.body for element in at.get("html")]


def test_builtin_data_says_the_training_labels_are_silver(app):
    assert not app.exception and not app.error
    assert any("silver, not gold" in i.value and "spaCy" in i.value for i in app.info)
    assert any("**2,000 training sentences**" in m.value and "**131 held-out**" in m.value for m in app.markdown)
    counts = table(app, "held-out entities")
    assert counts.set_index("entity type")["held-out entities"].to_dict() == {"LOC": 131, "MISC": 55, "ORG": 58,
                                                                              "PER": 71}
    assert app.number_input(key="finetune.token.max_length").value == 128


def test_a_run_shows_scores_alignment_spans_examples_and_try_your_own(app):
    app.number_input(key="finetune.token.epochs").set_value(1).run()
    app.number_input(key="finetune.token.max_length").set_value(64).run()
    app.button(key="finetune.train").click().run()
    job = app.session_state["finetune.job"]
    job.join(300)
    app.run()
    assert not app.exception and job.status == "done" and job.task.name == "token"
    result, test = job.result, job.data.test
    assert app.metric[0].label == "Held-out entity F1" and app.metric[0].value == f"{result.final_score:.1%}"

    predicted = predict_tags(result.model, result.tokenizer, test.words, 64, result.label_names)
    expected = entity_scores([test.tag_strings(i) for i in range(len(test))], predicted)
    scores = table(app, "support")
    assert scores["support"].tolist() == [s.support for s in expected] == [131, 55, 58, 71, 315]
    assert scores["F1"].tolist() == pytest.approx([s.f1 for s in expected])
    assert scores["F1"].iloc[-1] == pytest.approx(result.scores["entity_f1"])
    spec = next(json.loads(c.proto.spec) for c in app.get("plotly_chart")
                if "entity scores by type" in json.loads(c.proto.spec)["layout"]["title"]["text"])
    assert [t["name"] for t in spec["data"]] == ["precision", "recall", "F1"]
    assert spec["data"][2]["x"] == ["LOC", "MISC", "ORG", "PER", "all (micro)"]
    assert spec["data"][2]["y"] == pytest.approx([s.f1 for s in expected])

    pages = html_of(app)
    tokens = result.tokenizer(list(test.words[0]), is_split_into_words=True)
    alignment = next(h for h in pages if "[CLS]" in h)
    assert alignment.count("-100") == len(tokens["input_ids"]) - len(test.words[0])  # all but the first pieces

    examples = table(app, "mistakes")
    assert len(examples) == 131 and examples["mistakes"].is_monotonic_decreasing

    spec = next(json.loads(c.proto.spec) for c in app.get("plotly_chart")
                if "Word vectors of 40 held-out sentences" in json.loads(c.proto.spec)["layout"]["title"]["text"])
    shown = {t["name"]: len(t["customdata"]) for t in spec["data"] if t["xaxis"] == "x"}  # the "before" panel
    gold = [tag for i in range(40) for tag in test.tag_strings(i)]
    assert shown == {kind: sum(t == "O" if kind == "O" else t[2:] == kind for t in gold)
                     for kind in ("O", "LOC", "MISC", "ORG", "PER")}
    assert any("Type separation" in c.value for c in app.caption)

    with torch.no_grad():  # the session's model copy now tags every word B-PER: one entity per word
        result.model.head.weight.zero_()
        result.model.head.bias.copy_(torch.tensor([9.0 if n == "B-PER" else 0.0 for n in result.label_names]))
    text = "Anna Kowalski flew from Leeds to Oslo."
    app.text_area(key=KEY + "try").set_value(text).run()
    words, _, found = predict_entities(result.model, result.tokenizer, text, result.label_names, 64)
    assert [f.text for f in found] == words == ["Anna", "Kowalski", "flew", "from", "Leeds", "to", "Oslo", "."]
    spans = next(h for h in html_of(app) if "flew" in h)
    assert spans.count("<mark") == 8 and all(f">{w}<span" in spans for w in words)
    app.text_area(key=KEY + "try").set_value("x" * 2001).run()
    assert not app.exception and "at most 2,000" in app.warning[0].value


def test_upload_a_conll_file_with_repairs_and_bad_files(app):
    app.radio(key=KEY + "source").set_value("Upload a CoNLL file").run()
    assert any("Upload a CoNLL file to continue" in i.value for i in app.info)
    assert app.button(key="finetune.train").disabled
    app.file_uploader(key=KEY + "upload").set_value(("mine.conll", GOOD, "text/plain")).run()
    assert not app.exception and not app.error
    assert any("**10 training sentences**" in m.value and "every fifth sentence" in m.value for m in app.markdown)
    assert any("12 entities started with I-" in i.value for i in app.info)
    assert not app.button(key="finetune.train").disabled
    app.file_uploader(key=KEY + "upload").set_value(("bad.conll", b"Paris\tB-LOC\nlies\n", "text/plain")).run()
    assert not app.exception and "line 2 has no tag" in app.error[0].value
    assert app.button(key="finetune.train").disabled

