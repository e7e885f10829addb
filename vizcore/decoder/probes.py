"""Everyday prompts and the next words a person would accept (the causal LM's sanity check).

A probe counts as answered when any accepted word is among the model's top 5 next tokens. Used by
the training log, the model card and the tests; written for this project. The first two are the
issue's own examples.
"""

from __future__ import annotations

import torch

from vizcore.mlm.probes import probe_hit

PLACES = ("store", "shop", "market", "bank", "park", "beach", "city", "house", "church", "school", "office",
          "station", "hospital", "airport", "library", "movies", "cinema", "theatre", "theater", "country",
          "town", "village", "mall", "gym", "doctor", "dentist", "zoo", "museum", "river", "sea", "lake",
          "mountains", "woods", "forest", "farm", "field", "garden", "hotel", "restaurant", "party", "game",
          "concert", "temple", "palace", "court", "hills", "islands", "bathroom", "bar", "pub", "club", "shops",
          "supermarket", "university", "college", "hall", "coast", "capital", "camp")

PROBES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("She opened the", ("door", "window", "box", "letter", "book", "gate", "drawer", "envelope", "bag", "lid",
                        "curtains", "package", "bottle", "chest", "case", "paper", "car", "cupboard", "closet")),
    ("I am going to the", PLACES),
    ("The cat sat on the", ("mat", "floor", "bed", "table", "chair", "ground", "couch", "sofa", "roof", "wall",
                            "fence", "porch", "steps", "rug", "carpet", "window", "edge", "grass", "top")),
    ("Once upon a", ("time",)),
    ("The United States of", ("america",)),
    ("He drank a cup of", ("coffee", "tea", "milk", "water", "wine", "cold", "hot", "beer", "juice")),
    ("In the beginning God created the", ("heaven", "heavens", "earth", "world", "light", "man")),
    ("The sun rises in the", ("east", "morning", "sky", "west", "south", "north")),
    ("Thank you very", ("much",)),
    ("It was a dark and stormy", ("night", "day", "evening", "sea", "morning")),
    ("The children played in the", ("park", "yard", "garden", "street", "streets", "field", "fields",
                                    "playground", "house", "snow", "woods", "sand", "water", "room", "sun")),
    ("We must work together to", ("build", "make", "ensure", "achieve", "bring", "create", "protect", "help",
                                  "improve", "find", "solve", "meet", "provide", "promote", "strengthen",
                                  "reduce", "restore", "keep", "develop", "do", "get", "save", "prevent")),
)


@torch.no_grad()
def probe_results(model, tokenizer) -> list[dict]:
    """Each probe's top-5 next tokens from a ``BertLMHeadModel``-like model (``.bert``, ``.cls``)."""
    rows = []
    for prompt, answers in PROBES:
        ids = tokenizer(prompt, return_tensors="pt")["input_ids"][:, :-1]  # [CLS] prompt, no closing [SEP]
        hidden = model.bert(input_ids=ids).last_hidden_state[0, -1]
        top = model.cls(hidden[None]).float().softmax(-1)[0].topk(5)
        words = [tokenizer.decode([i]).strip() for i in top.indices.tolist()]
        rows.append({"text": prompt, "top5": words, "hit": probe_hit(answers, words)})
    return rows
