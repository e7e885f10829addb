"""Attribution patching (Nanda 2023; Syed, Rager & Conmy 2023): every activation patch, to first order.

Activation patching (``vizcore.why.patching``) runs the model once per patched activation. Its
first-order Taylor estimate needs one clean pass, one corrupted pass and one backward pass:

    LD(corrupt with a := a_clean) − LD(corrupt)  ≈  (a_clean − a_corrupt) · ∂LD/∂a |corrupt

for every activation ``a`` at once (the gradient is taken on the corrupted run), divided by
``LD_clean − LD_corrupt`` to be read as the exact sweep's recovered share:

* per state and position: hidden state ``l`` at one position, ``[L + 1, T]``;
* per head: one head's output (its slice at the input of W_O) at every position, ``[L, H]``.

The gradient is read by adding a zero tensor to every hidden state and every head output on the
corrupted run (``hidden_state_hooks``, ``head_output_hooks``): it changes nothing forward, and its
gradient is the gradient with respect to that activation, everything downstream included. The
estimate is exact for a patch that changes LD linearly; it misses saturation (a softmax that flips,
a LayerNorm that rescales), which is where it and the exact sweep disagree.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from vizcore.errors import VizError
from vizcore.mlm.fill_mask import prepare_text
from vizcore.model.loading import LoadedModel
from vizcore.model.run import Capture, head_output_hooks, hidden_state_hooks, run
from vizcore.why.importance import rank_correlation
from vizcore.why.patching import PatchingResult, pair_inputs
from vizcore.why.targets import mask_logits, word_id

TOP_K = 10  # the overlap of the k largest effects, by size (|recovered|)


@dataclass(frozen=True)
class Estimate:
    model: str
    clean_tokens: list[str]
    corrupt_tokens: list[str]
    mask_index: int
    answer: str
    contrast: str
    ld_clean: float
    ld_corrupt: float
    recovered: np.ndarray  # float32 [L + 1, T]: the first-order recovered share, state x position
    head_recovered: np.ndarray  # float32 [L, H]
    seconds: float

    def to_dict(self) -> dict:
        return {"model": self.model, "tokens": list(self.corrupt_tokens), "clean_tokens": list(self.clean_tokens),
                "mask_index": self.mask_index, "answer": self.answer, "contrast": self.contrast,
                "logit_difference": {"clean": self.ld_clean, "corrupt": self.ld_corrupt},
                "recovered": self.recovered.tolist(), "heads": self.head_recovered.tolist(), "seconds": self.seconds}


def _gradients(loaded: LoadedModel, inputs: dict, position: int, ids: tuple[int, int],
               shapes: tuple[tuple, tuple]) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """On the corrupted input: (LD, hidden states [L + 1, T, d], their gradients, head outputs [L, H, T, d_head],
    their gradients)."""
    dtype = next(loaded.model.parameters()).dtype
    states = torch.zeros(shapes[0], dtype=dtype, requires_grad=True)  # (L + 1, T, d)
    heads = torch.zeros(shapes[1], dtype=dtype, requires_grad=True)  # (L, T, H, d_head): W_O's input order
    seen: dict[str, dict[int, torch.Tensor]] = {"states": {}, "heads": {}}

    def add(store: dict, zeros: torch.Tensor):
        def function(index: int, x: torch.Tensor) -> torch.Tensor:  # x: (1, T, ...)
            store[index] = x[0].detach()
            return x + zeros[index].to(x.dtype)
        return function

    specs = hidden_state_hooks(loaded, add(seen["states"], states)) + head_output_hooks(loaded, add(seen["heads"],
                                                                                                      heads))
    logits = mask_logits(loaded, inputs, position, specs, grad=True)[0]
    ld = logits[ids[0]] - logits[ids[1]]
    grad_states, grad_heads = torch.autograd.grad(ld, (states, heads))
    stack = lambda store: torch.stack([store[i] for i in range(len(store))]).double().cpu().numpy()  # noqa: E731
    return (float(ld.detach()), stack(seen["states"]), grad_states.double().cpu().numpy(), stack(seen["heads"]),
            grad_heads.double().cpu().numpy())


def attribution_patching(loaded: LoadedModel, clean: str, corrupt: str, answer: str, contrast: str) -> Estimate:
    """The first-order estimate of every patch of ``patch_sweep`` (same arguments, same checks)."""
    start = time.perf_counter()
    ids = (word_id(loaded, answer, "answer"), word_id(loaded, contrast, "contrast word"))
    if ids[0] == ids[1]:
        raise VizError("The answer and the contrast word are the same word: choose two different words.")
    clean_input, corrupt_input = pair_inputs(loaded, clean, corrupt)
    source = run(loaded, prepare_text(loaded, clean), capture=Capture(hidden=True, head_outputs=True, logits=True))
    logits = source.logits[clean_input.masks[0]].astype(np.float64)
    ld_clean = float(logits[ids[0]] - logits[ids[1]])
    L, H, T = loaded.num_layers, loaded.num_heads, corrupt_input.num_tokens
    d, d_head = source.hidden_states.shape[-1], source.head_outputs.shape[-1]
    ld_corrupt, states, grad_states, heads, grad_heads = _gradients(
        loaded, corrupt_input.inputs, corrupt_input.masks[0], ids, ((L + 1, T, d), (L, T, H, d_head)))
    if abs(ld_clean - ld_corrupt) < 1e-4:
        raise VizError(f"Both sentences give the same logit difference ({ld_clean:.4f}): there is nothing to "
                       "recover. Change the corrupted sentence or the words compared.")
    per_state = ((source.hidden_states - states) * grad_states).sum(-1)  # (L + 1, T)
    clean_heads = source.head_outputs.transpose(0, 2, 1, 3)  # [L, H, T, d_head] -> (L, T, H, d_head)
    per_head = ((clean_heads - heads) * grad_heads).sum(axis=(1, 3))  # (L, H)
    scale = ld_clean - ld_corrupt
    return Estimate(model=loaded.name, clean_tokens=clean_input.tokens, corrupt_tokens=corrupt_input.tokens,
                    mask_index=corrupt_input.masks[0], answer=answer.strip(), contrast=contrast.strip(),
                    ld_clean=ld_clean, ld_corrupt=ld_corrupt, recovered=(per_state / scale).astype(np.float32),
                    head_recovered=(per_head / scale).astype(np.float32), seconds=time.perf_counter() - start)


def top_k_overlap(a: np.ndarray, b: np.ndarray, k: int = TOP_K) -> float:
    """The share of the ``k`` largest |values| of ``a`` that are among the ``k`` largest of ``b`` (ties by index)."""
    k = min(k, a.size)
    top = [set(np.argsort(-np.abs(x).ravel(), kind="stable")[:k].tolist()) for x in (a, b)]
    return len(top[0] & top[1]) / k if k else float("nan")


@dataclass(frozen=True)
class Agreement:
    """How well the estimate ranks what exact patching measured."""

    spearman_states: float
    spearman_heads: float
    overlap_states: float  # top-k overlap
    overlap_heads: float
    k: int

    def to_dict(self) -> dict:
        clean = lambda v: float(v) if np.isfinite(v) else None  # noqa: E731
        return {"spearman": {"states": clean(self.spearman_states), "heads": clean(self.spearman_heads)},
                "top_k_overlap": {"k": self.k, "states": clean(self.overlap_states),
                                  "heads": clean(self.overlap_heads)}}


def agreement(exact: PatchingResult, estimate: Estimate, k: int = TOP_K) -> Agreement:
    return Agreement(spearman_states=rank_correlation(exact.recovered, estimate.recovered),
                     spearman_heads=rank_correlation(exact.head_recovered, estimate.head_recovered),
                     overlap_states=top_k_overlap(exact.recovered, estimate.recovered, k),
                     overlap_heads=top_k_overlap(exact.head_recovered, estimate.head_recovered, k), k=k)
