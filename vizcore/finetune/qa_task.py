"""Extractive question answering as a fine-tuning task: a linear head H -> 2 on every token's hidden
state gives a start and an end logit; the loss is the mean of the two cross-entropies (BERT's SQuAD
head). Data: vizcore/finetune/qa.py; features and decoding: qa_spans.py; predictions: qa_predict.py.

Defaults, measured on the built-in set (docs/FINETUNE.md): the built-in questions with their passages
are 136 to 171 tokens long, so any maximum length from 192 up reads them whole; 384 is BERT's SQuAD
setting, under which most SQuAD passages fit too, and costs nothing extra on short inputs (a batch is
padded to its longest example, not to the maximum). Longer passages are truncated for training (an
answer cut off points at [CLS]) and read in overlapping windows for evaluation.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vizcore.finetune.qa import QAData, QASet, load_qa
from vizcore.finetune.qa_metrics import answer_scores
from vizcore.finetune.qa_predict import ANSWER_POSITIONS, evaluate_answers, predicted_answers, span_inputs
from vizcore.finetune.qa_spans import QAFeature, encode_features
from vizcore.finetune.tasks import Batch, Task, TaskModel, hidden_size, register

MASKED = -1e4  # the logit of a padding position: no probability, and finite in float16 too


class SpanModel(TaskModel):
    """Encoder -> (B, T, H) -> linear -> start and end logits, (B, T) each.

    Only [CLS] and the passage's tokens can be chosen (``inputs[ANSWER_POSITIONS]``; without it, every
    real token): the others get ``MASKED``, so the softmax of the loss is over where an answer can be.
    The head does not spend its first epochs learning that the question holds no answer. (The commit that
    added this reported held-out token F1 0.54 -> 0.59; the default run measured since gives 0.540 in the
    lab and the CLI alike: docs/FINETUNE.md.)
    """

    def __init__(self, encoder: nn.Module):
        super().__init__(encoder, nn.Linear(hidden_size(encoder), 2))

    def hidden(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return super().hidden({k: v for k, v in inputs.items() if k != ANSWER_POSITIONS})

    def from_hidden(self, hidden: torch.Tensor, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        start, end = self.head(hidden).unbind(-1)  # (B, T) each
        allowed = inputs.get(ANSWER_POSITIONS, inputs["attention_mask"].bool())  # (B, T)
        return start.masked_fill(~allowed, MASKED), end.masked_fill(~allowed, MASKED)


class QATask(Task):
    name = "qa"
    title = "Extractive question answering"
    metric = "token_f1"
    metric_label = "token F1"
    batch_label = "spans right"  # start and end token both the target's
    extra_metrics = {"exact_match": "exact match"}
    # Measured on the built-in set (docs/FINETUNE.md): full fine-tuning at BERT's usual 5e-5 is far from
    # done after a few epochs of 342 questions; 3e-4 with batches of 8 (43 updates an epoch) levels off
    # after about 4 epochs, about 5 minutes of one CPU core.
    defaults = {"max_length": 384, "epochs": 4, "batch_size": 8}
    learning_rates = {"full": 3e-4}

    def load_data(self, train: str, eval_path: str | None, seed: int, columns: dict[str, str | None]) -> QAData:
        chosen = {"context": columns.get("text"), "question": columns.get("second"), "answer": columns.get("label")}
        return load_qa(train, eval_path, seed, {k: v for k, v in chosen.items() if v is not None})

    def build(self, encoder: nn.Module, data: Any, config: Any) -> SpanModel:
        return SpanModel(encoder)

    def encode(self, tokenizer, split: QASet, max_length: int) -> list[QAFeature]:
        return encode_features(tokenizer, split.examples, max_length)

    def collate(self, features: list[QAFeature], pad_id: int, device, encoder: nn.Module) -> Batch:
        inputs = span_inputs(features, pad_id, device, encoder)
        targets = (torch.tensor([f.start for f in features], device=device),
                   torch.tensor([f.end for f in features], device=device))
        return Batch(inputs, targets)

    def loss(self, outputs: tuple[torch.Tensor, torch.Tensor], targets: tuple[torch.Tensor, torch.Tensor]
             ) -> torch.Tensor:
        (start, end), (start_at, end_at) = outputs, targets
        return (nn.functional.cross_entropy(start, start_at) + nn.functional.cross_entropy(end, end_at)) / 2

    def batch_score(self, outputs: tuple[torch.Tensor, torch.Tensor], targets: tuple[torch.Tensor, torch.Tensor]
                    ) -> float:
        (start, end), (start_at, end_at) = outputs, targets
        return float(((start.argmax(1) == start_at) & (end.argmax(1) == end_at)).float().mean())

    def evaluate(self, model: SpanModel, tokenizer, split: QASet, max_length: int) -> dict[str, float]:
        if not len(split):
            return {"token_f1": float("nan"), "exact_match": float("nan")}
        return evaluate_answers(model, tokenizer, split.examples, max_length)

    def held_out_records(self, model: SpanModel, tokenizer, split: QASet, max_length: int) -> list[dict]:
        """Per question: ids, the question, the gold answers, the predicted span and SQuAD's two scores."""
        predictions = predicted_answers(model, tokenizer, split.examples, max_length)
        scores = answer_scores(predictions, split.examples)
        return [{"id": e.id, "title": e.title, "question": e.question, "gold": [a.text for a in e.answers],
                 "predicted": p, "token_f1": float(f1), "exact_match": bool(em == 1.0)}
                for e, p, f1, em in zip(split.examples, predictions, scores["token_f1"], scores["exact_match"])]


QA = register(QATask())
