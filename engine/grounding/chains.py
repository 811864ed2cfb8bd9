"""The claim reader's second pass over one sentence: constructions whose numbers take their visit
or patient from words after them, which the left-to-right scope of reader.py cannot see.

- A value chain: "from 2 at visit 1 to 6, 8, 14 and 17 at visit 5": the values between the named
  ends belong to the successive visits between them (the patient's visits after the first named
  visit, up to the last); read only when the count of values is the count of those visits.
- Values followed by their patient: "from 12 to 1 in patient 3 and from 9 to 4 in patient 8"
  (also "for patient N"): the values belong to that patient; so do those of "patient 3 from 11
  to 6". The two ends of such a change, when the sentence states one visit span before them
  ("from visit 1 to visit 3", "between visit 1 and visit 3"), are at its two visits.
- "over the same visits" (or "period", "interval", "assessments"): the ends of "from 12 to 1"
  take the visits of the previous change of the sentence ("fell from 18 at visit 1 to 14 at
  visit 3, and ... fell from 12 to 1 over the same visits": 12 at visit 1, 1 at visit 3).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.grounding.claim import Claim
from engine.grounding.ledger_index import LedgerIndex

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
#: "from 12 to 1 over the same visits"
_SAME_VISITS = re.compile(
    rf"\bfrom\s+({_N})\s+(?:points?\s+)?to\s+({_N})(?:\s+points?)?\s+(?:over|across|during|"
    r"between|for|in)\s+the\s+same\s+(?:visits|period|interval|assessments|time\s+span)\b",
    re.I,
)


def rebind(text: str, s0: int, s1: int, claims: Sequence[Claim], idx: LedgerIndex) -> None:
    """Set the visit or patient of the sentence's value claims that these constructions name
    (see the module docstring); the other claims are left as the reader read them."""
    values = {c.start: c for c in claims if c.role == "value"}
    if not values:
        return
    _value_chains(text, s0, s1, values, idx)
    _patients_after(text, s0, s1, values)
    _same_visits(text, s0, s1, values)


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
