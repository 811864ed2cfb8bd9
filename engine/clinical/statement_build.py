"""Build a run's statements once, from the facts, the series, the courses, the findings, the
cohort answer and the contexts (engine.clinical.statements has the type).

Two layers, built in this order:
1. value statements: every ledger value, grouped by what it is about (one session's part score
   with its items, one session's visit and date, one change, one part's course numbers, one
   threshold ...), in the ledger's order, so that `ledger_of(statements)` is the run's ledger;
2. judgement statements: the clinical findings (a part's change with its MCID label, its band,
   course shape, peak and low, trend; each red flag with its status, new onsets, item findings,
   pertinent negatives, incongruences, what to monitor, partial and excluded sessions). Each
   states values of the first layer (the same objects), looked up by their key.
Whether a statement is a key fact is decided by engine.clinical.key_facts.is_key.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any

from engine.clinical.course import InstrumentCourse, course_values
from engine.clinical.findings import Findings, findings_values, incongruence_flags
from engine.clinical.judgements import judgement_statements
from engine.clinical.ledger import (
    cohort_values,
    count_values,
    excluded_values,
    fact_values,
    onset_threshold_values,
    series_values,
    threshold_values,
)
from engine.clinical.statements import Statement, StatementKind, Statements
from engine.contexts import Contexts
from engine.types import Fact, FactValue, SeriesRow


def _grouped(
    out: Statements,
    values: Iterable[FactValue],
    kind: Callable[[FactValue], StatementKind],
    key: Callable[[FactValue], Hashable],
) -> None:
    """Append one statement per run of consecutive values with the same key."""
    run: list[FactValue] = []
    last: Hashable = object()
    for v in values:
        k = key(v)
        if run and k != last:
            _flush(out, run, kind(run[0]))
            run = []
        run.append(v)
        last = k
    if run:
        _flush(out, run, kind(run[0]))


def _flush(out: Statements, run: list[FactValue], kind: StatementKind) -> None:
    first = run[0]
    visits = tuple(sorted({v.visit for v in run if v.visit is not None}))
    subject = first.domain if kind != "reference" else first.item
    # a value statement carries no judgement label; its rule is where its values come from
    sources = tuple(dict.fromkeys(v.source for v in run if v.source))
    out.add(
        Statement.make(
            out.next_id(), kind, first.patient, subject, visits, "", tuple(run), False, sources
        )
    )


def _fact_kind(v: FactValue) -> StatementKind:
    if v.domain is None:
        return "session"
    if v.kind == "count" and v.item == "missing_items":
        return "partial"
    return "score"


def _fact_key(v: FactValue) -> Hashable:
    return (v.patient, v.visit, v.domain)


def _patient_domain(v: FactValue) -> Hashable:
    return (v.patient, v.domain)


def _each(v: FactValue) -> Hashable:
    return id(v)


def _left_out(v: FactValue) -> Hashable:
    return (v.patient, v.source)


def value_statements(
    out: Statements,
    facts: Sequence[Fact],
    series: Mapping[tuple[int, str], Sequence[SeriesRow]],
    courses: Mapping[Any, InstrumentCourse],
    findings: Mapping[int, Findings],
    excluded: Sequence[Mapping[str, Any]],
    ctx: Contexts,
) -> None:
    """Layer 1 (see the module docstring), in the ledger's order."""
    _grouped(out, fact_values(facts), _fact_kind, _fact_key)
    _grouped(out, series_values(series), lambda _v: "change", _fact_key)
    _grouped(out, count_values(facts), lambda _v: "count", _each)
    _grouped(out, threshold_values(facts, ctx), lambda _v: "reference", _each)
    _grouped(out, course_values(dict(courses)), lambda _v: "course", _patient_domain)
    _grouped(out, findings_values(findings), lambda _v: "item_finding", _fact_key)
    # one statement per left-out session: its date parts and part scores
    _grouped(out, excluded_values(excluded), lambda _v: "excluded", _left_out)
    _grouped(out, onset_threshold_values(findings), lambda _v: "reference", _each)


def cohort_statements(
    out: Statements, cohort: Mapping[str, Any] | None, scope: Collection[int] | None = None
) -> None:
    """The cohort answer's values (slopes, statistics, ranks, ranked scores, counts)."""
    _grouped(out, cohort_values(cohort, scope), lambda _v: "cohort", _patient_domain)


def build_statements(
    facts: Sequence[Fact],
    series: Mapping[tuple[int, str], Sequence[SeriesRow]],
    courses: Mapping[Any, InstrumentCourse],
    findings: Mapping[int, Findings],
    excluded: Sequence[Mapping[str, Any]],
    ctx: Contexts,
    *,
    analysis: str = "trajectory",
    cohort: Mapping[str, Any] | None = None,
    scope: Collection[int] | None = None,
) -> Statements:
    """Every statement of one run (see the module docstring)."""
    out = Statements()
    value_statements(out, facts, series, courses, findings, excluded, ctx)
    if cohort is not None:
        cohort_statements(out, cohort, scope)
    judgement_statements(
        out, courses, findings, incongruence_flags(facts, ctx), excluded, analysis, cohort
    )
    return out
