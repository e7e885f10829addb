"""The Why? page's ablation and patching parts in AppTest: what a user sees, the link, bad input."""

from __future__ import annotations

import copy
import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from tests.app.conftest import decode_plotly, set_shared

FRANCE = "The capital of France is [MASK]."


def why(new_app, **params):
    return new_app("pages/why.py", **params).run()


def chart(at, key: str) -> dict:
    element = next(e for e in at.get("plotly_chart") if e.proto.id.endswith(key) or key in e.proto.id)
    return json.loads(element.proto.spec)


def shown_sentence(at) -> str:
    """The sentence the ablation part shows in bold, as the user reads it (markdown's escapes taken out)."""
    line = next(m.value for m in at.markdown if m.value.startswith("Sentence: "))
    return re.sub(r"\\(.)", r"\1", line.split("**")[1])


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def models_answer(sentence: str) -> str:
    """The offline masked-LM's most probable word at the mask, as the fill-mask page computes it."""
    from ui.state import get_model
    from vizcore.mlm.fill_mask import fill_mask
    from vizcore.model.catalog import MLM_MODEL

    return fill_mask(get_model(MLM_MODEL, "auto", "mlm"), sentence, top_k=1).masks[0].predictions[0].token


TIRED = "The animal didn't cross the street because it was too [MASK]."


def test_the_sidebar_sentence_gets_a_word_picker_and_the_offline_masked_lm(new_app):
    at = why(new_app)
    assert not at.exception and not at.error
    assert "has no masked-LM head" in at.caption[0].value and "minilm-mlm-tuned" in at.caption[0].value
    assert at.selectbox(key="why.word").value == "tired"
    assert shown_sentence(at) == TIRED
    assert at.info and "No head is switched off" in at.info[0].value


def test_the_model_s_own_answer_is_explained_by_default_not_the_masked_word(new_app):
    at = why(new_app)
    answer = models_answer(TIRED)
    assert at.text_input(key="why.ablation.word").value == answer and metrics(at)[f"P({answer})"].endswith("%")
    assert metrics(at)["Top word"] == answer  # the followed word is the answer the model gives
    followed = next(m for m in at.metric if m.label == f"P({answer})").proto  # no head off: no change
    assert followed.delta == "no change" and followed.color == 2 and followed.direction == 2  # grey, no arrow
    sentence = next(m.value for m in at.markdown if m.value.startswith("Sentence: "))
    assert shown_sentence(at) == TIRED
    from ui.feedback import plain

    assert f"the model's answer: **{plain(answer)}**" in sentence
    assert answer == "tired" or "the masked word: tired" in sentence


def test_clicking_heads_changes_the_answer_and_the_link(new_app):
    at = why(new_app)
    set_shared(at, text=FRANCE)
    at.text_input(key="why.ablation.word").set_value("paris").run()
    before = metrics(at)["P(paris)"]
    at.session_state["why.ablation.layer5"] = [4, 6]
    at.run()
    assert not at.exception and not at.error
    after = metrics(at)["P(paris)"]
    assert after != before
    assert at.query_params["heads"] in ("6:4,6:6", ["6:4,6:6"])
    moved = np.asarray(chart(at, "why.ablation.moved")["data"][0]["text"])
    assert moved[5][3] == "✕" and moved[5][5] == "✕" and moved[0][0] == ""


def test_presets_fill_a_layer_and_leave_one_head(new_app):
    at = why(new_app)
    at.number_input(key="why.ablation.preset_layer").set_value(2)
    at.button(key="why.ablation.preset_whole").click().run()
    assert at.session_state["why.ablation.layer1"] == list(range(1, 13))
    at.number_input(key="why.ablation.preset_head").set_value(7)
    at.button(key="why.ablation.preset_but_one").click().run()
    assert at.session_state["why.ablation.layer1"] == [h for h in range(1, 13) if h != 7]
    at.button(key="why.ablation.preset_none").click().run()
    assert at.session_state["why.ablation.layer1"] == []
    assert not at.exception and not at.error


def test_a_link_sets_heads_and_mode_and_a_bad_one_is_reported(new_app):
    at = why(new_app, heads="6:4,6:6", mode="mean", text=FRANCE)
    assert not at.exception and not at.error
    assert at.session_state["why.ablation.layer5"] == [4, 6] and at.radio(key="why.ablation.mode").value == "mean"
    bad = why(new_app, heads="9:9", mode="half")
    assert not bad.exception
    warnings = " ".join(w.value for w in bad.warning)
    assert "heads='9:9'" in warnings and "mode='half'" in warnings


def test_a_bad_word_to_follow_is_a_message_and_keeps_the_heads(new_app):
    at = why(new_app, heads="1:1")
    at.text_input(key="why.ablation.word").set_value("antidisestablishmentarianism").run()
    assert not at.exception
    assert at.error and "not one token" in at.error[0].value
    assert at.session_state["why.ablation.layer0"] == [1]


def test_a_fine_tuned_classifier_of_this_session_is_ablated_too(new_app):
    from ui.state import get_model
    from vizcore.finetune.classify import SENTENCE, SequenceClassifier
    from vizcore.model.catalog import DEFAULT_MODEL

    base = get_model(DEFAULT_MODEL, "auto", "base")
    classifier = SequenceClassifier(copy.deepcopy(base.model), num_labels=2).eval()
    result = SimpleNamespace(classifier=classifier, label_names=("negative", "positive"),
                             config=SimpleNamespace(max_length=64))
    at = why(new_app)
    at.session_state["finetune.job"] = SimpleNamespace(finished=True, result=result, data=None, loaded=base,
                                                       task=SENTENCE)
    at.session_state["why.ablation.layer0"] = list(range(1, 13))
    at.run()
    assert not at.exception and not at.error
    bars = chart(at, "why.ablation.classes")["data"]
    assert [t["name"] for t in bars] == ["all heads", "heads off"] and bars[0]["x"] == ["negative", "positive"]
    assert bars[0]["y"] != bars[1]["y"]


def test_patching_shows_the_identities_and_refuses_unequal_lengths(new_app):
    at = why(new_app, part="patching")
    assert not at.exception and not at.error
    assert metrics(at)["LD clean"] == "1.953" and metrics(at)["LD corrupted"] == "-0.554"
    z = decode_plotly(chart(at, "why.patching.states")["data"][0]["z"])
    assert z.shape == (7, 9) and z[-1, 6] == pytest.approx(1.0, abs=1e-5) and z[0, 4] == pytest.approx(1.0, abs=1e-5)
    # attribution patching below it: where the embeddings of the two sentences are equal, (clean - corrupt) = 0
    estimate = decode_plotly(chart(at, "why.patching.estimate_states")["data"][0]["z"])
    assert estimate.shape == z.shape and estimate[0, 4] != 0 and not np.delete(estimate[0], 4).any()
    ranks = [np.argsort(np.argsort(decode_plotly(chart(at, key)["data"][0]["z"]).ravel(), kind="stable"))
             for key in ("why.patching.heads", "why.patching.estimate_heads")]
    assert metrics(at)["Spearman ρ, heads"] == f"{np.corrcoef(*ranks)[0, 1]:.2f}"
    assert metrics(at)["Time, estimate"].endswith(" s") and metrics(at)["Time, exact sweep"].endswith(" s")
    at.text_input(key="why.patching.corrupt").set_value("The capital of the United Kingdom is [MASK].").run()
    assert not at.exception
    assert at.error and "same number of tokens" in at.error[0].value and "'kingdom'" in at.error[0].value
    assert at.text_input(key="why.patching.corrupt").value == "The capital of the United Kingdom is [MASK]."
    at.button(key="why.patching.example1").click().run()
    assert not at.error and at.text_input(key="why.patching.answer").value == "he"
    assert at.query_params["clean"] in ("John said that [MASK] was tired because he worked all day.",
                                        ["John said that [MASK] was tired because he worked all day."])


def test_the_followed_word_follows_the_models_answer_until_one_is_typed(new_app):
    at = why(new_app)
    assert at.text_input(key="why.ablation.word").value == models_answer(TIRED)
    at.selectbox(key="why.word").set_value("street").run()
    street = models_answer("The animal didn't cross the [MASK] because it was too tired.")
    assert at.text_input(key="why.ablation.word").value == street and f"P({street})" in metrics(at)
    at.text_input(key="why.ablation.word").set_value("tired").run()  # the user's word wins from now on
    assert "P(tired)" in metrics(at)
    at.selectbox(key="why.word").set_value("animal").run()
    assert at.text_input(key="why.ablation.word").value == "tired"


def test_no_two_parts_read_the_same_link_parameter():
    from ui.why import ablation, attribution, edges, importance, patching, weights

    names = [{"part", "word"},
             *(set(part.URL_PARAMS) for part in (ablation, importance, patching, attribution, edges, weights))]
    assert sum(len(n) for n in names) == len(set().union(*names)), names


def test_a_picked_word_of_several_tokens_is_masked_and_the_models_answer_followed(new_app):
    at = set_shared(why(new_app), text="The cat slept on the windowsill.")
    assert at.selectbox(key="why.word").value == "windowsill"
    assert not at.exception and not at.error
    answer = models_answer(shown_sentence(at))
    assert f"P({answer})" in metrics(at) and metrics(at)["Top word"] == answer


def test_a_sentence_typed_with_enter_is_shown_in_bold_not_between_stars(new_app):
    """The sidebar's sentence box is a text area: Enter adds a line break, which once kept the bold's closing
    stars apart from the text ("**Paris is the capital of [MASK]. **" on the page); markup in it stays text."""
    at = set_shared(why(new_app), text="Paris is the *capital* of France.\n")
    assert not at.exception and not at.error
    line = next(m.value for m in at.markdown if m.value.startswith("Sentence: "))
    assert line.startswith("Sentence: **Paris") and re.search(r"\S\*\* · the model's answer:", line), line
    assert shown_sentence(at) == "Paris is the *capital* of [MASK]."


def test_weight_circuits_show_the_heads_products_and_follow_the_link(new_app):
    """The numbers shown equal the weight products formed here from the masked-LM's own modules."""
    from collections import Counter

    from ui.state import get_model
    from vizcore.circuits.circuits import FREQUENCY_TEXT
    from vizcore.model.catalog import MLM_MODEL

    at = why(new_app, part="circuits", layer="3", head="5")
    assert not at.exception and not at.error
    assert at.number_input(key="why.circuits.layer").value == 3 and at.number_input(key="why.circuits.head").value == 5
    loaded = get_model(MLM_MODEL, "auto", "mlm")
    counts = Counter()
    for line in FREQUENCY_TEXT.read_text(encoding="utf-8").splitlines():
        counts.update(loaded.tokenizer(line, add_special_tokens=False)["input_ids"])
    ids = sorted(counts, key=lambda i: (-counts[i], i))[:500]
    bert = loaded.model.bert
    E = bert.embeddings.word_embeddings.weight[ids].double()
    d_head = E.shape[1] // loaded.num_heads

    def part(layer: int, name: str, head: int):  # (d, d_head) in x @ W, or (d_head, d) for W_O
        attention = bert.encoder.layer[layer].attention
        weight = {"q": attention.self.query, "k": attention.self.key, "v": attention.self.value,
                  "o": attention.output.dense}[name].weight.double()
        columns = slice(head * d_head, (head + 1) * d_head)
        return weight[:, columns] if name == "o" else weight[columns].T

    ov = (E @ part(2, "v", 4) @ part(2, "o", 4).T @ E.T).numpy()
    eigenvalues = np.linalg.eigvals(ov)
    assert metrics(at)["OV copying score"] == f"{eigenvalues.sum().real / np.abs(eigenvalues).sum():+.2f}"
    qk = (E @ part(2, "q", 4) @ part(2, "k", 4).T @ E.T).numpy() / np.sqrt(d_head)
    table = at.dataframe[0].value
    assert len(table) == 12 and table["score"].iloc[0] == pytest.approx(qk.max(), rel=1e-6)
    names = loaded.tokenizer.convert_ids_to_tokens(ids)
    q, k = np.unravel_index(qk.argmax(), qk.shape)
    assert (table["query token"].iloc[0], table["key token"].iloc[0]) == (names[q], names[k])
    w_ov = (part(1, "v", 0) @ part(1, "o", 0).T).numpy()  # head 2.1 writes, head 3.5 reads its query
    w_qk = (part(2, "q", 4) @ part(2, "k", 4).T).numpy()
    z = decode_plotly(chart(at, "why.circuits.composition")["data"][0]["z"])
    assert z.shape == (3, loaded.num_heads)
    expected = np.linalg.norm(w_ov @ w_qk) / (np.linalg.norm(w_ov) * np.linalg.norm(w_qk))
    assert z[0, 0] == pytest.approx(expected, rel=1e-5)
    assert at.query_params["part"] in ("circuits", ["circuits"]) and at.query_params["layer"] in ("3", ["3"])
    at.number_input(key="why.circuits.layer").set_value(1).run()
    assert not at.exception and "no head before it" in at.caption[-1].value
