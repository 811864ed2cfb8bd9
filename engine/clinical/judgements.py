"""Judgement statements: the clinical findings of a run, each stating ledger values it looks up
by key among the value statements already built (engine.clinical.statement_build, layer 2).

The judgements themselves are made elsewhere, once: the MCID label (engine.clinical.series
.classify), band and course shape (engine.clinical.course, engine.clinical.bands), red-flag status
(engine.clinical.findings.flag_status), what to monitor (engine.clinical.monitor), key facts
(engine.clinical.key_facts). Here they become statements with the values they state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.clinical.course import DomainCourse, InstrumentCourse, iter_courses
from engine.clinical.findings import Findings, FlagGroup
from engine.clinical.key_facts import KeySpec, key_specs
from engine.clinical.ledger import SWING_MIN
from engine.clinical.monitor import to_monitor
from engine.clinical.series import classify
from engine.clinical.statements import Statement, StatementKind, Statements
from engine.contexts import Mcid
from engine.types import FactValue

Key = tuple[str, int | None, int | None, str | None, str | None]


class ValueIndex:
    """The value statements' values by (kind, patient, visit, domain, item)."""

    def __init__(self, values: Sequence[FactValue]):
        self.by: dict[Key, list[FactValue]] = {}
        self.thresholds: dict[tuple[str | None, str | None], list[FactValue]] = {}
        self.by_kind: dict[str, list[FactValue]] = {}
        #: item ratings by (patient, visit, item code), whatever their domain
        self.items: dict[tuple[int | None, int | None, str | None], list[FactValue]] = {}
        for v in values:
            self.by_kind.setdefault(v.kind, []).append(v)
            if v.kind == "item":
                self.items.setdefault((v.patient, v.visit, v.item), []).append(v)
            self.by.setdefault((v.kind, v.patient, v.visit, v.domain, v.item), []).append(v)
            if v.kind == "threshold":
                self.thresholds.setdefault((v.domain, v.item), []).append(v)

    def get(
        self,
        kind: str,
        patient: int | None,
        visit: int | None,
        domain: str | None,
        item: str | None = None,
    ) -> list[FactValue]:
        return self.by.get((kind, patient, visit, domain, item), [])

    def threshold(self, domain: str | None, prefix: str) -> list[FactValue]:
        return [
            v
            for (d, item), vs in self.thresholds.items()
            if d == domain and item and item.startswith(prefix)
            for v in vs
        ]

    def mcid(self, domain: str) -> Mcid | None:
        m = {v.item: v.value for v in self.threshold(domain, "mcid_")}
        if "mcid_worsening" not in m or "mcid_improvement" not in m:
            return None
        return Mcid(float(m["mcid_improvement"]), float(m["mcid_worsening"]), "ledger")


class _Builder:
    def __init__(self, out: Statements, keys: set[tuple], idx: ValueIndex):
        self.out = out
        self.idx = idx
        self.keys = keys

    def add(
        self,
        kind: StatementKind,
        patient: int | None,
        subject: str | None,
        visits: Sequence[int],
        label: str,
        values: Sequence[FactValue],
        rules: Sequence[str] = (),
        key: tuple | None = None,
    ) -> None:
        self.out.add(
            Statement.make(
                self.out.next_id(),
                kind,
                patient,
                subject,
                tuple(visits),
                label,
                tuple(dict.fromkeys(values)),
                key is not None and key in self.keys,
                tuple(rules),
            )
        )

    def scores(self, p: int, dom: str, visits: Sequence[int]) -> list[FactValue]:
        return [x for v in visits for x in self.idx.get("score", p, v, dom)]

    def sessions(self, p: int, visits: Sequence[int]) -> list[FactValue]:
        out: list[FactValue] = []
        for v in visits:
            out += self.idx.get("visit", p, v, None)
            out += self.idx.get("date", p, v, None)
        return out


def _change_label(dc: DomainCourse) -> str:
    if dc.unread_ends:
        return "partial"  # no MCID label from a partial score (engine.clinical.caveats)
    if dc.all_zero or dc.latest_suspect:
        return "possible missing data"
    return dc.change.label if dc.change else ""


def _course(b: _Builder, ic: InstrumentCourse, dc: DomainCourse) -> None:
    p, d = dc.patient, dc.domain
    vis = [pt.visit for pt in dc.points]
    scores = b.scores(p, d, vis)
    course = b.idx.get("count", p, None, d)
    if dc.change is not None:
        last = dc.last.visit
        cum = b.idx.get("cumulative", p, last, d)
        mcid = b.idx.threshold(d, "mcid_")
        b.add(
            "change",
            p,
            d,
            (dc.first.visit, last),
            _change_label(dc),
            scores + cum + mcid + course,
            (dc.change.basis,) if getattr(dc.change, "basis", "") else (),
            ("label", p, d, last, dc.first.visit),
        )
    if dc.band:
        bounds = b.idx.threshold(d, "severity_")
        b.add(
            "band",
            p,
            d,
            (dc.last.visit,),
            dc.band,
            b.scores(p, d, [dc.last.visit]) + bounds,
            (dc.band_basis,),
        )
    if dc.fluctuating:
        deltas = [x for v in vis for x in b.idx.get("delta", p, v, d)]
        swing = b.idx.threshold(None, SWING_MIN)
        b.add("course_shape", p, d, vis, "fluctuating", scores + deltas + swing)
    for name, pt in (("peak", dc.peak), ("low", dc.trough)):
        if pt is not None:
            b.add("peak", p, d, (pt.visit,), name, b.scores(p, d, [pt.visit]))
    if dc.slope_visit is not None:
        slopes = b.idx.get("slope", p, None, d) + b.idx.get("slope_year", p, None, d)
        b.add("trend", p, d, vis, "slope", slopes)
    if ic.instrument == "pdq8" and d == "qol":
        si = [x for v in vis for x in b.idx.get("pdq8_si", p, v, d)]
        if si:  # none where an item is blank: the index needs all 8 items
            b.add("score", p, d, vis, "PDQ-8 Summary Index", si)


def _flag(b: _Builder, gs: Sequence[FlagGroup]) -> None:
    g0 = gs[0]
    p, item, d = g0.patient, g0.item, g0.domain
    vis = sorted({v for g in gs for v in g.visits} | {g.latest_visit for g in gs if g.latest_visit})
    values = [x for v in vis for x in b.idx.get("item", p, v, d, item)]
    values += [
        x for g in gs for x in b.idx.get("threshold", None, None, None, f"red_flag_{g.rule}")
    ]
    values += [x for v in vis for x in b.idx.get("visit", p, v, None)]  # the visits it names
    kind: StatementKind = (
        "new_onset" if all(g.rule.endswith("new_onset") for g in gs) else "red_flag"
    )
    status = "current" if any(g.current for g in gs) else gs[-1].status
    key = any(("red_flag", p, v, item) in b.keys for v in vis)
    b.out.add(
        Statement.make(
            b.out.next_id(),
            kind,
            p,
            item,
            tuple(vis),
            status,
            tuple(dict.fromkeys(values)),
            key,
            tuple(g.rule for g in gs),
        )
    )


def _findings(b: _Builder, p: int, fd: Findings) -> None:
    for h in fd.high:
        b.add(
            "item_finding",
            p,
            h.item,
            (h.visit,),
            h.word,
            b.idx.get("item", p, h.visit, h.domain, h.item),
        )
    for r in fd.rises:
        vis = [v for v in (r.first_visit, r.visit) if v is not None]
        vals = [x for v in vis for x in b.idx.get("item", p, v, r.domain, r.item)]
        vals += b.idx.get("cumulative", p, r.visit, r.domain, r.item)
        vals += b.idx.get("delta", p, r.visit, r.domain, r.item)
        b.add("item_finding", p, r.item, vis, f"up, now {r.word}", vals, ("item_rise",))
    by_item: dict[str, list[FlagGroup]] = {}
    for g in fd.flags:
        by_item.setdefault(g.item, []).append(g)
    for gs in by_item.values():
        _flag(b, gs)
    for code, words, v in fd.negatives:
        vals = b.idx.items.get((p, v, code), [])
        b.add("pertinent_negative", p, code, (v,), words, vals)


def judgement_statements(
    out: Statements,
    courses: Mapping[Any, InstrumentCourse],
    findings: Mapping[int, Findings],
    incongruence: Sequence[Mapping[str, Any]],
    excluded: Sequence[Mapping[str, Any]],
    analysis: str,
    cohort: Mapping[str, Any] | None,
) -> None:
    """Layer 2 of engine.clinical.statement_build (see its docstring)."""
    idx = ValueIndex(out.ledger)
    series: dict[tuple[int, str], dict[int, float]] = {}
    for (kind, p, v, d, _i), vs in idx.by.items():
        if kind == "score" and p is not None and v is not None and d:
            series.setdefault((p, d), {})[v] = float(vs[0].value)
    flags = {"red_flags": [], "incongruence": list(incongruence)}
    specs = key_specs(
        "final",
        series,
        lambda d, ch: classify(ch, idx.mcid(d)).label,
        flags,
        cohort,
        analysis,
    )
    keys = {_spec_key(s) for s in specs} | {
        ("red_flag", g.patient, v, g.item)
        for fd in findings.values()
        for g in fd.flags
        if g.current and not cohort  # a cohort answer's key fact is its finding alone
        for v in g.visits
    }
    b = _Builder(out, keys, idx)
    for p in sorted({p for p, _i in courses}):
        ics = list(iter_courses(dict(courses), p))
        for ic in ics:
            b.add(
                "count",
                p,
                ic.instrument,
                ic.visits,
                f"{ic.n} assessments",
                b.idx.get("count", p, None, None) + b.sessions(p, ic.visits),
            )
            for dc in ic.domains.values():
                _course(b, ic, dc)
        if p in findings:
            _findings(b, p, findings[p])
            for m in to_monitor(ics, findings[p]):
                b.add("monitor", p, m.domain, (), ", ".join(m.reasons or m.items), [])
    for r in incongruence:
        p, v = r["patient"], r["visit"]
        vals = b.scores(p, r["domain"], [v]) + b.scores(p, r["elevated_domain"], [v])
        vals += b.idx.threshold(r["elevated_domain"], "moderate_cutoff")
        b.add(
            "incongruence",
            p,
            r["elevated_domain"],
            (v,),
            "incongruent",
            vals,
            (str(r.get("rule", "")),),
            ("incongruence", p, v, r["elevated_domain"]),
        )
    for r in excluded:
        b.add("excluded", r.get("patient"), r.get("instrument"), (), str(r.get("rule", "")), [])
    out.mark_key([st.id for s in specs if s.kind == "score" for st in _score_of(out, s)])
    _cohort_finding(b, cohort)


def _score_of(out: Statements, s: KeySpec) -> list[Statement]:
    """The value statement of a key score (one session's part score)."""
    return [
        st
        for st in out.find("score", s.patient, s.domain, s.visit)
        if st.label != "PDQ-8 Summary Index"
    ]


def _spec_key(s: KeySpec) -> tuple:
    if s.kind == "label":
        return ("label", s.patient, s.domain, s.visit, s.ref_visit)
    if s.kind == "incongruence":
        return ("incongruence", s.patient, s.visit, s.domain)
    if s.kind == "cohort":
        return ("cohort",)
    return (s.kind, s.patient, s.visit, s.domain)


def _cohort_finding(b: _Builder, cohort: Mapping[str, Any] | None) -> None:
    if not cohort:
        return
    p = cohort.get("patient")
    # an item question's finding states the top patient's ratings (engine.clinical.item_cohort)
    kinds = ("item",) if cohort.get("statistic") == "item" else ("rank", "mean", "max", "min")
    vals = [
        v
        for kind in kinds
        for v in b.idx.by_kind.get(kind, ())
        if v.source == "computed" and (p is None or v.patient == p)
    ]
    b.add(
        "cohort",
        p,
        cohort.get("domain"),
        (),
        str(cohort.get("statistic", "")),
        vals,
        key=("cohort",),
    )
