"""Fill-mask against transformers' own pipeline and a direct forward pass, on tiny random masked-LMs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModelForMaskedLM, pipeline

from vizcore.errors import VizError
from vizcore.mlm.fill_mask import (
    MAX_MASKS,
    fill_iteratively,
    fill_mask,
    mask_word,
    maskable_words,
    readable_text,
    separable_head,
)
from vizcore.model.loading import load_model

KINDS = ["bert", "distilbert", "roberta"]


@pytest.fixture(scope="module")
def models(tiny_mlm_dir):
    """kind -> (our LoadedModel, transformers' fill-mask pipeline, a direct eager model), all from one folder."""
    made = {}
    for kind in KINDS:
        folder = str(tiny_mlm_dir(kind))
        pipe = pipeline("fill-mask", model=folder, device="cpu")
        direct = AutoModelForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
        made[kind] = (load_model(folder, device="cpu", head="mlm"), pipe, direct)
    return made


def as_pipeline_text(kind: str, text: str) -> str:
    return text.replace("[MASK]", "<mask>") if kind == "roberta" else text


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("text", ["The capital of France is [MASK].", "The [MASK] sat on the [MASK] every morning."])
def test_predictions_equal_the_transformers_pipeline(models, kind, text):
    loaded, pipe, _ = models[kind]
    ours = fill_mask(loaded, text, top_k=5)
    theirs = pipe(as_pipeline_text(kind, text), top_k=5)
    theirs = [theirs] if isinstance(theirs[0], dict) else theirs
    assert len(ours.masks) == len(theirs) == text.count("[MASK]")
    for mask, expected in zip(ours.masks, theirs):
        assert [p.token_id for p in mask.predictions] == [e["token"] for e in expected]
        assert [p.token_str for p in mask.predictions] == [e["token_str"] for e in expected]
        assert [p.sequence for p in mask.predictions] == [e["sequence"] for e in expected]
        np.testing.assert_allclose([p.score for p in mask.predictions], [e["score"] for e in expected], rtol=1e-4)
        assert mask.predictions[0].score > 20 / len(loaded.tokenizer)  # a peaked distribution, not a flat tie
        assert ours.tokens[mask.index] == loaded.tokenizer.mask_token


@pytest.mark.parametrize(("kind", "own"), [("roberta", "<mask>"), ("bert", "[MASK]")])
@pytest.mark.parametrize("typed", ["[MASK]", "[mask]", "<mask>", "<MASK>"])
def test_every_usual_spelling_of_the_mask_becomes_the_models_own(models, kind, own, typed):
    loaded = models[kind][0]
    result = fill_mask(loaded, f"The cat sat on the {typed}.")
    expected = fill_mask(loaded, f"The cat sat on the {own}.")
    assert result.tokens == expected.tokens and own in result.tokens
    assert [p.to_dict() for p in result.masks[0].predictions] == [p.to_dict() for p in expected.masks[0].predictions]


@pytest.mark.parametrize("kind", KINDS)
def test_mask_attention_is_the_masked_rows_of_a_direct_forward_pass(models, kind):
    loaded, _, direct = models[kind]
    text = "The cat [MASK] on the [MASK]."
    result = fill_mask(loaded, text)
    inputs = loaded.tokenizer(as_pipeline_text(kind, text), return_tensors="pt")
    inputs.pop("token_type_ids", None)
    with torch.no_grad():
        attentions = direct(**inputs, output_attentions=True).attentions
    expected = torch.stack([a[0] for a in attentions])[:, :, result.mask_indices, :].numpy()  # (L, H, M, T)
    assert result.mask_attention.shape == expected.shape == (3, 4, 2, len(result.tokens))
    np.testing.assert_allclose(result.mask_attention, expected, atol=1e-6)
    np.testing.assert_allclose(result.mask_attention.sum(-1), 1.0, atol=1e-5)


def _head_by_hand(kind: str, model, hidden: torch.Tensor) -> torch.Tensor:
    if kind == "bert":
        p = model.cls.predictions
        return p.decoder(p.transform.LayerNorm(p.transform.transform_act_fn(p.transform.dense(hidden))))
    if kind == "distilbert":
        x = model.vocab_layer_norm(torch.nn.functional.gelu(model.vocab_transform(hidden)))
        return model.vocab_projector(x)
    head = model.lm_head
    return head.decoder(head.layer_norm(torch.nn.functional.gelu(head.dense(hidden))))


@pytest.mark.parametrize("kind", KINDS)
def test_logit_lens_reads_every_layer_and_its_last_row_is_the_prediction(models, kind):
    loaded, _, direct = models[kind]
    text = "She drank a cup of [MASK] every morning."
    result = fill_mask(loaded, text, top_k=5, lens_top_k=5)
    lens = result.lens
    assert lens is not None and result.lens_note == ""
    assert lens.num_rows == 3 + 1  # embeddings + 3 layers
    final = result.masks[0].predictions
    assert lens.token_ids[-1, 0].tolist() == [p.token_id for p in final]
    np.testing.assert_allclose(lens.probs[-1, 0], [p.score for p in final], rtol=1e-4)
    assert lens.final_token_probs[-1, 0] == pytest.approx(final[0].score, rel=1e-4)
    inputs = loaded.tokenizer(as_pipeline_text(kind, text), return_tensors="pt")
    inputs.pop("token_type_ids", None)
    with torch.no_grad():
        hidden = direct(**inputs, output_hidden_states=True).hidden_states
        for layer in range(lens.num_rows):
            probs = _head_by_hand(kind, direct, hidden[layer][0, result.mask_indices]).softmax(-1)[0]
            top = probs.topk(5)
            assert lens.token_ids[layer, 0].tolist() == top.indices.tolist()
            np.testing.assert_allclose(lens.probs[layer, 0], top.values.numpy(), rtol=1e-4)
            assert lens.final_token_probs[layer, 0] == pytest.approx(float(probs[final[0].token_id]), rel=1e-4)
    assert lens.tokens[-1][0][0] == final[0].token


@pytest.mark.parametrize("kind", KINDS)
def test_iterative_fill_takes_the_surest_mask_first_and_sees_earlier_choices(models, kind):
    loaded, pipe, direct = models[kind]
    text = "The [MASK] sat on the [MASK] and [MASK]."
    steps = fill_iteratively(loaded, text)
    first = pipe(as_pipeline_text(kind, text), top_k=1)
    tops = [row[0] for row in first]
    surest = int(np.argmax([t["score"] for t in tops]))
    assert steps[0].token_id == tops[surest]["token"]
    assert steps[0].score == pytest.approx(tops[surest]["score"], rel=1e-4)
    assert sorted(s.index for s in steps) == fill_mask(loaded, text).mask_indices
    # Replay by hand: each step is the argmax over the still-open masks given the earlier fills.
    ids = loaded.tokenizer(as_pipeline_text(kind, text), return_tensors="pt")["input_ids"]
    for step in steps:
        with torch.no_grad():
            probs = direct(input_ids=ids).logits[0].softmax(-1)
        open_masks = (ids[0] == loaded.tokenizer.mask_token_id).nonzero().flatten().tolist()
        best = max(open_masks, key=lambda i: float(probs[i].max()))
        assert (step.index, step.token_id) == (best, int(probs[best].argmax()))
        ids[0, best] = step.token_id
    assert loaded.tokenizer.mask_token not in steps[-1].text
    assert steps[-1].text == readable_text(loaded, ids[0])


def test_text_without_a_mask_is_refused_with_how_to_fix(models):
    with pytest.raises(VizError, match=r"no mask: type \[MASK\]"):
        fill_mask(models["bert"][0], "The cat sat on the mat.")
    with pytest.raises(VizError, match=r"no mask: type \[MASK\]"):
        fill_mask(models["roberta"][0], "The cat sat on the mat [MASKED].")


@pytest.mark.parametrize(("text", "top_k", "message"), [
    ("", 5, "empty"),
    ("x" * 200_001 + "[MASK]", 5, "limit is 200,000"),
    (" ".join(["[MASK]"] * (MAX_MASKS + 1)), 5, f"at most {MAX_MASKS}"),
    ("[MASK] " * 60, 5, "The text has 60 masks"),  # as typed, not the 38 this 40-token model reads
    ("word " * 60 + "[MASK]", 5, "past the first 40 tokens"),
    ("The [MASK].", 0, "top-k must be between 1 and 100"),
    ("The [MASK].", 101, "top-k must be between 1 and 100"),
])
def test_bad_input_gets_a_clear_message(models, text, top_k, message):
    with pytest.raises(VizError, match=message):
        fill_mask(models["bert"][0], text, top_k=top_k)


def test_long_text_with_an_early_mask_is_truncated_and_says_so(models):
    result = fill_mask(models["bert"][0], "The [MASK] " + "word " * 60)
    assert result.truncated and result.num_input_tokens == 64 and len(result.tokens) == 40
    assert result.masks[0].index == 2


def test_markup_and_emoji_around_a_mask_are_just_text(models):
    result = fill_mask(models["bert"][0], "<script>alert(1)</script> 🦊 is [MASK].")
    assert "<" in result.tokens and "[UNK]" in result.tokens and len(result.masks) == 1


def test_a_decoder_cannot_be_loaded_as_a_masked_lm(tiny_model_dir):
    with pytest.raises(VizError, match="cannot be loaded with a mlm head"):
        load_model(str(tiny_model_dir("gpt2")), device="cpu", head="mlm")


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_click_a_word_to_mask_it(models, kind):
    loaded = models[kind][0]
    text = "The cat sat on the [MASK], unbelievably <mask>."
    words = maskable_words(loaded, text)
    assert [w.text for w in words] == ["The", "cat", "sat", "on", "the", "unbelievably"]
    assert mask_word(text, words[1]) == "The [MASK] sat on the [MASK], unbelievably <mask>."
    masked = fill_mask(loaded, mask_word(text, words[-1]))
    assert len(masked.masks) == 3
    with pytest.raises(VizError, match="changed"):
        mask_word("A dog sat.", words[1])
    assert maskable_words(loaded, "   ") == []


def test_known_heads_are_applied_at_the_masks_only(models):
    for kind in KINDS:
        assert separable_head(models[kind][0]) is not None, kind


def test_a_head_unknown_by_name_runs_the_full_model_and_says_why_there_is_no_lens(tiny_mlm_dir):
    folder = str(tiny_mlm_dir("electra"))
    loaded = load_model(folder, device="cpu", head="mlm")
    assert separable_head(loaded) is None
    text = "The [MASK] sat on the mat."
    result = fill_mask(loaded, text)
    expected = pipeline("fill-mask", model=folder, device="cpu")(text)
    assert [p.token_id for p in result.masks[0].predictions] == [e["token"] for e in expected]
    np.testing.assert_allclose([p.score for p in result.masks[0].predictions], [e["score"] for e in expected],
                               rtol=1e-4)
    assert result.lens is None and "not shown" in result.lens_note
    assert result.mask_attention.shape == (3, 4, 1, len(result.tokens))
    assert [s.index for s in fill_iteratively(loaded, text)] == result.mask_indices
