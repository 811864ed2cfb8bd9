"""PPMI part files: which MDS-UPDRS part a file holds, and its rows read as `PartRow`s.

Owns the PPMI constants (parts, their item codes and total columns, the known administrative
columns), the recognition of a part file by its name or its columns, the exam state (ON / OFF) of a
Part III row, and reading one part file's rows with their issues (keys, items, Hoehn & Yahr, totals
checked against the item sum). Joining the parts of one PATNO + EVENT_ID into sessions is
kb_store.ingest_ppmi, which documents the PPMI rules as a whole.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from kb_store.csv_table import Table
from kb_store.dates import ParsedDate
from kb_store.ingest_rows import InstrumentColumns, item_columns, read_items, read_key_cells
from kb_store.model import ValidationIssue
from kb_store.profiles import load_profile, normalise_column
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


def part_codes(part: str) -> set[str]:
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


def read_part_rows(
    table: Table, part: str, today: dt.date
) -> tuple[list[PartRow], list[ValidationIssue]]:
    """The rows of one part file as `PartRow`s, with the file's and the rows' issues."""
    issues: list[ValidationIssue] = list(table.issues)
    prof = load_profile(PROFILE)
    cols = table.columns()
    all_cols, _dup = item_columns(table, prof)
    codes = part_codes(part)
    item_cols = {c: i for c, i in all_cols.items() if c in codes}
    issues += _column_issues(table, part, item_cols, codes)
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
    reader = _PartReader(
        table, part, codes, InstrumentColumns(prof, item_cols), (pid_col, event_col, date_col), cols
    )
    out: list[PartRow] = []
    for rownum, cells in table.rows:
        row = reader.read(rownum, cells, today, issues)
        if row is not None:
            out.append(row)
    return out, issues


def _column_issues(
    table: Table, part: str, item_cols: dict[str, int], codes: set[str]
) -> list[ValidationIssue]:
    """File-level issues: administrative columns ignored, unknown columns, items without a column."""
    issues: list[ValidationIssue] = []
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
    return issues


@dataclass
class _PartReader:
    """Reads the data rows of one part file (its columns found once)."""

    table: Table
    part: str
    codes: set[str]
    inst: InstrumentColumns
    keys: tuple[int, int, int]  # PATNO, EVENT_ID and INFODT columns
    cols: dict[str, int]  # table.columns(), found once

    def read(
        self, rownum: int, cells: list[str], today: dt.date, issues: list[ValidationIssue]
    ) -> PartRow | None:
        """The row as a PartRow, or None when it is rejected; its issues go to `issues`."""
        table, part = self.table, self.part
        pid_col, event_col, date_col = self.keys
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
            return None
        assert pid is not None and parsed is not None
        items, item_issues, ok = read_items(
            table, rownum, cells, self.inst, not_rated_codes=(NOT_RATED_CODE,)
        )
        items = {c: v for c, v in items.items() if c in self.codes}
        issues += item_issues
        if not ok:
            return None
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
            return None
        extra: dict = {}
        condition = _condition(table, rownum, cells, issues) if part == "III" else ""
        if part == "III":
            extra = self._part_iii_extra(rownum, cells, issues)
        self._check_total(rownum, cells, items, issues)
        return PartRow(table, rownum, part, pid, event, parsed, condition, items, extra)

    def _part_iii_extra(self, rownum: int, cells: list[str], issues: list[ValidationIssue]) -> dict:
        """Exam-state columns and Hoehn & Yahr of a Part III row, kept in Session.extra."""
        table, cols = self.table, self.cols
        extra: dict = {}
        for key, norm in (
            ("PAG_NAME", "PAGNAME"),
            ("PDSTATE", "PDSTATE"),
            ("PDMEDYN", "PDMEDYN"),
        ):
            if norm in cols and cells[cols[norm]].strip():
                extra[key] = cells[cols[norm]].strip()
        nhy_col = cols.get("NHY")
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
        return extra

    def _check_total(
        self,
        rownum: int,
        cells: list[str],
        items: dict[str, float | None],
        issues: list[ValidationIssue],
    ) -> None:
        """Warn when the part's total column disagrees with its item sum (blanks as 0)."""
        table, part = self.table, self.part
        total_col = self.cols.get(PART_TOTALS[part])
        if total_col is None or is_blank(cells[total_col]):
            return
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
