"""Property tests: random malformed CSVs never crash with anything but IngestError, and every data row
ends in a Session or in the report."""

import csv
import datetime as dt
import io
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kb_store.dates import DateParseError, parse_date
from kb_store.ingest import IngestError, load_sources
from kb_store.validation import source_refs

HEADERS = [
    "proj_id",
    "PATNO",
    "PROJ_ID",
    "patient",
    "date",
    "SESSION_DATE",
    "PDQ_SESSION_DATE",
    "INFODT",
    "EVENT_ID",
    "PAG_NAME",
    "PDSTATE",
    "NP1COG",
    "NP3GAIT",
    "NP2SPCH",
    "PDQ8_1",
    "PDQ8_2",
    "DIFF_PUB",
    "EMBARESSED",
    "COGNITION",
    "SPEECH_PROB",
    "SPEECH_PROB.1",
    "UPDRS_TOTAL",
    "PDQ_8_TOTAL",
    "sex",
    "age",
    "hoehn_yahr",
    "visit",
    "junk",
    "",
]
CELLS = st.one_of(
    st.sampled_from(
        [
            "",
            "0",
            "1",
            "2.0",
            "4",
            "5",
            "-1",
            "1.5",
            "NaN",
            "UR",
            "101",
            "x",
            "12",
            "BL",
            "SC",
            "ON",
            "OFF",
            "NUPDRS3A",
            "2021-03-15",
            "03/2021",
            "1946/11/11",
            "2099-01-01",
            "15.03.2021",
            "Mar 15 2021",
            "13/13/2013",
            "12.0",
            '"',
            "a,b",
        ]
    ),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8),
    st.integers(-5, 200).map(str),
)


PIDS = st.sampled_from(["1", "2", "3", "1", "2", "12.0", "", "P1", "-4"])
DATES = st.sampled_from(
    [
        "2021-03-15",
        "2021/04/15",
        "03/2021",
        "15.05.2021",
        "2021-03-17 10:00:00",
        "2021-06-01",
        "2020-12-24",
        "2021-03-20",
        "1946/11/11",
        "2099-01-01",
        "",
        "soon",
        "2000-05-04",
        "2021-03-15",
    ]
)
EVENTS = st.sampled_from(["BL", "V04", "SC", "U01", "", "PW"])
ITEMS = st.sampled_from(["0", "1", "2", "3", "0", "1", "2", "", "5", "x", "UR", "101", "1.5"])
KEY_CELLS = {
    "proj_id": PIDS,
    "PATNO": PIDS,
    "PROJ_ID": PIDS,
    "date": DATES,
    "INFODT": DATES,
    "SESSION_DATE": DATES,
    "PDQ_SESSION_DATE": DATES,
    "EVENT_ID": EVENTS,
    "PAG_NAME": st.sampled_from(["NUPDRS3", "NUPDRS3A", ""]),
}


@st.composite
def csv_files(draw):
    near_valid = draw(st.integers(0, 3)) > 0
    if near_valid:  # key columns and items present, plausible and junk cells mixed
        keys = draw(
            st.sampled_from(
                [
                    ["proj_id", "date"],
                    ["PATNO", "EVENT_ID", "INFODT", "PAG_NAME"],
                    ["PROJ_ID", "PDQ_SESSION_DATE"],
                    ["PROJ_ID", "SESSION_DATE"],
                ]
            )
        )
        items = draw(st.lists(st.sampled_from(HEADERS[11:]), min_size=1, max_size=6))
        header = keys + items
    else:
        header = draw(
            st.lists(
                st.one_of(st.sampled_from(HEADERS), st.text(max_size=6)), min_size=1, max_size=10
            )
        )
    n = draw(st.integers(0, 6)) if not near_valid else draw(st.integers(1, 6))
    lines = []
    for _ in range(n):
        if draw(st.booleans()) and draw(st.booleans()):
            lines.append([])  # blank line
            continue
        if near_valid and draw(st.integers(0, 4)):
            lines.append([draw(KEY_CELLS.get(h, ITEMS)) for h in header])
            continue
        width = draw(st.integers(0, len(header) + 2))
        lines.append([draw(CELLS) for _ in range(width)])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    w.writerow(header)
    for ln in lines:
        w.writerow(ln)
    text = buf.getvalue()
    if draw(st.booleans()):
        text = "\ufeff" + text
    return text


def data_rows(path: Path) -> list[tuple[str, int]]:
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    # (physical line a record starts on, record): the product numbers rows by physical line, so a
    # quoted cell that spans lines shifts every later record's number (csv.reader's line_num)
    reader = csv.reader(io.StringIO(text, newline=""))
    records, start = [], 1
    try:
        for rec in reader:
            records.append((start, rec))
            start = reader.line_num + 1
    except csv.Error:
        return []
    out, header = [], False
    for n, rec in records:
        if not any(c.strip() for c in rec):
            continue
        if not header:
            header = True
            continue
        out.append((path.name, n))
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(csv_files(), min_size=1, max_size=2),
    window=st.integers(0, 30),
    fmt=st.sampled_from(["auto", "auto", "auto", "auto", "generic", "ppmi", "marag"]),
)
def test_random_csvs_never_crash_and_rows_accounted(texts, window, fmt):
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, text in enumerate(texts):
            p = Path(d) / f"f{i}.csv"
            p.write_text(text, encoding="utf-8", newline="")
            paths.append(p)
        try:
            r = load_sources(paths, fmt, visit_window_days=window, today=dt.date(2026, 1, 1))
        except IngestError as exc:
            assert "\n" not in str(exc)
            event("IngestError")
            return
        covered = {ref for s in r.sessions for ref in source_refs(s)}
        reported = {(i.file, i.row) for i in r.issues if i.row is not None}
        file_level = {i.file for i in r.issues if i.row is None and i.severity == "error"}
        file_level |= {i.file for i in r.issues if i.rule == "unrecognised_file"}
        for p in paths:
            for ref in data_rows(p):
                assert ref in covered or ref in reported or p.name in file_level, ref
        assert not [i for i in r.issues if i.rule == "unaccounted_row"]
        for s in r.sessions:
            assert s.visit is not None and s.visit >= 1
            assert dt.date(1990, 1, 1) <= s.date <= dt.date(2026, 1, 1)
        assert r.stats["rows_read"] >= 0
        event("sessions made" if r.sessions else "no session")


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30))
def test_parse_date_only_raises_date_errors(text):
    try:
        p = parse_date(text)
    except DateParseError:
        return
    assert isinstance(p.date, dt.date) and p.precision in ("day", "month")


def test_a_quoted_cell_over_two_lines_keeps_the_physical_line_numbers(tmp_path):
    """The case the random test found: rows are numbered by physical line, and the oracle too."""
    p = tmp_path / "f0.csv"
    p.write_text(
        'proj_id,date,NP1COG\n"\n0",\n\n\n\n1,2021-03-15,0\n', encoding="utf-8", newline=""
    )
    r = load_sources([p], "auto", today=dt.date(2026, 1, 1))
    assert [s.source.row for s in r.sessions] == [7]
    assert data_rows(p) == [("f0.csv", 2), ("f0.csv", 7)]
