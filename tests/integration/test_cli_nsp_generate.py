"""``python -m vizcore nsp`` and ``generate`` on the built-ins: the fixed JSON fields, the numbers against a direct
computation with the model, seeded sampling reproducible, and one clear line with exit code 2 for every bad input.
A real process runs each command (a bad input for each, and the seeded sampling); the other runs call main() here,
the same code without importing torch and transformers again (about 3 CPU-s a process).

The built-ins' weights come from ``VIZCORE_NSP_WEIGHTS`` / ``VIZCORE_CAUSAL_WEIGHTS`` while the shipped
files are not committed; nothing here depends on what the models predict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.unit.test_fill_mask_cli import run_cli
from vizcore.decoder.generation import prompt_ids
from vizcore.decoder.vocabulary import banned_tokens
from vizcore.mlm.nsp import EXAMPLES
from vizcore.model.catalog import CAUSAL_MODEL, DEFAULT_MODEL, NSP_MODEL
from vizcore.model.loading import load_model

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "She opened the"


def cli(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "vizcore", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def cli_json(*argv: str) -> dict:
    done = cli(*argv, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def main_json(capsys, *argv: str) -> dict:
    code, out, err = run_cli(capsys, *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_nsp_gives_the_model_and_the_softmax_of_its_next_sentence_logits(capsys):
    text, pair, _ = EXAMPLES[0]
    payload = main_json(capsys, "nsp", "--text", text, "--pair", pair)
    assert payload["model"] == NSP_MODEL and 0 <= payload["is_next"] <= 1
    loaded = load_model(NSP_MODEL, device="cpu", head="nsp")
    with torch.no_grad():
        logits = loaded.model(**loaded.tokenizer(text, pair, return_tensors="pt")).seq_relationship_logits[0]
    assert payload["is_next"] == pytest.approx(float(logits.double().softmax(-1)[0]), abs=1e-5)
    assert payload["tokens"][0] == "[CLS]" and payload["tokens"].count("[SEP]") == 2


def test_one_greedy_token_gives_the_prompts_next_token_distribution(capsys):
    payload = main_json(capsys, "generate", "--prompt", PROMPT, "--max-new-tokens", "1", "--temperature", "0",
                        "--top", "8")
    assert {"model", "prompt_tokens", "steps", "text"} <= payload.keys() and payload["model"] == CAUSAL_MODEL
    loaded = load_model(CAUSAL_MODEL, device="cpu", head="causal-lm")
    ids = prompt_ids(loaded, PROMPT)
    assert payload["prompt_tokens"] == loaded.tokenizer.convert_ids_to_tokens(ids[0].tolist())
    with torch.no_grad():
        logits = loaded.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits[0, -1]
    never = banned_tokens(loaded).never  # never-trained entries: probability 0, the rest renormalised
    best = logits.double().masked_fill(never, -torch.inf).softmax(-1).topk(8)
    (step,) = payload["steps"]
    assert [t["token"] for t in step["top"]] == [loaded.tokenizer.decode([i]) for i in best.indices.tolist()]
    assert [t["score"] for t in step["top"]] == pytest.approx(best.values.tolist(), rel=1e-4)
    assert step["token"] == step["top"][0]["token"]  # greedy: the arg-max
    assert payload["text"] == loaded.tokenizer.decode(ids[0].tolist() + [int(best.indices[0])],
                                                      skip_special_tokens=True)


def test_seeded_sampling_is_reproducible_and_each_token_comes_from_its_shaped_top(capsys):
    argv = ("generate", "--prompt", PROMPT, "--max-new-tokens", "6", "--temperature", "1.5", "--top-k", "20",
            "--top-p", "0.9", "--top", "20", "--seed", "11")
    first = cli_json(*argv)  # a process of its own, then main() in this one (another process's random state)
    code, out, _ = run_cli(capsys, *argv, "--format", "json")
    assert code == 0 and json.loads(out) == first and 1 <= len(first["steps"]) <= 6
    for step in first["steps"]:
        assert step["token"] in [t["token"] for t in step["top"]] and len(step["top"]) <= 20
        assert sum(t["score"] for t in step["top"]) == pytest.approx(1.0)  # top-k 20 keeps at most 20



def test_other_seeds_give_other_texts(capsys):
    argv = ("generate", "--prompt", PROMPT, "--max-new-tokens", "6", "--temperature", "1.5", "--format", "json")
    texts = {json.loads(run_cli(capsys, *argv, "--seed", str(seed))[1])["text"] for seed in (11, 12, 13)}
    assert len(texts) > 1  # a flattened distribution: the seed matters


@pytest.mark.parametrize(("argv", "message"), [  # one real process per command; the rest run main() below
    (("nsp", "--text", "The man went to the store."), "second sentence (B)"),
    (("generate", "--prompt", " \t "), "prompt is empty"),  # refused before torch is imported
])
def test_bad_input_in_a_process_is_one_line_and_exit_2(argv, message):
    done = cli(*argv, "--format", "json")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("argv", "message"), [
    (("nsp", "--text", "A.", "--pair", "   "), "second sentence (B)"),
    (("nsp", "--text", "", "--pair", "B."), "sentence A is empty"),
    (("generate", "--prompt", ""), "prompt is empty"),
    (("nsp", "--text", "A.", "--pair", "B.", "--model", CAUSAL_MODEL), "next-sentence"),
    (("generate", "--prompt", "word " * 600), "reads at most 512"),
    (("nsp", "--text", "A.", "--pair", "B.", "--model", DEFAULT_MODEL), "next-sentence"),
    (("generate", "--prompt", "   "), "prompt is empty"),
    (("generate", "--prompt", PROMPT, "--model", NSP_MODEL), "is an encoder"),
    (("generate", "--prompt", PROMPT, "--model", DEFAULT_MODEL), "is an encoder"),
    (("generate", "--prompt", PROMPT, "--temperature", "-1"), "temperature"),
    (("generate", "--prompt", PROMPT, "--top-p", "0"), "top-p"),
    (("generate", "--prompt", PROMPT, "--top-k", "-3"), "top-k"),
    (("generate", "--prompt", PROMPT, "--max-new-tokens", "0"), "--max-new-tokens"),
    (("generate", "--prompt", PROMPT, "--seed", "x"), "--seed"),
    (("generate", "--prompt", PROMPT, "--seed", "-1"), "seed must be a whole number from 0"),
    (("generate", "--prompt", PROMPT, "--seed", str(2**64)), "seed must be a whole number from 0"),
])
def test_more_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv, "--format", "json")
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
