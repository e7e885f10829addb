"""Lessons as data (vizcore/lessons): every lesson file loads and keeps the rules, a broken file is refused with its
name and step, and each answer function gives the answer an independent computation written here gives, on tiny
random models (the embedded model's run of every step: tests/app/test_lessons.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from vizcore.errors import VizError
from vizcore.lessons import answers
from vizcore.lessons.answers import ANSWERS, REQUIRED
from vizcore.lessons.kinds import KINDS
from vizcore.lessons.lesson import MAX_CLAIM_WORDS, load_lesson, load_lessons
from vizcore.model.loading import load_model
from vizcore.model.run import Capture, run

# The course order, all ten lessons.
COURSE = ["attention", "heads", "masks", "positions", "block", "pretraining", "finetuning", "decoder", "transformer",
          "beyond"]
TEXT = "The animal didn't cross the street because it was too tired."


# ---- the lesson files --------------------------------------------------------------------------------------

def test_every_lesson_file_keeps_the_rules():
    lessons = load_lessons()
    assert [lesson.id for lesson in lessons] == COURSE
    for lesson in lessons:
        assert 4 <= len(lesson.steps) <= 10, lesson.id
        for step in lesson.steps:
            assert len(step.claim.split()) <= MAX_CLAIM_WORDS and step.task and step.title
            assert step.kind in KINDS and set(step.params) == set(KINDS[step.kind].params)
            if step.question is not None:
                q = step.question
                assert q.answer in ANSWERS and set(REQUIRED[q.answer]) <= set(q.params)
                assert q.params.get("series", "") in ("", *KINDS[step.kind].series)
                assert q.params.get("number", "") in ("", *KINDS[step.kind].numbers)


def test_most_questions_are_decided_by_the_models_numbers():
    questions = [s.question for lesson in load_lessons() for s in lesson.steps if s.question is not None]
    conceptual = [q for q in questions if q.answer == "concept"]
    assert len(questions) >= 30 and len(conceptual) <= 3


def test_lesson_one_shows_every_step_of_one_querys_attention_for_a_token_the_learner_picks():
    first = load_lessons()[0]
    shown = [s.params["show"] for s in first.steps if s.kind == "query_steps"]
    assert shown == ["scores", "scaled", "weights", "sum"] and KINDS["query_steps"].query


GOOD_STEP = '''
[[steps]]
title = "T"
claim = "A claim."
task = "A task."
view = { kind = "head_grid", stat = "previous" }
'''


def write(tmp_path, body: str, name: str = "01-x.toml"):
    path = tmp_path / name
    path.write_text('id = "x"\ntitle = "X"\nsentence = "A b."\n' + body, encoding="utf-8")
    return path


@pytest.mark.parametrize(("body", "message"), [
    (GOOD_STEP * 3, "01-x.toml: a lesson has 4 to 10 steps"),
    (GOOD_STEP * 11, "this one has 11"),
    (GOOD_STEP * 3 + GOOD_STEP.replace("A claim.", "word " * 61), "01-x.toml, step 4: the claim has 61 words"),
    (GOOD_STEP * 3 + GOOD_STEP.replace("head_grid", "heatmapp"), "step 4: 'view' needs a kind"),
    (GOOD_STEP * 3 + GOOD_STEP.replace('stat = "previous"', "layers = 2"), "has no parameter layers"),
    (GOOD_STEP * 3 + GOOD_STEP.replace('"head_grid", stat = "previous"', '"block_part", part = "ffn"'),
     "step 4: the kind 'block_part' has no part 'ffn'; one of x, projected"),
    (GOOD_STEP * 3 + GOOD_STEP + '[steps.question]\ntext = "Q?"\nanswer = "guess"\n', "unknown answer function"),
    (GOOD_STEP * 3 + GOOD_STEP + '[steps.question]\ntext = "Q?"\nanswer = "largest"\n', "needs series"),
    (GOOD_STEP * 3 + GOOD_STEP + '[steps.question]\ntext = "Q?"\nanswer = "largest"\nseries = "row"\n',
     "has no series 'row'"),
    (GOOD_STEP * 3 + GOOD_STEP + '[steps.question]\ntext = "Q?"\nanswer = "concept"\nchoices = ["a", "b"]\n'
     'right = "c"\nwhy = "w"\n', "'c' is not among the choices"),
    (GOOD_STEP.replace('title = "T"\n', "") * 4, "step 1: 'title' must be a non-empty string"),
    ("steps = [", "cannot read the lesson"),
    (GOOD_STEP * 3 + GOOD_STEP.replace('task = "A task."', 'task = "A task."\nnotes = 3'), "step 4: 'notes' must be"),
])
def test_a_broken_lesson_file_is_refused_with_its_name_and_step(tmp_path, body, message):
    with pytest.raises(VizError, match="^01-x.toml") as error:
        load_lesson(write(tmp_path, body))
    assert message in str(error.value)


def test_two_lessons_with_one_id_are_refused(tmp_path):
    write(tmp_path, GOOD_STEP * 4, "01-a.toml")
    write(tmp_path, GOOD_STEP * 4, "02-b.toml")
    with pytest.raises(VizError, match="02-b.toml: the id 'x' is already used by 01-a.toml"):
        load_lessons(tmp_path)


# ---- each answer function against an independent computation -----------------------------------------------

class Tiny:
    """A step's source on tiny random models: the encoder, its masked-LM and a GPT-2 whatever name is asked."""

    def __init__(self, folders) -> None:
        self.folders, self.loaded = folders, {}

    def model(self, head: str = "base", name: str | None = None):
        kind = {"base": "bert", "mlm": "mlm", "causal-lm": "gpt2"}[head]
        if kind not in self.loaded:
            self.loaded[kind] = load_model(str(self.folders[kind]), device="cpu", head=head)
        return self.loaded[kind]

    def run(self, text: str, hidden: bool = False):
        return run(self.model(), text, capture=Capture(hidden=hidden))


@pytest.fixture(scope="module")
def tiny(tiny_model_dir, tiny_mlm_dir):
    return Tiny({"bert": tiny_model_dir("bert"), "mlm": tiny_mlm_dir("bert"), "gpt2": tiny_model_dir("gpt2")})


def answer(tiny, kind: str, params: dict, question: dict, text: str = TEXT):
    view = KINDS[kind].build(tiny, text, {**KINDS[kind].params, **params})
    return ANSWERS[question["answer"]](view, question)


@pytest.mark.parametrize("query", ["it", "animal"])
def test_largest_weight_is_the_argmax_of_the_runs_attention_row(tiny, query):
    got = answer(tiny, "query_steps", {"layer": 2, "head": 3, "query": query},
                 {"answer": "largest", "series": "weights"})
    own = tiny.run(TEXT)
    q = own.tokens.index(query)
    row = own.attention[1, 2, q]
    k = int(np.argmax(row))
    assert got.right == f"{k}: {own.tokens[k]}" and got.right in got.choices and len(got.choices) == 4
    assert f"{row[k]:.2f}" in got.reason


def test_largest_score_is_the_argmax_of_q_dot_k_from_the_models_own_projections(tiny):
    got = answer(tiny, "query_steps", {"layer": 1, "head": 2, "query": "it", "show": "scores"},
                 {"answer": "largest", "series": "scores"})
    loaded, own = tiny.model(), tiny.run(TEXT, hidden=True)
    attention = loaded.model.encoder.layer[0].attention.self
    x = torch.from_numpy(own.hidden_states[0]).double()
    d_k = loaded.model.config.hidden_size // loaded.num_heads
    cols = slice(1 * d_k, 2 * d_k)
    q = (x @ attention.query.weight.double().T + attention.query.bias.double())[:, cols]
    k = (x @ attention.key.weight.double().T + attention.key.bias.double())[:, cols]
    scores = (k @ q[own.tokens.index("it")]).numpy()
    best = int(np.argmax(scores))
    assert got.right == f"{best}: {own.tokens[best]}" and f"{scores[best]:.2f}" in got.reason


def test_closest_d_k_is_hidden_size_over_heads(tiny):
    options = [2, 8, 32, 384]
    got = answer(tiny, "query_steps", {"show": "scaled"}, {"answer": "closest", "number": "d_k", "options": options})
    config = tiny.model().model.config
    assert got.right == str(config.hidden_size // config.num_attention_heads) and got.choices == ["2", "8", "32", "384"]


@pytest.mark.parametrize(("stat", "function"), [("previous", "largest"), ("entropy", "smallest"), ("cls", "largest")])
def test_head_statistics_answers_are_the_extreme_head_of_an_independent_mean(tiny, stat, function):
    got = answer(tiny, "head_grid", {"stat": stat}, {"answer": function, "series": "heads"})
    a = tiny.run(TEXT).attention.astype(np.float64)  # [layer, head, query, key]
    if stat == "previous":
        values = np.array([[np.mean([a[l, h, i, i - 1] for i in range(1, a.shape[-1])]) for h in range(a.shape[1])]
                           for l in range(a.shape[0])])
    elif stat == "entropy":
        values = -(a * np.log(a)).sum(-1).mean(-1)
    else:
        values = a[..., 0].mean(-1)
    pick = np.argmax(values) if function == "largest" else np.argmin(values)
    layer, head = np.unravel_index(pick, values.shape)
    assert got.right == f"layer {layer + 1}, head {head + 1}"


def test_below_padding_weight_matches_a_padded_batch_run_here(tiny):
    question = {"answer": "below", "number": "on_padding", "limit": 1e-6, "yes": "none", "no": "some"}
    got = answer(tiny, "padding", {"layer": 1, "head": 1, "other": "Short."}, question)
    loaded = tiny.model()
    batch = loaded.tokenizer([TEXT, "Short."], padding=True, return_tensors="pt")
    with torch.no_grad():
        weights = torch.stack(loaded.model(**batch, output_attentions=True).attentions)  # [L, B, H, T, T]
    pad_keys = batch["attention_mask"][1] == 0
    assert pad_keys.any()
    largest = float(weights[:, 1, :, :, pad_keys].max())
    assert got.right == ("none" if largest < 1e-6 else "some") and got.choices == ["none", "some"]


def test_below_causal_mask_leaves_no_weight_on_later_keys(tiny):
    question = {"answer": "below", "number": "later_masked", "limit": 1e-9, "yes": "none", "no": "some"}
    assert answer(tiny, "causal", {"layer": 2, "head": 1}, question).right == "none"
    got = answer(tiny, "causal", {"layer": 2, "head": 1}, {"answer": "largest", "series": "first_row"})
    assert got.right.startswith("0: ")  # the first token can only see itself


def test_largest_component_is_the_one_with_most_parameters_by_the_configs_formula(tiny):
    got = answer(tiny, "parameters", {}, {"answer": "largest", "series": "components"})
    c = tiny.model().model.config
    h, f, n = c.hidden_size, c.intermediate_size, c.num_hidden_layers
    formula = {"embeddings": (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * h + 2 * h,
               "attention Q, K, V": n * 3 * (h * h + h), "feed-forward": n * (2 * h * f + f + h)}
    best = max(formula, key=formula.get)
    view = KINDS["parameters"].build(tiny, TEXT, {})
    assert view.numbers["total"].value == sum(p.numel() for p in tiny.model().model.parameters())
    assert got.right == best and f"{formula[best]:,}" in got.reason


def test_largest_guess_is_the_argmax_of_the_masked_lms_logits(tiny):
    text = "The capital of France is [MASK]."
    got = answer(tiny, "fill_mask", {}, {"answer": "largest", "series": "guesses"}, text)
    loaded = tiny.model("mlm")
    inputs = loaded.tokenizer(text, return_tensors="pt")
    position = int((inputs["input_ids"][0] == loaded.tokenizer.mask_token_id).nonzero()[0])
    with torch.no_grad():
        logits = loaded.model(**inputs).logits[0, position]
    assert got.right == loaded.tokenizer.decode([int(logits.argmax())]).strip()
    assert f"{float(logits.softmax(-1).max()):.2f}" in got.reason


def test_next_token_answers_match_the_causal_models_own_logits(tiny):
    prompt = "She opened the"
    got = answer(tiny, "next_token", {}, {"answer": "largest", "series": "plain"}, prompt)
    loaded = tiny.model("causal-lm")
    inputs = loaded.tokenizer(prompt, return_tensors="pt")
    with torch.no_grad():
        probs = loaded.model(**inputs).logits[0, -1].softmax(-1)
    assert f"{float(probs.max()):.2f}" in got.reason
    sharper = answer(tiny, "next_token", {"temperature": 0.5},
                     {"answer": "below", "number": "top_change", "limit": 0, "yes": "less", "no": "more"}, prompt)
    logits = torch.log(probs.double())
    at_half = (logits / 0.5).softmax(-1)
    assert sharper.right == ("more" if float(at_half.max()) > float(probs.max()) else "less")
    kept = answer(tiny, "next_token", {"top_k": 5}, {"answer": "closest", "number": "kept", "options": [1, 5, 50]},
                  prompt)
    assert kept.right == "5"


def test_concept_returns_the_files_choice_and_reason():
    got = answers.concept(None, {"choices": ["a", "b"], "right": "b", "why": "because"})
    assert (got.right, got.reason, got.verdict("b"), got.verdict("a")) == ("b", "because", True, False)


def test_an_answer_about_a_series_the_view_lacks_is_a_clear_error(tiny):
    view = KINDS["scaling"].build(tiny, TEXT, {"d_k": 16})
    with pytest.raises(VizError, match="no series 'heads'"):
        answers.largest(view, {"series": "heads"})


def test_smallest_entropy_is_the_softmax_with_less_spread_computed_here():
    view = KINDS["scaling"].build(None, TEXT, {"d_k": 64})
    rng = np.random.default_rng(0)  # scaling_demo's draws, in its order (vizcore/inside/demos.py)
    rng.standard_normal((2000, 64)), rng.standard_normal((2000, 64))
    query = rng.standard_normal(64)
    scores = rng.standard_normal((10, 64)) @ query
    entropies = []
    for s in (scores, scores / math.sqrt(64)):
        p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        entropies.append(float(-(p * np.log2(np.where(p > 0, p, 1))).sum()))
    got = answers.smallest(view, {"series": "entropy"})
    assert got.right == ["without ÷√d_k", "with ÷√d_k"][int(np.argmin(entropies))]
    assert f"{min(entropies):.2f}" in got.reason


def test_a_step_for_a_layer_the_model_lacks_says_so(tiny):
    with pytest.raises(VizError, match="layer 9, head 1.*2 layers of 4 heads"):
        KINDS["attention_map"].build(tiny, TEXT, {**KINDS["attention_map"].params, "layer": 9})


def test_largest_mirror_head_is_the_anti_diagonal_argmax_of_the_same_run_retrained_here():
    from vizcore.finetune.tiny import TinyConfig, train_tiny

    got = answer(None, "tiny_training", {"steps": 10}, {"answer": "largest", "series": "mirror"})
    maps = train_tiny(TinyConfig(task="reverse", steps=10)).history.snapshots[-1][1]  # seeded: the same run
    t = maps.shape[-1]
    mirrored = np.array([[np.mean([maps[l, h, i, t - 1 - i] for i in range(t)]) for h in range(maps.shape[1])]
                         for l in range(maps.shape[0])])
    layer, head = np.unravel_index(np.argmax(mirrored), mirrored.shape)
    assert got.right == f"layer {layer + 1}, head {head + 1}" and f"{mirrored.max():.2f}" in got.reason


def test_a_distilbert_models_parameters_fall_in_the_same_components(tiny_model_dir):
    from vizcore.model.parameters import parameter_counts

    model = load_model(str(tiny_model_dir("distilbert")), device="cpu").model
    counts = parameter_counts(model)
    c = model.config
    assert set(counts) == {"embeddings", "attention Q, K, V", "attention output W_O", "LayerNorm", "feed-forward"}
    assert counts["attention Q, K, V"] == c.n_layers * 3 * (c.dim * c.dim + c.dim)
    assert counts["feed-forward"] == c.n_layers * (2 * c.dim * c.hidden_dim + c.hidden_dim + c.dim)
    assert sum(counts.values()) == sum(p.numel() for p in model.parameters())


# ---- the command line: python -m vizcore lessons ------------------------------------------------------------

def test_the_command_lists_the_course_and_refuses_a_broken_file_in_one_line(capsys, tmp_path):
    import json

    from tests.unit.test_cli_hostile import run_main

    code, out, _ = run_main(capsys, "lessons")
    assert code == 0 and [lesson["id"] for lesson in json.loads(out)["lessons"]] == COURSE
    code, _, err = run_main(capsys, "lessons", "--file", str(write(tmp_path, GOOD_STEP * 2)))
    assert code == 2 and err.strip() == ("error: python -m vizcore lessons: 01-x.toml: a lesson has 4 to 10 steps "
                                         "([[steps]]); this one has 2.")


def test_the_command_computes_each_questions_answer_on_the_model_given(capsys, tmp_path, tiny_bert_dir, tiny):
    import json

    from tests.unit.test_cli_hostile import run_main

    question = '[steps.question]\ntext = "Which head?"\nanswer = "largest"\nseries = "heads"\n'
    path = write(tmp_path, (GOOD_STEP + question) * 4)
    code, out, _ = run_main(capsys, "lessons", "--file", str(path), "--answers", "--model", str(tiny_bert_dir),
                            "--device", "cpu", "--text", TEXT)
    steps = json.loads(out)["lessons"][0]["steps"]
    a = tiny.run(TEXT).attention.astype(np.float64)
    previous = np.diagonal(a, offset=-1, axis1=-2, axis2=-1).mean(-1)  # [layer, head]: weight on the token before
    layer, head = np.unravel_index(np.argmax(previous), previous.shape)
    assert code == 0 and {s["question"]["right"] for s in steps} == {f"layer {layer + 1}, head {head + 1}"}


def test_a_part_a_kind_does_not_draw_is_a_clear_error(tiny):
    with pytest.raises(VizError, match="show 'logits' is not one of scores, scaled, weights, sum"):
        KINDS["query_steps"].build(tiny, TEXT, {**KINDS["query_steps"].params, "show": "logits"})
