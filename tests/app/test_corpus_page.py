"""The Corpus page in AppTest: the built-in demo's summary, role map, relation table, search (with Explorer
links) and neurons, a link's parameters, a results folder, and a run of your sentences as a background job.

Expected values are read from the demo's Parquet files with pandas here, not through the page's helpers."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pandas as pd
import pyarrow.parquet as pq

from tests.app.conftest import decode_plotly
from vizcore.corpus.results import DEMO_DIR

PAGE = "pages/corpus.py"


def ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def chart(at, key: str) -> dict:
    for element in at.get("plotly_chart"):
        if key in element.proto.id:
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart {key!r}")


def table(at, column: str) -> pd.DataFrame:
    """The table that has ``column`` (AppTest gives tables no key)."""
    for frame in at.dataframe:
        if column in frame.value.columns:
            return frame.value
    raise AssertionError(f"no table with a column {column!r}")


def best_by_hand(relation: str, direction: str) -> pd.Series:
    rel = pq.read_table(DEMO_DIR / "relations.parquet").to_pandas()
    rows = rel[(rel["relation"] == relation) & (rel["direction"] == direction)]
    return rows.loc[(rows["hits"] / rows["count"]).idxmax()]


def test_the_demo_shows_its_summary_roles_and_relations(new_app):
    at = new_app(PAGE).run()
    ok(at)
    summary = json.loads((DEMO_DIR / "summary.json").read_text())
    shown = metrics(at)
    assert shown["Sentences"] == f"{summary['sentences']:,}" and summary["sentences"] >= 1000
    assert shown["Arcs parsed"] == f"{summary['arcs']:,}"
    roles = chart(at, "corpus.role_map")["data"][0]
    assert len(roles["y"]) == 6 and len(roles["x"]) == 12
    relations = table(at, "best head").set_index("relation")
    expected = best_by_hand("det", "dependent->head")
    assert relations.loc["det", "best head"] == f"{expected['layer'] + 1}-{expected['head'] + 1}"
    assert abs(relations.loc["det", "accuracy"] - expected["hits"] / expected["count"]) < 1e-12
    assert relations.loc["det", "accuracy"] > relations.loc["det", "baseline accuracy"]
    neurons_tab_by_hand(at)


def neurons_tab_by_hand(at) -> None:
    """The Neurons tab (drawn with the others): the search for its default token ('dog') and the examples of the
    neuron it finds first, against the demo's neurons.parquet counted here with pandas."""
    hits = pq.read_table(DEMO_DIR / "neurons.parquet").to_pandas()
    dog = hits[hits["token"] == "dog"].groupby(["layer", "neuron"])["activation"].agg(["size", "max"])
    dog = dog.reset_index().sort_values(["size", "max"], ascending=False).iloc[0]
    found = table(at, "hits")
    assert (found["layer"].iloc[0], found["neuron"].iloc[0], found["hits"].iloc[0]) == (
        dog["layer"] + 1, dog["neuron"] + 1, dog["size"])
    examples = table(at, "before")  # the stepper starts on the search's first neuron
    mine = hits[(hits["layer"] == dog["layer"]) & (hits["neuron"] == dog["neuron"])].sort_values("rank")
    assert examples["activation"].tolist() == mine["activation"].tolist()
    assert (examples["before"] + examples["token"] + examples["after"]).tolist() == mine["context"].tolist()


def test_search_lists_a_heads_top_sentences_with_explorer_links(new_app):
    at = new_app(PAGE).run()
    expected = best_by_hand("det", "dependent->head")
    assert (at.number_input(key="corpus.layer").value, at.number_input(key="corpus.head").value) == (
        expected["layer"] + 1, expected["head"] + 1)
    rows = table(at, "explorer")
    examples = pq.read_table(DEMO_DIR / "examples.parquet").to_pandas()
    mine = examples[(examples["relation"] == "det") & (examples["direction"] == "dependent->head")
                    & (examples["layer"] == expected["layer"]) & (examples["head"] == expected["head"])]
    assert rows["sentence_id"].tolist() == mine.sort_values("weight", ascending=False)["sentence_id"].tolist()
    sentences = pq.read_table(DEMO_DIR / "sentences").to_pandas().set_index("sentence_id")["text"]
    link = urlparse(rows["explorer"].iloc[0])
    params = {k: v[0] for k, v in parse_qs(link.query).items()}
    assert link.path == "/attention"
    assert params["text"] == sentences[rows["sentence_id"].iloc[0]]
    assert (params["layer"], params["head"]) == (str(expected["layer"] + 1), str(expected["head"] + 1))


def test_a_link_chooses_the_relation_head_and_measure_and_a_bad_value_is_reported(new_app):
    at = new_app(PAGE, relation="dobj", direction="head->dependent", layer="3", head="1", measure="sep",
                 source="nowhere").run()
    ok(at)
    assert any("source='nowhere' was not used" in w.value for w in at.warning)
    assert at.selectbox(key="corpus.relation").value == "dobj"
    assert (at.number_input(key="corpus.layer").value, at.number_input(key="corpus.head").value) == (3, 1)
    assert at.selectbox(key="corpus.measure").value == "sep"
    boxes = chart(at, "corpus.boxes")["data"][0]
    heads = pq.read_table(DEMO_DIR / "heads.parquet").to_pandas()
    median = heads[(heads["layer"] == 0) & (heads["head"] == 0)]["sep"].median()
    assert boxes["x"][0] == "1-1" and abs(decode_plotly(boxes["median"])[0] - median) < 1e-6
    assert (at.query_params["relation"], at.query_params["layer"], at.query_params["head"]) == ("dobj", "3", "1")


def test_a_folder_that_holds_no_results_is_a_message(new_app, tmp_path):
    at = new_app(PAGE, source="folder").run()
    at.text_input(key="corpus.folder").input(str(tmp_path)).run()
    ok(at)
    assert any("holds no corpus results" in e.value for e in at.error)


def test_your_sentences_run_as_a_background_job(new_app):
    at = new_app(PAGE, source="run").run()
    at.text_area(key="corpus.texts").input("The dog chased the cat.\n\nA bird sang in the old tree.\n").run()
    at.button(key="corpus.run").click().run()
    job = at.session_state["corpus.job"]
    job.join(180)
    assert job.status == "done", job.error
    at.run()
    ok(at)
    shown = metrics(at)
    assert (shown["Sentences"], shown["Blank lines"]) == ("2", "1")
    found = table(at, "explorer")
    assert set(found["text"]) <= {"The dog chased the cat.", "A bird sang in the old tree."} and len(found) > 0


def test_an_empty_run_says_so_in_the_words_of_the_box_and_keeps_the_buttons_and_the_demo(new_app):
    """Issue 35 F: it blamed a file the user never made ("'out-64….txt' has no sentences") and lost Stop."""
    at = new_app(PAGE, source="run").run()
    at.text_area(key="corpus.texts").input("\n \u200b\n").run()
    at.button(key="corpus.run").click().run()
    ok(at)
    assert [e.value for e in at.error] == ["There are no sentences to run: type at least one in the box, one per line."]
    assert not any("out-" in e.value for e in at.error)
    assert at.button(key="corpus.stop").disabled and not at.button(key="corpus.run").disabled
    assert at.text_area(key="corpus.texts").value == "\n \u200b\n"  # what was typed stays
    assert "corpus.job" not in at.session_state or at.session_state["corpus.job"] is None


def test_a_new_run_replaces_the_last_ones_files_and_the_server_removes_them_when_it_stops(new_app):
    from ui.scratch import remove_all

    at = new_app(PAGE, source="run").run()
    at.checkbox(key="corpus.syntax").uncheck()
    outputs = []
    for texts in ("The dog chased the cat.\n", "A bird sang.\n"):
        at.text_area(key="corpus.texts").input(texts).run()
        at.button(key="corpus.run").click().run()
        job = at.session_state["corpus.job"]
        job.join(180)
        assert job.status == "done", job.error
        outputs.append(Path(job.settings.out))
    folder = Path(at.session_state["corpus.run_dir"])
    assert sorted(folder.glob("out-*")) == [outputs[1], outputs[1].with_suffix(".txt")]
    at.text_area(key="corpus.texts").input("\n \n").run()
    at.button(key="corpus.run").click().run()  # a run that cannot start leaves the last one's results
    assert at.error and sorted(folder.glob("out-*")) == [outputs[1], outputs[1].with_suffix(".txt")]
    at.run()
    ok(at)
    assert metrics(at)["Sentences"] == "1"
    remove_all()  # what the server does when it stops
    assert not folder.exists()


def test_the_servers_lifespan_removes_the_sessions_folders():
    """``streamlit run app.py`` serves app.py's st.App; uvicorn ends on SIGTERM without atexit, so its lifespan
    removes the folders."""
    import asyncio
    import concurrent.futures
    import importlib

    from ui import scratch

    entry = importlib.import_module("app")  # as Streamlit imports it: the module that builds the st.App
    assert entry.app._user_lifespan is entry._lifespan  # what uvicorn runs around the server

    async def serve_and_stop() -> Path:
        async with entry._lifespan(entry.app):
            folder = scratch.new_folder("vizcore-corpus-")
            (folder / "input.txt").write_text("x")
        return folder

    # In a thread of its own: the test session is one process for all tiers (make test), and where a browser
    # test ran first, Playwright's sync API holds a running event loop in this thread (asyncio.run refuses it).
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert not pool.submit(asyncio.run, serve_and_stop()).result(timeout=60).exists()
