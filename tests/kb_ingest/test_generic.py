"""Generic session CSV ingest and every validation rule on it."""

import datetime as dt

import pytest

from kb_store.ingest import IngestError, load_sources


def rules(result, rule):
    return [i for i in result.issues if i.rule == rule]


def load(paths, **kw):
    kw.setdefault("today", dt.date(2026, 1, 1))
    return load_sources([str(p) for p in paths], **kw)


def test_combined_file_makes_both_instruments(write_generic, h):
    p = write_generic(
        [
            h.generic_row(1, "2021-03-15", sex="F", age=64, hoehn_yahr=2),
            h.generic_row(1, "2021-06-15", updrs=2, pdq=0),
        ]
    )
    r = load([p])
    assert r.stats["sessions_by_instrument"] == {"pdq8": 2, "updrs": 2}
    assert r.stats["visits"] == 2 and r.stats["rows_rejected"] == 0
    s = [x for x in r.sessions if x.instrument == "updrs"][0]
    assert s.profile == "mds-updrs" and s.visit == 1 and s.date == dt.date(2021, 3, 15)
    assert s.extra["sex"] == "F" and s.extra["age"] == 64.0 and s.extra["hoehn_yahr"] == 2.0
    assert s.source.row == 2 and s.source.file == p.name
    assert s.domain_scores()["motor"].score == 33  # 33 Part III items, each 1
    assert h.unaccounted(r, [p]) == []


def test_one_file_per_instrument_aliases_bom_crlf(write_csv, h):
    up = write_csv(
        "updrs.csv",
        ["PATNO", "visit_date", *h.UPDRS_CODES],
        [[7, "03/15/2021", *[0] * len(h.UPDRS_CODES)]],
        newline="\r\n",
        bom=True,
    )
    pdq = write_csv(
        "pdq.csv",
        ["Patient ID", "Timestamp", *[f"pdq{i}" for i in range(1, 9)]],
        [[7, "2021-03-15 09:00:00", *[1] * 8]],
        newline="\r\n",
    )
    r = load([up, pdq])
    assert sorted(s.instrument for s in r.sessions) == ["pdq8", "updrs"]
    assert {s.visit for s in r.sessions} == {1}
    pdq_s = next(s for s in r.sessions if s.instrument == "pdq8")
    assert pdq_s.items["PDQ8_3"] == 1.0 and pdq_s.extra["time"] == "09:00:00"


def test_missing_items_partial_never_imputed(write_generic, h):
    p = write_generic([h.generic_row(1, "2021-03-15", NP3GAIT=None, NP1COG="")])
    r = load([p])
    s = next(x for x in r.sessions if x.instrument == "updrs")
    assert s.items["NP3GAIT"] is None
    ds = s.domain_scores()
    assert ds["motor"].partial and ds["motor"].score == 32
    (w,) = rules(r, "missing_item")
    assert w.severity == "warning" and "NP1COG" in w.column and "NP3GAIT" in w.column


@pytest.mark.parametrize(
    "value,rule",
    [("5", "out_of_range"), ("-1", "out_of_range"), ("two", "non_numeric"), ("inf", "non_numeric")],
)
def test_bad_item_rejects_that_session_only(write_generic, h, value, rule):
    p = write_generic([h.generic_row(3, "2021-03-15", NP3GAIT=value)])
    r = load([p])
    assert [s.instrument for s in r.sessions] == ["pdq8"]  # the PDQ-8 of the row survives
    (e,) = rules(r, rule)
    assert (e.file, e.row, e.column, e.severity) == (p.name, 2, "NP3GAIT", "error")
    assert "rejected" in e.message


def test_non_integer_item_warning_and_not_rated(write_generic, h):
    p = write_generic([h.generic_row(3, "2021-03-15", NP3GAIT="1.5", NP3RIGN="UR")])
    r = load([p])
    s = next(x for x in r.sessions if x.instrument == "updrs")
    assert s.items["NP3GAIT"] == 1.5 and s.items["NP3RIGN"] is None
    assert rules(r, "non_integer_item")[0].severity == "warning"
    assert rules(r, "not_rated")[0].column == "NP3RIGN"


@pytest.mark.parametrize(
    "pid,rule",
    [
        ("", "missing_patient_id"),
        ("P12", "non_integer_patient_id"),
        ("12.5", "non_integer_patient_id"),
        ("-3", "non_integer_patient_id"),
    ],
)
def test_patient_id_rules(write_generic, h, pid, rule):
    p = write_generic([h.generic_row(pid, "2021-03-15"), h.generic_row("12.0", "2021-03-15")])
    r = load([p])
    assert {s.proj_id for s in r.sessions} == {12}
    (e,) = rules(r, rule)
    assert e.row == 2 and e.column == "proj_id" and e.severity == "error"


@pytest.mark.parametrize(
    "date,rule",
    [
        ("", "missing_date"),
        ("31/31/2021", "unparseable_date"),
        ("1946/11/11", "implausible_date"),
        ("2030-01-01", "future_date"),
    ],
)
def test_date_rules(write_generic, h, date, rule):
    p = write_generic([h.generic_row(1, date), h.generic_row(1, "2021-03-15")])
    r = load([p])
    assert len(r.sessions) == 2 and r.stats["rows_rejected"] == 1
    (e,) = rules(r, rule)
    assert (e.row, e.column, e.severity) == (2, "date", "error")


def test_month_precision_warning(write_generic, h):
    r = load([write_generic([h.generic_row(1, "03/2021")])])
    assert {s.date for s in r.sessions} == {dt.date(2021, 3, 1)}
    (w,) = rules(r, "month_precision_date")
    assert w.severity == "warning" and "month precision" in w.message


def test_isolated_date_outlier_rejected(write_generic, h):
    rows = [h.generic_row(45, d, pdq=None) for d in ("2020-01-17", "2020-03-07", "2000-05-04")]
    r = load([write_generic(rows)])
    assert sorted(s.date.year for s in r.sessions) == [2020, 2020]
    (e,) = rules(r, "date_outlier")
    assert e.row == 4 and "2000-05-04" in e.message and e.severity == "error"


def test_outlier_needs_two_other_sessions(write_generic, h):
    rows = [h.generic_row(1, d, pdq=None) for d in ("2012-01-17", "2020-03-07")]
    r = load([write_generic(rows)])
    assert len(r.sessions) == 2 and not rules(r, "date_outlier")


def test_duplicate_session_keeps_first(write_generic, h):
    """Only identical same-day rows are duplicates; differing ones are kept, warned."""
    rows = [h.generic_row(1, "2021-03-15"), h.generic_row(1, "2021/03/15", updrs=2, pdq=1)]
    r = load([write_generic(rows)])
    (dup,) = rules(r, "duplicate_session")  # pdq8 identical
    assert "identical items" in dup.message and dup.row == 3
    (same,) = rules(r, "same_day_sessions")  # updrs differs: a separate assessment
    assert same.severity == "warning" and same.row == 3
    updrs = sorted((s.visit, s.source.row) for s in r.sessions if s.instrument == "updrs")
    assert updrs == [(1, 2), (2, 3)]


def test_unknown_and_ignored_columns(write_generic, h):
    r = load([write_generic([h.generic_row(1, "2021-03-15", mystery=3, visit=1)])])
    (u,) = rules(r, "unknown_column")
    assert u.column == "mystery" and u.row is None and u.severity == "warning"
    assert rules(r, "ignored_column")[0].column == "visit"
    assert all(s.extra["source_visit"] == "1" for s in r.sessions)


def test_missing_patient_column_is_file_level_error(write_csv, h):
    p = write_csv("nopid.csv", ["date", *h.PDQ_CODES], [["2021-03-15", *[1] * 8]] * 3)
    r = load([p])
    assert r.sessions == []
    (e,) = rules(r, "missing_patient_column")
    assert e.row is None and e.severity == "error" and "3 data rows" in e.message
    assert r.stats["rows_rejected"] == 3


def test_missing_date_column(write_csv, h):
    r = load([write_csv("nodate.csv", ["proj_id", *h.PDQ_CODES], [[1, *[1] * 8]])])
    assert rules(r, "missing_date_column") and not r.sessions


def test_missing_item_column_warned_once(write_csv, h):
    codes = h.PDQ_CODES[:6]
    p = write_csv("p.csv", ["proj_id", "date", *codes], [[1, "2021-03-15", *[1] * 6]] * 2)
    r = load([p])
    (w,) = rules(r, "missing_item_column")
    assert "PDQ8_7" in w.column and w.row is None
    assert not rules(r, "missing_item")  # absent columns are not repeated per row
    assert all(s.domain_scores()["qol"].partial for s in r.sessions)


def test_blank_row_instrument_blank_and_no_items(write_generic, h):
    rows = [
        h.generic_row(1, "2021-03-15", pdq=None),
        h.generic_row(2, "2021-03-15", updrs=None, pdq=None),
    ]
    p = write_generic(rows)
    text = p.read_text().replace("\n", "\n\n", 1)  # a blank line after the header
    p.write_text(text)
    r = load([p])
    assert [s.instrument for s in r.sessions] == ["updrs"]
    assert rules(r, "instrument_blank")[0].severity == "info"
    assert rules(r, "no_items")[0].severity == "error"
    assert r.stats["blank_rows"] == 1
    assert h.unaccounted(r, [p]) == []


def test_short_and_long_rows(tmp_path, h):
    p = tmp_path / "s.csv"
    p.write_text("proj_id,date,PDQ8_1,PDQ8_2\n1,2021-03-15,1\n2,2021-03-15,1,2,9\n")
    r = load([p])
    assert {i.rule for i in r.issues} >= {"short_row", "extra_cells"}
    # the long row's cells are shifted: rejected, not cut (the short row is padded and kept)
    assert [s.proj_id for s in r.sessions] == [1]
    assert [(i.row, i.severity) for i in rules(r, "extra_cells")] == [(3, "error")]


def test_nhy_101_not_rated(write_generic, h):
    r = load([write_generic([h.generic_row(1, "2021-03-15", hoehn_yahr=101)])])
    assert r.sessions[0].extra["hoehn_yahr"] is None


def test_semicolon_and_cp1252(tmp_path):
    p = tmp_path / "s.csv"
    p.write_bytes("proj_id;date;PDQ8_1;note\n1;2021-03-15;2;caf\xe9\n".encode("cp1252"))
    r = load([p])
    assert r.sessions[0].items["PDQ8_1"] == 2.0
    assert {"encoding", "unknown_column"} <= {i.rule for i in r.issues}


@pytest.mark.parametrize(
    "content,match",
    [(b"", "empty"), (b"\x00\x01\x02", "binary"), (b"a,b,c\n1,2,3\n", "cannot detect the format")],
)
def test_unreadable_file_raises_one_line(tmp_path, content, match):
    p = tmp_path / "bad.csv"
    p.write_bytes(content)
    with pytest.raises(IngestError, match=match) as exc:
        load([p])
    assert "bad.csv" in str(exc.value) and "\n" not in str(exc.value)


def test_missing_path_and_unknown_format(tmp_path):
    with pytest.raises(IngestError, match="no such file"):
        load([tmp_path / "absent.csv"])
    with pytest.raises(IngestError, match="unknown format"):
        load([tmp_path], fmt="xml")


def test_folder_skips_unrecognised_csv(tmp_path, write_generic, h):
    write_generic([h.generic_row(1, "2021-03-15")], name="a.csv")
    (tmp_path / "notes.csv").write_text("x,y\n1,2\n")
    r = load([tmp_path])
    assert len(r.sessions) == 2
    (w,) = rules(r, "unrecognised_file")
    assert w.file == "notes.csv" and r.stats["files_skipped"] == ["notes.csv"]


def test_forced_marag_on_generic_file_raises(write_generic, h):
    p = write_generic([h.generic_row(1, "2021-03-15")])
    with pytest.raises(IngestError, match="not a MA-RAG"):
        load([p], fmt="marag")


def test_condition_column(write_generic, h):
    rows = [
        h.generic_row(1, "2021-03-15", pdq=None, condition="OFF"),
        h.generic_row(1, "2021-03-15", pdq=None, condition="ON"),
    ]
    r = load([write_generic(rows)])
    assert sorted(s.condition for s in r.sessions) == ["OFF", "ON"]
    assert {s.visit for s in r.sessions} == {1}


def test_forced_generic_on_study_file_raises(write_csv, h):
    p = write_csv(
        "u.csv",
        ["PROJ_ID", "SESSION_DATE", "Q4_1", *h.MARAG_CODES],
        [[1, "2020/01/01", 1, *[0] * 44]],
    )
    with pytest.raises(IngestError, match="use --format auto"):
        load([p], fmt="generic")


def test_shipped_synthetic_sample_ingests_cleanly(h):
    """Contract with kb_store.synth: the shipped generic CSV loads with no errors."""
    synth = pytest.importorskip("kb_store.synth")
    path = synth.default_sample_path()
    if not path.exists():
        pytest.skip(f"{path} not built yet")
    r = load([path])
    assert not r.errors, [i.line() for i in r.errors][:5]
    assert r.stats["rows_rejected"] == 0 and h.unaccounted(r, [path]) == []
    assert {s.profile for s in r.sessions} == {"mds-updrs", "pdq8"}
    assert {i.rule for i in r.warnings} <= {"month_precision_date", "missing_item"}


def test_bad_descriptor_and_unknown_condition(write_generic, h):
    r = load([write_generic([h.generic_row(1, "2021-03-15", age="old", condition="maybe")])])
    assert rules(r, "bad_descriptor")[0].column == "age"
    assert rules(r, "unknown_condition")[0].severity == "warning"
    assert len(r.sessions) == 2 and "age" not in r.sessions[0].extra
