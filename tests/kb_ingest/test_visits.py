"""The visit rule: same-day / window joins across instruments, never within one instrument."""

import datetime as dt

import pytest

from kb_store.model import Session, SourceRef
from kb_store.visits import assign_visits


def S(pid, date, inst, row, cond=""):
    prof = "pdq8" if inst == "pdq8" else "mds-updrs"
    return Session(
        pid, dt.date.fromisoformat(date), inst, prof, {}, SourceRef("f.csv", row), condition=cond
    )


def visits(sessions):
    return {(s.instrument, s.date.isoformat(), s.condition): s.visit for s in sessions}


def test_window_zero_joins_same_day_only():
    out, issues = assign_visits(
        [
            S(12, "2020-03-07", "updrs", 2),
            S(12, "2020-03-09", "pdq8", 3),
            S(12, "2020-01-01", "updrs", 4),
            S(12, "2020-01-01", "pdq8", 5),
        ]
    )
    v = visits(out)
    assert v[("updrs", "2020-01-01", "")] == v[("pdq8", "2020-01-01", "")] == 1
    assert v[("updrs", "2020-03-07", "")] == 2 and v[("pdq8", "2020-03-09", "")] == 3
    assert issues == []


def test_window_joins_and_reports():
    out, issues = assign_visits(
        [
            S(12, "2020-01-01", "updrs", 4),
            S(12, "2020-03-07", "updrs", 2),
            S(12, "2020-03-09", "pdq8", 3),
        ],
        window_days=7,
    )
    v = visits(out)
    assert v[("pdq8", "2020-03-09", "")] == v[("updrs", "2020-03-07", "")] == 2
    (i,) = issues
    assert i.rule == "visit_joined" and i.severity == "info"
    assert i.message == (
        "patient 12: PDQ-8 of 2020-03-09 joined UPDRS visit 2 of 2020-03-07 "
        "(2 days apart, window 7)"
    )


def test_same_instrument_never_merged():
    out, issues = assign_visits(
        [
            S(1, "2020-03-01", "updrs", 2),
            S(1, "2020-03-04", "updrs", 3),
            S(1, "2020-03-05", "pdq8", 4),
        ],
        window_days=7,
    )
    v = visits(out)
    assert v[("updrs", "2020-03-01", "")] == 1 and v[("updrs", "2020-03-04", "")] == 2
    assert v[("pdq8", "2020-03-05", "")] == 2  # greedy: joins the open visit (anchor 03-04)
    assert [i.rule for i in issues] == ["same_instrument_in_window", "visit_joined"]


def test_window_is_anchored_not_chained():
    out, _ = assign_visits(
        [S(1, "2020-03-01", "updrs", 2), S(1, "2020-03-09", "pdq8", 3)], window_days=7
    )
    assert sorted(s.visit for s in out) == [1, 2]


def test_on_off_share_visit_and_order():
    out, _ = assign_visits(
        [S(1, "2020-03-01", "updrs", 3, "ON"), S(1, "2020-03-01", "updrs", 2, "OFF")]
    )
    assert [(s.condition, s.visit) for s in out] == [("OFF", 1), ("ON", 1)]


def test_per_patient_numbering_and_negative_window():
    out, _ = assign_visits(
        [
            S(2, "2021-01-01", "updrs", 2),
            S(1, "2020-01-01", "updrs", 3),
            S(2, "2020-01-01", "updrs", 4),
        ]
    )
    assert [(s.proj_id, s.visit, s.date.year) for s in out] == [
        (1, 1, 2020),
        (2, 1, 2020),
        (2, 2, 2021),
    ]
    with pytest.raises(ValueError):
        assign_visits([], window_days=-1)


def test_visit_table(write_generic, h):
    from kb_store.ingest import load_sources
    from kb_store.visits import visit_table

    r = load_sources(
        [write_generic([h.generic_row(1, "2021-03-15"), h.generic_row(1, "2021-06-15")])],
        today=dt.date(2026, 1, 1),
    )
    df = visit_table(r.sessions)
    assert len(df) == 4 and list(df["visit"]) == [1, 1, 2, 2]
    assert df.loc[df.instrument == "pdq8", "score_qol"].tolist() == [8.0, 8.0]
