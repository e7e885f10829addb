"""Example inputs of the Why? page and CLI, written for this project.

* ``PATCH_PAIRS``: clean / corrupted sentences of the same token length (for the built-in WordPiece
  vocabulary), with the answer of the clean one and of the corrupted one (the contrast word).
* ``REFERENCE_SENTENCES``: everyday sentences over which a head's mean output is taken, the
  replacement of mean ablation (a head that says "what it usually says" instead of nothing).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PatchPair:
    label: str
    clean: str
    corrupt: str
    answer: str  # the clean sentence's answer
    contrast: str  # the corrupted sentence's answer


# Each pair moves the offline masked-LM's logit difference (answer - contrast) by 1.5 to 6 (measured).
PATCH_PAIRS: tuple[PatchPair, ...] = (
    PatchPair("France / Italy", "The capital of France is [MASK].", "The capital of Italy is [MASK].", "paris", "rome"),
    PatchPair("John / Mary", "John said that [MASK] was tired because he worked all day.",
              "Mary said that [MASK] was tired because she worked all day.", "he", "she"),
    PatchPair("man / woman", "The man took off [MASK] coat.", "The woman took off [MASK] coat.", "his", "her"),
    PatchPair("ice / fire", "Ice is very [MASK].", "Fire is very [MASK].", "cold", "hot"),
)

REFERENCE_SENTENCES: tuple[str, ...] = (
    "The children walked to school in the morning rain.",
    "She bought fresh bread and cheese at the market.",
    "Our train was late, so we missed the start of the film.",
    "He fixed the old bicycle with a new chain.",
    "The museum opens at nine and closes at five.",
    "A small dog barked at the postman every day.",
    "They planted tomatoes and beans in the garden.",
    "The river flooded the fields after the storm.",
    "My sister plays the piano better than I do.",
    "The teacher wrote the answer on the board.",
    "We watched the stars from the roof of the house.",
    "The doctor told him to drink more water.",
    "Snow covered the mountains all winter.",
    "The library lends books, films and music.",
    "He cooked rice with vegetables for dinner.",
    "The company hired ten new engineers this year.",
    "A cold wind blew through the empty streets.",
    "She painted the kitchen a bright yellow.",
    "The match ended in a draw after extra time.",
    "Birds sang in the trees behind the church.",
    "The price of coffee rose again last month.",
    "Please close the window before you leave.",
    "The baby slept through the whole journey.",
    "They argued about money for most of the evening.",
)
