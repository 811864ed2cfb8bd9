"""AppTest tests of every page: smoke (with a fake LLM and with the facts backend) and
interactions (run a patient, compare two, cohort, provenance, ask in words, deep links).

The engine is the real `engine.pipeline.Engine` over an in-memory KB built from hand-made
sessions (tests/dashboard/helpers.py), injected by patching the engine factory (see conftest.py).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import numpy as np
import pytest

h = sys.modules["dash_helpers"]  # loaded by conftest.py

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
PAGES = [
    "views/patient.py",
    "views/compare.py",
    "views/cohort.py",
    "views/provenance.py",
    "views/data.py",
]


def _arr(v):
    """Plotly 7 specs encode arrays as {'dtype', 'bdata'}: decode to a list."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
    return list(v)


def _chart(at, key):
    for c in at.get("plotly_chart"):
        if c.proto.id.endswith(key) or key in c.proto.id:
            return json.loads(c.proto.spec)
    raise AssertionError(f"no chart {key}: {[c.proto.id for c in at.get('plotly_chart')]}")


def _df(at, *columns):
    """The first DataFrame on the page that has all of `columns` (st.dataframe has no key in
    AppTest's element tree)."""
    for d in at.dataframe:
        v = d.value
        if set(columns) <= set(map(str, v.columns)):
            return v
    raise AssertionError(
        f"no dataframe with {columns}: {[list(d.value.columns) for d in at.dataframe]}"
    )


def _text(at) -> str:
    parts = (
        [m.value for m in at.markdown] + [e.value for e in at.error] + [w.value for w in at.warning]
    )
    parts += h.html_texts(at)  # the summary, its cited sentences drawn as HTML
    parts += (
        [i.value for i in at.info] + [s.value for s in at.success] + [c.value for c in at.caption]
    )
    return "\n".join(parts)


def _count_runs(monkeypatch, handle):
    calls = []
    real = handle.engine.run

    def spy(plan, **kw):
        calls.append(plan)
        return real(plan, **kw)

    monkeypatch.setattr(handle.engine, "run", spy)
    return calls


@pytest.mark.parametrize("handle", ["facts", "fake"], indirect=True)
@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_without_error(app, page):
    at = app.run()
    if page != PAGES[0]:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    assert at.get("header")[0].value.split()[0] in {
        "Patient",
        "Compare",
        "Cohort",
        "Provenance",
        "Data",
    }


@pytest.mark.parametrize("handle", ["facts", "fake"], indirect=True)
def test_pick_patient_run_shows_summary_chart_and_flags(app, handle, monkeypatch):
    runs = _count_runs(monkeypatch, handle)
    at = app.run()
    assert not at.get("plotly_chart")  # nothing runs before Run
    at.selectbox(key="patient").set_value(8).run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    assert len(runs) == 1 and runs[0].patients == (8,) and runs[0].analysis == "trajectory"
    text = _text(at)
    # summary with its grounding badge
    assert "Grounding check passed" in text
    if handle.backend == "facts":
        assert "patient 8" in text.lower() and "35" in text and "40" in text
    else:
        assert "final narrative" in text and handle.engine.llm.calls  # the fake LLM wrote it
    # incongruence flags: patient 8, visit 3, non-motor 0 while motor 40 and ADL 18 (moderate)
    assert "2 incongruence flags" in text
    assert "Patient 8, visit 3" in text and "Non-motor **0** while Motor **40**" in text
    # the trajectory chart shows the fact scores
    spec = _chart(at, "trajectory_chart")
    motor = [
        t
        for t in spec["data"]
        if t.get("meta", {}).get("domain") == "motor" and "patient" in t["meta"]
    ]
    assert _arr(motor[0]["y"]) == [35, 36, 40]


def test_widget_change_without_new_plan_does_not_run_again(app, handle, monkeypatch):
    runs = _count_runs(monkeypatch, handle)
    at = app.run()
    at.button(key="run_patient").click().run()
    assert len(runs) == 1
    at.toggle(key="show_bands").set_value(False).run()
    at.toggle(key="show_mcid").set_value(False).run()
    assert len(runs) == 1  # re-rendered from the stored result
    assert "Grounding check passed" in _text(at)
    # a different plan has no stored result: nothing shown until Run
    at.selectbox(key="patient").set_value(12).run()
    assert len(runs) == 1 and not at.get("plotly_chart")
    at.selectbox(key="patient").set_value(3).run()  # back to the stored plan: shown again, no run
    assert len(runs) == 1 and at.get("plotly_chart")


def test_compare_two_patients_table_b_rows_match_the_facts(app, handle, helpers):
    at = app.run()
    at.switch_page("views/compare.py").run()
    at.multiselect(key="patients").set_value([3, 8]).run()
    at.button(key="run_compare").click().run()
    assert not at.exception, at.exception
    df = _df(at, "patient", "visit", "domain", "change")
    facts = {(f.patient, f.visit, f.domain): f.score for f in helpers.facts((3, 8))}
    assert len(df) == len(facts)
    for r in df.itertuples():
        assert facts[(r.patient, r.visit, r.domain)] == r.score
    motor3 = df[(df.patient == 3) & (df.domain == "motor")].sort_values("visit")
    assert list(motor3.change) == ["baseline", "worsened", "improved", "stable"]
    assert list(motor3.delta) == ["", "+6", "-5", "+1"]  # as shown: signed, blank at baseline
    assert "Table B" in [s.value for s in at.subheader]
    spec = _chart(at, "trajectory_chart")
    pats = {t["meta"]["patient"] for t in spec["data"] if "patient" in t.get("meta", {})}
    assert pats == {3, 8}
    at.toggle(key="side_by_side").set_value(True).run()
    assert len(at.get("plotly_chart")) == 2


def test_compare_needs_two_patients(app, handle):
    at = app.run()
    at.switch_page("views/compare.py").run()
    at.multiselect(key="patients").set_value([3]).run()
    assert "at least two patients" in _text(at)
    assert at.button(key="run_compare").disabled
    assert not at.get("plotly_chart")


def test_cohort_ranking_and_highlighted_slope(app, handle, monkeypatch):
    runs = _count_runs(monkeypatch, handle)
    at = app.run()
    at.switch_page("views/cohort.py").run()
    at.selectbox(key="question").set_value(
        "Which patient's motor score is worsening fastest?"
    ).run()
    at.button(key="run_cohort").click().run()
    assert not at.exception, at.exception
    ranking = _df(at, "rank", "patient", "value")
    assert list(ranking.patient)[0] == 8 and list(ranking.value)[0] == pytest.approx(2.5)
    assert any("Ranking rule: Least-squares slope" in c.value for c in at.caption)
    # any patient of the result can be highlighted, not only the top of the ranking
    assert at.selectbox(key="highlight").options == [str(p) for p in sorted(ranking.patient)]
    at.selectbox(key="highlight").set_value(3).run()
    assert len(runs) == 1  # highlighting re-renders without a run
    spec = _chart(at, "slope_chart")
    (hl,) = [t for t in spec["data"] if t.get("meta", {}).get("highlight") == 3]
    assert _arr(hl["x"])[list(hl["y"]).index("Motor")] == pytest.approx(0.1)


def test_provenance_links_numbers_to_facts_and_kb_documents(app, handle):
    at = app.run()
    at.switch_page("views/provenance.py").run()
    assert "No result yet" in _text(at)
    at.switch_page("views/patient.py").run()
    at.button(key="run_patient").click().run()
    at.switch_page("views/provenance.py").run()
    assert not at.exception, at.exception
    links = _df(at, "#", "number", "supported")
    assert len(links) > 10 and links.supported.all()
    # pick the first number that is a motor score and check its document text is shown
    sel = at.selectbox(key="trace_number")
    idx = next(
        i
        for i, r in enumerate(links.drop_duplicates("#").itertuples())
        if r.kind == "score" and r.domain == "motor"
    )
    sel.set_value(idx).run()
    docs = [t.value for t in at.text]
    assert any(d.startswith("Patient 3, Visit 1") for d in docs)
    assert any(c.value.startswith("[system]") for c in at.code)  # the final agent's prompt
    labels = [b.label for b in at.get("download_button")]
    assert "Fact table (CSV)" in labels


def test_ask_in_words_fills_the_plan_without_running(app, handle, monkeypatch):
    runs = _count_runs(monkeypatch, handle)
    at = app.run()
    at.text_input(key="ask_patient").input("compare patients 3 and 8 over the last 2 visits").run()
    at.button(key="parse_patient").click().run()
    assert not at.exception, at.exception
    assert at.multiselect(key="patients").value == [3, 8]  # switched to the Compare page
    assert (
        at.selectbox(key="visits").value == "last_N_visits" and at.number_input(key="n").value == 2
    )
    assert "Check the widgets, then press" in _text(at) and not runs
    at.button(key="run_compare").click().run()
    assert runs[0].patients == (3, 8) and runs[0].visit_filter == "last_2_visits"


def test_deep_link_reproduces_a_view(app, handle):
    app.query_params["patient"] = "12"
    app.query_params["instruments"] = "MDS-UPDRS"
    app.query_params["run"] = "1"
    at = app.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="patient").value == 12
    assert at.multiselect(key="instruments").value == ["updrs"]
    spec = _chart(at, "trajectory_chart")
    doms = {t["meta"]["domain"] for t in spec["data"] if "patient" in t.get("meta", {})}
    assert doms == {"motor", "adl", "nonmotor"}


def test_missing_kb_points_to_the_data_page(monkeypatch, tmp_path):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MARAG_KB_DIR", str(tmp_path / "nokb"))
    monkeypatch.setenv("MARAG_LLM", "facts")
    st.cache_resource.clear()
    at = AppTest.from_file(str(APP), default_timeout=20).run()
    assert not at.exception, at.exception
    assert "There is no knowledge base" in _text(at) and "Data" in _text(at)
