"""The generic session format: one combined CSV, or one CSV per instrument (docs/data-ingest.md).

Owns `looks_generic` and `parse_generic`: key columns matched case/punctuation-insensitively through
aliases, items by the codes (and aliases) of the profiles mds-updrs and pdq8, descriptors, the
ON/OFF condition, and the report line of every column not used. Files are read by
kb_store.csv_table; the per-row logic it shares with the MA-RAG format is kb_store.ingest_rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from kb_store.csv_table import Table
from kb_store.ingest_rows import (
    InstrumentColumns,
    build_row_sessions,
    item_columns,
    missing_column_issues,
    read_descriptors,
    read_key_cells,
)
from kb_store.model import AnySession, Session, ValidationIssue
from kb_store.profiles import load_profile, normalise_column
from kb_store.validation import is_blank, issue

PATIENT_ALIASES = ("proj_id", "PATNO", "patient_id", "patient", "participant_id", "subject_id")
DATE_ALIASES = ("date", "SESSION_DATE", "visit_date", "INFODT", "timestamp", "session_datetime")
DESCRIPTOR_ALIASES: dict[str, tuple[str, ...]] = {
    "sex": ("sex", "gender"),
    "age": ("age",),
    "hoehn_yahr": ("hoehn_yahr", "NHY", "hoehn_and_yahr", "HY"),
    "disease_duration_years": ("disease_duration_years", "disease_duration"),
}
CONDITION_ALIASES = ("condition", "PDSTATE", "exam_state")
#: Known generic columns not used for sessions, with the reason shown in the report.
GENERIC_IGNORED: dict[str, str] = {
    "VISIT": "visit indices are recomputed from dates (kept as extra['source_visit'])",
    "EVENTID": "kept as extra['event_id']; visits are recomputed from dates",
    "INSTRUMENT": "the instrument is inferred from the item columns",
    "UNNAMED0": "spreadsheet index column",
    "INDEX": "spreadsheet index column",
}
GENERIC_PROFILES = ("mds-updrs", "pdq8")


def looks_generic(table: Table) -> bool:
    return any(item_columns(table, load_profile(n))[0] for n in GENERIC_PROFILES)


@dataclass
class GenericColumns:
    """Where the generic format's columns are in one file (None: the file has no such column)."""

    instruments: list[InstrumentColumns]
    pid_col: int | None
    date_col: int | None
    cond_col: int | None
    descriptors: dict[str, int]  # descriptor key -> column index
    ignored: dict[int, str]  # column index -> normalised name, of the known ignored columns


def parse_generic(
    table: Table,
    *,
    today: dt.date,
    keep: Callable[[Session], AnySession] | None = None,
) -> tuple[list[AnySession], list[ValidationIssue]]:
    """Sessions and issues from one generic session CSV (combined or one instrument per file).
    `keep` turns each session into what is kept of it, row by row (kb_store.ingest `keys_only`)."""
    issues: list[ValidationIssue] = list(table.issues)
    sessions: list[AnySession] = []
    cols, col_issues = generic_columns(table)
    issues += col_issues
    if not cols.instruments:
        issues.append(
            issue(
                table.name,
                None,
                None,
                "no_items",
                f"no item column of {' or '.join(GENERIC_PROFILES)}; all {len(table.rows)} rows rejected",
            )
        )
        return sessions, issues
    issues += _missing_key_issues(table, cols)
    if cols.pid_col is None or cols.date_col is None:
        return sessions, issues
    for rownum, cells in table.rows:
        row_sessions, row_issues = _parse_row(table, rownum, cells, cols, today)
        sessions += row_sessions if keep is None else [keep(s) for s in row_sessions]
        issues += row_issues
    return sessions, issues


def generic_columns(table: Table) -> tuple[GenericColumns, list[ValidationIssue]]:
    """The file's key, descriptor, item and ignored columns, with the file-level issues about them
    (duplicate item columns, core items without a column, ignored and unknown columns)."""
    issues: list[ValidationIssue] = []
    instruments = []
    used: set[int] = set()
    for name in GENERIC_PROFILES:
        prof = load_profile(name)
        cols, dup = item_columns(table, prof)
        for i in dup:
            issues.append(
                issue(
                    table.name,
                    None,
                    table.header[i],
                    "unknown_column",
                    "a second column for an item already read from another column; ignored",
                )
            )
            used.add(i)
        if cols:
            instruments.append(InstrumentColumns(prof, cols))
            used.update(cols.values())
            issues += missing_column_issues(table, prof, cols)
    pid_col = table.find(PATIENT_ALIASES)
    date_col = table.find(DATE_ALIASES)
    desc_cols = {k: table.find(v) for k, v in DESCRIPTOR_ALIASES.items()}
    desc = {k: v for k, v in desc_cols.items() if v is not None}
    cond_col = table.find(CONDITION_ALIASES)
    used.update(desc.values())
    used.update(i for i in (pid_col, date_col, cond_col) if i is not None)
    ignored_cols: dict[int, str] = {}
    for i, h in enumerate(table.header):
        if i in used:
            continue
        reason = GENERIC_IGNORED.get(normalise_column(h))
        if reason:
            ignored_cols[i] = normalise_column(h)
            issues.append(issue(table.name, None, h, "ignored_column", reason))
        else:
            issues.append(
                issue(
                    table.name,
                    None,
                    h,
                    "unknown_column",
                    "not a key, descriptor or item column of the generic format; values ignored",
                )
            )
    return GenericColumns(instruments, pid_col, date_col, cond_col, desc, ignored_cols), issues


def _missing_key_issues(table: Table, cols: GenericColumns) -> list[ValidationIssue]:
    """An error for an absent patient or date column (every data row of the file is rejected)."""
    issues: list[ValidationIssue] = []
    for rule, col, aliases in (
        ("missing_patient_column", cols.pid_col, PATIENT_ALIASES),
        ("missing_date_column", cols.date_col, DATE_ALIASES),
    ):
        if col is None:
            issues.append(
                issue(
                    table.name,
                    None,
                    None,
                    rule,
                    f"no column named any of {', '.join(aliases)}; all {len(table.rows)} data rows "
                    "of this file rejected",
                )
            )
    return issues


def _parse_row(
    table: Table, rownum: int, cells: list[str], cols: GenericColumns, today: dt.date
) -> tuple[list[Session], list[ValidationIssue]]:
    """Sessions and issues of one data row (the patient and date columns exist)."""
    assert cols.pid_col is not None and cols.date_col is not None
    pid, parsed, key_issues = read_key_cells(
        table, rownum, cells, cols.pid_col, cols.date_col, today
    )
    if key_issues:
        return [], key_issues
    assert pid is not None and parsed is not None
    extra, issues = read_descriptors(table, rownum, cells, cols.descriptors)
    for i, key in cols.ignored.items():
        if key == "VISIT" and cells[i].strip():
            extra["source_visit"] = cells[i].strip()
        elif key == "EVENTID" and cells[i].strip():
            extra["event_id"] = cells[i].strip()
    condition = ""
    if cols.cond_col is not None:
        raw = cells[cols.cond_col].strip().upper()
        if raw in ("ON", "OFF"):
            condition = raw
        elif not is_blank(raw):
            issues.append(
                issue(
                    table.name,
                    rownum,
                    table.header[cols.cond_col],
                    "unknown_condition",
                    f"condition {cells[cols.cond_col].strip()!r} is neither ON nor OFF; read as "
                    "unspecified",
                )
            )
    outcome = build_row_sessions(
        table,
        rownum,
        cells,
        pid,
        parsed,
        cols.date_col,
        cols.instruments,
        extra,
        condition=condition,
    )
    return outcome.sessions, issues + outcome.issues
