"""Summary claims over a whole series or over the changes a text states, checked against the
ledger (the statement checker's word assertions, run by word_checks.py):

- every step of a series: "rose at every visit", "fell at each assessment", "increased with each
  visit", "never fell", "never rose". Each consecutive pair of the subject's series within the
  visits the sentence states (the whole selected series when it states none) must move the way
  the claim says ("rose": up at every step; "never fell": no step down); one pair that breaks it
  contradicts the sentence.
- the MCID of every change: "Each change is at or above its MCID", "every change passed its
  MCID", "all three parts worsened beyond their MCID", "all changes stayed below their MCID". The
  changes in scope are the subjects of the sentence over its visit span (a sentence that names
  none: the previous sentence's), or the three UPDRS parts for "all three parts" / "every part";
  each is judged by the engine's one MCID rule (engine.clinical.series.classify, through
  FactsView.label): one change on the other side of its MCID, or a subject without an MCID,
  fails the sentence; "never changed by a clinically meaningful amount from baseline": the
  change from the series' first value to each later one is stable by that rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from engine.grounding import literal_scan
from engine.grounding.claim import Claim
from engine.grounding.facts_view import FactsView, num_text
from engine.grounding.sentence_scope import (
    ALL_PARTS,
    UPDRS_PARTS,
    SentenceCtx,
    patients_for,
    subjects_of,
    visit_span,
)
from engine.grounding.sentence_verdict import SentenceVerdict, assertion_record
from engine.grounding.sentences import split_sentences
from engine.types import FactValue

Subject = tuple[str | None, frozenset[str] | None, str]

_UP = r"rose|risen|increased|worsened|climbed|went\s+up"
_DOWN = r"fell|fallen|decreased|improved|dropped|went\s+down"
#: "rose at every visit", "increased with each assessment", "fell at each successive visit"
_EVERY_STEP = re.compile(
    rf"\b(?:({_UP})|({_DOWN}))\s+(?:steadily\s+|further\s+)?(?:at|with|on|over)\s+"
    r"(?:every|each)\s+(?:subsequent\s+|successive\s+|following\s+|later\s+|single\s+)?"
    r"(?:visit|assessment|follow-up(?:\s+visit)?)s?\b",
    re.I,
)
#: "never fell", "has never risen": no step the other way ("never rose above 2" is a bound on
#: the values, series_bounds.py)
_NEVER = re.compile(
    rf"\bnever\s+(?:once\s+)?(?:({_UP})|({_DOWN})|rise|increase|worsen|fall|decrease|improve"
    r"|drop)\b(?!\s+(?:above|over|beyond|below|under|(?:higher|lower|more|less)\s+than)\s+\d)",
    re.I,
)
_NEVER_UP_BARE = re.compile(r"rise|increase|worsen", re.I)

_MCID_SUMMARY = re.compile(
    r"\b(?:each|every|all|both)\s+(?:of\s+the\s+|the\s+)?(?:(?:two|three|four|\d)\s+)?"
    r"(?:changes?|parts?|domains?|scores?)\b(?:\s+of\s+the\s+UPDRS)?"
    r"(?P<mid>[^.;]{0,40}?)\s*"
    r"(?:(?P<above>at\s+or\s+above|above|beyond|exceed\w*|pass\w*|reach\w*|met|meet\w*|"
    r"cross\w*|over)|(?P<below>below|under|within|short\s+of))\s+(?:its|their|the)\s+"
    r"(?:own\s+|respective\s+)?(?:MCIDs?|minimal clinically important differences?)",
    re.I,
)
#: "never changed by a clinically meaningful amount from baseline": no visit's change from the
#: series' first value reaches the MCID
_NEVER_MEANINGFUL = re.compile(
    r"\bnever\s+(?:once\s+)?(?:changed|moved|shifted|differed)\s+(?:by\s+)?(?:a\s+|an\s+)?"
    r"clinically\s+(?:meaningful|important|significant|relevant)\s+(?:amount|degree|margin)?\s*"
    r"(?:from|since|relative\s+to|compared\s+with)\s+(?:the\s+)?baseline\b",
    re.I,
)
_WORSE_WORD = re.compile(r"\b(?:worsen\w*|rose|increased|deteriorat\w*)\b", re.I)
_BETTER_WORD = re.compile(r"\b(?:improv\w*|fell|decreased|dropped)\b", re.I)


def check_series_claims(
    ctx: SentenceCtx,
    view: FactsView,
    claims: list[Claim],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """The every-step and every-change claims of the sentence; returns how many held (failures
    go into `v`)."""
    del claims  # the claims are the reader's; these claims are about the series themselves
    n = 0
    for m in literal_scan.finditer(_EVERY_STEP, ctx.text, ctx.low, ctx.s0, ctx.s1):
        rule = "up" if m.group(1) else "down"
        n += _check_steps(ctx, view, m, rule, only_patient, v)
    for m in literal_scan.finditer(_NEVER, ctx.text, ctx.low, ctx.s0, ctx.s1):
        up = bool(m.group(1)) or (not m.group(2) and _NEVER_UP_BARE.search(m.group(0)))
        n += _check_steps(ctx, view, m, "not_up" if up else "not_down", only_patient, v)
    for m in literal_scan.finditer(_MCID_SUMMARY, ctx.text, ctx.low, ctx.s0, ctx.s1):
        n += _check_mcid_summary(ctx, view, m, only_patient, v)
    for m in literal_scan.finditer(_NEVER_MEANINGFUL, ctx.text, ctx.low, ctx.s0, ctx.s1):
        n += _check_never_meaningful(ctx, view, m, only_patient, v)
    return n


def _check_never_meaningful(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """ "never changed by a clinically meaningful amount from baseline": the change from the
    series' first value (the instrument's baseline) to each later one is stable by the engine's
    one MCID rule (FactsView.label); a subject without an MCID (an item) fails as unverifiable."""
    ca, cb = ctx.clause(m.start())
    subjects = [s for s in subjects_of(ctx, ca, cb, m.start()) if s[0] and not s[1]]
    patients = patients_for(ctx, m.start(), only_patient)
    if not subjects or not patients or view.mcid_of(subjects[0][0]) is None:
        v.fail("direction", f"'{m.group(0)}': cannot tell which MCID-rated series it describes")
        return 0
    dom = subjects[0][0]
    for p in patients:
        series, what = view.series(p, dom, None)
        if not series or len(series) < 2:
            v.fail("direction", f"'{m.group(0)}' (patient {p}): fewer than two assessments")
            return 0
        visits = sorted(series)
        base = series[visits[0]]
        for x in visits[1:]:
            label = view.label(dom, _value(series[x]) - _value(base))
            if label != "stable":
                v.fail(
                    "direction",
                    f"'{m.group(0)}' ({what}, patient {p}): {num_text(base.value)} at visit "
                    f"{base.visit} to {num_text(series[x].value)} at visit {x} ({label})",
                )
                return 0
        v.facts.append(
            assertion_record("series", m.group(0), p, series, None, list(series.values()))
        )
    return 1


_STEP_OK = {
    "up": lambda d: d > 0,
    "down": lambda d: d < 0,
    "not_up": lambda d: d <= 0,
    "not_down": lambda d: d >= 0,
}
_STEP_WORD = {"up": "a rise", "down": "a fall", "not_up": "no rise", "not_down": "no fall"}


def _check_steps(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    rule: str,
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """One every-step claim against each patient's and subject's series: 1 per series it fits."""
    ca, cb = ctx.clause(m.start())
    subjects = subjects_of(ctx, ca, cb, m.start())
    patients = patients_for(ctx, m.start(), only_patient)
    if not subjects or not patients:
        v.fail("direction", f"'{m.group(0)}': cannot tell which patient and series it describes")
        return 0
    n = 0
    for p in patients:
        for dom, items, _phrase in subjects:
            series, what = view.series(p, dom, items)
            if not series:
                continue
            span = visit_span(ctx, ca, cb, series)
            steps = _steps(series, span)
            if not steps:
                v.fail("direction", f"'{m.group(0)}' ({what}, patient {p}): fewer than two visits")
                continue
            broken = [(a, b) for a, b in steps if not _STEP_OK[rule](_value(b) - _value(a))]
            if broken:
                a, b = broken[0]
                v.fail(
                    "direction",
                    f"'{m.group(0)}' ({what}, patient {p}): needs {_STEP_WORD[rule]} at every "
                    f"step; the facts say {num_text(a.value)} at visit {a.visit} to "
                    f"{num_text(b.value)} at visit {b.visit}",
                )
                continue
            vals = [steps[0][0], *(b for _a, b in steps)]
            v.facts.append(assertion_record("series", m.group(0), p, series, span, vals))
            n += 1
    return n


def _value(f: FactValue) -> float:
    return float(f.value)


def _steps(
    series: Mapping[int, FactValue], span: tuple[int, int] | None
) -> list[tuple[FactValue, FactValue]]:
    """The consecutive pairs of `series` within `span` (the whole series without one)."""
    visits = sorted(series)
    if span is not None:
        visits = [x for x in visits if span[0] <= x <= span[1]]
    return [(series[a], series[b]) for a, b in zip(visits, visits[1:], strict=False)]


def _mcid_scope(ctx: SentenceCtx, m: re.Match[str]) -> tuple[list[Subject], int, int]:
    """The subjects of an every-change claim and the bounds of the text that states them."""
    if ALL_PARTS.search(m.group(0)):
        return [(d, None, d) for d in UPDRS_PARTS], ctx.s0, ctx.s1
    if ctx.subject_cues:
        return subjects_of(ctx, ctx.s0, ctx.s1, m.start()), ctx.s0, ctx.s1
    prev = [(a, b) for _pi, a, b in split_sentences(ctx.text) if b <= ctx.s0]
    if not prev:
        return [], ctx.s0, ctx.s1
    a, b = prev[-1]
    return subjects_of(_sub_ctx(ctx, a, b), a, b, b), a, b


def _sub_ctx(ctx: SentenceCtx, a: int, b: int) -> SentenceCtx:
    """The context of another sentence [a, b) of the same paragraph."""
    cues = [c for c in ctx.all_cues if a <= c.start < b]
    return SentenceCtx(ctx.text, a, b, ctx.paragraph, cues, ctx.all_cues, ctx.low)


def _unique(subjects: list[Subject]) -> list[Subject]:
    out: list[Subject] = []
    for s in subjects:
        if all(s[:2] != o[:2] for o in out):
            out.append(s)
    return out


def _check_mcid_summary(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """Every change in scope against its MCID (FactsView.label: the engine's one MCID rule)."""
    subjects, a, b = _mcid_scope(ctx, m)
    subjects = [s for s in _unique(subjects) if s[0] and not s[1]]  # domain scores carry MCIDs
    patients = patients_for(ctx, m.start(), only_patient)
    if not subjects or not patients:
        v.fail("direction", f"'{m.group(0)}': cannot tell which changes it describes")
        return 0
    want = _wanted_labels(m)
    scope = ctx if (a, b) == (ctx.s0, ctx.s1) else _sub_ctx(ctx, a, b)
    bad: list[str] = []
    shown: list[FactValue] = []
    for p in patients:
        for dom, _items, _phrase in subjects:
            series, what = view.series(p, dom, None)
            span = visit_span(scope, a, b, series) if series else None
            if not series or span is None or span[0] not in series or span[1] not in series:
                bad.append(f"{dom}, patient {p}: no change at the visits it spans")
                continue
            fa, fb = series[span[0]], series[span[1]]
            if view.mcid_of(dom) is None:
                bad.append(f"{what}, patient {p}: the facts hold no MCID for it")
                continue
            label = view.label(dom, _value(fb) - _value(fa))
            shown += [fa, fb]
            if label not in want:
                bad.append(
                    f"{what}, patient {p}: {num_text(fa.value)} at visit {span[0]} to "
                    f"{num_text(fb.value)} at visit {span[1]} ({label})"
                )
    if bad:
        v.fail("direction", f"'{m.group(0)}': " + "; ".join(bad))
        return 0
    v.facts.append({"assertion": "mcid", "word": m.group(0), "values": [_brief(f) for f in shown]})
    return 1


def _wanted_labels(m: re.Match[str]) -> tuple[str, ...]:
    """The MCID labels (classify) the claim allows for each change."""
    if m.group("below"):
        return ("stable",)
    said = m.group(0)
    if _WORSE_WORD.search(said):
        return ("worsened",)
    if _BETTER_WORD.search(said):
        return ("improved",)
    return ("worsened", "improved")


def _brief(f: FactValue) -> dict[str, object]:
    return {"value": f.value, "patient": f.patient, "visit": f.visit, "domain": f.domain}
