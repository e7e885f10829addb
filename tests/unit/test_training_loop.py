"""The tools' one training loop (tools/training_loop.py) on tiny random models: a sitting stopped and resumed
ends bit for bit as an unbroken run, the evaluation cadence of each tool's recipe, the best checkpoint,
--init-from, export, and the command line's one-line errors. The full-size recipes: tests/integration."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from transformers import BertForPreTraining, BertLMHeadModel

from tests.support.tiny import build_tiny, wordpiece_tokenizer
from tools import clm_training, date_training, mlm_training, nsp_training
from tools.clm_training import CausalLM
from tools.mlm_training import MaskedLM
from tools.nsp_training import NextSentence
from tools.training_loop import export_best, read_curve, train

TEXT = ("The cat sat on the mat and the dog slept by the door of the old house. She drank a cup of tea "
        "every morning before she walked to the station in the rain. ") * 12
SETTINGS = {"steps": 6, "batch_size": 4, "warmup": 2, "eval_every": 2}


class Interrupted(Exception):
    """A sitting stopped from outside (Ctrl-C, a session ending)."""


@pytest.fixture(scope="module")
def tokenizer():
    return wordpiece_tokenizer()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, tokenizer) -> Path:
    """Token windows of 16 (12 to train, 4 held out) and NSP pairs, as the tools' data commands write them."""
    folder = tmp_path_factory.mktemp("corpus")
    ids = tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    windows = np.array([[tokenizer.cls_token_id, *ids[i * 14:(i + 1) * 14], tokenizer.sep_token_id]
                        for i in range(16)], dtype=np.int32)
    np.save(folder / "train-16.npy", windows[:12])
    np.save(folder / "heldout-16.npy", windows[12:])
    documents = {"tales": [[f"Tale {d} has line {i} here." for i in range(4)] for d in range(5)]}
    for split, count in (("train", 24), ("heldout", 8)):
        pairs = nsp_training.make_pairs(documents, count, seed=len(split))
        (folder / f"{split}-pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    return folder


class Watched(MaskedLM):
    """The masked-LM recipe on a tiny BERT, noting each step's loss and rows; stopped before loss number
    ``stop_at`` of the sitting; with ``scores``, evaluations report those top-5 values in turn."""

    def __init__(self, config, corpus, tokenizer, journal: dict, stop_at: int | None, scores: list | None):
        super().__init__(config, corpus, model=build_tiny("bert"), tokenizer=tokenizer)
        self.journal, self.stop_at, self.scores = journal, stop_at, scores

    def loss(self, rows, generator):
        if len(self.journal["losses"]) == self.stop_at:
            raise Interrupted
        loss, shown = super().loss(rows, generator)
        self.journal["losses"].append(float(loss.detach()))
        self.journal["rows"].append(rows.tolist())
        return loss, shown

    def evaluate(self) -> dict:
        metrics = super().evaluate()
        self.journal["states"].append(self.changed_state())
        return {**metrics, "heldout_top5": self.scores.pop(0)} if self.scores else metrics


def sitting(work: Path, corpus: Path, tokenizer, stop_at: int | None = None, scores: list | None = None,
            **settings) -> dict:
    """One ``train`` of the tiny masked-LM in ``work``; returns what it noted."""
    config = mlm_training.TrainConfig(seq_len=16, **{**SETTINGS, **settings})
    journal = {"losses": [], "rows": [], "states": []}
    try:
        train(config, work, lambda config: Watched(config, corpus, tokenizer, journal, stop_at, scores))
    except Interrupted:
        pass
    return journal


def curve(work: Path) -> list[dict]:
    """The learning curve without the wall-clock fields."""
    return [{k: v for k, v in r.items() if k not in ("time", "eval_seconds")} for r in read_curve(work)]


def saved(work: Path) -> dict:
    return torch.load(work / "resume.pt", weights_only=False)


def test_a_sitting_stopped_and_resumed_ends_bit_for_bit_as_an_unbroken_run(tmp_path, corpus, tokenizer):
    unbroken = sitting(tmp_path / "a", corpus, tokenizer)
    first = sitting(tmp_path / "b", corpus, tokenizer, stop_at=5)  # stopped in step 6, after the save at 4
    assert saved(tmp_path / "b")["step"] == 4
    second = sitting(tmp_path / "b", corpus, tokenizer)
    assert len(second["losses"]) == 2  # steps 5 and 6 again, from the checkpoint at 4
    assert first["losses"][:4] + second["losses"] == unbroken["losses"]
    assert first["rows"][:4] + second["rows"] == unbroken["rows"]  # the same data, the same masks and dropout
    assert [r["step"] for r in curve(tmp_path / "a")] == [2, 4, 6]
    assert curve(tmp_path / "b") == curve(tmp_path / "a")
    a, b = saved(tmp_path / "a"), saved(tmp_path / "b")
    assert a["step"] == b["step"] == 6
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    best_a, best_b = load_file(tmp_path / "a" / "best.safetensors"), load_file(tmp_path / "b" / "best.safetensors")
    assert all(torch.equal(best_a[k], best_b[k]) for k in best_a)


def test_a_sitting_stopped_while_saving_leaves_no_curve_record_its_checkpoint_lacks(tmp_path, corpus, tokenizer,
                                                                                    monkeypatch):
    sitting(tmp_path / "a", corpus, tokenizer)
    save, saves = torch.save, []

    def stop_at_the_second_save(state, path):
        saves.append(path)
        if len(saves) == 2:
            raise Interrupted
        save(state, path)

    with monkeypatch.context() as patch:
        patch.setattr(torch, "save", stop_at_the_second_save)
        sitting(tmp_path / "b", corpus, tokenizer)
    assert [r["step"] for r in curve(tmp_path / "b")] == [2, 4] and saved(tmp_path / "b")["step"] == 2
    sitting(tmp_path / "b", corpus, tokenizer)
    assert curve(tmp_path / "b") == curve(tmp_path / "a")  # step 4 logged once, measured on the resumed run


def tiny_recipe(name: str, corpus: Path, tokenizer):
    """(TrainConfig, build) of each tool's recipe on a tiny model."""
    if name == "masked":
        return (mlm_training.TrainConfig(seq_len=16, **SETTINGS),
                lambda config: MaskedLM(config, corpus, model=build_tiny("bert"), tokenizer=tokenizer))
    bert = build_tiny("bert").config
    if name == "causal":
        bert.is_decoder = True
        return (clm_training.TrainConfig(seq_len=16, eval_sequences=0, **SETTINGS),
                lambda config: CausalLM(config, corpus, model=BertLMHeadModel(bert), tokenizer=tokenizer))
    return (nsp_training.TrainConfig(train_layers=1, eval_pairs=8, **SETTINGS),
            lambda config: NextSentence(config, corpus, model=BertForPreTraining(bert), tokenizer=tokenizer))


@pytest.mark.parametrize(("name", "first"), [("masked", []), ("causal", [0]), ("nsp", [0])])
def test_each_tool_evaluates_every_eval_every_steps_and_at_the_last_and_more_steps_continue(
        tmp_path, corpus, tokenizer, name, first):
    config, build = tiny_recipe(name, corpus, tokenizer)
    best = train(replace(config, steps=7, eval_every=3), tmp_path, build)
    assert [r["step"] for r in read_curve(tmp_path)] == [*first, 3, 6, 7]
    assert best["config"]["eval_every"] == 3 and best["step"] in (*first, 3, 6, 7)
    train(replace(config, steps=9, eval_every=3), tmp_path, build)  # a later sitting with a higher --steps
    assert [r["step"] for r in read_curve(tmp_path)] == [*first, 3, 6, 7, 9]


def test_the_best_checkpoint_is_the_highest_score_not_the_last(tmp_path, corpus, tokenizer):
    journal = sitting(tmp_path, corpus, tokenizer, scores=[0.2, 0.6, 0.4])
    best = json.loads((tmp_path / "best.json").read_text())
    assert (best["step"], best["heldout_top5"]) == (4, 0.6) and "probes" in best
    shipped = load_file(tmp_path / "best.safetensors")
    assert all(torch.equal(shipped[k], journal["states"][1][k]) for k in shipped)
    assert not torch.equal(shipped["cls.predictions.bias"], journal["states"][2]["cls.predictions.bias"])
    assert [r["heldout_top5"] for r in read_curve(tmp_path)] == [0.2, 0.6, 0.4]


def test_init_from_carries_on_the_step_count_data_order_and_curve_and_measures_the_start_again(
        tmp_path, corpus, tokenizer):
    sitting(tmp_path / "a", corpus, tokenizer, steps=4, scores=[0.1, 0.2])  # the best: step 4
    weights = tmp_path / "shipped" / "w.safetensors"
    export_best(tmp_path / "a", weights, lambda target: {"shipped": {}})
    shipped = json.loads(weights.with_suffix(".json").read_text())["curve"]
    later = sitting(tmp_path / "b", corpus, tokenizer, init_from=str(weights))
    records = read_curve(tmp_path / "b")
    assert records[:2] == shipped and [r["step"] for r in records[2:]] == [4, 6]
    start = records[2]
    assert start["lr"] == pytest.approx(2e-4 / 2)  # the warm-up starts again from the shipped step
    assert start["heldout_loss"] == pytest.approx(shipped[-1]["heldout_loss"], rel=1e-3)  # fp16 of the same weights
    unbroken = sitting(tmp_path / "c", corpus, tokenizer)
    assert later["rows"] == unbroken["rows"][4:]


def test_export_writes_the_best_checkpoint_in_fp16_beside_its_metrics_and_curve(tmp_path, corpus, tokenizer):
    sitting(tmp_path / "work", corpus, tokenizer)
    target = tmp_path / "out" / "w.safetensors"
    metrics = export_best(tmp_path / "work", target, lambda path: {"best": {"probes_right": 7},
                                                                    "shipped": {"bytes": path.stat().st_size}})
    assert list(metrics) == ["best", "shipped", "curve"]
    assert json.loads(target.with_suffix(".json").read_text()) == metrics
    assert metrics["best"]["probes_right"] == 7 and metrics["curve"] == read_curve(tmp_path / "work")
    state, best = load_file(target), load_file(tmp_path / "work" / "best.safetensors")
    assert {t.dtype for t in state.values()} == {torch.float16} and state.keys() == best.keys()
    assert torch.equal(state["mask_embedding"], best["mask_embedding"].half())


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--steps", "0", "argument --steps: must be a number of at least 1, got 0"),
    ("--eval-every", "0", "argument --eval-every: must be a number of at least 1, got 0"),
    ("--batch-size", "2.5", "argument --batch-size: expected a whole number, got '2.5'"),
    ("--lr", "fast", "argument --lr: expected a number, got 'fast'"),
    ("--warmup", "-1", "argument --warmup: must be a number of at least 0, got -1"),
    ("--bf16", "maybe", "argument --bf16: expected true or false, got 'maybe'"),
])
def test_a_bad_training_flag_is_one_line_naming_it_and_exit_2(tmp_path, capsys, flag, value, says):
    with pytest.raises(SystemExit) as stopped:
        mlm_training.main(["train", "--work-dir", str(tmp_path / "w"), flag, value])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.strip().splitlines()[-1].endswith(says) and "Traceback" not in err


@pytest.mark.parametrize("tool", [mlm_training, clm_training, nsp_training])
def test_every_tool_checks_init_from_before_it_builds_anything(tmp_path, capsys, tool):
    weights = tmp_path / "w.safetensors"
    command = ["train", "--work-dir", str(tmp_path / "work"), "--init-from", str(weights)]
    assert tool.main(command) == 2
    assert capsys.readouterr().err == f"error: --init-from: '{weights}' is missing.\n"
    weights.write_bytes(b"x")
    assert tool.main(command) == 2
    err = capsys.readouterr().err
    assert f"'{weights.with_suffix('.json')}' is missing: --init-from needs the metrics file" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "work").exists()


def test_export_before_training_says_so_in_one_line(tmp_path, capsys):
    assert nsp_training.main(["export", "--work-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"error: '{tmp_path / 'best.safetensors'}' is missing: "
                                       f"train in --work-dir {tmp_path} first.\n")


def test_the_date_tool_shares_the_command_line_a_config_it_refuses_is_one_line(tmp_path, capsys):
    assert date_training.main(["train", "--work-dir", str(tmp_path), "--steps", "5"]) == 2
    assert capsys.readouterr().err == "error: Use 10 to 50,000 steps and batches of 1 to 512 dates.\n"
    with pytest.raises(SystemExit):
        date_training.main(["train", "--work-dir", str(tmp_path), "--heads", "two"])
    says = "argument --heads: expected a whole number, got 'two'"
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(says)
