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
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from dataclasses import dataclass, field

from kb_store.csv_table import Table
from kb_store.dates import ParsedDate
from kb_store.ingest_rows import (
    InstrumentColumns,
    item_columns,
    month_warning,
    read_items,
    read_key_cells,
)
from kb_store.model import Session, SourceRef, ValidationIssue
from kb_store.profiles import Profile, load_profile, normalise_column
from kb_store.validation import is_blank, issue, plain_float

PROFILE = "mds-updrs"
PARTS = ("I", "I-patient", "II", "III", "IV")
PART_LABEL = {
    "I": "Part I (rater)",
    "I-patient": "Part I (patient questionnaire)",
    "II": "Part II",
    "III": "Part III",
    "IV": "Part IV",
}
#: Item-code prefixes of each part (Part I rater 1.1-1.6, patient 1.7-1.13).
PART_ITEMS = {
    "I": ("NP1COG", "NP1HALL", "NP1DPRS", "NP1ANXS", "NP1APAT", "NP1DDS"),
    "I-patient": ("NP1SLPN", "NP1SLPD", "NP1PAIN", "NP1URIN", "NP1CNST", "NP1LTHD", "NP1FATG"),
}
PART_TOTALS = {
    "I": "NP1RTOT",
    "I-patient": "NP1PTOT",
    "II": "NP2PTOT",
    "III": "NP3TOT",
    "IV": "NP4TOT",
}
#: PPMI administrative / context columns read or ignored on purpose (normalised names).
PPMI_KNOWN = {
    "REC_ID",
    "F_STATUS",
    "PAG_NAME",
    "ORIG_ENTRY",
    "LAST_UPDATE",
    "QUERY",
    "SITE_APRV",
    "NUPSOURC",
    "PDTRTMNT",
    "PDSTATE",
    "HRPOSTMED",
    "HRDBSON",
    "HRDBSOFF",
    "PDMEDYN",
    "DBSYN",
    "ONOFFORDER",
    "OFFEXAM",
    "OFFNORSN",
    "DBSOFFTM",
    "ONEXAM",
    "ONNORSN",
    "HIFUYN",
    "DBSONTM",
    "PDMEDDT",
    "PDMEDTM",
    "EXAMDT",
    "EXAMTM",
    "NHY",
    "DYSKPRES",
    "DYSKIRAT",
    "NP3TOT",
    "NP1RTOT",
    "NP1PTOT",
    "NP2PTOT",
    "NP4TOT",
    "NP4TOTLD",
    "NP4TOTDY",
    "NP4TOTFL",
    "NP4DYSTNPCT",
    "NP4OFFPCT",
    "NP4DYSKIPCT",
    "NP4WDYSKPCT",
    "NP4WDYSKNUM",
    "NP4WDYSKDEN",
    "NP4OFFNUM",
    "NP4OFFDEN",
    "NP4DYSTNNUM",
    "NP4DYSTNDEN",
    "PATNO",
    "EVENT_ID",
    "INFODT",
}
#: Known PPMI columns that ingest reads (keys, exam state, H&Y, totals checked against items).
PPMI_READ = {
    "PATNO",
    "EVENT_ID",
    "INFODT",
    "PAG_NAME",
    "PDSTATE",
    "PDMEDYN",
    "NHY",
    "NP1RTOT",
    "NP1PTOT",
    "NP2PTOT",
    "NP3TOT",
    "NP4TOT",
}
NOT_RATED_CODE = 101.0
_DATE_SUFFIX = re.compile(r"_?\d{1,2}[a-z]{3}\d{2,4}$")


def part_from_name(filename: str) -> str | None:
    """PPMI part of a file by its name (loose match), or None."""
    n = filename.lower()
    n = re.sub(r"\.(csv|txt)$", "", n)
    n = re.sub(r"[^a-z0-9]+", "_", n).strip("_")
    n = _DATE_SUFFIX.sub("", n).strip("_")
    if not re.match(r"^mds_?updrs", n):
        return None
    m = re.search(r"part_?(iv|iii|ii|i)(?![a-z])", n)
    if not m:
        return None
    part = m.group(1).upper()
    if part == "I" and ("patient" in n or "questionnaire" in n):
        return "I-patient"
    return part


def part_from_columns(table: Table) -> str | None:
    cols = table.columns()
    if any(c.startswith("NP3") and c != "NP3TOT" for c in cols):
        return "III"
    if any(c.startswith("NP2") and c != "NP2PTOT" for c in cols):
        return "II"
    if any(c.startswith("NP4") and not c.startswith("NP4TOT") for c in cols):
        return "IV"
    if any(c in cols for c in PART_ITEMS["I"]):
        return "I"
    if any(c in cols for c in PART_ITEMS["I-patient"]):
        return "I-patient"
    return None


def looks_ppmi(table: Table) -> bool:
    cols = table.columns()
    return "PATNO" in cols and "EVENTID" in cols


def event_rank(event: str) -> int:
    e = event.upper()
    if e == "SC":
        return -1
    if e == "BL":
        return 0
    m = re.fullmatch(r"V(\d+)", e)
    if m:
        return int(m.group(1))
    return 1000  # ST, U01, PW, R-codes...: after the scheduled visits of the same date


def _part_codes(part: str) -> set[str]:
    prof = load_profile(PROFILE)
    if part in PART_ITEMS:
        return set(PART_ITEMS[part])
    prefix = {"II": "NP2", "III": "NP3", "IV": "NP4"}[part]
    return {i.code for i in prof.items if i.code.startswith(prefix)}


@dataclass
class PartRow:
    table: Table
    row: int
    part: str
    pid: int
    event: str
    parsed: ParsedDate
    condition: str  # Part III: "OFF" / "ON"; "" otherwise
    items: dict[str, float | None]
    extra: dict = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.table.name}:{self.row}"


def _condition(table: Table, rownum: int, cells: list[str], issues: list[ValidationIssue]) -> str:
    cols = table.columns()
    pag = cells[cols["PAGNAME"]].strip().upper() if "PAGNAME" in cols else ""
    state = cells[cols["PDSTATE"]].strip().upper() if "PDSTATE" in cols else ""
    by_pag = "ON" if pag == "NUPDRS3A" else "OFF"
    if state in ("ON", "OFF"):
        if pag in ("NUPDRS3", "NUPDRS3A") and by_pag != state:
            issues.append(
                issue(
                    table.name,
                    rownum,
                    "PDSTATE",
                    "ppmi_condition_conflict",
                    f"PAG_NAME {pag} but PDSTATE {state}; read as {state}",
                )
            )
        return state
    return by_pag


def _read_part_rows(
    table: Table, part: str, today: dt.date
) -> tuple[list[PartRow], list[ValidationIssue]]:
    issues: list[ValidationIssue] = list(table.issues)
    prof = load_profile(PROFILE)
    cols = table.columns()
    all_cols, _dup = item_columns(table, prof)
    codes = _part_codes(part)
    item_cols = {c: i for c, i in all_cols.items() if c in codes}
    used = set(item_cols.values())
    known = {normalise_column(k) for k in PPMI_KNOWN}
    read = {normalise_column(k) for k in PPMI_READ}
    admin = [
        h
        for i, h in enumerate(table.header)
        if i not in used and normalise_column(h) in known - read
    ]
    if admin:
        issues.append(
            issue(
                table.name,
                None,
                ", ".join(admin),
                "ignored_column",
                "PPMI administrative / context columns, not needed for the session",
            )
        )
    for i, h in enumerate(table.header):
        n = normalise_column(h)
        if i in used or n in known:
            continue
        issues.append(
            issue(
                table.name,
                None,
                h,
                "unknown_column",
                f"not a column of the PPMI {PART_LABEL[part]} file; values ignored",
            )
        )
    absent = sorted(codes - set(item_cols))
    if absent and item_cols:
        issues.append(
            issue(
                table.name,
                None,
                ", ".join(absent),
                "missing_item_column",
                f"{len(absent)} {PART_LABEL[part]} item(s) have no column; always missing",
            )
        )
    pid_col, event_col, date_col = cols.get("PATNO"), cols.get("EVENTID"), cols.get("INFODT")
    if date_col is None:
        issues.append(
            issue(
                table.name,
                None,
                None,
                "missing_date_column",
                f"no INFODT column; all {len(table.rows)} data rows of this file rejected",
            )
        )
        return [], issues
    assert pid_col is not None and event_col is not None
    inst = InstrumentColumns(prof, item_cols)
    # narrow the profile to this part's items for reading
    out: list[PartRow] = []
    total_col = cols.get(PART_TOTALS[part])
    nhy_col = cols.get("NHY")
    for rownum, cells in table.rows:
        pid, parsed, key_issues = read_key_cells(table, rownum, cells, pid_col, date_col, today)
        event = cells[event_col].strip().upper()
        if not event:
            key_issues.append(
                issue(
                    table.name,
                    rownum,
                    table.header[event_col],
                    "ppmi_missing_event",
                    "blank EVENT_ID; row rejected",
                )
            )
        if key_issues:
            issues += key_issues
            continue
        assert pid is not None and parsed is not None
        items, item_issues, ok = read_items(
            table, rownum, cells, inst, not_rated_codes=(NOT_RATED_CODE,)
        )
        items = {c: v for c, v in items.items() if c in codes}
        issues += item_issues
        if not ok:
            continue
        if all(v is None for v in items.values()):
            issues.append(
                issue(
                    table.name,
                    rownum,
                    None,
                    "no_items",
                    f"patient {pid} {event}: every {PART_LABEL[part]} item is blank; row rejected",
                )
            )
            continue
        extra: dict = {}
        condition = _condition(table, rownum, cells, issues) if part == "III" else ""
        if part == "III":
            for key, norm in (
                ("PAG_NAME", "PAGNAME"),
                ("PDSTATE", "PDSTATE"),
                ("PDMEDYN", "PDMEDYN"),
            ):
                if norm in cols and cells[cols[norm]].strip():
                    extra[key] = cells[cols[norm]].strip()
            if nhy_col is not None and not is_blank(cells[nhy_col]):
                try:
                    nhy = plain_float(cells[nhy_col])
                    extra["hoehn_yahr"] = None if nhy == NOT_RATED_CODE else nhy
                    if nhy == NOT_RATED_CODE:
                        extra["hoehn_yahr_note"] = "not rated (101)"
                except ValueError:
                    issues.append(
                        issue(
                            table.name,
                            rownum,
                            "NHY",
                            "bad_descriptor",
                            f"NHY = {cells[nhy_col]!r} is not a number; not kept",
                        )
                    )
        if total_col is not None and not is_blank(cells[total_col]):
            try:
                total = plain_float(cells[total_col])
                s = sum(v for v in items.values() if v is not None)
                if abs(total - s) > 1e-6:
                    issues.append(
                        issue(
                            table.name,
                            rownum,
                            table.header[total_col],
                            "total_mismatch",
                            f"{table.header[total_col]} = {total:g} but the {PART_LABEL[part]} items sum "
                            f"to {s:g} (blanks as 0); the items are used",
                        )
                    )
            except ValueError:
                issues.append(
                    issue(
                        table.name,
                        rownum,
                        table.header[total_col],
                        "total_mismatch",
                        f"{table.header[total_col]} = {cells[total_col]!r} is not a number",
                    )
                )
        out.append(PartRow(table, rownum, part, pid, event, parsed, condition, items, extra))
    return out, issues


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
        part = part_from_name(t.path.name)
        if part is not None:
            codes = _part_codes(part)
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
        if part is None:
            skipped.append(t)
            continue
        parts_seen.add(part)
        r, i = _read_part_rows(t, part, today)
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
    # duplicates per patient, event, part, condition (first kept)
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
    # SC superseded by BL (per patient and part)
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
    groups: dict[tuple[int, str], list[PartRow]] = defaultdict(list)
    for pr in kept:
        groups[(pr.pid, pr.event)].append(pr)
    sessions: list[Session] = []
    prof = load_profile(PROFILE)
    for (pid, event), prs in groups.items():
        sessions += _join(pid, event, prs, prof, parts_seen, issues)
    return sessions, issues, skipped


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
    out: list[Session] = []

    def make(main: PartRow | None, members: list[PartRow], condition: str) -> Session:
        anchor = main or members[0]
        items: dict[str, float | None] = {i.code: None for i in prof.items}
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
        # missing items of the parts this session is expected to hold
        expected = (
            {"III"} if (main is not None and main is on and off is not None) else set(parts_seen)
        )
        expected_codes = [
            i.code
            for i in prof.items
            if any(i.code in _part_codes(p) for p in expected if p != "IV")
        ]
        blank = [c for c in expected_codes if items.get(c) is None]
        if blank:
            present_parts = {m.part for m in members}
            absent_rows = sorted((expected - present_parts) - {"IV"}, key=PARTS.index)
            note = (
                f"; no {', '.join(PART_LABEL[p] for p in absent_rows)} row for this event"
                if absent_rows
                else ""
            )
            issues.append(
                issue(
                    anchor.table.name,
                    anchor.row,
                    ", ".join(blank[:12]) + (", ..." if len(blank) > 12 else ""),
                    "missing_item",
                    f"PATNO {pid} {event}{' ' + condition if condition else ''}: "
                    f"{len(blank)} MDS-UPDRS item(s) missing{note}: domain scores partial, "
                    "not imputed",
                )
            )
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

    if primary is None:
        out.append(make(None, others, ""))
    else:
        out.append(make(primary, [primary, *others], primary.condition))
        if off is not None and on is not None:
            out.append(make(on, [on], "ON"))
    return out
