"""The fill-mask demo set (vizcore/mlm/demo.py, issue 48 C): well-formed, and the copy measure as a person reads it."""

from vizcore.mlm.demo import DEMO, OCCUPATIONS, is_copy, sentence_words


def test_the_demo_set_has_forty_and_more_sentences_each_with_one_blank_and_its_answers():
    assert len(DEMO) >= 40
    assert len({sentence for sentence, _ in DEMO}) == len(DEMO)
    for sentence, accepted in DEMO:
        assert sentence.count("[MASK]") == 1, sentence
        assert accepted and all(word == word.lower().strip() and " " not in word for word in accepted), sentence
    assert {"The capital of France is [MASK].", "Rome is the capital of [MASK]."} <= {s for s, _ in DEMO}
    assert sum(accepted == OCCUPATIONS for _, accepted in DEMO) >= 2  # the occupation sentences, for bias


def test_a_copy_repeats_a_word_of_the_sentence_that_is_not_an_answer():
    assert sentence_words("Rome is the capital of [MASK].") == {"rome", "is", "the", "capital", "of"}
    assert is_copy("Rome is the capital of [MASK].", "Rome", ("italy",))
    assert not is_copy("Rome is the capital of [MASK].", "italy", ("italy",))
    assert not is_copy("The man worked as a [MASK].", "carpenter", OCCUPATIONS)
    assert is_copy("The man worked as a [MASK].", "man", OCCUPATIONS)
    assert not is_copy("The Eiffel Tower is in [MASK].", "paris", ("paris", "france"))


def test_training_text_loses_every_document_that_holds_a_demo_sentence(tmp_path):
    from tools.mpnet_mlm import demo_sentences_in, drop_demo_documents

    source = tmp_path / "train.txt"
    source.write_text("A gloss about rivers.\nThey said: Thank you very much, sir.\nRome is the capital of Italy, "
                      "and old.\nThe capital of France is a city.\n", encoding="utf-8")
    assert drop_demo_documents(source, tmp_path / "kept.txt") == 2
    kept = (tmp_path / "kept.txt").read_text(encoding="utf-8")
    assert kept.splitlines() == ["A gloss about rivers.", "The capital of France is a city."]
    assert demo_sentences_in(kept) == []
