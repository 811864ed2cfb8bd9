"""The run's ledger: every number the run's facts support, with its context.

Built in code from the fact table F, the computed series (deltas, cumulative change), table B, the
cohort statistics, the flags and the contexts' thresholds. The grounding guard checks generated text
against it; prompts render numbers at the same rounding (2 decimals for slopes and means, with a
tolerance of 0.005). `allowed_numbers` gives the string forms of the numbers in one prompt's facts.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from engine.clinical.course import course_rules, course_values
from engine.clinical.findings import Findings, findings_values
from engine.clinical.item_cohort import is_item_answer, item_values
from engine.clinical.rows import rows_of
from engine.clinical.unranked import counts as unranked_counts
from engine.contexts import Contexts
from engine.types import Fact, FactValue, SeriesRow, ValueKind

#: threshold name of the swing floor in the ledger (read by the statement checker)
SWING_MIN = "course_swing_min_points"
ROUND_TOL = 0.005  # values shown at 2 decimals
NUMBER_TOKEN_RE = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?")


def _date_parts(patient: int, visit: int, date: str, source: str) -> list[FactValue]:
    try:
        d = dt.date.fromisoformat(date)
    except ValueError:
        return []
    return [
        FactValue(
            "date",
            float(x),
            patient,
            visit,
            date=date,
            label=f"{lab} of visit {visit} date",
            source=source,
        )
        for lab, x in (("year", d.year), ("month", d.month), ("day", d.day))
    ]


def fact_values(facts: Iterable[Fact]) -> list[FactValue]:
    out: list[FactValue] = []
    seen_visits: set[tuple[int, int]] = set()
    for f in facts:
        if f.score is not None:
            out.append(
                FactValue.make(
                    "score",
                    f.score,
                    f.patient,
                    f.visit,
                    f.domain,
                    date=f.date,
                    label=f"{f.domain} score, patient {f.patient}, visit {f.visit}",
                    source=f.doc_id,
                )
            )
            if f.profile == "pdq8" and f.domain == "qol" and f.missing == 0:
                # the Summary Index needs all 8 items (no pro-rating rule on file)
                out.append(
                    FactValue.make(
                        "pdq8_si",
                        round(f.score / 32 * 100, 2),
                        f.patient,
                        f.visit,
                        f.domain,
                        date=f.date,
                        label="PDQ-8 summary index",
                        tolerance=ROUND_TOL,
                        source=f.doc_id,
                    )
                )
        for code, x in f.items.items():
            if x is not None:
                out.append(
                    FactValue.make(
                        "item",
                        float(x),
                        f.patient,
                        f.visit,
                        f.domain,
                        code,
                        f.date,
                        label=f"item {code}",
                        source=f.doc_id,
                    )
                )
        if f.missing:
            out.append(
                FactValue.make(
                    "count",
                    float(f.missing),
                    f.patient,
                    f.visit,
                    f.domain,
                    "missing_items",
                    f.date,
                    label="items missing from the domain score",
                    source=f.doc_id,
                )
            )
        if (f.patient, f.visit) not in seen_visits:
            seen_visits.add((f.patient, f.visit))
            out.append(
                FactValue.make(
                    "visit",
                    float(f.visit),
                    f.patient,
                    f.visit,
                    date=f.date,
                    label="visit index",
                    source=f.doc_id,
                )
            )
            out += _date_parts(f.patient, f.visit, f.date, f.doc_id)
    return out


def series_values(series: Mapping[tuple[int, str], Sequence[SeriesRow]]) -> list[FactValue]:
    out: list[FactValue] = []
    for rows in series.values():
        for r in rows:
            if r.delta is not None:
                out.append(
                    FactValue.make(
                        "delta",
                        r.delta.value,
                        r.patient,
                        r.visit,
                        r.domain,
                        date=r.date,
                        label=f"change from visit {r.prev_visit}",
                        source="computed",
                    )
                )
            if r.cumulative is not None:
                out.append(
                    FactValue.make(
                        "cumulative",
                        r.cumulative.value,
                        r.patient,
                        r.visit,
                        r.domain,
                        date=r.date,
                        label=f"change from {r.ref_word}",
                        source="computed",
                    )
                )
    return out


def count_values(facts: Sequence[Fact]) -> list[FactValue]:
    out: list[FactValue] = []
    patients = sorted({f.patient for f in facts})
    out.append(
        FactValue("count", float(len(patients)), label="number of patients", source="computed")
    )
    for p in patients:
        n = len({f.visit for f in facts if f.patient == p})
        out.append(
            FactValue("count", float(n), p, label="number of visits selected", source="computed")
        )
    return out


def _computed(kind: ValueKind, value: float, **kw: Any) -> FactValue:
    return FactValue.make(kind, value, source="computed", **kw)


def _slope_values(slopes: Sequence[Mapping[str, Any]]) -> list[FactValue]:
    out: list[FactValue] = []
    per: tuple[tuple[ValueKind, str], ...] = (("slope", "visit"), ("slope_year", "year"))
    for s in slopes:
        p, dom = s["patient"], s["domain"]
        for kind, unit in per:
            if s[kind] is not None:
                label = f"least-squares slope, points per {unit}"
                out.append(
                    _computed(
                        kind, s[kind], patient=p, domain=dom, tolerance=ROUND_TOL, label=label
                    )
                )
        out.append(
            _computed(
                "count", float(s["n_visits"]), patient=p, domain=dom, label="visits in the slope"
            )
        )
    return out


def _domain_stat_values(domain_stats: Mapping[str, Mapping[str, Any]]) -> list[FactValue]:
    out: list[FactValue] = []
    for dom, st in domain_stats.items():
        out += [
            _computed("max", st["max"], domain=dom, label="cohort maximum at latest visit"),
            _computed("min", st["min"], domain=dom, label="cohort minimum at latest visit"),
            _computed(
                "mean",
                st["mean"],
                domain=dom,
                tolerance=ROUND_TOL,
                label="cohort mean at latest visit",
            ),
            _computed("count", float(st["n_patients"]), domain=dom, label="patients with a score"),
        ]
    return out


def _ranking_values(
    key: str, rows: Sequence[Mapping[str, Any]], dom: str, keep: set[int] | None = None
) -> list[FactValue]:
    out: list[FactValue] = []
    for r in rows if keep is None else rows_of(rows, keep):
        p, v = r["patient"], r.get("visit")
        out.append(
            _computed(
                "rank", float(r["rank"]), patient=p, visit=v, domain=dom, label=f"rank in {key}"
            )
        )
        # the ranked value at the latest visit; a domain score is also a fact of F, but with a
        # scope F holds only the final table's patients, so it is stated here
        if v is not None and (dom == "total" or keep is not None):
            out.append(
                _computed(
                    "score",
                    r["value"],
                    patient=p,
                    visit=v,
                    domain=dom,
                    date=r.get("date"),
                    label="total UPDRS burden (Parts I+II+III)"
                    if dom == "total"
                    else f"{dom} score at the latest visit",
                )
            )
    if rows:
        out.append(_computed("count", float(len(rows)), domain=dom, label="patients ranked"))
    return out


def cohort_values(
    cohort: Mapping[str, Any] | None, scope: Collection[int] | None = None
) -> list[FactValue]:
    """The cohort answer's numbers: slopes, cohort statistics, ranks, totals and counts. With
    `scope` (the patients the answer can name, engine.clinical.table_stats.answer_scope) only
    those patients' slopes, ranks and ranked scores, plus a score at each domain's maximum and
    minimum: the ledger then scales with the answer, not with the cohort."""
    if not cohort:
        return []
    if is_item_answer(cohort):  # an item question: the named patients' ratings and the counts
        return item_values(cohort, scope)
    keep = None if scope is None else set(scope)
    slopes = cohort.get("slopes", [])
    scoped = slopes if keep is None else rows_of(slopes, keep)
    out = _slope_values(scoped)
    out += _domain_stat_values(cohort.get("domain_stats", {}))
    for key in ("ranking", "pdq8_ranking"):
        dom = cohort["domain"] if key == "ranking" else "qol"
        out += _ranking_values(key, cohort.get(key) or [], dom, keep)
    out.append(
        _computed("count", float(cohort.get("n_patients", 0)), label="patients in the cohort")
    )
    dom = cohort["domain"]
    out += [
        _computed("count", n, patient=p, domain=dom, label=lab)
        for n, lab, p in unranked_counts(cohort.get("not_ranked") or [])
    ]
    if keep is not None:
        out += _extreme_scores(cohort, scoped, keep)
    return out


def _extreme_scores(
    cohort: Mapping[str, Any], scoped: Sequence[Mapping[str, Any]], keep: Collection[int]
) -> list[FactValue]:
    """One patient's score at each domain's cohort maximum and minimum (at their latest scored
    visit, from the slope rows: `scoped` holds those of the `keep` patients, the others are
    read from the cohort's), so "scores range from 6 to 58" is checked against a fact."""
    need: dict[tuple[int, str, str], float] = {}
    for dom, st in cohort.get("domain_stats", {}).items():
        for which in ("max", "min"):
            if st[f"{which}_patients"]:
                need[(st[f"{which}_patients"][0], dom, which)] = st[which]
    pairs = {(p, d) for p, d, _ in need}
    who = {p for p, _ in pairs}
    rows = scoped if who <= set(keep) else rows_of(cohort.get("slopes", []), who)
    last = {
        (s["patient"], s["domain"]): s["last_visit"]
        for s in rows
        if (s["patient"], s["domain"]) in pairs
    }
    return [
        _computed(
            "score",
            v,
            patient=p,
            visit=last[(p, dom)],
            domain=dom,
            label=f"{dom} score at the latest visit (cohort {which}imum)",
        )
        for (p, dom, which), v in need.items()
        if (p, dom) in last
    ]


def _reference_band_values(ctx: Contexts, prof: str, dom: str) -> list[FactValue]:
    """The bounds of a profile's reference severity bands (contexts/thresholds.json
    course.reference_bands), where no published cut-offs exist: the facts text names the band
    of the latest score from them, so the statement check must be able to verify it."""

    try:
        ref = course_rules(ctx)["course"].get("reference_bands", {})
    except (OSError, ValueError, KeyError):
        return []
    spec = ref.get(prof, {}).get(dom)
    out: list[FactValue] = []
    for b in (spec or {}).get("bands", []):
        for v in (b.get("min"), b.get("max")):
            if v is not None:
                out.append(
                    FactValue(
                        "threshold",
                        float(v),
                        domain=dom,
                        item=f"severity_{b['level']}",
                        label=f"{prof} {b['level']} reference band bound",
                        source="contexts/thresholds.json course.reference_bands",
                    )
                )
    return out


def threshold_values(facts: Sequence[Fact], ctx: Contexts) -> list[FactValue]:
    out: list[FactValue] = []
    pairs = {(f.profile, f.domain) for f in facts}
    for prof, dom in sorted(pairs):
        m = ctx.mcid_for(prof, dom)
        if m is not None:
            for name, v in (("mcid_improvement", m.improvement), ("mcid_worsening", m.worsening)):
                out.append(
                    FactValue(
                        "threshold",
                        v,
                        domain=dom,
                        item=name,
                        label=f"{prof} {name}",
                        source="contexts/thresholds.json",
                    )
                )
        for b in ctx.severity.get(prof, {}).get(dom, ()):
            for v in (b.min, b.max):
                if v is not None:
                    out.append(
                        FactValue(
                            "threshold",
                            v,
                            domain=dom,
                            item=f"severity_{b.level}",
                            label=f"{prof} {b.level} band bound",
                            source="contexts/thresholds.json",
                        )
                    )
        if not ctx.severity.get(prof, {}).get(dom):
            out += _reference_band_values(ctx, prof, dom)  # what "(reference band)" says
        cut = ctx.moderate_cutoff(prof, dom)
        if cut is not None:
            out.append(
                FactValue(
                    "threshold",
                    cut,
                    domain=dom,
                    item="moderate_cutoff",
                    label=f"{prof} moderate cut-off",
                    source="contexts/thresholds.json",
                )
            )
    profiles = {p for p, _ in pairs}
    if pairs:  # the swing floor of a fluctuating course (engine.clinical.course.is_fluctuating)
        out.append(
            FactValue(
                "threshold",
                float(course_rules(ctx)["course"]["swing_min_points"]),
                item=SWING_MIN,
                label="smallest swing of a fluctuating course",
                source="contexts/thresholds.json course.swing_min_points",
            )
        )
    for rule in ctx.red_flags:
        if profiles & set(rule.items):
            out.append(
                FactValue(
                    "threshold",
                    rule.min,
                    item=f"red_flag_{rule.id}",
                    label=rule.label,
                    source="contexts/thresholds.json",
                )
            )
    return out


def build_ledger(
    facts: Sequence[Fact],
    series: Mapping[tuple[int, str], Sequence[SeriesRow]],
    ctx: Contexts,
    cohort: Mapping[str, Any] | None = None,
) -> list[FactValue]:
    return (
        fact_values(facts)
        + series_values(series)
        + count_values(facts)
        + cohort_values(cohort)
        + threshold_values(facts, ctx)
    )


def allowed_numbers(*texts: str) -> frozenset[str]:
    """String forms of the numbers in a prompt's facts (with and without sign)."""
    out: set[str] = set()
    for t in texts:
        for tok in NUMBER_TOKEN_RE.findall(t):
            out.add(tok)
            out.add(tok.lstrip("+-"))
    return frozenset(out)


def onset_threshold_values(findings: Mapping[int, Findings]) -> list[FactValue]:
    """The new-onset rules' thresholds ("at or above 1" after zero at every earlier assessment)."""
    onset = {r["rule"]: r["threshold"] for fd in findings.values() for r in fd.new_onset}
    return [
        FactValue(
            "threshold",
            float(v),
            item=f"red_flag_{rule}",
            label="new onset: first rating at or above",
            source="contexts/thresholds.json findings.new_onset",
        )
        for rule, v in onset.items()
    ]


def ledger_values(
    courses: Mapping, findings: Mapping[int, Findings], excluded: Sequence[Mapping] = ()
) -> list[FactValue]:
    return (
        course_values(dict(courses))
        + findings_values(findings)
        + excluded_values(excluded)
        + onset_threshold_values(findings)
    )


def excluded_values(rows: Sequence[Mapping[str, Any]]) -> list[FactValue]:
    """Date parts and part scores of the sessions left out at ingest, so the sentence naming
    them is checkable (visit None: they belong to no visit; source "file:row")."""
    from kb_store.exclusions import iso_date

    out = []
    for r in rows:
        iso = iso_date(dict(r))
        src = f"{r.get('file')}:{r.get('row')}"
        if iso is not None:
            d = dt.date.fromisoformat(iso)
            for lab, x in (("year", d.year), ("month", d.month), ("day", d.day)):
                out.append(
                    FactValue(
                        "date",
                        float(x),
                        r.get("patient"),
                        None,
                        date=iso,
                        label=f"{lab} of a session excluded at ingest ({r.get('rule')})",
                        source=src,
                    )
                )
        for dom, x in (r.get("scores") or {}).items():
            out.append(
                FactValue(
                    "score",
                    float(x),
                    r.get("patient"),
                    None,
                    dom,
                    date=iso,
                    label=f"score of a session left out at ingest ({r.get('rule')})",
                    source=src,
                )
            )
    return out
