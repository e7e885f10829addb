"""The translator on a tiny random model: the record it builds, outside-the-grammar inputs, bad input,
the weights file round trip, and the translate-date command in process (fields, --input, errors)."""

import json

import numpy as np
import pytest
import torch

from vizcore.cli import main
from vizcore.errors import VizError
from vizcore.seq2seq import translator as translator_module
from vizcore.seq2seq.model import DateModelConfig, DateTransformer
from vizcore.seq2seq.translator import Translator, load_weights, save_weights, translate

CONFIG = DateModelConfig(d_model=16, heads=2, encoder_layers=2, decoder_layers=2, d_ff=16)


@pytest.fixture(scope="module")
def tiny() -> Translator:
    torch.manual_seed(3)
    return Translator(DateTransformer(CONFIG).eval(), name="tiny")


def forced(tiny: Translator, outputs: list[str], monkeypatch) -> None:
    """Make the tiny model 'answer' ``outputs`` so the record's rows can be checked."""
    from vizcore.seq2seq import decoding

    answer = decoding.Decoding(0, tuple(outputs), -1.0, True, [], [])
    monkeypatch.setattr(translator_module, "greedy", lambda model, source: answer)


def test_the_record_of_a_ten_character_answer_has_gold_and_the_decoders_rows(tiny, monkeypatch):
    forced(tiny, list("1999-03-21"), monkeypatch)
    result = translate("March twenty first, nineteen ninety nine", translator=tiny)
    run = result.run
    assert run.input_tokens == ["march", "twenty", "first", ",", "nineteen", "ninety", "nine"]
    assert run.decoder_tokens == ["<s>", *"1999-03-2"] and run.output == "1999-03-21" and result.correct
    assert run.cross.shape == (2, 2, 10, 7) and run.encoder.shape == (2, 2, 7, 7)
    assert run.decoder.shape == (2, 2, 10, 10)
    assert run.gold is not None and run.gold[5:7, 0].all() and not run.gold[:, 3].any()
    assert np.triu(run.decoder, 1).max() == 0 and not result.outside_training and result.unknown_words == []


def test_the_record_rows_are_what_each_decoding_step_saw(tiny):
    """Untrained, whatever it writes: a teacher-forced pass equals the step-by-step distributions."""
    result = translate("the first of may nineteen hundred", translator=tiny)
    steps = result.decoding.steps
    assert [s.token for s in steps][: len(result.run.output_tokens)] == result.run.output_tokens
    source = torch.tensor([translator_module.input_ids(result.parsed.tokens)])
    ids = [translator_module.output_id("<s>")] + [translator_module.output_id(s.token) for s in steps[:-1]]
    with torch.no_grad():
        probabilities = tiny.model(source, torch.tensor([ids])).logits[0].softmax(-1).numpy()
    np.testing.assert_allclose(np.stack([s.distribution for s in steps]), probabilities, atol=1e-5)


def test_outside_the_grammar_it_still_answers_and_says_why(tiny):
    result = translate("the thirty first of february two thousand", translator=tiny)
    assert result.outside_training and result.parsed.in_grammar and result.correct is None
    assert "No such date" in result.to_dict()["reason"]
    result = translate("the fourty second of smarch twenty", translator=tiny)
    assert result.outside_training and not result.parsed.in_grammar and result.run.gold is None
    assert result.unknown_words == ["fourty", "smarch"] and result.to_dict()["unknown_words"] == ["fourty", "smarch"]
    assert result.run.input_tokens[1] == "fourty"


@pytest.mark.parametrize(("text", "beam", "message"), [
    ("", 1, "The text is empty"), ("   ", 1, "The text is empty"), (None, 1, "The text is empty"),
    ("may " * 40, 1, "at most 32"), ("x" * 301, 1, "at most 300"), ("may first two thousand", 6, "from 1 to 5"),
])
def test_bad_input_gives_one_clear_message(tiny, text, beam, message):
    with pytest.raises(VizError, match=message):
        translate(text, beam=beam, translator=tiny)


def test_beam_search_answers_with_its_best_hypothesis(tiny):
    result = translate("may first two thousand", beam=3, translator=tiny)
    assert result.decoding.width == 3 and result.run.output == "".join(result.decoding.tokens)
    assert result.to_dict()["beam"] == 3


def test_weights_round_trip_with_the_configuration_in_the_file(tiny, tmp_path):
    save_weights(tiny.model, tmp_path / "m.safetensors")
    loaded = load_weights(tmp_path / "m.safetensors")
    assert loaded.config == CONFIG
    a = translate("may first two thousand", translator=tiny).run
    b = translate("may first two thousand", translator=Translator(loaded, "tiny")).run
    assert a.output == b.output and np.array_equal(a.cross, b.cross)
    with pytest.raises(VizError, match="weights are missing"):
        load_weights(tmp_path / "none.safetensors")


@pytest.fixture()
def cli_on_tiny(tiny, monkeypatch):
    monkeypatch.setattr(translator_module, "load_translator", lambda: tiny)


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_fields(cli_on_tiny, capsys):
    code, out, _ = run_cli(capsys, "translate-date", "--text", "the first of may nineteen hundred", "--steps")
    data = json.loads(out)
    assert code == 0 and data["input_tokens"] == "the first of may nineteen hundred".split()
    assert data["output"] == "".join(data["output_tokens"]) and data["expected"] == "1900-05-01"
    cross = np.array(data["cross_attention"])
    assert cross.shape == (2, 2, len(data["output_tokens"]), 6) and data["outside_training"] is False
    assert len(data["decoding"]["steps"]) >= 1


def test_cli_input_file_prints_a_json_list_one_object_per_line_and_reports_empty_lines(cli_on_tiny, capsys, tmp_path):
    path = tmp_path / "dates.txt"
    path.write_text("may first two thousand\n\nthe fourty second of smarch\n")
    code, out, _ = run_cli(capsys, "translate-date", "--input", str(path))
    lines = out.strip().split("\n")
    assert code == 0 and lines[0] == "[" and lines[-1] == "]" and len(lines) == 5
    records = json.loads(out)
    assert [r["line"] for r in records] == [1, 2, 3] and json.loads(lines[1].rstrip(",")) == records[0]
    assert records[1]["error"].startswith("The text is empty") and "output" not in records[1]
    assert records[2]["outside_training"] is True and records[2]["unknown_words"] == ["fourty", "smarch"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--text", ""], "The text is empty"),
    (["--text", "may first two thousand", "--beam", "9"], "from 1 to 5"),
    (["--input", "/no/such/file"], "Cannot read --input"),
    ([], "one of the arguments --text --input is required"),
    (["--text", "a", "--input", "b"], "not allowed with"),
])
def test_cli_bad_input_one_line_exit_2(cli_on_tiny, capsys, argv, message):
    code, out, err = run_cli(capsys, "translate-date", *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1
