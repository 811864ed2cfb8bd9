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
from engine.clinical.monitor import to_monitor
from engine.clinical.series import UNEVEN_SPACING, fmt, fmt_signed, opposite_signs
from engine.clinical.statements import Statements
from engine.contexts import Contexts
from engine.writing import dense
from engine.writing.citing import cite, plain
from engine.writing.digest import NOW_ITEMS
from engine.writing.left_out import excluded_text
from engine.writing.words import cap, item_label, where
from kb_store.profiles import DOMAIN_WORDS, DOMAINS, INSTRUMENT_WORDS

PART_WORDS = {
    "nonmotor": "Non-motor experiences (Part I)",
    "adl": "Motor experiences of daily living (ADL, Part II)",
    "motor": "Motor examination (Part III)",
    "qol": "Quality of life (PDQ-8)",
}


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


def _framing(ic: InstrumentCourse, details: bool = False) -> list[str]:
    """The framing of one instrument's course; `details`: without what the digest says (the
    number of assessments and period, the possibly-not-examined sessions)."""
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
        sents += dense.si_sentences(ic.si, [p.visit for p in pts], where)
    if details:
        sents = sents[1:]
    if ic.zero_sessions and not details:
        sents.append(
            f"\n\nPossible missing data: every {inst} item scored zero at "
            f"{where(ic.zero_sessions)} after a non-zero course; changes to it are not read as "
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
        f"{cap(w)} went "
        + ", ".join(e[2] for e in events)
        + f" (change {fmt_signed(c.value if c else 0)}{mcid_txt})."
    )
    if dc.slope_visit is not None:
        per_year = f", {fmt_signed(dc.slope_year)} per year" if dc.slope_year is not None else ""
        if opposite_signs(dc.slope_visit, dc.slope_year):
            per_year += f" ({UNEVEN_SPACING})"
        left_out = " (leaving out the partial or possibly missing scores)" if dc.slope_basis else ""
        sents.append(f"{cap(w)} trend{left_out}: {fmt_signed(dc.slope_visit)} per visit{per_year}.")
    text = " ".join(sents)
    if dc.zero_suspect and dc.domain != "total":
        text += (
            f"\n\nPossible missing data: every {w} item scored zero at "
            f"{where(dc.zero_suspect)}"
            + (", while the other parts did not." if dc.all_zero else " after non-zero scores.")
        )
    return text


def _rise_sentence(r: Any) -> str:
    return (
        f"{cap(_dom(r.domain))}: {item_label(r.label)} increased by "
        f"{fmt(r.value - (r.first_value or 0))} since visit {r.first_visit}, now {r.word}."
    )


def _item_paragraphs(
    fd: Findings, listed: int = NOW_ITEMS, flagged: frozenset[str] = frozenset()
) -> list[str]:
    """Item changes: the items up two points or more that raised no red flag (a flagged item's
    rise is said in its flag paragraph); the items rated moderate or worse at the latest
    assessment only when the digest could not name them all (more than `listed`)."""
    paras: list[str] = []
    if len({h.item for h in fd.high}) > listed:
        by_visit: dict[int, dict[str, list[str]]] = {}
        for h in sorted(fd.high, key=lambda h: (h.visit, -h.value, h.label)):
            by_visit.setdefault(h.visit, {}).setdefault(h.domain, []).append(
                f"{item_label(h.label)} {h.word} ({fmt(h.value)})"
            )
        for v, doms in by_visit.items():
            # one sentence per domain: the domain word narrows labels shared by two parts
            paras.append(
                f"At visit {v}, the latest assessment, items rated moderate or worse. "
                + " ".join(
                    f"{cap(_dom(d))}: " + "; ".join(items) + "."
                    for d, items in sorted(doms.items(), key=lambda kv: DOMAINS.index(kv[0]))
                )
            )
    rises: dict[int, list[str]] = {}
    for r in sorted(fd.rises, key=lambda r: (r.visit, DOMAINS.index(r.domain), -r.value, r.label)):
        if r.item not in flagged:
            rises.setdefault(r.visit, []).append(_rise_sentence(r))
    for v, sents in rises.items():
        # one short sentence per item, each naming its part and reference visit
        paras.append(f"Items up two points or more by visit {v}. " + " ".join(sents))
    return paras


def _flag_paragraphs(fd: Findings, patient: int | None = None) -> list[tuple[str, str]]:
    """(status, paragraph) per red flag (one paragraph per rule), item by item."""
    return [x for lst in _flag_by_item(fd, patient).values() for x in lst]


def _item_flags(fd: Findings) -> list[str]:
    """The flagged items, item by item: a paragraph per rule that raised it, the item's rise
    (when it rose) said in its last one."""
    rises = {r.item: r for r in fd.rises}
    out = []
    for item, lst in _flag_by_item(fd).items():
        texts = [t for _, t in lst]  # one paragraph per rule: each keeps its visits in order
        if item in rises:
            texts[-1] += " " + _rise_sentence(rises[item])
        out += texts
    return out


def _flag_by_item(fd: Findings, patient: int | None = None) -> dict[str, list[tuple[str, str]]]:
    """item -> (status, sentence) of each rule that flagged it. With `patient`, each names the
    patient first (a text about several patients: a reading is local to its paragraph)."""
    paras: dict[str, list[tuple[str, str]]] = {}
    head = "Red flag" if patient is None else f"Patient {patient}, red flag"
    by_item: dict[str, list] = {}
    for g in fd.flags:
        by_item.setdefault(g.item, []).append(g)
    for item, gs in by_item.items():
        main = [g for g in gs if g.rule != "severe_item"] or gs
        status, unconfirmed = _flag_status(gs)
        mine = paras.setdefault(item, [])
        for g in main:
            if g.rule.endswith("new_onset"):
                mine.append(
                    (
                        status,
                        f"{head} ({status}): {g.label}, first rated above zero at "
                        f"{where(g.visits)} after zero at every earlier assessment"
                        f"{unconfirmed}.",
                    )
                )
                continue
            sev = [x for x in gs if x.rule == "severe_item" and x is not g]
            tail = f", severe at {where(sev[0].visits)}" if sev else ""
            mine.append(
                (
                    status,
                    f"{head} ({status}): {item_label(g.item_label)} at or above {fmt(g.threshold)} "
                    f"at {where(g.visits)}{tail}{unconfirmed}.",
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
        f"{cap(item_label(fd.falls[0].label))} item: "
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
            f"; last seen at visit {last}; later assessment possibly missing data ({where(later)})"
        )
    if "unscored" in statuses:
        return "not scored at the latest assessment", f"; last seen at visit {last}" + (
            f", not scored later ({where(later)})" if later else ""
        )
    if "below" in statuses:
        g = decisive[0]
        return "below the flag threshold now", (
            f". {cap(item_label(g.item_label))} was rated {fmt(g.latest_value)} at visit {g.latest_visit}"
        )
    return "resolved", ""


Section = tuple[str, list[str]]


def patient_sections(
    patient: int,
    courses: Mapping[tuple[int, str], InstrumentCourse],
    fd: Findings,
    ctx: Contexts,
    sts: Statements | None = None,
) -> list[Section]:
    """One patient's details under short headings, each finding once (what the digest says is
    not repeated: engine.writing.digest); with `sts`, each paragraph cites the statements it
    renders (engine.writing.citing)."""
    ics = list(iter_courses(dict(courses), patient))
    mine = sts.about(patient) if sts is not None else []
    course: list[str] = []
    for ic in ics:
        framing = " ".join(_framing(ic, details=True))
        if framing:
            course.append(cite(framing, mine))
        for d in DOMAINS:
            if d in ic.domains:
                part = sts.about(patient, d) if sts is not None else []
                course.append(cite(_domain_paragraph(ic.domains[d]), part))
    flags = [cite(text, mine) for text in _item_flags(fd)]
    items = [
        cite(x, mine) for x in _item_paragraphs(fd, flagged=frozenset(g.item for g in fd.flags))
    ]
    # the one to-monitor judgement (engine.clinical.monitor), as the Provenance page's text has it
    watch = [dense.monitor_phrase(m) for m in to_monitor(ics, fd)]
    monitor = [
        cite("To monitor: " + "; ".join(watch) + ".", mine)
        if watch
        else "To monitor: no domain worsened or reached a moderate band, and no red flag is current."
    ]
    data = []  # the patient's left-out sessions are in the digest (engine.writing.left_out)
    if any(
        ctx.mcid_for(dc.profile, d) is not None and ctx.mcid[dc.profile][d].basis != "published"  # type: ignore[union-attr]
        for ic in ics
        for d, dc in ic.domains.items()
        if d != "total"
    ):
        data.append(
            "The MCIDs are MDS-UPDRS reference values, not validated on this study's scale; the "
            "PDQ-8 has no verified MCID, so its changes are given by direction only."
        )
    return [
        (head, paras)
        for head, paras in (
            ("Course of each part", course),
            ("Item changes", items),
            ("Flag history", flags),
            ("To monitor", monitor),
            ("Data", data),
        )
        if paras
    ]


def render_sections(sections: Sequence[Section]) -> str:
    """The sections as text: a heading line, then the paragraphs (no heading line when the first
    paragraph opens with it, as "To monitor: ..." does)."""
    out = []
    for head, paras in sections:
        opens = bool(paras) and plain(paras[0]).startswith(f"{head}:")
        out.append(("" if opens else f"{head}:\n\n") + "\n\n".join(paras))
    return "\n\n".join(out)


def trajectory_sections(st: Any, ctx: Contexts) -> list[Section]:
    """The details of every planned patient (headings name the patient when there are several)."""
    sts: Statements = st.statements
    shown = [p for p in st.plan.patients if p in st.findings]
    out: list[Section] = []
    for p in shown:
        # the digest states the patient's left-out sessions (engine.writing.left_out)
        secs = patient_sections(p, st.courses, st.findings[p], ctx, sts)
        if len(shown) > 1:
            secs = [(f"Patient {p}, {head[:1].lower()}{head[1:]}", paras) for head, paras in secs]
        out += secs
    missing = [p for p in st.plan.patients if p not in st.findings]
    ex = [e for e in st.excluded if e.get("patient") in missing]
    if ex:
        out.append(("Data", [cite(excluded_text(ex), [s for p in missing for s in sts.about(p)])]))
    return out


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


def final_given_facts(state: Any) -> str:
    """The given facts of the final agent's prompt, one line each (engine.writing.readable.given_facts
    per planned patient); "none" when no patient has a course (e.g. cohort mode is not given them)."""
    out = [
        given_facts(p, state.courses, state.findings[p])
        for p in state.plan.patients
        if p in state.findings
    ]
    return "\n\n".join(x for x in out if x) or "none"
