"""The engine's facts-backend prose (the guard's fallback) must pass the claim checker with claim
accuracy 1.000: every narrative and the final summary, for every analysis type, on the synthetic
cohort and on the MA-RAG study data."""

from __future__ import annotations

import pytest

from engine.config import Config
from engine.eval.harness import default_marag_dir, open_dataset
from engine.grounding.guard import check_numbers
from engine.pipeline import Engine
from engine.types import Plan

COHORT_QUERIES = (
    "Which patient has the highest UPDRS score?",
    "lowest motor score",
    "average ADL",
    "who progressed fastest on motor",
    "most stable non-motor",
    "most improved quality of life",
)


def plans(pids: list[int]) -> list[Plan]:
    out: list[Plan] = []
    for p in pids[:4]:
        out += [
            Plan((p,), "trajectory"),
            Plan((p,), "single_session", visit_filter="baseline"),
            Plan((p,), "single_session", visit_filter="latest_visit"),
            Plan((p,), "trajectory", ("updrs",), "first_2_visits"),
        ]
    out += [
        Plan(tuple(pids[:2]), "comparison"),
        Plan(tuple(pids[2:5]), "comparison", ("updrs",)),
        Plan(tuple(pids[:2]), "comparison", visit_filter="baseline_vs_latest"),
    ]
    out += [Plan((), "cohort", query=q) for q in COHORT_QUERIES]
    return out


@pytest.mark.parametrize("dataset", ["synthetic", "marag"])
def test_facts_prose_has_claim_accuracy_one(dataset):
    if dataset == "marag" and not default_marag_dir().exists():
        pytest.skip(f"MA-RAG study data not found at {default_marag_dir()}")
    ds = open_dataset(dataset)
    eng = Engine(Config.load({}, env={}), ds.kb, None)
    for plan in plans(ds.kb.patient_ids()):
        r = eng.run(plan)
        for name, text in {**r.narratives, "summary": r.summary}.items():
            rec = check_numbers(text, r.ledger, r.plan.patients)
            assert rec["unsupported"] == [], (plan, name, rec["unsupported"][:3])
            assert rec["claim_accuracy"] == 1.0 and rec["hallucination_rate"] == 0.0
