"""Model sizes side by side: parameters per component counted from the tensors, memory and forward time.

Counting rule (every parameter tensor counted once, even when tied, e.g. an LM head sharing the token
table; each by the module that holds it directly):

* ``embeddings``: any ``nn.Embedding`` (token, position and segment tables; MPNet's relative position
  bias table, 32 buckets x heads, is one too);
* ``layernorm``: any ``nn.LayerNorm`` (T5's RMS norm counts here too: a module whose name ends in ``norm``);
* ``attention_q`` / ``_k`` / ``_v`` / ``_o``: the attention projections of the blocks, as the
  architecture adapter (``vizcore.model.arch``) names them; a fused Q|K|V matrix (GPT-2's ``c_attn``,
  the tiny Transformer's ``qkv``) is split in three equal parts, weights and biases;
* ``feed_forward``: every other parameter inside a block (the two feed-forward matrices and biases);
* ``heads``: everything outside the blocks that is not an embedding or a norm (pooler, masked-LM head,
  classifier, the tiny Transformer's unembedding).

The components sum to the model's parameter count. Memory is the parameters' bytes (``numel x
element size``). Forward time is the median of ``runs`` plain forward passes (no attention weights
returned, ``inference_mode``) on one torch thread, on an input of exactly ``n`` tokens: the sentence's
tokens repeated between [CLS] and [SEP]; a length over the model's maximum is None.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

import torch

from vizcore.model import arch as archs
from vizcore.sizes import COMPONENTS, LENGTHS, TINY_NAME

SENTENCE = "The animal didn't cross the street because it was too tired."


@dataclass(frozen=True)
class ModelSizes:
    """One model's sizes. ``parameters`` maps each of ``COMPONENTS`` to a count; ``forward_ms`` a length
    (as a string, for JSON) to the median time in milliseconds, or None when the model cannot read that many."""

    model: str
    layers: int
    heads: int
    hidden: int
    d_k: int
    parameters: dict[str, int]
    total: int
    memory_bytes: int
    forward_ms: dict[str, float | None] = field(default_factory=dict)
    max_tokens: int | None = None
    measured_at: str | None = None  # ISO date and time (UTC) of the timing
    threads: int = 1
    runs: int = 0

    def to_json(self) -> dict:
        return asdict(self)


def _stacks(model: torch.nn.Module) -> tuple[torch.nn.Module, dict[str, archs.Stack]]:
    """The root the stacks' paths start from, and the stacks: the adapter's, or the tiny Transformer's own."""
    from vizcore.finetune.tiny import TinyTransformer

    if isinstance(model, TinyTransformer):
        return model, {"encoder": archs.Stack("layers", archs.Attn(None, None, None, "attention.out",
                                                                    qkv="attention.qkv"))}
    return model.base_model, archs.arch_of(model).stacks


def _projections(root: torch.nn.Module, stacks: dict[str, archs.Stack]) -> dict[int, str]:
    """id(module) -> ``q`` | ``k`` | ``v`` | ``o`` | ``qkv`` for every attention projection of every block."""
    found: dict[int, str] = {}
    for stack in stacks.values():
        for block in archs.get(root, stack.layers):
            for attn in (stack.self_attention, stack.cross_attention):
                if attn is None:
                    continue
                for part, path in (("q", attn.query), ("k", attn.key), ("v", attn.value), ("o", attn.out),
                                   ("qkv", attn.qkv)):
                    if path is not None:
                        found[id(archs.get(block, path))] = part
    return found


def _is_norm(name: str, module: torch.nn.Module) -> bool:
    return isinstance(module, torch.nn.LayerNorm) or name.rsplit(".", 1)[-1].lower().endswith("norm")


def parameter_counts(model: torch.nn.Module) -> dict[str, int]:
    """Parameters per component (``COMPONENTS``), by the rule in this module's docstring."""
    root, stacks = _stacks(model)
    projections = _projections(root, stacks)
    inside = {id(module) for stack in stacks.values() for block in archs.get(root, stack.layers)
              for module in block.modules()}
    counts = dict.fromkeys(COMPONENTS, 0)
    seen: set[int] = set()
    for name, module in model.named_modules():
        for parameter in module.parameters(recurse=False):
            if id(parameter) in seen:
                continue
            seen.add(id(parameter))
            n = parameter.numel()
            part = projections.get(id(module))
            if isinstance(module, torch.nn.Embedding):
                counts["embeddings"] += n
            elif _is_norm(name, module):
                counts["layernorm"] += n
            elif part == "qkv":
                for letter in "qkv":
                    counts[f"attention_{letter}"] += n // 3
            elif part is not None:
                counts[f"attention_{part}"] += n
            elif id(module) in inside:
                counts["feed_forward"] += n
            else:
                counts["heads"] += n
    return counts


def parameter_bytes(model: torch.nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def _median_ms(call, runs: int) -> float:
    call()  # warm-up: first-call allocations are not the model's speed
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def _ids_of_length(tokenizer, n: int, sentence: str) -> torch.Tensor:
    """(1, n) ids: the tokenizer's opening special token ([CLS], <s>), the sentence's tokens repeated, its closing
    one ([SEP], </s>); a tokenizer with no special tokens (GPT-2's) gets the tokens alone."""
    body = tokenizer(sentence, add_special_tokens=False)["input_ids"] or [tokenizer.unk_token_id]
    specials = tokenizer("")["input_ids"]  # [CLS, SEP], [<s>, </s>] or []
    prefix, suffix = (specials[:1], specials[1:]) if len(specials) == 2 else ([], specials)
    room = max(n - len(prefix) - len(suffix), 1)
    filled = (body * (room // len(body) + 1))[:room]
    return torch.tensor([prefix + filled + suffix], dtype=torch.long)


def forward_times(call_of_length, max_tokens: int, lengths=LENGTHS, runs: int = 3) -> dict[str, float | None]:
    """Median milliseconds of ``call_of_length(n)()`` on one torch thread, per length (None above ``max_tokens``).
    The thread count is the process's: another forward pass running meanwhile (another session of the app) also
    gets one thread until this returns."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return {str(n): (_median_ms(call_of_length(n), runs) if n <= max_tokens else None) for n in lengths}
    finally:
        torch.set_num_threads(threads)


def _shape(layers: int, heads: int, hidden: int) -> dict:
    return {"layers": layers, "heads": heads, "hidden": hidden, "d_k": hidden // heads}


def loaded_sizes(loaded, lengths=LENGTHS, runs: int = 3, sentence: str = SENTENCE) -> ModelSizes:
    """A loaded model's (``vizcore.model.loading.LoadedModel``) sizes; ``lengths`` empty: no timing."""
    model = loaded.model
    hidden = int(getattr(model.config, "hidden_size", 0) or model.get_input_embeddings().weight.shape[1])

    def call_of_length(n: int):
        ids = _ids_of_length(loaded.tokenizer, n, sentence).to(loaded.device)
        inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

        def call():
            with torch.inference_mode():
                model(**inputs)
        return call

    return _sizes(loaded.name, model, _shape(loaded.num_layers, loaded.num_heads, hidden), call_of_length,
                  loaded.max_length, lengths, runs)


def tiny_sizes(lengths=LENGTHS, runs: int = 3) -> ModelSizes:
    """The from-scratch tiny Transformer at the Fine-tuning lab's default size (untrained: sizes do not train)."""
    from vizcore.finetune.tiny import DIGITS, TinyConfig, TinyTransformer

    config = TinyConfig()
    torch.manual_seed(config.seed)
    model = TinyTransformer(config).eval()
    max_tokens = int(model.position.table.shape[0])

    def call_of_length(n: int):
        digits = torch.arange(n).remainder(DIGITS)[None, :]

        def call():
            with torch.inference_mode():
                model(digits)
        return call

    return _sizes(TINY_NAME, model, _shape(config.layers, config.heads, config.d_model), call_of_length,
                  max_tokens, lengths, runs)


def _sizes(name: str, model: torch.nn.Module, shape: dict, call_of_length, max_tokens: int, lengths,
           runs: int) -> ModelSizes:
    counts = parameter_counts(model)
    timed = bool(lengths)
    return ModelSizes(
        model=name, **shape, parameters=counts, total=sum(counts.values()), memory_bytes=parameter_bytes(model),
        forward_ms=forward_times(call_of_length, max_tokens, lengths, runs) if timed else {},
        max_tokens=max_tokens, measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds") if timed else None,
        runs=runs if timed else 0)
