"""Activation patching (Meng et al. 2022; Wang et al. 2022): which activations carry the difference?

Two sentences of the same token length, a clean one ("The capital of France is [MASK].") and a
corrupted one ("... Italy ..."), an answer (paris) and a contrast (rome). The logit difference
``LD = logit(answer) - logit(contrast)`` at the mask is high on the clean run and low on the corrupted
one. Copy one activation of the clean run into the corrupted run and see how much of the difference
comes back:

    recovered = (LD_patched - LD_corrupt) / (LD_clean - LD_corrupt)   (1 = all of it, 0 = none)

* per state and position: hidden state ``l`` (0 = the embedding output, ``l`` = the output of layer
  ``l``) at one position, for every state x position: ``[L + 1, T]``;
* per head: one head's output (its slice at the input of W_O) at every position: ``[L, H]``.

Every patched run is one row of a batch (``HeadAblation`` / ``Patch`` with ``rows``), so the whole
sweep is a few batched forward passes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from vizcore.errors import VizError
from vizcore.mlm.fill_mask import prepare_text
from vizcore.model.loading import LoadedModel
from vizcore.model.run import Capture, HeadAblation, Patch, intervention_hooks, run
from vizcore.why.targets import MaskedInput, mask_logits, masked_input, word_id

BATCH_ROWS = 64  # patched runs per forward pass


@dataclass(frozen=True)
class PatchingResult:
    model: str
    clean_tokens: list[str]
    corrupt_tokens: list[str]
    mask_index: int  # the mask whose logits are compared (the first)
    answer: str
    contrast: str
    ld_clean: float
    ld_corrupt: float
    recovered: np.ndarray  # float32 [L + 1, T]: state x position
    head_recovered: np.ndarray  # float32 [L, H]: one head's output at every position
    seconds: float = 0.0  # how long the sweep took (beside attribution patching's estimate)

    def to_dict(self) -> dict:
        return {"model": self.model, "tokens": list(self.corrupt_tokens), "clean_tokens": list(self.clean_tokens),
                "mask_index": self.mask_index, "answer": self.answer, "contrast": self.contrast,
                "logit_difference": {"clean": self.ld_clean, "corrupt": self.ld_corrupt},
                "recovered": self.recovered.tolist(), "heads": self.head_recovered.tolist(), "seconds": self.seconds}


def pair_inputs(loaded: LoadedModel, clean: str, corrupt: str) -> tuple[MaskedInput, MaskedInput]:
    """Both sentences tokenised; VizError (showing both token lists) unless their lengths and masks agree."""
    a, b = masked_input(loaded, clean), masked_input(loaded, corrupt)
    if a.num_tokens != b.num_tokens:
        raise VizError(f"The sentences must have the same number of tokens to patch position by position: the "
                       f"clean one has {a.num_tokens} {a.tokens}, the corrupted one {b.num_tokens} {b.tokens}. "
                       "Change a word so that both split the same way.")
    if a.masks[0] != b.masks[0]:
        raise VizError(f"The [MASK] must sit at the same position in both: token {a.masks[0]} in {a.tokens}, "
                       f"token {b.masks[0]} in {b.tokens}.")
    return a, b


def _logit_differences(loaded: LoadedModel, inputs: dict, position: int, specs, ids: tuple[int, int]) -> np.ndarray:
    logits = mask_logits(loaded, inputs, position, specs).float()  # (rows, V)
    return (logits[:, ids[0]] - logits[:, ids[1]]).double().cpu().numpy()


def _sweep(loaded: LoadedModel, clean: MaskedInput, corrupt: MaskedInput, changes: list,
           ids: tuple[int, int], batch_rows: int) -> tuple[float, float, np.ndarray]:
    """(LD clean, LD corrupt, LD of the corrupted input with each change alone): one batch row per run.

    Row 0 is the clean input and row 1 the plain corrupted input, and every chunk has the same number
    of rows (the last one filled with plain rows), so the baselines are computed exactly as the patched
    runs are: the recovered shares are exact where they should be (1 and 0), not off by float noise
    between batch sizes.
    """
    runs: list = [None, None, *changes]
    size = max(1, min(batch_rows, len(runs)))
    runs += [None] * (-len(runs) % size)
    out = []
    for start in range(0, len(runs), size):
        chunk = runs[start:start + size]
        inputs = {name: value.repeat(size, 1) for name, value in corrupt.inputs.items()}
        if start == 0:
            for name, value in clean.inputs.items():
                inputs[name][0] = value[0]
        moved = [replace(c, rows=(i,)) for i, c in enumerate(chunk) if c is not None]
        specs = intervention_hooks(loaded, [c for c in moved if isinstance(c, HeadAblation)],
                                   [c for c in moved if isinstance(c, Patch)], num_tokens=corrupt.num_tokens)
        out.append(_logit_differences(loaded, inputs, corrupt.masks[0], specs, ids))
    differences = np.concatenate(out)
    return float(differences[0]), float(differences[1]), differences[2:2 + len(changes)]


def patch_sweep(loaded: LoadedModel, clean: str, corrupt: str, answer: str, contrast: str,
                batch_rows: int = BATCH_ROWS) -> PatchingResult:
    """Patch every state x position and every head from ``clean`` into ``corrupt``, ``batch_rows`` patched
    runs a forward pass."""
    start = time.perf_counter()
    ids = (word_id(loaded, answer, "answer"), word_id(loaded, contrast, "contrast word"))
    if ids[0] == ids[1]:
        raise VizError("The answer and the contrast word are the same word: choose two different words.")
    clean_input, corrupt_input = pair_inputs(loaded, clean, corrupt)
    # The text as masked_input read it (a typed [mask] or <mask> written as the model's own mask token),
    # so that the record's tokens are the sweep's.
    source = run(loaded, prepare_text(loaded, clean), capture=Capture(hidden=True, head_outputs=True))
    T, L = corrupt_input.num_tokens, loaded.num_layers
    changes: list = [Patch(state, (position,), source.hidden_states[state][[position]])
                     for state in range(L + 1) for position in range(T)]
    changes += [HeadAblation(layer, head, source.head_outputs[layer, head])
                for layer in range(L) for head in range(loaded.num_heads)]
    ld_clean, ld_corrupt, patched = _sweep(loaded, clean_input, corrupt_input, changes, ids, batch_rows)
    if abs(ld_clean - ld_corrupt) < 1e-4:
        raise VizError(f"Both sentences give the same logit difference ({ld_clean:.4f}): there is nothing to "
                       "recover. Change the corrupted sentence or the words compared.")
    recovered = ((patched - ld_corrupt) / (ld_clean - ld_corrupt)).astype(np.float32)
    return PatchingResult(
        model=loaded.name, clean_tokens=clean_input.tokens, corrupt_tokens=corrupt_input.tokens,
        mask_index=corrupt_input.masks[0], answer=answer.strip(), contrast=contrast.strip(),
        ld_clean=ld_clean, ld_corrupt=ld_corrupt, recovered=recovered[:(L + 1) * T].reshape(L + 1, T),
        head_recovered=recovered[(L + 1) * T:].reshape(L, loaded.num_heads), seconds=time.perf_counter() - start)

