"""Claims that bound every value of a series, checked against the ledger (the statement
checker's word assertions; run before the numbers, since the bound is no value at one visit):

- "never rated above 1", "was never higher than 2", "never below 10": every value of the subject's
  series (an item or a domain score) within the clause's visit span (sentence_scope.visit_span:
  the whole selected series when it names none) is at most (at least) the bound;
- "rated 0 at every visit", "scored 2 at each assessment", "0 at all visits": every value is it;
- "1 or less at every visit", "at least 2 at every visit": every value is within the bound;
- "never moved more than 2 points from one assessment to the next": every step is within it;
- "no item was ever rated above 2": every item rating of the patient is within it.

One value on the wrong side contradicts the sentence. The bound's number is the claim's, not a
value of one visit: the claim reader's verdict on it is set aside (`spans`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.clinical.concepts import same_concept
from engine.grounding import literal_scan
from engine.grounding.facts_view import FactsView, num_text
from engine.grounding.sentence_scope import SentenceCtx, patients_for, subjects_of, visit_span
from engine.grounding.sentence_verdict import SentenceVerdict, assertion_record

_N = r"\d+(?:\.\d+)?"
_ABOVE = r"above|over|higher\s+than|more\s+than|greater\s+than|beyond|exceeding|exceeded"
_BELOW = r"below|under|lower\s+than|less\s+than"
#: "never rated above 1", "has never been scored higher than 2", "never rose above 2" (a verb
#: of movement before the bound: "never fell below 10", "never went above 3")
_NEVER = re.compile(
    r"\bnever\s+(?:once\s+)?(?:been\s+|was\s+|were\s+)?(?:rated\s+|scored\s+|recorded\s+"
    r"|(?:rose|risen|went|gone|climbed|got|fell|fallen|dropped)\s+)?"
    rf"(?:(?P<above>{_ABOVE})|(?P<below>{_BELOW}))\s+(?P<n>{_N})(?!\.?\d)",
    re.I,
)
#: "rated 0 at every visit", "2 or less at each assessment", "at least 1 at all visits"
_EVERY = re.compile(
    r"\b(?:rated|scored|recorded|was|were|remained|stayed|of)\s+(?:at\s+)?"
    r"(?P<least>at\s+least\s+|at\s+most\s+)?"
    rf"(?P<n>{_N})(?!\.?\d)(?P<or>\s+or\s+(?:less|lower|below|fewer|more|higher|above))?"
    # "scored 0 on the PDQ-8 at every assessment": the instrument between value and quantifier
    r"(?:\s+on\s+(?:the\s+)?(?:MDS-)?(?:UPDRS|PDQ-?8)\b)?\s+"
    # "at every one of patient 13's MDS-UPDRS assessments": the quantifier may name the patient
    r"(?:(?:at|on|in|across)\s+(?:every|each|all)\s+"
    r"(?:(?:one\s+)?of\s+(?:the|(?:patient|participant)\s+#?(?P<pat>\d+)['’]s|their|his|her|its)\s+)?"
    r"(?P<after>(?:subsequent|following|later|remaining|other)\s+)?(?:\d+\s+)?"
    r"(?:(?:MDS-)?UPDRS\s+|PDQ-?8\s+)?(?:visits?|assessments?|sessions?|questionnaires?)\b"
    r"|throughout\b)"
    # "at every assessment after baseline": the first assessment left out
    r"(?P<after_first>\s+(?:after|since|following)\s+(?:the\s+)?(?:baseline|first\s+(?:one|visit|"
    r"assessment|session)|first\b))?",
    re.I,
)
_PDQ8 = re.compile(r"\bPDQ-?8\b", re.I)
#: "no item was ever rated above 2", "no item scored higher than 1": every item of the patient
_NO_ITEM = re.compile(
    r"\bno\s+(?:single\s+|other\s+)?(?:(?:MDS-)?UPDRS\s+|PDQ-?8\s+)?item\s+(?:was\s+|were\s+|is\s+)?"
    r"(?:ever\s+)?(?:been\s+)?(?:rated|scored|recorded)\s+"
    rf"(?P<above>{_ABOVE})\s+(?P<n>{_N})(?!\.?\d)",
    re.I,
)
#: "never moved more than 2 points from one assessment to the next": a bound on every step
_STEP_BOUND = re.compile(
    r"\bnever\s+(?:once\s+)?(?:moved|changed|varied|shifted|differed|fluctuated)\s+(?:by\s+)?"
    rf"(?:more\s+than|over|above|beyond)\s+(?P<n>{_N})(?!\.?\d)\s*(?:points?\s+)?"
    r"(?:from\s+one\s+(?:assessment|visit|session)\s+to\s+the\s+next"
    r"|between\s+(?:consecutive|successive|adjacent)\s+(?:assessments|visits|sessions))",
    re.I,
)
#: "in both patient 6 and patient 13", "for patients 3 and 8": the patients right after a bound
_PATIENTS_AFTER = re.compile(
    r"\s+(?:in|for)\s+(?:both\s+)?(?:patients?|participants?)\s+#?(\d+)\s+and\s+"
    r"(?:patient\s+|participant\s+)?#?(\d+)\b",
    re.I,
)
#: "at every subsequent assessment through visit 11": the last visit of the span
_THROUGH = re.compile(r"\s*(?:up\s+)?(?:through|until|to)\s+(?:visit|assessment)\s+(\d+)", re.I)


@dataclass
class BoundResult:
    """The spans of the bounds' numbers (read by this module, not as values) and how many held."""

    spans: list[tuple[int, int]] = field(default_factory=list)
    held: int = 0


def _rule(m: re.Match[str]) -> tuple[str, float]:
    """('max' | 'min' | 'eq', the bound) of one claim."""
    n = float(m.group("n"))
    if "above" in m.groupdict() and m.group("above"):
        return "max", n
    if "below" in m.groupdict() and m.group("below"):
        return "min", n
    least = (m.groupdict().get("least") or "").lower()
    tail = (m.groupdict().get("or") or "").lower()
    if "least" in least or re.search(r"more|higher|above", tail):
        return "min", n
    if "most" in least or tail:
        return "max", n
    return "eq", n


_OK = {
    "max": lambda x, n: x <= n,
    "min": lambda x, n: x >= n,
    "eq": lambda x, n: x == n,
}
_SAYS = {"max": "at most", "min": "at least", "eq": "exactly"}


def check_series_bounds(
    ctx: SentenceCtx, view: FactsView, only_patient: int | None, v: SentenceVerdict
) -> BoundResult:
    """The bound claims of the sentence (failures go into `v`)."""
    out = BoundResult()
    for pat in (_NEVER, _EVERY):
        for m in literal_scan.finditer(pat, ctx.text, ctx.low, ctx.s0, ctx.s1):
            out.spans.append(m.span("n"))
            out.held += _check_one(ctx, view, m, only_patient, v)
    for m in literal_scan.finditer(_STEP_BOUND, ctx.text, ctx.low, ctx.s0, ctx.s1):
        out.spans.append(m.span("n"))
        out.held += _check_step_bound(ctx, view, m, only_patient, v)
    for m in literal_scan.finditer(_NO_ITEM, ctx.text, ctx.low, ctx.s0, ctx.s1):
        out.spans.append(m.span("n"))
        out.held += _check_no_item(ctx, view, m, only_patient, v)
    return out


def _check_no_item(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """ "no item was ever rated above 2": every item rating of the patient within the clause's
    visit span (the whole record when it names none) is at most the bound; the items of the
    PDQ-8 when the sentence names it, else of the MDS-UPDRS (its items are what "item" means in
    a clinical note). 1 when it holds for every patient."""
    ca, cb = ctx.clause(m.start())
    pdq = bool(_PDQ8.search(ctx.text, ctx.s0, ctx.s1))
    patients = patients_for(ctx, m.start(), only_patient)
    said, bound = m.group(0), float(m.group("n"))
    if not patients:
        v.fail("series", f"'{said}': cannot tell which patient it describes")
        return 0
    for p in patients:
        mine = {
            code: s
            for (q, code), s in view.items.items()
            if q == p and s and (view.item_domain.get(code) == "qol") == pdq
        }
        every = {x: f for s in mine.values() for x, f in s.items()}
        if not every:
            v.fail("series", f"'{said}' (patient {p}): the facts hold no item ratings")
            return 0
        lo, hi = visit_span(ctx, ca, cb, every) or (min(every), max(every))
        bad = sorted(
            (f for s in mine.values() for x, f in s.items() if lo <= x <= hi),
            key=lambda f: (-float(f.value), int(f.visit or 0), f.item or ""),
        )
        if bad and float(bad[0].value) > bound:
            f = bad[0]
            v.fail(
                "series",
                f"'{said}' (patient {p}): needs every item at most {num_text(bound)}; the facts "
                f"say item {f.item} {num_text(f.value)} at visit {f.visit}",
            )
            return 0
        vals = [every[x] for x in sorted(every) if lo <= x <= hi]
        v.facts.append(assertion_record("series", said, p, every, (lo, hi), vals))
    return 1


def _check_step_bound(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """ "never moved more than 2 points from one assessment to the next": every change between
    consecutive values of the subject's series (within the clause's span) is at most the bound,
    either way. 1 when it holds for every patient."""
    ca, cb = ctx.clause(m.start())
    subjects = subjects_of(ctx, ca, cb, m.start())
    patients = patients_for(ctx, m.start(), only_patient)
    said, bound = m.group(0), float(m.group("n"))
    if not subjects or not patients:
        v.fail("series", f"'{said}': cannot tell which patient and series it describes")
        return 0
    dom, items, phrase = subjects[0]
    for p in patients:
        code_sets = _code_sets(view, p, items, phrase)
        series, what = view.series(p, dom, code_sets[0] if code_sets else None)
        if not series or len(series) < 2:
            v.fail("series", f"'{said}' (patient {p}): the facts hold no two assessments of it")
            return 0
        lo, hi = _span(ctx, ca, cb, m, series)
        vals = [series[x] for x in sorted(series) if lo <= x <= hi]
        jumps = [(a, b) for a, b in zip(vals, vals[1:], strict=False)]
        bad = [(a, b) for a, b in jumps if abs(float(b.value) - float(a.value)) > bound]
        if bad:
            a, b = bad[0]
            v.fail(
                "series",
                f"'{said}' ({what}, patient {p}): needs at most {num_text(bound)} between "
                f"consecutive visits; the facts say {num_text(a.value)} at visit {a.visit} to "
                f"{num_text(b.value)} at visit {b.visit}",
            )
            return 0
        v.facts.append(assertion_record("series", said, p, series, (lo, hi), vals))
    return 1


def _span(ctx: SentenceCtx, ca: int, cb: int, m: re.Match[str], series: dict) -> tuple[int, int]:
    """The visits a bound covers: the clause's span; "at every subsequent assessment" the
    visits after the last one the sentence names before it ("absent at visit 1 but scored 1
    at every subsequent assessment"), through the one it names after it, else the latest."""
    if m.groupdict().get("after_first"):  # "at every assessment after baseline"
        later = sorted(series)[1:]
        if later:
            return later[0], max(series)
    if m.groupdict().get("after"):
        before = [
            c.value
            for c in ctx.cues
            if c.kind == "visit" and isinstance(c.value, int) and c.start < m.start()
        ]
        through = _THROUGH.match(ctx.text, m.end(), ctx.s1)
        if before:
            return before[-1] + 1, int(through.group(1)) if through else max(series)
    span = visit_span(ctx, ca, cb, series)
    return span if span else (min(series), max(series))


def _code_sets(
    view: FactsView, p: int, items: frozenset[str] | None, phrase: str
) -> list[frozenset[str] | None]:
    """The series a subject names, one item each: the items its phrase names that the patient's
    facts hold; only when there is none, another instrument's name for them (reader.py: "walking"
    is the MA-RAG Walking item, not also Gait, whose terms include it)."""
    if items is None:
        return [None]
    held = [k for k in sorted(items) if view.items.get((p, k))]
    if not held:
        held = sorted(frozenset(items) | same_concept(phrase))
    return [frozenset({k}) for k in held]


def _check_one(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    ca, cb = ctx.clause(m.start())
    subjects = subjects_of(ctx, ca, cb, m.start())
    named = m.groupdict().get("pat")
    after = _PATIENTS_AFTER.match(ctx.text, m.end(), ctx.s1)
    if named:
        patients = [int(named)]
    elif after:  # "... at every MDS-UPDRS assessment in both patient 6 and patient 13"
        patients = [int(after.group(1)), int(after.group(2))]
    else:
        patients = patients_for(ctx, m.start(), only_patient)
    said = m.group(0)
    if not subjects or not patients:
        v.fail("series", f"'{said}': cannot tell which patient and series it describes")
        return 0
    rule, bound = _rule(m)
    dom, items, phrase = subjects[0]
    n = 0
    for p in patients:
        failed = ""
        # a phrase that names several items ("tremor"): the claim holds when one item's does
        for code_set in _code_sets(view, p, items, phrase):
            series, what = view.series(p, dom, code_set)
            if not series:
                continue
            lo, hi = _span(ctx, ca, cb, m, series)
            vals = [series[x] for x in sorted(series) if lo <= x <= hi]
            bad = [f for f in vals if not _OK[rule](float(f.value), bound)]
            if not bad:
                v.facts.append(assertion_record("series", said, p, series, (lo, hi), vals))
                n += 1
                break
            failed = failed or (
                f"'{said}' ({what}, patient {p}): needs {_SAYS[rule]} {num_text(bound)} at "
                f"every visit; the facts say {num_text(bad[0].value)} at visit {bad[0].visit}"
            )
        else:
            v.fail("series", failed or f"'{said}' (patient {p}): the facts hold no such series")
    return n
