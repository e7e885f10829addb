"""Next sentence prediction: BERT's second pre-training task, [CLS] A [SEP] B [SEP] -> IsNext / NotNext.

The [CLS] token's last hidden state goes through the pooler (Linear + tanh) and a Linear to two
logits; softmax gives P(IsNext) (BERT's label 0) and P(NotNext). ``next_sentence`` runs one pair
through the one forward core (``vizcore.model.run``) and returns the probability with the attention
that feeds it: every head's [CLS] row, and how much of it falls on sentence A, sentence B and the
special tokens.

The built-in ``minilm-nsp-tuned`` is the masked-LM plus what ``tools.nsp_training export`` wrote to
``vizcore/weights/minilm-nsp.safetensors`` (fp16: the top encoder layers, the pooler, the NSP
classifier, trained with NSP's and the masked-LM's losses together, as BERT was).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from vizcore.errors import VizError
from vizcore.model.catalog import NSP_LABEL
from vizcore.model.loading import LoadedModel, has_nsp_head
from vizcore.model.run import Capture, run
from vizcore.text import check_pair

WEIGHTS_ENV = "VIZCORE_NSP_WEIGHTS"
DEFAULT_WEIGHTS = Path(__file__).resolve().parents[1] / "weights" / "minilm-nsp.safetensors"
EXPORT_HINT = "python -m tools.nsp_training pairs, then train, then export (see docs/MASKED_LM.md)"

# The tutorials' pairs (BERT's paper and the guides built on it), and NotNext ones; (A, B, expected).
EXAMPLES: tuple[tuple[str, str, str], ...] = (
    ("The man went to the store.", "He bought a gallon of milk.", "IsNext"),
    ("The man went to the store.", "Penguins are flightless birds.", "NotNext"),
    ("She opened the door.", "The room was dark and cold.", "IsNext"),
    ("The train was late again this morning.", "Photosynthesis converts light into chemical energy.", "NotNext"),
)


def weights_path() -> Path:
    return Path(os.environ.get(WEIGHTS_ENV) or DEFAULT_WEIGHTS).expanduser()


def checked_source() -> Path:
    """The catalogue's ``folder``: the embedded encoder's, once the masked-LM and NSP tensors exist."""
    from vizcore.mlm.weights import checked_source as masked_lm_source

    folder = masked_lm_source()
    if not weights_path().is_file():
        raise VizError(f"The next-sentence weights '{weights_path()}' are missing: make them with {EXPORT_HINT} "
                       "(or, online, use bert-base-uncased).")
    return folder


def apply_trained_weights(model, head: str) -> None:
    """The catalogue's ``patch``: the masked-LM's tensors, then the NSP run's on top."""
    from vizcore.mlm.weights import apply_weights_file
    from vizcore.mlm.weights import weights_path as masked_lm_weights

    masked_lm_head = "cls.predictions." if head != "base" else None
    apply_weights_file(model, masked_lm_weights(), "masked-LM", require_head=masked_lm_head)
    apply_weights_file(model, weights_path(), "next-sentence",
                       require_head="cls.seq_relationship." if head == "nsp" else None)


def training_metrics() -> dict | None:
    from vizcore.mlm.weights import read_metrics

    return read_metrics(weights_path().with_suffix(".json"))


def summary_line() -> str:
    text = (f"{NSP_LABEL}: the masked-LM with BERT's next-sentence head, trained here on sentence pairs "
            "from offline English text (50 % the real next sentence, 50 % one from another document).")
    metrics = training_metrics()
    if metrics and "shipped" in metrics:
        text += (f" Measured: {metrics['shipped']['heldout_accuracy']:.1%} right on "
                 f"{metrics['shipped']['heldout_pairs']:,} held-out pairs.")
    return text


@dataclass(frozen=True)
class NextSentence:
    model: str
    tokens: list[str]
    segments: list[int]  # 0 for [CLS] A [SEP], 1 for B [SEP]
    is_next: float  # P(IsNext)
    logits: tuple[float, float]  # (IsNext, NotNext)
    cls_attention: torch.Tensor  # [layer, head, token]: each head's [CLS] row
    share: dict[str, torch.Tensor]  # "A", "B", "special" -> [layer, head] attention mass of [CLS]
    special: list[bool]  # [CLS], [SEP] (and any other special token)
    truncated: bool = False  # the pair was longer than the model reads: the longer sentence was cut
    num_input_tokens: int = 0  # tokens the whole pair would have had

    @property
    def truncation_note(self) -> str | None:
        if not self.truncated:
            return None
        return (f"The pair has {self.num_input_tokens:,} tokens; this model reads {len(self.tokens):,}, so the longer "
                "sentence was cut at its end and the probability is for what was kept.")

    @property
    def parts(self) -> list[str]:
        """Each token's part of the input: "A", "B" or "special" (the keys of ``share``)."""
        return ["special" if s else "AB"[g] for s, g in zip(self.special, self.segments)]

    def to_dict(self) -> dict:
        return {"model": self.model, "is_next": self.is_next, "not_next": 1 - self.is_next,
                "logits": {"is_next": self.logits[0], "not_next": self.logits[1]}, "tokens": self.tokens,
                "segments": self.segments, "special": self.special, "truncated": self.truncated,
                "num_input_tokens": self.num_input_tokens,
                "cls_share": {part: values.tolist() for part, values in self.share.items()}}


def next_sentence(loaded: LoadedModel, text: str, pair: str) -> NextSentence:
    """P(B follows A) from a model with BERT's NSP head, and the [CLS] attention feeding it."""
    check_pair(text, pair)
    if not has_nsp_head(loaded.model):
        raise VizError(f"'{loaded.name}' has no next-sentence head: pick minilm-nsp-tuned "
                       "(or bert-base-uncased online).")
    record = run(loaded, text, pair=pair, capture=Capture(hidden=False))
    logits = torch.from_numpy(record.next_sentence_logits)
    probability = float(logits.softmax(-1)[0])
    attention = torch.from_numpy(record.attention[:, :, 0, :])  # [layer, head, token]
    segments = [int(s) for s in record.segment_ids]
    special = torch.from_numpy(record.special_mask)
    b = torch.tensor(segments) == 1
    a = ~b & ~special
    share = {"A": attention[..., a].sum(-1), "B": attention[..., b & ~special].sum(-1),
             "special": attention[..., special].sum(-1)}
    return NextSentence(loaded.name, list(record.tokens), list(segments), probability,
                        (float(logits[0]), float(logits[1])), attention, share, [bool(s) for s in special],
                        record.truncated, record.num_input_tokens)
