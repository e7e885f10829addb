"""The model card is written from the export's metrics file, every number traceable to it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tools.cards import MAX_CURVE_ROWS
from tools.mlm_card import main, verdict, write_card


def metrics(top5: float = 0.612, evaluations: int = 60) -> dict:
    curve = [{"step": 250 * (i + 1), "tokens": 250 * (i + 1) * 2048, "heldout_loss": 3.0 - i / 100,
              "lr": 2e-4 if i < 45 else 2e-4 * (1 - 0.9 * (i - 45) / 14),
              "heldout_top1": 0.3 + i / 1000, "heldout_top5": 0.45 + i * (top5 - 0.45) / (evaluations - 1),
              "probes_right": 15 + i // 10} for i in range(evaluations)]
    best = {**curve[-1], "heldout_top5": top5, "heldout_mask_top5": 0.655, "heldout_positions": 31_337,
            "probes": [{"text": "The capital of France is [MASK].", "top5": ["paris", "london", "rome", "lyon", "|"],
                        "hit": True},
                       {"text": "Ice is frozen [MASK].", "top5": ["ice", "snow", "in", "and", "."], "hit": False}],
            "config": {"steps": 15000, "lr": 0.0002, "batch_size": 32}}
    corpus = {"sources": {"wordnet": {"documents": 117033, "words": 1457586},
                          "gcide": {"documents": 162437, "words": 2849628}},
              "seq_len": 64, "train_windows": 131674, "heldout_windows": 3268}
    return {"best": best, "corpus": corpus, "curve": curve}


@pytest.fixture
def written(tmp_path):
    path = tmp_path / "minilm-mlm.json"
    path.write_text(json.dumps(metrics()))
    (tmp_path / "minilm-mlm.safetensors").write_bytes(b"x" * 2_500_000)
    write_card(path)
    return tmp_path


def test_card_reports_the_best_checkpoint_numbers(written):
    card = (written / "MODEL_CARD.md").read_text()
    assert "step **15,000**" in card and "top-1 35.9%" in card and "top-5 61.2%" in card
    assert "31,337 selected positions" in card and "[MASK]: 65.5%" in card
    assert "**20 of 40**" in card and "Reaches the goal of 60%" in card
    assert "(2.5 MB)" in card and "| lr | 0.0002 |" in card


def test_card_names_sources_with_licences_and_word_counts(written):
    card = (written / "MODEL_CARD.md").read_text()
    assert "| wordnet | WordNet 3.0 glosses and example sentences | Debian `wordnet-base` |" in card
    assert "GPL-2+" in card and "| **total** | | | | | **4,307,214** |" in card
    assert "131,674 for training, 3,268 held out" in card


def test_card_lists_probes_and_a_bounded_learning_curve(written):
    card = (written / "MODEL_CARD.md").read_text()
    assert "| ✓ | The capital of France is [MASK]. | paris, london, rome, lyon, \\| |" in card
    assert "| ✗ | Ice is frozen [MASK]. |" in card
    rows = [line for line in card.splitlines() if line.startswith("| ") and "/40 |" in line]
    assert len(rows) <= MAX_CURVE_ROWS + 1 and rows[0].startswith("| 250 |") and rows[-1].startswith("| 15,000 |")
    assert rows[0].startswith("| 250 | A | 512,000 | 2.00e-04 | 3.000 |")
    assert "| 15,000 | A | 30,720,000 | 2.00e-05 |" in rows[-1]
    assert "Held-out set A: the first 512 held-out windows (WordNet glosses only)." in card


def test_learning_curve_svg_is_valid_with_both_lines(written):
    svg = ET.parse(written / "learning-curve.svg").getroot()
    lines = svg.findall("{http://www.w3.org/2000/svg}polyline")
    assert len(lines) == 2 and all(len(line.get("points").split()) == 60 for line in lines)
    assert "learning-curve.svg" in (written / "MODEL_CARD.md").read_text()


def test_a_change_of_held_out_set_splits_the_curve_and_the_verdict_reads_the_last_set_only(tmp_path):
    data = metrics(0.57, evaluations=12)
    later = "4111 of 4111 windows, 60e77d10"
    for row in data["curve"][10:]:  # the last two were measured on the whole held-out set
        row["heldout_set"] = later
        row["heldout_top5"] = 0.50 + row["step"] / 50_000
    data["best"] = {**data["best"], **data["curve"][-1], "heldout_top5": 0.57}
    path = tmp_path / "minilm-mlm.json"
    path.write_text(json.dumps(data))
    write_card(path)
    card = (tmp_path / "MODEL_CARD.md").read_text()
    assert f"Held-out set B: {later}." in card and "not comparable" in card
    assert "positions of held-out set B" in card
    labels = [line.split(" | ")[1] for line in card.splitlines() if line.startswith("| ") and "/40 |" in line]
    assert labels == ["A"] * 10 + ["B"] * 2
    # set A's last rows and the jump from A to B are not part of the verdict: only B's two rows
    assert "over the last 2 evaluations top-5 moved by +0.5 points" in verdict(0.57, data["curve"])
    lines = ET.parse(tmp_path / "learning-curve.svg").getroot().findall("{http://www.w3.org/2000/svg}polyline")
    assert [len(line.get("points").split()) for line in lines] == [10, 10, 2, 2]
    assert [line.get("stroke-dasharray") for line in lines] == ["2 4", "2 4", None, None]


def test_a_single_evaluation_on_a_new_set_is_said_plainly_and_drawn_as_a_point(tmp_path):
    data = metrics(0.57, evaluations=5)
    data["curve"][-1]["heldout_set"] = "4111 of 4111 windows, 60e77d10"
    assert verdict(0.57, data["curve"]).endswith("only 1 evaluation on the current held-out set so far.")
    path = tmp_path / "minilm-mlm.json"
    path.write_text(json.dumps(data))
    write_card(path)
    svg = ET.parse(tmp_path / "learning-curve.svg").getroot()
    assert len(svg.findall("{http://www.w3.org/2000/svg}circle")) == 2  # top-5 and top-1


@pytest.mark.parametrize(("top5", "says"), [(0.6, "Reaches the goal"), (0.57, "above the 55% floor"),
                                            (0.5, "BELOW the 55% floor")])
def test_verdict_follows_the_issue_thresholds(top5, says):
    assert says in verdict(top5, metrics(top5)["curve"])


def test_a_top5_just_under_the_goal_is_not_rounded_up_to_it():
    says = verdict(0.59970, metrics(0.5997)["curve"])
    assert says.startswith("Below the 60% goal (59.97%")


def test_missing_or_broken_metrics_give_one_line_and_exit_2(tmp_path, capsys):
    assert main(["--metrics", str(tmp_path / "none.json")]) == 2
    assert "run python -m tools.mlm_training export" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert main(["--metrics", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "not valid JSON" in err and len(err.strip().splitlines()) == 1
