"""Reading a model's cited text: its citation markers become spans, the released text shows none.

A model that was given citable statements (engine.agents.citable) writes "[S4]" or "[S4,S7]"
(engine.llm.base.CITE_MARKER) BEFORE the clause it supports. `read_cited` removes every marker
and the space it leaves, and returns the plain text as a `Rendered` (engine.writing.citing) whose
citations cover each marker's clause: from the marker up to the next marker or the end of the
sentence (the words of a sentence before its first marker belong to its first clause). A marker
naming an id the request did not give is kept as a stray: the sentence holding it fails the
check ("cites a statement it was not given", engine.agents.cited_check).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection
from dataclasses import dataclass

from engine.grounding.sentences import split_sentences
from engine.llm.base import CITE_MARKER, marker_ids
from engine.writing.citing import Citation, Rendered


@dataclass(frozen=True)
class Stray:
    """A marker that names statements the request did not give: where it stood in the plain
    text, and those ids."""

    pos: int
    ids: tuple[str, ...]


@dataclass(frozen=True)
class CitedText:
    """A model's text without its markers, its citations, and its stray markers."""

    rendered: Rendered
    strays: tuple[Stray, ...] = ()

    @property
    def text(self) -> str:
        return self.rendered.text


def strip_markers(text: str) -> tuple[str, list[tuple[int, tuple[str, ...]]]]:
    """(plain text, [(position in it, ids) per marker]): each marker is removed with the space
    after it (or, at the end of a line or text, the space before it)."""
    out: list[str] = []
    marks: list[tuple[int, tuple[str, ...]]] = []
    n, last = 0, 0
    for m in CITE_MARKER.finditer(text):
        piece = text[last : m.start()]
        end = m.end()
        if end < len(text) and text[end] == " ":
            end += 1
        elif piece.endswith(" "):
            piece = piece[:-1]
        out.append(piece)
        n += len(piece)
        marks.append((n, marker_ids(m.group(1))))
        last = end
    out.append(text[last:])
    return "".join(out), marks


def read_cited(text: str, given: Collection[str]) -> CitedText:
    """The plain text of `text` with a citation per marker (see the module docstring); the ids
    of a marker not in `given` are strays."""
    plain, marks = strip_markers(text)
    if not marks:
        return CitedText(Rendered(plain))
    sentences = split_sentences(plain)
    starts = [a for _p, a, _b in sentences]
    cits: list[Citation] = []
    strays: list[Stray] = []
    for k, (pos, ids) in enumerate(marks):
        i = max(0, bisect_right(starts, pos) - 1)
        a, b = (sentences[i][1], sentences[i][2]) if sentences else (0, len(plain))
        if pos >= b and i + 1 < len(sentences):  # a marker between sentences opens the next
            a, b = sentences[i + 1][1], sentences[i + 1][2]
        nxt = marks[k + 1][0] if k + 1 < len(marks) else len(plain)
        first = k == 0 or marks[k - 1][0] < a
        start = a if first else pos
        end = min(b, max(nxt, start))
        known = tuple(x for x in ids if x in given)
        if len(known) < len(ids):
            strays.append(
                Stray(max(start, min(pos, end - 1)), tuple(x for x in ids if x not in given))
            )
        if known and end > start:
            cits.append(Citation(start, end, known))
    return CitedText(Rendered(plain, tuple(cits)), tuple(strays))
