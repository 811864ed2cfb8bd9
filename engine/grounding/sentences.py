"""Sentence splitting for the statement checker.

The claim reader's splitter (`cues.sentences`: paragraphs, then sentence ends before a capital,
a digit, a bullet or a parenthesis; never after "vs.", "e.g.", "i.e.") with one addition: titles
and abbreviations ("Dr.", "Mr.", "Prof.", "approx.", "No.") do not end a sentence, so that
"Dr. Smith noted ..." is one sentence with one verdict.
"""

from __future__ import annotations

import re

from engine.grounding.cues import sentences as _sentences

ABBREVIATIONS = re.compile(
    r"(?:\b(?:dr|mr|mrs|ms|prof|st|approx|no|fig|vol|ca|cf|etc|jr|sr)\.)\s*$", re.I
)


def split_sentences(text: str) -> list[tuple[int, int, int]]:
    """(paragraph, start, end) of each sentence of `text` (offsets into `text`)."""
    out: list[tuple[int, int, int]] = []
    for pi, a, b in _sentences(text):
        if out and out[-1][0] == pi and ABBREVIATIONS.search(text[out[-1][1] : out[-1][2]]):
            out[-1] = (pi, out[-1][1], b)
        else:
            out.append((pi, a, b))
    return out
