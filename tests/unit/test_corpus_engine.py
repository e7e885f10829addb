"""The local corpus engine on a tiny BERT: one row per sentence, layer and head equal to the one-sentence core's
head statistics; padding in a batch changes nothing; truncation counted; shards resume; syntax counts add up."""

from __future__ import annotations

import json
import shutil
import sys
import threading

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.support.tiny import TINY
from vizcore.attention.head_stats import head_statistics
from vizcore.corpus.engine import Settings, make_worker, run_corpus
from vizcore.corpus.measures import MEASURES
from vizcore.errors import VizError
from vizcore.model.run import run

LINES = ["The cat sat on the mat.", "", "Dogs bark.", "She gave him the book, and he read it twice!",
         "  ", "Unbelievably, the mailman's dog didn't bite anyone.", "Go.",
         " ".join(["word"] * 80) + ".",  # longer than the tiny model's 64 positions: truncated
         "The old man the boats."]


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "c.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def worker(tiny_bert_dir):
    return make_worker(str(tiny_bert_dir), "cpu", syntax=True)


def heads(out):
    frame = pq.read_table(out / "heads.parquet").to_pandas().sort_values(["sentence_id", "layer", "head"])
    return frame


def run_it(worker, corpus_file, out, **kwargs):
    settings = Settings(input=str(corpus_file), out=str(out), model=worker.loaded.name, device="cpu", **kwargs)
    return run_corpus(settings, worker=worker)


def test_rows_equal_the_one_sentence_core_and_truncation_is_counted(worker, corpus_file, tmp_path):
    summary = run_it(worker, corpus_file, tmp_path / "out", batch_size=4)
    assert (summary["sentences"], summary["skipped"], summary["truncated"]) == (7, 2, 1)
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == summary
    frame = heads(tmp_path / "out")
    assert len(frame) == 7 * TINY["layers"] * TINY["heads"]
    assert sorted(frame["sentence_id"].unique()) == [0, 2, 3, 5, 6, 7, 8]  # 0-based line numbers
    for sentence_id in (0, 5, 7):
        one = run(worker.loaded, LINES[sentence_id])
        stats = head_statistics(one.attention, one.tokens, one.special_mask)
        mine = frame[frame["sentence_id"] == sentence_id]
        for name in MEASURES:
            np.testing.assert_allclose(mine[name].to_numpy().reshape(TINY["layers"], TINY["heads"]), stats[name],
                                       atol=1e-6, err_msg=f"{name} of line {sentence_id}")


def test_padding_in_a_batch_changes_nothing(worker, corpus_file, tmp_path):
    run_it(worker, corpus_file, tmp_path / "batched", batch_size=7)
    run_it(worker, corpus_file, tmp_path / "single", batch_size=1)
    batched, single = heads(tmp_path / "batched"), heads(tmp_path / "single")
    assert batched[["sentence_id", "layer", "head"]].equals(single[["sentence_id", "layer", "head"]])
    np.testing.assert_allclose(batched[list(MEASURES)].to_numpy(), single[list(MEASURES)].to_numpy(), atol=1e-6)


def test_a_rerun_keeps_finished_shards_and_computes_the_rest(worker, corpus_file, tmp_path):
    out = tmp_path / "out"
    first = run_it(worker, corpus_file, out, shard_size=3)
    assert first["shards"] == 3 and first["shards_reused"] == 0
    before = heads(out)
    (out / "sentences" / "part-00001.parquet").unlink()  # as if the run had stopped inside shard 1
    second = run_it(worker, corpus_file, out, shard_size=3)
    assert (second["shards_reused"], second["sentences_computed"], second["complete"]) == (2, 3, True)
    after = heads(out)
    np.testing.assert_array_equal(before.to_numpy(), after.to_numpy())
    with pytest.raises(VizError, match="holds results of another run .different shard_size"):
        run_it(worker, corpus_file, out, shard_size=2)


def test_a_stopped_run_writes_no_partial_shard(worker, corpus_file, tmp_path):
    stop = threading.Event()
    stop.set()
    settings = Settings(input=str(corpus_file), out=str(tmp_path / "out"), model=worker.loaded.name, shard_size=3)
    summary = run_corpus(settings, worker=worker, stop=stop)
    assert (summary["complete"], summary["shards_finished"]) == (False, 0)
    assert not (tmp_path / "out" / "heads.parquet").exists()


def test_syntax_counts_add_up_to_the_aligned_arcs(worker, corpus_file, tmp_path):
    out = tmp_path / "out"
    summary = run_it(worker, corpus_file, out, syntax=True, shard_size=4)
    table = pq.read_table(out / "relations.parquet").to_pandas()
    pooled = table[(table["relation"] == "all") & (table["layer"] == 0) & (table["head"] == 0)]
    aligned = summary["arcs"] - summary["unaligned_arcs"]
    assert summary["unaligned_arcs"] > 0  # the truncated line's last words have no piece
    assert set(pooled["count"]) == {aligned}
    per_relation = table[(table["relation"] != "all") & (table["layer"] == 0) & (table["head"] == 0)]
    assert per_relation.groupby("direction")["count"].sum().tolist() == [aligned] * 2
    assert table["accuracy"].between(0, 1).all() and table["baseline_accuracy"].between(0, 1).all()
    assert {"det", "nsubj", "dobj"} <= set(table["relation"])
    examples = pq.read_table(out / "examples.parquet").to_pandas()
    assert set(examples["sentence_id"]) <= {0, 2, 3, 5, 6, 7, 8}
    assert examples.groupby(["relation", "direction", "layer", "head"]).size().max() <= 10


def test_results_of_a_copied_folder_stay_readable(worker, corpus_file, tmp_path):
    run_it(worker, corpus_file, tmp_path / "out", shard_size=2)
    shutil.copytree(tmp_path / "out", tmp_path / "copy")
    assert len(pq.read_table(tmp_path / "copy" / "heads.parquet")) == 7 * TINY["layers"] * TINY["heads"]


def test_cli_prints_the_summary_and_a_progress_bar_on_stderr(tiny_bert_dir, corpus_file, tmp_path, capsys):
    from tests.unit.test_cli_hostile import run_main

    code, out, err = run_main(capsys, "corpus", "--input", str(corpus_file), "--out", str(tmp_path / "o"),
                              "--model", str(tiny_bert_dir), "--device", "cpu", "--batch-size", "3", "--format", "json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["sentences"], summary["skipped"], summary["truncated"], summary["engine"]) == (7, 2, 1, "local")
    assert "7 sentences from 'c.txt' (2 blank lines skipped)" in err
    assert "corpus [" + "#" * 30 + "] 7/7 sentences (100 %" in err


def test_a_corpus_job_reports_progress_and_a_rerun_after_stop_resumes(worker, corpus_file, tmp_path):
    from vizcore.corpus.job import CorpusJob

    settings = Settings(input=str(corpus_file), out=str(tmp_path / "out"), model=worker.loaded.name, shard_size=3)
    stopped = CorpusJob(settings, worker)
    stopped.stop()  # before it starts: never runs
    stopped.start()
    stopped.join(10)
    assert stopped.status == "stopped" and stopped.summary is None
    job = CorpusJob(settings, worker).start()
    job.join(120)
    assert job.status == "done", job.error
    assert (job.done, job.total) == (7, 7) and job.summary["complete"] and job.summary["shards"] == 3


def test_a_local_ray_that_does_not_start_is_a_message_not_a_traceback(monkeypatch):
    """Ray raises a bare Exception when its local node does not come up within its own 30 s (seen at a load
    average of 24): the CLI says so in one line, with what to do, instead of 'unexpected Exception'."""
    import types

    from vizcore.corpus.ray_engine import start_ray
    from vizcore.errors import VizError

    def init(**kwargs):
        raise Exception("The current node timed out during startup. This could happen because ...")

    fake = types.SimpleNamespace(is_initialized=lambda: False, init=init)
    monkeypatch.setitem(sys.modules, "ray", fake)
    with pytest.raises(VizError, match=r"Ray \(local\): The current node timed out during startup.*--engine local"):
        start_ray(types.SimpleNamespace(ray_address=None, workers=2))
