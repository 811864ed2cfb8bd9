"""Citations: a writer says which statements each piece of its text renders.

`cite(text, statements)` wraps a rendered piece (a paragraph, a sentence or a phrase; pieces may
nest) in invisible marks that carry the statements' ids; `clauses(parts)` joins a sentence's
clauses with "; " and marks each one; `finish(marked)` removes the marks and returns the plain
text with its citations (character spans and ids) and its clauses (character spans), so that a
reader that needs a sentence's clauses (engine.agents.cited_repair) gets them as data. The
release record of a rendered text is looked up from these citations
(engine.agents.rendered_record), not parsed from the prose. The marks are private-use
characters that no writer, input file or model emits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from engine.clinical.statements import Statement

OPEN, MID, CLOSE = "\ue000", "\ue001", "\ue002"
CLAUSE_OPEN, CLAUSE_CLOSE = "\ue003", "\ue004"
CLAUSE_SEP = "; "  # what joins a sentence's clauses


def cite(text: str, statements: Iterable[Statement]) -> str:
    """`text` marked as rendering `statements` (unchanged when there are none)."""
    ids = ",".join(s.id for s in statements)
    if not ids or not text:
        return text
    return f"{OPEN}{ids}{MID}{text}{CLOSE}"


def clause(text: str) -> str:
    """`text` marked as one clause of its sentence (unchanged when empty)."""
    return f"{CLAUSE_OPEN}{text}{CLAUSE_CLOSE}" if text else text


def clauses(parts: Iterable[str]) -> str:
    """The clauses `parts` joined with CLAUSE_SEP, each marked as a clause."""
    return CLAUSE_SEP.join(clause(p) for p in parts)


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
    clauses: tuple[tuple[int, int], ...] = ()  # (start, end) of each marked clause, in order

    def at(self, pos: int) -> list[Citation]:
        """The citations holding character `pos`, innermost first."""
        hits = [c for c in self.citations if c.start <= pos < c.end]
        return sorted(hits, key=lambda c: -c.depth)


_MARK = re.compile(f"{OPEN}([^{MID}]*){MID}|{CLOSE}|{CLAUSE_OPEN}|{CLAUSE_CLOSE}")


def _marked(text: str) -> bool:
    return OPEN in text or CLAUSE_OPEN in text


def finish(marked: str) -> Rendered:
    """The plain text of a marked text, its citations and its clauses."""
    if not _marked(marked):
        return Rendered(marked)
    out: list[str] = []
    n = 0  # length of the plain text so far
    last = 0
    stack: list[tuple[int, tuple[str, ...]]] = []
    cits: list[Citation] = []
    opened: list[int] = []
    spans: list[tuple[int, int]] = []
    for m in _MARK.finditer(marked):
        piece = marked[last : m.start()]
        out.append(piece)
        n += len(piece)
        last = m.end()
        mark = m.group()
        if m.group(1) is not None:
            stack.append((n, tuple(m.group(1).split(","))))
        elif mark == CLAUSE_OPEN:
            opened.append(n)
        elif mark == CLAUSE_CLOSE:
            spans.append((opened.pop(), n))
        else:
            start, ids = stack.pop()
            cits.append(Citation(start, n, ids, len(stack)))
    out.append(marked[last:])
    return Rendered(
        "".join(out), tuple(sorted(cits, key=lambda c: (c.start, c.depth))), tuple(sorted(spans))
    )


def plain(marked: str) -> str:
    """The text without its marks (`finish(marked).text`, without building the citations)."""
    return _MARK.sub("", marked) if _marked(marked) else marked


def text_start(marked: str) -> int:
    """Where the first character of the plain text is in `marked` (past leading marks)."""
    i = 0
    while i < len(marked):
        if marked[i] == OPEN:
            i = marked.index(MID, i) + 1
        elif marked[i] in (CLAUSE_OPEN, CLAUSE_CLOSE, CLOSE):
            i += 1
        else:
            break
    return i
