"""Steps name BERT's special tokens as the model on screen writes them (issue 47 B): ``in_model_terms``."""

from __future__ import annotations

from vizcore.lessons.lesson import in_model_terms, load_lessons


def test_cls_and_sep_are_named_as_the_model_writes_them_and_kept_without_one():
    text = "Which head puts the most weight on [SEP]? Not [CLS]."
    assert in_model_terms(text, "<s>", "</s>") == "Which head puts the most weight on </s>? Not <s>."
    assert in_model_terms(text, "[CLS]", "[SEP]") == text
    assert in_model_terms(text, None, None) == text


def test_every_step_that_names_sep_or_cls_in_its_question_reads_in_mpnets_terms():
    asked = [step.question.text for lesson in load_lessons() for step in lesson.steps
             if step.question is not None and ("[SEP]" in step.question.text or "[CLS]" in step.question.text)]
    assert asked, "the heads lesson asks about [SEP]"
    assert all("[SEP]" not in in_model_terms(t, "<s>", "</s>") and "[CLS]" not in in_model_terms(t, "<s>", "</s>")
               for t in asked)


def test_a_claim_over_the_masked_lm_this_app_chooses_names_no_model():
    """The fill-mask step is answered by the base-size masked-LM when it is installed, else by the MiniLM one
    (vizcore.model.catalog.fill_mask_model): its claim said "This is the offline MiniLM" over mpnet-mlm-tuned's
    answers. The view's caption names the model that answered."""
    from vizcore.model.catalog import FILL_MASK_MODELS

    names = {"minilm", "mpnet", *(name.lower() for name in FILL_MASK_MODELS)}
    for lesson in load_lessons():
        for number, step in enumerate(lesson.steps, 1):
            if step.kind in ("fill_mask", "masking"):
                assert not [name for name in names if name in step.claim.lower()], (lesson.id, number)
