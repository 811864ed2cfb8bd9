"""Sentence splitting for the statement checker.

The claim reader's splitter (`cues.sentences`: paragraphs, then sentence ends before a capital,
a digit, a bullet or a parenthesis; never after "vs.", "e.g.", "i.e.") with one addition: titles
and abbreviations ("Dr.", "Mr.", "Prof.", "approx.", "No.") do not end a sentence, so that
"Dr. Smith noted ..." is one sentence with one verdict.
"""

from __future__ import annotations

import re

from engine.grounding.cues import sentences as _sentences
from engine.grounding.run_memo import memoised

ABBREVIATIONS = re.compile(
    r"(?:\b(?:dr|mr|mrs|ms|prof|st|approx|no|fig|vol|ca|cf|etc|jr|sr)\.)\s*$", re.I
)
#: the longest abbreviation with its full stop ("approx.")
_ABBR_CHARS = 7


def split_sentences(text: str) -> list[tuple[int, int, int]]:
    """(paragraph, start, end) of each sentence of `text` (offsets into `text`; once per text
    within an engine run)."""
    return list(_split(text))


@memoised
def _split(text: str) -> tuple[tuple[int, int, int], ...]:
    out: list[tuple[int, int, int]] = []
    for pi, a, b in _sentences(text):
        if out and out[-1][0] == pi and _ends_with_abbreviation(text, out[-1][1], out[-1][2]):
            out[-1] = (pi, out[-1][1], b)
        else:
            out.append((pi, a, b))
    return tuple(out)


def _ends_with_abbreviation(text: str, a: int, b: int) -> bool:
    """`ABBREVIATIONS.search(text[a:b])`, reading only the sentence's end: its last word before
    the trailing spaces, with the character before it (the word boundary)."""
    sentence = text[a:b]
    end = len(sentence.rstrip())
    if not end or sentence[end - 1] != ".":
        return False
    return ABBREVIATIONS.search(sentence, max(0, end - _ABBR_CHARS - 1)) is not None
