"""The Embeddings page in AppTest: every view and its main controls, what they show, the link, bad input.

Expected numbers come from transformers alone (the embedded model run sentence by sentence, pooled and
compared in numpy), not from the page's own code."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from tests.app.conftest import decode_plotly, renderer_payload
from ui.embeddings.page import SENSE_TEXTS
from ui.embeddings.similarity import EXAMPLE
from vizcore.embeddings.contexts import CONTEXT_SETS
from vizcore.embeddings.projection import project, token_vectors
from vizcore.embeddings.search import builtin_collection
from vizcore.model.heads import default_head
from vizcore.model.loading import BUILTIN_MODELS, DEFAULT_MODEL, load_model

PAGE = "pages/embeddings.py"


@pytest.fixture(scope="module")
def hf():
    folder = str(BUILTIN_MODELS[DEFAULT_MODEL].source())
    return AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()


def states(hf, text: str) -> tuple[list[str], np.ndarray]:
    """(tokens, hidden states (L + 1, T, D)) of one sentence, transformers alone."""
    tokenizer, model = hf
    encoded = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**encoded, output_hidden_states=True).hidden_states
    return tokenizer.convert_ids_to_tokens(encoded["input_ids"][0]), torch.stack([h[0] for h in hidden]).numpy()


def pooled(hf, texts, state: int = -1, pooling: str = "mean") -> np.ndarray:
    rows = [states(hf, t)[1][state] for t in texts]
    return np.stack([r.mean(0) if pooling == "mean" else r[0] for r in rows]).astype(np.float64)


def cosines(vectors: np.ndarray) -> np.ndarray:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit @ unit.T


def open_page(new_app, **params):
    return new_app(PAGE, **params).run()


def ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def link(at) -> dict[str, str]:
    return {k: v[-1] if isinstance(v, list) else v for k, v in at.query_params.items()}


def chart(at, key: str) -> dict:
    for element in at.get("plotly_chart"):
        if key in element.proto.id:
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart {key!r}")


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


# ---- similarity ------------------------------------------------------------------------------------

def test_similarity_shows_the_cosines_of_mean_pooled_vectors(new_app, hf):
    at = open_page(new_app)
    ok(at)
    expected = cosines(pooled(hf, EXAMPLE))
    shown = decode_plotly(chart(at, "embeddings.sim.heatmap")["data"][0]["z"])
    np.testing.assert_allclose(shown, expected, atol=1e-5)
    off = np.where(np.eye(len(EXAMPLE), dtype=bool), -1, expected)
    i, j = np.unravel_index(off.argmax(), off.shape)
    assert metrics(at)["Most similar pair"] == f"{i + 1} and {j + 1}: cosine {expected[i, j]:.3f}"
    table = at.dataframe[0].value
    assert table["cosine"].iloc[0] == pytest.approx(off[0].max(), abs=1e-5)
    assert "what sentence-transformers gives" in at.caption[0].value
    assert link(at)["view"] == "similarity" and link(at)["pooling"] == "mean" and link(at)["layer"] == "6"


def test_cls_pooling_and_a_middle_layer_change_the_numbers_and_the_link(new_app, hf):
    at = open_page(new_app)
    at.radio(key="embeddings.pooling").set_value("cls")
    at.select_slider(key="embeddings.layer").set_value("3").run()
    ok(at)
    shown = decode_plotly(chart(at, "embeddings.sim.heatmap")["data"][0]["z"])
    np.testing.assert_allclose(shown, cosines(pooled(hf, EXAMPLE, state=3, pooling="cls")), atol=1e-5)
    assert "sentence-transformers" not in at.caption[0].value and "layer 3 of 6" in at.caption[0].value
    assert link(at)["pooling"] == "cls" and link(at)["layer"] == "3"
    at.select_slider(key="embeddings.layer").set_value("last4").run()
    last4 = np.concatenate([pooled(hf, EXAMPLE, state=s, pooling="cls") for s in range(3, 7)], axis=1)
    np.testing.assert_allclose(decode_plotly(chart(at, "embeddings.sim.heatmap")["data"][0]["z"]), cosines(last4),
                               atol=1e-5)
    assert link(at)["layer"] == "last4"


def test_one_sentence_is_a_message_and_the_text_stays(new_app):
    at = open_page(new_app)
    at.text_area(key="embeddings.sim.sentences").set_value("Only one sentence here.").run()
    ok(at)
    assert "Give 2 to 40 sentences" in at.error[0].value
    assert at.text_area(key="embeddings.sim.sentences").value == "Only one sentence here."


def test_a_link_sets_the_sentences_and_a_bad_value_is_reported(new_app):
    at = open_page(new_app, sentences="A dog barks.\nA puppy yelps.", pooling="max", layer="9", view="nope")
    ok(at)
    warnings = " ".join(w.value for w in at.warning)
    assert "view='nope'" in warnings
    assert "layer='9' was not used: here it is one of 1, 2, 3, 4, 5, 6, last4." in warnings
    assert at.radio(key="embeddings.pooling").value == "max"
    assert len(decode_plotly(chart(at, "embeddings.sim.heatmap")["data"][0]["z"])) == 2


# ---- search ------------------------------------------------------------------------------------------

def test_search_ranks_the_collection_by_cosine(new_app, hf):
    at = open_page(new_app, view="search", top_k="5")
    ok(at)
    hits = at.dataframe[0].value
    assert len(hits) == 5 and list(hits["rank"]) == [1, 2, 3, 4, 5]
    query = at.text_input(key="embeddings.search.query").value
    texts = builtin_collection()
    expected = cosines(pooled(hf, [query, *hits["text"]]))[0, 1:]
    np.testing.assert_allclose(hits["cosine"], expected, atol=1e-5)
    assert list(hits["line"]) == [texts.index(t) + 1 for t in hits["text"]]
    assert list(hits["cosine"]) == sorted(hits["cosine"], reverse=True)
    assert "Top 5 of 519 texts" in next(m.value for m in at.markdown if "Top 5" in m.value)


def test_an_example_query_and_an_uploaded_file(new_app):
    at = open_page(new_app, view="search")
    at.button(key="embeddings.search.example1").click().run()
    ok(at)
    assert link(at)["query"] == "It is freezing outside today."
    at.radio(key="embeddings.search.collection").set_value("upload").run()
    assert "Upload a file" in at.info[0].value
    data = b"The sun is shining.\n\nSnow covers the mountains.\nI like tea.\n"
    at.file_uploader(key="embeddings.search.upload").set_value(("weather.txt", data, "text/plain")).run()
    ok(at)
    hits = at.dataframe[0].value
    assert hits["text"].iloc[0] == "Snow covers the mountains." and list(hits["line"]) == [3, 1, 4]
    assert "1 blank lines were skipped" in at.caption[0].value or "1 blank line" in at.caption[0].value


def test_a_binary_upload_is_a_message_and_the_query_stays(new_app):
    at = open_page(new_app, view="search", query="cold weather")
    at.radio(key="embeddings.search.collection").set_value("upload").run()
    at.file_uploader(key="embeddings.search.upload").set_value(("x.txt", b"\x00\x01\x02PK", "text/plain")).run()
    ok(at)
    assert "is not a text file" in at.error[0].value
    assert at.text_input(key="embeddings.search.query").value == "cold weather"


# ---- one word, many contexts -------------------------------------------------------------------------

def word_vectors(hf, word: str, sentences) -> np.ndarray:
    """(S, L + 1, D): the mean of the word's pieces (it is one piece in the built-in sets) per sentence."""
    rows = []
    for sentence in sentences:
        tokens, hidden = states(hf, sentence)
        rows.append(hidden[:, tokens.index(word)])
    return np.stack(rows).astype(np.float64)


def test_bank_same_and_different_senses_layer_by_layer(new_app, hf):
    at = open_page(new_app, view="contexts")
    ok(at)
    contexts = CONTEXT_SETS["bank"].contexts
    v = word_vectors(hf, "bank", [c.sentence for c in contexts])
    unit = v / np.linalg.norm(v, axis=-1, keepdims=True)
    cos = np.einsum("sld,tld->lst", unit, unit)
    senses = [c.sense for c in contexts]
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    same = np.mean([cos[:, i, j] for i, j in pairs if senses[i] == senses[j]], axis=0)
    different = np.mean([cos[:, i, j] for i, j in pairs if senses[i] != senses[j]], axis=0)
    shown = metrics(at)
    assert shown["embeddings"] == f"{same[0]:.3f} vs {different[0]:.3f}"
    assert shown["layer 6"] == f"{same[6]:.3f} vs {different[6]:.3f}"
    assert same[6] - different[6] > 0.05  # the classroom point, measured: different senses drift apart
    lines = chart(at, "embeddings.ctx.lines_chart")["data"]
    np.testing.assert_allclose(decode_plotly(lines[-1]["y"]), different, atol=1e-4)
    at.select_slider(key="embeddings.ctx.state").set_value(0).run()
    np.testing.assert_allclose(decode_plotly(chart(at, "embeddings.ctx.heatmap")["data"][0]["z"]), cos[0], atol=1e-4)
    assert link(at)["at"] == "0" and link(at)["word"] == "bank"


def test_an_example_button_and_a_missing_word(new_app):
    at = open_page(new_app, view="contexts")
    at.button(key="embeddings.ctx.set_bat").click().run()
    ok(at)
    assert at.text_input(key="embeddings.ctx.word").value == "bat"
    assert "'bat' in 6 sentences" in chart(at, "embeddings.ctx.lines_chart")["layout"]["title"]["text"]
    lines = "A bat flew by.\nThe cat slept."
    at.text_area(key="embeddings.ctx.lines").set_value(lines).run()
    ok(at)
    assert "Sentence 2 does not contain the word 'bat': “The cat slept.”" in at.error[0].value
    assert at.text_area(key="embeddings.ctx.lines").value == lines


# ---- token map ---------------------------------------------------------------------------------------

def traces(at, key: str) -> list[dict]:
    return chart(at, key)["data"]


def test_token_map_colours_the_example_words_by_sense(new_app, hf):
    at = open_page(new_app, view="tokens")
    ok(at)
    data = traces(at, "embeddings.tokens.chart")
    tokenizer = hf[0]
    total = sum(len(tokenizer(t)["input_ids"]) - 2 for t in SENSE_TEXTS)
    assert sum(len(decode_plotly(t["customdata"])) for t in data) == total
    names = {t["name"] for t in data}
    assert {"bank (river)", "bank (money)", "bat (animal)", "bat (sport)", "other"} <= names
    river = next(t for t in data if t["name"] == "bank (river)")
    assert len(decode_plotly(river["customdata"])) == 3
    assert f"{total:,} tokens at layer 6 · PCA" in chart(at, "embeddings.tokens.chart")["layout"]["title"]["text"]


def test_token_map_controls(new_app):
    at = open_page(new_app, view="tokens", map_layer="0", colour="position", dims="3")
    ok(at)
    (trace,) = traces(at, "embeddings.tokens.chart")
    assert trace["type"] == "scatter3d" and trace["marker"]["colorbar"]["title"]["text"] == "position"
    assert "at embeddings" in chart(at, "embeddings.tokens.chart")["layout"]["title"]["text"]
    before = len(decode_plotly(trace["customdata"]))
    at.toggle(key="embeddings.tokens.special").set_value(True).run()
    (trace,) = traces(at, "embeddings.tokens.chart")
    assert len(decode_plotly(trace["customdata"])) == before + 2 * len(SENSE_TEXTS)  # [CLS] and [SEP] each
    at.radio(key="embeddings.source").set_value("own").run()
    at.text_area(key="embeddings.own").set_value("One two three.\nFour five.").run()
    ok(at)
    (trace,) = traces(at, "embeddings.tokens.chart")
    assert len(decode_plotly(trace["customdata"])) == 4 + 3 + 2 * 2
    assert link(at)["own"] == "One two three.\nFour five." and link(at)["map_layer"] == "0"


@pytest.mark.parametrize("view, param", [("tokens", "map_layer"), ("contexts", "at")])
def test_a_layer_the_model_lacks_is_reported(new_app, view, param):
    at = open_page(new_app, view=view, **{param: "9"})
    ok(at)
    assert f"The link's {param}='9' was not used: it must be a whole number from 0 to 6 here." in [
        w.value for w in at.warning]
    assert param not in link(at)  # left out of the rewritten link while the slider shows the default (layer 6)


def test_umap_gives_the_same_numbers_every_time(new_app):
    at = open_page(new_app, view="tokens", map_layer="0", method="umap", colour="sentence")
    ok(at)
    data = traces(at, "embeddings.tokens.chart")
    shown = {int(i): (x, y) for t in data for i, x, y in zip(decode_plotly(t["customdata"]), decode_plotly(t["x"]),
                                                                decode_plotly(t["y"]))}
    cloud = token_vectors(load_model(DEFAULT_MODEL), SENSE_TEXTS, 0)
    assert len(np.unique(cloud.vectors, axis=0)) < len(cloud.vectors)  # "the" at position 1 in many sentences
    again = project(cloud.vectors, "umap", 2).coords  # outside the page's cache: the same numbers
    np.testing.assert_allclose([shown[i] for i in range(len(again))], again, atol=1e-5)
    assert "UMAP 1" == chart(at, "embeddings.tokens.chart")["layout"]["xaxis"]["title"]["text"]


# ---- queries and keys --------------------------------------------------------------------------------

def test_queries_and_keys_of_a_head(new_app):
    at = open_page(new_app, view="queries", qk_layer="3", qk_head="5")
    ok(at)
    figure = chart(at, "embeddings.qk.chart")
    assert figure["layout"]["title"]["text"].startswith("Head 3.5:")
    assert [t["name"] for t in figure["data"]] == ["query", "key"]
    n = len(decode_plotly(figure["data"][0]["customdata"]))
    assert list(decode_plotly(figure["data"][1]["customdata"]))[:2] == [n, n + 1]  # keys follow the queries
    agreement = next(m.value for m in at.markdown if "Does distance stand for attention" in m.value)
    at.toggle(key="embeddings.qk.normalise").set_value(False).run()
    ok(at)
    assert next(m.value for m in at.markdown if "Does distance" in m.value) != agreement
    assert link(at)["normalise"] == "0" and link(at)["qk_layer"] == "3" and link(at)["qk_head"] == "5"
    at.radio(key="embeddings.qk.colour").set_value("position").run()
    assert decode_plotly(chart(at, "embeddings.qk.chart")["data"][0]["marker"]["color"]).shape == (2 * n,)


def test_a_head_the_model_lacks_is_reported_and_left_out(new_app):
    at = open_page(new_app, view="queries", qk_layer="9", qk_head="20")
    ok(at)
    warnings = " ".join(w.value for w in at.warning)
    assert "qk_layer='9' was not used: it must be a whole number from 1 to 6 here." in warnings
    assert "qk_head='20' was not used: it must be a whole number from 1 to 12 here." in warnings
    layer, head = default_head(6, 12)
    assert (at.number_input(key="shared.layer").value, at.number_input(key="shared.head").value) == (layer + 1,
                                                                                                     head + 1)


def test_a_click_takes_the_points_sentence_and_the_head():
    from streamlit.testing.v1 import AppTest

    def script():
        import numpy as np
        import streamlit as st

        from ui.embeddings.queries import KEY_CHART, clicked
        from vizcore.embeddings.projection import TokenPoints

        points = TokenPoints(("A b.", "C d e."), tuple("abcde"), tuple("abcde"), np.array([0, 0, 1, 1, 1]),
                             np.arange(5), np.zeros(5, bool), 2, 5)
        st.session_state[KEY_CHART] = {"selection": {"points": [{"customdata": 8}]}}  # the key of point 3
        clicked(points, 1, 6)

    at = AppTest.from_function(script).run()
    ok(at)
    assert at.session_state["shared.text"] == "C d e." and at.session_state["shared.pair"] == ""
    assert (at.session_state["shared.layer"], at.session_state["shared.head"]) == (2, 7)
    assert at.session_state["embeddings.qk.open"]["text"] == "C d e."


def test_the_page_follows_a_click_to_the_explorer(new_app):
    at = open_page(new_app, view="queries")
    sentence = SENSE_TEXTS[4]
    at.session_state["shared.text"] = sentence
    at.session_state["shared.layer"], at.session_state["shared.head"] = 2, 7
    at.session_state["embeddings.qk.open"] = {"text": sentence, "layer": "2", "head": "7", "view": "heatmap"}
    at.run()
    ok(at)
    assert at.title[0].value == "Attention Explorer"
    assert renderer_payload(at)["initial"] == {"layer": 1, "head": 6, "view": "heatmap"}
    assert "embeddings.qk.open" not in at.session_state  # followed once
