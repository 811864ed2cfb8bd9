"""The clinical-course views of the dashboard: excluded sessions beside the chart with a link to
the Data report, the cohort "Rank by" statistic widget, and the dense facts text kept on the
Provenance page."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

h = sys.modules["dash_helpers"]  # loaded by conftest.py

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"

EXCLUDED = {
    "patient": 8,
    "instrument": "updrs",
    "date": "1954/07/04",
    "file": "study.csv",
    "row": 10,
    "rule": "implausible_date",
    "message": "'1954/07/04' -> 1954-07-04 is before 1990-01-01",
}


def _texts(at) -> str:
    return "\n".join(
        [m.value for m in at.markdown]
        + h.html_texts(at)  # the summary, its cited sentences drawn as HTML
        + [i.value for i in at.info]
        + [t.value for t in at.text]
    )


def test_excluded_sessions_beside_the_chart_with_data_report_link(app, handle):
    handle.kb._excluded = [EXCLUDED]
    at = app.run()
    at.selectbox(key="patient").set_value(8).run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    assert "1 session left out at data import" in _texts(at)
    frames = [d.value for d in at.dataframe if "rule" in map(str, d.value.columns)]
    assert frames and frames[0].iloc[0]["date"] == "1954-07-04"  # parsed, never the cell
    assert frames[0].iloc[0]["rule"] == "implausible_date"
    links = [p for p in at.get("page_link") if "Data report" in p.proto.label]
    assert links and links[0].proto.page == "data"
    # the summary names it too (the engine's sentence, grounded; the parsed date, not the cell)
    assert "session of 1954-07-04 left out for an implausible date" in _texts(at)


def test_an_unreadable_rejected_date_is_described_never_quoted(app, handle):
    payload = '=HYPERLINK("http://x.example","y") <img src=x> ![i](http://x.example/i.png)'
    handle.kb._excluded = [{**EXCLUDED, "date": payload, "rule": "unparseable_date"}]
    at = app.run()
    at.selectbox(key="patient").set_value(8).run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    frames = [d.value for d in at.dataframe if "rule" in map(str, d.value.columns)]
    assert frames[0].iloc[0]["date"] == "unreadable date (see the Data report)"
    shown = _texts(at) + "".join(str(d.value.to_dict()) for d in at.dataframe)
    assert "HYPERLINK" not in shown and "<img" not in shown and "x.example" not in shown
    assert "with an unreadable date" in _texts(at)  # the summary describes it


def test_cohort_rank_by_widget_sets_the_statistic(app, handle, monkeypatch):
    plans = []
    real = handle.engine.run

    def spy(plan, **kw):
        plans.append(plan)
        return real(plan, **kw)

    monkeypatch.setattr(handle.engine, "run", spy)
    at = app.run()
    at.switch_page("views/cohort.py").run()
    at.selectbox(key="question").set_value(
        "Which patient has the highest total UPDRS burden?"
    ).run()
    at.selectbox(key="statistic").set_value("slope_visit").run()
    at.button(key="run_cohort").click().run()
    assert not at.exception, at.exception
    assert plans and plans[-1].statistic == "slope_visit"
    assert "points per visit" in _texts(at)


def test_provenance_keeps_the_dense_text(app, handle):
    at = app.run()
    at.button(key="run_patient").click().run()
    at.switch_page("views/provenance.py").run()
    assert not at.exception, at.exception
    assert any(e.label.startswith("Dense facts text") for e in at.expander)
    assert any("Progression for patient" in t.value for t in at.text)


MARAG = Path(__file__).resolve().parents[3] / "shared" / "data" / "ma-rag"


@pytest.mark.skipif(not MARAG.exists(), reason=f"MA-RAG study CSVs not found at {MARAG}")
def test_data_page_build_records_excluded_sessions(monkeypatch, tmp_path):
    """A KB built on the Data page carries its own excluded sessions (no stale file from an
    earlier build): patient 50's 1954/07/04 session is named beside the chart."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "excluded_sessions.json").write_text('[{"patient": 1, "date": "stale"}]')
    monkeypatch.setenv("MARAG_KB_DIR", str(kb))
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    monkeypatch.setenv("MARAG_LLM", "facts")
    monkeypatch.setenv("MARAG_DATA_ROOTS", str(MARAG))
    st.cache_resource.clear()
    st.cache_data.clear()
    try:
        at = AppTest.from_file(str(APP), default_timeout=120).run()
        at.switch_page("views/data.py").run()
        at.radio(key="data_source").set_value("folder").run()
        at.text_input(key="data_path").input(str(MARAG)).run()
        at.selectbox(key="data_format").set_value("marag").run()
        at.button(key="validate").click().run()
        at.button(key="build").click().run()
        assert not at.exception, at.exception
        rows = json.loads((kb / "excluded_sessions.json").read_text())
        assert sorted((r["patient"], r["date"]) for r in rows) == [
            (13, "2021-01-23 09:18:00"),
            (45, "2000/05/04"),
            (50, "1954/07/04"),
            (58, "1946/11/11"),
        ]
        at.switch_page("views/patient.py").run()
        at.selectbox(key="patient").set_value(50).run()
        at.button(key="run_patient").click().run()
        assert not at.exception, at.exception
        assert "1 session left out at data import" in _texts(at)
    finally:
        st.cache_resource.clear()
        st.cache_data.clear()


@pytest.mark.parametrize(
    ("concept", "query"),
    [
        ("hallucinations", "Who has hallucinations now?"),
        ("severe_item", "Which patients have any item at 4?"),
    ],
)
def test_cohort_item_question_widget_builds_the_planners_plan(
    app, handle, monkeypatch, concept, query
):
    """The Cohort page's item question builds the plan the rules planner makes of the words
    (statistic item:<concept>), and the page shows the item answer: the listed patients."""
    from engine.plan import parse_query

    plans = []
    real = handle.engine.run

    def spy(plan, **kw):
        plans.append(plan)
        return real(plan, **kw)

    monkeypatch.setattr(handle.engine, "run", spy)
    at = app.run()
    at.switch_page("views/cohort.py").run()
    at.selectbox(key="item_concept").set_value(concept).run()
    assert at.selectbox(key="statistic").disabled
    at.button(key="run_cohort").click().run()
    assert not at.exception, at.exception
    want = parse_query(query, handle.engine.contexts.red_flags)
    got = plans[-1]
    assert (got.patients, got.analysis, got.instruments, got.visit_filter, got.statistic) == (
        want.patients,
        want.analysis,
        want.instruments,
        want.visit_filter,
        f"item:{concept}",
    )
    result = handle.engine.run(got)
    assert result.cohort["statistic"] == "item"
    texts = _texts(at)
    assert "at the latest assessment that scored" in texts
    listed = {r["patient"] for r in result.cohort["ranking"]}
    if listed:  # the ranking table lists them, with their items
        ranking = [d.value for d in at.dataframe if "item" in map(str, d.value.columns)]
        assert ranking and set(ranking[0]["patient"]) == listed
    else:  # nobody at or above zero now: the patients flagged earlier are named
        assert "at or above 2 earlier, zero now" in texts


def test_ask_in_words_selects_the_item_question(app, handle):
    at = app.run()
    at.switch_page("views/cohort.py").run()
    at.text_input(key="ask_cohort").set_value("Who has hallucinations now?").run()
    at.button(key="parse_cohort").click().run()
    assert not at.exception, at.exception
    assert at.selectbox(key="item_concept").value == "hallucinations"


def test_patient_page_shows_the_digest_then_the_details_in_expanders(app, handle):
    """The digest on top (the summary box), each details section in its own expander."""
    at = app.run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    from dashboard import session

    results = at.session_state[session.RESULTS]
    result = results[at.session_state[session.CURRENT]]
    assert result.digest and result.summary.startswith(result.digest)
    labels = [e.label for e in at.expander]
    heads = [h for h, _ in result.sections]
    assert heads and heads[0] == "Course of each part"
    assert [x for x in labels if x in heads] == heads  # one expander per section, in order
    shown = [m.value for m in at.markdown] + h.html_texts(at)
    assert any(t.startswith(f"Patient {result.plan.patients[0]}: ") for t in shown)
