"""Corpus: what each head does over many sentences (head roles, dependency relations, distributions, search), and
what each feed-forward neuron fires on.

Computation: vizcore/corpus/ (engine, measures, syntax, relations, roles, results), vizcore/neurons/ · figures:
vizcore/corpus/figures.py, vizcore/neurons/figures.py · CLI: python -m vizcore corpus, python -m vizcore neurons ·
docs: docs/CORPUS.md, docs/SCALE.md, docs/NEURONS.md
UI: ui/corpus/ (page: which results, the background run, the four views; feedforward: the Neurons tab)
"""

import streamlit as st

from ui import url_state
from ui.corpus import page as corpus
from ui.corpus.feedforward import show_neurons
from ui.feedback import or_stop

st.title("Corpus: what the heads do over many sentences")
st.markdown(
    "One sentence's attention is an anecdote. Over a corpus, each head's **habits** show: heads that look at "
    "the previous word, park on [SEP], spread out, or follow a **dependency relation** (a determiner to its "
    "noun, an object to its verb) better than any fixed offset, as Clark et al. (2019) found in BERT.")
url_state.warn(url_state.read(corpus.LINK))
folder = corpus.choose_folder()
params = {"source": st.session_state.get(corpus.KEY_SOURCE)}
if folder:
    if params["source"] == "folder":
        params["folder"] = folder
    stamp = corpus.stamp_of(folder)
    results = or_stop(corpus.results, folder, stamp)
    corpus.show_summary(results)
    roles, relations, distributions, search, neurons = st.tabs(["Head roles", "Relations", "Distributions", "Search",
                                                                "Neurons"])
    with roles:
        corpus.show_roles(folder, stamp)
    with relations:
        corpus.show_relations(results)
    with distributions:
        params["measure"] = corpus.show_distributions(results, folder, stamp)
    with search:
        params.update(corpus.show_search(results))
    with neurons:
        show_neurons(folder, stamp)
url_state.write(params)
