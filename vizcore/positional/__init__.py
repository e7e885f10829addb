"""Positional encoding: the sinusoidal table, a model's learned positions, figures, CLI."""
