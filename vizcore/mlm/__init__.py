"""Masked-LM: fill-mask, BERT's masking rule, the offline masked-LM's weights, figures, CLI."""
