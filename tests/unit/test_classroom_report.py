"""The classroom bench's bookkeeping: every student's sentence differs, p50/p95 by nearest rank, and the rows kept in
docs/BENCHMARKS.md (one per label and class size, a new run replacing its own row)."""

from __future__ import annotations

from bench import classroom, report
from bench.classroom import ClassResult, ServerSample, Student, percentile
from bench.streamlit_client import PageRun


def test_a_hundred_students_have_a_hundred_sentences_each_with_its_own_name_and_a_mask():
    students = [Student(i) for i in range(100)]
    assert len({s.sentence for s in students}) == 100
    assert len({s.new_sentence for s in students}) == 100
    for s in students:
        assert s.name in s.sentence and s.name in s.new_sentence and s.new_sentence != s.sentence
        # the masked sentence is the sentence with exactly one word masked
        differing = [(a, b) for a, b in zip(s.masked.split(), s.sentence.split(), strict=True) if a != b]
        assert len(differing) == 1 and differing[0][0].startswith("[MASK]")


def test_a_second_class_has_sentences_of_its_own():
    first, second = ({Student(start + i).sentence for i in range(30)} for start in (0, 30))
    assert len(first) == len(second) == 30 and not first & second


def test_a_class_waits_for_the_server_to_be_at_rest(monkeypatch):
    """The server's CPU seconds at each sample: busy (a second a window) for three windows, then at rest."""
    cpu = iter([0.0, 1.0, 2.0, 3.0, 3.1, 99.0])
    clock = [0.0]
    monkeypatch.setattr(classroom, "sample", lambda pids: ServerSample(500.0, next(cpu), (0.0, 0.0, 0.0)))
    monkeypatch.setattr(classroom.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(classroom.time, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
    assert classroom.wait_until_idle([1], share=0.05, window=5.0) == 20.0  # 0.1 s over the 4th window: at rest
    busy = iter(range(0, 1000, 5))
    monkeypatch.setattr(classroom, "sample", lambda pids: ServerSample(500.0, float(next(busy)), (0.0, 0.0, 0.0)))
    clock[0] = 0.0
    assert classroom.wait_until_idle([1], window=5.0, timeout=30.0) == 30.0  # never at rest: gives up at the timeout


def test_percentile_is_the_nearest_rank():
    values = [float(v) for v in range(1, 21)]  # 1 .. 20
    assert percentile(values, 0.5) == 10.0 and percentile(values, 0.95) == 19.0 and percentile(values, 1.0) == 20.0
    assert percentile([3.0], 0.95) == 3.0


def fake_result(students: int, seconds: float, error: str | None = None) -> ClassResult:
    result = ClassResult(students)
    for wave in classroom.WAVES:
        result.waves[wave.name] = [PageRun(wave.name, seconds * (i + 1), error if i == 0 else None)
                                   for i in range(students)]
    result.before = ServerSample(800.0, 10.0, (1.0, 1.0, 1.0))
    result.after = ServerSample(850.0, 10.0 + 2.0 * students, (2.0, 1.0, 1.0))
    return result


def test_rows_accumulate_and_a_run_replaces_the_row_of_its_label_and_size(tmp_path, monkeypatch):
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\nother sections stay\n")
    monkeypatch.setattr(report, "DOC", doc)
    monkeypatch.setattr(classroom, "DOC", doc)
    monkeypatch.setattr(classroom, "commit", lambda: "abc1234")  # no git process in the unit tier

    classroom.write(fake_result(2, 1.0), "before")
    classroom.write(fake_result(4, 1.0), "before")
    classroom.write(fake_result(2, 3.0, error="timeout"), "before")  # replaces the first row
    classroom.write(fake_result(2, 1.0), "after")

    rows = classroom.existing_rows()
    assert [(r[0], r[1]) for r in rows] == [("after", "2"), ("before", "2"), ("before", "4")]
    replaced = rows[1]
    assert replaced[2] == "3.00 / 6.00 / 6.00"  # Home: 3 s and 6 s -> p50 3, p95 6, max 6
    assert replaced[7] == "5 (timeout 5)"  # one student's run in each of the five waves
    assert replaced[8] == "800 → 850 (+50)" and replaced[9] == "2.00"
    assert "other sections stay" in doc.read_text() and doc.read_text().count("<!-- begin:classroom -->") == 1
