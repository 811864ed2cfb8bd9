"""No row lost or changed in silence: stray quotes, day/month order per column,
exact patient ids, sources with the same base name, digits of other scripts."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest

from engine.cli import main
from kb_store import dates
from kb_store.chroma_reader import open_kb
from kb_store.ingest import load_sources


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for k in ("MARAG_KB_DIR", "MARAG_CHROMA_URL", "MARAG_EMBEDDING"):
        monkeypatch.delenv(k, raising=False)


def rules(result, rule):
    return [i for i in result.issues if i.rule == rule]


# ------------------------------------------------------------------ 1. stray quote


def _twenty_rows(h, write_generic, name="sessions.csv"):
    rows = [h.generic_row(p, f"2021-0{1 + v}-10") for p in range(1, 6) for v in range(4)]
    return write_generic(rows, name=name)


def test_stray_quote_is_reported_and_following_lines_are_read(h, write_generic):
    path = _twenty_rows(h, write_generic)
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace(",2021-", ',"2021-', 1)  # row 4 opens a quote that never closes
    path.write_text("\n".join(lines) + "\n")
    res = load_sources([path], today=h.TODAY)
    broken = rules(res, "broken_quote")
    assert [(i.file, i.row, i.severity) for i in broken] == [("sessions.csv", 4, "error")]
    assert "lines 4-21" in broken[0].message
    # the 17 lines the quote swallowed are read as rows of their own: 19 rows, 5 patients
    assert res.stats["rows_read"] == 20 and res.stats["lines"] == 21
    assert len({(s.proj_id, s.date) for s in res.sessions}) == 19
    assert res.stats["patients"] == 5
    assert res.blocking and h.unaccounted(res, [path]) == []


def test_build_refuses_a_file_with_a_stray_quote_and_keeps_the_kb(h, write_generic, tmp_path):
    good = _twenty_rows(h, write_generic, name="good.csv")
    kb = tmp_path / "kb"
    args = ["--kb-dir", str(kb), "--embedding", "hashing"]
    assert main(["kb", "build", "--source", str(good), *args]) == 0
    bad = tmp_path / "bad.csv"
    lines = good.read_text().splitlines()
    lines[2] = lines[2].replace(",2021-", ',"2021-', 1)
    bad.write_text("\n".join(lines) + "\n")
    assert main(["kb", "build", "--source", str(bad), *args]) == 2
    assert open_kb(kb, embedding="hashing").patient_ids() == [1, 2, 3, 4, 5]


def test_deleted_closing_quote_in_study_file_keeps_patient_29(h, tmp_path):
    src = h.SHARED / "UPDRS_one2one_summaries.csv"
    if not src.is_file():
        pytest.skip("MA-RAG study data not found")
    lines = src.read_text(encoding="utf-8-sig").split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("29,2019/12/11")) - 1
    i = lines[at].rfind('"')
    lines[at] = lines[at][:i] + lines[at][i + 1 :]  # delete the row's last closing quote
    f = tmp_path / src.name
    f.write_text("\n".join(lines), encoding="utf-8")
    res = load_sources([f], today=h.TODAY)
    assert [i.row for i in rules(res, "broken_quote")] == [at + 1]
    assert any(s.proj_id == 29 and s.date == dt.date(2019, 12, 11) for s in res.sessions)
    assert res.stats["rows_read"] == 171 and h.unaccounted(res, [f]) == []


@pytest.mark.parametrize("first", [True, False])
def test_quoted_line_break_in_a_text_cell_is_not_a_broken_quote(h, write_generic, first):
    rows = [h.generic_row(1, "2021-01-10"), h.generic_row(1, "2021-03-10")]
    note = {"note": "tremor worse,\nat night, 2 falls,\nno freezing"}
    rows = [{**note, **r} if first else {**r, **note} for r in rows]
    path = write_generic(rows)
    res = load_sources([path], today=h.TODAY)
    assert not rules(res, "broken_quote") and len(res.sessions) == 4


# ------------------------------------------------------------------ 2. day/month order


def test_day_first_file_reads_every_date_day_first(h, write_generic):
    raw = ["10/01/2020", "25/02/2020", "03/04/2020", "20/06/2020"]
    path = write_generic([h.generic_row(1, d) for d in raw])
    res = load_sources([path], today=h.TODAY)
    got = sorted({(s.visit, s.date) for s in res.sessions})
    assert got == [
        (1, dt.date(2020, 1, 10)),
        (2, dt.date(2020, 2, 25)),
        (3, dt.date(2020, 4, 3)),
        (4, dt.date(2020, 6, 20)),
    ]
    assert [i.severity for i in rules(res, "date_order")] == ["info"]


def test_mixed_orders_reject_the_ambiguous_dates(h, write_generic):
    raw = ["15/01/2020", "01/20/2020", "03/04/2020"]
    path = write_generic([h.generic_row(p, d) for p, d in enumerate(raw, 1)])
    res = load_sources([path], today=h.TODAY)
    amb = rules(res, "ambiguous_date")
    assert [(i.row, i.severity) for i in amb] == [(4, "error")]
    assert "'15/01/2020'" in amb[0].message and "'01/20/2020'" in amb[0].message
    assert {s.proj_id for s in res.sessions} == {1, 2}


def test_undecidable_file_warns_loudly(h, write_generic):
    path = write_generic([h.generic_row(1, "03/04/2020"), h.generic_row(1, "05/06/2020")])
    res = load_sources([path], today=h.TODAY)
    warn = rules(res, "ambiguous_date_order")
    assert len(warn) == 1 and warn[0].severity == "warning" and "MONTH-FIRST" in warn[0].message


def test_decide_order_per_separator_group():
    order = dates.decide_order(["15.03.2021", "03/15/2021", "01.02.2021", "01/02/2021"])
    assert order.order == {"slash": "mdy", "dot": "dmy"} and not order.conflict
    assert dates.parse_date("01/02/2021", order).date == dt.date(2021, 1, 2)
    assert dates.parse_date("01.02.2021", order).date == dt.date(2021, 2, 1)


# ------------------------------------------------------------------ 3. patient ids


def test_long_ids_stay_distinct_and_float_spellings_are_rejected(h, write_generic):
    ids = ["9007199254740993", "9007199254740992", "1e1", "1_0", "-0", "+3", "0x1", "9" * 5000]
    path = write_generic([h.generic_row(p, "2021-01-10") for p in ids])
    res = load_sources([path], today=h.TODAY)
    assert {s.proj_id for s in res.sessions} == {9007199254740993, 9007199254740992}
    bad = rules(res, "non_integer_patient_id")
    assert sorted(i.row for i in bad) == [4, 5, 6, 7, 8, 9]
    long_msg = next(i.message for i in bad if i.row == 9)
    assert "(5000 characters)" in long_msg and len(long_msg) < 200


def test_spreadsheet_float_id_still_reads(h, write_generic):
    path = write_generic([h.generic_row("12.0", "2021-01-10")])
    assert {s.proj_id for s in load_sources([path], today=h.TODAY).sessions} == {12}


# ------------------------------------------------------------------ 4. same base name


def test_two_folders_with_the_same_file_name_are_both_read(h, tmp_path, write_generic):
    a = write_generic([h.generic_row(1, "2021-01-10"), h.generic_row(2, "2021-01-10")])
    (tmp_path / "site_a").mkdir()
    (tmp_path / "site_b").mkdir()
    shutil.move(a, tmp_path / "site_a" / "sessions.csv")
    b = write_generic([h.generic_row(3, "2021-01-10"), h.generic_row(1, "2021-02-10")])
    shutil.move(b, tmp_path / "site_b" / "sessions.csv")
    res = load_sources([tmp_path / "site_a", tmp_path / "site_b"], today=h.TODAY)
    assert res.stats["patients"] == 3 and res.stats["rows_read"] == 4
    assert len(res.sessions) == 8 and not res.errors
    names = {f["file"] for f in res.stats["files"]}
    assert names == {str((tmp_path / d / "sessions.csv").resolve()) for d in ("site_a", "site_b")}
    assert {s.source.file for s in res.sessions} == names


def test_a_file_named_twice_is_read_once(h, tmp_path, write_generic):
    a = write_generic([h.generic_row(1, "2021-01-10")])
    res = load_sources([a, a, tmp_path], today=h.TODAY)
    assert res.stats["rows_read"] == 1 and not rules(res, "duplicate_session")


# ------------------------------------------------------------------ 5. other digit scripts


def test_arabic_indic_and_full_width_digits_are_rejected(h, write_generic):
    rows = [
        h.generic_row(1, "2021-01-10", NP1COG="\u0661"),  # Arabic-Indic 1
        h.generic_row(2, "2021-01-10", NP1COG="\uff12"),  # full-width 2
        h.generic_row("\u0663", "2021-01-10"),  # patient id Arabic-Indic 3
        h.generic_row(4, "\u0662\u0660\u0662\u0661-01-10"),  # date in Arabic-Indic digits
        h.generic_row(5, "2021-01-10", age="\u0667\u0660"),
    ]
    path = write_generic(rows)
    res = load_sources([path], today=h.TODAY)
    assert [(i.row, i.column) for i in rules(res, "non_numeric")] == [(2, "NP1COG"), (3, "NP1COG")]
    assert "0-9" in rules(res, "non_numeric")[0].message
    assert [i.row for i in rules(res, "non_integer_patient_id")] == [4]
    assert [i.row for i in rules(res, "unparseable_date")] == [5]
    assert [i.row for i in rules(res, "bad_descriptor")] == [6]
    assert {s.proj_id for s in res.sessions if s.instrument == "updrs"} == {5}


# ------------------------------------------------------------------ 13. UTF-16 files


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_files_are_read(h, tmp_path, encoding):
    text = h.csv_text(["proj_id", "date", "PDQ8_1"], [[1, "2021-03-15", 2], [2, "2021-03-16", 3]])
    p = tmp_path / "s.csv"
    p.write_bytes(text.encode(encoding))
    res = load_sources([p], today=h.TODAY)
    assert {s.proj_id for s in res.sessions} == {1, 2}
    assert [i.message for i in rules(res, "encoding")] == ["decoded as UTF-16"]


# ------------------------------------------------------------------ 6. no file content in errors


def test_unrecognised_file_error_does_not_echo_its_content(tmp_path, h):
    p = tmp_path / "passwd"
    p.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin\n")
    with pytest.raises(ValueError) as exc:
        load_sources([p], today=h.TODAY)
    assert "root" not in str(exc.value).replace(str(tmp_path), "") and "passwd" in str(exc.value)
