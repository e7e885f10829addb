"""The tuned lens (Belrose et al. 2023, "Eliciting Latent Predictions from Transformers with the Tuned Lens").

The logit lens reads a middle layer by applying the model's own output head to its hidden state, as if the
layers above did nothing. The tuned lens first moves the hidden state with a small affine map learnt for
that layer, a *translator*: ``h -> h + A_l h + b_l`` (``A_l`` and ``b_l`` start at zero, so an untrained
translator is the logit lens), trained so that ``head(translator_l(h_l))`` matches the model's final
distribution, ``KL(final || lens)``. The last layer's hidden state is the model's own output: it needs no
translator. For the offline masked-LM (6 layers, hidden 384) that is 6 x (384 x 384 + 384) numbers.

Translators are trained for one model: ``tools/tuned_lens_training.py`` trains them for ``minilm-mlm-tuned``
on the offline text and ships ``vizcore/weights/tuned-lens.safetensors`` (fp16) with its measurements in
``tuned-lens.json``; the file names the masked-LM weights it was trained on, and for any other model (or other
masked-LM weights) ``tuned_lens_for`` says why there is none. ``VIZCORE_TUNED_LENS_WEIGHTS`` points to another
file.

Shapes: L = layers, L1 = L + 1 rows of hidden states (row 0 = embeddings), N = positions, D = hidden, V = vocabulary.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from vizcore.errors import VizError
from vizcore.model.catalog import MLM_MODEL

WEIGHTS_ENV = "VIZCORE_TUNED_LENS_WEIGHTS"
DEFAULT_WEIGHTS = Path(__file__).resolve().parents[1] / "weights" / "tuned-lens.safetensors"
TRAIN_HINT = "python -m tools.tuned_lens_training train --work-dir .lens-work, then export --work-dir .lens-work"
AGREEMENT_K = 5  # top-5 agreement: the final top-1 word is among the lens's top 5


class TunedLens(torch.nn.Module):
    """One affine translator per layer but the last: ``weight[l]`` is ``A_l`` (out, in), ``bias[l]`` is ``b_l``."""

    def __init__(self, num_layers: int, hidden: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(num_layers, hidden, hidden))  # (L, D, D)
        self.bias = torch.nn.Parameter(torch.zeros(num_layers, hidden))  # (L, D)

    @property
    def num_layers(self) -> int:
        return int(self.weight.shape[0])

    @property
    def hidden(self) -> int:
        return int(self.weight.shape[1])

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """Every row but the last through its translator. (L1, N, D) -> (L1, N, D)"""
        body = hidden[:-1]  # (L, N, D)
        weight, bias = self.weight.to(body.device, body.dtype), self.bias.to(body.device, body.dtype)
        moved = body + torch.einsum("lnd,led->lne", body, weight) + bias[:, None]
        return torch.cat([moved, hidden[-1:]])


# ---- what the lenses are measured by ---------------------------------------------------------------

def kl_to_final(logits: torch.Tensor) -> torch.Tensor:
    """KL(final || row) in nats, the last row being the final distribution. (L1, N, V) -> (L1, N)"""
    logp = logits.float().log_softmax(-1)
    final = logp[-1]
    return (final.exp() * (final - logp)).sum(-1)


def lens_loss(lens: TunedLens, head: Callable[[torch.Tensor], torch.Tensor], hidden: torch.Tensor) -> torch.Tensor:
    """The training objective: per translated layer, the mean over positions of KL(final || head(translator(h))).

    hidden: (L1, N, D) -> (L,). Summed over layers it gives each translator the gradient of its own KL.
    One layer at a time, so only one (N, V) block of logits is held beside the final one.
    """
    with torch.no_grad():
        final = head(hidden[-1]).float().log_softmax(-1)  # (N, V)
    moved = lens(hidden)[:-1]  # (L, N, D)
    losses = []
    for row in moved:
        logp = head(row).float().log_softmax(-1)
        losses.append((final.exp() * (final - logp)).sum(-1).mean())
    return torch.stack(losses)


@dataclass
class LensTally:
    """Per-row sums over positions: KL to the final distribution, top-1 and top-5 agreement with its top-1."""

    kl: torch.Tensor  # (L1,)
    top1: torch.Tensor  # (L1,)
    top5: torch.Tensor  # (L1,)
    positions: int = 0

    @classmethod
    def empty(cls, rows: int) -> LensTally:
        return cls(torch.zeros(rows, dtype=torch.float64), torch.zeros(rows, dtype=torch.float64),
                   torch.zeros(rows, dtype=torch.float64))

    def add(self, logits: torch.Tensor) -> None:
        """Count one batch of a lens's logits. (L1, N, V), the last row being the final distribution."""
        target = logits[-1].argmax(-1)  # (N,)
        top = logits.topk(AGREEMENT_K, dim=-1).indices  # (L1, N, k)
        self.kl += kl_to_final(logits).sum(-1).double()
        self.top1 += (top[..., 0] == target).sum(-1).double()
        self.top5 += (top == target[:, None]).any(-1).sum(-1).double()
        self.positions += int(logits.shape[1])

    def means(self) -> dict[str, list[float]]:
        """Per row (0 = embeddings, last = the model's output): mean KL (nats), top-1 and top-5 agreement."""
        n = max(1, self.positions)
        return {"kl": (self.kl / n).tolist(), "top1": (self.top1 / n).tolist(), "top5": (self.top5 / n).tolist()}


@torch.no_grad()
def tally_batch(head: Callable[[torch.Tensor], torch.Tensor], lens: TunedLens | None, hidden: torch.Tensor,
                logit: LensTally, tuned: LensTally | None) -> None:
    """Add one batch of hidden states (L1, N, D) to the logit lens's tally and, with a lens, the tuned lens's."""
    logit.add(head(hidden).float())
    if lens is not None and tuned is not None:
        tuned.add(head(lens(hidden)).float())


# ---- the shipped translators -----------------------------------------------------------------------

def weights_path() -> Path:
    return Path(os.environ.get(WEIGHTS_ENV) or DEFAULT_WEIGHTS).expanduser()


def metrics_path() -> Path:
    return weights_path().with_suffix(".json")


def file_fingerprint(path: Path) -> str:
    """The first 16 hex digits of a file's SHA-256: which masked-LM weights a lens was trained on."""
    return _fingerprint(str(path), path.stat().st_mtime_ns, path.stat().st_size)


@lru_cache(maxsize=4)
def _fingerprint(path: str, mtime: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def save_tuned_lens(lens: TunedLens, path: Path, model: str, model_weights: str) -> None:
    """fp16 translators with the model (and its weights' fingerprint) they belong to."""
    from safetensors.torch import save_file

    state = {"weight": lens.weight.detach().half().contiguous(), "bias": lens.bias.detach().half().contiguous()}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path), metadata={"model": model, "model_weights": model_weights})


def load_tuned_lens(path: Path, num_layers: int, hidden: int) -> tuple[TunedLens, dict[str, str]]:
    """The translators in ``path`` for a model of ``num_layers`` layers of width ``hidden``, and the file's
    metadata; a VizError that says what is wrong when the file is missing, unreadable or of another shape."""
    from safetensors import SafetensorError, safe_open

    if not path.is_file():
        raise VizError(f"The tuned lens '{path}' is missing: make it with {TRAIN_HINT}.")
    try:
        with safe_open(str(path), framework="pt") as file:
            metadata = file.metadata() or {}
            state = {key: file.get_tensor(key) for key in file.keys()}
    except (OSError, SafetensorError) as error:
        raise VizError(f"The tuned lens '{path}' could not be read ({error}); export it again.") from error
    weight, bias = state.get("weight"), state.get("bias")
    if weight is None or bias is None or weight.dim() != 3 or bias.dim() != 2:
        raise VizError(f"'{path}' is not a tuned lens (it needs a weight (L, D, D) and a bias (L, D)).")
    expected = (num_layers, hidden, hidden)
    if tuple(weight.shape) != expected or tuple(bias.shape) != (num_layers, hidden):
        raise VizError(
            f"The tuned lens '{path}' was trained for a model of {weight.shape[0]} layers of width {weight.shape[-1]}; "
            f"this model has {num_layers} layers of width {hidden}. A tuned lens fits only the model it was "
            "trained for.")
    lens = TunedLens(num_layers, hidden)
    with torch.no_grad():
        lens.weight.copy_(weight.float())
        lens.bias.copy_(bias.float())
    return lens.eval().requires_grad_(False), metadata


def tuned_lens_for(name: str, num_layers: int, hidden: int) -> tuple[TunedLens | None, str]:
    """The shipped tuned lens for model ``name``, or None and why there is none (a sentence for the page)."""
    if name != MLM_MODEL:
        return None, (f"The tuned lens is trained for one model only, the offline masked-LM `{MLM_MODEL}`: "
                      f"translators learnt on one model's hidden states mean nothing for another's, and "
                      f"`{name}` has none. The logit lens works for every masked-LM.")
    from vizcore.mlm.weights import weights_path as mlm_weights_path

    try:
        lens, metadata = _cached_lens(str(weights_path()), num_layers, hidden)
    except VizError as error:
        return None, str(error)
    mlm_weights = mlm_weights_path()
    if mlm_weights.is_file() and metadata.get("model_weights") not in (None, file_fingerprint(mlm_weights)):
        return None, (f"The tuned lens '{weights_path()}' was trained on other `{MLM_MODEL}` weights than "
                      f"'{mlm_weights}': train it again for these ({TRAIN_HINT}).")
    return lens, ""


@lru_cache(maxsize=2)
def _cached_lens(path: str, num_layers: int, hidden: int) -> tuple[TunedLens, dict[str, str]]:
    return load_tuned_lens(Path(path), num_layers, hidden)


def translator_parameters(num_layers: int, hidden: int) -> int:
    return num_layers * (hidden * hidden + hidden)


def card_metrics() -> dict | None:
    """What the export measured on held-out text (``tuned-lens.json``), or None when it is not there."""
    from vizcore.mlm.weights import read_metrics

    return read_metrics(metrics_path())


def check_lens_fits(lens: TunedLens, hidden_states: torch.Tensor) -> None:
    """Hidden states (L1, N, D) of the model a lens is applied to must have the lens's shape."""
    if hidden_states.shape[0] != lens.num_layers + 1 or hidden_states.shape[-1] != lens.hidden:
        raise VizError(f"The tuned lens has {lens.num_layers} translators of width {lens.hidden}; this model gives "
                       f"{hidden_states.shape[0] - 1} layers of width {hidden_states.shape[-1]}.")

