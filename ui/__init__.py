"""The only Streamlit code besides app.py and pages/: the shared modules (state, url_state, layer_head,
feedback, jobs, attention_component, launch, scratch) and one package per topic, named as its page and its
vizcore package (pages/why.py -> ui/why/ -> vizcore/why/); tests/unit/test_layout.py keeps it so."""
