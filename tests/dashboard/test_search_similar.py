"""Search page and the Patient page's similar-patients section (AppTest, in-memory KB), and the
pure overlay figure builder."""

from __future__ import annotations

import base64
import json

import numpy as np

from dashboard.similar_chart import similar_trajectories_figure


def _arr(v):
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
    return list(v)


def _text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [s.value for s in at.subheader]
    parts += [i.value for i in at.info] + [e.value for e in at.error]
    return "\n".join(parts)


def test_overlay_figure_is_pure_and_aligned_at_months():
    rows = [
        {
            "patient": 3,
            "months": 0.0,
            "date": "2021-01-10",
            "visit": 1,
            "domain": "motor",
            "score": 20,
        },
        {
            "patient": 3,
            "months": 3.0,
            "date": "2021-04-12",
            "visit": 2,
            "domain": "motor",
            "score": 26,
        },
        {
            "patient": 8,
            "months": 0.0,
            "date": "2021-02-01",
            "visit": 1,
            "domain": "motor",
            "score": 35,
        },
        {
            "patient": 8,
            "months": 3.0,
            "date": "2021-05-03",
            "visit": 2,
            "domain": "adl",
            "score": 15,
        },
    ]
    fig = similar_trajectories_figure(rows, 3, "motor", [8])
    assert [t.name for t in fig.data] == ["Patient 3 (this patient)", "Patient 8 (#1)"]
    assert list(fig.data[0].x) == [0.0, 3.0] and list(fig.data[0].y) == [20, 26]
    assert list(fig.data[1].y) == [35]  # only the motor row of patient 8
    assert fig.data[0].line.width > fig.data[1].line.width
    assert "Months since" in fig.layout.xaxis.title.text


def test_search_page_finds_hits_with_reasons_and_opens_the_patient(app, handle):
    at = app.run()
    at.switch_page("views/search.py").run()
    assert not at.exception, at.exception
    at.text_input(key="search_text").set_value("motor").run()
    assert not at.exception, at.exception
    text = _text(at)
    assert "session(s)" in text and "Why:" in text and "dense #" in text
    hits = at.dataframe[0].value
    assert {"patient", "date", "instrument", "relevance", "why", "doc_id"} <= set(hits.columns)
    first = hits.iloc[0]
    at.button(key="open_1").click().run()
    assert not at.exception, at.exception
    # the Patient page got the hit's session as a single-session plan
    assert at.selectbox(key="patient").value == int(first["patient"])
    assert at.radio(key="analysis").value == "single_session"
    assert f"patient {int(first['patient'])}, visit" in _text(at)


def test_search_hit_opens_the_provenance_of_its_session(app, handle):
    at = app.run()
    at.switch_page("views/search.py").run()
    at.text_input(key="search_text").set_value("motor").run()
    first = at.dataframe[0].value.iloc[0]
    at.button(key="prov_1").click().run()
    assert not at.exception, at.exception
    assert [h.value for h in at.header] == ["Provenance"]
    plan = json.loads(at.json[0].value)
    assert plan["patients"] == [int(first["patient"])] and plan["analysis"] == "single_session"
    assert plan["visit_filter"].startswith("visit_")
    # the fact rows behind the numbers are that session's document
    assert any(first["doc_id"] in d.value.to_csv() for d in at.dataframe)


def test_search_page_filters_and_errors(app, handle):
    at = app.run()
    at.switch_page("views/search.py").run()
    at.text_input(key="search_text").set_value("motor").run()
    at.multiselect(key="search_patients").set_value([12]).run()
    hits = at.dataframe[0].value
    assert set(hits["patient"]) == {12}
    at.text_input(key="search_item").set_value("NOT_AN_ITEM").run()
    assert "unknown item" in _text(at)


def test_patient_page_shows_similar_patients_as_descriptive(app, handle):
    at = app.run()
    at.selectbox(key="patient").set_value(8).run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    text = _text(at)
    assert "Similar patients" in text and "not a prognosis" in text
    table = next(d.value for d in at.dataframe if "distance" in d.value.columns)
    assert 8 not in set(table["patient"]) and len(table) == 2  # the other two patients
    spec = next(
        json.loads(c.proto.spec) for c in at.get("plotly_chart") if "similar_chart" in c.proto.id
    )
    names = [t["name"] for t in spec["data"]]
    assert names[0] == "Patient 8 (this patient)"
    assert _arr(spec["data"][0]["x"])[0] == 0.0
