"""The one forward core: what it reads equals an independent computation; what it changes is only
activations, inside a context manager, and the shared model is left exactly as it was."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import inspect

import numpy as np
import pytest
import torch
from transformers import (
    AutoTokenizer,
    BartConfig,
    BartForConditionalGeneration,
    BertConfig,
    BertLMHeadModel,
    RobertaConfig,
    RobertaForMaskedLM,
    T5Config,
    T5ForConditionalGeneration,
)

from vizcore.errors import VizError
from vizcore.model import arch as archs
from vizcore.model import run as run_module
from vizcore.model import sink
from vizcore.model.contract import check_attention
from vizcore.model.loading import LoadedModel, install_output_hooks, load_model
from vizcore.model.run import Capture, HeadAblation, Patch, hooks, run

TEXT = "The cat sat on the mat because it was tired."
OTHER = "The dog sat on the rug because it was happy."  # the same number of tokens


@pytest.fixture(scope="module", params=["bert", "distilbert", "gpt2", "roberta"])
def loaded(request, tiny_model_dir) -> LoadedModel:
    if request.param == "roberta":
        torch.manual_seed(0)
        folder = tiny_model_dir("bert")
        tokenizer = AutoTokenizer.from_pretrained(folder)
        config = RobertaConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=4, intermediate_size=64, max_position_embeddings=70,
                               pad_token_id=tokenizer.pad_token_id, attn_implementation="eager")
        model = RobertaForMaskedLM(config).eval().requires_grad_(False)  # frozen, as load_model leaves it
        install_output_hooks(model)
        return LoadedModel(name="tiny-roberta", model=model, tokenizer=tokenizer, device=torch.device("cpu"),
                           is_decoder=False, num_layers=2, num_heads=4, max_length=64)
    head = "base" if request.param == "gpt2" else "mlm"  # a decoder has no masked-LM head
    return load_model(str(tiny_model_dir(request.param)), device="cpu", head=head)


def fingerprint(model: torch.nn.Module) -> tuple[str, int]:
    """A hash of every weight, and the number of hooks on every module."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().numpy().tobytes())
    count = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks) for m in model.modules())
    return digest.hexdigest(), count


def plain(loaded: LoadedModel, text: str):
    """The model called directly, with no vizcore code in between."""
    inputs = loaded.tokenizer(text, return_tensors="pt")
    accepted = set(inspect.signature(loaded.model.forward).parameters)
    inputs = {k: v for k, v in inputs.items() if k in accepted}
    with torch.no_grad():
        return loaded.model(**inputs, output_attentions=True, output_hidden_states=True)


def test_a_run_reads_exactly_what_the_model_returns(loaded):
    record = run(loaded, TEXT, capture=Capture(logits=True))
    direct = plain(loaded, TEXT)
    assert np.array_equal(record.attention, torch.stack([a[0] for a in direct.attentions]).numpy())
    assert np.array_equal(record.hidden_states, torch.stack([h[0] for h in direct.hidden_states]).numpy())
    if hasattr(direct, "logits"):
        assert np.array_equal(record.logits, direct.logits[0].numpy())
    else:
        assert record.logits is None
    assert record.attention.shape == (2, 4, len(record.tokens), len(record.tokens))
    assert record.input_ids.tolist() == loaded.tokenizer(TEXT)["input_ids"]


def test_queries_keys_values_and_head_outputs_recompute_the_attention(loaded):
    record = run(loaded, TEXT, capture=Capture(qkv=True, head_outputs=True))
    layers, heads, n = record.attention.shape[:3]
    assert record.queries.shape[:3] == record.keys.shape[:3] == record.values.shape[:3] == (layers, heads, n)
    d_head = record.queries.shape[-1]
    scores = record.queries @ record.keys.transpose(0, 1, 3, 2) / np.sqrt(d_head)  # (L, H, T, T)
    if loaded.is_decoder:
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(weights, record.attention, atol=2e-6)
    np.testing.assert_allclose(record.head_outputs, record.attention @ record.values, atol=2e-6)


def _out_projection(loaded: LoadedModel, model: torch.nn.Module, layer: int):
    arch = archs.arch_of(model)
    block = archs.get(model.base_model, arch.stacks[arch.main_stack].layers)[layer]
    return archs.get(block, arch.stacks[arch.main_stack].self_attention.out)


def _surgery(loaded: LoadedModel, layer: int, head: int, replacement: np.ndarray | None) -> LoadedModel:
    """The same ablation done independently: a deep copy whose W_O ignores the head (plus W_O r in the bias)."""
    model = copy.deepcopy(loaded.model)
    out = _out_projection(loaded, model, layer)
    d_head = loaded.model.config.to_dict().get("hidden_size", 32) // loaded.num_heads
    columns = slice(head * d_head, (head + 1) * d_head)
    with torch.no_grad():
        weight = out.weight  # Linear: (out, in); GPT-2's Conv1D: (in, out)
        block = weight[:, columns] if isinstance(out, torch.nn.Linear) else weight[columns, :].T
        if replacement is not None:
            out.bias += block @ torch.as_tensor(replacement, dtype=weight.dtype)
        block.zero_() if isinstance(out, torch.nn.Linear) else weight[columns, :].zero_()
    return LoadedModel(loaded.name, model, loaded.tokenizer, loaded.device, loaded.is_decoder,
                       loaded.num_layers, loaded.num_heads, loaded.max_length)


@pytest.mark.parametrize("replace", [False, True], ids=["zero", "mean"])
def test_head_ablation_equals_weight_surgery_on_a_copy(loaded, replace):
    before = fingerprint(loaded.model)
    d_head = run(loaded, OTHER, capture=Capture(head_outputs=True)).head_outputs
    replacement = d_head[0, 2].mean(0) if replace else None  # head 3 of layer 1's mean output over a sentence
    ablated = run(loaded, TEXT, capture=Capture(logits=True), ablate=[HeadAblation(0, 2, replacement)])
    expected = run(_surgery(loaded, 0, 2, replacement), TEXT, capture=Capture(logits=True))
    np.testing.assert_allclose(ablated.hidden_states, expected.hidden_states, atol=3e-5)
    np.testing.assert_allclose(ablated.attention, expected.attention, atol=3e-6)
    plain_run = run(loaded, TEXT, capture=Capture(logits=True))
    assert np.array_equal(ablated.attention[0], plain_run.attention[0])  # layer 1's own weights are unchanged
    assert not np.allclose(ablated.hidden_states[-1], plain_run.hidden_states[-1], atol=1e-4)
    assert fingerprint(loaded.model) == before


def test_ablating_no_heads_reproduces_the_plain_output_bit_for_bit(loaded):
    a = run(loaded, TEXT, capture=Capture(logits=True), ablate=[])
    b = run(loaded, TEXT, capture=Capture(logits=True, qkv=True, head_outputs=True))
    assert np.array_equal(a.logits, b.logits) and np.array_equal(a.attention, b.attention)


def test_patching_every_position_of_the_input_gives_the_clean_run(loaded):
    clean = run(loaded, TEXT)
    corrupt = run(loaded, OTHER)
    assert len(clean.tokens) == len(corrupt.tokens)
    positions = tuple(range(len(clean.tokens)))
    last = loaded.num_layers
    patched = run(loaded, OTHER, patch=[Patch(last, positions, clean.hidden_states[last])])
    assert np.array_equal(patched.hidden_states[last], clean.hidden_states[last])
    assert np.array_equal(patched.attention, corrupt.attention)  # patching the last output changes no attention
    one = run(loaded, OTHER, patch=[Patch(1, (3,), clean.hidden_states[1][3:4])])
    np.testing.assert_array_equal(one.hidden_states[1][3], clean.hidden_states[1][3])
    np.testing.assert_array_equal(one.hidden_states[1][:3], corrupt.hidden_states[1][:3])
    assert not np.array_equal(one.attention[1], corrupt.attention[1])  # layer 2 now sees the clean token


def test_patching_the_embeddings_everywhere_reproduces_the_clean_run(tiny_model_dir):
    loaded = load_model(str(tiny_model_dir("bert")), device="cpu")
    clean, positions = run(loaded, TEXT), tuple(range(len(run(loaded, TEXT).tokens)))
    patched = run(loaded, OTHER, patch=[Patch(0, positions, clean.hidden_states[0])])
    np.testing.assert_allclose(patched.attention, clean.attention, atol=1e-6)
    np.testing.assert_allclose(patched.hidden_states, clean.hidden_states, atol=1e-5)


def test_the_shared_model_is_unchanged_after_every_kind_of_intervention_even_one_that_fails(tiny_model_dir):
    loaded = load_model(str(tiny_model_dir("bert")), device="cpu", head="mlm")  # fresh: nothing has run on it
    before = fingerprint(loaded.model)
    record = run(loaded, TEXT, capture=Capture(qkv=True, head_outputs=True, logits=True),
                 ablate=[HeadAblation(1, 0), HeadAblation(0, 3, np.ones(8, dtype=np.float32))],
                 patch=[Patch(1, (1, 2), np.zeros((2, 32), dtype=np.float32))])
    assert record.queries is not None
    assert fingerprint(loaded.model) == before
    def failing_patch(self, patch):  # a hook that fails inside the forward pass, after the others are in place
        def hook(module, inputs, output):
            raise RuntimeError("failed midway")
        return hook

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_module._Recorder, "_patch_hook", failing_patch)
        with pytest.raises(RuntimeError, match="failed midway"):
            run(loaded, TEXT, capture=Capture(qkv=True, head_outputs=True), ablate=[HeadAblation(1, 0)],
                patch=[Patch(2, (1,), np.zeros((1, 32), dtype=np.float32))])
    assert fingerprint(loaded.model) == before
    with pytest.raises(ZeroDivisionError):  # the body of the context manager raises midway
        with hooks(loaded.model, [(loaded.model.base_model, "post", lambda *a: None)]):
            raise ZeroDivisionError
    assert fingerprint(loaded.model) == before
    assert loaded.model.training is False


def test_heads_and_hidden_states_that_do_not_exist_are_refused_with_their_names(loaded):
    with pytest.raises(VizError, match=r"Layer 3, head 1 does not exist: the model has 2 layers x 4 heads"):
        run(loaded, TEXT, ablate=[HeadAblation(2, 0)])
    with pytest.raises(VizError, match="Hidden state 5 does not exist"):
        run(loaded, TEXT, patch=[Patch(5, (0,), np.zeros((1, 32)))])
    with pytest.raises(VizError, match=r"must end in 8 values \(one head's output\), not shape \(5,\)"):
        run(loaded, TEXT, ablate=[HeadAblation(0, 0, np.ones(5, dtype=np.float32))])
    with pytest.raises(VizError, match=r"needs values of shape \(2, 32\), not \(1, 32\)"):
        run(loaded, TEXT, patch=[Patch(1, (0, 1), np.zeros((1, 32)))])
    with pytest.raises(VizError, match="outside the"):
        run(loaded, TEXT, patch=[Patch(1, (99,), np.zeros((1, 32)))])


def test_the_adapter_finds_every_part_of_each_family(tiny_model_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir("bert"))
    small = dict(vocab_size=120, d_model=32)
    models = {
        "bart": BartForConditionalGeneration(BartConfig(**small, encoder_layers=2, decoder_layers=3,
                                                        encoder_attention_heads=4, decoder_attention_heads=4,
                                                        encoder_ffn_dim=64, decoder_ffn_dim=64)),
        "t5": T5ForConditionalGeneration(T5Config(**small, d_kv=8, num_layers=2, num_decoder_layers=3,
                                                  num_heads=4, d_ff=64)),
        "bert-decoder": BertLMHeadModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32,
                                                   num_hidden_layers=2, num_attention_heads=4,
                                                   intermediate_size=64, is_decoder=True)),
    }
    for name, model in models.items():
        arch = archs.arch_of(model)
        for stack_name, stack in arch.stacks.items():
            blocks = archs.get(model.base_model, stack.layers)
            attn = stack.self_attention
            for path in (attn.query, attn.key, attn.value, attn.out):
                assert isinstance(archs.get(blocks[0], path), torch.nn.Linear), (name, stack_name, path)
            if stack.cross_attention is not None:
                assert isinstance(archs.get(blocks[0], stack.cross_attention.out), torch.nn.Linear)
        if arch.kind == "encoder-decoder":
            assert len(archs.blocks(model, "encoder")) == 2 and len(archs.blocks(model, "decoder")) == 3
            assert arch.stacks["decoder"].cross_attention is not None
    assert archs.arch_of(models["bert-decoder"]).kind == "decoder"
    with pytest.raises(VizError, match="relative position"):
        archs.position_table(models["t5"])


def test_roberta_positions_start_after_the_padding_row(loaded):
    table, offset = archs.position_table(loaded.model)
    expected = loaded.model.config.pad_token_id + 1 if loaded.model.config.model_type == "roberta" else 0
    assert offset == expected and isinstance(table, torch.nn.Embedding)


@pytest.mark.parametrize(("value", "message"), [
    ((np.zeros((2, 2)),), "tuple of per-layer tensors"),
    (torch.zeros(1, 1, 2, 2), "Call .detach"),
    (np.zeros((2, 3, 3), dtype=np.float32), r"add the layer axis with a\[None\]"),
    (np.zeros((3, 3), dtype=np.float32), r"a\[None, None\]"),
    (np.zeros((2, 1, 4, 3, 3), dtype=np.float32), "a batch"),
    (np.zeros((1, 1, 3, 3), dtype=np.int64), "floats"),
])
def test_the_contract_is_checked_at_the_boundary_with_fix_it_messages(value, message):
    with pytest.raises(VizError, match=message):
        check_attention(value)


def test_transposed_or_unnormalised_attention_is_caught_when_asked():
    weights = np.full((1, 1, 3, 3), 1 / 3, dtype=np.float32)
    assert check_attention(weights, num_tokens=3, rows_sum_to_one=True) is weights
    with pytest.raises(VizError, match="sum to 1"):
        check_attention(weights * 2, rows_sum_to_one=True)
    with pytest.raises(VizError, match="different inputs"):
        check_attention(weights, num_tokens=4)


@pytest.mark.parametrize("decoder", [False, True], ids=["encoder", "bert-as-decoder"])
def test_the_sink_gives_transformers_eager_weights_and_outputs_bit_for_bit(tiny_model_dir, tmp_path, decoder):
    folder = tiny_model_dir("bert")
    if decoder:  # BERT as a causal LM: the same attention code under a causal mask
        config = BertConfig.from_pretrained(folder, is_decoder=True, architectures=["BertLMHeadModel"])
        BertLMHeadModel.from_pretrained(folder, config=config).save_pretrained(tmp_path)
        AutoTokenizer.from_pretrained(folder).save_pretrained(tmp_path)
        folder = tmp_path
    loaded = load_model(str(folder), device="cpu")
    assert loaded.model.config._attn_implementation == sink.IMPLEMENTATION
    eager = type(loaded.model).from_pretrained(folder, attn_implementation="eager").eval()
    for text, pair in ((TEXT, None), (TEXT, OTHER), ("word " * 80, None)):
        record = run(loaded, text, pair)
        inputs = loaded.tokenizer(text, pair, return_tensors="pt", truncation=True, max_length=loaded.max_length)
        with torch.no_grad():
            direct = eager(**inputs, output_attentions=True, output_hidden_states=True)
        assert np.array_equal(record.attention, torch.stack([a[0] for a in direct.attentions]).numpy())
        assert np.array_equal(record.hidden_states, torch.stack([h[0] for h in direct.hidden_states]).numpy())
    if decoder:
        assert np.triu(record.attention[0, 0], 1).max() == 0.0  # still causal


class _CountingTokenizer:
    """The model's tokenizer, counting how often the text is tokenised."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer, self.calls = tokenizer, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.tokenizer(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)


def test_a_run_tokenises_the_text_once_and_a_too_long_text_twice(tiny_model_dir):
    loaded = load_model(str(tiny_model_dir("bert")), device="cpu")
    counting = _CountingTokenizer(loaded.tokenizer)
    counted = dataclasses.replace(loaded, tokenizer=counting)
    run(counted, TEXT, OTHER)
    assert counting.calls == 1
    long = run(counted, "word " * 200)  # once to count the tokens it would have, once truncated
    assert counting.calls == 3 and long.truncated and long.num_input_tokens == 202


# ---- batched interventions: each row its own change, the same numbers as one run per row -------------

def batch_of(loaded: LoadedModel, text: str, rows: int) -> dict[str, torch.Tensor]:
    encoding, _ = run_module.encode(loaded, text)
    return {k: v.repeat(rows, 1) for k, v in run_module.model_inputs(loaded, encoding).items()}


def test_ablations_by_row_in_one_batch_equal_one_run_per_ablation(loaded):
    heads = [(0, 1), (1, 0), (loaded.num_layers - 1, loaded.num_heads - 1)]
    ablations = [HeadAblation(layer, head, rows=(i,)) for i, (layer, head) in enumerate(heads)]
    specs = run_module.intervention_hooks(loaded, ablations)
    batched = run_module.forward(loaded, batch_of(loaded, TEXT, len(heads)), specs, attention=False)
    for i, (layer, head) in enumerate(heads):
        single = run(loaded, TEXT, ablate=[HeadAblation(layer, head)]).hidden_states[-1]
        np.testing.assert_allclose(batched.hidden_states[-1][i].numpy(), single, atol=1e-5)


def test_patches_by_row_in_one_batch_equal_one_run_per_patch(loaded):
    clean = run(loaded, OTHER)
    T = len(clean.tokens)
    patches = [Patch(layer, (position,), clean.hidden_states[layer][[position]], rows=(i,))
               for i, (layer, position) in enumerate([(0, 1), (1, T - 2), (loaded.num_layers, 2)])]
    specs = run_module.intervention_hooks(loaded, patch=patches, num_tokens=T)
    batched = run_module.forward(loaded, batch_of(loaded, TEXT, len(patches)), specs, attention=False)
    for i, p in enumerate(patches):
        single = run(loaded, TEXT, patch=[dataclasses.replace(p, rows=None)]).hidden_states[-1]
        np.testing.assert_allclose(batched.hidden_states[-1][i].numpy(), single, atol=1e-5)


def test_head_output_hooks_see_each_chosen_layers_heads_and_change_only_what_they_return(loaded):
    record = run(loaded, TEXT, capture=Capture(head_outputs=True))  # [L, H, T, d_head]
    seen: dict[int, np.ndarray] = {}

    def read(layer: int, heads: torch.Tensor) -> None:  # (B, T, H, d_head)
        seen[layer] = heads[0].transpose(0, 1).numpy().copy()

    last = loaded.num_layers - 1
    inputs = batch_of(loaded, TEXT, 1)
    plain = run_module.forward(loaded, inputs, run_module.head_output_hooks(loaded, read, [last]), attention=False)
    assert list(seen) == [last]
    np.testing.assert_array_equal(seen[last], record.head_outputs[last])
    np.testing.assert_array_equal(plain.hidden_states[-1][0].numpy(), record.hidden_states[-1])

    def zero_head_1(layer: int, heads: torch.Tensor) -> torch.Tensor:
        return torch.cat([heads[:, :, :1], torch.zeros_like(heads[:, :, 1:2]), heads[:, :, 2:]], dim=2)

    changed = run_module.forward(loaded, inputs, run_module.head_output_hooks(loaded, zero_head_1, [0]),
                                 attention=False)
    ablated = run(loaded, TEXT, ablate=[HeadAblation(0, 1)]).hidden_states[-1]
    np.testing.assert_array_equal(changed.hidden_states[-1][0].numpy(), ablated)


def test_head_scale_zero_is_ablation_and_its_gradient_is_a_finite_difference(loaded):
    scale = torch.ones(loaded.num_layers, loaded.num_heads)
    scale[1, 0] = 0.0
    inputs = batch_of(loaded, TEXT, 1)
    scaled = run_module.forward(loaded, inputs, run_module.head_scale_hooks(loaded, scale), attention=False)
    ablated = run(loaded, TEXT, ablate=[HeadAblation(1, 0)]).hidden_states[-1]
    np.testing.assert_allclose(scaled.hidden_states[-1][0].numpy(), ablated, atol=1e-5)

    gate = torch.ones(loaded.num_layers, loaded.num_heads, dtype=torch.float64, requires_grad=True)
    out = run_module.forward(loaded, inputs, run_module.head_scale_hooks(loaded, gate), attention=False, grad=True)
    out.hidden_states[-1].double().sum().backward()
    eps = 1e-3
    for layer, head in [(0, 0), (1, 1)]:
        values = []
        for sign in (1, -1):
            s = torch.ones(loaded.num_layers, loaded.num_heads)
            s[layer, head] += sign * eps
            o = run_module.forward(loaded, inputs, run_module.head_scale_hooks(loaded, s), attention=False)
            values.append(o.hidden_states[-1].double().sum().item())
        # central difference of a float32 model: a loose tolerance
        assert gate.grad[layer, head].item() == pytest.approx((values[0] - values[1]) / (2 * eps), rel=2e-2, abs=1e-2)
    assert all(p.grad is None for p in loaded.model.parameters())  # the weights got no gradient


def test_rows_outside_the_batch_and_wrong_scales_are_refused(loaded):
    specs = run_module.intervention_hooks(loaded, [HeadAblation(0, 0, rows=(3,))])
    with pytest.raises(VizError, match="outside the batch"):
        run_module.forward(loaded, batch_of(loaded, TEXT, 2), specs, attention=False)
    with pytest.raises(VizError, match="head scale"):
        run_module.head_scale_hooks(loaded, torch.ones(loaded.num_layers + 1, loaded.num_heads))
