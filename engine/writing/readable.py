"""The readable trajectory summary: what a movement-disorder clinician signs.

Deterministic prose over engine.clinical.course (framing, whole course per domain, implausible zeros) and
engine.clinical.findings (item findings, red flags, pertinent negatives). Style: short sentences, one
paragraph per domain, the patient named once, clinical words first and numbers in parentheses.
Every number is a ledger value written so the claim checker reads its context: a domain word in
every sentence with a number, a visit written after each value, red flags one per paragraph (the
checker orders visits per paragraph). The dense form (engine.writing.dense.trajectory_text) stays
available for the Provenance page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.clinical.course import DomainCourse, InstrumentCourse, iter_courses
from engine.clinical.findings import Findings
from engine.clinical.monitor import MonitorItem, to_monitor
from engine.clinical.series import fmt, fmt_signed
from engine.clinical.statements import Statements
from engine.contexts import Contexts
from engine.writing import dense
from engine.writing.citing import cite
from kb_store.profiles import DOMAIN_WORDS, DOMAINS, INSTRUMENT_WORDS

PART_WORDS = {
    "nonmotor": "Non-motor experiences (Part I)",
    "adl": "Motor experiences of daily living (ADL, Part II)",
    "motor": "Motor examination (Part III)",
    "qol": "Quality of life (PDQ-8)",
}


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _dom(d: str) -> str:
    return "UPDRS total" if d == "total" else DOMAIN_WORDS[d]


def _direction(dc: DomainCourse) -> str:
    c = dc.change
    if c is None:
        return ""
    if dc.unread_ends:
        return dense.partial_direction(dc)
    if dc.all_zero:
        return (
            "zero on every item at every assessment while other parts were not: possibly not "
            "examined or missing data, so no severity band is given"
        )
    if dc.domain == "total" and dc.latest_suspect:
        return "parts scored zero at the latest assessment, so this change may reflect missing data rather than a real change"
    if dc.latest_suspect:
        # the caveat replaces the band word (engine.clinical.course._mark_zeros drops the band)
        return (
            "zero at the latest assessment after non-zero scores: possibly missing data, not "
            "improvement, so no severity band is given"
        )
    if c.mcid is None:
        word = {"worsened": "worse", "improved": "better", "unchanged": "unchanged"}[c.label]
        return f"{word} overall" if c.label != "unchanged" else "unchanged overall"
    if c.label == "stable":
        lean = (
            "slightly higher" if c.value > 0 else "slightly lower" if c.value < 0 else "unchanged"
        )
        return f"no clinically meaningful change ({lean}, below the MCID)"
    return (
        "clinically meaningful worsening"
        if c.label == "worsened"
        else "clinically meaningful improvement"
    )


def _framing(ic: InstrumentCourse) -> list[str]:
    inst = INSTRUMENT_WORDS[ic.instrument]
    span = f"from {ic.dates[0]} to {ic.dates[-1]}" if len(ic.visits) > 1 else f"on {ic.dates[0]}"
    if ic.n > 1 and ic.dates[0] == ic.dates[-1]:
        span = f"on {ic.dates[0]} (same day, kept as separate assessments in source-row order)"
    which = ""
    if ic.n > 1 and ic.visits[0] != 1:
        # visit numbers are shared across instruments: say which visits are this instrument's
        which = f" (visits {', '.join(map(str, ic.visits[:-1]))} and {ic.visits[-1]})"
    sents = (
        [f"{inst}: {ic.n} assessments{which} {span}."]
        if ic.n > 1
        else [
            f"{inst}: one assessment {span} (visit {ic.visits[0]}), so no course can be described."
        ]
    )
    tot = ic.domains.get("total")
    if tot is not None and ic.n > 1 and len(tot.points) > 1:
        d = ("a fluctuating course, " if tot.fluctuating else "") + _direction(tot)
        sents.append(
            "The UPDRS total (Parts I+II+III) went "
            + ", ".join(f"{fmt(p.score)} (visit {p.visit})" for p in tot.points)
            + f" (change {fmt_signed(tot.change.value if tot.change else 0)}): {d}."
        )
        sub = [
            dc
            for k, dc in ic.domains.items()
            if k != "total" and dc.change is not None and dc.change.label != "worsened"
        ]
        if (
            tot.change is not None
            and tot.change.value > 0
            and not tot.zero_suspect
            and len(sub) == len([k for k in ic.domains if k != "total"])
        ):
            sents.append(
                "The UPDRS total rose although no part reached its own MCID: a consistent "
                "sub-threshold worsening."
            )
    if ic.instrument == "pdq8" and "qol" in ic.domains:
        q = ic.domains["qol"]
        pts = [q.first, q.last] if len(q.points) > 1 else [q.last]
        sents += dense.si_sentences(ic.si, [p.visit for p in pts], _where)
    if ic.zero_sessions:
        sents.append(
            f"\n\nPossible missing data: every {inst} item scored zero at "
            f"{_where(ic.zero_sessions)} after a non-zero course; changes to it are not read as "
            "improvement."
        )
    return sents


def _domain_paragraph(dc: DomainCourse) -> str:
    w = _dom(dc.domain)
    head = PART_WORDS[dc.domain]
    band = ""
    if dc.band:
        band = f" {dc.band} at the latest assessment" + (
            " (reference band)" if dc.band_basis == "reference" else ""
        )
    if len(dc.points) < 2:
        return f"{head}:{band} ({w} {fmt(dc.last.score)} at visit {dc.last.visit})."
    c = dc.change
    sents = []
    course_word = "a fluctuating course; " if dc.fluctuating else ""
    events: list[tuple[int, int, str]] = [
        (dc.first.visit, 0, f"{fmt(dc.first.score)} at visit {dc.first.visit}")
    ]
    if dc.peak is not None:
        events.append(
            (dc.peak.visit, 1, f"a peak of {fmt(dc.peak.score)} at visit {dc.peak.visit}")
        )
    if dc.trough is not None:
        events.append(
            (dc.trough.visit, 1, f"a low of {fmt(dc.trough.score)} at visit {dc.trough.visit}")
        )
    if dc.swing is not None and len(dc.points) > 2:
        a, b, d = dc.swing
        events.append(
            (
                b.visit,
                2 if b.visit == dc.last.visit else 1,
                f"the largest swing {fmt_signed(d)} from visit {a.visit} to visit {b.visit}",
            )
        )
    events.append((dc.last.visit, 3, f"{fmt(dc.last.score)} at visit {dc.last.visit}"))
    events.sort(key=lambda e: (e[0], e[1]))
    mcid_txt = ""
    if c is not None and c.mcid is not None:
        mcid_txt = f", MCID {fmt(abs(c.mcid))}"
    sents.append(
        f"{head}:{band + ';' if band else ''} {course_word}{_direction(dc)}. "
        f"{_cap(w)} went "
        + ", ".join(e[2] for e in events)
        + f" (change {fmt_signed(c.value if c else 0)}{mcid_txt})."
    )
    if dc.slope_visit is not None:
        per_year = f", {fmt_signed(dc.slope_year)} per year" if dc.slope_year is not None else ""
        left_out = " (leaving out the partial or possibly missing scores)" if dc.slope_basis else ""
        sents.append(
            f"{_cap(w)} trend{left_out}: {fmt_signed(dc.slope_visit)} per visit{per_year}."
        )
    text = " ".join(sents)
    if dc.zero_suspect and dc.domain != "total":
        text += (
            f"\n\nPossible missing data: every {w} item scored zero at "
            f"{_where(dc.zero_suspect)}"
            + (", while the other parts did not." if dc.all_zero else " after non-zero scores.")
        )
    return text


def _label(label: str) -> str:
    """Item label in running text: lower case, limb words without the checker's direction words
    ("lower extremity" would read as "lower" = improved)."""
    return (
        label.lower()
        .replace("right lower extremity", "right leg")
        .replace("left lower extremity", "left leg")
        .replace("right upper extremity", "right arm")
        .replace("left upper extremity", "left arm")
    )


def _where(vs: Sequence[int]) -> str:
    vs = sorted(set(vs))
    if len(vs) == 1:
        return f"visit {vs[0]}"
    return "visits " + ", ".join(map(str, vs[:-1])) + f" and {vs[-1]}"


def _findings_paragraphs(fd: Findings) -> list[str]:
    paras: list[str] = []
    by_visit: dict[int, dict[str, list[str]]] = {}
    for h in sorted(fd.high, key=lambda h: (h.visit, -h.value, h.label)):
        by_visit.setdefault(h.visit, {}).setdefault(h.domain, []).append(
            f"{_label(h.label)} {h.word} ({fmt(h.value)})"
        )
    for v, doms in by_visit.items():
        # one sentence per domain: the domain word narrows labels shared by two parts ("speech")
        paras.append(
            f"At visit {v}, the latest assessment, items rated moderate or worse. "
            + " ".join(
                f"{_cap(_dom(d))}: " + "; ".join(items) + "."
                for d, items in sorted(doms.items(), key=lambda kv: DOMAINS.index(kv[0]))
            )
        )
    rises: dict[int, list[str]] = {}
    for r in sorted(fd.rises, key=lambda r: (r.visit, DOMAINS.index(r.domain), -r.value, r.label)):
        rises.setdefault(r.visit, []).append(
            f"{_cap(_dom(r.domain))}: {_label(r.label)} increased by "
            f"{fmt(r.value - (r.first_value or 0))} since visit {r.first_visit}, now {r.word}."
        )
    for v, sents in rises.items():
        # one short sentence per item, each naming its part and reference visit
        paras.append(f"Items up two points or more by visit {v}. " + " ".join(sents))
    paras += [text for _, text in _flag_paragraphs(fd)]
    by_visit_neg: dict[int, list[str]] = {}
    for _, w, v in fd.negatives:
        by_visit_neg.setdefault(v, []).append(w)
    for v, words in sorted(by_visit_neg.items()):
        skipped = fd.negatives_skipped.get(v)
        # never from a session that is possibly missing data: say which visit they come from
        where = (
            f"At visit {v}, the last assessment before possibly missing data at {_where(skipped)}"
            if skipped
            else f"At visit {v}"
        )
        paras.append(
            f"{where}, without "
            + ", ".join(words[:-1])
            + (f" or {words[-1]}" if len(words) > 1 else words[0])
            + "."
        )
    return paras


def _flag_paragraphs(fd: Findings, patient: int | None = None) -> list[tuple[str, str]]:
    """(status, paragraph) per red flag, grouped per item (one paragraph per rule). With
    `patient`, each paragraph names the patient first (a text about several patients: a reading
    is local to its paragraph, so the patient must be in it)."""
    paras: list[tuple[str, str]] = []
    head = "Red flag" if patient is None else f"Patient {patient}, red flag"
    by_item: dict[str, list] = {}
    for g in fd.flags:
        by_item.setdefault(g.item, []).append(g)
    for gs in by_item.values():
        main = [g for g in gs if g.rule != "severe_item"] or gs
        status, unconfirmed = _flag_status(gs)
        for g in main:
            if g.rule.endswith("new_onset"):
                paras.append(
                    (
                        status,
                        f"{head} ({status}): {g.label}, first rated above zero at "
                        f"{_where(g.visits)} after zero at every earlier assessment ({g.why})"
                        f"{unconfirmed}.",
                    )
                )
                continue
            sev = [x for x in gs if x.rule == "severe_item" and x is not g]
            tail = f", severe at {_where(sev[0].visits)}" if sev else ""
            paras.append(
                (
                    status,
                    f"{head} ({status}): {_label(g.item_label)} at or above {fmt(g.threshold)} "
                    f"at {_where(g.visits)}{tail} ({g.why}){unconfirmed}.",
                )
            )
    return paras


def red_flag_paragraphs(
    findings: Mapping[int, Findings], patients: Sequence[int], sts: Statements | None = None
) -> list[str]:
    """The red flags of several patients as the trajectory text writes them (one paragraph per
    item, visits collapsed, current / resolved / not resolved), each naming its patient: the
    comparison summary's red flags (the per-visit list stays in the dense text for QA)."""
    return [
        cite(text, sts.about(p) if sts is not None else [])
        for p in patients
        if p in findings
        for _, text in _flag_paragraphs(findings[p], p)
    ]


def _falls_sentence(fd: Findings) -> str:
    """The falls item at every assessment (possibly missing data marked), or "" without one."""
    if not fd.falls:
        return ""
    return (
        f"{_cap(_label(fd.falls[0].label))} item: "
        + ", ".join(
            f"{fmt(x.value)} at visit {x.visit}" + (" (possibly missing data)" if x.suspect else "")
            for x in fd.falls
        )
        + "."
    )


def given_facts(
    patient: int, courses: Mapping[tuple[int, str], InstrumentCourse], fd: Findings
) -> str:
    """The facts an LLM-written summary must state: the framing of each
    instrument (assessments, period, UPDRS total first -> last), falls at every assessment and the
    red flags that are current or not resolved. Ledger values only, written as the facts text
    writes them, so the guard accepts them verbatim."""
    paras = [f"Patient {patient}."]
    paras += [" ".join(_framing(ic)) for ic in iter_courses(dict(courses), patient)]
    falls = _falls_sentence(fd)
    if falls:
        paras.append(falls)
    flags = [t for st, t in _flag_paragraphs(fd) if st != "resolved"]
    paras += flags  # none current: nothing to state (the flags block of the prompt says so)
    # the same paragraphs as the facts text, so the guard reads them the same way
    return "\n\n".join(paras)


def _flag_status(gs: Sequence[Any]) -> tuple[str, str]:
    """(status words, tail) of one item's red flags, from the statuses the clinical core gave its
    groups (engine.clinical.findings.flag_status), decided by the item's last flagged visit."""
    if any(g.current for g in gs):
        return "current", ""
    last = max(v for g in gs for v in g.visits)
    decisive = [g for g in gs if max(g.visits) == last]
    later = sorted({v for g in decisive for v in g.suspect_after})
    statuses = {g.status for g in decisive}
    if "unconfirmed" in statuses:
        return "not resolved", (
            f"; last seen at visit {last}; later assessment possibly missing data ({_where(later)})"
        )
    if "unscored" in statuses:
        return "not scored at the latest assessment", f"; last seen at visit {last}" + (
            f", not scored later ({_where(later)})" if later else ""
        )
    if "below" in statuses:
        g = decisive[0]
        return "below the flag threshold now", (
            f". {_cap(_label(g.item_label))} was rated {fmt(g.latest_value)} at visit {g.latest_visit}"
        )
    return "resolved", ""


def _monitor(courses: Sequence[InstrumentCourse], fd: Findings) -> str:
    watch = [dense.monitor_phrase(m) for m in to_monitor(courses, fd)]
    if not watch:
        return (
            "To monitor: no domain worsened or reached a moderate band, and no red flag is current."
        )
    return "To monitor: " + "; ".join(watch) + "."


def patient_summary(
    patient: int,
    courses: Mapping[tuple[int, str], InstrumentCourse],
    fd: Findings,
    ctx: Contexts,
    excluded: Sequence[Mapping[str, Any]] = (),
    sts: Statements | None = None,
) -> str:
    """One patient's readable summary; with `sts`, each paragraph cites the statements it
    renders (engine.writing.citing)."""
    ics = list(iter_courses(dict(courses), patient))
    mine = sts.about(patient) if sts is not None else []
    paras = [cite(f"Patient {patient}.", mine)]
    for ic in ics:
        paras.append(cite(" ".join(_framing(ic)), mine))
        for d in DOMAINS:
            if d in ic.domains:
                part = sts.about(patient, d) if sts is not None else []
                paras.append(cite(_domain_paragraph(ic.domains[d]), part))
    paras += [cite(x, mine) for x in _findings_paragraphs(fd)]
    paras.append(cite(_monitor(ics, fd), mine))
    ex = [e for e in excluded if e.get("patient") == patient]
    if ex:
        paras.append(cite(excluded_sentence(ex), mine))
    if any(
        ctx.mcid_for(dc.profile, d) is not None and ctx.mcid[dc.profile][d].basis != "published"  # type: ignore[union-attr]
        for ic in ics
        for d, dc in ic.domains.items()
        if d != "total"
    ):
        paras.append(
            "The MCIDs are MDS-UPDRS reference values, not validated on this study's scale; the "
            "PDQ-8 has no verified MCID, so its changes are given by direction only."
        )
    return "\n\n".join(paras)


def excluded_sentence(rows: Sequence[Mapping[str, Any]]) -> str:
    """One sentence naming every session left out at ingest (no numbers: dates as written are
    quoted, file rows named by file only, so the guard has nothing to misread)."""
    parts = []
    for r in rows:
        inst = INSTRUMENT_WORDS.get(r.get("instrument", ""), r.get("instrument", "session"))
        rule = str(r.get("rule", "")).replace("_", " ")
        date = str(r.get("date", "")).split(" ")[0]
        parts.append(f"a {inst} session dated {date} in {r.get('file')} ({rule})")
    return "Left out at data import, see the Data report: " + "; ".join(parts) + "."


def readable_trajectory(st: Any, ctx: Contexts) -> str:
    """The trajectory summary of every planned patient, its paragraphs citing their statements."""
    sts: Statements = st.statements
    paras = [
        patient_summary(p, st.courses, st.findings[p], ctx, st.excluded, sts)
        for p in st.plan.patients
        if p in st.findings
    ]
    missing = [p for p in st.plan.patients if p not in st.findings]
    ex = [e for e in st.excluded if e.get("patient") in missing]
    if ex:
        paras.append(cite(excluded_text(ex), [s for p in missing for s in sts.about(p)]))
    return "\n\n".join(paras)


def readable_comparison(st: Any, flags: Mapping[str, Sequence[dict]]) -> str:
    """The comparison summary: one paragraph per domain contrasting the patients, discordance,
    incongruence, then each patient's red flags written as the trajectory text writes them (per
    item, visits collapsed, current or resolved) instead of one row per visit."""
    sts: Statements = st.statements
    paras = [
        dense.comparison_text(st.series, st.plan.patients, sts),
        dense.flags_text(flags, red_flags=False, sts=sts),
        *red_flag_paragraphs(st.findings, st.plan.patients, sts),
    ]
    if not flags.get("incongruence") and not flags.get("red_flags"):
        paras.append(dense.NO_FLAGS)
    return "\n\n".join(x for x in paras if x)


def excluded_text(rows: Sequence[Mapping[str, Any]], sts: Statements | None = None) -> str:
    """The sessions left out at ingest, citing their patients' statements."""
    who = sorted({r.get("patient") for r in rows}, key=str)
    return cite(excluded_sentence(rows), [s for p in who for s in sts.about(p)] if sts else [])


def baseline_note(state: Any) -> str:
    """For baseline plans: which visit is each instrument's first assessment
    (visit numbers are shared across instruments, baseline is per instrument)."""
    if state.plan.visit_filter not in ("baseline", "baseline_vs_latest"):
        return ""
    words = INSTRUMENT_WORDS
    out = []
    for (p, inst), ic in sorted(state.courses.items()):
        if ic.visits and ic.visits[0] != 1:
            out.append(
                cite(
                    f"For patient {p}, the {words.get(inst, inst)} baseline is visit "
                    f"{ic.visits[0]}, the first {words.get(inst, inst)} assessment (visits are "
                    "numbered across instruments).",
                    state.statements.about(p),
                )
            )
    return " ".join(out)


def patients_to_monitor(state: Any) -> list[MonitorItem]:
    """The to-monitor items of every planned patient with a course (engine.clinical.monitor)."""
    out: list[MonitorItem] = []
    for p in state.plan.patients:
        if p in state.findings:
            out += to_monitor(list(iter_courses(dict(state.courses), p)), state.findings[p])
    return out


def final_given_facts(state: Any) -> str:
    """The given facts of the final agent's prompt, one line each (engine.writing.readable.given_facts
    per planned patient); "none" when no patient has a course (e.g. cohort mode is not given them)."""
    out = [
        given_facts(p, state.courses, state.findings[p])
        for p in state.plan.patients
        if p in state.findings
    ]
    return "\n\n".join(x for x in out if x) or "none"
