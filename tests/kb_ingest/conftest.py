"""Shared fixtures for the ingest tests: writing CSVs and checking that every data row is accounted for."""

from __future__ import annotations

import csv
import datetime as dt
import io
from pathlib import Path

import pytest

from kb_store.profiles import load_profile
from kb_store.validation import source_refs

TODAY = dt.date(2026, 1, 1)
UPDRS_CODES = [i.code for i in load_profile("mds-updrs").items if not i.code.startswith("NP4")]
PDQ_CODES = [i.code for i in load_profile("pdq8").items]
MARAG_CODES = [i.code for i in load_profile("marag-updrs44").items]
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "ma-rag"


def csv_text(header: list[str], rows: list[list[object]], *, newline: str = "\n") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=newline)
    w.writerow(header)
    for r in rows:
        w.writerow(["" if v is None else v for v in r])
    return buf.getvalue()


@pytest.fixture
def write_csv(tmp_path):
    def _write(
        name: str, header: list[str], rows: list[list[object]], *, newline="\n", bom=False
    ) -> Path:
        p = tmp_path / name
        data = csv_text(header, rows, newline=newline).encode("utf-8")
        p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
        return p

    return _write


def generic_row(pid, date, updrs=1, pdq=1, **over) -> dict:
    row = {"proj_id": pid, "date": date}
    row.update({c: updrs for c in UPDRS_CODES})
    row.update({c: pdq for c in PDQ_CODES})
    row.update(over)
    return row


@pytest.fixture
def write_generic(write_csv):
    def _write(rows: list[dict], name="sessions.csv", **kw) -> Path:
        header: list[str] = []
        for r in rows:
            for k in r:
                if k not in header:
                    header.append(k)
        return write_csv(name, header, [[r.get(h) for h in header] for r in rows], **kw)

    return _write


def unaccounted(result, files: list[Path]) -> list[tuple[str, int]]:
    """Data rows (non-blank) of the files that are in no session and no issue."""
    covered = {ref for s in result.sessions for ref in source_refs(s)}
    reported = {(i.file, i.row) for i in result.issues if i.row is not None}
    file_errors = {
        i.file
        for i in result.issues
        if i.row is None
        and i.severity in ("error", "warning")
        and i.rule
        in ("missing_patient_column", "missing_date_column", "no_items", "unrecognised_file")
    }
    out = []
    for f in files:
        text = f.read_bytes().decode("utf-8-sig", errors="replace")
        reader = csv.reader(io.StringIO(text, newline=""))
        records, start = [], 1
        for rec in reader:  # numbered by the physical line the record starts on, as the product
            records.append((start, rec))
            start = reader.line_num + 1
        header_seen = False
        for n, rec in records:
            if not any(c.strip() for c in rec):
                continue
            if not header_seen:
                header_seen = True
                continue
            key = (f.name, n)
            if key not in covered and key not in reported and f.name not in file_errors:
                out.append(key)
    return out


@pytest.fixture
def h():
    """Helper namespace (conftest modules are not importable under --import-mode=importlib)."""
    import types

    return types.SimpleNamespace(
        TODAY=TODAY,
        UPDRS_CODES=UPDRS_CODES,
        PDQ_CODES=PDQ_CODES,
        MARAG_CODES=MARAG_CODES,
        SHARED=SHARED,
        generic_row=generic_row,
        unaccounted=unaccounted,
        csv_text=csv_text,
    )
