"""The digest: what a clinician reads first, in about 30 seconds (at most about 100 words).

In the order of ../shared/reference/clinical-summary-style.md: who and how much data (instruments,
assessments, period), the headline course (the UPDRS total first -> last, each part's direction
and whether it passed the MCID; the PDQ-8 total and Summary Index, direction only), what matters
now (items at 3 or 4 and current red flags at the latest assessment), the pertinent negatives,
and what the reader must not miss about the data (possibly not examined, left out at import with
the scores, the reason and any direction the left-out session would change).
Rendered from the clinical core's judgements and citing the statements it renders; every status
word is the core's (engine.clinical.course, engine.clinical.findings).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.clinical.course import DomainCourse, InstrumentCourse, iter_courses
from engine.clinical.findings import Findings
from engine.clinical.item_cohort import is_item_answer, item_finding
from engine.clinical.series import fmt, fmt2, fmt_signed
from engine.clinical.statements import Statement, Statements
from engine.contexts import Contexts
from engine.writing import dense
from engine.writing.citing import CLAUSE_SEP, cite, clause, clauses
from engine.writing.left_out import digest_clause
from engine.writing.words import cap, item_label, month_year, part, period, series_list, where
from kb_store.profiles import DOMAINS, INSTRUMENT_WORDS, UPDRS_DOMAINS


def _pool(sts: Statements | None, patient: int, subject: str | None = None) -> list[Statement]:
    return sts.about(patient, subject) if sts is not None else []


def _change(sts: Statements | None, dc: DomainCourse) -> list[Statement]:
    if sts is None:
        return []
    return [s for s in sts.find("change", dc.patient, dc.domain) if s.label] or _pool(
        sts, dc.patient, dc.domain
    )


def _verdict(dc: DomainCourse, ctx: Contexts) -> str:
    """A part's direction in the style guide's words."""
    if dc.all_zero or dc.latest_suspect:
        return "possibly not examined at the latest assessment"
    if dc.unread_ends:  # engine.clinical.caveats: no direction from a partial score
        latest = dc.last.visit in dc.partial
        return f"partial at the {'latest' if latest else 'first'} assessment, no direction read"
    c = dc.change
    if c is None:
        return ""
    if c.mcid is None:
        return {"worsened": "higher", "improved": "lower"}.get(c.label, "unchanged")
    m = ctx.mcid_for(dc.profile, dc.domain)
    ref = "the reference MCID" if m is not None and m.basis != "published" else "the MCID"
    if c.label == "stable":
        return f"within {ref}"
    return f"beyond {ref} ({'worse' if c.label == 'worsened' else 'better'})"


def _who(patient: int, ics: Sequence[InstrumentCourse]) -> str:
    parts = []
    for ic in ics:
        inst = INSTRUMENT_WORDS[ic.instrument]
        if ic.n == 1:
            parts.append(f"{inst} once, {month_year(ic.dates[0])}")
        elif ic.dates[0] == ic.dates[-1]:  # kept as separate assessments in source-row order
            parts.append(f"{inst} {ic.n} assessments on one day, {month_year(ic.dates[0])}")
        else:
            parts.append(f"{inst} {ic.n} assessments, {period(ic.dates)}")
    return f"Patient {patient}: " + clauses(parts) + "."


def _mark(dc: DomainCourse) -> str:
    """What a single score's reader must know: partial, possibly not examined, or its band."""
    v = dc.last.visit
    if v in dc.partial:
        return " (partial)"
    if dc.latest_suspect or v in dc.zero_suspect or dc.all_zero:
        return " (0 on every item, possibly not examined)"
    return f" ({dc.band})" if dc.band else ""


def _one_session(ic: InstrumentCourse, sts: Statements | None) -> str:
    """The scores of an instrument assessed once: the UPDRS total first, then each part."""
    tot = ic.domains.get("total")
    bits = [f"UPDRS total {fmt(tot.last.score)}"] if tot is not None else []
    for d in UPDRS_DOMAINS:
        dc = ic.domains.get(d)
        if dc is not None:
            bits.append(f"{part(d)} {fmt(dc.last.score)}{_mark(dc)}")
    pool = _pool(sts, ic.patient)
    return cite(cap(clauses(bits)) + ".", pool) if bits else ""


def _updrs(ic: InstrumentCourse, sts: Statements | None, ctx: Contexts) -> str:
    if ic.n == 1:
        return _one_session(ic, sts)
    tot = ic.domains.get("total")
    if ic.zero_sessions and ic.visits[-1] in ic.zero_sessions and tot is not None:
        # the latest session is all zero: one clause instead of one per part
        span = cite(f"{fmt(tot.first.score)} to {fmt(tot.last.score)}", _change(sts, tot))
        # the clause states each part's change as well: they end in the same all-zero session
        parts = [s for d in UPDRS_DOMAINS if d in ic.domains for s in _change(sts, ic.domains[d])]
        zero = cite("every item 0 at the latest assessment, possibly not examined", parts)
        return f"UPDRS total {span}: {zero}, so no direction is read."
    out = []
    if tot is not None and len(tot.points) > 1 and tot.change is not None:
        span = f"{fmt(tot.first.score)} to {fmt(tot.last.score)}"
        if tot.unread_ends:
            tail = " (parts partial, not read as a change)"
        elif tot.latest_suspect:
            tail = " (parts possibly not examined, not read as a change)"
        else:
            tail = f" (change {fmt_signed(tot.change.value)})"
        out.append("UPDRS total " + cite(span + tail, _change(sts, tot)))
    for d in UPDRS_DOMAINS:
        dc = ic.domains.get(d)
        if dc is None or len(dc.points) < 2:
            continue
        span = cite(f"{fmt(dc.first.score)} to {fmt(dc.last.score)}", _change(sts, dc))
        out.append(f"{part(d)} {span}, {_verdict(dc, ctx)}")
    return cap(clauses(out)) + "." if out else ""


def _pdq8(ic: InstrumentCourse, sts: Statements | None) -> str:
    q = ic.domains.get("qol")
    if q is not None and len(q.points) == 1:
        parts = [f"PDQ-8 score {fmt(q.last.score)}{_mark(q)}"]
        if q.last.visit in ic.si:
            parts.append(f"Summary Index {fmt2(ic.si[q.last.visit])} SI")
        return cite(clauses(parts) + ".", _pool(sts, q.patient, "qol"))
    if q is None or len(q.points) < 2 or q.change is None:
        return ""
    si = ""
    if q.first.visit in ic.si and q.last.visit in ic.si:
        # its citation holds the separator, its clause mark does not
        si = CLAUSE_SEP + clause(
            f"Summary Index {fmt2(ic.si[q.first.visit])} SI to {fmt2(ic.si[q.last.visit])} SI"
        )
    word = {"worsened": "higher", "improved": "lower"}.get(q.change.label, "unchanged")
    pool = _pool(sts, q.patient, "qol")
    span = cite(f"{fmt(q.first.score)} to {fmt(q.last.score)}", pool)
    return clause(f"PDQ-8 score {span}, {word} (direction only)") + f"{cite(si, pool)}."


#: items the digest's "Now" names at most (the details list every one)
NOW_ITEMS = 8


def _item(sts: Statements | None, patient: int, item: str, text: str) -> str:
    """`text` naming one item, cited by the statements about that item (its flag, finding)."""
    if sts is None:
        return text
    return cite(text, [s for s in sts.about(patient) if s.subject == item])


def _now(fd: Findings, sts: Statements | None = None, patient: int = 0) -> str:
    """Items at 3 or 4 at the latest assessment, then the current red flags not among them,
    grouped by part (the part's name narrows labels two parts share, e.g. "speech"); each item
    cited by its own statements, so that a sentence naming it is found by them."""
    seen: set[str] = set()
    by: dict[str, list[str]] = {}
    n = 0
    for h in sorted(fd.high, key=lambda h: (-h.value, h.label)):
        if h.item not in seen:
            seen.add(h.item)
            n += 1
            if n <= NOW_ITEMS:
                by.setdefault(h.domain, []).append(
                    _item(sts, patient, h.item, f"{item_label(h.label)} {fmt(h.value)}")
                )
    for g in fd.flags:
        if g.current and g.item not in seen and g.values:
            seen.add(g.item)
            onset = " (new onset)" if g.rule.endswith("new_onset") else ""
            by.setdefault(g.domain, []).append(
                _item(
                    sts, patient, g.item, f"{item_label(g.item_label)} {fmt(g.values[-1])}{onset}"
                )
            )
    if not by:
        return "Now: no item at 3 or 4 and no current red flag."
    parts = [f"{part(d)}: {', '.join(by[d])}" for d in DOMAINS if d in by]
    if n > NOW_ITEMS:
        parts.append("more items rated moderate or worse in the details")
    return "Now, " + clauses(parts) + "."


def _negatives(fd: Findings) -> str:
    """The red-flag items scored 0 at the latest assessment (never from one that is possibly
    missing data: then the last assessment before it, said so)."""
    if not fd.negatives:
        return ""
    words = [w for _code, w, _v in fd.negatives]
    v = max(v for _c, _w, v in fd.negatives)
    before = ", the last before possibly missing data" if fd.negatives_skipped.get(v) else ""
    return f"At {where([v])}{before}, without {series_list(words)}."


def _data(
    patient: int,
    ics: Sequence[InstrumentCourse],
    excluded: Sequence[Mapping[str, Any]],
    ctx: Contexts,
) -> str:
    out = []
    for ic in ics:
        inst = INSTRUMENT_WORDS[ic.instrument]
        earlier = [v for v in ic.zero_sessions if v != ic.visits[-1] or ic.instrument != "updrs"]
        if earlier:
            out.append(f"every {inst} item 0 at {where(earlier)}, possibly not examined")
        partial = sorted({v for d, dc in ic.domains.items() if d != "total" for v in dc.partial})
        if partial:
            out.append(f"{inst} partly blank at {where(partial)}")
        for d, dc in ic.domains.items():
            if dc.all_zero and d != "total":
                out.append(f"{part(d)} 0 on every item at every assessment, possibly not examined")
    text = ("Data: " + clauses(out) + ".") if out else ""
    left = digest_clause(patient, ics, excluded, ctx)
    if left:  # its own sentence: the visits named before do not carry into it
        text += f" {cap(left)}." if text else f"Data: {left}."
    return text.strip()


def patient_digest(
    patient: int,
    courses: Mapping[Any, InstrumentCourse],
    fd: Findings,
    ctx: Contexts,
    sts: Statements | None = None,
    excluded: Sequence[Mapping[str, Any]] = (),
) -> str:
    """One patient's digest (marked with its citations when `sts` is given)."""
    ics = list(iter_courses(dict(courses), patient))
    sents = [_who(patient, ics)]
    for ic in ics:
        sents.append(_updrs(ic, sts, ctx) if ic.instrument == "updrs" else _pdq8(ic, sts))
    sents += [_now(fd, sts, patient), _negatives(fd), _data(patient, ics, excluded, ctx)]
    return cite(" ".join(s for s in sents if s), _pool(sts, patient))


def trajectory_digest(st: Any, ctx: Contexts) -> str:
    """The digest of every planned patient with a course, one paragraph each."""
    return "\n\n".join(
        patient_digest(p, st.courses, st.findings[p], ctx, st.statements, st.excluded)
        for p in st.plan.patients
        if p in st.findings
    )


def cohort_digest(cohort: Mapping[str, Any], sts: Statements | None) -> tuple[str, str]:
    """(digest, details) of a cohort answer: the finding first, then the ranking and the cohort
    statistics (or an item question's patient lines)."""
    if is_item_answer(cohort):
        head = dense.cite_all(f"Cohort finding: {item_finding(cohort)}.", sts)
        return head, dense.item_text(cohort, sts, head="")
    return dense.cohort_head(cohort, sts), dense.cohort_details(cohort, sts)
