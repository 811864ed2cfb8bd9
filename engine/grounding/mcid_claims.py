"""Claims that one change is or is not beyond its MCID, checked with the engine's one MCID rule
(engine.clinical.series.classify, through FactsView.label), for the statement checker:

- "an improvement that exceeded the minimal clinically important difference", "well beyond the
  2.51-point MCID for worsening", "larger than the 3.25-point MCID for improvement": the change
  must be labelled improved (or worsened) by the rule;
- "a change that did not reach the MCID for improvement", "short of the MCID": it must not be.

The change is the sentence's subject (a domain score: only domains carry MCIDs) over the visit span
of the sentence (sentence_scope.visit_span), for its patient. The direction is the one the claim
names ("for improvement"), else the nearest direction word before it ("fell", "worsened"), else
either. A claim after a quantifier ("no part reached its MCID") or in a counterfactual ("would
read better beyond the MCID") is not one about one change, and is not read. A stated MCID value is a number, checked by the claim reader against the ledger's
thresholds. Claims over every change ("each change passed its MCID") are series_claims.py's.
"""

from __future__ import annotations

import re

from engine.grounding import literal_scan
from engine.grounding.facts_view import FactsView, num_text
from engine.grounding.sentence_scope import SentenceCtx, patients_for, subjects_of, visit_span
from engine.grounding.sentence_verdict import SentenceVerdict

_N = r"\d+(?:\.\d+)?"
#: "exceeded the minimal clinically important difference", "did not reach the 2.5-point MCID"
MCID_CLAIM = re.compile(
    r"\b(?P<neg>(?:did|does|do|has|have|had|was|were|is|are)\s+not\s+|didn't\s+|doesn't\s+|"
    r"failed\s+to\s+|never\s+)?"
    r"(?:(?P<above>exceed\w*|beyond|above|surpass\w*|reach\w*|met|meet\w*|pass\w*|cross\w*|over|"
    r"(?:larger|greater|bigger|more)\s+than)|(?P<below>short\s+of|(?:smaller|less)\s+than))\s+"
    r"(?:the|its|a|their)\s+(?:reference\s+|own\s+|published\s+)?"
    rf"(?:(?P<v0>{_N})\s*-?\s*points?\s+)?"
    r"(?:(?P<better0>improvement)\s+|(?P<worse0>worsening|deterioration)\s+)?"
    r"(?:MCID|minimal\s+clinically\s+important\s+difference)\b"
    rf"(?:\s+of\s+(?P<v1>{_N})(?:\s+points?)?)?"
    r"(?:\s+for\s+(?:(?P<better>improvement)|(?P<worse>worsening|deterioration)))?"
    rf"(?:\s+of\s+(?P<v2>{_N})(?:\s+points?)?)?",
    re.I,
)
#: "each change passed its MCID", "neither change reaches the MCID", "no part reached its own
#: MCID": a claim over several changes (series_claims.py reads the every-change ones)
_EVERY_BEFORE = re.compile(r"\b(?:each|every|all|both|neither|none|no|any)\b[^.;]{0,60}$", re.I)
#: "with it, ADL would read better beyond the reference MCID": a counterfactual asserts nothing
_HYPOTHETICAL_BEFORE = re.compile(r"\b(?:would|could|might|if)\b[^.;,]{0,40}$", re.I)
_WORSE = re.compile(r"\b(?:worsen\w*|rose|risen|increas\w*|climb\w*|deteriorat\w*)\b", re.I)
_BETTER = re.compile(r"\b(?:improv\w*|fell|fallen|decreas\w*|dropp\w*|declin\w*)\b", re.I)


def check_mcid_claims(
    ctx: SentenceCtx, view: FactsView, only_patient: int | None, v: SentenceVerdict
) -> int:
    """The one-change MCID claims of the sentence; returns how many held (failures into `v`)."""
    n = 0
    for m in literal_scan.finditer(MCID_CLAIM, ctx.text, ctx.low, ctx.s0, ctx.s1):
        before = ctx.text[ctx.s0 : m.start()]
        if _EVERY_BEFORE.search(before) or _HYPOTHETICAL_BEFORE.search(before):
            continue
        n += _check_one(ctx, view, m, only_patient, v)
    return n


def mcid_claim_spans(ctx: SentenceCtx) -> list[tuple[int, int]]:
    """Where the sentence's MCID claims are (a comparative in one is no comparison of values)."""
    return [m.span() for m in literal_scan.finditer(MCID_CLAIM, ctx.text, ctx.low, ctx.s0, ctx.s1)]


def _wanted(ctx: SentenceCtx, m: re.Match[str]) -> tuple[str, ...]:
    """The labels of the direction the claim names (classify's labels)."""
    if m.group("better") or m.group("better0"):
        return ("improved",)
    if m.group("worse") or m.group("worse0"):
        return ("worsened",)
    before = ctx.text[ctx.s0 : m.start()]
    words = [(w.start(), "improved") for w in _BETTER.finditer(before)]
    words += [(w.start(), "worsened") for w in _WORSE.finditer(before)]
    return (max(words)[1],) if words else ("improved", "worsened")


def _stated_mcid(view: FactsView, dom: str, m: re.Match[str]) -> str:
    """Why the MCID value the claim states is not its named direction's ("the MCID for
    improvement of 4.63 points" of a scale whose improvement MCID is 3.25); "" when it is, or
    when the claim names no direction or no value (the claim reader checks a bare value)."""
    said = m.group("v0") or m.group("v1") or m.group("v2")
    better = m.group("better") or m.group("better0")
    side = (
        "improvement" if better else "worsening" if m.group("worse") or m.group("worse0") else None
    )
    ref = view.mcid.get(dom, {}).get(side or "")
    if said is None or ref is None or abs(float(said)) == abs(ref):
        return ""
    return f"the MCID for {side} is {num_text(abs(ref))}, not {said}"


def _check_one(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    ca, cb = ctx.clause(m.start())
    subjects = [s for s in subjects_of(ctx, ca, cb, m.start()) if s[0] and not s[1]]
    patients = patients_for(ctx, m.start(), only_patient)
    said = m.group(0)
    if not subjects or not patients:
        v.fail("direction", f"'{said}': cannot tell which change it describes")
        return 0
    wanted = _wanted(ctx, m)
    beyond = bool(m.group("above")) != bool(m.group("neg"))
    dom = subjects[-1][0]
    shown = []
    for p in patients:
        series, what = view.series(p, dom, None)
        span = visit_span(ctx, ctx.s0, ctx.s1, series) if series else None
        if not series or span is None or span[0] not in series or span[1] not in series:
            v.fail("direction", f"'{said}' ({dom}, patient {p}): no change at the visits it spans")
            return 0
        if view.mcid_of(dom) is None:
            v.fail("direction", f"'{said}' ({what}, patient {p}): the facts hold no MCID for it")
            return 0
        stated = _stated_mcid(view, dom, m)
        if stated:
            v.fail("direction", f"'{said}' ({what}): {stated}")
            return 0
        fa, fb = series[span[0]], series[span[1]]
        label = view.label(dom, float(fb.value) - float(fa.value))
        if (label in wanted) != beyond:
            v.fail(
                "direction",
                f"'{said}' ({what}, patient {p}): {num_text(fa.value)} at visit {span[0]} to "
                f"{num_text(fb.value)} at visit {span[1]} is '{label}' by its MCID",
            )
            return 0
        shown += [fa, fb]
    v.facts.append(
        {
            "assertion": "mcid",
            "word": said,
            "values": [
                {"value": f.value, "patient": f.patient, "visit": f.visit, "domain": f.domain}
                for f in shown
            ],
        }
    )
    return 1
