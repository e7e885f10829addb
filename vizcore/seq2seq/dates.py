"""The task: spelled-out English dates -> ISO dates, with the alignment known word for word.

Inputs are lowercase words separated by single spaces, in two forms::

    the <day> of <month> <year>      "the twenty first of march nineteen ninety nine" -> "1999-03-21"
    <month> <day>[,] <year>          "march twenty first, nineteen ninety nine"       -> "1999-03-21"

``<day>`` is an ordinal (first ... twentieth, twenty first ... thirtieth, thirty first); ``<year>``
(1900-2099) is "nineteen hundred", "nineteen oh five" (1901-1909), "nineteen ninety nine"
(1910-1999), "two thousand", "two thousand [and] seven" / "two thousand [and] forty two"
(2001-2099) or "twenty forty two" (2010-2099). Only real calendar dates are generated.

Tokens are words; the comma is a token of its own. The output is "YYYY-MM-DD", one character per
token. The gold alignment says which input words each output character comes from: the year's
digits from the year words ("and" included), the month's from the month word, the day's from the
day words; the dashes from none.

The 1,000 held-out dates (``heldout_pairs``) are dates that training never sees in any wording: a
hash of the ISO date puts about 1 in 40 dates aside (``is_reserved``) and ``sample_pairs`` skips them.
"""

from __future__ import annotations

import calendar
import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

from vizcore.errors import VizError

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
         "nineteen")
TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
            "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
            "eighteenth", "nineteenth", "twentieth")
FIRST_YEAR, LAST_YEAR = 1900, 2099
FORMS = ("the-of", "month-first", "month-first-comma")

PAD, UNK = "<pad>", "<unk>"
START, END = "<s>", "</s>"
WORDS = tuple(sorted(set(MONTHS + UNITS + TEENS + TENS + ORDINALS + ("the", "of", ",", "oh", "hundred",
                                                                    "thousand", "and", "thirtieth"))))
INPUT_VOCAB = (PAD, UNK) + WORDS
OUTPUT_VOCAB = (PAD, START, END, "-") + tuple("0123456789")
OUTPUT_LENGTH = 10  # "YYYY-MM-DD"
ROLES = ("year",) * 4 + ("",) + ("month",) * 2 + ("",) + ("day",) * 2  # what each output character writes

# For a page's example buttons: both forms, each kind of year, then the two ways of leaving the training data.
EXAMPLES = ("the twenty first of march nineteen ninety nine", "march twenty first, nineteen ninety nine",
            "the first of january nineteen hundred", "may fifth nineteen oh five",
            "the thirtieth of june two thousand and seven", "october twentieth twenty forty two",
            "the thirty first of february two thousand", "the fourth of july in the year two thousand")

MAX_CHARACTERS = 300  # the longest date in the grammar has 62 characters
HELDOUT_SIZE = 1000
HELDOUT_SEED = 18
RESERVED_ONE_IN = 40
_FIRST_DAY, _LAST_DAY = dt.date(FIRST_YEAR, 1, 1).toordinal(), dt.date(LAST_YEAR, 12, 31).toordinal()


# ---- numbers in words ----------------------------------------------------------------------------

def number_words(n: int) -> str:
    """1-99 in words: "seven", "thirteen", "forty", "forty two"."""
    if n < 10:
        return UNITS[n - 1]
    if n < 20:
        return TEENS[n - 10]
    tens, unit = divmod(n, 10)
    return TENS[tens - 2] + ("" if unit == 0 else " " + UNITS[unit - 1])


def day_words(day: int) -> str:
    """1-31 as an ordinal: "first", "twentieth", "twenty first", "thirtieth", "thirty first"."""
    if day <= 20:
        return ORDINALS[day - 1]
    if day < 30:
        return "twenty " + ORDINALS[day - 21]
    return "thirtieth" if day == 30 else "thirty " + ORDINALS[day - 31]


def year_wordings(year: int) -> tuple[str, ...]:
    """Every way the grammar says ``year`` (1900-2099)."""
    if year == 1900:
        return ("nineteen hundred",)
    if year < 1910:
        return ("nineteen oh " + UNITS[year - 1901],)
    if year < 2000:
        return ("nineteen " + number_words(year - 1900),)
    if year == 2000:
        return ("two thousand",)
    n = year - 2000
    spoken = ("two thousand " + number_words(n), "two thousand and " + number_words(n))
    return spoken + (("twenty " + number_words(n),) if n >= 10 else ())


def render(date: dt.date, form: str, year_wording: int = 0) -> str:
    """``date`` in one of ``FORMS``; ``year_wording`` indexes ``year_wordings(date.year)``."""
    year, month, day = year_wordings(date.year)[year_wording], MONTHS[date.month - 1], day_words(date.day)
    if form == "the-of":
        return f"the {day} of {month} {year}"
    return f"{month} {day}{',' if form == 'month-first-comma' else ''} {year}"


# ---- parsing -------------------------------------------------------------------------------------

_DAYS = {tuple(day_words(d).split()): d for d in range(1, 32)}
_YEARS = {tuple(w.split()): y for y in range(FIRST_YEAR, LAST_YEAR + 1) for w in year_wordings(y)}
_COMMA = re.compile(r"\s*,\s*")


def check_date_text(text: object) -> str:
    """A text the translator will read: not empty, not longer than any date could be."""
    if not isinstance(text, str) or not text.strip():
        raise VizError("The text is empty: type a date in words, e.g. 'the twenty first of march nineteen "
                       "ninety nine' or 'march twenty first, nineteen ninety nine'.")
    if len(text) > MAX_CHARACTERS:
        raise VizError(f"The text has {len(text):,} characters; a date in words has at most {MAX_CHARACTERS}.")
    return text


def tokenize(text: str) -> list[str]:
    """Lowercase words split on spaces, the comma a token of its own: "March first, ..." -> march first , ..."""
    return _COMMA.sub(" , ", text.strip().lower()).split()


@dataclass(frozen=True)
class ParsedDate:
    """What the grammar makes of a text. ``spans``: the token ranges [start, end) of "year", "month" and
    "day" (empty unless ``in_grammar``). ``iso`` only for a real date; ``reason`` says why not otherwise."""

    text: str
    tokens: tuple[str, ...]
    in_grammar: bool
    real: bool
    iso: str | None
    reason: str
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def outside_training(self) -> bool:
        return not self.real


def parse_date(text: str) -> ParsedDate:
    """Parse ``text`` with the grammar; an unknown word, a wrong order or an impossible date is reported
    in ``reason`` (one sentence), never raised."""
    tokens = tuple(tokenize(text))
    unknown = [t for t in tokens if t not in WORDS]
    if not tokens:
        return ParsedDate(text, tokens, False, False, None, "The text is empty.")
    if unknown:
        return _outside(text, tokens, f"'{unknown[0]}' is not a word the model was trained on: the grammar "
                                      "has only month names, ordinal days and the year words (see the examples).")
    spans = _split(tokens)
    if isinstance(spans, str):
        return _outside(text, tokens, spans)
    year, month = _YEARS[tokens[slice(*spans["year"])]], MONTHS.index(tokens[spans["month"][0]]) + 1
    day = _DAYS[tokens[slice(*spans["day"])]]
    last = calendar.monthrange(year, month)[1]
    if day > last:
        why = (f"{year} is not a leap year" if month == 2 and day == 29
               else f"{MONTHS[month - 1].capitalize()} has {last} days" + (f" in {year}" if month == 2 else ""))
        return ParsedDate(text, tokens, True, False, None, f"No such date: {why}. The model was trained only "
                          "on real dates, so this is outside what it has seen.", spans)
    return ParsedDate(text, tokens, True, True, f"{year:04d}-{month:02d}-{day:02d}", "", spans)


def _outside(text: str, tokens: tuple[str, ...], why: str) -> ParsedDate:
    return ParsedDate(text, tokens, False, False, None, f"Not in the grammar: {why}")


def _split(tokens: tuple[str, ...]) -> dict[str, tuple[int, int]] | str:
    """Token spans of year, month and day for either form, or the reason the order is wrong."""
    if tokens[0] == "the":
        if "of" not in tokens:
            return "'the <day> of <month> <year>' needs 'of' after the day."
        of = tokens.index("of")
        spans = {"day": (1, of), "month": (of + 1, of + 2), "year": (of + 2, len(tokens))}
    elif tokens[0] in MONTHS:
        end = next((i + 1 for i, t in enumerate(tokens[1:3], start=1) if t in ORDINALS + ("thirtieth",)), None)
        if end is None:
            return "after the month comes an ordinal day such as 'first' or 'twenty first'."
        year_at = end + 1 if tokens[end:end + 1] == (",",) else end
        spans = {"month": (0, 1), "day": (1, end), "year": (year_at, len(tokens))}
    else:
        return "a date starts with 'the' (the first of may ...) or with a month (may first ...)."
    return _check_spans(tokens, spans)


def _check_spans(tokens: tuple[str, ...], spans: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]] | str:
    day, month, year = (tokens[slice(*spans[k])] for k in ("day", "month", "year"))
    if day not in _DAYS:
        return f"'{' '.join(day) or '(nothing)'}' is not a day: use first ... thirty first."
    if len(month) != 1 or month[0] not in MONTHS:
        return f"'{' '.join(month) or '(nothing)'}' is not a month name."
    if year not in _YEARS:
        return (f"'{' '.join(year) or '(nothing)'}' is not a year the grammar says (1900-2099: 'nineteen hundred', "
                "'nineteen oh five', 'nineteen ninety nine', 'two thousand and seven', 'twenty forty two').")
    return spans


def gold_alignment(parsed: ParsedDate) -> np.ndarray:
    """bool [10, I]: output character j of "YYYY-MM-DD" comes from input token i (the dashes from none).
    Needs a text in the grammar (a real date or not)."""
    if not parsed.in_grammar:
        raise VizError(f"No gold alignment: {parsed.reason}")
    gold = np.zeros((OUTPUT_LENGTH, len(parsed.tokens)), dtype=bool)
    for j, role in enumerate(ROLES):
        if role:
            gold[j, slice(*parsed.spans[role])] = True
    return gold


# ---- the data ------------------------------------------------------------------------------------

def is_reserved(iso: str) -> bool:
    """About 1 date in 40, by a hash of its ISO text: held out, never trained on in any wording."""
    return int.from_bytes(hashlib.sha256(iso.encode()).digest()[:4], "big") % RESERVED_ONE_IN == 0


def random_pair(rng: np.random.Generator, reserved: bool = False) -> tuple[str, str]:
    """One (text, "YYYY-MM-DD"): a uniform date of 1900-2099 (reserved ones only if ``reserved``, else
    none), a uniform form and a uniform wording of its year."""
    while True:
        date = dt.date.fromordinal(int(rng.integers(_FIRST_DAY, _LAST_DAY + 1)))
        iso = date.isoformat()
        if is_reserved(iso) == reserved:
            break
    form = FORMS[int(rng.integers(len(FORMS)))]
    return render(date, form, int(rng.integers(len(year_wordings(date.year))))), iso


def random_text(seed: int) -> str:
    """One generated date in words (a training one), from ``seed``: the page's "random date"."""
    return random_pair(np.random.default_rng(seed))[0]


def sample_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` training pairs from ``seed``; no reserved (held-out) date among them."""
    rng = np.random.default_rng(seed)
    return [random_pair(rng) for _ in range(count)]


def heldout_pairs(count: int = HELDOUT_SIZE) -> list[tuple[str, str]]:
    """The fixed held-out set: ``count`` (at most 1,000) distinct reserved dates, each in a seeded wording."""
    if not 1 <= count <= HELDOUT_SIZE:
        raise VizError(f"The held-out set has 1 to {HELDOUT_SIZE:,} dates; asked for {count:,}.")
    rng, pairs, seen = np.random.default_rng(HELDOUT_SEED), [], set()
    while len(pairs) < count:
        text, iso = random_pair(rng, reserved=True)
        if iso not in seen:
            seen.add(iso)
            pairs.append((text, iso))
    return pairs


# ---- token ids -----------------------------------------------------------------------------------

_INPUT_IDS = {w: i for i, w in enumerate(INPUT_VOCAB)}
_OUTPUT_IDS = {c: i for i, c in enumerate(OUTPUT_VOCAB)}


def input_ids(tokens: list[str] | tuple[str, ...]) -> list[int]:
    """Word ids; a word outside the grammar becomes <unk>."""
    return [_INPUT_IDS.get(t, _INPUT_IDS[UNK]) for t in tokens]


def output_ids(characters: str) -> list[int]:
    """Ids of "YYYY-MM-DD" (or any digits and dashes)."""
    return [_OUTPUT_IDS[c] for c in characters]


def output_id(token: str) -> int:
    return _OUTPUT_IDS[token]
