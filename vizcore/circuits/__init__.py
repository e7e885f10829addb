"""Circuits read from the weights alone (Elhage et al. 2021): QK and OV circuits of each head, composition."""
