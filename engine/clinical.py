"""Glue between the pipeline and the issue-11 clinical modules (engine.clinical_course, engine.findings,
engine.readable_text): one call per pipeline step, so the nodes stay small and the clinical code
stays in its own modules whatever the node layout."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine import facts_text
from engine.clinical_course import compute_courses, course_values, courses_json  # noqa: F401
from engine.contexts import Contexts
from engine.findings import Findings, findings_values, patient_findings
from engine.readable_text import (
    excluded_sentence,
    given_facts,
    patient_summary,
    red_flag_paragraphs,
)
from engine.types import Fact, FactValue


def course_and_findings(
    facts: Sequence[Fact], ctx: Contexts, patients: Sequence[int]
) -> dict[str, Any]:
    """State fields `courses` and `findings` (findings before red-flag rows: rises, negatives)."""
    from engine.agents.final import red_flags

    courses = compute_courses(facts, ctx)
    rows = red_flags(facts, ctx)
    present = {f.patient for f in facts}
    findings = {p: patient_findings(p, facts, rows, ctx, courses) for p in patients if p in present}
    return {"courses": courses, "findings": findings}


def ledger_values(
    courses: Mapping, findings: Mapping[int, Findings], excluded: Sequence[Mapping] = ()
) -> list[FactValue]:
    onset = {
        r["rule"]: r["threshold"] for fd in findings.values() for r in fd.new_onset
    }  # new-onset rules: "at or above 1" after zero at every earlier assessment
    thresholds = [
        FactValue(
            "threshold",
            float(v),
            item=f"red_flag_{rule}",
            label="new onset: first rating at or above",
            source="contexts/thresholds.json findings.new_onset",
        )
        for rule, v in onset.items()
    ]
    return (
        course_values(dict(courses))
        + findings_values(findings)
        + excluded_values(excluded)
        + thresholds
    )


def excluded_values(rows: Sequence[Mapping[str, Any]]) -> list[FactValue]:
    """Date parts of the sessions excluded at ingest, so the sentence naming them is checkable
    (visit None: they belong to no visit)."""
    from kb_store.dates import DateParseError, parse_date

    out = []
    for r in rows:
        raw = str(r.get("date", "")).split(" ")[0]
        try:
            d = parse_date(raw).date
        except (DateParseError, ValueError):
            continue
        for lab, x in (("year", d.year), ("month", d.month), ("day", d.day)):
            out.append(
                FactValue(
                    "date",
                    float(x),
                    r.get("patient"),
                    None,
                    date=d.isoformat(),
                    label=f"{lab} of a session excluded at ingest ({r.get('rule')})",
                    source=f"{r.get('file')}:{r.get('row')}",
                )
            )
    return out


def all_red_flags(rows: list[dict], findings: Mapping[int, Findings]) -> list[dict]:
    """Threshold red flags plus new-onset rows, in patient, visit, item order. Each row says
    whether it is `current`: the row of a current flag group at that group's latest assessment
    (what the summary lists as a current red flag; computed here once, read by the checks)."""
    extra = [r for fd in findings.values() for r in fd.new_onset]
    current = {
        (p, g.item, g.visits[-1])
        for p, fd in findings.items()
        for g in fd.flags
        if g.current and g.visits
    }
    out = sorted([*rows, *extra], key=lambda r: (r["patient"], r["visit"], r["item"]))
    return [{**r, "current": (r["patient"], r["item"], r["visit"]) in current} for r in out]


def readable_trajectory(st: Any, ctx: Contexts) -> str:
    paras = [
        patient_summary(p, st.courses, st.findings[p], ctx, st.excluded)
        for p in st.plan.patients
        if p in st.findings
    ]
    missing = [p for p in st.plan.patients if p not in st.findings]
    ex = [e for e in st.excluded if e.get("patient") in missing]
    if ex:
        paras.append(excluded_text(ex))
    return "\n\n".join(paras)


def readable_comparison(st: Any, flags: Mapping[str, Sequence[dict]]) -> str:
    """The comparison summary: one paragraph per domain contrasting the patients, discordance,
    incongruence, then each patient's red flags written as the trajectory text writes them (per
    item, visits collapsed, current or resolved) instead of one row per visit."""
    paras = [
        facts_text.comparison_text(st.series, st.plan.patients),
        facts_text.flags_text(flags, red_flags=False),
        *red_flag_paragraphs(st.findings, st.plan.patients),
    ]
    if not flags.get("incongruence") and not flags.get("red_flags"):
        paras.append(facts_text.NO_FLAGS)
    return "\n\n".join(x for x in paras if x)


def excluded_text(rows: Sequence[Mapping[str, Any]]) -> str:
    return excluded_sentence(rows)


def baseline_note(state: Any) -> str:
    """For baseline plans: which visit is each instrument's first assessment (issue 11 point 6:
    visit numbers are shared across instruments, baseline is per instrument)."""
    if state.plan.visit_filter not in ("baseline", "baseline_vs_latest"):
        return ""
    words = {"updrs": "UPDRS", "pdq8": "PDQ-8"}
    out = []
    for (p, inst), ic in sorted(state.courses.items()):
        if ic.visits and ic.visits[0] != 1:
            out.append(
                f"For patient {p}, the {words.get(inst, inst)} baseline is visit {ic.visits[0]}, "
                f"the first {words.get(inst, inst)} assessment (visits are numbered across "
                "instruments)."
            )
    return " ".join(out)


def final_given_facts(state: Any) -> str:
    """The given facts of the final agent's prompt, one line each (engine.readable_text.given_facts
    per planned patient); "none" when no patient has a course (e.g. cohort mode is not given them)."""
    out = [
        given_facts(p, state.courses, state.findings[p])
        for p in state.plan.patients
        if p in state.findings
    ]
    return "\n\n".join(x for x in out if x) or "none"
