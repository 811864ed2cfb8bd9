"""Row-to-session helpers the ingest formats share: one CSV row -> Sessions or issues.

Owns the per-row logic of the generic and MA-RAG formats and the parts the PPMI reader reuses:
which columns hold a profile's items (`item_columns`, `missing_column_issues`), a row's patient id
and date (`read_key_cells`, with the day/month order decided once per date column), its item values
(`read_items`, `missing_item_issue`), its patient descriptors (`read_descriptors`) and the sessions
of one row over one or more instrument profiles (`build_row_sessions`). Kept apart from the formats
so that each format module holds only its own columns and rules.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from kb_store.csv_table import Table
from kb_store.dates import DateOrder, ParsedDate, decide_order
from kb_store.model import Session, SourceRef, ValidationIssue
from kb_store.profiles import Profile, normalise_column
from kb_store.validation import (
    CellError,
    is_blank,
    issue,
    parse_item_value,
    parse_patient_id,
    parse_session_date,
    plain_float,
)

NHY_NOT_RATED = 101.0  # Hoehn & Yahr "not rated" code (kept as None with a note)


def item_columns(table: Table, profile: Profile) -> tuple[dict[str, int], list[int]]:
    """Item code -> column index for a profile; also columns that duplicate an already-mapped item."""
    lookup = profile.lookup()
    out: dict[str, int] = {}
    dup: list[int] = []
    for i, h in enumerate(table.header):
        item = lookup.get(normalise_column(h))
        if item is None:
            continue
        if item.code in out:
            dup.append(i)
        else:
            out[item.code] = i
    return out, dup


def missing_column_issues(
    table: Table, profile: Profile, cols: dict[str, int]
) -> list[ValidationIssue]:
    """File-level warning for each core item of the profile that has no column."""
    out = []
    core = set(profile.core_domains())
    absent = [i.code for i in profile.items if i.domain in core and i.code not in cols]
    if cols and absent:
        out.append(
            issue(
                table.name,
                None,
                ", ".join(absent),
                "missing_item_column",
                f"{len(absent)} {profile.name} item(s) have no column; they are missing in every "
                "session of this file (domains partial, never imputed)",
            )
        )
    return out


@dataclass
class InstrumentColumns:
    profile: Profile
    cols: dict[str, int]  # item code -> column index


@dataclass
class RowOutcome:
    sessions: list[Session] = field(default_factory=list)
    issues: list[ValidationIssue] = field(default_factory=list)


def read_items(
    table: Table,
    rownum: int,
    cells: list[str],
    inst: InstrumentColumns,
    *,
    not_rated_codes: Sequence[float] = (),
) -> tuple[dict[str, float | None], list[ValidationIssue], bool]:
    """Item values of one instrument; (items, issues, ok). ok=False when a cell rejects the session."""
    items: dict[str, float | None] = {}
    issues: list[ValidationIssue] = []
    ok = True
    for item in inst.profile.items:
        idx = inst.cols.get(item.code)
        if idx is None:
            items[item.code] = None
            continue
        col = table.header[idx]
        try:
            value = parse_item_value(cells[idx], item, not_rated_codes=not_rated_codes)
        except CellError as exc:
            msg = str(exc)
            if exc.rule != "not_rated":
                ok = False
                msg += f"; the {inst.profile.instrument} session of this row is rejected"
            issues.append(issue(table.name, rownum, col, exc.rule, msg))
            value = None
        if value is not None and not float(value).is_integer():
            issues.append(
                issue(
                    table.name,
                    rownum,
                    col,
                    "non_integer_item",
                    f"{item.code} = {cells[idx].strip()} is not a whole number; kept as read",
                )
            )
        items[item.code] = value
    return items, issues, ok


def missing_item_issue(
    table: Table,
    rownum: int,
    profile: Profile,
    items: dict[str, float | None],
    cols: dict[str, int],
    *,
    parts: Sequence[str] | None = None,
    note: str = "",
) -> ValidationIssue | None:
    """Warning listing the blank cells of the items that have a column (a partial domain)."""
    optional = [d for d, spec in profile.domains.items() if spec.optional]
    present_opt = {
        d for d in optional if any(items.get(i.code) is not None for i in profile.items_of(d))
    }
    doms = set(parts) if parts is not None else set(profile.core_domains()) | present_opt
    blank = [
        i
        for i in profile.items
        if i.domain in doms and i.code in cols and items.get(i.code) is None
    ]
    if not blank:
        return None
    by_dom: dict[str, int] = {}
    for i in blank:
        by_dom[i.domain] = by_dom.get(i.domain, 0) + 1
    doms_txt = ", ".join(f"{d} {n}/{len(profile.items_of(d))}" for d, n in by_dom.items())
    codes = ", ".join(i.code for i in blank[:12]) + (", ..." if len(blank) > 12 else "")
    return issue(
        table.name,
        rownum,
        codes,
        "missing_item",
        f"{len(blank)} blank {profile.instrument} item(s) ({doms_txt} missing): domain score partial, "
        f"not imputed{note}",
    )


def read_key_cells(
    table: Table, rownum: int, cells: list[str], pid_col: int, date_col: int, today: dt.date
) -> tuple[int | None, ParsedDate | None, list[ValidationIssue]]:
    """Patient id and plausible date of one row, or the issues rejecting the row."""
    issues: list[ValidationIssue] = []
    pid = parsed = None
    try:
        pid = parse_patient_id(cells[pid_col])
        table.record_id(rownum, cells[pid_col], pid)
        table.id_column = table.header[pid_col]
    except CellError as exc:
        issues.append(
            issue(table.name, rownum, table.header[pid_col], exc.rule, str(exc) + "; row rejected")
        )
    try:
        parsed = parse_session_date(cells[date_col], today, column_date_order(table, date_col))
    except CellError as exc:
        issues.append(
            issue(table.name, rownum, table.header[date_col], exc.rule, str(exc) + "; row rejected")
        )
    return pid, parsed, issues


def column_date_order(table: Table, col: int) -> DateOrder:
    """The day/month order of a date column, decided once per file from its unambiguous values
    (kb_store.dates.decide_order); the decision is reported as a file-level issue. A group of
    numeric dates nothing in the column decides takes the order given (`table.given_date_order`,
    --date-order) or is an `ambiguous_date_order` issue: a build refuses (kb_store.ingest_report)."""
    if col in table.date_orders:
        return table.date_orders[col]
    order = decide_order(cells[col] for _, cells in table.rows)
    table.date_orders[col] = order
    for group, values in order.ambiguous.items():
        if group in order.conflict:
            continue  # each ambiguous value is an `ambiguous_date` error of its row
        if not order.decided(group) and table.given_date_order:
            order.order[group] = table.given_date_order
        table.late_issues.append(_order_issue(table, col, order, group, values))
    return order


def _order_issue(
    table: Table, col: int, order: DateOrder, group: str, values: list[str]
) -> ValidationIssue:
    """The file-level line on how one group of a column's numeric dates is read."""
    style = "dotted (DD.MM.YYYY)" if group == "dot" else "slash/dash"
    shown = order.order[group]
    word = "day-first" if shown == "dmy" else "month-first"
    name = table.header[col]
    if order.decided(group):
        example = order.evidence[(group, shown)]
        why = f"as {example!r} shows"
    elif table.given_date_order:
        why = f"as the order given (--date-order {shown}) says; no value of the column decides"
    else:
        return issue(
            table.name,
            None,
            name,
            "ambiguous_date_order",
            f"{len(values)} {style} date(s) such as {values[0]!r} could be month-first or "
            f"day-first and no date of the column decides: read {word.upper()} in this report; "
            "a build refuses unless the order is given (--date-order dmy|mdy) or the file "
            "holds ISO dates (YYYY-MM-DD)",
        )
    return issue(
        table.name,
        None,
        name,
        "date_order",
        f"{style} dates read {word} for the whole column, {why} ({len(values)} value(s) such "
        f"as {values[0]!r} could be read either way)",
    )


def date_extra(parsed: ParsedDate, column: str) -> dict:
    extra = {"raw_date": parsed.raw, "date_column": column, "date_precision": parsed.precision}
    if parsed.time:
        extra["time"] = parsed.time
    return extra


def month_warning(table: Table, rownum: int, column: str, parsed: ParsedDate) -> ValidationIssue:
    return issue(
        table.name,
        rownum,
        column,
        "month_precision_date",
        f"{parsed.raw!r} has month precision only; read as {parsed.date.isoformat()} (the 1st); "
        "day-level intervals involving this session are approximate",
    )


def build_row_sessions(
    table: Table,
    rownum: int,
    cells: list[str],
    pid: int,
    parsed: ParsedDate,
    date_col: int,
    instruments: Sequence[InstrumentColumns],
    extra: dict,
    *,
    condition: str = "",
) -> RowOutcome:
    """One session per instrument that has any value in the row; issues for everything else."""
    out = RowOutcome()
    date_column = table.header[date_col]
    if parsed.precision == "month":
        out.issues.append(month_warning(table, rownum, date_column, parsed))
    blank_instruments: list[str] = []
    rejected = False
    for inst in instruments:
        items, issues, ok = read_items(table, rownum, cells, inst)
        out.issues += issues
        if not ok:
            rejected = True
            continue
        if all(v is None for v in items.values()):
            blank_instruments.append(inst.profile.instrument)
            continue
        miss = missing_item_issue(table, rownum, inst.profile, items, inst.cols)
        if miss:
            out.issues.append(miss)
        ex = dict(extra)
        ex.update(date_extra(parsed, date_column))
        ex["sources"] = [f"{table.name}:{rownum}"]
        out.sessions.append(
            Session(
                proj_id=pid,
                date=parsed.date,
                instrument=inst.profile.instrument,
                profile=inst.profile.name,
                items=items,
                source=SourceRef(table.name, rownum),
                condition=condition if inst.profile.instrument == "updrs" else "",
                extra=ex,
            )
        )
    if blank_instruments:
        if out.sessions:
            for name in blank_instruments:
                out.issues.append(
                    issue(
                        table.name,
                        rownum,
                        None,
                        "instrument_blank",
                        f"patient {pid} on {parsed.date.isoformat()}: every {name} item is blank; "
                        f"no {name} session from this row",
                    )
                )
        elif not rejected:
            out.issues.append(
                issue(
                    table.name,
                    rownum,
                    None,
                    "no_items",
                    f"patient {pid} on {parsed.date.isoformat()}: no item value for "
                    f"{' or '.join(blank_instruments)}; row rejected",
                )
            )
    return out


def read_descriptors(
    table: Table, rownum: int, cells: list[str], cols: dict[str, int]
) -> tuple[dict, list[ValidationIssue]]:
    """Patient descriptors (sex, age, H&Y, disease duration) kept in Session.extra."""
    extra: dict = {}
    issues: list[ValidationIssue] = []
    for key, idx in cols.items():
        raw = cells[idx].strip()
        if is_blank(raw):
            continue
        if key == "sex":
            extra[key] = raw
            continue
        try:
            value = plain_float(raw)
            if not math.isfinite(value):
                raise ValueError(raw)
        except ValueError:
            issues.append(
                issue(
                    table.name,
                    rownum,
                    table.header[idx],
                    "bad_descriptor",
                    f"{key} = {raw!r} is not a number; not kept (the session is kept)",
                )
            )
            continue
        if key == "hoehn_yahr" and value == NHY_NOT_RATED:
            extra[key] = None
            extra["hoehn_yahr_note"] = "not rated (101)"
            continue
        extra[key] = value
    return extra, issues
