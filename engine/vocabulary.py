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
#: spelled-out cardinals ("three visits") and the ordinals
WORD_NUMBERS: dict[str, int] = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    **WORD_ORDINALS,
}
#: a regular expression for any month name of MONTHS, with an optional trailing dot
MONTH_PATTERN = "(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"

__all__ = ["MONTHS", "MONTH_PATTERN", "WORD_NUMBERS", "WORD_ORDINALS"]
