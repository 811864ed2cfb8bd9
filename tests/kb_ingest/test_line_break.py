"""A quoted line break followed by a row-shaped line (two rows joined by a stray quote) is a
rejection naming its lines, never a session; a note with a line break followed by prose is kept.
Rows are numbered by the physical line they start on, checked against an independent line count."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from pathlib import Path

import pytest

from kb_store.ingest import load_sources

TODAY = dt.date(2026, 1, 1)


def marag_header(h) -> list[str]:
    """The header of the study's UPDRS file (from ../shared when present, else the same columns)."""
    src = h.SHARED / "UPDRS_one2one_summaries.csv"
    tail = ["UPDRS_TOTAL", "UPDRS_SCORE", "clinician_summary", "user_summary"]
    built = ["PROJ_ID", "SESSION_DATE", "Q4_1", *h.MARAG_CODES, *tail]
    if not src.is_file():
        return built
    header = src.read_text(encoding="utf-8-sig").split("\n", 1)[0].strip().split(",")
    assert header == built
    return header


def mrow(pid: int, date: str, clin: str, user: str) -> str:
    """One MA-RAG UPDRS line, written by hand (the cells are not quoted for us)."""
    return f"{pid},{date},1,{','.join(['1'] * 44)},44,25.0,{clin},{user}"


def write_lines(path: Path, lines: list[str], newline: str = "\r\n") -> Path:
    path.write_text(newline.join(lines) + newline, encoding="utf-8", newline="")
    return path


def physical_lines(path: Path) -> list[str]:
    """The file's physical lines, counted without the product's reader."""
    out = re.split(r"\r\n|\r|\n", path.read_bytes().decode("utf-8-sig"))
    return out[:-1] if out and out[-1] == "" else out


def records(path: Path) -> list[tuple[int, int, list[str]]]:
    """(first line, last line, cells) of every CSV record, by csv.reader alone."""
    reader = csv.reader(io.StringIO(path.read_bytes().decode("utf-8-sig"), newline=""))
    out, start = [], 1
    for rec in reader:
        out.append((start, reader.line_num, rec))
        start = reader.line_num + 1
    return out


def check_every_line(res, path: Path) -> None:
    """Every record (by csv.reader) after the header is blank, a session's row numbered by the
    line it starts on, or a rejection (a `line_break_in_cell` names exactly its lines); the records
    cover every physical line, and the file's totals reconcile with them."""
    lines = physical_lines(path)
    recs = records(path)
    assert recs[-1][1] == len(lines)
    rows = {s.source.row for s in res.sessions if s.source.file == path.name}
    errors = {
        i.row: i for i in res.issues if i.file == path.name and i.severity == "error" and i.row
    }
    blank = read = 0
    for first, last, cells in recs[1:]:
        if not any(c.strip() for c in cells):
            blank += 1
            continue
        read += 1
        if first not in rows:
            assert first in errors, (first, cells[:2])
            if errors[first].rule == "line_break_in_cell":
                assert f"lines {first}-{last}:" in errors[first].message
                read += last - first  # each of its lines counts as a rejected row
    (f,) = [f for f in res.stats["files"] if f["file"] == path.name]
    assert (f["lines"], f["rows_read"], f["blank_rows"]) == (len(lines), read, blank)
    session_rows = {s.source.row for s in res.sessions if s.source.file == path.name}
    assert f["rows_read"] == len(session_rows) + f["rows_rejected"]


def test_stray_quote_joining_two_marag_rows_is_rejected_with_its_lines(h, tmp_path):
    """Row 3's clinician_summary opens a quote that the quote of row 4's clinician_summary closes:
    the reader joins lines 3-4 into one record of the header's width."""
    lines = [
        ",".join(marag_header(h)),
        mrow(8, "2019/11/16", '"Stable, mild tremor"', "user 8a"),
        mrow(8, "2020/01/17", '"Tremor worse at night', "user 8b"),  # the stray quote
        mrow(9, "2019/12/11", '"Stable on levodopa"', "user 9a"),
        mrow(9, "2020/02/11", "Gait unchanged", "user 9b"),
    ]
    path = write_lines(tmp_path / "UPDRS_one2one_summaries.csv", lines)
    res = load_sources([path], today=TODAY)
    (rej,) = [i for i in res.issues if i.severity == "error"]
    assert (rej.file, rej.row, rej.rule) == (path.name, 3, "line_break_in_cell")
    assert "lines 3-4" in rej.message
    assert [(s.source.row, s.proj_id, s.extra["user_summary"]) for s in res.sessions] == [
        (2, 8, "user 8a"),
        (5, 9, "user 9b"),
    ]
    assert res.blocking == [rej]  # a build refuses
    assert res.stats["rows_read"] == 4 and res.stats["rows_rejected"] == 2
    check_every_line(res, path)


@pytest.mark.parametrize("where", ["last", "after_date"])
def test_stray_quote_joining_two_generic_rows_is_rejected(h, write_generic, where):
    """A generic file whose note cell opens a stray quote closed in the next row's note: the
    joined text after the break is a whole row (note last) or only an id and a date (note third)."""
    rows = [h.generic_row(p, f"2021-0{1 + v}-10") for p in (1, 2) for v in range(3)]
    rows = [{**r, "note": f"seen {i}"} for i, r in enumerate(rows)]
    if where == "after_date":
        rows = [{"proj_id": r["proj_id"], "date": r["date"], "note": r["note"], **r} for r in rows]
    path = write_generic(rows)
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace(",seen 1", ',"seen 1')
    lines[3] = lines[3].replace(",seen 2", ',"seen 2"')
    path.write_text("\n".join(lines) + "\n")
    res = load_sources([path], today=h.TODAY)
    (rej,) = [i for i in res.issues if i.severity == "error"]
    assert (rej.row, rej.rule) == (3, "line_break_in_cell") and "lines 3-4" in rej.message
    assert sorted({s.source.row for s in res.sessions}) == [2, 5, 6, 7]
    assert res.blocking
    check_every_line(res, path)


def test_a_note_over_lines_is_kept_and_later_rows_keep_their_lines(h, tmp_path):
    """Ordinary multi-line free text (prose after the break, even with commas and numbers) is a
    session; the rows after it are numbered by their physical lines."""
    note = '"Tremor worse at night,\r\n2 falls, no freezing;\r\n3 near-falls, 2021 plan: review"'
    lines = [
        ",".join(marag_header(h)),
        mrow(8, "2019/11/16", '"Stable, mild tremor"', "user 8a"),
        mrow(8, "2020/01/17", note, "user 8b"),  # lines 3-5
        mrow(9, "2019/12/11", '"Stable on levodopa"', "user 9a"),
        "",
        mrow(9, "2020/02/11", "Gait unchanged", "user 9b"),
    ]
    path = write_lines(tmp_path / "UPDRS_one2one_summaries.csv", lines)
    res = load_sources([path], today=TODAY)
    assert not [i for i in res.issues if i.severity == "error"] and not res.blocking
    assert [s.source.row for s in res.sessions] == [2, 3, 6, 8]
    kept = res.sessions[1].extra
    assert kept["clinician_summary"].startswith("Tremor worse at night,\r\n2 falls")
    assert kept["user_summary"] == "user 8b"
    check_every_line(res, path)


def test_the_study_files_are_unchanged(h):
    """The real files hold no multi-line record: same rows, sessions and row numbers as before."""
    if not (h.SHARED / "UPDRS_one2one_summaries.csv").is_file():
        pytest.skip("MA-RAG study data not found")
    res = load_sources([h.SHARED], today=TODAY)
    assert not [i for i in res.issues if i.rule in ("line_break_in_cell", "broken_quote")]
    by_file = {f["file"]: (f["rows_read"], f["sessions"]) for f in res.stats["files"]}
    assert by_file == {
        "UPDRS_one2one_summaries.csv": (171, 168),
        "PDQ8_UPDRS_one2one_summaries.csv": (151, 150),
    }
    for name in ("UPDRS_one2one_summaries.csv", "PDQ8_UPDRS_one2one_summaries.csv"):
        check_every_line(res, h.SHARED / name)
