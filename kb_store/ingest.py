"""Entry point of ingest: source paths -> validated Sessions with visits, issues and stats.

Owns `load_sources` (the contract other modules call), format detection, the cross-file steps
(date outliers and duplicates need every session of a patient, visits need both instruments) and the
row accounting that guarantees every data row ends in a Session or in the report.

Formats (docs/data-ingest.md): `generic` (kb_store.ingest_generic), `marag` (kb_store.ingest_marag),
`ppmi` (kb_store.ingest_ppmi, a set of part files joined together). `auto` detects per file by headers:
PATNO + EVENT_ID -> ppmi; PROJ_ID + SESSION_DATE/PDQ_SESSION_DATE with the study columns -> marag;
any mds-updrs / pdq8 item column -> generic.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import chain
from pathlib import Path

from kb_store.csv_table import Table, read_table
from kb_store.ids import id_spelling_issues
from kb_store.ingest_generic import looks_generic, parse_generic
from kb_store.ingest_marag import marag_kind, parse_marag
from kb_store.ingest_ppmi import parse_ppmi
from kb_store.ingest_report import BLOCKING_RULES, IngestResult
from kb_store.model import AnySession, ValidationIssue
from kb_store.ppmi_parts import looks_ppmi
from kb_store.validation import (
    IngestError,
    SessionKeys,
    issue,
    reject_date_outliers,
    reject_duplicates,
    source_refs,
)
from kb_store.visits import assign_visits

__all__ = [
    "BLOCKING_RULES",
    "FORMATS",
    "IngestError",
    "IngestResult",
    "detect_format",
    "load_sources",
]

FORMATS = ("auto", "generic", "marag", "ppmi")
DATE_ORDERS = ("dmy", "mdy")
CSV_SUFFIXES = (".csv", ".txt", ".tsv")


def detect_format(table: Table) -> str | None:
    """'ppmi' | 'marag' | 'generic' from the headers, or None."""
    if looks_ppmi(table):
        return "ppmi"
    if marag_kind(table) is not None:
        return "marag"
    if looks_generic(table):
        return "generic"
    return None


def source_names(files: Sequence[Path]) -> dict[Path, str]:
    """The key of each file in reports and sources: its base name, or its full path when another
    source of the call has the same base name (two folders, two uploads named alike), so that no
    two sources share a key (rows would overwrite or double-count each other)."""
    by_name: dict[str, set[Path]] = defaultdict(set)
    for f in files:
        by_name[f.name].add(f.resolve())
    return {f: f.name if len(by_name[f.name]) == 1 else str(f.resolve()) for f in files}


def _one_line(text: str, limit: int = 40) -> str:
    """A header name for a one-line message: control characters escaped, cut to `limit`."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return out if len(out) <= limit else out[:limit] + "..."


def expand_paths(paths: Sequence[str | Path]) -> list[tuple[Path, bool]]:
    """(file, named explicitly) pairs; a folder contributes its .csv/.txt/.tsv files (sorted, not
    recursive, hidden files skipped). A file reached twice (named twice, or named and inside a
    named folder) is read once."""
    out: list[tuple[Path, bool]] = []
    if isinstance(paths, str | Path):
        paths = [paths]
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files = sorted(
                f
                for f in p.iterdir()
                if f.is_file() and f.suffix.lower() in CSV_SUFFIXES and not f.name.startswith(".")
            )
            if not files:
                raise IngestError(f"{p}: folder holds no .csv file")
            out += [(f, False) for f in files]
        elif p.is_file():
            out.append((p, True))
        else:
            raise IngestError(f"{p}: no such file or folder")
    seen: set[Path] = set()
    unique = []
    for f, explicit in out:
        if f.resolve() not in seen:
            seen.add(f.resolve())
            unique.append((f, explicit))
    return unique


def load_sources(
    paths: Sequence[str | Path],
    fmt: str = "auto",
    *,
    visit_window_days: int = 0,
    today: dt.date | None = None,
    date_order: str | None = None,
    allow_skipped_files: bool = False,
    keys_only: bool = False,
) -> IngestResult:
    """Read, validate and number the sessions of every source (files or folders).

    Raises `IngestError` (one line naming the file) when a file cannot be read or, named explicitly,
    matches no format. Everything else is an issue in the result. `date_order` ('dmy' | 'mdy') reads
    the numeric dates of a column whose own values do not decide their order (else a build
    refuses); `allow_skipped_files` lets a build go on past a folder file that matches no format
    (its rows are rejected either way). `keys_only` keeps of each session, as its row is read, only
    the `SessionKey` the cross-row rules and the report need (a report over a million rows in
    bounded memory; the result's sessions then carry no items and cannot be built into a KB).
    """
    if fmt not in FORMATS:
        raise IngestError(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}")
    if date_order not in (None, *DATE_ORDERS):
        raise IngestError(f"unknown date order {date_order!r}; valid: {', '.join(DATE_ORDERS)}")
    today = today or dt.date.today()
    files = expand_paths(paths)
    issues: list[ValidationIssue] = []
    sessions: list[AnySession] = []
    keep = SessionKeys() if keys_only else None
    tables: list[tuple[Table, str]] = []
    ppmi_tables: list[Table] = []
    skipped: list[str] = []
    names = source_names([f for f, _ in files])
    read: list[Table] = []
    for path, explicit in files:
        table = read_table(path, names[path])
        table.given_date_order = date_order
        read.append(table)
        kind = _file_kind(path, table, fmt)
        if kind is None:
            issues.append(_unrecognised_file(path, table, fmt, explicit))
            skipped.append(table.name)
            continue
        if kind == "ppmi":
            ppmi_tables.append(table)
            tables.append((table, "ppmi"))
            continue
        if kind == "marag":
            s, i = parse_marag(table, today=today, keep=keep)
            tables.append((table, f"marag-{marag_kind(table)}"))
        else:
            s, i = parse_generic(table, today=today, keep=keep)
            tables.append((table, "generic"))
        sessions += s
        issues += i
        del s  # held past the loop, the list would keep the last file's sessions alive
    if ppmi_tables:
        ppmi, i, not_parts = parse_ppmi(ppmi_tables, today=today)
        sessions += ppmi if keep is None else [keep(x) for x in ppmi]
        issues += i
        del ppmi
        for t in not_parts:
            issues.append(_not_a_ppmi_part(t))
            skipped.append(t.name)
        tables = [(t, k) for t, k in tables if t not in not_parts]
    for t in read:
        issues += t.late_issues
    issues += id_spelling_issues(t for t in read if t.name not in skipped)
    sessions, out_issues = reject_date_outliers(sessions)
    issues += out_issues
    sessions, dup_issues = reject_duplicates(sessions)
    issues += dup_issues
    sessions, visit_issues = assign_visits(sessions, visit_window_days)
    issues += visit_issues
    tables += [(t, "skipped") for t in read if t.name in skipped]
    covered = _covered_rows(sessions)
    issues += _account_rows(tables, covered, issues)
    stats = _stats(tables, sessions, covered, issues, (visit_window_days, skipped))
    allowed = frozenset({"unrecognised_file"} if allow_skipped_files else ())
    return IngestResult(sessions, issues, stats, allowed)


def _file_kind(path: Path, table: Table, fmt: str) -> str | None:
    """The format of one file under the requested `fmt` ('auto' detects), or None when the file
    matches no format. `--format generic` on a MA-RAG or PPMI file is an error."""
    kind = detect_format(table) if fmt == "auto" else fmt
    if kind == "marag" and marag_kind(table) is None:
        kind = None
    if kind == "ppmi" and not looks_ppmi(table):
        kind = None
    if fmt == "generic" and (marag_kind(table) or looks_ppmi(table)):
        other = "a MA-RAG study CSV" if marag_kind(table) else "a PPMI export"
        raise IngestError(
            f"{path}: --format generic, but the headers are those of {other}; use --format auto"
        )
    return kind


def _unrecognised_file(path: Path, table: Table, fmt: str, explicit: bool) -> ValidationIssue:
    """The issue of a file in a folder that matches no format (skipped); a file named explicitly
    raises `IngestError` instead."""
    expected = "a generic session CSV, a MA-RAG study CSV or a PPMI MDS-UPDRS export"
    if fmt != "auto":
        expected = {
            "marag": "a MA-RAG study CSV",
            "ppmi": "a PPMI export (PATNO, EVENT_ID)",
        }[fmt]
    heads = ", ".join(_one_line(h) for h in table.header[:8]) + (
        ", ..." if len(table.header) > 8 else ""
    )
    if explicit:
        # the header cells are file content: named by count only (a server path may point
        # at any text file; its content must not reach an error message)
        raise IngestError(
            f"{path}: cannot detect the format: not {expected} (judged by its "
            f"{len(table.header)} header names)"
        )
    return issue(
        table.name,
        None,
        None,
        "unrecognised_file",
        f"headers [{heads}] are not {expected}; file skipped: {_skipped_rows(table)}",
    )


def _not_a_ppmi_part(table: Table) -> ValidationIssue:
    return issue(
        table.name,
        None,
        None,
        "unrecognised_file",
        "a PPMI file that is no MDS-UPDRS part (by name or columns); file skipped: "
        f"{_skipped_rows(table)}",
    )


def _skipped_rows(table: Table) -> str:
    """What a skipped file loses, by its lines: every row after the line read as its header."""
    rows = len(table.rows) + len(table.broken_rows)
    return (
        f"its {rows} row(s) (lines {table.header_lines + 1}-{table.lines}, {table.blank_rows} "
        "blank) are rejected; a build refuses unless skipped files are allowed "
        "(--allow-skipped-files)"
        if rows
        else "it holds no data row; a build refuses unless skipped files are allowed "
        "(--allow-skipped-files)"
    )


def _covered_rows(sessions: list[AnySession]) -> dict[str, set[int]]:
    """File -> the rows the sessions were built from (a set of ints per file: a million rows
    as (file, row) pairs would cost about 100 MB more)."""
    covered: dict[str, set[int]] = defaultdict(set)
    for s in sessions:
        for file, row in source_refs(s):
            covered[file].add(row)
    return covered


def _account_rows(
    tables: list[tuple[Table, str]], covered: dict[str, set[int]], issues: list[ValidationIssue]
) -> list[ValidationIssue]:
    """Guarantee: a data row in no session and in no issue gets an `unaccounted_row` error."""
    reported = {(i.file, i.row) for i in issues if i.row is not None}
    file_level_errors = {i.file for i in issues if i.row is None and i.severity == "error"}
    out = []
    for t, _ in tables:
        if t.lines != t.header_lines + t.row_lines:
            out.append(
                issue(
                    t.name,
                    None,
                    None,
                    "unaccounted_line",
                    f"the file has {t.lines} lines but its header, rows and blank lines account "
                    f"for {t.header_lines + t.row_lines} (ingest bug); build refused",
                )
            )
        if t.name in file_level_errors:
            continue
        rows = covered.get(t.name, set())
        for rownum in t.rows.numbers():
            if rownum not in rows and (t.name, rownum) not in reported:
                out.append(
                    issue(
                        t.name,
                        rownum,
                        None,
                        "unaccounted_row",
                        "the row made no session and no rule reported it (ingest bug)",
                    )
                )
    return out


def _stats(
    tables: list[tuple[Table, str]],
    sessions: list[AnySession],
    covered: dict[str, set[int]],
    issues: list[ValidationIssue],
    run: tuple[int, list[str]],
) -> dict:
    window, skipped = run  # the visit window and the files skipped
    files = []
    for t, kind in tables:
        done = covered.get(t.name, set())
        files.append(
            {
                "file": t.name,
                "format": kind,
                "lines": t.lines,
                "rows_read": len(t.rows) + len(t.broken_rows),
                "blank_rows": t.blank_rows,
                "sessions": sum(1 for s in sessions if s.source.file == t.name),
                "rows_rejected": sum(
                    1 for r in chain(t.rows.numbers(), t.broken_rows) if r not in done
                ),
            }
        )
    by_inst = Counter(s.instrument for s in sessions)
    pats_by_inst: dict[str, set[int]] = defaultdict(set)
    visits: dict[tuple[int, int], list[AnySession]] = defaultdict(list)
    for s in sessions:
        pats_by_inst[s.instrument].add(s.proj_id)
        visits[(s.proj_id, s.visit or 0)].append(s)
    multi = sum(1 for m in visits.values() if len({x.instrument for x in m}) > 1)
    joined = sum(len({x.instrument for x in m}) - 1 for m in visits.values())
    return {
        "files": files,
        "files_skipped": skipped,
        "lines": sum(f["lines"] for f in files),
        "rows_read": sum(f["rows_read"] for f in files),
        "blank_rows": sum(f["blank_rows"] for f in files),
        "sessions": len(sessions),
        "sessions_by_instrument": dict(sorted(by_inst.items())),
        "patients": len({s.proj_id for s in sessions}),
        "patients_by_instrument": {k: len(v) for k, v in sorted(pats_by_inst.items())},
        "rows_rejected": sum(f["rows_rejected"] for f in files),
        "visits": len(visits),
        "visit_window_days": window,
        "visits_multi_instrument": multi,
        "sessions_joined": joined,
        "issues_by_severity": dict(Counter(i.severity for i in issues)),
        "issues_by_rule": dict(sorted(Counter(i.rule for i in issues).items())),
    }
