"""The command line's batches (vizcore/batch.py, issue 49 C): JSON lines in, one JSON line out per line, in order;
every answered line equals the single call's output, a bad line in the middle is answered by its error line and
the rest go on, the model is loaded once, and a batch that cannot start is one error line."""

from __future__ import annotations

import io
import json

import pytest

from vizcore import batch
from vizcore.cli import build_parser, main
from vizcore.model import loading

TEXT = "The cat sat on the mat."


def single(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def batched(capsys, tmp_path, lines: list[str], *argv: str) -> tuple[int, list[dict], str]:
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main([*argv, "--input", str(source)])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


@pytest.fixture
def loads(monkeypatch):
    """How many times a model is really loaded."""
    count = []
    real = loading._load_model

    def counting(*args, **kwargs):
        count.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(loading, "_load_model", counting)
    return count


def test_fill_mask_lines_equal_single_calls_and_a_bad_line_in_the_middle_is_answered_by_its_error(
        capsys, tmp_path, tiny_mlm_dir, loads):
    folder = str(tiny_mlm_dir("bert"))
    records = [{"text": "The cat sat on the [MASK]."}, {"text": "Paris is the [MASK] of France.", "top_k": 2},
               "{broken", {"text": "no mask at all"}, {"text": "She drank [MASK] tea.", "iterative": True},
               {"text": "-5 degrees is [MASK]."}]
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    code, out, err = batched(capsys, tmp_path, lines, "fill-mask", "--model", folder, "--top-k", "3")
    assert code == 1 and "2 of 6 lines could not be answered" in err
    assert len(out) == 6 and len(loads) == 1  # one answer per line, in order; the model loaded once
    assert out[2] == {"line": 3, "error": out[2]["error"]} and out[2]["error"].startswith("not JSON")
    assert out[3] == {"line": 4, "error": "The text has no mask: type [MASK] where a word should be predicted."}
    for record, answer in zip(records, out):
        if isinstance(record, dict) and "no mask" not in record["text"]:
            argv = ["fill-mask", f"--text={record['text']}", "--model", folder,
                    "--top-k", str(record.get("top_k", 3))] + (["--iterative"] if record.get("iterative") else [])
            assert answer == single(capsys, *argv)  # the same JSON as the one call, to the last digit


@pytest.mark.parametrize("command, records, flags", [
    ("attention", [{"text": TEXT, "layer": 2, "head": 1}, {"text": "Dogs bark.", "pair": "Cats purr."}], []),
    ("head-stats", [{"text": TEXT}, {"text": "Dogs bark."}], []),
    ("aggregate", [{"text": TEXT, "kind": "rollout"}, {"text": "Dogs bark.", "hide_special": True}],
     ["--kind", "mean"]),
    ("value-norms", [{"text": TEXT}], []),
    ("similarity", [{"text": TEXT, "pair": "A dog slept."}, {"text": "Hi.", "pair": "Hello.", "pooling": "cls"}], []),
])
def test_every_per_sentence_command_answers_lines_as_its_single_call(capsys, tmp_path, tiny_bert_dir, command,
                                                                      records, flags):
    folder = str(tiny_bert_dir)
    code, out, _ = batched(capsys, tmp_path, [json.dumps(r) for r in records], command, "--model", folder, *flags)
    assert code == 0 and len(out) == len(records)
    for record, answer in zip(records, out):
        argv = [command, "--model", folder, *flags]
        for key, value in record.items():
            option = "--" + key.replace("_", "-")
            argv += [option] if value is True else [f"{option}={value}"]
        assert answer == single(capsys, *argv)


def test_every_listed_command_takes_input():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in batch.BATCH_COMMANDS:
        assert "--input" in sub.choices[name].format_help(), name


@pytest.mark.parametrize("record, message", [
    ('{"txt": "a"}', "unknown field 'txt': this command's fields are"),
    ('{"text": "a [MASK]", "top_k": "x"}', "argument --top-k: invalid int value: 'x'"),
    ('{"text": "a [MASK]", "iterative": "yes"}', "field 'iterative' is true or false"),
    ('["a [MASK]"]', "the line is not a JSON object"),
    ('{"top_k": 2}', "the following arguments are required: --text"),
])
def test_a_bad_line_says_why_and_never_stops_the_batch(capsys, tmp_path, tiny_mlm_dir, record, message):
    folder = str(tiny_mlm_dir("bert"))
    code, out, _ = batched(capsys, tmp_path, [record, json.dumps({"text": "a [MASK] b"})], "fill-mask",
                           "--model", folder)
    assert code == 1 and out[0]["line"] == 1 and message in out[0]["error"], out[0]
    assert "python -m vizcore" not in out[0]["error"]  # the command is not named twice
    assert out[1]["masks"][0]["predictions"]  # the next line was answered


def test_stdin_and_blank_lines(capsys, monkeypatch, tiny_mlm_dir):
    folder = str(tiny_mlm_dir("bert"))
    monkeypatch.setattr("sys.stdin", io.StringIO('{"text": "a [MASK] b"}\n\n   \n{"text": "c [MASK]"}\n'))
    assert main(["fill-mask", "--model", folder, "--input", "-"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["text"] for line in out] == ["a [MASK] b", "c [MASK]"]


@pytest.mark.parametrize("argv, message", [
    (["fill-mask", "--input", "/no/such/file.jsonl"], "--input '/no/such/file.jsonl' does not exist"),
    (["fill-mask", "--input"], "--input needs a file name, or - for stdin"),
    (["fill-mask", "--top-k", "x", "--input", "-"], "argument --top-k: invalid int value: 'x'"),
])
def test_a_batch_that_cannot_start_is_one_error_line(capsys, argv, message):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: python -m vizcore fill-mask: ") and message in err
    assert err.count("python -m vizcore") == 1 and len(err.strip().splitlines()) == 1


def test_a_file_that_is_not_text_is_refused(capsys, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\xff\xfe\x00binary")
    assert main(["fill-mask", "--input", str(source)]) == 2
    assert "is not UTF-8 text" in capsys.readouterr().err


def test_progress_shows_on_a_terminal_only():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    shown, hidden = Terminal(), io.StringIO()
    for stream in (shown, hidden):
        progress = batch._Progress("fill-mask", 10, stream)
        progress.update(10, 1, final=True)
    assert "fill-mask: 10 of 10 lines" in shown.getvalue() and shown.getvalue().strip().endswith("1 error")
    assert hidden.getvalue() == ""
