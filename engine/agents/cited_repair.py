"""Repair of a cited text: each failing sentence replaced by the facts text's rendering, or removed.

The facts text of an agent (its fallback) is rendered with citations (engine.writing.citing), so
the sentences that render given statements are found by id, not by reading:
- a failing cited sentence is replaced by the fallback sentences whose own citations include
  one of its cited ids (in the fallback's order, each used once); with none it is removed;
- a failing uncited sentence is replaced as the prose guard replaces it
  (engine.grounding.guard.repair_text: the facts sentence about the same patients and parts),
  and the replacement keeps the citations it has in the fallback.
A text whose sentences all hold but that leaves out key statements (coverage) is completed by
`add_missing`: the fallback sentences whose own citations include a missing key statement are
added after the text, in the fallback's order, less the clauses (as the writer marked them) that
state only what the text already states (no finding said twice).
The repaired text keeps the citations of the sentences it keeps, shifted, so that it is checked
again by lookup (engine.agents.cited_check).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.agents.cited import CitedText
from engine.grounding.guard import repair_text
from engine.grounding.sentences import split_sentences
from engine.writing.citing import CLAUSE_SEP, Citation, Rendered


class TextBuilder:
    """Text pieces with their citations, joined with the citations' spans shifted."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.cits: list[Citation] = []
        self.n = 0

    def add(self, text: str, cits: Sequence[Citation] = (), at: int = 0) -> None:
        """Add `text`, which starts at `at` in the text `cits` index (clipped to it)."""
        end = at + len(text)
        for c in cits:
            a, b = max(c.start, at), min(c.end, end)
            if a < b:
                self.cits.append(Citation(a - at + self.n, b - at + self.n, c.ids, c.depth))
        self.parts.append(text)
        self.n += len(text)

    def rendered(self) -> Rendered:
        text = "".join(self.parts)
        lead = len(text) - len(text.lstrip())
        body = text.strip()
        cits = [
            Citation(c.start - lead, min(c.end - lead, len(body)), c.ids, c.depth)
            for c in self.cits
            if c.start - lead < len(body) and c.end - lead > 0
        ]
        cits = [Citation(max(0, c.start), c.end, c.ids, c.depth) for c in cits]
        return Rendered(body, tuple(sorted(cits, key=lambda c: (c.start, c.depth))))


def _own(r: Rendered, c: Citation, a: int, b: int) -> bool:
    """Whether citation `c` is the sentence [a, b)'s own: inside it (an enclosing paragraph
    citation, which starts with the paragraph's first sentence, is no sentence's own)."""
    return a <= c.start < b and (c.end <= b or not r.text[b : c.end].strip())


def _sentence_citations(r: Rendered, a: int, b: int) -> tuple[list[Citation], bool]:
    """(the citations a sentence [a, b) of the fallback carries when copied, whether they are
    its own): its own, else the enclosing ones (a paragraph cited as a whole)."""
    own = [c for c in r.citations if _own(r, c, a, b)]
    if own:
        return own, True
    return [c for c in r.citations if c.start < b and c.end > a], False


def _cited_ids(r: Rendered, a: int, b: int) -> set[str]:
    return {i for c in r.citations if c.start < b and c.end > a for i in c.ids}


def _fallback_for(
    ids: set[str], fallback: Rendered, used: set[int], text: str
) -> list[tuple[int, set[str]]]:
    """The fallback sentences (start, the wanted ids they render) that render `ids`, in the
    fallback's order: first those whose own citations do, then, for ids still wanted, those
    inside a paragraph citing them (a sentence already in `text` or `used` is skipped)."""
    want, picked = set(ids), {}
    sents = split_sentences(fallback.text)
    for own_only in (True, False):
        for _p, a, b in sents:
            if not want:
                break
            if a in used or a in picked or fallback.text[a:b].strip() in text:
                continue
            cits, own = _sentence_citations(fallback, a, b)
            got = want & {i for c in cits for i in c.ids}
            if got and (own or not own_only):
                picked[a] = got
                want -= got
    return sorted(picked.items())


def _uncited_replacement(sentence: Mapping[str, Any], text: str, fallback: Rendered) -> int | None:
    """Where in the fallback the prose guard's replacement of an uncited sentence starts."""
    a0, a1 = sentence["span"]
    bad = [{"span": [0, a1 - a0], "text": sentence["text"], "reasons": sentence["reasons"]}]
    _repaired, removed = repair_text(text[a0:a1], bad, fallback.text)
    repl = removed[0]["replaced_by"] if removed else None
    if not repl:
        return None
    pos = fallback.text.find(repl)
    return pos if pos >= 0 else None


def repair_cited(
    cited: CitedText, bad: Sequence[Mapping[str, Any]], fallback: Rendered
) -> tuple[Rendered, list[dict[str, Any]]]:
    """The text with each of its `bad` sentences (the record's removable ones, in any order)
    replaced or removed (see the module docstring), and what was removed."""
    r = cited.rendered
    ends = {a: b for _p, a, b in split_sentences(fallback.text)}
    out = TextBuilder()
    used: set[int] = set()
    removed: list[dict[str, Any]] = []
    last = 0
    for s in sorted(bad, key=lambda x: x["span"][0]):
        a0, a1 = s["span"]
        out.add(r.text[last:a0], r.citations, last)
        last = a1
        if s.get("cited"):
            starts = [a for a, _ids in _fallback_for(_cited_ids(r, a0, a1), fallback, used, r.text)]
        else:
            one = _uncited_replacement(s, r.text, fallback)
            starts = [] if one is None or one in used else [one]
        pieces = []
        for a in starts:
            used.add(a)
            b = ends.get(a, a + len(fallback.text[a:].split("\n", 1)[0]))
            if pieces:
                out.add(" ")
            out.add(fallback.text[a:b], _sentence_citations(fallback, a, b)[0], a)
            pieces.append(fallback.text[a:b])
        if not pieces and r.text[a1 : a1 + 1] == " ":
            last = a1 + 1  # a removed sentence takes the space after it
        removed.append(
            {"text": s["text"], "reasons": s["reasons"], "replaced_by": " ".join(pieces) or None}
        )
    out.add(r.text[last:], r.citations, last)
    return out.rendered(), removed


def add_missing(
    r: Rendered, ids: Sequence[str], fallback: Rendered
) -> tuple[Rendered, list[dict[str, Any]]]:
    """`r` with the fallback sentences that render the missing key statements `ids` (see the
    module docstring), in the fallback's order around it: those that come, in the fallback,
    before the first sentence rendering a statement `r` cites go before `r` (the digest's "who
    and how much data" stays first), the others after it; and what was added (each sentence
    with the ids it states)."""
    sents = split_sentences(fallback.text)
    ends = {a: b for _p, a, b in sents}
    stated = {i for c in r.citations for i in c.ids}
    own = [a for _p, a, b in sents if stated & _own_ids(fallback, a, b)]
    first = min(own) if own else None
    picked = _fallback_for(set(ids), fallback, set(), r.text)
    before = [(a, got) for a, got in picked if first is not None and a < first]
    after = [(a, got) for a, got in picked if first is None or a >= first]
    out = TextBuilder()
    added: list[dict[str, Any]] = []
    for a, got in before:
        added.append(_add_sentence(out, fallback, a, ends[a], stated, set(ids), got))
        out.add(" ")
    out.add(r.text, r.citations, 0)
    for a, got in after:
        out.add("\n" if r.text.endswith("\n") or not r.text else " ")
        added.append(_add_sentence(out, fallback, a, ends[a], stated, set(ids), got))
    return out.rendered(), added


def _own_ids(fallback: Rendered, a: int, b: int) -> set[str]:
    """The ids of the fallback sentence [a, b)'s own citations."""
    return {i for c in fallback.citations if _own(fallback, c, a, b) for i in c.ids}


def _add_sentence(
    out: TextBuilder,
    fallback: Rendered,
    a: int,
    b: int,
    stated: set[str],
    wanted: set[str],
    got: set[str],
) -> dict[str, Any]:
    """Add the fallback sentence [a, b) to `out`, less the clauses `_new_parts` leaves out;
    what was added."""
    start = out.n
    cits = _sentence_citations(fallback, a, b)[0]
    parts = _new_parts(fallback, a, b, stated, wanted)
    for k, (pa, pb) in enumerate(parts):
        if k:
            out.add(CLAUSE_SEP)
        out.add(fallback.text[pa:pb], cits, pa)
    end = fallback.text[a:b].rstrip()[-1:]
    if parts[-1][1] < b and end in ".!?":
        out.add(end)  # the sentence's last clause was left out: keep its full stop
    return {"text": "".join(out.parts)[start:], "states": sorted(got)}


def _clause_spans(fallback: Rendered, a: int, b: int) -> list[tuple[int, int]]:
    """The spans of the sentence [a, b)'s marked clauses, the first from `a`, the last to `b`;
    [(a, b)] for a sentence of one clause."""
    own = [c for c in fallback.clauses if a <= c[0] and c[1] <= b]
    if len(own) < 2:
        return [(a, b)]
    return [(a, own[0][1]), *own[1:-1], (own[-1][0], b)]


def _new_parts(
    fallback: Rendered, a: int, b: int, stated: set[str], wanted: set[str]
) -> list[tuple[int, int]]:
    """The clauses of the fallback sentence [a, b) worth adding: all but those (after the
    first, which names the patient) whose citations state only statements the text already
    states, so that an added sentence does not say a finding twice. The clauses are the ones
    its writer marked (engine.writing.citing.clauses), never read from the text: the first
    runs from the sentence's start, the last to its end (its full stop)."""
    spans = _clause_spans(fallback, a, b)
    keep = [spans[0]]
    for pa, pb in spans[1:]:
        ids = {i for c in fallback.citations if pa <= c.start and c.end <= pb for i in c.ids}
        if not ids or not ids <= stated or ids & wanted:
            keep.append((pa, pb))
    if len(keep) < len(spans) and keep[-1] != spans[-1]:
        pa, pb = keep[-1]
        tail = fallback.text[pa:pb].rstrip()
        keep[-1] = (pa, pa + len(tail.rstrip(".!?")))
    return keep
