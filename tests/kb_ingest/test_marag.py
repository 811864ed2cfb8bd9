"""MA-RAG study CSVs: a small synthetic file in the study layout, then the real files from ../shared."""

import datetime as dt
import json

import pytest

from kb_store.csv_table import read_table
from kb_store.ingest import load_sources
from kb_store.ingest_report import format_report, report_dict

TODAY = dt.date(2026, 1, 1)


def rules(result, rule):
    return [i for i in result.issues if i.rule == rule]


def marag_updrs(write_csv, h, rows, *, raw_duplicate=False):
    items = [
        c if c != "SPEECH_PROB.1" or not raw_duplicate else "SPEECH_PROB" for c in h.MARAG_CODES
    ]
    header = [
        "PROJ_ID",
        "SESSION_DATE",
        "Q4_1",
        *items,
        "UPDRS_TOTAL",
        "UPDRS_SCORE",
        "clinician_summary",
        "user_summary",
    ]
    return write_csv("UPDRS_one2one_summaries.csv", header, rows, newline="\r\n", bom=True)


def urow(pid, date, q, val, total=None, score=None):
    items = [val] * 44
    total = 44 * val if total is None else total
    score = round(total / 176 * 100, 2) if score is None else score
    return [pid, date, q, *items, total, score, f"clin {pid} {q}", f"user {pid} {q}"]


@pytest.mark.parametrize("raw_duplicate", [False, True])
def test_marag_updrs_layout(write_csv, h, raw_duplicate):
    p = marag_updrs(
        write_csv,
        h,
        [urow(8, "2019/11/16", 1, 1), urow(8, "2020/01/17", 2, 2, total=80)],
        raw_duplicate=raw_duplicate,
    )
    assert "SPEECH_PROB.1" in read_table(p).header
    r = load_sources([p], today=TODAY)
    assert [s.profile for s in r.sessions] == ["marag-updrs44"] * 2
    s1 = r.sessions[0]
    assert s1.items["SPEECH_PROB.1"] == 1.0 and len(s1.items) == 44
    assert (
        s1.extra["Q4_1"] == 1 and s1.extra["UPDRS_TOTAL"] == 44 and s1.extra["UPDRS_SCORE"] == 25.0
    )
    assert s1.extra["clinician_summary"] == "clin 8 1" and s1.extra["user_summary"] == "user 8 1"
    ds = s1.domain_scores()
    assert (ds["nonmotor"].score, ds["adl"].score, ds["motor"].score) == (13, 15, 16)
    (m,) = [i for i in rules(r, "total_mismatch") if i.column == "UPDRS_TOTAL"]
    assert m.row == 3 and m.severity == "warning" and "sum to 88" in m.message
    assert not rules(r, "unknown_column")


def test_marag_pdq8_layout(write_csv, h):
    header = [
        "PROJ_ID",
        "PDQ_SESSION_DATE",
        "DIFF_PUB",
        "DIFF_DRESS",
        "DEPRESSED",
        "PROB_RELATE",
        "PROB_CONCENTRATION",
        "PROB_COMMUNICATE",
        "MS_PROB_SPASMS",
        "EMBARESSED",
        "PDQ_8_TOTAL",
        "UPDRS_SESSION_DATE",
        "SPEECH_PROB",
        "GAIT_PROB",
        "UPDRS_TOTAL",
        "clinician_summary",
    ]
    rows = [
        [1, "2020-01-17 13:54:00", 1, 1, 0, 1, 1, 2, 0, 0, 6, "2020-01-17", 2, 1, 40, "gold text"],
        [1, "2020-03-07 10:00:00", "", 1, 0, 1, 1, 2, 0, 0, 9, "1946-11-11", 2, 1, 40, "gold 2"],
    ]
    p = write_csv("PDQ8_UPDRS_one2one_summaries.csv", header, rows)
    r = load_sources([p], today=TODAY)
    assert [s.instrument for s in r.sessions] == ["pdq8", "pdq8"]
    s = r.sessions[0]
    assert s.items["PDQ8_1"] == 1 and s.items["PDQ8_8"] == 0
    assert (
        s.extra["clinician_summary"] == "gold text"
        and s.extra["UPDRS_SESSION_DATE"] == "2020-01-17"
    )
    assert (
        s.extra["PDQ_8_TOTAL"] == 6
        and s.extra["paired_UPDRS_TOTAL"] == 40
        and s.extra["time"] == "13:54:00"
    )
    assert not rules(r, "unknown_column")
    (ign,) = rules(r, "ignored_column")
    assert "SPEECH_PROB" in ign.column and "paired" in ign.message
    (tm,) = rules(r, "total_mismatch")
    assert tm.row == 3 and tm.column == "PDQ_8_TOTAL"
    assert rules(r, "missing_item")[0].column == "PDQ8_1"


REAL = [("UPDRS_one2one_summaries.csv"), ("PDQ8_UPDRS_one2one_summaries.csv")]


@pytest.fixture(scope="module")
def real():
    from pathlib import Path

    shared = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "ma-rag"
    if not (shared / REAL[0]).exists():
        pytest.skip(f"MA-RAG study data not found at {shared} (../shared beside the repo)")
    return shared, load_sources([shared], today=TODAY)


def test_real_counts(real, h):
    shared, r = real
    files = {f["file"]: f for f in r.stats["files"]}
    u, p = files["UPDRS_one2one_summaries.csv"], files["PDQ8_UPDRS_one2one_summaries.csv"]
    assert (u["rows_read"], p["rows_read"]) == (171, 151)
    up = [s for s in r.sessions if s.instrument == "updrs"]
    pq = [s for s in r.sessions if s.instrument == "pdq8"]
    # every row read is a session or rejected with a reason
    assert len(up) + u["rows_rejected"] == 171 and len(pq) + p["rows_rejected"] == 151
    rejected = {(i.file, i.row): i.rule for i in r.issues if i.severity == "error"}
    assert len(rejected) == u["rows_rejected"] + p["rows_rejected"]
    assert len(up) == 168 and len(pq) == 150  # same-day sessions that differ are kept
    assert len({s.proj_id for s in up}) == 46 and len({s.proj_id for s in pq}) == 43
    assert h.unaccounted(r, [shared / n for n in REAL]) == []
    assert all(s.profile == "marag-updrs44" for s in up)
    assert all("clinician_summary" in s.extra for s in pq)


def test_real_quirks_reported(real):
    _, r = real
    (d1946,) = [i for i in rules(r, "implausible_date") if "1946" in i.message]
    assert d1946.file == "UPDRS_one2one_summaries.csv" and d1946.column == "SESSION_DATE"
    (d2000,) = rules(r, "date_outlier")
    assert "patient 45" in d2000.message and "2000-05-04" in d2000.message
    assert {i.row for i in rules(r, "duplicate_session")} == {21}  # identical items only
    assert {i.row for i in rules(r, "same_day_sessions")} == {101, 124, 123}
    assert not rules(r, "unknown_column") and not rules(r, "unaccounted_row")
    # patient 45 keeps its plausible sessions
    assert sorted(
        s.date.isoformat() for s in r.sessions if s.proj_id == 45 and s.instrument == "updrs"
    ) == ["2020-01-17", "2020-03-07"]


def test_real_visits_and_report(real):
    shared, _ = real
    r = load_sources([shared], today=TODAY, visit_window_days=7)
    assert r.stats["sessions_joined"] > 0
    text = format_report(r)
    assert "1946/11/11" in text and "joined UPDRS visit" in text
    d = report_dict(r)
    json.dumps(d)
    assert d["rules"]["implausible_date"]["count"] == 2
    assert d["stats"]["sessions"] == 318  # 3 same-day sessions whose items differ are kept
