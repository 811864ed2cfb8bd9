"""Where a text's citation markers are and which text each one cites (the reading of CITE_MARKER
that citation-safe decoding enforces and a check of cited text can share).

A marker (`engine.llm.base.CITE_MARKER`: "[S4]", "[S4,S7]", "[S4, S7]") is written BEFORE the
clause it supports and cites the text after it up to the next marker or the end of the sentence.
The end of a sentence is:
- a '.', '!' or '?' followed by whitespace or the end of the text (such a '.' is never a decimal
  point: "14. Then" ends the sentence after the number 14, "2.5" does not), the punctuation mark
  being the last character of the cited clause; or
- a newline, which is not part of the clause.
The digits of a marker are not numbers of the text: `clauses` leaves the markers out, so that
`extract_numbers` over a clause's text reads only the clause's own numbers.

Pure text functions (no model, no torch): the processor in engine.llm.citation_safe follows the
same rule character by character while the text is generated.
"""

from __future__ import annotations

import re

from engine.llm.base import CITE_MARKER, marker_ids

#: the end of a sentence: the punctuation mark (kept in the clause) or the newline (not kept)
SENTENCE_END = re.compile(r"[.!?](?=\s|\Z)|\n")


def marker_spans(text: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """Every citation marker of `text`: (start, end, statement ids), in text order;
    `text[start:end]` is the marker itself ("[S4,S7]" -> ids ("S4", "S7"))."""
    return [(m.start(), m.end(), marker_ids(m.group(1))) for m in CITE_MARKER.finditer(text)]


def _sentence_end(text: str, pos: int, limit: int) -> int:
    """Where the clause starting at `pos` ends at the latest `limit`: just after a sentence-ending
    mark, at a newline, or `limit`."""
    m = SENTENCE_END.search(text, pos, limit)
    if m is None:
        return limit
    return m.start() if m.group() == "\n" else m.end()


def clauses(text: str) -> list[tuple[int, int, tuple[str, ...] | None]]:
    """`text` without its markers, cut into (start, end, cited ids) pieces in text order: the
    clause each marker cites (its ids), and the text no marker cites (None: before a sentence's
    first marker, or after a cited clause's sentence end). Empty pieces are left out."""
    out: list[tuple[int, int, tuple[str, ...] | None]] = []
    spans = marker_spans(text)
    pos = 0
    for i, (start, end, ids) in enumerate(spans):
        if start > pos:
            out.append((pos, start, None))
        nxt = spans[i + 1][0] if i + 1 < len(spans) else len(text)
        stop = _sentence_end(text, end, nxt)
        if stop > end:
            out.append((end, stop, ids))
        pos = stop if stop < nxt else nxt
    if pos < len(text):
        out.append((pos, len(text), None))
    return out
