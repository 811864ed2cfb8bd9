"""The summary's sentences with the statements each one cites, for the hover of the summary view.

A projection of the release record of the final text (its "citations": spans of the released text
with the statement ids each renders, and its sentence verdicts): each sentence becomes a piece of
the text with one short line per statement it cites (kind, patient, part or item, visits, label,
values with their numbers), built from the Statement fields, never from the prose. Nothing is
matched, judged or recomputed here; the statements listed first are those whose values the guard
matched to a number of the sentence (Result.claims), then the key facts, then the rest.

Pure functions, no Streamlit: `sentence_pieces` cuts a window of the text into pieces that cover
it exactly; `pieces_html` writes them as escaped HTML (the text and every statement field are data,
so nothing in them is read as HTML or Markdown), with the lines in a popup shown on hover only
(screen only: hidden in print). dashboard/render.py draws it; the link goes to the Provenance page
(dashboard.provenance_link).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dashboard.number_links import NumberLink, highlighted_html
from engine.clinical.statements import Statement
from engine.grounding.sentences import split_sentences
from engine.types import FactValue
from kb_store.documents import fmt_num
from kb_store.profiles import DOMAIN_LABELS

#: statements listed in one hover (the rest are counted; Provenance lists them all)
MAX_LINES = 6
#: values written on one statement's line (a score statement carries every item's value)
MAX_VALUES = 4

#: the hover's style: the popup under the sentence on hover or keyboard focus, never in print
HOVER_CSS = (
    "<style>"
    ".cite{position:relative;border-bottom:1px dotted #8a8a8a;cursor:help}"
    ".cite:hover,.cite:focus-within{background:#eef3fb}"
    ".cite .cite-pop{display:none;position:absolute;left:0;top:100%;z-index:1000;width:30rem;"
    "max-width:80vw;padding:.5rem .7rem;background:#fff;border:1px solid #c8ccd2;"
    "border-radius:.4rem;box-shadow:0 2px 8px rgba(0,0,0,.15);font-size:.82rem;"
    "line-height:1.35;color:#262730;cursor:auto}"
    ".cite:hover .cite-pop,.cite:focus-within .cite-pop{display:block}"
    ".cite-line{display:block;padding-left:.8rem;text-indent:-.8rem}"
    ".cite-line::before{content:'\\2022  '}.cite-more,.cite-link{display:block;margin-top:.25rem}"
    "mark.unsupported{background:#F6DEDA;font-weight:600}"
    "@media print{.cite .cite-pop{display:none!important}.cite{border:0;background:none}}"
    "</style>"
)


@dataclass(frozen=True)
class SentencePiece:
    """A stretch of the text: a sentence, or the text between two sentences. `lines` are the
    hover lines of the statements the sentence cites (empty: plain text); `more` counts the
    cited statements beyond MAX_LINES."""

    start: int
    end: int
    text: str
    lines: tuple[str, ...] = ()
    more: int = 0

    @property
    def cited(self) -> bool:
        return bool(self.lines)


def _value(v: FactValue, several_visits: bool) -> str:
    what = v.kind + (f" {v.item}" if v.kind == "item" and v.item else "")
    at = f" (visit {v.visit})" if several_visits and v.visit is not None else ""
    return f"{what} {fmt_num(v.value)}{at}"


def statement_line(s: Statement) -> str:
    """One statement as a short plain line: kind, patient, part or item, visits, label, values."""
    parts = [s.kind.replace("_", " ")]
    parts.append(f"patient {s.patient}" if s.patient is not None else "cohort")
    if s.subject:
        parts.append(DOMAIN_LABELS.get(s.subject, s.subject))
    if s.visits:
        word = "visit" if len(s.visits) == 1 else "visits"
        parts.append(f"{word} {', '.join(map(str, s.visits))}")
    if s.label:
        parts.append(s.label)
    line = " \u00b7 ".join(parts)
    if s.values:
        shown = [_value(v, len(s.visits) > 1) for v in s.values[:MAX_VALUES]]
        rest = len(s.values) - MAX_VALUES
        line += ": " + ", ".join(shown) + (f" and {rest} more" if rest > 0 else "")
    return line


def _innermost(cits: Sequence[tuple[int, int, tuple[str, ...]]]) -> list[tuple[str, ...]]:
    """The id sets of the citations that hold no other of `cits` (the most specific ones)."""
    out = []
    for i, (a, b, ids) in enumerate(cits):
        inner = any(
            j != i and a <= c and d <= b and (c, d) != (a, b) for j, (c, d, _) in enumerate(cits)
        )
        if not inner:
            out.append(ids)
    return out


def _ordered(
    ids: Iterable[str], by_id: Mapping[str, Statement], matched: Sequence[FactValue]
) -> list[Statement]:
    """The cited statements (once each, unknown ids left out): those holding a value the guard
    matched to a number of the sentence first, then key facts, then the rest, in citation order."""
    seen: dict[str, Statement] = {}
    for i in ids:
        if i in by_id and i not in seen:
            seen[i] = by_id[i]
    got = set(matched)
    sts = list(seen.values())
    return sorted(sts, key=lambda s: (not got.intersection(s.values), not s.key))


def _spans(text: str, sentences: Sequence[Mapping[str, Any]] | None) -> list[tuple[int, int]]:
    if sentences is not None:
        return sorted(
            (int(s["span"][0]), int(s["span"][1])) for s in sentences if s.get("span") is not None
        )
    return [(a, b) for _p, a, b in split_sentences(text)]


def _matched(claims: Sequence[Mapping[str, Any]], a: int, b: int) -> list[FactValue]:
    out = []
    for c in claims:
        span = c.get("span") or ()
        if len(span) == 2 and a <= int(span[0]) < b:
            out.extend(FactValue(**v) for v in c.get("matched") or ())
    return out


def _spans_of(citations: Sequence[Mapping[str, Any]]) -> list[tuple[int, int, tuple[str, ...]]]:
    return [
        (int(c["span"][0]), int(c["span"][1]), tuple(c.get("statements") or ()))
        for c in citations
        if c.get("span") is not None
    ]


def _cited(
    a: int,
    b: int,
    cits: Sequence[tuple[int, int, tuple[str, ...]]],
    by_id: Mapping[str, Statement],
    claims: Sequence[Mapping[str, Any]],
) -> list[Statement]:
    """The statements the sentence text[a:b] cites: those of its innermost overlapping
    citations, in the hover's order."""
    over = [c for c in cits if c[0] < b and a < c[1]]
    ids = [i for group in _innermost(over) for i in group]
    return _ordered(ids, by_id, _matched(claims, a, b))


def sentence_pieces(
    text: str,
    citations: Sequence[Mapping[str, Any]],
    statements: Iterable[Statement],
    *,
    sentences: Sequence[Mapping[str, Any]] | None = None,
    claims: Sequence[Mapping[str, Any]] = (),
    window: tuple[int, int] | None = None,
) -> list[SentencePiece]:
    """The pieces of `text[window]` (default: all of it), in order, covering it exactly: each
    sentence (the record's sentence spans, else engine.grounding.sentences) with the lines of the
    statements its innermost overlapping citations cite, and the text between sentences plain.
    `citations`: the record's [{"span": [a, b], "statements": [ids]}]; `claims`: the guard's
    claim records of the same text (to list first the statements a number matched)."""
    lo, hi = window if window is not None else (0, len(text))
    by_id = {s.id: s for s in statements}
    cits = _spans_of(citations)
    out: list[SentencePiece] = []
    pos = lo
    for a, b in _spans(text, sentences):
        a, b = max(a, pos), min(b, hi)
        if a >= b:
            continue
        if a > pos:
            out.append(SentencePiece(pos, a, text[pos:a]))
        sts = _cited(a, b, cits, by_id, claims)
        lines = tuple(statement_line(s) for s in sts[:MAX_LINES])
        out.append(SentencePiece(a, b, text[a:b], lines, max(0, len(sts) - MAX_LINES)))
        pos = b
    if pos < hi:
        out.append(SentencePiece(pos, hi, text[pos:hi]))
    return out


def _marked(piece: SentencePiece, links: Sequence[NumberLink]) -> str:
    """The piece's text as escaped HTML with its unsupported numbers marked."""
    mine = [
        replace(lk, start=lk.start - piece.start, end=lk.end - piece.start)
        for lk in links
        if piece.start <= lk.start and lk.end <= piece.end
    ]
    return highlighted_html(piece.text, mine)


def pieces_html(
    pieces: Sequence[SentencePiece],
    href: Callable[[SentencePiece], str],
    links: Sequence[NumberLink] = (),
    *,
    link_label: str = "Provenance of these statements",
) -> str:
    """The pieces as one HTML paragraph: a cited sentence wrapped in a span whose popup (hover or
    focus) lists its statement lines and links to `href(piece)`; the rest plain. Everything from
    the data is escaped; `links`: the text's number links (unsupported numbers are marked)."""
    out = []
    for p in pieces:
        body = _marked(p, links)
        if not p.cited:
            out.append(body)
            continue
        # inline elements only (shown as blocks by the style): the popup sits inside a paragraph
        items = "".join(f'<span class="cite-line">{html.escape(line)}</span>' for line in p.lines)
        more = (
            f'<span class="cite-more">and {p.more} more cited '
            f"statement{'s' if p.more != 1 else ''}</span>"
            if p.more
            else ""
        )
        link = (
            f'<a class="cite-link" href="{html.escape(href(p), quote=True)}" target="_blank" '
            f'rel="noopener">{html.escape(link_label)}</a>'
        )
        out.append(
            f'<span class="cite" tabindex="0">{body}'
            f'<span class="cite-pop" role="tooltip">{items}{more}{link}</span></span>'
        )
    return "<p>" + "".join(out) + "</p>"


def summary_citations(
    text: str, record: Mapping[str, Any] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """(citations, sentences) of the final text's record when they belong to `text` (every span
    inside it, each sentence's text the text at its span), else ([], None): a record of another
    text (a repaired draft) shows no hover rather than a wrong one."""
    rec = record or {}
    cits = [c for c in rec.get("citations") or () if isinstance(c, dict) and c.get("span")]
    sents = (rec.get("statements") or {}).get("sentences") if isinstance(rec, Mapping) else None
    n = len(text)
    if not cits or any(not (0 <= int(c["span"][0]) <= int(c["span"][1]) <= n) for c in cits):
        return [], None
    if sents is not None:
        for s in sents:
            a, b = (int(x) for x in s.get("span") or (0, 0))
            if not 0 <= a <= b <= n or ("text" in s and text[a:b] != s["text"]):
                return [], None
    return list(cits), sents


def statement_rows(statements: Iterable[Statement]) -> list[dict[str, Any]]:
    """One row per value of each statement (for the Provenance page's table of a sentence)."""
    rows = []
    for s in statements:
        line = statement_line(s)
        for v in s.values or (None,):
            rows.append(
                {
                    "statement": line,
                    "kind": v.kind if v else "",
                    "value": v.value if v else None,
                    "patient": v.patient if v else s.patient,
                    "visit": v.visit if v else None,
                    "domain": v.domain if v else None,
                    "item": v.item if v else None,
                    "date": v.date if v else None,
                    "source": v.source if v else "",
                }
            )
    return rows


def cited_statements(
    piece_start: int,
    text: str,
    citations: Sequence[Mapping[str, Any]],
    statements: Iterable[Statement],
    sentences: Sequence[Mapping[str, Any]] | None = None,
    claims: Sequence[Mapping[str, Any]] = (),
) -> tuple[SentencePiece | None, list[Statement]]:
    """The sentence starting at `piece_start` and every statement it cites (all of them, in the
    hover's order); (None, []) when no cited sentence starts there."""
    sts = list(statements)
    for p in sentence_pieces(text, citations, sts, sentences=sentences, claims=claims):
        if p.start == piece_start and p.cited:
            by_id = {s.id: s for s in sts}
            return p, _cited(p.start, p.end, _spans_of(citations), by_id, claims)
    return None, []
