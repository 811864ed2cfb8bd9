"""Provenance for QA reviewers: every number in a summary linked to the ledger values it may claim,
the fact rows those values come from and the KB documents behind the facts.

Uses the grounding module's claim extraction (`engine.grounding.claims.extract_claims`) when it is
installed; otherwise matches each number token to ledger values by value, narrowed to the patients
named in the same sentence. Numbers listed as unsupported in the verification record are marked.
Pure functions, no Streamlit.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.types import Fact, FactValue, Result

NUMBER_RE = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?%?")
PATIENT_RE = re.compile(r"\b[Pp]atients?\s+((?:\d+(?:\s*(?:,|and|&)\s*)?)+)")
SENTENCE_RE = re.compile(r"[^.!?\n]+(?:[.!?](?!\d)|\n|$)")


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


def _to_float(tok: str) -> float | None:
    try:
        return float(tok.rstrip("%"))
    except ValueError:
        return None


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


def _sentence_patients(text: str, pos: int) -> set[int]:
    for m in SENTENCE_RE.finditer(text):
        if m.start() <= pos < m.end():
            out: set[int] = set()
            for pm in PATIENT_RE.finditer(m.group()):
                out |= {int(x) for x in re.findall(r"\d+", pm.group(1))}
            return out
    return set()


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


def _matching_values(cl: Any, ledger: Sequence[FactValue]) -> list[FactValue]:
    """Ledger values consistent with a claim's value and context (kind, patient, visit, domain)."""

    def ok(v: FactValue) -> bool:
        tol = max(v.tolerance, 0.5 * 10 ** -int(getattr(cl, "decimals", 0) or 0), 1e-9)
        if abs(abs(v.value) - abs(cl.value)) > tol:
            return False
        if cl.patient is not None and v.patient not in (None, cl.patient):
            return False
        if cl.visit is not None and v.visit is not None and v.visit != cl.visit:
            return False
        return not (cl.domain and v.domain and v.domain != cl.domain)

    cands = [v for v in ledger if ok(v)]
    kind = getattr(cl, "kind", None)
    kinds = {"change": {"delta", "cumulative"}, "pair": {"delta", "cumulative"}}.get(
        kind or "", {kind}
    )
    same = [v for v in cands if v.kind in kinds]
    return same or cands


def _from_claims(result: Result) -> list[NumberLink] | None:
    try:
        from engine.grounding.claims import extract_claims
    except ImportError:
        return None
    try:
        claims = extract_claims(result.summary, result.ledger, result.plan)
    except Exception:  # noqa: BLE001 - fall back to value matching, never hide the summary
        return None
    links = []
    for c in claims:
        vals = (
            _matching_values(c, result.ledger)
            if c.role == "value"
            else [
                v
                for v in result.ledger
                if v.kind == c.role
                and abs(v.value - c.value) < 1e-9
                and (c.patient is None or v.patient in (None, c.patient))
            ]
        )
        reason = c.reason or ("" if c.supported else "unsupported")
        if c.role != "value":
            reason = f"{c.role} identifier" + (f"; {c.reason}" if c.reason else "")
        lk = NumberLink(c.start, c.end, c.text, float(c.value), bool(c.supported), reason, vals)
        if c.role == "date" and getattr(c, "date", None):
            lk.facts = [
                f
                for f in result.facts
                if f.date == c.date and (c.patient is None or f.patient == c.patient)
            ]
        links.append(lk)
    return links


def link_numbers(result: Result) -> list[NumberLink]:
    """One NumberLink per number in `result.summary`, in text order."""
    text = result.summary
    links = _from_claims(result)
    if links is None:
        links = []
        for m in NUMBER_RE.finditer(text):
            x = _to_float(m.group())
            if x is None:
                continue
            cands = [
                v for v in result.ledger if abs(abs(v.value) - abs(x)) <= max(v.tolerance, 1e-9)
            ]
            named = _sentence_patients(text, m.start())
            narrowed = (
                [v for v in cands if v.patient is None or v.patient in named] if named else cands
            )
            cands = narrowed or cands
            links.append(
                NumberLink(
                    m.start(),
                    m.end(),
                    m.group(),
                    x,
                    bool(cands),
                    "" if cands else "no fact has this value",
                    cands,
                )
            )
    bad = _unsupported_spans(result.verification)
    for lk in links:
        for (s, e), why in bad.items():
            if s < lk.end and lk.start < e:
                lk.supported, lk.reason = False, why
        seen = {(f.patient, f.visit, f.domain, f.doc_id) for f in lk.facts}
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
