"""One stated value said to hold for several patients ("the PDQ-8 total was 5 in both patient 50
and patient 58", "scored 12 in patients 3 and 8", "patients 3 and 8 both scored 12"): the claim reader binds the number to one
patient (the first named), so each patient the phrase lists must hold the same value for the same
series and visit. A value of a kind other than a score or an item rating, or a patient whose
series has no value at that visit, leaves the sentence unverifiable (it fails)."""

from __future__ import annotations

import re

from engine.grounding.claim import Claim
from engine.grounding.facts_view import FactsView, num_text
from engine.grounding.sentence_scope import SentenceCtx
from engine.grounding.sentence_verdict import SentenceVerdict
from engine.types import FactValue

_PID = r"#?(?P<first>\d+)"
_WHO = r"(?:patient|participant|subject)"
#: "in both patient 50 and patient 58", "for patients 3 and 8", "in both patients"; not "14 in
#: patient 30 and 31 in patient 40" (a second value, of the second patient)
_FOR_MANY = re.compile(
    r"\s*(?:points?\s+)?(?:in|for)\s+"
    rf"(?:(?:both\s+{_WHO}s?|{_WHO}s|both|{_WHO}(?=\s+#?\d+\s*(?:,|and|&)\s*{_WHO}))\s+{_PID}"
    rf"(?P<rest>(?:\s*(?:,|and|&)\s*(?:and\s+)?(?:{_WHO}\s+)?#?\d+)+)"
    rf"(?!\s+(?:in|for|at)\s)"
    rf"|(?P<both>both|the\s+two)(?:\s+{_WHO}s)?\b)",
    re.I,
)
#: "patients 59 and 10 both scored 4", "both patients were rated 2": the group before the value,
#: with no other number or clause mark between
_MANY_BEFORE = re.compile(
    rf"\b(?:(?P<both>both|the\s+two)\s+{_WHO}s|{_WHO}s\s+{_PID}"
    r"(?P<rest>(?:\s*(?:,|and|&)\s*#?\d+)+)\s+(?:both|each|all))\b[^.;,:\d]*$",
    re.I,
)
#: the value's own patient after it ("16 in patient 7 and 12 in patient 40"): not a shared value
_OWN_PATIENT = re.compile(rf"\s*(?:points?\s+)?(?:in|for)\s+{_WHO}\s+#?\d", re.I)
_ID = re.compile(r"\d+")


def check_shared_values(
    ctx: SentenceCtx, view: FactsView, claims: list[Claim], v: SentenceVerdict
) -> int:
    """The values of the sentence said to hold for several patients; returns how many held
    (failures into `v`)."""
    n = 0
    for c in claims:
        if c.role != "value" or not (ctx.s0 <= c.start < ctx.s1):
            continue
        m = _FOR_MANY.match(ctx.text, c.end, ctx.s1)
        if m is not None:
            said = f"{c.text}{m.group(0)}"
        else:
            m = _MANY_BEFORE.search(ctx.text, ctx.clause(c.start)[0], c.start)
            if m is None or _OWN_PATIENT.match(ctx.text, c.end, ctx.s1):
                continue
            said = ctx.text[m.start() : c.end]
        patients = _listed(m, view)
        if not patients:
            v.fail("patient", f"'{said}': cannot tell which patients it names")
            continue
        n += _check_each(said, c, patients, view, v)
    return n


def _listed(m: re.Match[str], view: FactsView) -> list[int]:
    """The patients the phrase names ("both" = the facts' two patients, when they hold two)."""
    if m.group("both") and not m.group("first"):
        return list(view.patients) if len(view.patients) == 2 else []
    return [int(m.group("first")), *(int(x) for x in _ID.findall(m.group("rest") or ""))]


def _same_fact(view: FactsView, f: FactValue, p: int) -> FactValue | None:
    """The value of the series and visit of `f` for patient `p` (None when there is none)."""
    if f.visit is None:
        return None
    if f.kind == "score" and f.domain:
        return view.scores.get((p, f.domain), {}).get(int(f.visit))
    if f.kind == "item" and f.item:
        return view.items.get((p, f.item), {}).get(int(f.visit))
    return None


def _check_each(
    said: str, c: Claim, patients: list[int], view: FactsView, v: SentenceVerdict
) -> int:
    """1 when each listed patient holds the claim's value for its series and visit."""
    bound = [f for f in c.matched if f.kind in ("score", "item")] if c.supported else []
    if not bound:
        v.fail("number", f"'{said}': the value is not verified for each patient named")
        return 0
    f0 = bound[0]
    for p in patients:
        got = _same_fact(view, f0, p)
        if got is None:
            v.fail("number", f"'{said}' (patient {p}): no such value at visit {f0.visit}")
            return 0
        if float(got.value) != float(c.value):
            v.fail(
                "number",
                f"'{said}' (patient {p}): {f0.item or f0.domain} at visit {f0.visit} is "
                f"{num_text(got.value)}, not {c.text}",
            )
            return 0
    v.facts.append({"assertion": "shared_value", "word": said, "patients": patients})
    return 1
