"""Word vocabularies shared by the planner and the claim reader: spelled-out ordinals and
numbers, and the month names (whose table lives in kb_store.dates, the lowest layer that reads
dates; it is re-exported here so that engine code has one place to import words from)."""

from __future__ import annotations

from kb_store.dates import MONTHS

#: spelled-out ordinals ("the third visit")
WORD_ORDINALS: dict[str, int] = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
#: spelled-out ordinals a ranking may use beyond the tenth ("ranked eleventh")
RANK_ORDINALS: dict[str, int] = {**WORD_ORDINALS, "eleventh": 11, "twelfth": 12}
#: spelled-out cardinals from zero to nineteen (index = value) and the tens
UNIT_WORDS: tuple[str, ...] = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
TENS_WORDS: tuple[str, ...] = (
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
)
#: spelled-out cardinals ("three visits") and the ordinals
WORD_NUMBERS: dict[str, int] = {
    **{w: i for i, w in enumerate(UNIT_WORDS[1:11], start=1)},
    **WORD_ORDINALS,
}
#: a regular expression for any month name of MONTHS, with an optional trailing dot
MONTH_PATTERN = "(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"

__all__ = [
    "MONTHS",
    "MONTH_PATTERN",
    "RANK_ORDINALS",
    "TENS_WORDS",
    "UNIT_WORDS",
    "WORD_NUMBERS",
    "WORD_ORDINALS",
]
