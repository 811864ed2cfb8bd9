"""The unit of reading: a paragraph (a blank line ends one).

Every reading of a text is local to its paragraphs: its numbers, cues, claims and their
verdicts are those of each paragraph read on its own, shifted to the paragraph's offset, and
nothing (a running patient, a cue, a look-back window) carries across a blank line. A text's
reading is therefore composed from its paragraphs', and a paragraph that occurs in several texts
of one engine run is read once (run_memo): the final comparison text repeats the comparison
text's paragraphs, and the statement check reads a copy of each text with number words as digits,
which differs only in the paragraphs that have them.
"""

from __future__ import annotations

import re

from engine.grounding.run_memo import memoised

#: a run of characters up to a blank line (a line break followed by optional spaces and another
#: line break); runs of non-line-break characters are taken whole (one step, not one per character)
PARAGRAPH = re.compile(r"(?:[^\n]+|\n(?!\s*\n))+")


def paragraphs(text: str) -> tuple[tuple[int, str], ...]:
    """(offset, text) of each paragraph, in order (once per text within an engine run)."""
    return _paragraphs(text)


@memoised
def _paragraphs(text: str) -> tuple[tuple[int, str], ...]:
    out = []
    for m in PARAGRAPH.finditer(text):
        # a paragraph after a blank line starts with the line break before its first line: it
        # is left out, so that the same paragraph reads the same at the start of a text
        para = m.group()
        k = len(para) - len(para.lstrip("\n"))
        out.append((m.start() + k, para[k:]) if k < len(para) else (m.start(), para))
    return tuple(out)
