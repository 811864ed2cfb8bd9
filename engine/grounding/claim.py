"""One claim: a number in a text and what the text says it is (patient, visit, reference visit,
domain or items, kind, direction), with the verdict of the check and the ledger values that
support it. The reader (reader.py) fills the context, the verdict (verdict.py) the rest."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from engine.types import FactValue

#: FactValue's fields, in order: its values are all atomic (str, float, int, None), so a plain
#: dict of them equals dataclasses.asdict (which deep-copies each) at a fraction of the cost
_FV_FIELDS = tuple(f.name for f in fields(FactValue))


def _fact_dict(f: FactValue) -> dict[str, Any]:
    return {k: getattr(f, k) for k in _FV_FIELDS}


@dataclass
class Claim:
    """One number and what the text claims it is, with the check's verdict."""

    text: str
    start: int
    end: int
    value: float
    role: str  # patient | visit | date | value
    kind: str | None = (
        None  # score item delta cumulative change pair slope slope_year mean max min rank count ...
    )
    patient: int | None = None
    visit: int | None = None
    ref_visit: int | None = None
    domain: str | None = None
    items: frozenset[str] | None = None
    item_phrase: str = ""
    direction: int | None = None  # +1 increase/worsening, -1 decrease/improvement
    direction_word: str = ""
    signed: bool = False
    decimals: int = 0
    date: str | None = None
    context: bool = True
    reference: bool = False  # a visit named as the reference of a change ("from visit 2")
    visit_list: list[int] = field(
        default_factory=list
    )  # "rated 3 at visits 2, 3 and 4": holds at each
    status: str = ""  # correct | wrong | lenient_supported | lenient_unsupported
    reason: str = ""
    expected: list[str] = field(default_factory=list)
    #: the instrument a count of assessments names ("6 PDQ-8 questionnaires": "pdq8")
    instrument: str | None = None
    #: a date that dates the number right before it ("23 on 8 May 2021"): it names that visit
    dates_value: bool = False
    paragraph: int = 0
    sentence: int = 0
    #: the ledger values this claim was found to state (empty when unsupported or lenient)
    matched: list[FactValue] = field(default_factory=list)

    @property
    def supported(self) -> bool:
        return self.status in ("correct", "lenient_supported")

    def describe(self) -> str:
        parts = []
        if self.patient is not None:
            parts.append(f"patient {self.patient}")
        if self.visit is not None:
            parts.append(f"visit {self.visit}")
        if self.ref_visit is not None:
            parts.append(f"from visit {self.ref_visit}")
        if self.domain:
            parts.append(self.domain)
        if self.item_phrase:
            parts.append(f"item '{self.item_phrase}'")
        if self.kind and self.role == "value":
            parts.append(self.kind)
        return ", ".join(parts) or "no context"

    def to_dict(self) -> dict[str, Any]:
        return {
            "span": [self.start, self.end],
            "text": self.text,
            "value": self.value,
            "role": self.role,
            "kind": self.kind,
            "patient": self.patient,
            "visit": self.visit,
            "ref_visit": self.ref_visit,
            "domain": self.domain,
            "items": sorted(self.items) if self.items is not None else None,
            "direction": self.direction,
            "date": self.date,
            "reference": self.reference,
            "context": self.context,
            "status": self.status,
            "reason": self.reason,
            "expected": self.expected,
            "matched": [_fact_dict(f) for f in self.matched],
        }


def variant(cl: Claim, **changes: object) -> Claim:
    """`dataclasses.replace(cl, **changes)` without re-running the 25-field __init__ (Claim has
    no __post_init__): the other fields are the same objects, as replace would pass them."""
    out = object.__new__(Claim)
    out.__dict__.update(cl.__dict__)
    out.__dict__.update(changes)
    return out
