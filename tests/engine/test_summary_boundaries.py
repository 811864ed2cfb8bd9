"""Decision-support boundaries and left-out sessions, on the real MA-RAG study data.

No rationale in the summary: no prognosis ("predicts mortality"), cause ("drug-induced"),
treatment prompt ("undertreated") or stage inferred from one item, in either writer (the
rationale stays in the flag rows: the dashboard's flag detail and provenance). A session left out
at ingest is stated with its scores and reason, its numbers are ledger values of the "excluded"
statements, and the digest says when it would change a part's direction (the MCID rule).
"""

from __future__ import annotations

import csv
from pathlib import Path

import marag_engine_fixtures as fx
import pytest

from engine.clinical.ledger import excluded_values
from engine.config import REPO_ROOT
from engine.grounding.guard import check_numbers
from engine.pipeline import Engine
from kb_store.documents import build_documents
from kb_store.profiles import load_profile
from kb_store.reader import InMemoryKB

DATA = Path(REPO_ROOT).parent / "shared" / "data" / "ma-rag"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"MA-RAG study data not found at {DATA}")

BOUNDARY_WORDS = ("mortality", "drug-induced", "undertreated", "hoehn", "stage")


@pytest.fixture(scope="module")
def ingest():
    from kb_store.exclusions import excluded_from_ingest
    from kb_store.ingest import load_sources

    res = load_sources([DATA])
    return res, excluded_from_ingest(res, [DATA])


@pytest.fixture(scope="module")
def engine(ingest):
    res, excluded = ingest
    return Engine(fx.cfg(), InMemoryKB(build_documents(res.sessions), excluded), None, fx.CONTEXTS)


def test_no_rationale_or_stage_in_any_study_summary(ingest, engine):
    res, _ = ingest
    patients = sorted({s.proj_id for s in res.sessions if s.instrument == "updrs"})
    assert len(patients) == 46
    hits = {w: [] for w in BOUNDARY_WORDS}
    flagged = 0
    for p in patients:
        r = engine.ask(f"Show me the trajectory of proj id {p}.")
        flagged += bool((r.flags or {}).get("red_flags"))
        for text in (r.summary, r.summary_dense):
            for w in BOUNDARY_WORDS:
                if w in text.lower():
                    hits[w].append(p)
        # the flag rows still carry the rule's rationale and source (dashboard, provenance)
        assert all(x.get("why") and x.get("source") for x in (r.flags or {}).get("red_flags", []))
    assert hits == {w: [] for w in BOUNDARY_WORDS}
    assert flagged >= 20  # the check ran over texts that have red flags


def _raw_scores(patient: int, date_cell: str) -> dict[str, float]:
    """Part sums of the raw study row (read here with csv, independently of the ingest)."""
    prof = load_profile("marag-updrs44")
    with (DATA / "UPDRS_one2one_summaries.csv").open(newline="", encoding="utf-8-sig") as fh:
        rows = [
            r
            for r in csv.DictReader(fh)
            if r["PROJ_ID"].strip() == str(patient) and r["SESSION_DATE"].startswith(date_cell)
        ]
    (row,) = rows
    out = {}
    for dom in prof.domains:
        codes = [i.code for i in prof.items_of(dom)]
        out[dom] = float(sum(float(row[c]) for c in codes))
    return out


@pytest.mark.parametrize(
    ("patient", "date_cell", "iso", "reason"),
    [
        (
            45,
            "2000/05/04",
            "2000-05-04",
            "as a date outlier (years from the patient's other sessions)",
        ),
        (50, "1954/07/04", "1954-07-04", "for an implausible date"),
    ],
)
def test_left_out_session_scores_reason_and_direction(
    engine, ingest, patient, date_cell, iso, reason
):
    _, excluded = ingest
    (ex,) = [e for e in excluded if e["patient"] == patient]
    assert ex["scores"] == _raw_scores(patient, date_cell)
    # ledger: one score value per part, no visit, the row as source, the parsed date
    vals = [v for v in excluded_values([ex]) if v.kind == "score"]
    assert {v.domain: v.value for v in vals} == ex["scores"]
    assert all(v.visit is None and v.date == iso for v in vals)
    assert {v.source for v in vals} == {f"{ex['file']}:{ex['row']}"}
    assert all(v.label == f"score of a session left out at ingest ({ex['rule']})" for v in vals)
    r = engine.ask(f"Show me the trajectory of proj id {patient}.")
    digest = r.summary.split("\n\n")[0]
    sc = ex["scores"]
    said = (
        f"a UPDRS session of {iso} left out {reason}: motor {sc['motor']:g}, "
        f"ADL {sc['adl']:g}, non-motor {sc['nonmotor']:g}; with it, "
    )
    assert said in digest and date_cell not in r.summary
    assert "would read better beyond the reference MCID instead of" in digest
    assert check_numbers(r.summary, r.ledger, r.plan.patients)["unsupported"] == []
    assert {v.domain: v.value for v in r.ledger if v.kind == "score" and v.visit is None} == sc


def test_left_out_session_of_a_patient_without_direction_change(engine, ingest):
    """Patient 13's duplicate PDQ-8 session: its score and reason, no direction clause."""
    r = engine.ask("Show me the trajectory of proj id 13.")
    digest = r.summary.split("\n\n")[0]
    assert "a PDQ-8 session of 2021-01-23 left out as a duplicate: quality of life" in digest
    assert "with it," not in digest
