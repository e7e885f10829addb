"""Streamlit side of the Corpus page: which results are shown (the built-in demo, a folder, or a run of your
sentences as a background job), and the four views of them (head roles, relations, distributions, search).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import streamlit as st

from ui import jobs, scratch, url_state
from ui.feedback import CHART, or_none
from ui.layer_head import layer_head
from ui.layout import for_screen
from ui.state import get_model, segmented_choice, selection
from vizcore.corpus import figures
from vizcore.corpus.measures import MEASURES, Worker
from vizcore.corpus.relations import ALL, best_heads
from vizcore.corpus.results import DEMO_DIR, CorpusResults, head_quantiles, load_results, top_sentences
from vizcore.corpus.roles import BROAD_ENTROPY, MIN_ARCS, POSITION_SHARE, SPECIAL_SHARE, SYNTAX_MARGIN, head_roles
from vizcore.corpus.settings import Settings
from vizcore.corpus.syntax import DIRECTIONS
from vizcore.errors import VizError

SOURCES = {"demo": "Built-in demo", "folder": "Open a results folder", "run": "Run your sentences"}
KEY_SOURCE, KEY_FOLDER, KEY_TEXTS, KEY_SYNTAX = "corpus.source", "corpus.folder", "corpus.texts", "corpus.syntax"
KEY_NEURONS = "corpus.neurons"
NEURON_TOP = 20  # examples kept per feed-forward neuron
KEY_JOB, KEY_RUN_DIR = "corpus.job", "corpus.run_dir"
KEY_MEASURE, KEY_MEASURE_LAYER = "corpus.measure", "corpus.measure_layer"
KEY_RELATION, KEY_DIRECTION, KEY_LAYER, KEY_HEAD = "corpus.relation", "corpus.direction", "corpus.layer", "corpus.head"
KEY_BARS_DIRECTION = "corpus.bars_direction"
MAX_RUN_SENTENCES = 2_000
EXAMPLE_TEXTS = "The cat sat on the mat.\nShe gave her brother the old red bicycle.\nDogs bark at the mailman."


def _run_folder() -> Path:
    """This session's folder for its runs (it keeps the latest; ui/scratch.py removes it with the server)."""
    folder = st.session_state.get(KEY_RUN_DIR)
    if not folder or not Path(folder).is_dir():
        folder = str(scratch.new_folder("vizcore-corpus-"))
        st.session_state[KEY_RUN_DIR] = folder
    return Path(folder)


# The search's layer and head belong to the results' model (maybe not the sidebar's): the shared steppers under
# this page's keys, starting on the best head for the relation.
LINK = url_state.Link("corpus", {
    "source": (KEY_SOURCE, url_state.OneOf(tuple(SOURCES))),
    "folder": (KEY_FOLDER, url_state.Text()),
    "measure": (KEY_MEASURE, url_state.OneOf(tuple(MEASURES))),
    "relation": (KEY_RELATION, url_state.Choice()),
    "direction": (KEY_DIRECTION, url_state.OneOf(tuple(DIRECTIONS))),
    "layer": (KEY_LAYER, url_state.Integer(1)),
    "head": (KEY_HEAD, url_state.Integer(1)),
})


@st.cache_data(show_spinner="Reading the corpus results…", max_entries=4)
def results(folder: str, stamp: float) -> CorpusResults:
    """A finished run's tables (``stamp``: summary.json's modification time, so a rerun is read again)."""
    return load_results(folder)


@st.cache_data(show_spinner=False, max_entries=4)
def roles(folder: str, stamp: float) -> pd.DataFrame:
    r = results(folder, stamp)
    return head_roles(r.heads, r.sentences, r.relations)


@st.cache_data(show_spinner=False, max_entries=16)
def quantiles(folder: str, stamp: float, measure: str) -> pd.DataFrame:
    return head_quantiles(results(folder, stamp).heads, measure)


def stamp_of(folder: str) -> float:
    path = Path(folder).expanduser() / "summary.json"
    return path.stat().st_mtime if path.is_file() else 0.0


# ---- which results ---------------------------------------------------------------------------------

def choose_folder() -> str | None:
    """The folder whose results are shown, from the source control; None while nothing is ready."""
    source = segmented_choice("Results", SOURCES, KEY_SOURCE, "demo")
    if source == "demo":
        st.caption(f"The built-in demo: {_demo_caption()}.")
        return str(DEMO_DIR)
    if source == "folder":
        folder = st.text_input("Results folder (the --out of python -m vizcore corpus)", key=KEY_FOLDER,
                               placeholder="e.g. runs/my-corpus")
        return folder.strip() or None
    return run_controls()


def _demo_caption() -> str:
    return ("1,119 sentences (the 519 of the search collection and 600 of the NER silver data, vizcore/data/), "
            "all-MiniLM-L6-v2, with spaCy's dependency parses and each feed-forward neuron's 20 top examples; "
            "precomputed by python -m tools.corpus_demo")


def run_controls() -> str | None:
    """Your sentences as a background job (the server's queue); returns its folder once it has finished."""
    state = st.session_state
    state.setdefault(KEY_TEXTS, EXAMPLE_TEXTS)
    texts = st.text_area(f"Sentences, one per line (at most {MAX_RUN_SENTENCES:,})", key=KEY_TEXTS, height=160)
    syntax = st.checkbox("Dependency parses with spaCy (relations and search)", value=True, key=KEY_SYNTAX)
    neurons = st.checkbox(f"Each feed-forward neuron's {NEURON_TOP} top examples (the Neurons tab)", value=True,
                          key=KEY_NEURONS)
    job = jobs.current(KEY_JOB)
    left, right = st.columns(2)
    run = left.button("Run", type="primary", key="corpus.run", disabled=jobs.active(job))
    stop = right.button("Stop", key="corpus.stop", disabled=not jobs.active(job))  # drawn before any message
    if stop:
        jobs.stop(KEY_JOB)
    if run:
        or_none(_start, texts, syntax, neurons)  # a refusal is a message; the rest of the page (the demo) stays
    jobs.live(KEY_JOB, _draw_job)
    job = jobs.current(KEY_JOB)
    if job is None or jobs.active(job):
        return None
    if job.status == "error":
        st.error(job.error)
        return None
    if job.status == "stopped":
        st.info(jobs.stopped_text(job, f"Stopped after {job.done:,} of {job.total:,} sentences; Run again resumes "
                                       "from the finished shards."))
        return None
    return job.settings.out


def _start(texts: str, syntax: bool, neurons: bool):
    from vizcore.corpus.inputs import from_lines
    from vizcore.text import is_blank

    lines = texts.splitlines()
    if all(is_blank(line) for line in lines):
        raise VizError("There are no sentences to run: type at least one in the box, one per line.")
    if sum(1 for line in lines if not is_blank(line)) > MAX_RUN_SENTENCES:
        raise VizError(f"That is more than {MAX_RUN_SENTENCES:,} sentences: run larger corpora with "
                       "python -m vizcore corpus and open the folder here.")
    sel = selection()
    loaded = get_model(sel.model, sel.device)
    worker = Worker(loaded, _parser() if syntax else None)
    folder = _run_folder()
    out = folder / f"out-{abs(hash((texts, syntax, neurons, sel.model))) % 10**10}"
    from_lines(lines, "your sentences")  # their problems (a line too long) now, as a message, before any file
    source = folder / f"{out.name}.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from vizcore.corpus.job import CorpusJob

    settings = Settings(input=str(source), out=str(out), model=sel.model, syntax=syntax, batch_size=16,
                        shard_size=256, neurons=NEURON_TOP if neurons else 0)
    job = jobs.submit(KEY_JOB, CorpusJob(settings, worker))
    for earlier in folder.glob("out-*"):  # the same sentences again resume in theirs; others are done with
        if earlier.name in (out.name, source.name):
            continue
        if earlier.is_dir():
            shutil.rmtree(earlier, ignore_errors=True)
        else:
            earlier.unlink(missing_ok=True)
    return job


@st.cache_resource(show_spinner="Loading spaCy's parser (once per server)…")
def _parser():
    from vizcore.corpus.measures import cached_parser

    return cached_parser()


def _draw_job(job) -> None:
    total = max(job.total, 1)
    st.progress(min(job.done / total, 1.0), text=f"{job.done:,} of {job.total:,} sentences")


# ---- the views -------------------------------------------------------------------------------------

def show_summary(r: CorpusResults) -> None:
    s = r.summary
    cols = st.columns(5)
    cols[0].metric("Sentences", f"{s['sentences']:,}")
    cols[1].metric("Blank lines", f"{s['skipped']:,}", help="Blank lines in the input are skipped, not run")
    cols[2].metric("Truncated", f"{s['truncated']:,}")
    cols[3].metric("Layers x heads", f"{r.num_layers} x {r.num_heads}")
    cols[4].metric("Arcs parsed", f"{s['arcs']:,}" if s.get("arcs") is not None else "no syntax")
    st.caption(f"Model **{s['model']}**, engine {s['engine']}, {s['seconds']:,.1f} s. Layers and heads are counted "
               "from 1 here, from 0 in the Parquet files.")


def show_roles(folder: str, stamp: float) -> None:
    table = roles(folder, stamp)
    st.plotly_chart(for_screen(figures.role_map(table)), config=CHART, key="corpus.role_map")
    counts = table["role"].value_counts()
    st.caption(
        "One role per head, the first that holds: **syntactic** (beats the best fixed offset by "
        f"{SYNTAX_MARGIN:.0%} or more on a relation with at least {MIN_ARCS} arcs; the cell names it), "
        f"**positional** (at least {POSITION_SHARE:.0%} of its weight on the previous token, the next one or "
        f"itself), **special-token** ({SPECIAL_SHARE:.0%} on [CLS] and [SEP]), **broad** (entropy at least "
        f"{BROAD_ENTROPY:.0%} of uniform), else **mixed**. Here: "
        + ", ".join(f"{n} {role}" for role, n in counts.items()) + ".")


def show_relations(r: CorpusResults) -> None:
    if r.relations is None:
        st.info("This run has no dependency parses: rerun it with --syntax (or tick the parses box).")
        return
    direction = st.radio("Direction", DIRECTIONS, horizontal=True, key=KEY_BARS_DIRECTION)
    best = best_heads(r.relations, MIN_ARCS)
    st.plotly_chart(for_screen(figures.relation_bars(best[best["relation"] != ALL], direction)), config=CHART,
                    key="corpus.relation_bars")
    shown = best[best["direction"] == direction].sort_values("count", ascending=False)
    st.dataframe(pd.DataFrame({
        "relation": shown["relation"], "arcs": shown["count"],
        "best head": [f"{a + 1}-{b + 1}" for a, b in zip(shown["layer"], shown["head"])],
        "accuracy": shown["accuracy"], "best fixed offset": shown["baseline_offset"],
        "baseline accuracy": shown["baseline_accuracy"]}),
        hide_index=True, key="corpus.relation_table",
        column_config={"accuracy": st.column_config.NumberColumn(format="percent"),
                       "baseline accuracy": st.column_config.NumberColumn(format="percent")})
    st.caption(f"Relations with at least {MIN_ARCS} arcs; a head is layer-head, 1-based. Word-level attention as "
               "Clark et al. (2019): to a split word the sum over its pieces, from it the mean.")


def show_distributions(r: CorpusResults, folder: str, stamp: float) -> str:
    state = st.session_state
    if state.get(KEY_MEASURE) not in MEASURES:
        state[KEY_MEASURE] = "entropy"
    left, right = st.columns(2)
    measure = left.selectbox("Measure", MEASURES, key=KEY_MEASURE)
    options = ["all"] + [str(i) for i in range(1, r.num_layers + 1)]
    if state.get(KEY_MEASURE_LAYER) not in options:
        state[KEY_MEASURE_LAYER] = "1"
    layer = right.selectbox("Layer", options, key=KEY_MEASURE_LAYER, format_func=lambda o: "every layer"
                            if o == "all" else f"layer {o}")
    table = quantiles(folder, stamp, measure)
    st.plotly_chart(for_screen(figures.measure_boxes(table, measure, None if layer == "all" else int(layer) - 1)),
                    config=CHART,
                    key="corpus.boxes")
    return measure


def show_search(r: CorpusResults) -> dict:
    if r.examples is None:
        st.info("Search needs dependency parses: rerun with --syntax.")
        return {}
    relations = sorted(set(r.examples["relation"]))
    url_state.settle_choice(KEY_RELATION, relations, "det" if "det" in relations else relations[0])
    left, right = st.columns(2)
    relation_column, direction_column = left.columns(2)
    relation = relation_column.selectbox("Relation", relations, key=KEY_RELATION)
    direction = direction_column.selectbox("Direction", DIRECTIONS, key=KEY_DIRECTION)
    best = best_heads(r.relations[r.relations["relation"] == relation])
    best = best[best["direction"] == direction]
    default = (int(best["layer"].iloc[0]) + 1, int(best["head"].iloc[0]) + 1) if len(best) else None
    layer, head = layer_head(r.num_layers, r.num_heads, (KEY_LAYER, KEY_HEAD), default=default, where=right)
    found = top_sentences(r, relation, direction, int(layer) - 1, int(head) - 1)
    st.dataframe(found, hide_index=True, key="corpus.search_table", column_config={
        "sentence_id": st.column_config.NumberColumn("line", help="0-based line of the input"),
        "weight": st.column_config.NumberColumn("weight", format="%.3f",
                                                help="mean word-level attention over the sentence's arcs"),
        "explorer": st.column_config.LinkColumn("open", display_text="Explorer ↗")})
    st.caption(f"The sentences where head {layer}-{head} puts the most weight {direction.replace('->', ' → ')} on "
               f"**{relation}** arcs (best first). 'Explorer' opens the sentence at this layer and head.")
    return {"relation": relation, "direction": direction, "layer": int(layer), "head": int(head)}
