"""Key-fact coverage: a text must state what it is for (its key facts), not only say nothing
false.

Key facts: the one definition is engine.clinical.key_facts (docs/engine.md, "Key facts"); here
they are read over the ledger's score series, so a free text can be checked without a run.

A key fact is *stated* when a sentence the statement checker found supported holds it:
- a score: a correct value claim of that patient (or no patient, in a one-patient plan), domain
  (or no domain, in a one-domain text) and visit (or no visit) with that value;
- a change label: a correct change claim from the first to the latest visit (the number carries
  the label), or a verified direction word ("improved", "stable", ...) over that span;
- a flag: a correct claim on the flagged item (red flag) or on the elevated domain at the flagged
  visit (incongruence), or a verified presence/severity statement of the item.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.clinical.key_facts import DOMAIN_AGENTS as DOMAIN_AGENTS
from engine.clinical.key_facts import key_specs
from engine.grounding.facts_view import FactsView
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.sentence_verdict import StatementReport
from engine.types import FactValue

CHANGE_KINDS = ("delta", "cumulative", "change", "pair", "since")


@dataclass
class KeyFact:
    kind: str  # baseline | latest | label | score | red_flag | incongruence
    patient: int
    domain: str | None
    visit: int | None = None
    value: float | None = None
    item: str | None = None
    ref_visit: int | None = None
    label: str = ""
    stated: bool = False

    def describe(self) -> str:
        who = f"patient {self.patient}" if self.patient >= 0 else "cohort"
        return f"{who}: {self._what()}"

    def _what(self) -> str:
        v = f"{self.value:g}" if self.value is not None else "?"
        if self.kind == "baseline":
            return f"{self.domain} first selected score {v} (visit {self.visit})"
        if self.kind == "latest":
            return f"{self.domain} latest score {v} (visit {self.visit})"
        if self.kind == "score":
            return f"{self.domain} score {v} (visit {self.visit})"
        if self.kind == "label":
            return (
                f"{self.domain} change from visit {self.ref_visit} to visit {self.visit}: "
                f"{v} ({self.label})"
            )
        if self.kind == "red_flag":
            return f"red-flag item {self.item} = {v} at visit {self.visit}"
        if self.kind == "cohort":
            return f"cohort finding ({self.domain}): {v}"
        return f"incongruence at visit {self.visit}: {self.domain} elevated"

    def to_dict(self) -> dict[str, Any]:
        return {"fact": self.describe(), "kind": self.kind, "stated": self.stated}


@dataclass
class Coverage:
    key_facts: list[KeyFact] = field(default_factory=list)

    @property
    def value(self) -> float:
        if not self.key_facts:
            return 1.0
        return sum(k.stated for k in self.key_facts) / len(self.key_facts)

    @property
    def missing(self) -> list[KeyFact]:
        return [k for k in self.key_facts if not k.stated]

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "stated": sum(k.stated for k in self.key_facts),
            "total": len(self.key_facts),
            "missing": [k.describe() for k in self.missing],
        }


def key_facts(
    agent: str,
    ledger: Sequence[FactValue] | LedgerIndex,
    flags: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    cohort: Mapping[str, Any] | None = None,
    analysis: str | None = None,
) -> list[KeyFact]:
    """The key facts an agent's text must state: the one definition
    (engine.clinical.key_facts.key_specs) over the ledger's score series and MCID label."""
    view = ledger.view if isinstance(ledger, LedgerIndex) else FactsView(ledger)
    scores = {k: {v: float(fv.value) for v, fv in ser.items()} for k, ser in view.scores.items()}
    specs = key_specs(agent, scores, view.label, flags, cohort, analysis)
    return [KeyFact(**vars(s)) for s in specs]


def coverage(
    report: StatementReport,
    facts: Sequence[KeyFact],
    plan_patients: Sequence[int] = (),
    *,
    single_domain: str | None = None,
) -> Coverage:
    """Mark which key facts the supported sentences of `report` state."""
    in_ok = _SpanTest([s.span for s in report.sentences if s.status == "supported"])
    claims = [c for c in report.claims.claims if c.status == "correct" and in_ok(c.start)]
    word_facts = [
        f for s in report.sentences if s.status == "supported" for f in s.facts if "assertion" in f
    ]
    one_patient = len(set(plan_patients)) == 1 or len({k.patient for k in facts}) == 1
    named = _items_named(report)
    values = [c for c in claims if c.role == "value"]  # all but a cohort fact need a value claim
    for k in facts:
        pool = claims if k.kind == "cohort" else values
        k.stated = (
            any(_claim_states(c, k, one_patient, single_domain) for c in pool)
            or any(_word_states(f, k) for f in word_facts)
            or (k.kind == "red_flag" and k.item in named)
        )
    return Coverage(list(facts))


def _items_named(report: StatementReport) -> set[str]:
    """Item codes named in sentences that are not unsupported (a red flag listed by name, e.g.
    "current red flags (pain)", states the flag)."""
    from engine.grounding.cues import item_cues

    in_ok = _SpanTest([s.span for s in report.sentences if s.status != "unsupported"])
    out: set[str] = set()
    for start, _end, value in item_cues(report.text):
        if in_ok(start):
            out |= set(value[0])
    return out


class _SpanTest:
    """Whether a position lies in one of `spans` (a <= pos < b): by bisection when the spans are
    in order and do not overlap (sentence spans are), else by a scan."""

    def __init__(self, spans: Sequence[tuple[int, int]]):
        self.spans = list(spans)
        self.starts = [a for a, _b in self.spans]
        self.ordered = all(
            b0 <= a1 for (_a0, b0), (a1, _b1) in zip(self.spans, self.spans[1:], strict=False)
        ) and self.starts == sorted(self.starts)

    def __call__(self, pos: int) -> bool:
        if not self.ordered:
            return any(a <= pos < b for a, b in self.spans)
        i = bisect_right(self.starts, pos) - 1
        return i >= 0 and self.spans[i][0] <= pos < self.spans[i][1]


def _same(a: Any, b: Any, lenient: bool) -> bool:
    return a == b or (lenient and a is None)


def _claim_states(c, k: KeyFact, one_patient: bool, single_domain: str | None) -> bool:
    if k.kind == "cohort":
        if k.patient >= 0:
            return c.role == "patient" and int(c.value) == k.patient
        return c.role == "value" and abs(c.value - (k.value or 0)) <= 0.005 + 1e-9
    if c.role != "value" or not _same(c.patient, k.patient, one_patient):
        return False
    dom_ok = _same(c.domain, k.domain, single_domain is not None and single_domain == k.domain)
    if k.kind in ("baseline", "latest", "score"):
        return (
            c.kind in ("score", None)
            and c.items is None
            and dom_ok
            and (c.visit == k.visit or c.visit is None and k.kind != "score")
            and abs(c.value - (k.value or 0)) < 1e-9
        )
    if k.kind == "label":
        signed = c.value if c.signed or c.direction is None else c.value * c.direction
        return (
            c.kind in CHANGE_KINDS
            and dom_ok
            and c.visit in (k.visit, None)
            and c.ref_visit in (k.ref_visit, None)
            and abs(abs(signed) - abs(k.value or 0)) < 1e-9
            and (c.signed or c.direction is not None or k.value == 0)
            and abs(signed - (k.value or 0)) < 1e-9
        )
    if k.kind == "red_flag":
        return bool(c.items and k.item in c.items) and c.visit in (k.visit, None)
    if k.kind == "incongruence":
        return c.domain == k.domain and c.visit == k.visit
    return False


def _word_states(f: Mapping[str, Any], k: KeyFact) -> bool:
    if f.get("patient") != k.patient:
        return False
    if k.kind == "label":
        return (
            f["assertion"] == "direction"
            and f.get("domain") == k.domain
            and f.get("span") == [k.ref_visit, k.visit]
        )
    if k.kind == "red_flag":
        return f["assertion"] in ("presence", "severity") and f.get("item") == k.item
    return False
