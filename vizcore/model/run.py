"""One forward pass -> one ``Run`` record; hooks that exist only inside a context manager.

Stages, as in Hugging Face pipelines: ``encode`` (validate, tokenise, truncate and say so) ->
``forward`` (the model only, with the hooks of this run) -> ``Run`` (plain numpy). ``run_batch`` is the
same stages for several inputs at once: each ``prepare``d input, right-padded into one batch with an
attention mask, one forward pass, split back into one ``Run`` per input with the padding removed;
each row's attention is computed over its own tokens (``sink.by_rows``), so a record is what ``run`` returns
for that input to the bit, unless the model's linear layers multiply that many rows with other kernels than a
batch's (``vizcore.serve.queue.rows_apart``); ``vizcore.serve`` batches the server's requests so.

What is read or changed inside the model goes through forward hooks registered in ``hooks()``, whose
``finally`` removes every one of them (TransformerLens's discipline), so the shared cached model is
never left with a hook, and its weights are never touched: an intervention replaces activations.

* ``Capture``: what to read besides attention (hidden states, per-layer Q/K/V, per-head outputs, logits).
* ``HeadAblation``: zero one head's output, or replace it (e.g. with its mean over reference sentences).
* ``Patch``: replace the hidden state entering layer ``layer`` (index into hidden_states) at positions.
* ``head_output_hooks``: the one way to the heads' outputs (the input of W_O), to read or change them.
* ``hidden_state_hooks``: the one way to the hidden states (what ``Patch`` changes), to read or change them.
* ``neuron_hooks``: the one way to the feed-forward neurons (act(x W_1 + b_1), before W_2), to read or change them.
* ``attention_edit``: a context manager that changes each layer's attention probabilities before they
  multiply the values (attention attribution scales them); BERT-family models, any batch, with gradients.
* ``intervention_hooks`` / ``head_scale_hooks``: the same changes as hooks for any forward pass of the
  model, e.g. a batch where each row gets its own ablation or patch (``rows``), a fine-tuned classifier
  around the encoder, or a pass with gradients (``forward(..., grad=True)``).

Layers, heads and positions are 0-based here. transformers 5 has no ``head_mask``: a head's output
is changed at the input of the attention's output projection W_O, where heads sit side by side.
"""

from __future__ import annotations

import inspect
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import torch
from transformers import BatchEncoding

from vizcore.errors import VizError
from vizcore.model import arch as archs
from vizcore.model import sink
from vizcore.model.loading import LoadedModel
from vizcore.model.record import Run
from vizcore.text import check_text, is_blank

# Characters that can come from bytes of another encoding read with errors="surrogateescape"
# (a command line in a non-UTF-8 locale): tokenizers and JSON refuse them.
Hook = tuple[torch.nn.Module, str, Callable]  # (module, "pre" | "post", function)


@dataclass(frozen=True)
class Capture:
    hidden: bool = True
    qkv: bool = False
    head_outputs: bool = False
    logits: bool = False
    neurons: bool = False  # the feed-forward activations, [L, T, d_ff]


DEFAULT_CAPTURE = Capture()  # attention and hidden states


@dataclass(frozen=True)
class HeadAblation:
    """Change the output of head ``head`` of layer ``layer``: zero it (``replacement`` None) or replace it
    with ``replacement``, ``[d_head]`` (the same at every position) or ``[T, d_head]``. In a batch, only
    the rows ``rows`` are changed (None: every row)."""

    layer: int
    head: int
    replacement: np.ndarray | None = None
    rows: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Patch:
    """Set hidden state ``layer`` (0 = embeddings, i = output of layer i - 1) at ``positions`` to ``values``
    ``[len(positions), d]``, e.g. taken from another run's ``hidden_states``. In a batch, only the rows
    ``rows`` are changed (None: every row)."""

    layer: int
    positions: tuple[int, ...]
    values: np.ndarray
    rows: tuple[int, ...] | None = None


def encode(loaded: LoadedModel, text: str, pair: str | None = None) -> tuple[BatchEncoding, int]:
    """Tokenise, truncating to the model's maximum. Returns the encoding and the untruncated length."""
    check_text(text)
    if is_blank(pair):
        pair = None
    if pair is not None:
        check_text(pair, "second sentence")

    def tokenise(truncation: bool) -> BatchEncoding:
        return loaded.tokenizer(
            text, pair, truncation="longest_first" if truncation else False, max_length=loaded.max_length,
            return_offsets_mapping=True, return_special_tokens_mask=True, return_tensors="pt", verbose=False,
        )

    encoding = tokenise(truncation=False)  # one pass in the common case; a second only when too long
    full_length = int(encoding["input_ids"].shape[1])
    if full_length > loaded.max_length:
        encoding = tokenise(truncation=True)
    if encoding["input_ids"].shape[1] == 0:
        raise VizError("The text produced no tokens for this model: try other words.")
    return encoding, full_length


def input_length(loaded: LoadedModel, text: str, pair: str | None = None) -> int:
    """How many tokens (special ones included) the input has before any truncation to ``loaded.max_length``."""
    return len(loaded.tokenizer(text, None if is_blank(pair) else pair, verbose=False)["input_ids"])


@dataclass(frozen=True)
class Encoded:
    """One input ready for a run: ``encode``'s encoding, its untruncated length, and the text it came from."""

    text: str
    pair: str | None
    encoding: BatchEncoding
    full_length: int

    @property
    def num_tokens(self) -> int:
        return int(self.encoding["input_ids"].shape[1])


def prepare(loaded: LoadedModel, text: str, pair: str | None = None) -> Encoded:
    """``encode`` with what the run's record needs: bad input is refused here, before any batch."""
    encoding, full_length = encode(loaded, text, pair)
    return Encoded(text, None if is_blank(pair) else pair, encoding, full_length)


def padded(loaded: LoadedModel, items: Sequence[Encoded]) -> dict[str, torch.Tensor]:
    """``items`` right-padded into one batch, ``(B, T)`` each (T = the longest): the attention mask is 0 on
    padding, so no real token attends to it, and right padding leaves every real token's position as it was."""
    width = max(item.num_tokens for item in items)
    tokenizer = loaded.tokenizer
    pad = next((t for t in (tokenizer.pad_token_id, tokenizer.eos_token_id) if t is not None), 0)
    batch = {"input_ids": torch.full((len(items), width), int(pad), dtype=torch.long),
             "attention_mask": torch.zeros((len(items), width), dtype=torch.long)}
    if all("token_type_ids" in item.encoding for item in items):
        batch["token_type_ids"] = torch.zeros((len(items), width), dtype=torch.long)
    for row, item in enumerate(items):
        batch["attention_mask"][row, : item.num_tokens] = 1
        for name in ("input_ids", "token_type_ids"):
            if name in batch:
                batch[name][row, : item.num_tokens] = item.encoding[name][0]
    return batch


def segment_ids(encoding: BatchEncoding) -> np.ndarray:
    """0 for segment A, 1 for B; special tokens belong to the segment they close (or open, at the start)."""
    if "token_type_ids" in encoding:
        return encoding["token_type_ids"][0].numpy().astype(np.int64)
    ids, current = [], 0
    for sequence in encoding.sequence_ids(0):
        current = sequence if sequence is not None else current
        ids.append(current)
    return np.asarray(ids, dtype=np.int64)


@lru_cache(maxsize=64)
def _accepted_inputs(model_class: type) -> frozenset[str]:
    return frozenset(inspect.signature(model_class.forward).parameters)


def model_inputs(loaded: LoadedModel, encoding: BatchEncoding | dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors the model's forward accepts (DistilBERT and GPT-2 take no token_type_ids, etc.)."""
    accepted = _accepted_inputs(type(loaded.model))
    names = ("input_ids", "attention_mask", "token_type_ids")
    return {n: encoding[n].to(loaded.device) for n in names if n in encoding and n in accepted}


@contextmanager
def hooks(model: torch.nn.Module, specs: Sequence[Hook]) -> Iterator[None]:
    """Register ``specs`` on ``model``'s modules for the body of the ``with`` only, even if it raises.

    Ours run before any hook already there (``prepend``): transformers 5 records hidden states and
    attention with hooks of its own, which must see what a patch changed.

    Each hook acts only in the thread that registered it: the model is shared by every session of the
    server, and another session's forward pass running at the same moment must neither see this run's
    ablations and patches nor be recorded into it.
    """
    owner = threading.get_ident()

    def only_here(function: Callable) -> Callable:
        def hook(*args):
            return function(*args) if threading.get_ident() == owner else None
        return hook

    handles = []
    try:
        for module, kind, function in specs:
            register = module.register_forward_pre_hook if kind == "pre" else module.register_forward_hook
            handles.append(register(only_here(function), prepend=True))
        yield
    finally:
        for handle in handles:
            handle.remove()


class _Recorder:
    """Builds the hooks of one run and keeps what they read, per layer."""

    def __init__(self, loaded: LoadedModel, capture: Capture, ablations: Sequence[HeadAblation],
                 patches: Sequence[Patch]) -> None:
        self.loaded, self.capture = loaded, capture
        self.arch = archs.arch_of(loaded.model)
        self.stack = self.arch.stacks[self.arch.main_stack]
        self.blocks = archs.blocks(loaded.model)
        self.ablations, self.patches = list(ablations), list(patches)
        self.read: dict[str, dict[int, torch.Tensor]] = {"queries": {}, "keys": {}, "values": {}, "head_outputs": {},
                                                         "neurons": {}}
        self._check()

    def _widths(self) -> tuple[int, int]:
        """(d_head, d): the width of one head's output and of a hidden state, read off W_O."""
        out = archs.get(self.blocks[0], self.stack.self_attention.out)
        weight = out.weight  # Linear: (out, in); GPT-2's Conv1D: (in, out)
        d_in, d_out = (weight.shape[1], weight.shape[0]) if isinstance(out, torch.nn.Linear) else weight.shape
        return int(d_in) // self.loaded.num_heads, int(d_out)

    def _check(self) -> None:
        layers, heads = len(self.blocks), self.loaded.num_heads
        d_head, d = self._widths()
        for a in self.ablations:
            if not (0 <= a.layer < layers and 0 <= a.head < heads):
                raise VizError(f"Layer {a.layer + 1}, head {a.head + 1} does not exist: the model has {layers} layers "
                               f"x {heads} heads (1-based in the app).")
            if a.replacement is not None and np.shape(a.replacement)[-1:] != (d_head,):
                raise VizError(f"A replacement for head {a.layer + 1}.{a.head + 1} must end in {d_head} values "
                               f"(one head's output), not shape {np.shape(a.replacement)}.")
        for p in self.patches:
            if not 0 <= p.layer <= layers:
                raise VizError(f"Hidden state {p.layer} does not exist: there are {layers + 1} (0 = embeddings).")
            if np.shape(p.values) != (len(p.positions), d):
                raise VizError(f"A patch of {len(p.positions)} positions needs values of shape "
                               f"({len(p.positions)}, {d}), not {np.shape(p.values)}.")

    def check_positions(self, num_tokens: int) -> None:
        for a in self.ablations:
            if a.replacement is not None and np.ndim(a.replacement) == 2 and len(a.replacement) != num_tokens:
                raise VizError(f"A replacement for head {a.layer + 1}.{a.head + 1} has {len(a.replacement)} "
                               f"positions; this input has {num_tokens} tokens.")
        for p in self.patches:
            if any(not 0 <= i < num_tokens for i in p.positions):
                raise VizError(f"Patch positions {list(p.positions)} are outside the {num_tokens} tokens "
                               "of this input.")

    def _split(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, H * d_head) -> (B, H, T, d_head)
        return x.reshape(*x.shape[:2], self.loaded.num_heads, -1).transpose(1, 2)

    def specs(self) -> list[Hook]:
        specs: list[Hook] = []
        if self.capture.qkv:
            attn = self.stack.self_attention
            for index, block in enumerate(self.blocks):
                specs += self._qkv_specs(index, block, attn)
        read = range(len(self.blocks)) if self.capture.head_outputs else ()
        specs += head_output_hooks(self.loaded, self._heads, {*read, *(a.layer for a in self.ablations)})
        if self.capture.neurons:
            specs += neuron_hooks(self.loaded, self._keep_neurons)
        for layer in sorted({p.layer for p in self.patches}):  # one hook (one copy of the batch) per layer
            mine = [p for p in self.patches if p.layer == layer]
            specs.append((self._hidden_state_module(layer), "post", self._patch_hook(mine)))
        return specs

    def _qkv_specs(self, index: int, block: torch.nn.Module, attn: archs.Attn) -> list[Hook]:
        def keep(name: str, part: int | None) -> Callable:
            def hook(module, inputs, output):
                out = output if part is None else output.chunk(3, dim=-1)[part]
                self.read[name][index] = self._split(out).detach()
            return hook

        if attn.qkv is not None:
            fused = archs.get(block, attn.qkv)
            return [(fused, "post", keep(name, i)) for i, name in enumerate(("queries", "keys", "values"))]
        return [(archs.get(block, path), "post", keep(name, None))
                for name, path in (("queries", attn.query), ("keys", attn.key), ("values", attn.value))]

    def _keep_neurons(self, layer: int, activations: torch.Tensor) -> None:  # (B, T, d_ff)
        self.read["neurons"][layer] = activations.detach()

    def _heads(self, layer: int, heads: torch.Tensor) -> torch.Tensor | None:
        """Read and change one layer's head outputs, ``(B, T, H, d_head)``: read before this layer's ablations."""
        if self.capture.head_outputs:
            self.read["head_outputs"][layer] = heads.transpose(1, 2).detach()  # (B, H, T, d_head)
        ablations = [a for a in self.ablations if a.layer == layer]
        if not ablations:
            return None
        heads = heads.clone()
        for a in ablations:
            rows = _rows(a.rows, heads.shape[0], f"head {a.layer + 1}.{a.head + 1}")
            heads[rows, :, a.head] = 0.0 if a.replacement is None else torch.as_tensor(
                a.replacement, dtype=heads.dtype, device=heads.device)
        return heads

    def _patch_hook(self, patches: list[Patch]) -> Callable:
        """One hook for every patch of one hidden state: the batch is copied once, then each patch written."""
        parts = [(torch.as_tensor(np.asarray(p.values)), torch.as_tensor(p.positions, dtype=torch.long), p.rows)
                 for p in patches]

        def hook(module, inputs, output):
            hidden = (output[0] if isinstance(output, tuple) else output).clone()  # (B, T, d)
            for values, positions, rows in parts:
                rows = _rows(rows, hidden.shape[0], "a patch")
                rows = torch.arange(hidden.shape[0]) if isinstance(rows, slice) else torch.as_tensor(rows)
                hidden[rows[:, None], positions[None, :]] = values.to(hidden.dtype).to(hidden.device)
            return (hidden, *output[1:]) if isinstance(output, tuple) else hidden
        return hook

    def _hidden_state_module(self, index: int) -> torch.nn.Module:
        """The module whose output is hidden state ``index``: the embeddings, a block, or the final norm."""
        base = self.loaded.model.base_model
        if index == 0:
            if self.arch.embeddings is None:
                raise VizError(f"Patching the embeddings is not supported for '{self.arch.family}'; patch a layer.")
            return archs.get(base, self.arch.embeddings)
        if index == len(self.blocks) and self.arch.final_norm is not None:
            return archs.get(base, self.arch.final_norm)
        return self.blocks[index - 1]

    def attention_modules(self) -> list[torch.nn.Module]:
        return attention_modules(self.loaded.model)

    def stacked(self, name: str, row: int, num_tokens: int) -> np.ndarray | None:
        """What was read under ``name`` for batch row ``row``'s first ``num_tokens`` tokens: ``[L, H, T, d_head]``."""
        parts = self.read[name]
        if not parts:
            return None
        return torch.stack([parts[i][row, :, :num_tokens] for i in range(len(self.blocks))]).float().cpu().numpy()

    def neurons(self, row: int, num_tokens: int) -> np.ndarray | None:
        """The feed-forward activations of batch row ``row``'s first ``num_tokens`` tokens: ``[L, T, d_ff]``."""
        parts = self.read["neurons"]
        if not parts:
            return None
        return torch.stack([parts[i][row, :num_tokens] for i in range(len(self.blocks))]).float().cpu().numpy()


def attention_modules(model: torch.nn.Module) -> list[torch.nn.Module]:
    """Each block's self-attention module: the one that calls transformers' attention function."""
    arch = archs.arch_of(model)
    attn = arch.stacks[arch.main_stack].self_attention
    return [archs.get(block, (attn.query or attn.qkv).rpartition(".")[0]) for block in archs.blocks(model)]


def _rows(rows: tuple[int, ...] | None, batch: int, what: str) -> list[int] | slice:
    if rows is None:
        return slice(None)
    if any(not 0 <= r < batch for r in rows):
        raise VizError(f"Rows {list(rows)} of {what} are outside the batch of {batch}.")
    return list(rows)


def intervention_hooks(loaded: LoadedModel, ablate: Sequence[HeadAblation] = (), patch: Sequence[Patch] = (),
                       num_tokens: int | None = None) -> list[Hook]:
    """The hooks that make these ablations and patches, checked, for ``hooks()`` around any forward pass
    of ``loaded.model`` (or of a classifier built around it); positions are checked against ``num_tokens``."""
    recorder = _Recorder(loaded, Capture(hidden=False), ablate, patch)
    if num_tokens is not None:
        recorder.check_positions(num_tokens)
    return recorder.specs()


def head_output_hooks(loaded: LoadedModel, function: Callable[[int, torch.Tensor], torch.Tensor | None],
                      layers: Iterable[int] | None = None) -> list[Hook]:
    """The one way to the head outputs: a pre-hook at the input of W_O (the attention's output projection,
    where every head's output sits side by side) in each of ``layers`` (None: all), for ``hooks()`` or
    ``forward``. ``function(layer, heads)`` gets ``heads`` ``(B, T, H, d_head)``, a view of W_O's input,
    and returns what W_O reads instead (the same shape), or None to leave it as it is."""
    arch = archs.arch_of(loaded.model)
    out = arch.stacks[arch.main_stack].self_attention.out
    chosen = None if layers is None else set(layers)

    def at(layer: int) -> Callable:
        def hook(module, inputs):
            x = inputs[0]  # (B, T, H * d_head)
            heads = function(layer, x.reshape(*x.shape[:2], loaded.num_heads, -1))
            return None if heads is None else (heads.reshape(x.shape), *inputs[1:])
        return hook

    return [(archs.get(block, out), "pre", at(i)) for i, block in enumerate(archs.blocks(loaded.model))
            if chosen is None or i in chosen]


def neuron_hooks(loaded: LoadedModel, function: Callable[[int, torch.Tensor], torch.Tensor | None],
                 layers: Iterable[int] | None = None) -> list[Hook]:
    """The one way to the feed-forward neurons: a hook on the module whose output is the feed-forward's hidden
    activation act(x W_1 + b_1) (BERT's ``intermediate``: GELU after the first dense layer), what W_2 reads, in
    each of ``layers`` (None: all). ``function(layer, activations)`` gets ``activations`` ``(B, T, d_ff)`` and
    returns what W_2 reads instead, or None to leave it as it is."""
    arch = archs.arch_of(loaded.model)
    path = arch.stacks[arch.main_stack].neurons
    if path is None:
        raise VizError(f"The feed-forward neurons of '{arch.family}' are not a module this app can read: choose a "
                       "BERT-family model, MPNet, DistilBERT or GPT-2.")
    chosen = None if layers is None else set(layers)

    def at(layer: int) -> Callable:
        def hook(module, inputs, output):
            return function(layer, output)
        return hook

    return [(archs.get(block, path), "post", at(i)) for i, block in enumerate(archs.blocks(loaded.model))
            if chosen is None or i in chosen]


def hidden_state_hooks(loaded: LoadedModel, function: Callable[[int, torch.Tensor], torch.Tensor | None],
                       states: Iterable[int] | None = None) -> list[Hook]:
    """The one way to the hidden states: a hook on the module whose output is hidden state ``i`` (0 = the
    embeddings, i = the output of layer i; the modules ``Patch`` changes) for each of ``states`` (None: all).
    ``function(state, hidden)`` gets ``hidden`` ``(B, T, d)`` and returns what the model reads instead, or None."""
    recorder = _Recorder(loaded, Capture(hidden=False), (), ())
    chosen = range(len(recorder.blocks) + 1) if states is None else sorted(set(states))

    def at(state: int) -> Callable:
        def hook(module, inputs, output):
            hidden = function(state, output[0] if isinstance(output, tuple) else output)
            if hidden is None:
                return None
            return (hidden, *output[1:]) if isinstance(output, tuple) else hidden
        return hook

    return [(recorder._hidden_state_module(state), "post", at(state)) for state in chosen]


@contextmanager
def attention_edit(model: torch.nn.Module, function: sink.WeightEdit) -> Iterator[None]:
    """For the forward passes inside the ``with`` (this thread's only): layer i's attention probabilities
    ``(B, H, T, T)`` in ``model`` (a loaded model, or the encoder of a classifier built around a copy of one)
    become ``function(i, weights)`` before they multiply the values. The probabilities are made inside
    transformers' attention function, not by a module, so this is the one change that is not a module hook:
    the attention function this project registers (``vizcore.model.sink``) applies it. VizError for a model
    loaded without it (DistilBERT, GPT-2: their attention is their own)."""
    if getattr(model.config, "_attn_implementation", None) != sink.IMPLEMENTATION:
        raise VizError(f"'{getattr(model.config, 'model_type', 'this model')}' computes attention its own way, so "
                       "its attention probabilities cannot be changed here: choose a BERT-family model (BERT, "
                       "RoBERTa, ELECTRA, MiniLM).")
    with sink.edit_weights(attention_modules(model), function):
        yield


def head_scale_hooks(loaded: LoadedModel, scale: torch.Tensor) -> list[Hook]:
    """Hooks that multiply each head's output by ``scale``, ``[layer, head]`` or ``[batch, layer, head]``,
    at the input of W_O: 0 ablates a head, and with ``scale`` all ones and ``requires_grad`` the gradient
    of a loss with respect to it is Michel et al. (2019)'s head importance. Differentiable."""
    layers, heads = len(archs.blocks(loaded.model)), loaded.num_heads
    if tuple(scale.shape[-2:]) != (layers, heads) or scale.dim() not in (2, 3):
        raise VizError(f"A head scale must have shape [{layers}, {heads}] or [batch, {layers}, {heads}], "
                       f"not {list(scale.shape)}.")

    def scaled(layer: int, x: torch.Tensor) -> torch.Tensor:  # (B, T, H, d_head)
        factor = scale[..., layer, :].to(x.dtype)  # (H,) or (B, H)
        return x * factor.reshape(-1 if scale.dim() == 3 else 1, 1, heads, 1)

    return head_output_hooks(loaded, scaled)


def forward(loaded: LoadedModel, inputs: dict[str, torch.Tensor], specs: Sequence[Hook] = (), hidden: bool = True,
            attention: bool = True, base_only: bool = False, grad: bool = False):
    """The model only, once, with these hooks; the shared model is left exactly as it was.

    ``inputs`` may be a padded batch (the padding demo, sentence vectors); ``run`` is the one-sequence
    record around it. ``base_only`` skips a head (fill-mask applies its head to the masks alone).
    ``grad`` keeps the autograd graph (gradients with respect to inputs or a head scale; the weights
    stay frozen).
    """
    module = loaded.model.base_model if base_only else loaded.model
    with (torch.enable_grad() if grad else torch.inference_mode()), hooks(loaded.model, specs):
        output = module(**inputs, output_attentions=attention, output_hidden_states=hidden)
    if attention and (not output.attentions or output.attentions[0] is None):
        raise VizError(f"'{loaded.name}' returned no attention weights (it needs eager attention).")
    return output


def run(loaded: LoadedModel, text: str, pair: str | None = None, capture: Capture = DEFAULT_CAPTURE,
        ablate: Sequence[HeadAblation] = (), patch: Sequence[Patch] = ()) -> Run:
    """Run the model once on ``text`` (and ``pair``): the record of what it computed, as asked."""
    recorder = _Recorder(loaded, capture, ablate, patch)
    item = prepare(loaded, text, pair)
    recorder.check_positions(item.num_tokens)
    return _records(loaded, [item], recorder)[0]


def run_batch(loaded: LoadedModel, items: Sequence[Encoded], capture: Capture = DEFAULT_CAPTURE) -> list[Run]:
    """One forward pass over ``items`` (``prepare``d), padded into one batch: one ``Run`` per item, what ``run``
    returns for that item's text and pair. To the bit on models loaded with the sink (the BERT family: each row's
    attention has its own run's shapes), unless the item's token count is one of ``rows_apart``'s (its linear
    layers' products then take other kernels); other models to float rounding."""
    return _records(loaded, list(items), _Recorder(loaded, capture, (), ())) if items else []


def _records(loaded: LoadedModel, items: list[Encoded], recorder: _Recorder) -> list[Run]:
    """The forward pass of ``items`` (one, or a padded batch) with ``recorder``'s hooks, split into records."""
    alone = len(items) == 1
    inputs = model_inputs(loaded, items[0].encoding if alone else padded(loaded, items))
    specs, hidden = recorder.specs(), recorder.capture.hidden
    if alone and getattr(loaded.model.config, "_attn_implementation", None) == sink.IMPLEMENTATION:
        with sink.open_sink(recorder.attention_modules(), loaded.num_heads, items[0].num_tokens,
                            loaded.device) as weights:
            output = forward(loaded, inputs, specs, hidden)
        attention = weights.float().cpu()[None]  # no copy on the CPU: the layers wrote into it
    else:  # a batch: each row's attention over its own tokens, as its run alone (models loaded with the sink)
        with sink.by_rows(recorder.attention_modules(), [item.num_tokens for item in items]):
            output = forward(loaded, inputs, specs, hidden)
        attention = torch.stack(output.attentions, dim=1).float().cpu()  # (B, L, H, T, T)
    return [_record(loaded, item, row, recorder, output, attention) for row, item in enumerate(items)]


def _record(loaded: LoadedModel, item: Encoded, row: int, recorder: _Recorder, output, attention: torch.Tensor) -> Run:
    """Batch row ``row`` of a forward pass as ``item``'s record, its padding removed. Each array is its own
    (a copy when sliced from a batch), so one record never keeps a whole batch alive."""
    n, capture = item.num_tokens, recorder.capture
    ids = item.encoding["input_ids"][0]
    logits = getattr(output, "logits", getattr(output, "prediction_logits", None)) if capture.logits else None
    next_sentence = getattr(output, "seq_relationship_logits", None)

    def own(x: torch.Tensor) -> np.ndarray:  # a slice of a batch is copied; a run of one keeps its buffer
        x = x.float().cpu()
        return (x.clone() if attention.shape[0] > 1 else x).contiguous().numpy()

    return Run(
        model=loaded.name,
        text=item.text,
        pair=item.pair,
        tokens=loaded.tokenizer.convert_ids_to_tokens(ids.tolist()),
        offsets=[(int(a), int(b)) for a, b in item.encoding["offset_mapping"][0].tolist()],
        special_mask=item.encoding["special_tokens_mask"][0].numpy().astype(bool),
        segment_ids=segment_ids(item.encoding),
        attention=own(attention[row, :, :, :n, :n]),
        truncated=item.full_length > n,
        num_input_tokens=item.full_length,
        input_ids=ids.numpy().astype(np.int64),
        hidden_states=(torch.stack([h[row, :n] for h in output.hidden_states]).float().cpu().numpy()
                       if capture.hidden and output.hidden_states else None),
        queries=recorder.stacked("queries", row, n),
        keys=recorder.stacked("keys", row, n),
        values=recorder.stacked("values", row, n),
        head_outputs=recorder.stacked("head_outputs", row, n),
        neurons=recorder.neurons(row, n),
        logits=None if logits is None else own(logits[row, :n]),
        next_sentence_logits=None if next_sentence is None else own(next_sentence[row]),
    )
