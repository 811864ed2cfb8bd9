"""Retrieve node: exact fetch of the plan's patients, visit filters, fact table, ON-exam separation."""

from __future__ import annotations

import json

import marag_engine_fixtures as fx
import pytest

from engine.clinical.visit_filter import select_visits
from engine.retrieve import INTENT_MAP, NoFactsError, facts_from_doc, fetch_facts
from engine.types import Plan
from kb_store.documents import session_document


@pytest.mark.parametrize(
    ("vf", "visits", "kept", "noted"),
    [
        ("none", [1, 2, 3, 4], [1, 2, 3, 4], False),
        ("baseline", [1, 2, 3], [1], False),
        ("baseline", [2, 3], [], True),
        ("latest_visit", [1, 2, 3], [3], False),
        ("baseline_vs_latest", [1, 2, 3, 4], [1, 4], False),
        ("baseline_vs_latest", [1], [1], True),
        ("visit_2", [1, 2, 3], [2], False),
        ("visit_4", [1, 2, 3], [], True),
        ("first_2_visits", [1, 2, 3, 4], [1, 2], False),
        ("last_3_visits", [1, 2, 3, 4], [2, 3, 4], False),
        ("last_5_visits", [1, 2, 3], [1, 2, 3], True),
    ],
)
def test_select_visits(vf, visits, kept, noted):
    got, note = select_visits(visits, vf)
    assert got == kept
    assert (note is not None) == noted


def test_fact_table_from_metadata():
    s = fx.updrs_session(7, 2, motor=14, adl=8, nonmotor=5, pins={"NP3GAIT": 2.0})
    removed = s.items["NP3RIGN"]
    s.items["NP3RIGN"] = None  # one missing item: partial motor score, never imputed
    doc = session_document(s)
    facts = {f.domain: f for f in facts_from_doc(doc)}
    assert set(facts) == {"motor", "adl", "nonmotor"}
    m = facts["motor"]
    assert (m.patient, m.visit, m.date, m.instrument, m.doc_id) == (
        7,
        2,
        "2021-03-15",
        "updrs",
        "s-7-v2-updrs",
    )
    assert m.score == doc.metadata["score_motor"] == 14 - removed
    assert json.loads(doc.metadata["items_json"])["NP3RIGN"] is None
    assert m.missing == 1 and m.items["NP3RIGN"] is None and m.items["NP3GAIT"] == 2.0
    assert set(m.items) == {i.code for i in fx.UPDRS.items_of("motor")}
    assert facts["adl"].score == 8 and facts["nonmotor"].score == 5


def test_only_plan_patients_fetched_and_filtered():
    out = fetch_facts(Plan((1, 3), "comparison", ("updrs", "pdq8"), "visit_3"), fx.kb())
    assert out["intent"] == "comparison"
    assert {(f.patient, f.visit) for f in out["facts"]} == {(1, 3), (3, 3)}
    assert {f.domain for f in out["subsets"]["qol"]} == {"qol"}
    assert [f.score for f in out["subsets"]["motor"]] == [26, 36]


def test_missing_visit_is_noted_not_an_error():
    out = fetch_facts(Plan((1, 3), "comparison", ("updrs",), "visit_4"), fx.kb())
    assert {f.patient for f in out["facts"]} == {1}
    assert any("Patient 3: no visit 4" in n for n in out["notes"])
    with pytest.raises(NoFactsError, match="no facts remain"):
        fetch_facts(Plan((3,), "single_session", ("updrs",), "visit_4"), fx.kb())


def test_instrument_selection_and_intent_map():
    out = fetch_facts(Plan((2,), "single_session", ("pdq8",), "baseline"), fx.kb())
    assert [(f.domain, f.score) for f in out["facts"]] == [("qol", 15)]
    assert out["subsets"]["motor"] == [] and out["intent"] == "single_session"
    assert INTENT_MAP["single-session"] == "single_session"


def test_on_exam_kept_apart_and_noted():
    on = fx.updrs_session(1, 2, motor=12, adl=11, nonmotor=6, condition="ON")
    out = fetch_facts(Plan((1,), "trajectory", ("updrs",), "none"), fx.kb(extra=[on]))
    assert all(f.condition != "ON" for f in out["facts"])
    assert [f.score for f in out["subsets"]["motor"]] == [20, 22, 26, 30]
    assert {f.doc_id for f in out["on_facts"]} == {"s-1-v2-updrs-on"}
    assert any("ON-medication" in n for n in out["notes"])
