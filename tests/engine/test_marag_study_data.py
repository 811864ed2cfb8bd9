"""The engine on the real MA-RAG study files (marag-updrs44 + PDQ-8 profiles), facts backend.

Reads ../shared/data/ma-rag beside the repository (never copied into it); skipped when absent.
Checks the profile-specific handling: no MDS-UPDRS severity labels on the 44-item scale, MCIDs
marked as reference values, red flags mapped to the study's item codes, every number grounded.
"""

from __future__ import annotations

import re
from pathlib import Path

import marag_engine_fixtures as fx
import pytest

from engine.config import REPO_ROOT
from engine.grounding.guard import guard_text
from engine.pipeline import Engine
from kb_store.documents import build_documents
from kb_store.profiles import load_profile
from kb_store.reader import InMemoryKB

DATA = Path(REPO_ROOT).parent / "shared" / "data" / "ma-rag"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"MA-RAG study data not found at {DATA}")


@pytest.fixture(scope="module")
def engine():
    from kb_store.ingest import load_sources

    res = load_sources([DATA])
    return Engine(fx.cfg(), InMemoryKB(build_documents(res.sessions)), None, fx.CONTEXTS)


@pytest.mark.parametrize(
    "query",
    [
        "What is the baseline status of proj id 5?",
        "Show me the trajectory of proj id 5.",
        "Compare patients 3 and 8",
        "Which patient has the highest UPDRS score?",
        "Which patient is the most stable in motor?",
    ],
)
def test_study_queries_fully_grounded(engine, query):
    r = engine.ask(query)
    assert r.llm_calls == 0 and r.facts
    for name, text in dict(r.narratives, summary=r.summary).items():
        rec = guard_text(
            text, r.ledger, None, lambda t=text: t, max_rounds=0, plan_patients=r.plan.patients
        ).record
        assert rec["unsupported"] == [], (query, name, rec["unsupported"][:3])


def test_marag_profile_handling(engine):
    r = engine.ask("Show me the trajectory of proj id 5.")
    updrs = [f for f in r.facts if f.instrument == "updrs"]
    assert updrs and {f.profile for f in updrs} == {"marag-updrs44"}
    motor = r.narratives["motor"]
    assert "No published severity cut-offs apply to the motor domain" in motor
    assert "reference value borrowed from the MDS-UPDRS" in motor
    assert "(mild)" not in motor and "(moderate)" not in motor
    rows = engine.ask("Which patient has the highest UPDRS score?").flags["red_flags"]
    marag_codes = {i.code for i in load_profile("marag-updrs44").items} | {
        f"PDQ8_{i}" for i in range(1, 9)
    }
    assert rows and {x["item"] for x in rows} <= marag_codes
    # any item at 4 is a red flag; every other row meets its rule's threshold
    assert all(x["value"] >= x["threshold"] for x in rows)
    assert {"falls", "severe_item", "hallucinations_new_onset"} <= {x["rule"] for x in rows}


def test_first_and_last_visit_is_a_trajectory_of_two_assessments(engine):
    """ "Between the first and last visit" plans a trajectory over each instrument's first and
    latest assessment (patient 23: UPDRS at visits 1 and 5, PDQ-8 at visits 1 and 3)."""
    r = engine.ask("What changed for proj id 23 between the first and last visit?")
    assert (r.plan.patients, r.plan.analysis, r.plan.visit_filter) == (
        (23,),
        "trajectory",
        "baseline_vs_latest",
    )
    visits = {
        inst: sorted({f.visit for f in r.facts if f.instrument == inst})
        for inst in ("updrs", "pdq8")
    }
    assert visits == {"updrs": [1, 5], "pdq8": [1, 3]}
    assert set(r.narratives) >= {"motor", "adl", "nonmotor", "qol"} and r.summary.startswith(
        "Patient 23: UPDRS 2 assessments, Dec 2019 to Nov 2020; PDQ-8 2 assessments"
    )
    # the course of the total over those two assessments only
    assert re.search(r"went \d+ \(visit 1\), \d+ \(visit 5\) \(change [+-]?\d+\)", r.summary)
    assert r.verification["unsupported"] == []
