"""Key-fact coverage: a text must state what it is for (its key facts), not only say nothing
false.

Key facts, from the ledger and the run's flags:
- a domain agent (motor, adl, nonmotor, qol): for each patient with a score in the domain, the
  first selected score ("baseline"), the latest score and, with two or more visits, the change label
  (the change from the first to the latest visit);
- the final agent: for each patient and domain, the change label (with one selected visit, or in
  a single-session analysis: the score of each selected session), and every current flag (each red-flag item and each incongruence);
- the final agent of a cohort plan: the finding (the rank-1 patient named, or the cohort value);
- comparison and cohort agents: none here (their numbers are checked claim by claim).

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

from engine.grounding.facts_view import FactsView
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.sentence_verdict import StatementReport
from engine.types import FactValue

DOMAIN_AGENTS = ("motor", "adl", "nonmotor", "qol")
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
    """The key facts an agent's text must state (see the module docstring). A single-session
    analysis describes sessions, not change: its final text states each selected session's
    domain scores instead of the change labels."""
    view = ledger.view if isinstance(ledger, LedgerIndex) else FactsView(ledger)
    if agent in DOMAIN_AGENTS:
        return _domain_key_facts(view, agent)
    if agent == "final" and cohort:
        return _cohort_key_facts(cohort)
    if agent == "final":
        return _final_key_facts(view, analysis) + _flag_key_facts(view, flags or {})
    return []


def _domain_key_facts(view: FactsView, agent: str) -> list[KeyFact]:
    """A domain agent's: each patient's baseline and latest score of its domain, and the change
    label between them."""
    out: list[KeyFact] = []
    for (p, d), series in sorted(view.scores.items()):
        if d != agent or not series:
            continue
        vs = sorted(series)
        out.append(KeyFact("baseline", p, d, vs[0], float(series[vs[0]].value)))
        if len(vs) > 1:
            out.append(KeyFact("latest", p, d, vs[-1], float(series[vs[-1]].value)))
            ch = float(series[vs[-1]].value) - float(series[vs[0]].value)
            out.append(KeyFact("label", p, d, vs[-1], ch, ref_visit=vs[0], label=view.label(d, ch)))
    return out


def _cohort_key_facts(cohort: Mapping[str, Any]) -> list[KeyFact]:
    """Cohort mode: the finding itself (the rank-1 patient, or the cohort value)."""
    if cohort.get("patient") is not None:
        return [KeyFact("cohort", int(cohort["patient"]), cohort.get("domain"))]
    if cohort.get("value") is not None:
        return [KeyFact("cohort", -1, cohort.get("domain"), value=float(cohort["value"]))]
    return []


def _final_key_facts(view: FactsView, analysis: str | None) -> list[KeyFact]:
    """The final text's: each patient's change label per domain, or each session's score (one
    session, or a single-session analysis)."""
    out: list[KeyFact] = []
    for (p, d), series in sorted(view.scores.items()):
        if d not in DOMAIN_AGENTS or not series:
            continue
        vs = sorted(series)
        if len(vs) == 1 or analysis == "single_session":
            out += [KeyFact("score", p, d, v, float(series[v].value)) for v in vs]
        else:
            ch = float(series[vs[-1]].value) - float(series[vs[0]].value)
            out.append(KeyFact("label", p, d, vs[-1], ch, ref_visit=vs[0], label=view.label(d, ch)))
    return out


def _flag_key_facts(
    view: FactsView, flags: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[KeyFact]:
    """The final text's current red flags and incongruences (of each patient's latest visit)."""
    out: list[KeyFact] = []
    latest = {
        p: max(v for (q, _d), ser in view.scores.items() if q == p for v in ser)
        for p in view.patients
    }
    for r in flags.get("red_flags", []):
        # the engine marks current flags (each instrument's latest assessment); rows without
        # the mark (older results): the patient's latest visit
        if not r.get("current", r["visit"] == latest.get(r["patient"])):
            continue  # a flag of an earlier visit is history, not a current flag
        out.append(
            KeyFact(
                "red_flag",
                r["patient"],
                r.get("domain"),
                r["visit"],
                float(r["value"]),
                item=r["item"],
            )
        )
    for r in flags.get("incongruence", []):
        if r["visit"] != latest.get(r["patient"]):
            continue
        out.append(KeyFact("incongruence", r["patient"], r["elevated_domain"], r["visit"]))
    return out


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
