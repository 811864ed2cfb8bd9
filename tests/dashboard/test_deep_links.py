"""Deep links with a bad value (dashboard.link_params): `?patient=999&run=1`, an unknown instrument,
analysis or visit filter show an error naming the value, run nothing (no engine run, no audit
entry) and leave the widgets to correct; a valid link still runs and is recorded.

The engine is the real one over the in-memory KB of tests/dashboard/helpers.py (patients 3, 8,
12), with the audit trail in each test's tmp (conftest.py)."""

from __future__ import annotations

import pytest

from dashboard import widgets
from dashboard.link_params import PageLink, link_problems
from engine.audit.store import AuditStore
from engine.types import VISIT_FILTER_RE

PATIENT = PageLink("patient", single_patient=True, analyses=("trajectory", "single_session"))
IDS = [3, 8, 12]


def _count_runs(monkeypatch, handle):
    calls = []
    real = handle.engine.run

    def spy(plan, **kw):
        calls.append(plan)
        return real(plan, **kw)

    monkeypatch.setattr(handle.engine, "run", spy)
    return calls


def _released(tmp_path) -> list:
    db = tmp_path / "audit.sqlite3"
    return AuditStore(f"sqlite:///{db}").entries(actions=("ask",)) if db.exists() else []


def _errors(at) -> str:
    return "\n".join(e.value for e in at.error)


def _open(app, **params):
    for k, v in params.items():
        app.query_params[k] = v
    at = app.run()
    assert not at.exception, at.exception
    return at


def _assert_nothing_ran(at, runs, tmp_path, page: str = "patient") -> None:
    assert runs == [] and _released(tmp_path) == []
    assert not at.get("plotly_chart")
    assert "run" not in at.query_params  # correcting a widget does not start a run by itself
    assert at.button(key=f"run_{page}").disabled


def test_unknown_patient_is_an_error_and_nothing_runs(app, handle, monkeypatch, tmp_path):
    runs = _count_runs(monkeypatch, handle)
    at = _open(app, patient="999", run="1")
    err = _errors(at)
    assert "patient `999` is not in the knowledge base" in err
    assert "3, 8, 12" in err and "Nothing was run" in err
    _assert_nothing_ran(at, runs, tmp_path)
    # the widgets stay for the user to correct; the corrected plan runs on Run, and only then
    at.selectbox(key="patient").set_value(8).run()
    assert runs == [] and "999" not in _errors(at)
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    assert [p.patients for p in runs] == [(8,)]
    assert [e.patients for e in _released(tmp_path)] == [[8]]


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"instruments": ["MDS-UPDRS", "bogus"]}, "unknown instrument `bogus`"),
        ({"instruments": "updrs"}, "unknown instrument `updrs` (write it as `MDS-UPDRS`)"),
        ({"visits": "every_visit"}, "unknown visit filter `every_visit`"),
        (
            {"visits": "last_3_visits"},
            "`last_3_visits` (write it as `visits=Last N visits` and `n=3`)",
        ),
        ({"visits": "Visit N", "n": "abc"}, "`n=abc` is not a whole number from 1 to 99"),
        ({"visits": "Visit N", "n": "0"}, "`n=0`"),
        ({"analysis": "Cohort"}, "unknown analysis `Cohort`"),
        ({"patient": ["3", "999"]}, "patient `999`"),
    ],
)
def test_bad_link_value_is_named_and_nothing_runs(
    app, handle, monkeypatch, tmp_path, params, named
):
    runs = _count_runs(monkeypatch, handle)
    at = _open(app, run="1", **params)
    assert named in _errors(at)
    _assert_nothing_ran(at, runs, tmp_path)
    assert at.multiselect(key="instruments") and at.selectbox(key="visits")  # still drawn


def test_compare_link_with_an_unknown_patient_runs_nothing(app, handle, monkeypatch, tmp_path):
    runs = _count_runs(monkeypatch, handle)
    at = _open(app)
    at.query_params["patients"] = ["3", "999"]
    at.query_params["run"] = "1"
    at.switch_page("views/compare.py").run()
    assert not at.exception, at.exception
    assert "patient `999` is not in the knowledge base" in _errors(at)
    _assert_nothing_ran(at, runs, tmp_path, page="compare")


def test_valid_link_still_runs_once_and_is_recorded(app, handle, monkeypatch, tmp_path):
    runs = _count_runs(monkeypatch, handle)
    at = _open(
        app,
        patient="8",
        analysis="Single session",
        instruments="MDS-UPDRS",
        visits="Visit N",
        n="2",
        run="1",
    )
    assert _errors(at) == ""
    assert [(p.patients, p.analysis, p.instruments, p.visit_filter) for p in runs] == [
        ((8,), "single_session", ("updrs",), "visit_2")
    ]
    assert [e.patients for e in _released(tmp_path)] == [[8]]
    assert at.get("plotly_chart")


# --- link_problems, without Streamlit ---


def test_valid_links_have_no_problems():
    assert link_problems({}, PATIENT, IDS) == []
    assert (
        link_problems(
            {
                "patient": ["12"],
                "analysis": ["Trajectory"],
                "instruments": ["MDS-UPDRS", "PDQ-8"],
                "visits": ["Last N visits"],
                "n": ["3"],
                "run": ["1"],
                "backend": ["facts"],
            },
            PATIENT,
            IDS,
        )
        == []
    )
    cohort = PageLink("cohort_patients", statistic=True)
    assert (
        link_problems({"cohort_patients": [""], "statistic": ["Slope per year"]}, cohort, IDS) == []
    )
    assert link_problems({"statistic": ["slope_year"]}, cohort, IDS) == [
        "unknown ranking statistic `slope_year` (write it as `Slope per year`); choose one of "
        + ", ".join(f"`{v}`" for v in widgets.STATISTIC_LABELS.values())
    ]


def test_a_long_patient_list_is_shortened():
    (msg,) = link_problems({"patient": ["0"]}, PATIENT, list(range(1, 501)))
    assert msg.startswith("patient `0` is not in the knowledge base (its patients: 1, 2, 3")
    assert msg.endswith("12, ... (500 in all))")


def test_every_visit_widget_value_is_a_visit_filter_of_the_plan_grammar():
    lo, hi = widgets.N_RANGE
    for kind in widgets.VISIT_KINDS:
        for n in (lo, widgets.N_DEFAULT, hi):
            assert VISIT_FILTER_RE.match(widgets.join_visit_filter(kind, n)), (kind, n)
