"""The MA-RAG study CSVs (txst-cs-smartfall/clinical-LLM-MA-RAG, knowledge_base/CSVs).

Owns the two study files' layouts (see ../shared/data/ma-rag/README.md):
- UPDRS_one2one_summaries.csv -> `updrs` Sessions with profile marag-updrs44 (44 items; the motor
  speech item is the duplicate-header column `SPEECH_PROB.1`). Q4_1, UPDRS_TOTAL, UPDRS_SCORE,
  clinician_summary and user_summary go to Session.extra under those names; UPDRS_TOTAL is checked
  against the item sum (blanks counted as 0, as the study did) and UPDRS_SCORE against
  total / 176 x 100; mismatches are warnings (the items are the facts; the total is not used).
- PDQ8_UPDRS_one2one_summaries.csv -> `pdq8` Sessions (profile pdq8 through its aliases DIFF_PUB ..
  EMBARESSED). PDQ_8_TOTAL is checked against the item sum. The paired UPDRS columns describe the
  UPDRS session the study paired with this PDQ-8 session: UPDRS_SESSION_DATE and UPDRS_TOTAL are
  kept in extra (`UPDRS_SESSION_DATE` as ISO text, `paired_UPDRS_TOTAL`), the paired item columns are
  ignored with a reason (the UPDRS file is the one source of UPDRS sessions, so nothing is counted
  twice). clinician_summary is kept in extra["clinician_summary"] (the evaluation's gold text).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from kb_store.csv_table import Table
from kb_store.dates import DateParseError, parse_date
from kb_store.ingest_rows import (
    InstrumentColumns,
    build_row_sessions,
    item_columns,
    missing_column_issues,
    read_key_cells,
)
from kb_store.model import AnySession, Session, ValidationIssue
from kb_store.profiles import load_profile, normalise_column
from kb_store.validation import IngestError, is_blank, issue, plain_float

UPDRS_PROFILE = "marag-updrs44"
UPDRS_MAX_TOTAL = 176.0
#: Columns (normalised) kept in Session.extra, by file kind: normalised name -> extra key.
UPDRS_EXTRA = {
    "Q41": "Q4_1",
    "UPDRSTOTAL": "UPDRS_TOTAL",
    "UPDRSSCORE": "UPDRS_SCORE",
    "CLINICIANSUMMARY": "clinician_summary",
    "USERSUMMARY": "user_summary",
}
PDQ8_EXTRA = {
    "PDQ8TOTAL": "PDQ_8_TOTAL",
    "UPDRSSESSIONDATE": "UPDRS_SESSION_DATE",
    "UPDRSTOTAL": "paired_UPDRS_TOTAL",
    "CLINICIANSUMMARY": "clinician_summary",
    "USERSUMMARY": "user_summary",
}
NUMERIC_EXTRA = {"Q4_1", "UPDRS_TOTAL", "UPDRS_SCORE", "PDQ_8_TOTAL", "paired_UPDRS_TOTAL"}


def marag_kind(table: Table) -> str | None:
    """'updrs' / 'pdq8' when the headers are those of a MA-RAG study file, else None."""
    cols = table.columns()
    if "PROJID" not in cols:
        return None
    if "PDQSESSIONDATE" in cols:
        return "pdq8"
    if "SESSIONDATE" in cols:
        marag_items, _ = item_columns(table, load_profile(UPDRS_PROFILE))
        if "Q41" in cols or len(marag_items) >= 22:
            return "updrs"
    return None


def _number(raw: str) -> float | None:
    try:
        v = plain_float(raw)
    except ValueError:
        return None
    return v if v == v else None


def parse_marag(
    table: Table,
    *,
    today: dt.date,
    keep: Callable[[Session], AnySession] | None = None,
) -> tuple[list[AnySession], list[ValidationIssue]]:
    """Sessions and issues of one MA-RAG study file; `keep` turns each session into what is kept
    of it, row by row (kb_store.ingest `keys_only`)."""
    kind = marag_kind(table)
    if kind is None:
        raise IngestError(
            f"{table.path}: not a MA-RAG study file (expected PROJ_ID with SESSION_DATE and the 44 "
            "UPDRS items, or PROJ_ID with PDQ_SESSION_DATE)"
        )
    issues: list[ValidationIssue] = list(table.issues)
    cols = table.columns()
    pid_col = cols["PROJID"]
    date_col = cols["SESSIONDATE" if kind == "updrs" else "PDQSESSIONDATE"]
    profile = load_profile(UPDRS_PROFILE if kind == "updrs" else "pdq8")
    item_cols, dup = item_columns(table, profile)
    issues += missing_column_issues(table, profile, item_cols)
    extra_map = UPDRS_EXTRA if kind == "updrs" else PDQ8_EXTRA
    extra_cols = {key: cols[n] for n, key in extra_map.items() if n in cols}
    used = {pid_col, date_col, *item_cols.values(), *extra_cols.values()}
    issues += _unused_column_issues(table, kind, used, dup)
    inst = [InstrumentColumns(profile, item_cols)]
    sessions: list[AnySession] = []
    for rownum, cells in table.rows:
        pid, parsed, key_issues = read_key_cells(table, rownum, cells, pid_col, date_col, today)
        if key_issues:
            issues += key_issues
            continue
        assert pid is not None and parsed is not None
        extra = _row_extra(kind, extra_cols, cells)
        outcome = build_row_sessions(table, rownum, cells, pid, parsed, date_col, inst, extra)
        issues += outcome.issues
        for s in outcome.sessions:
            issues += _check_totals(table, rownum, s, kind)
        sessions += outcome.sessions if keep is None else [keep(s) for s in outcome.sessions]
    return sessions, issues


def _unused_column_issues(
    table: Table, kind: str, used: set[int], dup: list[int]
) -> list[ValidationIssue]:
    """Issues for the columns not read: the paired UPDRS items of a PDQ-8 file, second columns
    of an item, and unknown columns. `used` holds the columns read (it is extended here)."""
    issues: list[ValidationIssue] = []
    if kind == "pdq8":
        paired_lookup = load_profile(UPDRS_PROFILE).lookup()
        paired = [
            h
            for i, h in enumerate(table.header)
            if i not in used and normalise_column(h) in paired_lookup
        ]
        used.update(i for i, h in enumerate(table.header) if h in paired)
        if paired:
            issues.append(
                issue(
                    table.name,
                    None,
                    ", ".join(paired),
                    "ignored_column",
                    f"{len(paired)} paired UPDRS item columns (the UPDRS session the study paired "
                    "with each PDQ-8 session): ignored, the UPDRS file is the source of UPDRS "
                    "sessions; UPDRS_SESSION_DATE and UPDRS_TOTAL are kept in extra",
                )
            )
    for i in dup:
        issues.append(
            issue(
                table.name,
                None,
                table.header[i],
                "unknown_column",
                "a second column for an item already read; ignored",
            )
        )
        used.add(i)
    for i, h in enumerate(table.header):
        if i not in used:
            issues.append(
                issue(
                    table.name,
                    None,
                    h,
                    "unknown_column",
                    f"not a column of the MA-RAG {kind} file; values ignored",
                )
            )
    return issues


def _row_extra(kind: str, extra_cols: dict[str, int], cells: list[str]) -> dict:
    """The study columns of one row kept in Session.extra (dates as ISO, numbers as numbers)."""
    extra: dict = {"source_format": f"marag-{kind}"}
    for key, idx in extra_cols.items():
        raw = cells[idx].strip()
        if is_blank(raw):
            continue
        if key == "UPDRS_SESSION_DATE":
            try:
                extra[key] = parse_date(raw).date.isoformat()
            except DateParseError:
                extra[key] = raw
        elif key in NUMERIC_EXTRA:
            num = _number(raw)
            extra[key] = raw if num is None else (int(num) if num.is_integer() else num)
        else:
            extra[key] = raw
    return extra


def _check_totals(table: Table, rownum: int, s: Session, kind: str) -> list[ValidationIssue]:
    out: list[ValidationIssue] = []
    item_sum = sum(v for v in s.items.values() if v is not None)  # blanks as 0, as the study did
    total_key = "UPDRS_TOTAL" if kind == "updrs" else "PDQ_8_TOTAL"
    total = s.extra.get(total_key)
    if total is None:
        return out
    if not isinstance(total, int | float):
        out.append(
            issue(
                table.name,
                rownum,
                total_key,
                "total_mismatch",
                f"{total_key} = {total!r} is not a number; the item sum is {item_sum:g}",
            )
        )
        return out
    if abs(float(total) - item_sum) > 1e-6:
        blanks = sum(v is None for v in s.items.values())
        out.append(
            issue(
                table.name,
                rownum,
                total_key,
                "total_mismatch",
                f"patient {s.proj_id} on {s.date.isoformat()}: {total_key} = {total:g} but the "
                f"{len(s.items)} items sum to {item_sum:g} (blanks as 0; {blanks} blank); "
                "the items are used, the total column is not",
            )
        )
    if kind == "updrs":
        score = s.extra.get("UPDRS_SCORE")
        if isinstance(score, int | float):
            expected = float(total) / UPDRS_MAX_TOTAL * 100
            if abs(expected - float(score)) > 0.01:
                out.append(
                    issue(
                        table.name,
                        rownum,
                        "UPDRS_SCORE",
                        "total_mismatch",
                        f"UPDRS_SCORE = {score:g} but UPDRS_TOTAL / 176 x 100 = {expected:.2f}",
                    )
                )
    return out
