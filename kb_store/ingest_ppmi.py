"""PPMI MDS-UPDRS exports: part files joined per PATNO + EVENT_ID into `updrs` Sessions (mds-updrs).

Owns the PPMI rules (clinical-scales.md "PPMI export format"; docs/data-ingest.md):
- File names are matched loosely: case, '-' vs '_', doubled '_' and a trailing export date such as
  `_05Sep2023` are ignored. `MDS_UPDRS_Part_I` = Part I rater (1.1-1.6), `..Part_I_Patient_Questionnaire`
  = 1.7-1.13, `..Part_II_..` = Part II, `..Part_III..` = Part III, `..Part_IV..` = Part IV (optional).
  A file whose name matches no part is classified by its item columns (NP1COG -> Part I, ...).
- Keys: PATNO (patient), EVENT_ID (visit code), INFODT (MM/YYYY -> 1st of the month, one warning per
  session about the precision).
- Part III rows are split by exam state: ON when PDSTATE is ON (or, PDSTATE blank, PAG_NAME is
  NUPDRS3A); OFF otherwise (PDSTATE OFF, or blank = untreated exam). OFF and ON become separate
  Sessions with condition "OFF" / "ON", never averaged. Parts I, II (and IV) attach to the primary
  session: the OFF exam, else the ON exam, else a session without Part III (condition "").
- EVENT_ID: kept in extra["event_id"]. BL, Vnn and ST / U01 / PW / other codes are ordinary sessions
  ordered by date, then by PPMI schedule (SC, BL, V01.. before unscheduled codes). SC (screening)
  rows of a part are rejected as superseded when the patient has a BL row in that part (PPMI's
  convention: BL is the baseline); SC rows of a patient without BL are used (info line).
- NHY (Hoehn & Yahr) goes to extra["hoehn_yahr"]; 101 = not rated -> None. Item value 101 (or UR) =
  not rated -> missing with a warning. Totals (NP1RTOT, NP1PTOT, NP2PTOT, NP3TOT, NP4TOT) are
  checked against the part's item sum (blanks as 0) and mismatches warned.

This module joins the part rows into sessions; recognising a part file and reading its rows is
kb_store.ppmi_parts.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from kb_store.csv_table import Table
from kb_store.ingest_rows import item_columns, month_warning
from kb_store.model import Session, SourceRef, ValidationIssue
from kb_store.ppmi_parts import (
    PART_LABEL,
    PARTS,
    PROFILE,
    PartRow,
    event_rank,
    part_codes,
    part_from_columns,
    part_from_name,
    read_part_rows,
)
from kb_store.profiles import Profile, load_profile
from kb_store.validation import issue


def _reject(pr: PartRow, rule: str, message: str) -> ValidationIssue:
    return issue(pr.table.name, pr.row, None, rule, message)


def parse_ppmi(
    tables: list[Table], *, today: dt.date
) -> tuple[list[Session], list[ValidationIssue], list[Table]]:
    """Join the PPMI part files; returns (sessions, issues, tables not recognised as a part)."""
    issues: list[ValidationIssue] = []
    rows: list[PartRow] = []
    skipped: list[Table] = []
    parts_seen: set[str] = set()
    for t in tables:
        part = _table_part(t, issues)
        if part is None:
            skipped.append(t)
            continue
        parts_seen.add(part)
        r, i = read_part_rows(t, part, today)
        rows += r
        issues += i
    if not rows and not parts_seen:
        return [], issues, skipped
    for part in ("I", "I-patient", "II", "III"):
        if part not in parts_seen:
            issues.append(
                issue(
                    "(PPMI files)",
                    None,
                    None,
                    "ppmi_missing_part",
                    f"no {PART_LABEL[part]} file among the PPMI sources: its items are "
                    "missing in every session (domain partial or absent)",
                )
            )
    kept = _drop_superseded_screening(_drop_duplicates(rows, issues), issues)
    groups: dict[tuple[int, str], list[PartRow]] = defaultdict(list)
    for pr in kept:
        groups[(pr.pid, pr.event)].append(pr)
    sessions: list[Session] = []
    prof = load_profile(PROFILE)
    for (pid, event), prs in groups.items():
        sessions += _join(pid, event, prs, prof, parts_seen, issues)
    return sessions, issues, skipped


def _table_part(t: Table, issues: list[ValidationIssue]) -> str | None:
    """The part a file holds: by its name when its columns hold that part's items, else by its
    columns (with an issue saying so); None for a file that is no MDS-UPDRS part."""
    part = part_from_name(t.path.name)
    if part is not None:
        codes = part_codes(part)
        have = set(item_columns(t, load_profile(PROFILE))[0])
        if not (codes & have):
            part = None
    if part is None:
        part = part_from_columns(t)
        if part is not None:
            issues.append(
                issue(
                    t.name,
                    None,
                    None,
                    "ppmi_event",
                    f"file name matches no PPMI part; read as {PART_LABEL[part]} by its columns",
                )
            )
    return part


def _drop_duplicates(rows: list[PartRow], issues: list[ValidationIssue]) -> list[PartRow]:
    """One row per patient, event, part and condition (the first kept, the others rejected)."""
    seen: dict[tuple, PartRow] = {}
    uniq: list[PartRow] = []
    for pr in rows:
        key = (pr.pid, pr.event, pr.part, pr.condition)
        if key in seen:
            k = seen[key]
            issues.append(
                _reject(
                    pr,
                    "ppmi_duplicate_row",
                    f"second {PART_LABEL[pr.part]}{' ' + pr.condition if pr.condition else ''} "
                    f"row for PATNO {pr.pid} EVENT_ID {pr.event}; the first "
                    f"({k.ref}) is kept",
                )
            )
            continue
        seen[key] = pr
        uniq.append(pr)
    return uniq


def _drop_superseded_screening(uniq: list[PartRow], issues: list[ValidationIssue]) -> list[PartRow]:
    """SC rows are superseded by BL (per patient and part); SC rows used are reported."""
    has_bl = {(pr.pid, pr.part) for pr in uniq if pr.event == "BL"}
    kept: list[PartRow] = []
    sc_used: set[int] = set()
    for pr in uniq:
        if pr.event == "SC" and (pr.pid, pr.part) in has_bl:
            issues.append(
                _reject(
                    pr,
                    "ppmi_screening_superseded",
                    f"PATNO {pr.pid}: screening (SC) {PART_LABEL[pr.part]} row not used "
                    "because the patient has a baseline (BL) row of this part",
                )
            )
            continue
        if pr.event == "SC":
            sc_used.add(pr.pid)
        kept.append(pr)
    for pid in sorted(sc_used):
        issues.append(
            issue(
                "(PPMI files)",
                None,
                "EVENT_ID",
                "ppmi_event",
                f"PATNO {pid}: screening (SC) rows used because no BL row of that part exists",
            )
        )
    return kept


def _join(
    pid: int,
    event: str,
    prs: list[PartRow],
    prof: Profile,
    parts_seen: set[str],
    issues: list[ValidationIssue],
) -> list[Session]:
    """The session(s) of one PATNO + EVENT_ID: primary (OFF, else ON, else no Part III) + ON."""
    off = next((p for p in prs if p.part == "III" and p.condition == "OFF"), None)
    on = next((p for p in prs if p.part == "III" and p.condition == "ON"), None)
    others = [p for p in prs if p.part != "III"]
    primary = off or on
    event_join = _EventJoin(pid, event, prof, parts_seen, off, on, issues)
    if primary is None:
        return [event_join.session(None, others, "")]
    out = [event_join.session(primary, [primary, *others], primary.condition)]
    if off is not None and on is not None:
        out.append(event_join.session(on, [on], "ON"))
    return out


@dataclass
class _EventJoin:
    """The part rows of one PATNO + EVENT_ID being joined into sessions."""

    pid: int
    event: str
    prof: Profile
    parts_seen: set[str]
    off: PartRow | None
    on: PartRow | None
    issues: list[ValidationIssue]

    def session(self, main: PartRow | None, members: list[PartRow], condition: str) -> Session:
        """One session of `members` (anchored at `main`, else the first member)."""
        pid, event, issues = self.pid, self.event, self.issues
        anchor = main or members[0]
        items: dict[str, float | None] = {i.code: None for i in self.prof.items}
        extra: dict = {"event_id": event, "event_order": event_rank(event), "source_format": "ppmi"}
        for m in members:
            items.update({c: v for c, v in m.items.items() if v is not None})
            for k, v in m.extra.items():
                extra.setdefault(k, v)
        dates = {m.parsed.date for m in members}
        if len(dates) > 1:
            issues.append(
                issue(
                    anchor.table.name,
                    anchor.row,
                    "INFODT",
                    "ppmi_part_dates_differ",
                    f"PATNO {pid} {event}: joined parts carry INFODT "
                    f"{', '.join(sorted(m.parsed.raw for m in members))}; the session uses "
                    f"{anchor.parsed.raw} ({PART_LABEL[anchor.part]})",
                )
            )
        extra.update(
            {
                "raw_date": anchor.parsed.raw,
                "date_column": "INFODT",
                "date_precision": anchor.parsed.precision,
                "sources": [m.ref for m in [anchor, *[x for x in members if x is not anchor]]],
                "parts": sorted({m.part for m in members}, key=PARTS.index),
            }
        )
        if anchor.parsed.precision == "month":
            issues.append(month_warning(anchor.table, anchor.row, "INFODT", anchor.parsed))
        self._missing_items(main, members, anchor, items, condition)
        return Session(
            proj_id=pid,
            date=anchor.parsed.date,
            instrument="updrs",
            profile=PROFILE,
            items=items,
            source=SourceRef(anchor.table.name, anchor.row),
            condition=condition,
            extra=extra,
        )

    def _missing_items(
        self,
        main: PartRow | None,
        members: list[PartRow],
        anchor: PartRow,
        items: dict[str, float | None],
        condition: str,
    ) -> None:
        """Warn about the missing items of the parts this session is expected to hold."""
        off, on = self.off, self.on
        expected = (
            {"III"}
            if (main is not None and main is on and off is not None)
            else set(self.parts_seen)
        )
        expected_codes = [
            i.code
            for i in self.prof.items
            if any(i.code in part_codes(p) for p in expected if p != "IV")
        ]
        blank = [c for c in expected_codes if items.get(c) is None]
        if not blank:
            return
        present_parts = {m.part for m in members}
        absent_rows = sorted((expected - present_parts) - {"IV"}, key=PARTS.index)
        note = (
            f"; no {', '.join(PART_LABEL[p] for p in absent_rows)} row for this event"
            if absent_rows
            else ""
        )
        self.issues.append(
            issue(
                anchor.table.name,
                anchor.row,
                ", ".join(blank[:12]) + (", ..." if len(blank) > 12 else ""),
                "missing_item",
                f"PATNO {self.pid} {self.event}{' ' + condition if condition else ''}: "
                f"{len(blank)} MDS-UPDRS item(s) missing{note}: domain scores partial, "
                "not imputed",
            )
        )
