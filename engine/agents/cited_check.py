"""The record of a model's cited text: cited sentences by lookup, the others by the prose checker.

A sentence with at least one citation (engine.agents.cited) is checked by lookup only, never
read by the prose checker:
- its numbers must be the cited statements' values or identifiers (patient after "patient",
  visit after "visit", session dates): the record of the plain text with its citations, looked
  up like the facts backend's (engine.agents.rendered_record);
- its judgement words must be the cited statements' labels and its item codes their subjects
  (engine.agents.label_words);
- it must be finished (a full stop: a clause cut off by the length limit fails) and write no
  percentage (no statement states one);
- a marker naming a statement the request did not give fails it ("cites a statement it was
  not given").
The sentences without a citation are joined into one text, in order and with their paragraph
breaks, and that text goes through the prose checker (engine.grounding.guard.check_prose:
numbers and sentences) as any model text does. The record has the shape the dashboard and the evaluation read (claims, unsupported, statements.sentences with a status
each, coverage, citations with spans into the released text), "checked_by": "lookup+prose" and
"cited": the share of sentences checked by lookup.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.agents.cited import CitedText
from engine.agents.label_words import item_disagreements, label_disagreements
from engine.agents.rendered_record import rendered_record
from engine.clinical.statements import Statements
from engine.grounding.guard import StatementSpec, check_prose
from engine.grounding.ledger_index import LedgerIndex
from engine.metrics import in_order

NOT_GIVEN = "cites a statement it was not given"

ProseCheck = Callable[[str], dict[str, Any]]


def prose_checker(
    idx: LedgerIndex, plan_patients: Sequence[int], spec: StatementSpec
) -> ProseCheck:
    """The prose checker's record of a text (numbers and sentences, as engine.grounding.guard
    checks a model text)."""

    def check(text: str) -> dict[str, Any]:
        return check_prose(text, idx, plan_patients, spec)

    return check


@dataclass(frozen=True)
class Segment:
    """An uncited sentence copied into the prose checker's text: where it starts there and in
    the released text, and its length."""

    sub: int
    orig: int
    length: int


def _shift(span: Sequence[int] | None, segs: Sequence[Segment]) -> list[int] | None:
    """A span of the prose checker's text as a span of the released text."""
    if span is None:
        return None
    for g in segs:
        if g.sub <= span[0] <= g.sub + g.length:
            d = g.orig - g.sub
            return [span[0] + d, span[1] + d]
    return None


def _uncited_text(text: str, sents: Sequence[dict[str, Any]]) -> tuple[str, list[Segment]]:
    """The uncited sentences joined in order: a sentence right after the previous one keeps
    the text between them, others start a new paragraph."""
    parts: list[str] = []
    segs: list[Segment] = []
    n, last_end = 0, None
    for s in sents:
        a, b = s["span"]
        if parts:
            gap = text[last_end:a] if last_end is not None and not text[last_end:a].strip() else ""
            sep = gap if gap else "\n\n"
            parts.append(sep)
            n += len(sep)
        segs.append(Segment(n, a, b - a))
        parts.append(text[a:b])
        n += b - a
        last_end = b
    return "".join(parts), segs


#: a sentence's end: '.', '!' or '?' (a cited sentence without one was cut off mid-clause)
_FINISHED = re.compile(r"[.!?][\"')\]]*$")
#: a number written as a percentage (no statement states one: scores, changes and the PDQ-8
#: Summary Index, written "SI", are not percentages)
_PERCENT = re.compile(r"\d(?:\.\d+)?\s?(?:%|per ?cent\b)", re.I)


def _form_reasons(sentence: str) -> list[str]:
    """What a cited sentence's form says against it, whatever it cites: cut off, or a
    percentage."""
    out = []
    if not _FINISHED.search(sentence.strip()):
        out.append("the sentence is unfinished (no full stop)")
    if _PERCENT.search(sentence):
        out.append("a percentage: the cited statements state none")
    return out


def _cited_verdicts(cited: CitedText, sts: Statements, sents: list[dict[str, Any]]) -> list[dict]:
    """The label, item, form and stray reasons of each cited sentence (added to its verdict);
    the unsupported entries they make."""
    r = cited.rendered
    extra: list[dict[str, Any]] = []
    for s in sents:
        if not s["cited"]:
            continue
        a, b = s["span"]
        reasons: list[str] = _form_reasons(r.text[a:b])
        for j in s["citations"]:
            c = r.citations[j]
            clause = r.text[max(a, c.start) : min(b, c.end)]
            reasons += label_disagreements(clause, [sts.get(i) for i in c.ids])
            reasons += item_disagreements(clause, [sts.get(i) for i in c.ids])
        for st in cited.strays:
            if a <= st.pos < b:
                reasons.append(f"{NOT_GIVEN} ({', '.join(st.ids)})")
        if reasons:
            s["status"] = "unsupported"
            s["reasons"] = list(s["reasons"]) + reasons
            extra += [
                {
                    "span": [a, b],
                    "text": r.text[a:b],
                    "reason": x,
                    "context": "citation",
                    "expected": [],
                }
                for x in reasons
            ]
    return extra


def _mark_cited(cited: CitedText, sents: list[dict[str, Any]]) -> None:
    for s in sents:
        a, b = s["span"]
        s["cited"] = bool(s["citations"]) or any(a <= st.pos < b for st in cited.strays)
        s["checked_by"] = "lookup" if s["cited"] else "prose"


def _inside(span: Sequence[int] | None, spans: Sequence[Sequence[int]]) -> bool:
    return span is not None and any(a <= span[0] < b for a, b in spans)


def _prose_part(
    text: str, uncited: list[dict[str, Any]], prose: ProseCheck, whole: bool
) -> tuple[dict[str, Any] | None, list[Segment]]:
    """The prose checker's record of the uncited sentences (None when every sentence cites),
    its spans shifted into the released text; with `whole` (no sentence cites) the record of
    the text itself, as for a text without citable statements."""
    if whole:
        return prose(text), [Segment(0, 0, len(text))]
    if not uncited:
        return None, []
    sub, segs = _uncited_text(text, uncited)
    rec = prose(sub)
    for c in rec["claims"]:
        c["span"] = _shift(c["span"], segs)
    for u in rec["unsupported"]:
        u["span"] = _shift(u["span"], segs)
    for s in rec["statements"]["sentences"]:
        s["span"] = _shift(s["span"], segs)
    for s in rec["statements"]["removable"]:
        s["span"] = _shift(s["span"], segs)
    return rec, segs


def _sentence_list(
    cited_sents: list[dict[str, Any]], prose_rec: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The verdicts in text order: the lookup's for the cited sentences, the prose checker's
    for the others."""
    out = [s for s in cited_sents if s["cited"]]
    if prose_rec is not None:
        for s in prose_rec["statements"]["sentences"]:
            s = dict(s)
            s["cited"] = False
            s["checked_by"] = "prose"
            s.setdefault("citations", [])
            out.append(s)
    return sorted(out, key=lambda s: (s["span"] or [0])[0])


def _coverage(lookup: dict[str, Any], prose_rec: dict[str, Any] | None) -> dict[str, Any]:
    """The coverage detail: the lookup's (key statements stated in a citation of them), or
    the prose checker's of the uncited sentences when that one is higher."""
    cov = lookup["statements"]["coverage_detail"]
    if prose_rec is not None:
        pc = prose_rec["statements"]["coverage_detail"]
        if pc.get("value", 0.0) > cov["value"]:
            # the ids of the prose checker's missing facts, by the lookup's descriptions
            by_text = dict(zip(cov.get("missing", []), cov.get("missing_ids", []), strict=False))
            ids = [by_text[m] for m in pc.get("missing", []) if m in by_text]
            return {**pc, "missing_ids": ids}
    return cov


def cited_record(
    cited: CitedText,
    sts: Statements,
    prose: ProseCheck,
    *,
    agent: str,
    plan_patients: Sequence[int] = (),
    coverage_min: float = 1.0,
    digest: bool = False,
) -> dict[str, Any]:
    """The record of a cited text (see the module docstring)."""
    r = cited.rendered
    lookup = rendered_record(
        r, sts, agent=agent, plan_patients=plan_patients, coverage_min=coverage_min, digest=digest
    )
    sents = [dict(s) for s in lookup["statements"]["sentences"]]
    _mark_cited(cited, sents)
    cited_spans = [s["span"] for s in sents if s["cited"]]
    extra = _cited_verdicts(cited, sts, sents)
    uncited = [s for s in sents if not s["cited"]]
    prose_rec, _segs = _prose_part(r.text, uncited, prose, len(uncited) == len(sents))
    claims = [c for c in lookup["claims"] if _inside(c["span"], cited_spans)]
    unsupported = [
        u
        for u in lookup["unsupported"]
        if (u["span"] is None and prose_rec is None) or _inside(u["span"], cited_spans)
    ]
    unsupported += extra
    if prose_rec is not None:
        claims += prose_rec["claims"]
        unsupported += prose_rec["unsupported"]
    claims.sort(key=lambda c: (c["span"] or [0])[0])
    all_sents = _sentence_list(sents, prose_rec)
    return _assemble(r.text, lookup, prose_rec, claims, unsupported, all_sents, coverage_min)


def _assemble(
    text: str,
    lookup: dict[str, Any],
    prose_rec: dict[str, Any] | None,
    claims: list[dict[str, Any]],
    unsupported: list[dict[str, Any]],
    sents: list[dict[str, Any]],
    coverage_min: float,
) -> dict[str, Any]:
    """One record from the lookup's and the prose checker's parts."""
    cov = _coverage(lookup, prose_rec)
    removable = [
        {"text": s["text"], "span": s["span"], "reasons": s["reasons"], "cited": s["cited"]}
        for s in sents
        if s["status"] == "unsupported"
    ]
    n = len(sents)
    n_cited = sum(1 for s in sents if s["cited"])
    passed = not removable and cov["value"] >= coverage_min and bool(text.strip())
    wrong = sum(1 for c in claims if c["status"] != "correct")
    visits = [int(c["value"]) for c in claims if c.get("role") == "visit"]
    order = [lookup["temporal_fidelity"]]
    if prose_rec is not None:
        order.append(prose_rec["temporal_fidelity"])
    return {
        "numbers": len(claims),
        "numeric_tokens": lookup["numeric_tokens"],
        "claims_with_context": len(claims),
        "numbers_without_context": 0 if prose_rec is None else prose_rec["numbers_without_context"],
        "claim_accuracy": (len(claims) - wrong) / len(claims) if claims else 1.0,
        "unsupported": unsupported,
        "fact_precision": (len(claims) - wrong) / len(claims) if claims else 1.0,
        "hallucination_rate": wrong / len(claims) if claims else 0.0,
        "temporal_fidelity": min(order),
        "temporal_fidelity_strict": in_order(visits),
        "visit_mentions": visits,
        "claims": claims,
        "statements": {
            "passed": passed,
            "coverage": cov["value"],
            "coverage_detail": cov,
            "sentences": sents,
            "sentences_total": n,
            "unsupported_sentences": len(removable),
            "unsupported_sentence_rate": len(removable) / n if n else 0.0,
            "removable": removable,
        },
        "coverage": cov["value"],
        "unsupported_sentences": len(removable),
        "sentences_total": n,
        "statements_passed": passed,
        "checked_by": "lookup+prose" if prose_rec is not None else "lookup",
        "citations": lookup["citations"],
        "cited": {"sentences": n_cited, "total": n, "share": n_cited / n if n else 0.0},
    }
