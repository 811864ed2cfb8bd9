"""The claim reader's second pass over one sentence: constructions whose numbers take their visit
or patient from words after them, which the left-to-right scope of reader.py cannot see.

- A value chain: "from 2 at visit 1 to 6, 8, 14 and 17 at visit 5": the values between the named
  ends belong to the successive visits between them (the patient's visits after the first named
  visit, up to the last); read only when the count of values is the count of those visits.
- Values followed by their patient: "from 12 to 1 in patient 3 and from 9 to 4 in patient 8"
  (also "for patient N"): the values belong to that patient; so do those of "patient 3 from 11
  to 6". The two ends of such a change, when the sentence states one visit span before them
  ("from visit 1 to visit 3", "between visit 1 and visit 3"), are at its two visits.
- A list of values at a list or range of visits: "14, 17, 26 and 36 at visits 1 to 4" (also
  "at visits 1, 2, 3 and 4"): each value belongs to its visit in turn (the patient's visits in
  the range); read only when the counts agree.
- A value at the first (or last) N visits: "rated 1 at each of the first three visits": it holds
  at each of the patient's first N visits; N is read as the last of them (a visit claim).
- The two ends of a change in parentheses right after its visit span: "from visit 3 to visit 4
  (5 to 11)": 5 at visit 3, 11 at visit 4.
- The second value of "the Summary Index was 25.0 at visit 2 and 18.75 at visit 4" (or "rose
  from 25.0 at visit 1 to 37.5 at visit 3") is of the first's kind (a summary index, a mean, a
  slope) when nothing names another.
- "over the same visits" (or "period", "interval", "assessments"): the ends of "from 12 to 1"
  take the visits of the previous change of the sentence ("fell from 18 at visit 1 to 14 at
  visit 3, and ... fell from 12 to 1 over the same visits": 12 at visit 1, 1 at visit 3).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.clinical.concepts import same_concept
from engine.grounding.claim import Claim
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.vocabulary import BASELINE_RE, code_domains, item_vocabulary

_N = r"[-+]?\d+(?:\.\d+)?"
_AT_VISIT = r"(?:at|on)\s+(?:the\s+)?(?:visit\s+(\d+)|(baseline))"
#: "from 2 at visit 1 to 6, 8, 14 and 17 at visit 5"
_CHAIN = re.compile(
    rf"\bfrom\s+({_N})\s+{_AT_VISIT}\s+to\s+({_N}(?:\s*(?:,|,?\s+and)\s+{_N})+)"
    rf",?\s+(?:at|on)\s+(?:the\s+)?visit\s+(\d+)\b",
    re.I,
)
_LIST_NUMBER = re.compile(_N)
#: "from 12 to 1 in patient 3", "9 for patient 8"
_FOR_PATIENT = re.compile(
    rf"(?:\bfrom\s+({_N})\s+(?:points?\s+)?to\s+)?({_N})(?:\s+points?)?\s+(?:in|for)\s+"
    r"(?:patient|participant|subject)\s+#?(\d+)\b",
    re.I,
)
#: "patient 3 from 11 to 6" (after "Both patients improved ... between visit 1 and visit 3:")
_PATIENT_RANGE = re.compile(
    rf"\b(?:patient|participant|subject)\s+#?(\d+)\s*,?\s+(?:went\s+|fell\s+|rose\s+)?from\s+"
    rf"({_N})\s+(?:points?\s+)?to\s+({_N})\b(?!\s+(?:at|on)\s+(?:the\s+)?(?:visit|baseline))",
    re.I,
)
#: the one visit span a sentence states: "from visit 1 to visit 3", "between visit 1 and 3"
_SPAN = re.compile(
    r"\b(?:from|between)\s+(?:the\s+)?visits?\s+(\d+)\s+(?:to|and)\s+(?:visit\s+)?(\d+)\b",
    re.I,
)
#: "from 3 to 7" with neither end at a visit of its own
_RANGE = re.compile(
    rf"\bfrom\s+({_N})\s+(?:points?\s+)?to\s+({_N})\b(?!\s*(?:points?\s+)?(?:at|on|in)\s)",
    re.I,
)
#: "from 12 to 1 over the same visits"
_SAME_VISITS = re.compile(
    rf"\bfrom\s+({_N})\s+(?:points?\s+)?to\s+({_N})(?:\s+points?)?\s+(?:over|across|during|"
    r"between|for|in)\s+the\s+same\s+(?:visits|period|interval|assessments|time\s+span)\b",
    re.I,
)


_WORD_VISITS = r"(?:visits|assessments|sessions)"
#: "14, 17, 26 and 36 at visits 1 to 4", "2 and 3 at visits 2 and 4"
_VALUE_LIST = re.compile(
    rf"(?<![\d.])({_N}(?:\s*,\s*{_N})*\s*,?\s+and\s+{_N})\s+(?:at|on)\s+(?:the\s+)?{_WORD_VISITS}\s+"
    r"(?:(\d+)\s*(?:-|to|through)\s*(\d+)|(\d+(?:\s*(?:,|,?\s*and)\s*\d+)+))\b",
    re.I,
)
#: "1 at each of the first 3 visits", "0 at the last 2 assessments"
_FIRST_N = re.compile(
    rf"(?<![\d.])({_N})\s+(?:at|on|in)\s+(?:each\s+of\s+|all\s+of\s+|all\s+)?the\s+"
    rf"(first|last)\s+(\d+)\s+{_WORD_VISITS}\b",
    re.I,
)

#: "from visit 3 to visit 4 (5 to 11)"
_SPAN_THEN_ENDS = re.compile(
    r"\b(?:from|between)\s+(?:the\s+)?visits?\s+(\d+)\s+(?:to|and)\s+(?:visit\s+)?(\d+)\s*"
    rf"\(\s*(?:from\s+)?({_N})\s+(?:points?\s+)?(?:to|->|\u2192)\s+({_N})(?:\s+points?)?\s*\)",
    re.I,
)

#: "25.0 at visit 2 and 18.75 at visit 4": two values, each at its visit, joined by "and"
_TWO_AT_VISITS = re.compile(
    rf"(?<![\d.])({_N})\s+(?:at|on)\s+(?:the\s+)?visit\s+\d+\s*(?:,?\s+and|\s+to)\s+({_N})\s+(?:at|on)\s+"
    r"(?:the\s+)?visit\s+\d+\b",
    re.I,
)
#: the kinds a second value of such a pair takes from the first
_CARRIED_KINDS = ("pdq8_si", "mean", "slope", "slope_year")


def rebind(text: str, s0: int, s1: int, claims: Sequence[Claim], idx: LedgerIndex) -> None:
    """Set the visit or patient of the sentence's value claims that these constructions name
    (see the module docstring); the other claims are left as the reader read them."""
    values = {c.start: c for c in claims if c.role == "value"}
    if not values:
        return
    _value_chains(text, s0, s1, values, idx)
    _value_lists(text, s0, s1, values, idx)
    _first_visits(text, s0, s1, claims, idx)
    _patients_after(text, s0, s1, values)
    _same_visits(text, s0, s1, values)
    _span_then_ends(text, s0, s1, values)
    _span_before_range(text, s0, s1, values)
    _carried_kinds(text, s0, s1, values)
    _instrument_baseline(text, s0, s1, claims, idx)
    _item_after_for(text, s0, s1, values, idx)


def _value_chains(text: str, s0: int, s1: int, values: dict[int, Claim], idx: LedgerIndex) -> None:
    for m in _CHAIN.finditer(text, s0, s1):
        first = values.get(m.start(1))
        if first is None:
            continue
        visits = sorted(idx.visits.get(first.patient, ()))
        start = visits[0] if m.group(3) and visits else int(m.group(2) or 0)
        end = int(m.group(5))
        between = [v for v in visits if start < v <= end]
        listed = [values.get(m.start(4) + n.start()) for n in _LIST_NUMBER.finditer(m.group(4))]
        if len(listed) != len(between) or any(c is None for c in listed):
            continue  # a chain that does not fit the visits is read as written (and judged)
        for c, v in zip(listed, between, strict=True):
            c.visit = v  # type: ignore[union-attr]


def _value_lists(text: str, s0: int, s1: int, values: dict[int, Claim], idx: LedgerIndex) -> None:
    """Values listed before a list or range of visits belong to those visits in turn."""
    for m in _VALUE_LIST.finditer(text, s0, s1):
        listed = [values.get(m.start(1) + n.start()) for n in _LIST_NUMBER.finditer(m.group(1))]
        if any(c is None for c in listed):
            continue
        patient = listed[0].patient  # type: ignore[union-attr]
        if m.group(2):
            a, b = int(m.group(2)), int(m.group(3))
            visits = [v for v in sorted(idx.visits.get(patient, ())) if a <= v <= b]
        else:
            visits = [int(x) for x in _LIST_NUMBER.findall(m.group(4))]
        if len(visits) != len(listed):
            continue  # a list that does not fit the visits is read as written (and judged)
        for c, v in zip(listed, visits, strict=True):
            c.visit, c.visit_list = v, []  # type: ignore[union-attr]


def _first_visits(text: str, s0: int, s1: int, claims: Sequence[Claim], idx: LedgerIndex) -> None:
    """A value at "each of the first N visits" holds at each of them; N names the N-th visit."""
    by_start = {c.start: c for c in claims}
    for m in _FIRST_N.finditer(text, s0, s1):
        c, k = by_start.get(m.start(1)), by_start.get(m.start(3))
        if c is None or k is None or c.role != "value":
            continue
        visits = sorted(idx.visits.get(c.patient, ()))
        n = int(m.group(3))
        if not 0 < n <= len(visits):
            continue  # more visits than the patient has: the count is judged as written
        chosen = visits[:n] if m.group(2).lower() == "first" else visits[-n:]
        c.visit, c.visit_list = None, chosen
        # N holds when the patient has N visits: it is read as the last visit it names
        k.role, k.kind, k.visit, k.patient = "visit", None, chosen[-1], c.patient
        k.value = float(chosen[-1])


def _patients_after(text: str, s0: int, s1: int, values: dict[int, Claim]) -> None:
    """Values with their patient after them (or "patient 3 from 11 to 6"): that patient's; the
    two ends of such a change take the sentence's one stated visit span."""
    spans = list(_SPAN.finditer(text, s0, s1))
    span = (int(spans[0].group(1)), int(spans[0].group(2))) if len(spans) == 1 else None
    found = [(m.group(3), m.start(1), m.start(2)) for m in _FOR_PATIENT.finditer(text, s0, s1)]
    found += [(m.group(1), m.start(2), m.start(3)) for m in _PATIENT_RANGE.finditer(text, s0, s1)]
    for p, a, b in found:
        ends = [values.get(a), values.get(b)]
        for c in ends:
            if c is not None:
                c.patient = int(p)
        if span is None or span[0] >= span[1] or None in ends or spans[0].start() > a:
            continue
        if all(c.visit is None for c in ends):  # type: ignore[union-attr]
            ends[0].visit, ends[1].visit = span  # type: ignore[union-attr]


def _same_visits(text: str, s0: int, s1: int, values: dict[int, Claim]) -> None:
    for m in _SAME_VISITS.finditer(text, s0, s1):
        a, b = values.get(m.start(1)), values.get(m.start(2))
        if a is None or b is None or a.visit is not None or b.visit is not None:
            continue
        before = [c.visit for p, c in sorted(values.items()) if p < m.start() and c.visit]
        if len(before) >= 2 and before[-2] < before[-1]:
            a.visit, b.visit = before[-2], before[-1]


def _span_then_ends(text: str, s0: int, s1: int, values: dict[int, Claim]) -> None:
    for m in _SPAN_THEN_ENDS.finditer(text, s0, s1):
        a, b = values.get(m.start(3)), values.get(m.start(4))
        if a is not None and b is not None and int(m.group(1)) < int(m.group(2)):
            a.visit, b.visit = int(m.group(1)), int(m.group(2))


def _span_before_range(text: str, s0: int, s1: int, values: dict[int, Claim]) -> None:
    """ "Between visits 1 and 2, patient 6's Part II rose from 3 to 7": the two ends of a change
    that name no visit of their own are at the one visit span the sentence states before them."""
    spans = list(_SPAN.finditer(text, s0, s1))
    if len(spans) != 1 or int(spans[0].group(1)) >= int(spans[0].group(2)):
        return
    for m in _RANGE.finditer(text, spans[0].end(), s1):
        a, b = values.get(m.start(1)), values.get(m.start(2))
        if a is None or b is None or a.visit is not None or b.visit is not None:
            continue
        if {a.kind, b.kind} <= {"score", "item"}:
            a.visit, b.visit = int(spans[0].group(1)), int(spans[0].group(2))


def _carried_kinds(text: str, s0: int, s1: int, values: dict[int, Claim]) -> None:
    for m in _TWO_AT_VISITS.finditer(text, s0, s1):
        a, b = values.get(m.start(1)), values.get(m.start(2))
        if a is None or b is None or a.kind not in _CARRIED_KINDS:
            continue
        if b.kind in ("score", "item", None) and b.domain in (None, a.domain):
            b.kind, b.domain = a.kind, a.domain


#: a sentence that names visit 1 itself: its "baseline" is that visit
_VISIT_ONE = re.compile(r"\b(?:visit\s+1|v1|(?:the\s+)?first\s+visit)\b", re.I)


def _instrument_baseline(
    text: str, s0: int, s1: int, claims: Sequence[Claim], idx: LedgerIndex
) -> None:
    """ "Patient 88's baseline MDS-UPDRS total was 47": the baseline of a series is the patient's
    first session of its instrument (docs/DESIGN: whatever its visit number), not the patient's
    first visit of any instrument. A value read at visit 1 from "baseline", whose series has no
    visit 1, is at the series' first visit; so is a date read at visit 1 there."""
    if not BASELINE_RE.search(text, s0, s1) or _VISIT_ONE.search(text, s0, s1):
        return
    moved: set[int] = set()
    for c in claims:
        if c.role != "value" or c.visit != 1 or c.kind not in ("score", "item"):
            continue
        visits = {
            f.visit for f in idx.find([c.kind], patient=c.patient, domain=c.domain, items=c.items)
        }
        visits.discard(None)
        if visits and 1 not in visits:
            c.visit = min(visits)  # type: ignore[type-var]
            moved.add(c.visit)
    if len(moved) == 1:
        for c in claims:
            if c.role == "date" and c.visit == 1:
                c.visit = next(iter(moved))


#: "scored 2 for handwriting and 2 for night-time sleep problems": the item right after "for"
_FOR_ITEM = re.compile(rf"(?<![\d.])({_N})\s+for\s+(?:the\s+)?(?=[^\W\d])", re.I)


def _item_after_for(
    text: str, s0: int, s1: int, values: dict[int, Claim], idx: LedgerIndex
) -> None:
    """A value followed by "for <item>" is that item's rating (the running item is the one
    before it, which the reader gave it), when the facts hold the item."""
    for m in _FOR_ITEM.finditer(text, s0, s1):
        c = values.get(m.start(1))
        if c is None or c.kind not in ("score", "item"):
            continue
        for pat, codes, _doms in item_vocabulary():
            hit = pat.match(text, m.end(), s1)
            if hit is None:
                continue
            # another instrument's name for an item the facts hold (as reader.py reads it)
            known = frozenset(codes & idx.items_known) or (
                same_concept(hit.group()) & idx.items_known
            )
            if known:
                doms = {code_domains().get(k) for k in known}
                c.kind, c.items, c.item_phrase = "item", known, hit.group()
                c.domain = next(iter(doms)) if len(doms) == 1 else None
            break
