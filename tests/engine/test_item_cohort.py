"""Cohort questions over an item (engine.clinical.item_cohort): the planner's item concepts, the
answer on the MA-RAG study data (falls, hallucinations, any item at 4) and its ledger."""

from __future__ import annotations

from pathlib import Path

import marag_engine_fixtures as fx
import pytest

from engine.clinical import item_cohort
from engine.config import REPO_ROOT
from engine.pipeline import Engine
from engine.plan import parse_query
from engine.types import Plan
from kb_store.documents import build_documents
from kb_store.reader import InMemoryKB

DATA = Path(REPO_ROOT).parent / "shared" / "data" / "ma-rag"
RULES = fx.CONTEXTS.red_flags


@pytest.mark.parametrize(
    ("query", "statistic", "visit_filter"),
    [
        ("Which patients have falls?", "item:falls", "none"),
        ("Who has falls?", "item:falls", "none"),
        ("Which patients fell?", "item:falls", "none"),
        ("Who has hallucinations now?", "item:hallucinations", "none"),
        ("Which patients currently have hallucinations?", "item:hallucinations", "none"),
        ("Which patients have any item at 4?", "item:severe_item", "none"),
        ("Which patients have freezing of gait at baseline?", "item:freezing", "baseline"),
        # no item concept, or a ranking statistic named: the ranking as before
        ("Which patient has the highest UPDRS score?", "", "none"),
        ("Which patient has the worst tremor?", "", "none"),  # no red-flag rule for tremor
        ("Which patient's ADL score is worsening fastest?", "slope_visit", "none"),
        ("Which patients have any item at 3?", "", "none"),  # no rule over every item at 3
    ],
)
def test_planner_plans_item_questions(query, statistic, visit_filter):
    p = parse_query(query, RULES)
    assert (p.patients, p.analysis, p.statistic, p.visit_filter) == (
        (),
        "cohort",
        statistic,
        visit_filter,
    )
    assert Plan.from_dict(p.to_dict(), query) == p  # the plan's JSON round trip keeps it
    assert parse_query(query) == p  # default: the shipped contexts' rules


def test_item_statistic_is_validated():
    assert Plan((), "cohort", statistic="item:falls").statistic == "item:falls"
    with pytest.raises(ValueError, match="item:<concept>"):
        Plan((), "cohort", statistic="item:Falls!")
    with pytest.raises(ValueError, match="unknown item concept 'nope'"):
        item_cohort.concept_for("item:nope", RULES)


def test_concepts_are_the_red_flag_rules():
    concepts = item_cohort.item_concepts(RULES)
    assert concepts["falls"].codes == {"marag-updrs44": ("FALL_PROB",)}
    assert concepts["falls"].threshold == 2 and not concepts["falls"].group
    severe = concepts["severe_item"]
    assert severe.group and severe.wildcard and severe.threshold == 4
    assert "FALL_PROB" in severe.codes["marag-updrs44"] and "NP1HALL" in severe.codes["mds-updrs"]
    assert concepts["pdq8_high_impact"].group and not concepts["pdq8_high_impact"].wildcard


@pytest.fixture(scope="module")
def engine():
    if not DATA.is_dir():
        pytest.skip(f"MA-RAG study data not found at {DATA}")
    from kb_store.ingest import load_sources

    res = load_sources([DATA])
    return Engine(fx.cfg(), InMemoryKB(build_documents(res.sessions)), None, fx.CONTEXTS)


def test_which_patients_have_falls_on_the_study_data(engine):
    r = engine.ask("Which patients have falls?")
    c = r.cohort
    assert r.plan.statistic == "item:falls" and c["statistic"] == "item"
    assert c["item"]["counts"] == {
        "scored": 46,
        "listed": 12,
        "current": 4,
        "ever": 5,
        "earlier": 1,
    }
    top = c["ranking"][0]
    assert (
        (c["patient"], c["value"], c["visit"])
        == (23, 4.0, 5)
        == (
            top["patient"],
            top["value"],
            top["visit"],
        )
    )
    assert [r_["patient"] for r_ in c["ranking"] if r_["current"]] == [23, 53, 12, 47]
    assert [r_["patient"] for r_ in c["item"]["earlier"]] == [1]
    s = r.summary
    assert s.startswith(
        "Cohort finding: falling (red-flag threshold 2) at the latest assessment that scored it: "
        "rated above zero in 12 patients, at or above 2 (current) in 4 patients, of 46 patients "
        "scored on the item; at or above 2 at some assessment: 5 patients."
    )
    assert "Patient 23, falling item: 4 at visit 5 (2020-11-21); current (at or above 2)." in s
    assert (
        "Patient 4, falling item: 1 at visit 11 (2021-05-08); below the flag threshold now, "
        "never at or above 2." in s
    )
    assert (
        "Patient 1, falling item: 2 at visit 2 (2020-03-07), 0 at visit 5 (2020-10-05); "
        "at or above 2 earlier, zero now." in s
    )
    assert "rank 1" not in s and "UPDRS burden" not in s  # not the total-UPDRS ranking
    # every number stated is a ledger value of the answer: the item ratings, counts, threshold
    assert r.verification["unsupported"] == []
    items = {(v.patient, v.visit, v.item, v.value) for v in r.ledger if v.kind == "item"}
    assert {(23, 5, "FALL_PROB", 4.0), (1, 2, "FALL_PROB", 2.0), (1, 5, "FALL_PROB", 0.0)} <= items
    counts = {v.value for v in r.ledger if v.kind == "count" and v.source == "computed"}
    assert {46.0, 12.0, 4.0, 5.0} <= counts


def test_hallucinations_and_any_item_at_4_on_the_study_data(engine):
    r = engine.ask("Who has hallucinations now?")
    c = r.cohort
    assert c["item"]["counts"]["current"] == 2
    assert [x["patient"] for x in c["ranking"] if x["current"]] == [36, 88]
    assert "Patient 36, hallucinations item: 2 at visit 2 (2020-02-01); current" in r.summary
    r = engine.ask("Which patients have any item at 4?")
    c = r.cohort
    assert c["item"]["group"] and c["item"]["counts"]["listed"] == 7
    assert {x["patient"] for x in c["ranking"]} == {3, 23, 40, 49, 57, 60, 88}
    assert all(x["value"] == 4 for x in c["ranking"])
    assert "Patient 23, at visit 5 (2020-11-21): anxious mood item 4, falling item 4." in r.summary
    assert r.verification["unsupported"] == []
