"""The whole course of one patient on one instrument: framing, per-domain course, implausible zeros.

Owns the longitudinal facts a clinician reports first, computed in
code from the fact table F (never from prose) so that the ledger, the readable text and the
dashboard share one computation:

- framing: number of assessments of the instrument, first and last date, the UPDRS total
  (Parts I+II+III) first -> last with its change and direction, and the PDQ-8 total with its
  Summary Index (100 x total / 32, Jenkinson et al. 1997);
- per domain: first (the instrument's baseline = its first session) and latest score, peak and
  trough with their visits when they are not the endpoints, the largest visit-to-visit swing,
  least-squares slope per visit and per year, a fluctuating course (a rise and a fall between
  consecutive assessments that each reach the domain's MCID, or the swing threshold of
  contexts/thresholds.json `course` when there is none), the severity band of the latest score;
- implausible zeros: an assessment (or a domain of it) scoring 0 on every item after a non-zero
  course is flagged as possibly missing data; a change to it is reported with that caveat.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.clinical.bands import band_of, course_rules
from engine.clinical.caveats import ZEROS
from engine.clinical.series import classify, slope_of
from engine.contexts import Contexts, Mcid
from engine.types import Change, Fact, FactValue
from kb_store.profiles import DOMAINS, UPDRS_DOMAINS

UPDRS_PARTS = UPDRS_DOMAINS
ROUND_TOL = 0.005


@dataclass(frozen=True)
class Point:
    visit: int
    date: str
    score: float


@dataclass
class DomainCourse:
    patient: int
    domain: str  # nonmotor | adl | motor | qol | total
    profile: str
    points: list[Point]
    change: Change | None = None
    peak: Point | None = None  # highest score when not at the first or latest assessment
    trough: Point | None = None  # lowest score when not at the first or latest assessment
    swing: tuple[Point, Point, float] | None = None  # largest |delta| between consecutive points
    slope_visit: float | None = None
    slope_year: float | None = None
    fluctuating: bool = False
    band: str | None = None  # severity band of the latest score
    band_basis: str = ""  # published | reference
    zero_suspect: list[int] = field(default_factory=list)  # visits at 0 after a non-zero course
    all_zero: bool = False  # every item 0 at every (>= 2) assessment while other parts were not
    latest_suspect: bool = False  # the latest score is possibly missing data: no band is given
    partial: dict[int, tuple[int, int]] = field(default_factory=dict)  # visit -> (blank, items)
    slope_basis: int = 0  # > 0: the slope leaves out scores with a caveat, over this many

    @property
    def unread_ends(self) -> bool:
        """The first or latest score is partial: no MCID label is read from the change."""
        return self.first.visit in self.partial or self.last.visit in self.partial

    @property
    def first(self) -> Point:
        return self.points[0]

    @property
    def last(self) -> Point:
        return self.points[-1]


@dataclass
class InstrumentCourse:
    patient: int
    instrument: str  # updrs | pdq8
    visits: list[int]  # the instrument's assessments (shared visit indices), in order
    dates: list[str]
    domains: dict[str, DomainCourse]  # includes "total" for UPDRS when computable
    zero_sessions: list[int] = field(default_factory=list)  # every item 0 after a non-zero course
    si: dict[int, float] = field(default_factory=dict)  # PDQ-8 Summary Index per visit

    @property
    def n(self) -> int:
        return len(self.visits)

    def is_suspect(self, domain: str, visit: int) -> bool:
        """Whether `domain` at `visit` is possibly missing data (a zero session, or the domain at 0
        on every item after a non-zero course): it asserts neither absence nor resolution."""
        dc = self.domains.get(domain)
        return visit in self.zero_sessions or (dc is not None and visit in dc.zero_suspect)


def is_fluctuating(deltas: Sequence[float], mcid: Mcid | None, swing_min: float) -> bool:
    """The one definition of a fluctuating course (docs/engine.md): between consecutive
    assessments, a rise of at least max(worsening MCID, swing floor) and a fall of at least
    max(|improvement MCID|, swing floor); with no MCID (the UPDRS total, PDQ-8) the swing floor
    alone (contexts/thresholds.json course.swing_min_points, 10 points)."""
    up = mcid.worsening if mcid else swing_min
    down = mcid.improvement if mcid else -swing_min
    big_up = any(d >= max(up, swing_min) for d in deltas)
    big_down = any(d <= min(down, -swing_min) for d in deltas)
    return big_up and big_down


def _domain_course(
    patient: int, domain: str, profile: str, pts: list[Point], ctx: Contexts, rules: dict
) -> DomainCourse:
    dc = DomainCourse(patient, domain, profile, pts)
    mcid = ctx.mcid_for(profile, domain) if domain != "total" else None
    swing_min = float(rules["course"]["swing_min_points"])
    if len(pts) >= 2:
        dc.change = classify(pts[-1].score - pts[0].score, mcid)
        inner = pts[1:-1]
        if inner:
            hi = max(inner, key=lambda p: p.score)
            lo = min(inner, key=lambda p: p.score)
            if hi.score > max(pts[0].score, pts[-1].score):
                dc.peak = hi
            if lo.score < min(pts[0].score, pts[-1].score):
                dc.trough = lo
        deltas = [(a, b, b.score - a.score) for a, b in zip(pts, pts[1:], strict=False)]
        a, b, d = max(deltas, key=lambda t: (abs(t[2]), -t[1].visit))
        if d != 0:
            dc.swing = (a, b, d)
        dc.fluctuating = is_fluctuating([x[2] for x in deltas], mcid, swing_min)
        # the one slope computation of the engine (engine.clinical.series.slope_of), 2 decimals
        sl = slope_of(patient, domain, [(p.visit, p.date, p.score) for p in pts])
        dc.slope_visit, dc.slope_year = sl.slope, sl.slope_year
    if domain != "total":
        dc.band, dc.band_basis = band_of(ctx, rules, profile, domain, pts[-1].score)
    return dc


def compute_courses(
    facts: Sequence[Fact], ctx: Contexts
) -> dict[tuple[int, str], InstrumentCourse]:
    """(patient, instrument) -> its course over the selected assessments."""
    rules = course_rules(ctx)
    by: dict[tuple[int, str], list[Fact]] = defaultdict(list)
    for f in facts:
        by[(f.patient, f.instrument)].append(f)
    out: dict[tuple[int, str], InstrumentCourse] = {}
    for (p, inst), fs in sorted(by.items()):
        visits = sorted({f.visit for f in fs})
        date_of = {f.visit: f.date for f in fs}
        profile = fs[0].profile
        per_dom: dict[str, list[Point]] = defaultdict(list)
        for f in sorted(fs, key=lambda f: f.visit):
            if f.score is not None:
                per_dom[f.domain].append(Point(f.visit, f.date, float(f.score)))
        ic = InstrumentCourse(p, inst, visits, [date_of[v] for v in visits], {})
        for d in DOMAINS:
            if per_dom.get(d):
                ic.domains[d] = _domain_course(p, d, profile, per_dom[d], ctx, rules)
        if inst == "updrs":
            tot = []
            for v in visits:
                scores = {f.domain: f.score for f in fs if f.visit == v}
                if all(scores.get(d) is not None for d in UPDRS_PARTS):
                    tot.append(Point(v, date_of[v], float(sum(scores[d] for d in UPDRS_PARTS))))  # type: ignore[misc]
            if tot:
                ic.domains["total"] = _domain_course(p, "total", profile, tot, ctx, rules)
        if inst == "pdq8":
            # the Summary Index (100 x sum / 32, Jenkinson et al. 1997) needs all 8 items:
            # no pro-rating rule is on file, so a session with a blank item has none
            full = {f.visit for f in fs if f.domain == "qol" and f.missing == 0}
            ic.si = {
                pt.visit: round(pt.score / 32 * 100, 2)
                for pt in per_dom.get("qol", [])
                if pt.visit in full
            }
        _mark_zeros(ic, fs)
        out[(p, inst)] = ic
    return out


def _mark_caveats(ic: InstrumentCourse, fs: Sequence[Fact]) -> None:
    """Partial part scores and implausible zeros, as engine.clinical.caveats judged them over the
    patient's whole record (the facts carry them): a zero session, a part at 0 after an earlier
    score of at least the rule's points, a part at 0 at every assessment while another part was
    not, a part with more than the rule's share of its items blank."""
    by_visit: dict[int, list[Fact]] = defaultdict(list)
    for f in fs:
        if f.score is not None:
            by_visit[f.visit].append(f)
    ic.zero_sessions = [
        v for v in ic.visits if by_visit[v] and all(f.caveat == "zero_session" for f in by_visit[v])
    ]
    for f in sorted(fs, key=lambda f: f.visit):
        dc = ic.domains.get(f.domain)
        if dc is None or f.score is None:
            continue
        if f.caveat in ZEROS:
            dc.zero_suspect.append(f.visit)
        elif f.caveat == "partial":
            dc.partial[f.visit] = (f.missing, len(f.items))
    for dc in ic.domains.values():
        fd = [f for f in fs if f.domain == dc.domain and f.score is not None]
        dc.all_zero = len(fd) >= 2 and all(f.caveat == "zero_always" for f in fd)


def _mark_zeros(ic: InstrumentCourse, fs: Sequence[Fact]) -> None:
    """The caveats of the course (`_mark_caveats`), then what they withhold: no band at a latest
    score with a caveat, no MCID label from a change to or from one (the text says why), and the
    slope over the assessments without one (engine.clinical.caveats)."""
    _mark_caveats(ic, fs)
    parts = [d for d in ic.domains if d not in ("total", "qol")]
    if "total" in ic.domains:
        tot = ic.domains["total"]
        suspect = set(ic.zero_sessions)
        partial: dict[int, tuple[int, int]] = {}
        for d in parts:
            suspect |= set(ic.domains[d].zero_suspect)
            partial |= ic.domains[d].partial
        tot.zero_suspect = sorted(v for v in suspect if v in {p.visit for p in tot.points})
        tot.partial = {v: partial[v] for v in sorted(partial) if v in {p.visit for p in tot.points}}
    for d, dc in ic.domains.items():
        if dc.last.visit in dc.zero_suspect or (d != "total" and ic.is_suspect(d, dc.last.visit)):
            # a suspect zero is no severity: the caveat replaces the band word
            dc.latest_suspect = True
            dc.band, dc.band_basis = None, ""
        if dc.last.visit in dc.partial:
            dc.band, dc.band_basis = None, ""
        unread = set(dc.zero_suspect) | set(dc.partial)
        if d != "total":
            unread |= set(ic.zero_sessions)
        if unread & {p.visit for p in dc.points}:
            read = [p for p in dc.points if p.visit not in unread]
            dc.slope_visit = dc.slope_year = None
            if len(read) >= 2:
                sl = slope_of(ic.patient, d, [(p.visit, p.date, p.score) for p in read])
                dc.slope_visit, dc.slope_year = sl.slope, sl.slope_year
            dc.slope_basis = len(read)


def course_values(courses: dict[tuple[int, str], InstrumentCourse]) -> list[FactValue]:
    """Ledger rows for every number the course text may state (kinds as the checker reads them)."""
    out: list[FactValue] = []
    for (p, inst), ic in courses.items():
        for dom in (None, *ic.domains):
            out.append(FactValue("count", float(ic.n), p, domain=dom, label=f"{inst} assessments"))
        for dom, dc in ic.domains.items():
            if dom == "total":
                for pt in dc.points:
                    out.append(
                        FactValue(
                            "score",
                            pt.score,
                            p,
                            pt.visit,
                            "total",
                            date=pt.date,
                            label="UPDRS total (Parts I+II+III)",
                            source="computed",
                        )
                    )
                prev = None
                for pt in dc.points:
                    if prev is not None:
                        out.append(
                            FactValue(
                                "delta",
                                pt.score - prev.score,
                                p,
                                pt.visit,
                                "total",
                                date=pt.date,
                                label=f"total change from visit {prev.visit}",
                                source="computed",
                            )
                        )
                    if pt is not dc.first:
                        out.append(
                            FactValue(
                                "cumulative",
                                pt.score - dc.first.score,
                                p,
                                pt.visit,
                                "total",
                                date=pt.date,
                                label=f"total change from visit {dc.first.visit}",
                                source="computed",
                            )
                        )
                    prev = pt
            for kind, val, unit in (
                ("slope", dc.slope_visit, "visit"),
                ("slope_year", dc.slope_year, "year"),
            ):
                if val is not None:
                    out.append(
                        FactValue(
                            kind,
                            val,
                            p,
                            domain=dom,
                            tolerance=ROUND_TOL,
                            label=f"least-squares slope, points per {unit}",
                            source="computed",
                        )
                    )
        for v, si in ic.si.items():
            out.append(
                FactValue(
                    "pdq8_si",
                    si,
                    p,
                    v,
                    "qol",
                    label="PDQ-8 summary index",
                    tolerance=ROUND_TOL,
                    source="computed",
                )
            )
    return out


def courses_json(courses: dict[tuple[int, str], InstrumentCourse]) -> list[dict[str, Any]]:
    """JSON-ready rows for Result / the dashboard (which renders, never recomputes)."""
    out = []
    for (p, inst), ic in courses.items():
        doms = {}
        for d, dc in ic.domains.items():
            doms[d] = {
                "first": vars(dc.first),
                "latest": vars(dc.last),
                "change": None if dc.change is None else vars(dc.change),
                "peak": None if dc.peak is None else vars(dc.peak),
                "trough": None if dc.trough is None else vars(dc.trough),
                "swing": None
                if dc.swing is None
                else {"from": vars(dc.swing[0]), "to": vars(dc.swing[1]), "delta": dc.swing[2]},
                "slope_visit": dc.slope_visit,
                "slope_year": dc.slope_year,
                "fluctuating": dc.fluctuating,
                "band": dc.band,
                "band_basis": dc.band_basis,
                "zero_suspect": dc.zero_suspect,
                "all_zero": dc.all_zero,
                "latest_suspect": dc.latest_suspect,
                **(
                    {"partial": {str(v): list(m) for v, m in dc.partial.items()}}
                    if dc.partial
                    else {}
                ),
            }
        out.append(
            {
                "patient": p,
                "instrument": inst,
                "assessments": ic.n,
                "visits": ic.visits,
                "dates": ic.dates,
                "zero_sessions": ic.zero_sessions,
                "pdq8_si": ic.si,
                "domains": doms,
            }
        )
    return out


def iter_courses(
    courses: dict[tuple[int, str], InstrumentCourse], patient: int
) -> Iterable[InstrumentCourse]:
    for inst in ("updrs", "pdq8"):
        if (patient, inst) in courses:
            yield courses[(patient, inst)]
