"""The padding and permutation demos on the embedded model (tiny-model cases: tests/unit/test_attention_demos.py)."""

from vizcore.inside.demos import padding_demo, permutation_demo
from vizcore.inside.steps import TOLERANCE, run_model

TEXT = "The animal didn't cross the street because it was too tired."


def test_padding_on_the_embedded_model(minilm):
    demo = padding_demo(minilm, "It was tired.", TEXT, 2, 0)
    assert demo.short == 0 and demo.max_on_padding <= 1e-12 and demo.max_diff_vs_alone <= TOLERANCE


def test_permutation_demo_on_the_embedded_model(minilm):
    demo = permutation_demo(minilm, run_model(minilm, TEXT), seed=0)
    assert demo.diff_without_positions <= TOLERANCE and demo.diff_with_positions > 0.5
    assert demo.change_with.shape == (16,) and demo.change_without.max() <= TOLERANCE
