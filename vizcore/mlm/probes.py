"""Everyday cloze probes: a sentence with one [MASK] and the answers a person would accept.

A probe counts as answered when any accepted word is among the model's top 5. Used by the
training log, the model card and the tests; written for this project.
"""

from __future__ import annotations

PROBES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("The capital of France is [MASK].", ("paris",)),
    ("The cat sat on the [MASK].", ("mat", "floor", "bed", "table", "chair", "ground", "couch", "sofa",
                                    "grass", "roof", "wall", "fence", "porch", "steps", "rug", "carpet")),
    ("She drank a cup of [MASK] every morning.", ("coffee", "tea", "milk", "water", "wine", "juice",
                                                  "chocolate", "cocoa")),
    ("The sun rises in the [MASK].", ("east", "morning", "sky")),
    ("I wrote the letter with a [MASK].", ("pen", "pencil", "quill", "typewriter")),
    ("He opened the door with a [MASK].", ("key", "knife", "crowbar", "hammer", "bar")),
    ("Birds can [MASK] in the sky.", ("fly", "soar", "sing", "float")),
    ("The opposite of hot is [MASK].", ("cold", "cool")),
    ("Water freezes when it is very [MASK].", ("cold", "cool", "low")),
    ("A week has seven [MASK].", ("days",)),
    ("The children played in the [MASK] after school.", ("park", "yard", "garden", "street", "field",
                                                         "playground", "house", "snow", "woods", "sand")),
    ("He went to the [MASK] to buy some bread.", ("store", "shop", "market", "bakery", "baker", "town",
                                                  "village", "city", "grocery")),
    ("My mother and my [MASK] are my parents.", ("father", "dad")),
    ("The dog wagged its [MASK].", ("tail", "head")),
    ("She put the milk in the [MASK].", ("fridge", "refrigerator", "jug", "bottle", "bowl", "cup", "glass",
                                         "pot", "pail", "can", "pitcher", "jar", "tea", "coffee")),
    ("It was raining, so I took my [MASK].", ("umbrella", "coat", "cloak", "hat", "cap", "jacket")),
    ("Paris is a city in [MASK].", ("france", "europe")),
    ("Monday, Tuesday, [MASK], Thursday.", ("wednesday",)),
    ("One, two, three, [MASK], five.", ("four",)),
    ("The king lived in a large [MASK].", ("castle", "palace", "house", "hall", "city", "mansion", "tower",
                                           "court", "kingdom")),
    ("You eat soup with a [MASK].", ("spoon", "ladle", "fork", "bowl")),
    ("The teacher wrote on the [MASK].", ("board", "blackboard", "chalkboard", "wall", "paper", "slate",
                                         "whiteboard")),
    ("Snow is [MASK] and cold.", ("white", "wet", "soft")),
    ("The baby was crying because it was [MASK].", ("hungry", "tired", "sick", "cold", "sad", "afraid",
                                                    "scared", "alone", "hurt", "ill", "frightened")),
    ("We sleep in a [MASK].", ("bed", "tent", "room", "house", "bedroom", "hammock")),
    ("The fish swam in the [MASK].", ("water", "sea", "river", "lake", "pond", "ocean", "stream", "tank",
                                      "pool", "bowl")),
    ("He is a doctor who works in a [MASK].", ("hospital", "clinic", "surgery", "practice", "city", "town",
                                              "village", "laboratory", "lab")),
    ("The train arrived at the [MASK].", ("station", "platform", "depot", "terminal", "stop", "city", "town")),
    ("She listened to [MASK] on the radio.", ("music", "songs", "news", "jazz", "him", "it", "them")),
    ("Apples and bananas are kinds of [MASK].", ("fruit", "fruits", "food")),
    ("A dog is a kind of [MASK].", ("animal", "mammal", "pet", "dog", "hound", "canine")),
    ("Ice is frozen [MASK].", ("water",)),
    ("The sky is [MASK] on a sunny day.", ("blue", "clear", "bright", "cloudless")),
    ("He read a [MASK] before going to sleep.", ("book", "story", "novel", "letter", "newspaper", "chapter",
                                                 "poem", "prayer", "paper", "page", "magazine")),
    ("The farmer milked the [MASK].", ("cow", "cows", "goat", "goats", "cattle", "sheep")),
    ("In winter it is usually [MASK].", ("cold", "snowy", "cool", "dark", "freezing", "wet")),
    ("The boy kicked the [MASK].", ("ball", "door", "dog", "bucket", "can", "table", "chair", "wall")),
    ("My brother is older [MASK] me.", ("than",)),
    ("The moon shines at [MASK].", ("night", "midnight", "dawn", "dusk", "evening", "noon")),
    ("Please close the [MASK] when you leave.", ("door", "window", "gate", "shop", "lid", "curtains")),
)


def probe_hit(answers: tuple[str, ...], top_words: list[str]) -> bool:
    return any(word.strip().lower() in answers for word in top_words[:5])
