"""What the startup cache holds (the cache itself, with the embedded model: tests/integration/test_startup_cache.py)."""

from vizcore.attention.examples import DEFAULT_TEXT, EXAMPLES, startup_inputs


def test_startup_inputs_are_the_default_sentence_and_every_example_once():
    inputs = startup_inputs()
    assert inputs[0] == (DEFAULT_TEXT, None)
    assert len(inputs) == len(set(inputs)) == len({(t, p or None) for _, t, p in EXAMPLES})
    assert ("The cat sat on the mat.", "The dog lay on the rug.") in inputs


def test_the_key_keeps_the_code_hash_between_calls_but_follows_an_edit(tmp_path, monkeypatch):
    """Every page run asks for the fingerprint, so the code's hash is kept; an edited file still changes it."""
    from vizcore.model import startup_cache

    for name in startup_cache._CODE:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"# {name}\n")
    monkeypatch.setattr(startup_cache, "_VIZCORE", tmp_path)
    before = startup_cache.fingerprint()
    assert startup_cache.fingerprint() == before
    (tmp_path / "model/run.py").write_text("# model/run.py, edited\n")
    assert startup_cache.fingerprint()["code"] != before["code"]


def test_a_callers_change_to_the_fingerprint_is_not_kept():
    from vizcore.model import startup_cache

    startup_cache.fingerprint()["versions"]["torch"] += ".other"
    assert not startup_cache.fingerprint()["versions"]["torch"].endswith(".other")
