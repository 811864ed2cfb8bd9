"""Number links for QA reviewers: every number of a summary linked to the ledger values the
grounding guard matched it to, the fact rows those values come from and the KB documents behind
the facts, with the summary highlighted where a number is unsupported.

A projection of the guard's verdict (Result.claims["final"]: each checked claim with its matched
ledger values): nothing here reads numbers from the text or matches them again. Pure functions,
no Streamlit (the page is dashboard/views/provenance.py).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.types import Fact, FactValue, Result


@dataclass
class NumberLink:
    start: int
    end: int
    text: str
    value: float
    supported: bool
    reason: str = ""
    values: list[FactValue] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    doc_ids: list[str] = field(default_factory=list)
    claim: dict[str, Any] = field(default_factory=dict)  # the guard's claim record


def facts_for_value(fv: FactValue, facts: Sequence[Fact]) -> list[Fact]:
    """Fact rows a ledger value was computed from: same patient, and visit / domain when set."""
    if fv.patient is None:
        return (
            [f for f in facts if fv.domain is None or f.domain == fv.domain]
            if fv.kind in {"max", "min", "mean", "rank"}
            else []
        )
    return [
        f
        for f in facts
        if f.patient == fv.patient
        and (fv.visit is None or f.visit == fv.visit)
        and (fv.domain is None or f.domain == fv.domain)
        and (fv.kind != "item" or fv.item is None or fv.item in f.items)
    ]


def summary_record(verification: dict[str, Any]) -> dict[str, Any] | None:
    """The grounding record of the summary itself (the final agent's), or None when unchecked."""
    per = verification.get("per_agent") or {}
    if isinstance(per.get("final"), dict):
        return per["final"]
    if "passed" in verification:
        return verification
    return None


def grounding_status(verification: dict[str, Any]) -> tuple[str, str]:
    """('passed' | 'failed' | 'unchecked', one line for the badge)."""
    rec = summary_record(verification or {})
    if rec is None or "passed" not in rec:
        return "unchecked", "Grounding check not run"
    n = rec.get("numbers", 0)
    bad = len(rec.get("unsupported") or [])
    if rec["passed"]:
        return "passed", f"Grounding check passed: all {n} numbers supported"
    return "failed", f"Grounding check FAILED: {bad} unsupported number{'s' if bad != 1 else ''}"


def _unsupported_spans(verification: dict[str, Any]) -> dict[tuple[int, int], str]:
    """Spans of unsupported numbers in the summary (the final agent's record only: other agents'
    spans refer to their own narratives)."""
    rec = summary_record(verification or {}) or {}
    out: dict[tuple[int, int], str] = {}
    for u in rec.get("unsupported") or ():
        if not isinstance(u, dict) or u.get("agent") not in (None, "final"):
            continue
        span = u.get("span")
        if span and len(span) == 2:
            out[(int(span[0]), int(span[1]))] = str(u.get("reason", "unsupported"))
    return out


def _link(claim: dict[str, Any], result: Result) -> NumberLink:
    """One checked claim of the summary as a link: the guard's verdict and matched values."""
    role = claim.get("role", "value")
    supported = claim.get("status") in ("correct", "lenient_supported")
    reason = claim.get("reason") or ("" if supported else "unsupported")
    if role != "value":
        reason = f"{role} identifier" + (f"; {claim['reason']}" if claim.get("reason") else "")
    start, end = (int(x) for x in claim["span"])
    return NumberLink(
        start,
        end,
        str(claim.get("text", result.summary[start:end])),
        float(claim.get("value", 0.0)),
        supported,
        reason,
        [FactValue(**v) for v in claim.get("matched") or ()],
        claim=claim,
    )


def link_numbers(result: Result) -> list[NumberLink]:
    """One NumberLink per number of `result.summary` that the guard checked, in text order: a
    projection of the final agent's claim records (Result.claims["final"]), never a re-match."""
    links = [_link(c, result) for c in result.claims.get("final", ())]
    bad = _unsupported_spans(result.verification)
    for lk in links:
        for (s, e), why in bad.items():
            if s < lk.end and lk.start < e:
                lk.supported, lk.reason = False, why
        seen: set[tuple] = set()
        for v in lk.values:
            for f in facts_for_value(v, result.facts):
                k = (f.patient, f.visit, f.domain, f.doc_id)
                if k not in seen:
                    seen.add(k)
                    lk.facts.append(f)
        ids = [v.source for v in lk.values if v.source and v.source[:2] in {"s-", "l-"}]
        ids += [f.doc_id for f in lk.facts]
        lk.doc_ids = list(dict.fromkeys(ids))
    return sorted(links, key=lambda lk: lk.start)


def md_escape(text: str) -> str:
    """Plain text as Streamlit markdown that shows it as written."""
    return _md_escape(text)


def highlighted_markdown(text: str, links: Sequence[NumberLink]) -> str:
    """The summary as Streamlit markdown with unsupported numbers on a red background."""
    out, pos = [], 0
    for lk in sorted((lk for lk in links if not lk.supported), key=lambda lk: lk.start):
        if lk.start < pos:
            continue
        out.append(_md_escape(text[pos : lk.start]))
        out.append(f":red-background[**{_md_escape(text[lk.start : lk.end])}**]")
        pos = lk.end
    out.append(_md_escape(text[pos:]))
    return "".join(out)


def highlighted_html(text: str, links: Sequence[NumberLink]) -> str:
    """The summary as HTML with unsupported numbers marked (for the exported report)."""
    out, pos = [], 0
    for lk in sorted((lk for lk in links if not lk.supported), key=lambda lk: lk.start):
        if lk.start < pos:
            continue
        out.append(html.escape(text[pos : lk.start]))
        out.append(
            f'<mark class="unsupported" title="{html.escape(lk.reason)}">'
            f"{html.escape(text[lk.start : lk.end])}</mark>"
        )
        pos = lk.end
    out.append(html.escape(text[pos:]))
    return "".join(out).replace("\n", "<br>\n")


def _md_escape(s: str) -> str:
    return re.sub(r"([\\`*_\[\]$<>#|~])", r"\\\1", s)


def links_table(links: Sequence[NumberLink]) -> list[dict[str, Any]]:
    """Flat rows for display / CSV: one row per (number, ledger value)."""
    rows = []
    for i, lk in enumerate(links, start=1):
        vals = lk.values or [None]
        for v in vals:
            rows.append(
                {
                    "#": i,
                    "number": lk.text,
                    "position": f"{lk.start}-{lk.end}",
                    "supported": lk.supported,
                    "reason": lk.reason,
                    "kind": v.kind if v else "",
                    "label": v.label if v else "",
                    "patient": v.patient if v else None,
                    "visit": v.visit if v else None,
                    "domain": v.domain if v else None,
                    "source": v.source if v else "",
                    "fact_rows": "; ".join(
                        f"P{f.patient} v{f.visit} {f.domain}={f.score}" for f in lk.facts
                    ),
                    "doc_ids": ", ".join(lk.doc_ids),
                }
            )
    return rows
