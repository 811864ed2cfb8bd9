"""Months a sentence ties to one assessment of a series, checked against the ledger's visit
dates (the statement checker's word assertions):

- the span of a count of assessments: "followed over 12 visits from November 2019 to May
  2021", "completed 5 PDQ-8 questionnaires between December 2019 and March 2021", "at all 7
  questionnaires, from ... to ...", "followed from ... to ...": the first date is the month of
  the first of those assessments and the second the month of the last (the instrument's own
  visits when the count names one, "6 PDQ-8 questionnaires"; the patient's visits otherwise;
  the product numbers visits across both instruments, so an instrument's visits may have gaps);
  so too "the MDS-UPDRS assessments span November 2019 to May 2021" (no count);
- the month of one end of a series: "the last MDS-UPDRS assessment, in March 2021", "in January
  2020, the first PDQ-8 questionnaire": the month of that instrument's (else the patient's)
  first or last assessment;
- the first time a series reached a value: "the motor score first reached 4 in January 2021"
  ("at visit 6"): the first visit of the subject's series at or above the value (at or below
  it for "first fell to") holds that value, and is the visit or in the month the sentence
  names.

A month or visit other than the ledger's contradicts the sentence. The dates stay claims of
the claim reader too (each must be a visit date of the patient)."""

from __future__ import annotations

import re

from engine.grounding import literal_scan
from engine.grounding.claim import Claim
from engine.grounding.cues import Cue
from engine.grounding.facts_view import FactsView, num_text
from engine.grounding.sentence_scope import SentenceCtx, patients_for, subjects_of
from engine.grounding.sentence_verdict import SentenceVerdict, assertion_record
from engine.grounding.vocabulary import code_domains

#: what stands between a count (or "followed") and its date range: "visits from", "(visits 1
#: to 9), between"
_TO_RANGE = re.compile(r"[^.;]{0,60}?\b(?:from|between)\s+$", re.I)
_RANGE_MID = re.compile(r"\s*(?:to|and|through|until|-|\u2013)\s*$", re.I)
_VISITS = re.compile(r"\s*(?:clinic\s+|study\s+|follow-up\s+)?visits\b", re.I)
_FOLLOWED = re.compile(r"\bfollowed(?:\s+up)?\b", re.I)
_N = r"\d+(?:\.\d+)?"
_INSTRUMENT = r"(?:(?P<pdq>PDQ-?8)|(?P<updrs>(?:MDS-)?UPDRS))"
_NOUN = r"(?:assessments?|visits?|(?P<q>questionnaires?)|examinations?|evaluations?)"
#: "the MDS-UPDRS assessments span", "her visits ran from": a date range right after
_SPAN_VERB = re.compile(
    rf"\b(?:{_INSTRUMENT}[\s-]+)?{_NOUN}\s+(?:span(?:s|ned)?|ran|run|range[sd]?|cover(?:s|ed)?|"
    r"extend(?:s|ed)?|stretch(?:es|ed)?)(?:\s+(?:from|between))?\s+$",
    re.I,
)
_END = r"(?:(?P<first>first|initial|earliest|baseline)|last|latest|final|most\s+recent)"
#: "the last MDS-UPDRS assessment, in March 2021", "the first visit (November 2019)"
_END_BEFORE = re.compile(
    rf"\b{_END}\s+(?:{_INSTRUMENT}\s+)?{_NOUN}\b\s*[,(]?\s*"
    r"(?:(?:was|took\s+place|happened)\s+)?(?:(?:in|on|dated|of|from)\s+)?$",
    re.I,
)
#: "In March 2021, the last MDS-UPDRS assessment"
_END_AFTER = re.compile(
    rf"[\s,]*(?:at\s+|in\s+)?the\s+{_END}\s+(?:{_INSTRUMENT}\s+)?{_NOUN}\b", re.I
)
#: "first reached 4", "first rose to 12", "first fell to 3", "first scored 2"
_FIRST = re.compile(
    r"\bfirst\s+(?:(?P<up>reached|hit|rose\s+to|climbed\s+to|increased\s+to|scored|"
    r"was\s+rated|was)|(?P<down>fell\s+to|dropped\s+to|decreased\s+to|improved\s+to))\s+"
    rf"(?:a\s+|an\s+)?(?P<n>{_N})(?!\.?\d)"
    r"(?:\s+points?)?\s+(?:in|on|at|by)\s+(?:the\s+)?",
    re.I,
)


def check_dated_claims(
    ctx: SentenceCtx,
    view: FactsView,
    claims: list[Claim],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """The count spans and first-reached claims of the sentence; returns how many held
    (failures go into `v`)."""
    dates = [c for c in claims if c.role == "date" and c.date]
    n = 0
    for a, d1, d2 in _count_ranges(ctx, claims, dates):
        n += _check_range(ctx, view, (a, _count_instrument(ctx, a, d1)), d1, d2, only_patient, v)
    for d1, d2 in zip(dates, dates[1:], strict=False):
        m = _SPAN_VERB.search(ctx.text, ctx.s0, d1.start)
        if m is not None and _RANGE_MID.fullmatch(ctx.text[d1.end : d2.start]):
            n += _check_range(ctx, view, (None, _named(m)), d1, d2, only_patient, v)
    for d in dates:
        n += _check_end_date(ctx, view, d, only_patient, v)
    for m in literal_scan.finditer(_FIRST, ctx.text, ctx.low, ctx.s0, ctx.s1):
        n += _check_first(ctx, view, m, dates, only_patient, v)
    return n


def _count_ranges(
    ctx: SentenceCtx, claims: list[Claim], dates: list[Claim]
) -> list[tuple[Claim | None, Claim, Claim]]:
    """(the count or None for "followed", first date, last date) of each date range that a
    count of assessments or "followed" introduces."""
    anchors: list[tuple[int, Claim | None]] = [
        (c.end, c) for c in claims if c.role == "value" and c.kind == "count_visits"
    ]
    anchors += [
        (m.end(), None) for m in literal_scan.finditer(_FOLLOWED, ctx.text, ctx.low, ctx.s0, ctx.s1)
    ]
    out = []
    for d1, d2 in zip(dates, dates[1:], strict=False):
        if not _RANGE_MID.fullmatch(ctx.text[d1.end : d2.start]):
            continue
        before = [(e, c) for e, c in anchors if e <= d1.start]
        if not before:
            continue
        end, count = max(before, key=lambda x: x[0])
        if _TO_RANGE.fullmatch(ctx.text[end : d1.start]):
            out.append((count, d1, d2))
    return out


def _instrument_of(cue: Cue) -> str:
    """The instrument of the sentence's first subject (its domain's, or its item's)."""
    if cue.kind == "domain":
        dom = cue.value
    else:
        codes = cue.value[0]
        dom = next((code_domains().get(k) for k in sorted(codes)), None)
    return "pdq8" if dom == "qol" else "updrs"


def _assessment_dates(view: FactsView, p: int, instrument: str | None) -> dict[int, str]:
    """visit -> date of the patient's assessments of the instrument (every visit without one)."""
    every = view.dates.get(p, {})
    if instrument is None:
        return dict(every)
    doms = ("qol",) if instrument == "pdq8" else ("motor", "adl", "nonmotor", "total")
    visits = {x for d in doms for x in view.scores.get((p, d), {})}
    return {x: every[x] for x in visits if x in every}


def _named(m: re.Match[str]) -> str | None:
    """The instrument a phrase names ("PDQ-8", "MDS-UPDRS", "questionnaire"), None for none."""
    if m.group("pdq") or m.groupdict().get("q"):
        return "pdq8"
    return "updrs" if m.group("updrs") else None


#: an instrument named before a count in its sentence ("UPDRS: 5 assessments from ...")
_NAMED_BEFORE = re.compile(rf"\b{_INSTRUMENT}\b", re.I)


def _count_instrument(ctx: SentenceCtx, count: Claim | None, d1: Claim) -> str | None:
    """The instrument of a count's assessments: the one it names, else the nearest instrument
    the sentence names before it ("UPDRS: 5 assessments from ..."), else the subject's ("scored 0
    on the PDQ-8 at all 7 questionnaires"; "N visits" are the patient's visits, whatever the
    subject); None for the patient's visits."""
    if count is None or count.instrument is not None:
        return count.instrument if count is not None else None
    if _VISITS.match(ctx.text, count.end):
        return None
    named = list(literal_scan.finditer(_NAMED_BEFORE, ctx.text, ctx.low, ctx.s0, count.start))
    if named:
        return _named(named[-1])
    before = [c for c in ctx.subject_cues if c.start < d1.start]
    if before:
        return _instrument_of(before[0])
    return None


def _check_range(
    ctx: SentenceCtx,
    view: FactsView,
    counted: tuple[Claim | None, str | None],
    d1: Claim,
    d2: Claim,
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    said = ctx.text[d1.start : d2.end]
    patients = patients_for(ctx, d1.start, only_patient)
    if not patients:
        v.fail("date", f"'{said}': cannot tell whose assessments it spans")
        return 0
    instrument = counted[1]
    what = f"{instrument} assessments" if instrument else "visits"
    for p in patients:
        dated = _assessment_dates(view, p, instrument)
        if not dated:
            v.fail("date", f"'{said}' (patient {p}): the facts hold no dated {what}")
            return 0
        first, last = dated[min(dated)], dated[max(dated)]
        if not (first.startswith(d1.date or "") and last.startswith(d2.date or "")):
            v.fail(
                "date",
                f"'{said}' (patient {p}): the {what} run from visit {min(dated)} ({first}) "
                f"to visit {max(dated)} ({last})",
            )
            return 0
    v.facts.append({"assertion": "date_span", "word": said, "patients": patients})
    return 1


def _end_instrument(ctx: SentenceCtx, m: re.Match[str]) -> str | None:
    """The instrument whose first or last assessment a phrase dates: the one it names; for "the
    baseline assessment" (an instrument's baseline is the patient's first session of it, DESIGN)
    the instrument of the sentence's first subject ("At the baseline assessment on 2 November
    2020, patient 88 had hallucinations ... rated 2"); None (the patient's visits) otherwise."""
    named = _named(m)
    if named or not re.search(r"\bbaseline\b", m.group(0), re.I) or not ctx.subject_cues:
        return named
    return _instrument_of(ctx.subject_cues[0])


def _check_end_date(
    ctx: SentenceCtx, view: FactsView, d: Claim, only_patient: int | None, v: SentenceVerdict
) -> int:
    """A date the sentence gives as the month of the first or last assessment of an instrument
    (of the patient's visits when it names none): 1 when it is, 0 otherwise or when none."""
    if not d.supported:
        return 0  # a date that is no visit date of the patient has failed already
    m = _END_BEFORE.search(ctx.text[max(ctx.s0, d.start - 80) : d.start])
    if m is None:
        m = _END_AFTER.match(ctx.text, d.end, ctx.s1)
    if m is None:
        return 0
    said, first = m.group(0).strip(" ,("), bool(m.group("first"))
    patients = patients_for(ctx, d.start, only_patient)
    if not patients:
        v.fail("date", f"'{said} {d.text}': cannot tell whose assessment it dates")
        return 0
    instrument = _end_instrument(ctx, m)
    what = f"{instrument} assessments" if instrument else "visits"
    for p in patients:
        dated = _assessment_dates(view, p, instrument)
        if not dated:
            v.fail("date", f"'{said} {d.text}' (patient {p}): the facts hold no dated {what}")
            return 0
        x = min(dated) if first else max(dated)
        if not dated[x].startswith(d.date or ""):
            v.fail(
                "date",
                f"'{said} {d.text}' (patient {p}): the {'first' if first else 'last'} of the "
                f"{what} is visit {x} ({dated[x]})",
            )
            return 0
    v.facts.append({"assertion": "date_end", "word": f"{said} {d.text}", "patients": patients})
    return 1


def _check_first(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    dates: list[Claim],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    said = m.group(0).strip()
    ca, cb = ctx.clause(m.start())
    subjects = subjects_of(ctx, ca, cb, m.start())
    patients = patients_for(ctx, m.start(), only_patient)
    if not subjects or not patients:
        v.fail("series", f"'{said}': cannot tell which patient and series it describes")
        return 0
    target = float(m.group("n"))
    up = bool(m.group("up"))
    dom, items, _phrase = subjects[0]
    named_date = next((d for d in dates if d.start == m.end()), None)
    named_visit = next(
        (c.value for c in ctx.cues if c.kind == "visit" and c.start == m.end()), None
    )
    for p in patients:
        series, what = view.series(p, dom, items)
        if not series:
            v.fail("series", f"'{said}' (patient {p}): the facts hold no such series")
            return 0
        reached = [x for x in sorted(series) if _at_or_past(float(series[x].value), target, up)]
        first = reached[0] if reached else None
        wrong = _first_wrong(view, p, series, first, target, named_date, named_visit)
        if wrong:
            v.fail("series", f"'{said}' ({what}, patient {p}): {wrong}")
            return 0
        v.facts.append(assertion_record("series", said, p, series, None, [series[first]]))
    return 1


def _at_or_past(value: float, target: float, up: bool) -> bool:
    return value >= target if up else value <= target


def _first_wrong(
    view: FactsView,
    p: int,
    series: dict,
    first: int | None,
    target: float,
    named_date: Claim | None,
    named_visit: object,
) -> str:
    """Why the first visit at the value is not the one the sentence names ("" when it is)."""
    if first is None:
        return f"never reached {num_text(target)}"
    got = float(series[first].value)
    date = view.dates.get(p, {}).get(first, "")
    if got != target:
        return f"first passed {num_text(target)} at visit {first} with {num_text(got)}"
    if named_date is not None and not date.startswith(named_date.date or ""):
        return f"first {num_text(target)} at visit {first} ({date}), not in {named_date.text}"
    if isinstance(named_visit, int) and named_visit != first:
        return f"first {num_text(target)} at visit {first} ({date}), not at visit {named_visit}"
    return ""
