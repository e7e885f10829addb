"""Where every page opens: one rule, from the model's shape (vizcore/model/heads.py)."""

import pytest

from vizcore.model.heads import default_head


@pytest.mark.parametrize(("layers", "heads", "expected"), [(6, 12, (2, 0)), (12, 12, (5, 0)), (1, 1, (0, 0)),
                                                             (2, 4, (0, 0)), (24, 16, (11, 0))])
def test_the_middle_layer_and_its_first_head(layers, heads, expected):
    assert default_head(layers, heads) == expected
    layer, head = default_head(layers, heads)
    assert 0 <= layer < layers and 0 <= head < heads


def test_a_shape_without_heads_is_refused():
    with pytest.raises(ValueError, match="at least one layer and one head"):
        default_head(0, 12)
