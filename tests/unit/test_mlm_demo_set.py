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


def test_the_windows_check_finds_a_demo_sentence_across_a_window_boundary_and_nothing_else():
    """The export's proof (tools.mpnet_mlm.demo_in_windows) reads the windows as the one stream they were cut from."""
    import numpy as np
    from transformers import AutoTokenizer

    from tools.mpnet_mlm import contains, demo_in_windows
    from vizcore.model.catalog import BUILTIN_MODELS, DEFAULT_MODEL

    tokenizer = AutoTokenizer.from_pretrained(str(BUILTIN_MODELS[DEFAULT_MODEL].source()))
    assert contains(np.array([5, 1, 2, 3, 9]), np.array([1, 2, 3])) and not contains(np.array([1, 2, 4, 3]),
                                                                                   np.array([2, 3]))

    def windows(text: str, width: int = 6) -> np.ndarray:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        ids += [0] * (-len(ids) % width)
        body = np.array(ids, dtype=np.int32).reshape(-1, width)
        edge = np.full((len(body), 1), 101, dtype=np.int32)
        return np.concatenate([edge, body, edge], axis=1)  # [CLS] + a cut of the stream + [SEP]

    clean = windows("the old man walked to the river and the capital of spain is a city")
    assert demo_in_windows(clean, tokenizer) == []
    spoiled = windows("so a long time ago they said the capital of france is paris and then left")  # cut in two
    assert "The capital of France is paris" in demo_in_windows(spoiled, tokenizer)
