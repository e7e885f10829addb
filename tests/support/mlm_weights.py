"""Weights files in the shipped format (fp16 changed tensors) for the built-in masked-LM: tests and benchmarks.

Not tiny: they start from the untrained MLM on the embedded encoder, so only integration tests, AppTest,
browser tests and benchmarks use them. Never shipped.
"""

from __future__ import annotations

from pathlib import Path

import torch


def make_mlm_weights(path: Path, seed: int | None = 7) -> Path:
    """Write a weights file for the built-in masked-LM to ``path``.

    With a ``seed``: the untrained MLM with a few tensors (head bias and dense, one encoder bias, the
    [MASK] row) set to random values, so that applying the file visibly changes the model. With
    ``seed=None``: the untrained MLM as it is (for timings, which do not depend on the weights).
    """
    from safetensors.torch import save_file

    from tools.mlm_training import changed_state, load_tokenizer, new_mlm_model

    tokenizer = load_tokenizer()
    model = new_mlm_model("eager")
    if seed is not None:
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for tensor in (model.cls.predictions.bias, model.cls.predictions.transform.dense.weight,
                           model.bert.encoder.layer[5].output.dense.bias,
                           model.bert.embeddings.word_embeddings.weight[tokenizer.mask_token_id]):
                tensor.copy_(torch.randn(tensor.shape, generator=generator))
    state = {k: v.half().contiguous() for k, v in changed_state(model, tokenizer.mask_token_id).items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path))
    return path
