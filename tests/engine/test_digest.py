"""The digest a clinician reads in 30 seconds, on the real MA-RAG study data (../shared; skipped
where it is absent): first in every analysis, at most about 100 words, in the style guide's order,
carried in the result JSON, and not repeated by the details that follow it."""

from __future__ import annotations

import re
import statistics
from typing import Any

import pytest

from engine.types import Plan
from tools import golden_records


@pytest.fixture(scope="module")
def eng() -> Any:
    if not golden_records.STUDY.exists():
        pytest.skip("MA-RAG study data not in ../shared")
    return golden_records._engines()["marag"]


def _pdq8_patients(eng: Any) -> list[int]:
    return sorted({f.patient for f in eng.kb.facts() if f.domain == "qol"})  # type: ignore[attr-defined]


@pytest.mark.slow
def test_digest_word_counts_over_the_study_trajectories(eng: Any) -> None:
    """Median at most 100 and maximum at most 140 words over the 46 UPDRS trajectories; the
    UPDRS + PDQ-8 ones close to that."""
    ids = sorted(eng.kb.patient_ids())
    updrs = [len(eng.run(Plan([p], "trajectory", ["updrs"])).digest.split()) for p in ids]
    assert len(updrs) == 46
    assert statistics.median(updrs) <= 100 and max(updrs) <= 140, (
        statistics.median(updrs),
        max(updrs),
    )
    both = []
    for p in ids:
        r = eng.run(Plan([p], "trajectory", ["updrs", "pdq8"]))
        if any(c["instrument"] == "pdq8" for c in r.courses):
            both.append(len(r.digest.split()))
    assert len(both) == 43
    assert statistics.median(both) <= 100 and max(both) <= 150, (statistics.median(both), max(both))


def test_digest_opens_the_summary_in_the_style_guides_order(eng: Any) -> None:
    r = eng.run(Plan([23], "trajectory", ["updrs", "pdq8"]))
    d = r.digest
    assert r.summary.startswith(d) and r.to_json()["digest"] == d
    order = [
        d.index("Patient 23: UPDRS 5 assessments, Dec 2019 to Nov 2020"),  # who, how much data
        d.index("UPDRS total 11 to 39 (change +28)"),  # the headline course, total first
        d.index("motor 4 to 11, beyond the reference MCID (worse)"),  # each part, MCID verdict
        d.index("PDQ-8 score 4 to 8, higher (direction only)"),
        d.index("Now, ADL: falling 4"),  # what matters now
        d.index("At visit 5, without hallucinations"),  # pertinent negatives
    ]
    assert order == sorted(order)
    # the details follow under short headings, each a section of the result
    heads = [h for h, _ in r.sections]
    assert heads[:2] == ["Course of each part", "Item changes"] and "Flag history" in heads
    for h, paras in r.sections:
        assert f"{h}:" in r.summary or paras[0].startswith(f"{h}:"), h


def test_details_do_not_repeat_the_digest(eng: Any) -> None:
    r = eng.run(Plan([23], "trajectory", ["updrs", "pdq8"]))
    details = r.summary[len(r.digest) :]
    assert "assessments from" not in details  # the framing sentence is the digest's
    assert ", without " not in details  # the negatives too
    assert "items rated moderate or worse" not in details  # the digest names the 5 items
    # a flagged item's rise is said once, in its flag paragraph
    falling = [
        p
        for p in details.split("\n\n")
        if "falling" in p.lower() and not p.startswith("To monitor")
    ]
    assert len(falling) == 1 and "increased by 4 since visit 1" in falling[0]


def test_a_digest_in_every_analysis(eng: Any) -> None:
    single = eng.run(Plan([2], "single_session", ["updrs", "pdq8"], "latest_visit"))
    assert single.digest.startswith("Patient 2: UPDRS once, May 2021")
    assert "UPDRS total 2; non-motor 2 (mild); ADL 0 (normal)" in single.digest
    assert "At visit 3, without hallucinations" in single.digest  # negatives as trajectories
    comp = eng.run(Plan([1, 88], "comparison", ["updrs", "pdq8"]))
    assert comp.digest.startswith("Patient 1: ") and "\n\nPatient 88: " in comp.digest
    assert "UPDRS total 47 to 29 (parts partial, not read as a change)" in comp.digest
    cohort = eng.ask("Which patient has the highest total UPDRS burden?")
    assert cohort.digest.startswith("Cohort finding: patient ")
    assert cohort.summary.startswith(cohort.digest)
    for r in (single, comp, cohort):
        rec = r.verification["per_agent"]["final"]
        assert rec["checked_by"] == "lookup" and not rec["unsupported"]
        assert re.search(r"\bDetails:", r.summary)
