"""Citations: a writer says which statements each piece of its text renders.

`cite(text, statements)` wraps a rendered piece (a paragraph, a sentence or a phrase; pieces may
nest) in invisible marks that carry the statements' ids; `finish(marked)` removes the marks and
returns the plain text with its citations (character spans and ids). The release record of a
rendered text is looked up from these citations (engine.grounding.lookup), not parsed from the
prose. The marks are private-use characters that no writer, input file or model emits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from engine.clinical.statements import Statement

OPEN, MID, CLOSE = "\ue000", "\ue001", "\ue002"


def cite(text: str, statements: Iterable[Statement]) -> str:
    """`text` marked as rendering `statements` (unchanged when there are none)."""
    ids = ",".join(s.id for s in statements)
    if not ids or not text:
        return text
    return f"{OPEN}{ids}{MID}{text}{CLOSE}"


@dataclass(frozen=True)
class Citation:
    start: int
    end: int
    ids: tuple[str, ...]
    depth: int = 0  # 0 = outermost; a nested citation is more specific than its enclosing one


@dataclass(frozen=True)
class Rendered:
    """A rendered text and the statements each of its spans renders."""

    text: str
    citations: tuple[Citation, ...] = ()

    def at(self, pos: int) -> list[Citation]:
        """The citations holding character `pos`, innermost first."""
        hits = [c for c in self.citations if c.start <= pos < c.end]
        return sorted(hits, key=lambda c: -c.depth)


_MARK = re.compile(f"{OPEN}([^{MID}]*){MID}|{CLOSE}")


def finish(marked: str) -> Rendered:
    """The plain text of a marked text and its citations."""
    if OPEN not in marked:
        return Rendered(marked)
    out: list[str] = []
    n = 0  # length of the plain text so far
    last = 0
    stack: list[tuple[int, tuple[str, ...]]] = []
    cits: list[Citation] = []
    for m in _MARK.finditer(marked):
        piece = marked[last : m.start()]
        out.append(piece)
        n += len(piece)
        last = m.end()
        if m.group(1) is not None:
            stack.append((n, tuple(m.group(1).split(","))))
        else:
            start, ids = stack.pop()
            cits.append(Citation(start, n, ids, len(stack)))
    out.append(marked[last:])
    return Rendered("".join(out), tuple(sorted(cits, key=lambda c: (c.start, c.depth))))


def plain(marked: str) -> str:
    """The text without its marks (`finish(marked).text`, without building the citations)."""
    return _MARK.sub("", marked) if OPEN in marked else marked
