"""Sessions left out at ingest, as the texts state them: the instrument, the parsed ISO date
(never the cell as written), the reason and the part scores the exclusion record kept
(kb_store.exclusions), and, for the digest, the parts whose direction the left-out session would
change (the clinical core's MCID rule, engine.clinical.series.classify, first -> last with and
without it). Every number is a value of the run's "excluded" statements (engine.clinical.ledger
`excluded_values`) or of the patient's course.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.clinical.course import DomainCourse, InstrumentCourse
from engine.clinical.series import classify, fmt
from engine.clinical.statements import Statements
from engine.contexts import Contexts
from engine.writing.citing import cite, clauses
from engine.writing.words import part
from kb_store.exclusions import iso_date
from kb_store.profiles import DOMAINS, INSTRUMENT_WORDS

#: the reason in running text, per ingest rule (other rules: their name in words)
RULE_WORDS = {
    "duplicate_session": "as a duplicate",
    "implausible_date": "for an implausible date",
    "date_outlier": "as a date outlier (years from the patient's other sessions)",
}

#: a direction in the digest's words: (with the left-out session, without it)
_DIRECTION = {
    "worsened": ("worse beyond", "worse"),
    "improved": ("better beyond", "better"),
    "stable": ("within", "within it"),
}


def _scores(row: Mapping[str, Any]) -> str:
    sc = row.get("scores") or {}
    order = sorted(sc, key=lambda d: DOMAINS.index(d) if d in DOMAINS else 99)
    return ", ".join(f"{part(d)} {fmt(sc[d])}" for d in order)


def left_out_clause(row: Mapping[str, Any]) -> str:
    """ "a UPDRS session of 2021-01-23 left out as a duplicate: motor 13, ADL 4" (no raw cell)."""
    inst = INSTRUMENT_WORDS.get(str(row.get("instrument", "")), "")
    iso = iso_date(dict(row))
    when = f"of {iso}" if iso else "with an unreadable date"
    rule = str(row.get("rule", ""))
    why = RULE_WORDS.get(rule, f"({rule.replace('_', ' ')})")
    scores = _scores(row)
    return f"a {inst} session {when} left out {why}".replace("  ", " ") + (
        f": {scores}" if scores else ""
    )


def excluded_sentence(rows: Sequence[Mapping[str, Any]]) -> str:
    """One sentence naming every session left out at ingest, with its scores and reason."""
    return (
        "Left out at data import, see the Data report: "
        + "; ".join(left_out_clause(r) for r in rows)
        + "."
    )


def excluded_text(rows: Sequence[Mapping[str, Any]], sts: Statements | None = None) -> str:
    """The sessions left out at ingest, citing their patients' statements."""
    who = sorted({r.get("patient") for r in rows}, key=str)
    return cite(excluded_sentence(rows), [s for p in who for s in sts.about(p)] if sts else [])


def _with_left_out(dc: DomainCourse, score: float, iso: str, ctx: Contexts) -> str | None:
    """The part's label first -> last with the left-out score in date order (None when the
    left-out session falls between the ends, so the ends and the direction do not change)."""
    first, last = dc.points[0], dc.points[-1]
    if iso < first.date[:10]:
        change = last.score - score
    elif iso > last.date[:10]:
        change = score - first.score
    else:
        return None
    return classify(change, ctx.mcid_for(dc.profile, dc.domain)).label


def direction_changes(
    row: Mapping[str, Any], ics: Sequence[InstrumentCourse], ctx: Contexts
) -> list[str]:
    """ "motor would read better beyond the reference MCID instead of within it" for each part
    whose direction (the MCID rule) the left-out session would change; [] when it changes none."""
    iso = iso_date(dict(row))
    ic = next((c for c in ics if c.instrument == row.get("instrument")), None)
    if iso is None or ic is None:
        return []
    out = []
    for d, score in (row.get("scores") or {}).items():
        dc = ic.domains.get(d)
        if dc is None or len(dc.points) < 2 or dc.change is None or dc.unread_ends:
            continue
        if dc.latest_suspect or dc.all_zero:
            continue
        label = _with_left_out(dc, float(score), iso, ctx)
        if label is None or label == dc.change.label or dc.change.mcid is None:
            continue
        m = ctx.mcid_for(dc.profile, d)
        ref = "the reference MCID" if m is not None and m.basis != "published" else "the MCID"
        now = _DIRECTION.get(label, (label, label))[0]
        was = _DIRECTION.get(dc.change.label, (dc.change.label, dc.change.label))[1]
        out.append(f"{part(d)} would read {now} {ref} instead of {was}")
    return out


def digest_clause(
    patient: int,
    ics: Sequence[InstrumentCourse],
    excluded: Sequence[Mapping[str, Any]],
    ctx: Contexts,
) -> str:
    """The digest's data clause on the patient's left-out sessions: scores, reason, and the
    parts whose direction each would change."""
    out = []
    for r in (e for e in excluded if e.get("patient") == patient):
        out.append(left_out_clause(r))
        changes = direction_changes(r, ics, ctx)
        if changes:
            out.append("with it, " + ", and ".join(changes))
    return clauses(out)
