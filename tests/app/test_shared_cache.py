"""One server-wide cache: one model object per (name, device, head), one cache of runs for every page."""

from ui.attention.page import attention_for
from ui.inside import page as inside
from ui.state import get_model, get_run


def test_a_model_is_loaded_once_however_it_is_asked_for(tiny_bert_dir):
    name = str(tiny_bert_dir)
    assert get_model(name, "cpu") is get_model(name, "cpu", "base") is get_model(name, device="cpu")
    assert get_model(name, "cpu", "mlm") is not get_model(name, "cpu")


def test_pages_share_one_cache_of_runs(tiny_bert_dir):
    name, text = str(tiny_bert_dir), "Every page reads the same run."
    first = get_run(name, "cpu", text, None)
    assert attention_for(name, "cpu", text, None) is first  # the Explorer's compare view
    deep = inside.get_run(name, "cpu", text, None)  # step by step: the same cache, with hidden states
    assert deep is get_run(name, "cpu", text, None, hidden=True) and deep.hidden_states is not None
    assert first.hidden_states is None and (deep.attention == first.attention).all()
