"""What the startup cache holds (the cache itself, with the embedded model: tests/integration/test_startup_cache.py)."""

from vizcore.attention.examples import DEFAULT_TEXT, EXAMPLES, startup_inputs


def test_startup_inputs_are_the_default_sentence_and_every_example_once():
    inputs = startup_inputs()
    assert inputs[0] == (DEFAULT_TEXT, None)
    assert len(inputs) == len(set(inputs)) == len({(t, p or None) for _, t, p in EXAMPLES})
    assert ("The cat sat on the mat.", "The dog lay on the rug.") in inputs
