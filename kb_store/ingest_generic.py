"""The CSV table reader every format shares, row-to-session helpers, and the generic session format.

Owns:
- `read_table`: bytes -> header + numbered rows. Handles a UTF-8 BOM, CRLF/CR/LF line ends, ',' ';' or
  tab delimiters, Windows-1252 files, duplicate header names (renamed `NAME.1`, `NAME.2` as pandas
  does, so a raw duplicate `SPEECH_PROB` header and a pandas-written `SPEECH_PROB.1` read the same),
  blank lines (skipped, counted). Row numbers are spreadsheet rows: header = row 1.
  A file that cannot be read at all raises `IngestError` with one line naming the file.
- `RowBuilder`: the shared per-row logic (patient id, date, items of one or more instrument profiles
  -> Sessions or issues), used by the generic and MA-RAG formats.
- `parse_generic`: the generic session CSV of docs/data-ingest.md (one combined file, or one file per
  instrument): key columns matched case/punctuation-insensitively through aliases, items by the codes
  (and aliases) of the profiles mds-updrs and pdq8.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kb_store.dates import DateOrder, ParsedDate, decide_order
from kb_store.model import Session, SourceRef, ValidationIssue
from kb_store.profiles import Profile, load_profile, normalise_column
from kb_store.validation import (
    CellError,
    IngestError,
    is_blank,
    issue,
    parse_item_value,
    parse_patient_id,
    parse_session_date,
    plain_float,
)

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
NHY_NOT_RATED = 101.0


# ---------------------------------------------------------------- reading a CSV table


@dataclass
class Table:
    path: Path
    name: str  # file name used in reports and SourceRef
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (spreadsheet row number, cells padded/truncated to header)
    blank_rows: int = 0
    issues: list[ValidationIssue] = field(default_factory=list)
    #: physical lines of the file, and how they were used: `lines == header_lines + row_lines`
    #: (row_lines counts data, blank and broken rows' lines) is checked by kb_store.ingest.
    lines: int = 0
    header_lines: int = 0
    row_lines: int = 0
    #: issues found while the format parser reads rows (date order of a column), collected by
    #: kb_store.ingest after parsing
    late_issues: list[ValidationIssue] = field(default_factory=list)
    #: rows rejected while reading (broken quote); their issue is in `issues`
    broken_rows: list[int] = field(default_factory=list)
    date_orders: dict[int, DateOrder] = field(default_factory=dict)

    def columns(self) -> dict[str, int]:
        """Normalised header name -> index of its first occurrence."""
        out: dict[str, int] = {}
        for i, h in enumerate(self.header):
            out.setdefault(normalise_column(h), i)
        return out

    def find(self, aliases: Sequence[str]) -> int | None:
        cols = self.columns()
        for a in aliases:
            idx = cols.get(normalise_column(a))
            if idx is not None:
                return idx
        return None


def _utf16(data: bytes) -> str | None:
    """'utf-16' (with BOM), 'utf-16-le' or 'utf-16-be' when the bytes look like UTF-16 text."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    sample = data[:4096]
    if len(sample) >= 4 and len(sample) % 2 == 0:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
            return "utf-16-le"
        if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "utf-16-be"
    return None


def _decode(path: Path, data: bytes) -> tuple[str, str]:
    """The text and the encoding it was read with ('' for UTF-8)."""
    enc = _utf16(data)
    if enc:
        try:
            return data.decode(enc).lstrip("\ufeff"), "UTF-16"
        except UnicodeDecodeError as exc:
            raise IngestError(
                f"{path}: cannot read: looks like UTF-16 text but does not decode ({exc.reason} "
                f"at byte {exc.start}); save it as UTF-8"
            ) from None
    if b"\x00" in data:
        raise IngestError(f"{path}: cannot read: binary content (NUL bytes), not a CSV text file")
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "Windows-1252"
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{path}: cannot read: neither UTF-8 nor Windows-1252 text ({exc})"
        ) from None


def _dedupe_header(raw: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out: list[str] = []
    for i, h in enumerate(raw):
        name = h.strip().lstrip("\ufeff") or f"Unnamed: {i}"
        if name in seen:
            seen[name] += 1
            new = f"{name}.{seen[name]}"
            while new in seen:
                seen[name] += 1
                new = f"{name}.{seen[name]}"
            name = new
        seen.setdefault(name, 0)
        out.append(name)
    return out


_LINE_END = re.compile(r"\r\n|\r|\n")


#: Largest cell read (csv's default, 128 KiB, rejects a whole file for one long summary cell)
MAX_CELL_CHARS = 16 * 1024 * 1024


def _records(p: Path, text: str, delimiter: str) -> Iterator[tuple[int, int, list[str]]]:
    """(first physical line, last physical line, cells) of every CSV record, lines 1-based."""
    if csv.field_size_limit() < MAX_CELL_CHARS:
        csv.field_size_limit(MAX_CELL_CHARS)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=False)
    prev = 0
    try:
        for rec in reader:
            yield prev + 1, reader.line_num, rec
            prev = reader.line_num
    except csv.Error as exc:
        raise IngestError(f"{p}: cannot read as CSV (line {reader.line_num}): {exc}") from None


def _merged_rows(lines: list[str], cells: int, delimiter: str, width: int) -> bool:
    """True when a multi-line record swallowed lines that are rows of their own (a stray quote).

    `lines` are the record's continuation lines. A line wholly inside the quoted cell (all but the
    last) that, read alone, has at least half the header's cells is a swallowed row; so is the last
    line when the record does not have the header's width (the cell closed at a quote inside a later
    row, whose remaining cells were appended). A quoted line break inside a text cell leaves lines of
    prose and a record of the header's width."""
    need = max(2, (width + 1) // 2)

    def row_like(ln: str) -> bool:
        return len(next(csv.reader([ln], delimiter=delimiter, strict=False), [])) >= need

    if any(row_like(ln) for ln in lines[:-1]):
        return True
    return cells != width and bool(lines) and row_like(lines[-1])


def _fit(table: Table, n: int, rec: list[str], width: int) -> list[str]:
    """Pad a short row / cut extra cells, with the warning that says so."""
    if len(rec) < width:
        table.issues.append(
            issue(
                table.name,
                n,
                None,
                "short_row",
                f"{len(rec)} cells for {width} columns; the absent cells are read as blank",
            )
        )
        return rec + [""] * (width - len(rec))
    if len(rec) > width:
        extra = [c for c in rec[width:] if c.strip()]
        if extra:
            table.issues.append(
                issue(
                    table.name,
                    n,
                    None,
                    "extra_cells",
                    f"{len(rec)} cells for {width} columns; extra cells ignored: "
                    f"{', '.join(repr(c[:20]) for c in extra[:3])}",
                )
            )
        return rec[:width]
    return rec


def read_table(path: str | Path, name: str | None = None) -> Table:
    """Read one CSV file; raise `IngestError` (one line naming the file) when it cannot be read.
    `name` keys the file in reports and sources (default: its base name)."""
    p = Path(path)
    name = name or p.name
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise IngestError(f"{p}: cannot read: {exc.strerror or exc}") from None
    text, encoding = _decode(p, data)
    if not text.strip():
        raise IngestError(f"{p}: cannot read: the file is empty (no header row)")
    physical = _LINE_END.split(text)
    if physical and physical[-1] == "":
        physical.pop()  # the final line end closes the last line; it opens none
    first_line = next((ln for ln in physical if ln.strip()), "")
    delimiter = max((",", ";", "\t"), key=lambda d: (first_line.count(d), d == ","))
    table = Table(p, name, [], [], lines=len(physical))
    if encoding:
        table.issues.append(issue(name, None, None, "encoding", f"decoded as {encoding}"))
    header_at = None
    n = 0  # spreadsheet row number of the record (blank records count, as a spreadsheet shows)
    for first, last, rec in _records(p, text, delimiter):
        n += 1
        if header_at is None:
            if any(c.strip() for c in rec):
                header_at = n
                table.header = _dedupe_header(rec)
                table.header_lines = last  # with any blank lines above it
            continue
        if not any(c.strip() for c in rec):
            table.blank_rows += 1
            table.row_lines += last - first + 1
            continue
        width = len(table.header)
        if last > first and _merged_rows(physical[first:last], len(rec), delimiter, width):
            # a stray quote swallowed the next lines: reject the row that opened it, read every
            # swallowed line as its own row, and let the build refuse (kb_store.ingest)
            table.issues.append(
                issue(
                    name,
                    n,
                    None,
                    "broken_quote",
                    f"line {first}: a quote opened here is closed only on line {last} (or never), "
                    f"so the CSV reader merged lines {first}-{last} into one row; this row is "
                    f"rejected and lines {first + 1}-{last} are read as rows of their own; fix "
                    "the quote in the file",
                )
            )
            table.broken_rows.append(n)
            table.row_lines += 1
            for k in range(first + 1, last + 1):
                n += 1
                table.row_lines += 1
                sub = next(csv.reader([physical[k - 1]], delimiter=delimiter, strict=False), [])
                if not any(c.strip() for c in sub):
                    table.blank_rows += 1
                    continue
                table.rows.append((n, _fit(table, n, sub, width)))
            continue
        table.row_lines += last - first + 1
        table.rows.append((n, _fit(table, n, rec, width)))
    if header_at is None:
        raise IngestError(f"{p}: cannot read: no header row")
    return table


# ---------------------------------------------------------------- row -> sessions


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
    (kb_store.dates.decide_order); the decision is reported as a file-level issue."""
    if col in table.date_orders:
        return table.date_orders[col]
    order = decide_order(cells[col] for _, cells in table.rows)
    table.date_orders[col] = order
    name = table.header[col]
    for group, values in order.ambiguous.items():
        style = "dotted (DD.MM.YYYY)" if group == "dot" else "slash/dash"
        if group in order.conflict:
            continue  # each ambiguous value is an `ambiguous_date` error of its row
        if order.decided(group):
            shown = order.order[group]
            example = order.evidence[(group, shown)]
            table.late_issues.append(
                issue(
                    table.name,
                    None,
                    name,
                    "date_order",
                    f"{style} dates read {'day-first' if shown == 'dmy' else 'month-first'} for "
                    f"the whole column, as {example!r} shows ({len(values)} value(s) such as "
                    f"{values[0]!r} could be read either way)",
                )
            )
        elif group == "slash":
            table.late_issues.append(
                issue(
                    table.name,
                    None,
                    name,
                    "ambiguous_date_order",
                    f"{len(values)} {style} date(s) such as {values[0]!r} could be month-first or "
                    "day-first and no date of the column decides: read MONTH-FIRST (MM/DD/YYYY); "
                    "if the file is day-first, write ISO dates (YYYY-MM-DD)",
                )
            )
    return order


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


# ---------------------------------------------------------------- generic format


def looks_generic(table: Table) -> bool:
    return any(item_columns(table, load_profile(n))[0] for n in GENERIC_PROFILES)


def parse_generic(table: Table, *, today: dt.date) -> tuple[list[Session], list[ValidationIssue]]:
    """Sessions and issues from one generic session CSV (combined or one instrument per file)."""
    issues: list[ValidationIssue] = list(table.issues)
    sessions: list[Session] = []
    pid_col = table.find(PATIENT_ALIASES)
    date_col = table.find(DATE_ALIASES)
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
    if not instruments:
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
    for rule, col, aliases in (
        ("missing_patient_column", pid_col, PATIENT_ALIASES),
        ("missing_date_column", date_col, DATE_ALIASES),
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
    if pid_col is None or date_col is None:
        return sessions, issues
    for rownum, cells in table.rows:
        pid, parsed, key_issues = read_key_cells(table, rownum, cells, pid_col, date_col, today)
        if key_issues:
            issues += key_issues
            continue
        assert pid is not None and parsed is not None
        extra, d_issues = read_descriptors(table, rownum, cells, desc)
        issues += d_issues
        for i, key in ignored_cols.items():
            if key == "VISIT" and cells[i].strip():
                extra["source_visit"] = cells[i].strip()
            elif key == "EVENTID" and cells[i].strip():
                extra["event_id"] = cells[i].strip()
        condition = ""
        if cond_col is not None:
            raw = cells[cond_col].strip().upper()
            if raw in ("ON", "OFF"):
                condition = raw
            elif not is_blank(raw):
                issues.append(
                    issue(
                        table.name,
                        rownum,
                        table.header[cond_col],
                        "unknown_condition",
                        f"condition {cells[cond_col].strip()!r} is neither ON nor OFF; read as "
                        "unspecified",
                    )
                )
        outcome = build_row_sessions(
            table, rownum, cells, pid, parsed, date_col, instruments, extra, condition=condition
        )
        sessions += outcome.sessions
        issues += outcome.issues
    return sessions, issues
