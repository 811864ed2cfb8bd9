"""Every physical line of an input is a session, a blank line or a rejection naming file, line and
rule, and a build refuses what it cannot store faithfully: rows joined by a stray quote, rows whose
cells an unquoted delimiter shifted, a skipped folder file, a date column whose day/month order
nothing decides; one id's spellings are merged only with a line naming them; clock times are real."""

from __future__ import annotations

import argparse
import datetime as dt
import re
from pathlib import Path

import pytest

from kb_store import kb_cli
from kb_store.ingest import load_sources
from kb_store.profiles import load_profile
from kb_store.settings import KBSettings

TODAY = dt.date(2026, 1, 1)
PDQ = [i.code for i in load_profile("pdq8").items]
MARAG = [i.code for i in load_profile("marag-updrs44").items]
MARAG_HEADER = [
    "PROJ_ID",
    "SESSION_DATE",
    "Q4_1",
    *MARAG,
    "UPDRS_TOTAL",
    "UPDRS_SCORE",
    "clinician_summary",
    "user_summary",
]


def write(path: Path, lines: list[str]) -> Path:
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-8"))
    return path


def physical_lines(path: Path) -> int:
    """The file's physical lines, counted by a plain line reader (not the product's)."""
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def prow(pid: object, date: str, note: str = "seen") -> str:
    return f"{pid},{date},{note},{','.join(['1'] * len(PDQ))}"


PDQ_HEADER = ",".join(["proj_id", "date", "note", *PDQ])


def rules(res, rule: str) -> list:
    return [i for i in res.issues if i.rule == rule]


def reconcile(res, files: list[Path]) -> None:
    """Per file: the lines the stats count are the physical lines; header + data rows + blank
    lines cover them; every data row is a session's row or a rejected row."""
    for path in files:
        (f,) = [f for f in res.stats["files"] if f["file"] == path.name]
        assert f["lines"] == physical_lines(path)
        assert 1 + f["rows_read"] + f["blank_rows"] == f["lines"]
        rows = {s.source.row for s in res.sessions if s.source.file == path.name}
        assert f["rows_read"] == len(rows) + f["rows_rejected"]


def test_stray_quote_in_the_study_format_is_a_rejection_with_its_lines(tmp_path):
    """Row 3's clinician_summary opens a quote that row 4's clinician_summary closes: the joined
    record keeps the header's width; it is rejected with lines 3-4 and later rows keep their
    line numbers (a build refuses)."""
    ones = ",".join(["1"] * 44)
    lines = [
        ",".join(MARAG_HEADER),
        f'8,2019/11/16,1,{ones},44,25.0,"Stable, mild",user 8a',
        f'8,2020/01/17,1,{ones},44,25.0,"Tremor worse at night,user 8b',
        f'9,2019/12/11,1,{ones},44,25.0,"Stable on levodopa",user 9a',
        f"9,2020/02/11,1,{ones},44,25.0,Gait unchanged,user 9b",
        f"10,2020/03/11,1,{ones},44,25.0,Gait unchanged,user 10a",
    ]
    path = write(tmp_path / "UPDRS_one2one_summaries.csv", lines)
    res = load_sources([path], today=TODAY)
    assert [(s.source.row, s.proj_id) for s in res.sessions] == [(2, 8), (5, 9), (6, 10)]
    (rej,) = res.blocking
    assert (rej.row, rej.rule) == (3, "line_break_in_cell") and "lines 3-4" in rej.message
    assert res.stats["rows_rejected"] == 2


def test_stray_quote_closed_by_the_next_rows_note_in_a_middle_column_is_rejected(tmp_path):
    """The note is the fourth column and the date the third: the text after the line break is
    only the next row's id, sex and date (too few cells for half the header, no id-and-date lead),
    yet it is the start of a row. Before, row 3 took row 4's items and row 4 vanished."""
    items = ",".join(PDQ)

    def row(pid, sex, date, note, v):
        return f"{pid},{sex},{date},{note},{','.join([str(v)] * len(PDQ))}"

    lines = [
        f"proj_id,sex,date,note,{items}",
        row(1, "F", "2021-01-05", "ok", 1),
        row(1, "F", "2021-02-05", '"stray', 1),
        row(2, "M", "2021-03-05", '"closed"', 3),
        row(2, "M", "2021-04-05", "fine", 2),
    ]
    path = write(tmp_path / "s.csv", lines)
    res = load_sources([path], today=TODAY)
    assert [(s.source.row, s.proj_id, s.items["PDQ8_1"]) for s in res.sessions] == [
        (2, 1, 1.0),
        (5, 2, 2.0),
    ]
    (rej,) = res.blocking
    assert (rej.row, rej.rule) == (3, "line_break_in_cell") and "lines 3-4" in rej.message
    assert res.stats["rows_read"] == 4 and res.stats["rows_rejected"] == 2


def _refused(folder: Path, tmp_path: Path, **flags) -> str:
    args = argparse.Namespace(
        source=[str(folder)], format="auto", if_missing=False, visit_window_days=None, **flags
    )
    with pytest.raises(kb_cli.SourceError) as exc:
        kb_cli.build(args, KBSettings(kb_dir=tmp_path / "kb", embedding="hashing"))
    return str(exc.value)


def test_a_skipped_folder_file_is_rejected_rows_and_refuses_the_build(tmp_path):
    """A title line above the header: the file matches no format; its 3 rows are rejected rows
    in the report and the build refuses unless skipped files are allowed. Excel's `sep=,` first
    line names the delimiter: that file is read, not skipped."""
    folder = tmp_path / "in"
    folder.mkdir()
    good = write(folder / "a.csv", [PDQ_HEADER, prow(1, "2021-01-05"), prow(1, "2021-02-05")])
    titled = write(
        folder / "b.csv",
        ["PDQ-8 export 2021", PDQ_HEADER, prow(2, "2021-01-05"), prow(2, "2021-03-05")],
    )
    excel = write(folder / "c.csv", ["sep=,", PDQ_HEADER, prow(3, "2021-01-05")])
    res = load_sources([folder], today=TODAY)
    (skip,) = rules(res, "unrecognised_file")
    assert skip.file == "b.csv" and skip.severity == "error" and "lines 2-4" in skip.message
    by_file = {
        f["file"]: (f["rows_read"], f["sessions"], f["rows_rejected"]) for f in res.stats["files"]
    }
    assert by_file == {"a.csv": (2, 2, 0), "c.csv": (1, 1, 0), "b.csv": (3, 0, 3)}
    assert res.stats["rows_rejected"] == 3
    assert sum(f["lines"] for f in res.stats["files"]) == sum(
        physical_lines(p) for p in (good, titled, excel)
    )
    assert res.blocking == [skip]
    msg = _refused(folder, tmp_path)
    assert "build refused" in msg and "--allow-skipped-files" in msg
    allowed = load_sources([folder], today=TODAY, allow_skipped_files=True)
    assert not allowed.blocking and allowed.stats["rows_rejected"] == 3
    reconcile(res, [good])


def test_an_unquoted_comma_that_shifts_the_cells_rejects_the_row(tmp_path):
    """'seen, stable' unquoted: every later cell moves one column right; the row is rejected
    (never a session with shifted items), and the totals still reconcile with the lines."""
    path = write(
        tmp_path / "s.csv",
        [
            PDQ_HEADER,
            prow(1, "2021-01-05"),
            "",
            prow(1, "2021-02-05", "seen, stable"),
            prow(1, "2021-03-05"),
        ],
    )
    res = load_sources([path], today=TODAY)
    assert [s.source.row for s in res.sessions] == [2, 5]
    (rej,) = rules(res, "extra_cells")
    assert (rej.row, rej.severity) == (4, "error")
    assert res.stats["rows_rejected"] == 1 and res.stats["blank_rows"] == 1
    reconcile(res, [path])


def test_an_undecidable_date_column_refuses_the_build_unless_an_order_is_given(tmp_path):
    """a.csv shows day-first (13/01/2021); b.csv's days are all 12 or less: its column decides
    nothing, so a build refuses; --date-order dmy reads it day-first."""
    folder = tmp_path / "in"
    folder.mkdir()
    write(folder / "a.csv", [PDQ_HEADER, prow(1, "13/01/2021"), prow(1, "05/02/2021")])
    write(folder / "b.csv", [PDQ_HEADER, prow(2, "05/02/2021"), prow(2, "11/03/2021")])
    res = load_sources([folder], today=TODAY)
    (amb,) = res.blocking
    assert (amb.file, amb.rule, amb.column) == ("b.csv", "ambiguous_date_order", "date")
    assert "--date-order" in _refused(folder, tmp_path)
    given = load_sources([folder], today=TODAY, date_order="dmy")
    assert not given.blocking
    dates = sorted((s.source.file, s.date) for s in given.sessions)
    assert dates == [
        ("a.csv", dt.date(2021, 1, 13)),
        ("a.csv", dt.date(2021, 2, 5)),
        ("b.csv", dt.date(2021, 2, 5)),
        ("b.csv", dt.date(2021, 3, 11)),
    ]
    assert any("--date-order dmy" in i.message for i in rules(given, "date_order"))


def test_spellings_of_one_id_are_merged_only_with_a_line_naming_each(tmp_path):
    spellings = ["7", "007", "0007", "7.0", "7\t", "\u00a07", '"7"', " 7", "7.00"]
    path = write(
        tmp_path / "s.csv",
        [PDQ_HEADER] + [prow(pid, f"2021-01-{d:02d}") for d, pid in enumerate(spellings, 1)],
    )
    res = load_sources([path], today=TODAY)
    assert {s.proj_id for s in res.sessions} == {7} and len(res.sessions) == 9
    (line,) = rules(res, "id_spellings")
    assert line.severity == "warning" and "patient 7 is written 8 ways" in line.message
    for raw, row in [("007", 3), ("0007", 4), ("7.0", 5), ("7\t", 6), ("\u00a07", 7), (" 7", 9)]:
        assert f"{raw!r} (s.csv row {row})" in line.message
    assert "'7' (s.csv rows 2, 8)" in line.message  # 7 and the quoted "7" read the same cell


@pytest.mark.parametrize(
    "raw,ok",
    [
        ("2021-03-15 23:59:59", True),
        ("2021-03-15T10:00:00+14:00", True),
        ("2021-03-15T10:00:00-05:30", True),
        ("2021-03-15 24:00", False),
        ("2021-03-15 24:00:00", False),
        ("2021-03-15 25:61:99", False),
        ("2021-03-15 10:60", False),
        ("2021-03-15T10:00:00+25:00", False),
        ("2021-03-15T10:00:00+14:30", False),
        ("03/15/2021 13:00 PM", False),
    ],
)
def test_invalid_clock_times_and_offsets_are_rejected(tmp_path, raw, ok):
    path = write(tmp_path / "s.csv", [PDQ_HEADER, prow(1, raw)])
    res = load_sources([path], today=TODAY)
    assert len(res.sessions) == (1 if ok else 0)
    if not ok:
        (rej,) = rules(res, "unparseable_date")
        assert rej.row == 2 and re.search("invalid clock time", rej.message)


def test_the_cli_offers_the_date_order_and_skipped_file_flags(tmp_path, capsys):
    """`marag kb build` refuses an undecidable date column naming --date-order, and builds with
    it; `marag kb report` takes the same flags."""
    from engine import cli

    folder = tmp_path / "in"
    folder.mkdir()
    write(folder / "b.csv", [PDQ_HEADER, prow(2, "05/02/2021"), prow(2, "11/03/2021")])
    args = ["kb", "build", "--source", str(folder), "--kb-dir", str(tmp_path / "kb")]
    args += ["--embedding", "hashing", "--audit-db", str(tmp_path / "a.db")]
    assert cli.main(args) != 0
    cap = capsys.readouterr()
    assert "--date-order" in cap.out + cap.err
    assert cli.main([*args, "--date-order", "dmy"]) == 0
    rep = ["kb", "report", "--source", str(folder), "--date-order", "mdy", "--json"]
    assert cli.main(rep) == 0
    assert cli.main([*rep[:-1], "--allow-skipped-files", "--json"]) == 0
