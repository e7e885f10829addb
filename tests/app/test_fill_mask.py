"""AppTest: the Fill-mask page, driven like a user would, asserting on what is shown.

The built-in masked-LM runs on a weights file made here (``VIZCORE_MLM_WEIGHTS``) unless the real
shipped weights are committed, so the page is tested before and after the lead's export.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from transformers import pipeline

from tests.app.conftest import decode_plotly, open_tab
from tests.support.mlm_weights import make_mlm_weights
from tests.support.tiny import build_tiny_mlm
from ui.mlm import page as fm
from ui.mlm.page import DEFAULT_TEXT, OTHER_MODEL
from ui.state import clear_caches, get_model
from vizcore.mlm.fill_mask import fill_mask
from vizcore.mlm.weights import DEFAULT_WEIGHTS, MLM_MODEL, WEIGHTS_ENV

PAGE = "pages/mlm.py"


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    if DEFAULT_WEIGHTS.is_file():
        return None
    return make_mlm_weights(tmp_path_factory.mktemp("app-mlm") / "minilm-mlm.safetensors")


@pytest.fixture(scope="module")
def roberta_dir(tmp_path_factory):
    return build_tiny_mlm("roberta", tmp_path_factory.mktemp("app-roberta"))


@pytest.fixture
def app(new_app, weights, monkeypatch):
    if weights is not None:
        monkeypatch.setenv(WEIGHTS_ENV, str(weights))
    return new_app(PAGE).run()


def chart(at, key: str) -> dict:
    for element in at.get("plotly_chart"):
        if element.proto.id.endswith(key):
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart {key}; have {[e.proto.id for e in at.get('plotly_chart')]}")


def table_with(at, column: str):
    """The first table showing ``column`` (AppTest does not expose st.dataframe keys)."""
    for element in at.dataframe:
        if column in element.value.columns:
            return element.value
    raise AssertionError(f"no table with a '{column}' column")


def bar_words(at, number: int = 0) -> list[str]:
    return chart(at, f"fill_mask.bars{number}")["layout"]["yaxis"]["ticktext"]


def bar_scores(at, number: int = 0) -> np.ndarray:
    return decode_plotly(chart(at, f"fill_mask.bars{number}")["data"][0]["x"])


def test_default_page_shows_the_builtin_masked_lm_predictions(app, weights):
    assert not app.exception
    assert app.title[0].value == "Pre-training: masked words & next sentence"
    assert app.selectbox(key="fill_mask.model_choice").value == MLM_MODEL
    assert app.text_area(key="fill_mask.text").value == DEFAULT_TEXT
    expected = fill_mask(get_model(MLM_MODEL, "auto", "mlm"), DEFAULT_TEXT).masks[0].predictions
    assert bar_words(app) == [p.token for p in expected]
    np.testing.assert_allclose(bar_scores(app), [p.score for p in expected], rtol=1e-6)
    assert "MLM-tuned here" in app.caption[0].value and "bert-base-uncased" in app.caption[0].value


@pytest.mark.skipif(not DEFAULT_WEIGHTS.is_file(), reason="the shipped weights are not committed yet")
def test_shipped_model_shows_the_probe_answers_its_model_card_records(app):
    card = json.loads(DEFAULT_WEIGHTS.with_suffix(".json").read_text())["best"]["probes"]
    france = next(row for row in card if row["text"] == DEFAULT_TEXT)
    assert bar_words(app) == france["top5"]


@pytest.mark.skipif(not DEFAULT_WEIGHTS.is_file(), reason="the shipped weights are not committed yet")
def test_shipped_model_puts_paris_in_the_top_5(app):
    assert "paris" in bar_words(app)


def test_top_k_slider_sets_the_number_of_bars(app):
    app.slider(key="fill_mask.top_k").set_value(10).run()
    assert len(bar_words(app)) == 10
    assert np.all(np.diff(bar_scores(app)) <= 0)


def test_two_masks_get_their_own_bars_and_an_iterative_fill(app):
    app.button(key="fill_mask.example3").click().run()
    text = app.text_area(key="fill_mask.text").value
    assert text.count("[MASK]") == 2
    assert len(bar_words(app, 0)) == len(bar_words(app, 1)) == 5
    steps = table_with(app, "sentence so far")
    assert list(steps["step"]) == [1, 2] and sorted(steps["mask at token"]) == [2, 6]
    assert "[MASK]" not in steps["sentence so far"].iloc[-1]
    assert steps["word"].iloc[0] in (bar_words(app, 0)[0], bar_words(app, 1)[0])  # the surer mask goes first


def test_with_two_masks_the_lens_and_attention_follow_the_chosen_mask(app):
    app.button(key="fill_mask.example3").click().run()
    second = fill_mask(get_model(MLM_MODEL, "auto", "mlm"), app.text_area(key="fill_mask.text").value).masks[1]
    open_tab(app, "fill_mask.tab", "Layer by layer")
    app.selectbox(key="fill_mask.lens_mask").set_value(1).run()
    lens = chart(app, "fill_mask.lens")
    assert "mask 2" in lens["layout"]["title"]["text"]
    assert [cell.split("<br>")[0] for cell in lens["data"][0]["text"][-1]] == [p.token for p in second.predictions]
    open_tab(app, "fill_mask.tab", "Attention of the mask")
    app.selectbox(key="fill_mask.attention_mask").set_value(1).run()
    assert "mask 2 (token 6)" in chart(app, "fill_mask.attention")["layout"]["title"]["text"]
    open_tab(app, "fill_mask.tab", "Layer by layer")  # each tab kept its own choice
    assert "mask 2" in chart(app, "fill_mask.lens")["layout"]["title"]["text"]
    open_tab(app, "fill_mask.tab", "Attention of the mask")
    assert "mask 2 (token 6)" in chart(app, "fill_mask.attention")["layout"]["title"]["text"]


def test_number_of_draws_sets_the_measured_counts(app):
    open_tab(app, "fill_mask.tab", "80/10/10 masking")
    app.number_input(key="fill_mask.draws").set_value(500).run()
    rates = table_with(app, "std_error")
    assert rates["out_of"].iloc[0] == 500 * 19  # 19 ordinary tokens in the default rule sentence
    assert "500 draws" in chart(app, "fill_mask.rates")["layout"]["title"]["text"]


def test_clicking_a_word_masks_it(app):
    app.button(key="fill_mask.example1").click().run()  # The cat sat on the [MASK].
    assert app.button(key="fill_mask.word1").proto.label == "cat"
    app.button(key="fill_mask.word1").click().run()
    assert app.text_area(key="fill_mask.text").value == "The [MASK] sat on the [MASK]."
    assert len(app.get("plotly_chart")) >= 2 and bar_words(app, 1)


def test_logit_lens_has_a_row_per_layer_ending_in_the_prediction(app):
    words, scores = bar_words(app), bar_scores(app)
    assert all("lens" not in e.proto.id for e in app.get("plotly_chart"))  # a closed tab runs nothing
    open_tab(app, "fill_mask.tab", "Layer by layer")
    lens = chart(app, "fill_mask.lens")["data"][0]
    z = decode_plotly(lens["z"])
    assert z.shape == (7, 5)  # embeddings + 6 layers, top 5
    assert chart(app, "fill_mask.lens")["layout"]["yaxis"]["ticktext"][0] == "embeddings"
    assert [cell.split("<br>")[0] for cell in lens["text"][-1]] == words
    np.testing.assert_allclose(z[-1], scores, rtol=1e-4)


def test_only_the_layer_by_layer_tab_reads_the_lenses(new_app, weights, monkeypatch):
    """The lenses read the MLM head at every layer, as much CPU as the prediction: a class arriving on the
    Predictions tab does not pay for them; the lens tab, opened after it on the same sentence, still has them."""
    from vizcore.mlm import fill_mask as fill_module

    if weights is not None:
        monkeypatch.setenv(WEIGHTS_ENV, str(weights))
    read, original = [], fill_module.read_lens
    monkeypatch.setattr(fill_module, "read_lens", lambda *args, **kwargs: read.append(1) or original(*args, **kwargs))
    at = new_app(PAGE, masked="Nobody else in these tests reads a [MASK] on the bus.").run()
    assert not at.exception and bar_words(at) and not read
    open_tab(at, "fill_mask.tab", "Attention of the mask")
    assert chart(at, "fill_mask.attention") and not read
    open_tab(at, "fill_mask.tab", "Layer by layer")
    assert chart(at, "fill_mask.lens") and read


@pytest.fixture
def lens_file(tmp_path, monkeypatch, weights):
    """A tuned lens for the masked-LM in use (random translators, named for its weights file) and a card."""
    import torch

    from vizcore.mlm import tuned_lens as tl
    from vizcore.mlm.weights import weights_path

    if weights is not None:
        monkeypatch.setenv(WEIGHTS_ENV, str(weights))
    lens = tl.TunedLens(6, 384)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        lens.weight.normal_(0.0, 0.02, generator=generator)
        lens.bias.normal_(0.0, 0.5, generator=generator)
    path = tmp_path / "tuned-lens.safetensors"
    tl.save_tuned_lens(lens, path, MLM_MODEL, tl.file_fingerprint(weights_path()))
    card = {"heldout": {"positions": 1234}, "logit": {"kl": [6.0, 5, 4, 3, 2, 1, 0], "top1": [0] * 7, "top5": [0] * 7},
            "tuned": {"kl": [3.0, 2.5, 2, 1.5, 1, 0.5, 0], "top1": [0] * 7, "top5": [0] * 7}}
    path.with_suffix(".json").write_text(json.dumps(card))
    monkeypatch.setenv(tl.WEIGHTS_ENV, str(path))
    fm.get_fill.clear()  # results cached by earlier tests were read without this lens
    fm.get_lens_card.clear()
    yield tl.load_tuned_lens(path, 6, 384)[0], card
    fm.get_fill.clear()
    fm.get_lens_card.clear()


def test_the_tuned_lens_is_shown_beside_the_logit_lens_with_its_card(new_app, lens_file):
    import torch

    lens, card = lens_file
    at = new_app(PAGE).run()
    open_tab(at, "fill_mask.tab", "Layer by layer")
    assert not at.exception and at.radio(key="fill_mask.lens_view").value == "Both"
    logit, tuned = chart(at, "fill_mask.lens")["data"][0], chart(at, "fill_mask.tuned_lens")["data"][0]
    assert tuned["text"][-1] == logit["text"][-1]  # the output row is not translated
    loaded = get_model(MLM_MODEL, "auto", "mlm")  # row 0 by hand: the head on h + A h + b of the embeddings
    inputs = loaded.tokenizer(DEFAULT_TEXT, return_tensors="pt").to(loaded.device)
    mask = int((inputs["input_ids"][0] == loaded.tokenizer.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        h = loaded.model.bert(**inputs, output_hidden_states=True).hidden_states[0][0, mask].cpu()
        moved = h + lens.weight[0] @ h + lens.bias[0]
        expected = loaded.model.cls(moved.to(loaded.device)[None]).softmax(-1)[0].topk(5).values.cpu().numpy()
    np.testing.assert_allclose(decode_plotly(tuned["z"])[0], expected, rtol=1e-3)
    kl = chart(at, "fill_mask.lens_kl")["data"]
    assert [trace["name"] for trace in kl] == ["logit lens", "tuned lens"]
    assert decode_plotly(kl[1]["y"])[-1] == pytest.approx(0, abs=1e-4)
    curves = chart(at, "fill_mask.lens_card")["data"]
    np.testing.assert_allclose(decode_plotly(curves[1]["y"]), card["tuned"]["kl"])
    at.radio(key="fill_mask.lens_view").set_value("Logit lens").run()
    assert not any(e.proto.id.endswith("fill_mask.tuned_lens") for e in at.get("plotly_chart"))


def test_another_masked_lm_has_no_tuned_lens_and_the_page_says_why(new_app, roberta_dir):
    at = new_app(PAGE, mlm=str(roberta_dir), masked="Paris is the [MASK] of France.").run()
    open_tab(at, "fill_mask.tab", "Layer by layer")
    assert not at.exception and chart(at, "fill_mask.lens")
    assert any("Tuned lens: not available" in c.value and "trained for one model only" in c.value
               for c in at.caption)
    assert not any(e.proto.id.endswith("fill_mask.tuned_lens") for e in at.get("plotly_chart"))


def test_mask_attention_by_layer_and_head(app):
    open_tab(app, "fill_mask.tab", "Attention of the mask")
    spec = chart(app, "fill_mask.attention")
    z = decode_plotly(spec["data"][0]["z"])
    assert z.shape == (12, 9)  # 12 heads x [CLS] the capital of france is [MASK] . [SEP]
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-4)
    app.number_input(key="fill_mask.attention_layer").set_value(2).run()
    assert "layer 2" in chart(app, "fill_mask.attention")["layout"]["title"]["text"]
    app.radio(key="fill_mask.attention_view").set_value("Every layer, mean over heads").run()
    assert decode_plotly(chart(app, "fill_mask.attention")["data"][0]["z"]).shape == (6, 9)


def test_masking_rule_tab_shows_one_draw_and_rates_near_the_targets(app):
    open_tab(app, "fill_mask.tab", "80/10/10 masking")
    rates = table_with(app, "std_error")
    assert list(rates["target"]) == ["15%", "80%", "10%", "10%"]
    measured = [float(v.rstrip("%")) / 100 for v in rates["measured"]]
    assert measured == pytest.approx([0.15, 0.8, 0.1, 0.1], abs=0.03)
    table = table_with(app, "what happened")
    assert table["what happened"].iloc[0] == "special (never selected)"
    changed = table[table["what happened"] == "[MASK]"]
    assert (changed["model sees"] == "[MASK]").all()
    app.button(key="fill_mask.next_seed").click().run()
    assert app.number_input(key="fill_mask.seed").value == 1
    assert "seed 1" in chart(app, "fill_mask.strip")["layout"]["title"]["text"]


def test_text_without_a_mask_says_how_to_add_one(app):
    app.text_area(key="fill_mask.text").set_value("The cat sat on the mat.").run()
    assert not app.exception
    assert "no mask" in app.error[0].value
    assert [b.proto.label for b in app.button if b.key.startswith("fill_mask.word")][:2] == ["The", "cat"]


@pytest.mark.parametrize(("text", "message"), [("", "empty"), ("word " * 600 + "[MASK]", "past the first 512")])
def test_bad_sentences_give_a_message_not_a_traceback(app, text, message):
    app.text_area(key="fill_mask.text").set_value(text).run()
    assert not app.exception
    assert message in app.error[0].value


def test_long_text_with_an_early_mask_is_truncated_with_a_warning(app):
    app.text_area(key="fill_mask.text").set_value("The [MASK] is here. " + "word " * 600).run()
    assert not app.exception and "at most 512" in app.warning[0].value


def test_markup_and_emoji_are_just_tokens(app):
    app.text_area(key="fill_mask.text").set_value("<script>alert(1)</script> 🦊 is [MASK].").run()
    assert not app.exception and len(bar_words(app)) == 5
    assert any("`[UNK]`" in m.value and "`<`" in m.value for m in app.markdown)  # the emoji is unknown


def test_another_masked_lm_from_a_local_folder_equals_the_pipeline(app, roberta_dir):
    app.selectbox(key="fill_mask.model_choice").set_value(OTHER_MODEL).run()
    app.text_input(key="fill_mask.model_other").set_value(str(roberta_dir)).run()
    assert not app.exception
    expected = pipeline("fill-mask", model=str(roberta_dir), device="cpu")("The capital of France is <mask>.")
    assert bar_words(app) == [e["token_str"].strip() for e in expected]
    np.testing.assert_allclose(bar_scores(app), [e["score"] for e in expected], rtol=1e-4)


def test_an_encoder_without_mlm_head_is_refused_and_the_sentence_kept(app):
    app.selectbox(key="fill_mask.model_choice").set_value(OTHER_MODEL).run()
    app.text_input(key="fill_mask.model_other").set_value("all-MiniLM-L6-v2").run()
    assert "no trained masked-LM head" in app.error[0].value
    assert app.session_state["fill_mask.text"] == DEFAULT_TEXT


def test_missing_weights_say_how_to_make_them(new_app, tmp_path, monkeypatch):
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "absent.safetensors"))
    clear_caches()  # a model loaded by an earlier test would hide the missing file
    at = new_app(PAGE).run()
    clear_caches()
    assert not at.exception
    assert "python -m tools.mlm_training" in at.error[0].value and "bert-base-uncased" in at.error[0].value


def test_a_shared_link_sets_the_model_and_sentence(new_app, roberta_dir):
    at = new_app(PAGE, mlm=str(roberta_dir), masked="Paris is the [MASK] of France.").run()
    assert at.selectbox(key="fill_mask.model_choice").value == OTHER_MODEL
    assert at.text_input(key="fill_mask.model_other").value == str(roberta_dir)
    assert at.text_area(key="fill_mask.text").value == "Paris is the [MASK] of France."
    assert len(bar_words(at)) == 5 and any("`<mask>`" in m.value for m in at.markdown)


def test_a_link_to_a_model_the_server_cannot_load_is_said_and_left_out_of_the_link(new_app):
    from tests.app.test_lessons import param

    at = new_app(PAGE, mlm="nope").run()
    assert not at.exception and not at.error
    assert any("The link's mlm='nope' was not used" in w.value and "opened with minilm-mlm-tuned" in w.value
               for w in at.warning)
    assert at.selectbox(key=fm.KEY_MODEL_CHOICE).value == MLM_MODEL and param(at, "mlm") in (None, MLM_MODEL)
    assert any("Answered by **minilm-mlm-tuned**" in m.value for m in at.markdown)  # the page says which model
