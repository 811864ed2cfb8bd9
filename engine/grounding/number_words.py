"""Numbers written as words ("two visits", "twenty points", "ranked third"), read with text2num.

`digitise(text)` returns the text with each number word replaced by its digits, padded with spaces
to the same length, so that the claim reader checks it like any written number and every span
stays the same. Ambiguous words are left alone: "one" and "zero" ("one selected visit", "one of
them"); ordinals are converted only in a ranking ("ranked third", "third highest").
"""

from __future__ import annotations

import re

from text_to_num import text2num

from engine.grounding import literal_scan
from engine.vocabulary import RANK_ORDINALS, TENS_WORDS, UNIT_WORDS

UNITS = UNIT_WORDS
TENS = TENS_WORDS
ORDINALS = RANK_ORDINALS
_CARD = (
    r"(?:(?:"
    + "|".join(TENS)
    + r")(?:[- ](?:"
    + "|".join(UNITS[1:10])
    + r"))?|"
    + "|".join(sorted(UNITS, key=len, reverse=True))
    + r")"
)
CARDINAL_RE = re.compile(
    rf"(?<![\w-])({_CARD})(?:\s+hundred(?:\s+(?:and\s+)?{_CARD})?)?(?![\w-])", re.I
)
ORDINAL_RE = re.compile(r"(?<![\w-])(" + "|".join(ORDINALS) + r")(?![\w-])", re.I)
RANK_BEFORE = re.compile(r"\b(?:rank(?:ed|s|ing)?|placed|came|comes)\s+(?:in\s+)?$", re.I)
ORD_AFTER = re.compile(r"^\s+(?:highest|lowest|largest|greatest|smallest|place|rank)\b", re.I)


def _suffix(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def number_words(text: str) -> list[tuple[int, int, int, str]]:
    """(start, end, value, digits) of each number word that counts or ranks something."""
    out = []
    low = text.lower() if text.isascii() else None
    for m in literal_scan.finditer(CARDINAL_RE, text, low):
        word = m.group(0)
        if word.lower() in ("one", "zero", "a"):
            continue  # "one selected visit", "one of": too often not a count to read as 1
        try:
            value = text2num(re.sub(r"[-\s]+", " ", word.lower()), "en")
        except ValueError:
            continue
        out.append((m.start(), m.end(), value, str(value)))
    for m in literal_scan.finditer(ORDINAL_RE, text, low):
        n = ORDINALS[m.group(1).lower()]
        before = text[max(0, m.start() - 20) : m.start()]
        if RANK_BEFORE.search(before) or ORD_AFTER.match(text[m.end() : m.end() + 20]):
            out.append((m.start(), m.end(), n, f"{n}{_suffix(n)}"))
    return sorted(out)


def digitise(text: str) -> str:
    """`text` with number words as digits, padded to the same length (spans unchanged)."""
    chars = list(text)
    for a, b, _v, digits in number_words(text):
        rep = digits.ljust(b - a)
        if len(rep) > b - a:
            continue
        chars[a:b] = list(rep)
    return "".join(chars)
