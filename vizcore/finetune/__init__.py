"""Fine-tuning: datasets, training a classifier, the tiny Transformer, analysis, figures, CLI.

The settings' vocabulary lives here, without torch, so that the command line's parser (built for every
command, even ``--help``) does not import torch; ``training``, ``classify`` and ``tasks`` use it from here.
"""

TASK_NAMES: tuple[str, ...] = ("sentence", "pair", "token", "qa")  # in this order in menus and --help
MODES: tuple[str, ...] = ("head", "last_n", "full")
MODE_LABELS = {"head": "head only (encoder frozen)", "last_n": "last N layers + head", "full": "full model"}
# The usual recipes: a frozen encoder's head learns fast at 1e-3..1e-2; all layers at 2e-5..5e-5.
DEFAULT_LR = {"head": 2e-3, "last_n": 1e-4, "full": 5e-5}
POOLINGS: tuple[str, ...] = ("mean", "cls")  # the vector a sentence classifier reads
