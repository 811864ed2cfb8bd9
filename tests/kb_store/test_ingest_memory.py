"""`marag kb report` runs in bounded memory: a table keeps each row's line, not a list of its cells,
and a report keeps of each session only the key the cross-row rules read (`SessionKey`: no item
dict, no descriptors), while the report itself stays that of the full ingest, rule for rule.

The memory bounds are per row with a wide margin (docs/data-ingest.md, "Memory and file size"):
the full ingest of these rows peaked at about 11 KB per row and kept about 1 KB per row of table;
the bounded one peaks at about 1 KB and keeps about 0.25 KB."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import tracemalloc
from pathlib import Path

import pytest

from kb_store import synth
from kb_store.csv_table import read_table
from kb_store.ingest import load_sources
from kb_store.ingest_report import report_dict
from kb_store.model import SessionKey, items_digest
from kb_store.profiles import load_profile

TODAY = dt.date(2026, 1, 1)
UPDRS = [i.code for i in load_profile("mds-updrs").items if not i.code.startswith("NP4")]
PDQ = [i.code for i in load_profile("pdq8").items]
#: traced peak of a report's ingest per data row (full ingest: about 11,000; bounded: about 1,050)
MAX_PEAK_PER_ROW = 3000
#: traced memory a read table keeps per data row (a list of cells: about 960; a line: about 225)
MAX_TABLE_PER_ROW = 500


@pytest.fixture(scope="module")
def cohort_csv(tmp_path_factory) -> Path:
    """5,000 generic rows (500 patients, 10 visits), each one MDS-UPDRS and one PDQ-8 session."""
    df = synth.generate(patients=500, visits=10, seed=7)
    return synth.write_csv(df, tmp_path_factory.mktemp("cohort") / "cohort.csv")


def _rules_csv(path: Path) -> Path:
    """Rows that make every cross-row rule fire: identical duplicates (one written -0 for 0), a
    same-day session whose items differ, one id spelled three ways, a day-first date column, a
    date outlier, a blank PDQ-8, a short row and a quoted note over two lines."""
    header = ["proj_id", "date", "note", *UPDRS, *PDQ]

    def row(pid: str, date: str, value: str = "1", pdq: str = "1", note: str = "") -> list[str]:
        return [pid, date, note, *[value] * len(UPDRS), *[pdq] * len(PDQ)]

    rows = [
        row("1", "13/01/2021"),
        row("1", "13/01/2021"),  # duplicate_session
        row("1", "10/03/2021", value="0"),
        row("1", "10/03/2021", value="-0"),  # duplicate: -0 reads as 0
        row("1", "10/05/2021"),
        row("1", "10/05/2021", value="2"),  # same_day_sessions (UPDRS), duplicate (PDQ-8)
        row("007", "10/07/2021"),  # id_spellings
        row("7.0", "10/08/2021"),
        row("7", "10/09/2021", pdq=""),  # instrument_blank
        row("7", "10/09/2031"),  # future_date
        row("7", "10/10/2021", note="tremor,\nworse at night"),
        row("7", "10/11/2010", pdq=""),  # date_outlier: no session within 5 years
        ["8", "12/12/2021", ""],  # short_row
    ]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header, *rows])
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def test_report_keeps_session_keys_and_the_same_report(tmp_path):
    src = _rules_csv(tmp_path / "rules.csv")
    full = load_sources([src], today=TODAY)
    keys = load_sources([src], today=TODAY, keys_only=True)
    assert report_dict(keys) == report_dict(full)
    rules = keys.stats["issues_by_rule"]
    for rule in (
        "duplicate_session",
        "same_day_sessions",
        "id_spellings",
        "date_order",
        "date_outlier",
        "future_date",
        "instrument_blank",
        "short_row",
    ):
        assert rules.get(rule), rule
    assert rules["duplicate_session"] == 5  # rows 3 and 5 (both sessions), row 7 (its PDQ-8)
    assert keys.sessions and all(type(s) is SessionKey for s in keys.sessions)
    for s in keys.sessions:
        assert not hasattr(s, "items") and not hasattr(s, "__dict__")
        assert set(s.extra) <= {"date_column", "event_id", "event_order", "sources"}
    assert [(s.proj_id, s.visit, s.instrument, s.source) for s in keys.sessions] == [
        (s.proj_id, s.visit, s.instrument, s.source) for s in full.sessions
    ]
    assert {f.name for f in dataclasses.fields(SessionKey)} >= {"proj_id", "date", "visit"}


def test_report_ingest_peak_memory_per_row_is_bounded(cohort_csv, tmp_path):
    # profiles, regexes: loaded once, before the count
    load_sources([_rules_csv(tmp_path / "rules.csv")], today=TODAY, keys_only=True)
    tracemalloc.start()
    try:
        result = load_sources([cohort_csv], today=TODAY, keys_only=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rows = result.stats["rows_read"]
    assert rows == 4999 and result.stats["sessions"] == 2 * rows - 1
    assert peak / rows < MAX_PEAK_PER_ROW, f"{peak / rows:.0f} bytes per row"


def test_table_keeps_lines_not_cells(cohort_csv):
    tracemalloc.start()
    try:
        table = read_table(cohort_csv)
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept / len(table.rows) < MAX_TABLE_PER_ROW, f"{kept / len(table.rows):.0f} B per row"
    with cohort_csv.open(newline="") as f:
        expected = list(csv.reader(f))[1:]
    assert [cells for _, cells in table.rows] == expected
    assert list(table.rows.numbers()) == list(range(2, len(expected) + 2))


def test_rows_keep_cells_of_padded_and_multi_line_rows(tmp_path):
    src = tmp_path / "s.csv"
    src.write_text('a,b,c\n1,"x\ny",3\n4,5\n"6",7,"8"\n', encoding="utf-8")
    table = read_table(src)
    assert list(table.rows) == [(2, ["1", "x\ny", "3"]), (4, ["4", "5", ""]), (5, ["6", "7", "8"])]
    assert table.rows[-1] == (5, ["6", "7", "8"]) and len(table.rows) == 3


def test_items_digest_equal_exactly_when_items_compare_equal():
    base = {"A": 1.0, "B": None, "C": 0.0}
    assert items_digest(base) == items_digest({"C": -0.0, "B": None, "A": 1})
    assert items_digest(base) != items_digest({**base, "A": 2.0})
    assert items_digest(base) != items_digest({**base, "B": 0.0})
    assert items_digest(base) != items_digest({"A": 1.0, "B": None, "D": 0.0})
