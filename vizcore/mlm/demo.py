"""The fill-mask demo set (issue 48 C): well-known cloze sentences a class types first, with the words a person
would accept. Written for this project before any base-size masked-LM was trained, and never trained on: the
training data is checked against it (tests/integration/test_mlm_demo_set.py), sentence by sentence.

A model "knows" a sentence when its first word is one of the accepted answers (top-1; top-5 is reported too). A
first word that repeats a word of the sentence itself (not an accepted answer) is a **copy**: "Rome is the capital
of [MASK]." -> rome. Both are measured with ``score`` below, by tools/mpnet_mlm.py and the tests.

Groups: capitals and places, everyday objects, collocations and sayings, the examples of BERT's paper and of the
common tutorials, school facts, and the occupation sentences used to discuss bias (any occupation is accepted:
the point of those is what the model prefers, not a right answer).
"""

from __future__ import annotations

OCCUPATIONS = tuple(dict.fromkeys((
    "teacher", "doctor", "nurse", "lawyer", "farmer", "carpenter", "mechanic", "waiter", "waitress", "cook",
    "chef", "clerk", "secretary", "salesman", "driver", "engineer", "soldier", "writer", "journalist",
    "photographer", "painter", "artist", "musician", "singer", "actor", "actress", "dancer", "pilot", "sailor",
    "fisherman", "baker", "butcher", "tailor", "plumber", "electrician", "builder", "labourer", "laborer",
    "servant", "maid", "housekeeper", "cleaner", "janitor", "guard", "policeman", "officer", "detective",
    "scientist", "professor", "librarian", "banker", "accountant", "manager", "consultant", "programmer",
    "designer", "architect", "dentist", "surgeon", "pharmacist", "veterinarian", "prostitute", "model",
    "bartender", "cashier", "miner", "blacksmith", "translator", "interpreter", "editor", "reporter", "priest",
    "minister", "missionary", "volunteer", "researcher", "assistant", "receptionist", "hairdresser", "barber",
    "gardener", "shepherd", "hunter", "merchant", "trader", "tutor", "coach", "athlete", "economist",
    "politician", "diplomat", "judge", "firefighter", "fireman", "porter", "courier", "mailman", "postman",
    "mason", "welder", "technician", "analyst", "nanny", "babysitter", "governess", "midwife", "therapist",
    "counselor", "counsellor", "psychologist", "psychiatrist", "physician", "paramedic", "chemist", "physicist",
    "mathematician", "historian", "poet", "novelist", "author", "sculptor", "potter", "weaver", "seamstress",
    "housewife", "contractor", "inspector", "instructor", "lecturer", "professional", "slave", "servant",
    "maid", "worker", "labor", "prostitute", "cop", "police", "lifeguard", "caretaker", "salesperson",
    "salesman", "saleswoman", "businessman", "businesswoman", "entrepreneur", "executive", "director",
    "producer", "broker", "agent", "jeweler", "jeweller", "florist", "astronaut", "firefighter", "vet",
    "surveyor", "pastor", "preacher", "rabbi", "monk", "nun", "mayor", "governor", "senator", "president",
)))

DEMO: tuple[tuple[str, tuple[str, ...]], ...] = (
    # capitals and places
    ("The capital of France is [MASK].", ("paris",)),
    ("Rome is the capital of [MASK].", ("italy",)),
    ("The capital of Japan is [MASK].", ("tokyo",)),
    ("Berlin is the capital of [MASK].", ("germany",)),
    ("The capital of England is [MASK].", ("london",)),
    ("Madrid is a city in [MASK].", ("spain", "europe")),
    ("The Eiffel Tower is in [MASK].", ("paris", "france")),
    ("The largest ocean on Earth is the [MASK] Ocean.", ("pacific",)),
    ("Mount Everest is the highest [MASK] in the world.", ("mountain", "peak", "point", "summit")),
    ("The Nile is a long [MASK] in Africa.", ("river",)),
    # everyday objects
    ("I need a [MASK] to unlock the door.", ("key",)),
    ("She cut the bread with a [MASK].", ("knife", "saw")),
    ("He brushed his [MASK] before going to bed.", ("teeth", "hair")),
    ("Turn off the [MASK] when you leave the room.", ("light", "lights", "lamp", "tv", "television", "computer",
                                                      "heater", "radio", "fan", "oven", "stove", "tap", "music",
                                                      "power", "electricity", "heat", "gas", "water")),
    ("I looked at the [MASK] to see what time it was.", ("clock", "watch", "phone", "calendar", "sky", "sun")),
    ("We keep the milk cold in the [MASK].", ("fridge", "refrigerator", "freezer", "cellar", "icebox",
                                              "basement", "cooler")),
    ("He answered the [MASK] when it rang.", ("phone", "telephone", "door", "bell", "doorbell", "call")),
    ("She wore a warm [MASK] because it was cold outside.", ("coat", "sweater", "jacket", "hat", "scarf",
                                                            "jumper", "cloak", "shawl", "dress", "cardigan")),
    # collocations and sayings
    ("Actions speak louder than [MASK].", ("words",)),
    ("An apple a day keeps the [MASK] away.", ("doctor", "doctors")),
    ("The early bird catches the [MASK].", ("worm",)),
    ("Thank you very [MASK].", ("much",)),
    ("Once upon a [MASK], there lived a king.", ("time",)),
    ("Better late than [MASK].", ("never",)),
    ("Practice makes [MASK].", ("perfect",)),
    ("It is raining cats and [MASK].", ("dogs",)),
    ("Happy [MASK] to you!", ("birthday",)),
    ("Ladies and [MASK], welcome to the show.", ("gentlemen",)),
    # BERT's paper and the tutorials
    ("The man went to the [MASK] to buy a gallon of milk.", ("store", "shop", "market", "supermarket", "grocery",
                                                             "bakery", "dairy", "farm")),
    ("He bought a [MASK] of milk.", ("gallon", "bottle", "carton", "pint", "glass", "jug", "cup", "quart",
                                     "litre", "liter", "jar", "can", "pitcher", "bucket")),
    ("Paris is the [MASK] of France.", ("capital",)),
    ("The doctor told the patient to take the [MASK] twice a day.", ("medicine", "medicines", "medication",
                                                                     "pills", "pill", "tablets", "tablet",
                                                                     "drug", "drugs", "antibiotics", "dose")),
    ("I went to the [MASK] to watch a film.", ("cinema", "theater", "theatre", "movies", "movie")),
    # school facts
    ("Water boils at 100 degrees [MASK].", ("celsius", "centigrade")),
    ("There are twelve months in a [MASK].", ("year",)),
    ("The sun is a [MASK].", ("star",)),
    ("People breathe [MASK] to stay alive.", ("air", "oxygen")),
    ("A triangle has three [MASK].", ("sides", "angles", "corners", "points", "edges", "vertices")),
    ("The bird built a [MASK] in the tree.", ("nest", "house", "home")),
    ("Cows give us [MASK].", ("milk", "meat", "beef", "leather")),
    ("The students listened to the [MASK] explaining the lesson.", ("teacher", "professor", "instructor",
                                                                     "lecturer", "tutor", "teachers")),
    ("We use an umbrella when it [MASK].", ("rains", "pours", "snows", "storms")),
    # occupations, for a discussion of bias
    ("The man worked as a [MASK].", OCCUPATIONS),
    ("The woman worked as a [MASK].", OCCUPATIONS),
    ("My son wants to be a [MASK] when he grows up.", OCCUPATIONS),
    ("My daughter wants to be a [MASK] when she grows up.", OCCUPATIONS),
    ("The nurse said that [MASK] would be back soon.", ("she", "he", "they", "someone", "somebody", "i", "we",
                                                        "the", "mom", "dad", "mother", "father", "doctor")),
    ("The engineer said that [MASK] would fix it.", ("he", "she", "they", "someone", "somebody", "i", "we",
                                                     "it")),
)


def sentence_words(sentence: str) -> set[str]:
    """The sentence's own words (lower case, letters and digits), the mask left out: what a copy repeats."""
    import re

    return {word for word in re.findall(r"[a-z0-9]+", sentence.lower().replace("[mask]", " ")) if word}


def is_copy(sentence: str, word: str, accepted: tuple[str, ...]) -> bool:
    """Whether ``word`` (a model's answer) repeats the sentence instead of answering it."""
    word = word.strip().lower()
    return word not in accepted and word in sentence_words(sentence)
