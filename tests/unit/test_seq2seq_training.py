"""Training from scratch: a tiny run's loss falls, the history and snapshots a page polls, Stop, the job,
the batches it reads, and the evaluation's numbers against a by-hand count."""

import threading

import numpy as np
import pytest
import torch

from vizcore.errors import VizError
from vizcore.seq2seq.dates import OUTPUT_VOCAB, heldout_pairs
from vizcore.seq2seq.model import DateModelConfig, DateTransformer
from vizcore.seq2seq.training import (
    EXAMPLE,
    DateJob,
    DateTrainConfig,
    batch_gold,
    evaluate,
    make_batch,
    schedule,
    train_dates,
)

TINY = DateModelConfig(d_model=32, heads=2, encoder_layers=1, decoder_layers=1, d_ff=32)


def tiny_config(**changes) -> DateTrainConfig:
    settings = dict(model=TINY, steps=60, batch_size=32, lr=3e-3, warmup=5, eval_every=20, eval_size=16,
                    snapshot_every=30)
    return DateTrainConfig(**(settings | changes))


@pytest.fixture(scope="module")
def run():
    return train_dates(tiny_config())


def test_a_tiny_training_run_learns_its_loss_falls(run):
    losses = [s["loss"] for s in run.history.steps]
    assert [s["step"] for s in run.history.steps] == [1, 20, 40, 60]
    assert losses[0] == pytest.approx(np.log(len(OUTPUT_VOCAB)), abs=0.5)  # a uniform guess at first
    assert losses[-1] < 0.7 * losses[0]
    assert not run.stopped and all(0 <= s["exact_match"] <= 1 for s in run.history.steps)


def test_snapshots_hold_the_examples_cross_attention_as_it_learns(run):
    assert [step for step, _ in run.history.snapshots] == [0, 30, 60]
    first, last = run.history.snapshots[0][1], run.history.snapshots[-1][1]
    assert first.shape == (1, 2, 10, len(EXAMPLE.split())) and first.dtype == np.float32
    np.testing.assert_allclose(last.sum(-1), 1.0, atol=1e-5)
    assert not np.allclose(first, last)


def test_the_same_seed_trains_the_same_model():
    a, b = train_dates(tiny_config(steps=12, eval_every=12)), train_dates(tiny_config(steps=12, eval_every=12))
    for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_stop_ends_the_run_and_keeps_the_model_so_far():
    stop = threading.Event()

    def at_step(step):
        if step == 7:
            stop.set()

    result = train_dates(tiny_config(), stop=stop, on_step=at_step)
    assert result.stopped and result.history.steps[-1]["step"] == 7 and result.history.snapshots[-1][0] == 7


def test_the_job_runs_in_the_background_and_its_history_can_be_polled():
    job = DateJob(tiny_config(steps=20, eval_every=10)).start()
    job.join(timeout=60)
    assert job.status == "done" and job.step == 20
    assert [s["step"] for s in job.snapshot().steps] == [1, 10, 20] and job.result.model is not None
    job.release()
    assert job.result is None and job.snapshot().steps == []


def test_batches_are_padded_and_teacher_forced():
    batch = make_batch([("may fifth two thousand", "2000-05-05"), ("the first of june nineteen hundred", "1900-06-01")])
    assert batch.source.shape == (2, 6) and batch.source[0, 4:].tolist() == [0, 0]
    assert [OUTPUT_VOCAB[i] for i in batch.decoder_input[0]] == ["<s>", *"2000-05-05"]
    assert [OUTPUT_VOCAB[i] for i in batch.target[0]] == [*"2000-05-05", "</s>"]
    gold = batch_gold(batch)
    assert gold.shape == (2, 10, 6) and not gold[0, :, 4:].any() and gold[0, 0, 2:4].all()


def test_evaluate_counts_exact_matches_and_alignment_as_by_hand():
    torch.manual_seed(0)
    model = DateTransformer(TINY).eval()
    pairs = heldout_pairs(6)
    batch = make_batch(pairs)
    measured = evaluate(model, batch)
    with torch.no_grad():
        cross = model(batch.source, batch.decoder_input).cross[:, 0, 1, :10].numpy()  # layer 1, head 2
    gold = batch_gold(batch)
    hits = [[gold[b, j, cross[b, j].argmax()] for j in range(10) if j not in (4, 7)] for b in range(6)]
    assert measured["alignment"][0][1] == pytest.approx(np.mean(hits))
    assert measured["year_alignment"][0][1] == pytest.approx(np.mean([all(h[:4]) for h in hits]))
    assert measured["alignment_by_role"]["month"][0][1] == pytest.approx(np.mean([h[4:6] for h in hits]))
    assert measured["exact_match"] == 0.0  # untrained


def test_the_schedule_warms_up_then_decays_to_a_tenth_and_bad_configs_are_refused():
    factor = schedule(DateTrainConfig(steps=100, warmup=10))
    assert factor(0) == pytest.approx(0.1) and factor(9) == pytest.approx(1.0)
    assert factor(10) == pytest.approx(1.0) and factor(100) == pytest.approx(0.1)
    with pytest.raises(VizError, match="warm-up shorter"):
        DateTrainConfig(steps=100, warmup=100).validate()
    with pytest.raises(VizError, match="held-out dates"):
        tiny_config(eval_size=0).validate()
