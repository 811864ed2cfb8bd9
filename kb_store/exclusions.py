"""Sessions left out at ingest, per patient: what `excluded_sessions` of every answer reports.

Owns the list of rejected input rows as the engine needs it (the rule "nothing excluded in
silence"): patient, instrument, the date as written in the file, file, row, rule and message,
and for a MA-RAG study row whose items can be read, its part scores (`scores`: part -> item sum,
computed as the ingest computes a kept session's, only for parts with no blank item). Built once at
`marag kb build` from the ingest result (re-reading the rejected rows from the source files),
written beside the KB as `excluded_sessions.json`, and read back by the KB reader so that every
plan naming a patient carries that patient's excluded sessions. Texts state the date only as the
parsed ISO date (`iso_date`), never the cell as written.

No source text of a rejected row reaches an answer (`described`): the date is kept as written only
when it reads as a date (then it holds nothing but a date), otherwise it is the words "unreadable
date"; the message is the rule's meaning (kb_store.validation.RULES) with the column, never the
validation message that quotes the cell. The full message stays in the build's validation report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

EXCLUDED_JSON = "excluded_sessions.json"

#: normalised header names (kb_store.profiles.normalise_column) of patient and date columns
PATIENT_COLUMNS = ("PROJID", "PATNO", "PATIENTID", "PATIENT", "SUBJECTID", "ID")
DATE_COLUMNS = ("SESSIONDATE", "PDQSESSIONDATE", "DATE", "VISITDATE", "INFODT", "ASSESSMENTDATE")
_PATIENT_RE = re.compile(r"\bpatient (\d+)\b")
_INSTRUMENT_RE = re.compile(r"\b(updrs|pdq8)\b", re.I)


def _instrument(file_kind: str, message: str) -> str:
    if file_kind in ("marag-updrs", "marag-pdq8"):
        return file_kind.split("-", 1)[1]
    m = _INSTRUMENT_RE.search(message)
    return m.group(1).lower() if m else "all"


def row_scores(table: Any, kind: str, rownum: int, cells: list[str]) -> dict[str, float]:
    """Part scores of one rejected MA-RAG study row, as the ingest sums a kept session's items
    (kb_store.model.domain_scores); {} for other formats or a row with an unreadable item cell.
    A part with a blank item is left out (its sum would not represent the part)."""
    from kb_store.ingest_marag import UPDRS_PROFILE
    from kb_store.ingest_rows import InstrumentColumns, item_columns, read_items
    from kb_store.model import domain_scores
    from kb_store.profiles import load_profile

    if kind not in ("marag-updrs", "marag-pdq8"):
        return {}
    profile = load_profile(UPDRS_PROFILE if kind == "marag-updrs" else "pdq8")
    cols, _dup = item_columns(table, profile)
    items, _issues, ok = read_items(table, rownum, cells, InstrumentColumns(profile, cols))
    if not ok:
        return {}
    return {
        d: ds.score
        for d, ds in domain_scores(profile, items).items()
        if ds.score is not None and not ds.missing
    }


def iso_date(row: dict[str, Any]) -> str | None:
    """The parsed ISO date of an excluded row (None when the cell is not a date)."""
    from kb_store.dates import DateParseError, parse_date

    raw = str(row.get("date", "")).split(" ")[0]
    try:
        return parse_date(raw).date.isoformat()
    except (DateParseError, ValueError):
        return None


def excluded_from_ingest(result: Any, paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """One row per rejected session row (error issues with a row number), in file and row order."""
    from kb_store.csv_table import read_table
    from kb_store.ingest import detect_format, expand_paths
    from kb_store.ingest_marag import marag_kind

    tables = {}
    for path, _explicit in expand_paths(list(paths)):
        t = read_table(path)
        kind = detect_format(t) or ""
        if kind == "marag":
            kind = f"marag-{marag_kind(t)}"
        tables[t.name] = (t, kind)
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for i in result.issues:
        if i.severity != "error" or i.row is None or (i.file, i.row) in seen:
            continue
        seen.add((i.file, i.row))
        patient: int | None = None
        date = ""
        kind = ""
        scores: dict[str, float] = {}
        if i.file in tables:
            t, kind = tables[i.file]
            cols = t.columns()
            cells = dict(t.rows).get(i.row)
            if cells is not None:
                pc = next((cols[c] for c in PATIENT_COLUMNS if c in cols), None)
                dc = next((cols[c] for c in DATE_COLUMNS if c in cols), None)
                if pc is not None and pc < len(cells):
                    raw = cells[pc].strip()
                    try:
                        patient = int(float(raw))
                    except ValueError:
                        patient = None
                if dc is not None and dc < len(cells):
                    date = cells[dc].strip()
                scores = row_scores(t, kind, i.row, cells)
        if patient is None and (m := _PATIENT_RE.search(i.message)):
            patient = int(m.group(1))
        out.append(
            described(
                {
                    "patient": patient,
                    "instrument": _instrument(kind, i.message),
                    "date": date,
                    "file": i.file,
                    "row": i.row,
                    "column": i.column,
                    "rule": i.rule,
                    **({"scores": scores} if scores else {}),
                }
            )
        )
    return sorted(out, key=lambda r: (r["file"], r["row"]))


UNREADABLE_DATE = "unreadable date"


def described(row: dict[str, Any]) -> dict[str, Any]:
    """The record an answer carries of one rejected row: the date as written only when it reads
    as a date, else "unreadable date"; the message from the rule and column, never the cell."""
    from kb_store.validation import RULES

    out = dict(row)
    date = str(out.get("date") or "")
    out["date"] = date if not date or iso_date(out) else UNREADABLE_DATE
    rule = str(out.get("rule", ""))
    meaning = RULES.get(rule, ("", rule.replace("_", " ")))[1]
    column = out.get("column")
    out["message"] = f"{column}: {meaning}" if column else meaning
    return out


def write_excluded(rows: Iterable[dict[str, Any]], kb_dir: str | Path) -> Path:
    path = Path(kb_dir) / EXCLUDED_JSON
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(list(rows), indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_excluded(kb_dir: str | Path) -> list[dict[str, Any]]:
    """The rows written at build time; [] for a KB built before this file existed."""
    path = Path(kb_dir) / EXCLUDED_JSON
    if not path.is_file():
        return []
    return list(json.loads(path.read_text(encoding="utf-8")))


def for_patients(rows: Iterable[dict[str, Any]], patients: Iterable[int]) -> list[dict[str, Any]]:
    """The rejected rows of these patients, described (also for a KB written before rows were
    described at build time)."""
    ps = set(patients)
    return [described(r) for r in rows if r.get("patient") in ps]
