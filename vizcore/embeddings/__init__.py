"""Sentence embeddings: pooled vectors of any layer, cosine similarity, semantic search, CLI.

The settings' vocabulary lives here, without torch, so that the command line's parser (built for every
command, even ``--help``) does not import torch; ``vectors`` re-exports it.
"""

POOLINGS: tuple[str, ...] = ("mean", "cls", "max")
LAYER_CHOICES = ("a layer number from 1 (first) to the model's number of layers (last, the default), "
                 "or last4: the last four layers' vectors side by side")
MAX_BATCH = 512
