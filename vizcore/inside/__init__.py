"""Attention, step by step: one layer recomputed by hand, and the demonstrations around it."""
