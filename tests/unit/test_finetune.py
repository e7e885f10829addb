"""Fine-tuning core on a tiny random BERT: freezing per mode, the shared model untouched, stop, progress (a run
to the end: tests/integration/test_finetune.py)."""

import gc
import hashlib
import threading
import weakref

import numpy as np
import pytest
import torch

from vizcore.errors import VizError
from vizcore.finetune import training as finetune
from vizcore.finetune.classify import pool, predict_proba
from vizcore.finetune.datasets import LabelledTexts, TrainTestData
from vizcore.finetune.training import (
    FinetuneConfig,
    TrainingJob,
    new_classifier,
    new_model,
    train_classifier,
)
from vizcore.jobs import JobQueue
from vizcore.model.loading import load_model

GOOD = ["good", "great", "lovely", "nice", "happy", "superb", "fine", "glad"]
BAD = ["bad", "awful", "poor", "sad", "ugly", "nasty", "rude", "grim"]


def toy_data(repeat: int = 2) -> TrainTestData:
    """Separable by vocabulary: every positive text uses only GOOD words, every negative only BAD ones."""
    rng = np.random.default_rng(0)

    def texts(words, n):
        return [" ".join(rng.choice(words, size=3)) for _ in range(n)]

    train = LabelledTexts(tuple(texts(BAD, 8 * repeat) + texts(GOOD, 8 * repeat)),
                          np.array([0] * 8 * repeat + [1] * 8 * repeat), ("neg", "pos"))
    test = LabelledTexts(tuple(texts(BAD, 6) + texts(GOOD, 6)), np.array([0] * 6 + [1] * 6), ("neg", "pos"))
    return TrainTestData(train, test, "toy", "toy split")


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


def digest(model: torch.nn.Module) -> str:
    sha = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        sha.update(name.encode())
        sha.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return sha.hexdigest()


def trainable_names(classifier) -> set[str]:
    return {name for name, p in classifier.named_parameters() if p.requires_grad}


def test_head_mode_trains_only_the_head(tiny):
    classifier = new_classifier(tiny, 2, FinetuneConfig(mode="head"))
    assert trainable_names(classifier) == {"head.weight", "head.bias"}


def test_last_n_mode_trains_the_last_layers_and_the_head(tiny):
    classifier = new_classifier(tiny, 2, FinetuneConfig(mode="last_n", last_n=1))
    names = trainable_names(classifier)
    assert {"head.weight", "head.bias"} <= names
    assert any(n.startswith("encoder.encoder.layer.1.") for n in names)
    assert not any(n.startswith(("encoder.encoder.layer.0.", "encoder.embeddings.")) for n in names)


def test_full_mode_trains_everything(tiny):
    classifier = new_classifier(tiny, 2, FinetuneConfig(mode="full"))
    assert trainable_names(classifier) == {n for n, _ in classifier.named_parameters()}


@pytest.mark.parametrize("mode", ["head", "last_n", "full"])
def test_training_changes_exactly_the_trainable_weights_and_never_the_shared_model(tiny, mode):
    shared_before = digest(tiny.model)
    flags_before = [p.requires_grad for p in tiny.model.parameters()]
    config = FinetuneConfig(mode=mode, last_n=1, epochs=1, batch_size=8, lr=1e-2, seed=0)
    result = train_classifier(tiny, toy_data(1), config)
    after = dict(result.classifier.named_parameters())
    original = dict(tiny.model.named_parameters())
    for name, parameter in after.items():
        if not name.startswith("encoder."):
            continue
        changed = not torch.equal(parameter.detach(), original[name[len("encoder."):]].detach())
        should_change = mode == "full" or (mode == "last_n" and name.startswith("encoder.encoder.layer.1."))
        if "pooler" in name:  # unused by mean pooling: no gradient, so never changes
            continue
        assert changed == should_change, name
    assert digest(tiny.model) == shared_before
    assert [p.requires_grad for p in tiny.model.parameters()] == flags_before
    assert not tiny.model.training


def test_reported_accuracy_matches_an_independent_forward_pass(tiny):
    data = toy_data(1)
    result = train_classifier(tiny, data, FinetuneConfig(mode="head", epochs=2, batch_size=8, lr=5e-2))
    classifier = result.classifier
    correct = 0
    with torch.no_grad():
        for text, label in zip(data.test.texts, data.test.labels):
            inputs = tiny.tokenizer(text, return_tensors="pt")
            hidden = classifier.encoder(**inputs).last_hidden_state[0]  # (T, H)
            logits = classifier.head(hidden.mean(0))
            correct += int(logits.argmax()) == int(label)
    assert result.final_score == pytest.approx(correct / len(data.test))


def test_same_seed_gives_the_same_model_and_another_seed_does_not(tiny):
    config = FinetuneConfig(mode="full", epochs=1, batch_size=8, seed=1)
    a = train_classifier(tiny, toy_data(1), config)
    b = train_classifier(tiny, toy_data(1), config)
    c = train_classifier(tiny, toy_data(1), FinetuneConfig(mode="full", epochs=1, batch_size=8, seed=2))
    texts = ["good fine", "bad rude"]
    first = predict_proba(a.classifier, tiny.tokenizer, texts, 16)
    np.testing.assert_allclose(first, predict_proba(b.classifier, tiny.tokenizer, texts, 16), atol=1e-6)
    assert not np.allclose(first, predict_proba(c.classifier, tiny.tokenizer, texts, 16), atol=1e-6)


def test_stop_event_ends_cleanly_and_keeps_the_partial_model(tiny):
    stop = threading.Event()

    def stop_at_step_three(progress):
        if progress.step == 3:
            stop.set()

    result = train_classifier(tiny, toy_data(), FinetuneConfig(mode="full", epochs=50, batch_size=4),
                              on_progress=stop_at_step_three, stop=stop)
    assert result.stopped and result.steps_done == 3 and result.total_steps == 50 * 8
    assert result.history.evals[-1]["step"] == 3  # the partial model is evaluated
    assert predict_proba(result.classifier, tiny.tokenizer, ["good"], 16).shape == (1, 2)


def test_training_job_runs_in_a_thread_with_one_torch_thread_and_can_be_stopped(tiny):
    threads_here = torch.get_num_threads()
    seen_threads = []
    job = TrainingJob(tiny, toy_data(), FinetuneConfig(mode="full", epochs=100, batch_size=4))
    original = job._on_progress

    def spy(progress):
        seen_threads.append(torch.get_num_threads())
        original(progress)

    job._on_progress = spy
    job.start()
    for _ in range(600):
        progress, history = job.snapshot()
        if progress is not None and progress.step >= 2:
            break
        job.join(0.05)
    job.stop()
    job.join(30)
    assert not job.running and job.status == "stopped"
    assert job.result is not None and 2 <= job.result.steps_done < job.result.total_steps
    _, history = job.snapshot()
    assert len(history.steps) == job.result.steps_done
    assert set(seen_threads) == {1} and torch.get_num_threads() == threads_here


def test_job_reports_errors_instead_of_dying_silently(tiny):
    data = toy_data()
    labels = data.train.labels.copy()
    labels[-1] = 5  # no such class among the 2: the loss of the batch holding it raises inside the loop
    broken = TrainTestData(LabelledTexts(data.train.texts, labels, data.train.label_names), data.test, "x", "x")
    job = TrainingJob(tiny, broken, FinetuneConfig(mode="head", epochs=1, batch_size=4)).start()
    job.join(60)
    assert not job.running and job.status == "error" and job.result is None
    assert job.error.startswith("Training failed: IndexError: ") and "Target 5 is out of bounds" in job.error
    progress, _ = job.snapshot()
    assert progress is not None and progress.step < progress.total_steps  # it failed during training


def test_a_run_whose_session_is_gone_is_stopped_and_its_model_copy_freed(tiny, monkeypatch):
    copies = []

    def watched_model(*args, **kwargs):
        classifier = new_model(*args, **kwargs)
        copies.append(weakref.ref(classifier))
        return classifier

    monkeypatch.setattr(finetune, "new_model", watched_model)
    sessions = {"tab"}
    queue = JobQueue(is_alive=lambda owner: owner in sessions, grace_s=0, check_every_s=0.05)
    job = queue.submit("tab", TrainingJob(tiny, toy_data(), FinetuneConfig(mode="full", epochs=100, batch_size=4)))
    while job.running and (job.snapshot()[0] is None or job.snapshot()[0].step < 2):
        job.join(0.05)
    sessions.clear()  # the tab is closed; the queue's own reaper notices
    job.join(30)
    assert job.status == "stopped" and job.result is None and queue.running() == []
    progress, history = job.snapshot()
    assert progress.step < progress.total_steps
    assert all(row["step"] % 8 == 0 for row in history.evals)  # epoch ends only: no evaluation nobody reads
    gc.collect()
    assert len(copies) == 1 and copies[0]() is None, "the gone session's model copy is still referenced"


@pytest.mark.parametrize(("config", "message"), [
    (FinetuneConfig(mode="middle"), "Unknown mode"),
    (FinetuneConfig(mode="last_n", last_n=3), "between 1 and 2"),
    (FinetuneConfig(lr=0.0), "learning rate"),
    (FinetuneConfig(epochs=0), "Epochs"),
    (FinetuneConfig(batch_size=0), "batch size"),
    (FinetuneConfig(max_length=4), "maximum length"),
])
def test_bad_settings_are_refused_before_any_training(tiny, config, message):
    with pytest.raises(VizError, match=message):
        TrainingJob(tiny, toy_data(), config)


def test_mean_pooling_ignores_padding():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])  # (1, 3, 2)
    mask = torch.tensor([[1, 1, 0]])
    assert pool(hidden, mask, "mean").tolist() == [[2.0, 3.0]]
    assert pool(hidden, mask, "cls").tolist() == [[1.0, 2.0]]
