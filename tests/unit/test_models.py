import pytest
import torch

from vizcore.errors import VizError
from vizcore.model import loading as models
from vizcore.model import sink
from vizcore.model.loading import DEFAULT_MODEL, available_models, load_model, pick_device


def test_tiny_bert_loads_frozen_in_eval_mode_with_eager_attention(tiny_bert_dir):
    loaded = load_model(str(tiny_bert_dir), device="cpu")
    assert loaded.model.training is False
    assert not any(p.requires_grad for p in loaded.model.parameters())
    # eager attention, writing its weights into the run's buffer (bit for bit eager's: tests/unit/test_run.py)
    assert loaded.model.config._attn_implementation == sink.IMPLEMENTATION
    assert (loaded.num_layers, loaded.num_heads, loaded.max_length) == (2, 4, 64)
    assert loaded.is_decoder is False


def test_gpt2_like_model_is_recognised_as_decoder(tiny_model_dir):
    loaded = load_model(str(tiny_model_dir("gpt2")), device="cpu")
    assert loaded.is_decoder is True
    assert loaded.model.config._attn_implementation == "eager"  # GPT-2's own code asks for "eager" by name


def test_distilbert_config_names_are_read(tiny_model_dir):
    loaded = load_model(str(tiny_model_dir("distilbert")), device="cpu")
    assert (loaded.num_layers, loaded.num_heads) == (2, 4)


def test_mlm_head_loads_from_a_folder_that_has_one(tiny_bert_dir):
    loaded = load_model(str(tiny_bert_dir), device="cpu", head="mlm")
    assert type(loaded.model).__name__ == "BertForMaskedLM"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "No model given"),
        ("/no/such/folder", "does not exist"),
        ("bad id with spaces", "neither a built-in model"),
        ("x" * 5_000, r"^'x{80}… \(5,000 characters\)' is too long for a model folder or a hub id\.$"),
        ("https://huggingface.co/bert-base-uncased", "web address: give the hub id 'bert-base-uncased' instead"),
        ("https://example.com/model", r"web address: give the hub id \(e\.g\."),
    ],
)
def test_bad_model_names_get_clear_messages(name, message):
    with pytest.raises(VizError, match=message):
        load_model(name, device="cpu")


def test_folder_without_config_and_file_path_are_refused(tmp_path):
    with pytest.raises(VizError, match="no config.json"):
        load_model(str(tmp_path), device="cpu")
    file = tmp_path / "weights.bin"
    file.write_bytes(b"x")
    with pytest.raises(VizError, match="is a file"):
        load_model(str(file), device="cpu")


def test_unreachable_hub_fails_at_once_with_offline_advice(monkeypatch):
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(VizError, match="HF_HUB_OFFLINE=1"):
        load_model("some-user/model-that-is-not-cached", device="cpu")


def test_hf_hub_offline_is_respected_without_touching_the_network(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=3.0: pytest.fail("network was probed"))
    with pytest.raises(VizError, match="local model folder"):
        load_model("bert-base-uncased-not-cached", device="cpu")


def test_device_choice():
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device("auto").type in {"cpu", "cuda", "mps"}
    with pytest.raises(VizError, match="Unknown device"):
        pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(VizError, match="not available"):
            pick_device("cuda")


def test_model_list_puts_the_offline_default_first():
    rows = available_models()
    assert rows[0]["name"] == DEFAULT_MODEL and rows[0]["offline"] is True
    assert {"bert-base-uncased", "gpt2"} <= {r["name"] for r in rows if not r["offline"]}
