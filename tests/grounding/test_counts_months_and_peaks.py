"""The constructions of held-out v4 (docs/grounding.md), on other MA-RAG patients and measures
than that set's: counts of one instrument's assessments and the months of their first and last
assessment, the visit or month a series first reached a value, the MCID named with its direction
before its value, bounds after an instrument ("scored 1 on the MDS-UPDRS at every assessment"),
over "every subsequent assessment" and "throughout", Part I's own name, and a superlative within
each patient's own series ("their highest", "its highest value"). Each true sentence passes and
its false version is contradicted."""

from __future__ import annotations

import pytest

from engine.check_command import check_text_against_plan

# patient 40: visits 1-11, 2019-12-11 to 2021-05-08; MDS-UPDRS at visits 1, 2, 3, 4, 6, 8, 10,
# 11 (8 assessments, last May 2021), PDQ-8 at visits 1, 2, 4, 5, 7, 9 (6 questionnaires, last
# 2021-03-17). Motor 12 15 10 6 14 13 14 12, non-motor 8 9 12 8 4 5 6 11, PDQ-8 total 1 4 1 1 2 1
# (Summary Index 3.12 12.5 3.12 3.12 6.25 3.12); bradykinesia 1 throughout, hallucinations 1
# except 0 at visit 6, daytime sleepiness 1, then 2 at visits 2-10, 4 at visit 11 (2021-05-08).
# Patient 12 (visits 1-4): motor 5 10 7 9, non-motor 17 13 13 15.
P40, P40_12 = "patient 40 trajectory", "compare patients 40 and 12"

CASES = [
    # a count of one instrument's assessments, and the months of its first and last one
    (
        P40,
        "Patient 40 completed 6 PDQ-8 questionnaires between December 2019 and March 2021.",
        True,
    ),
    (
        P40,
        "Patient 40 completed 7 PDQ-8 questionnaires between December 2019 and March 2021.",
        False,
    ),
    (P40, "Patient 40 completed 6 PDQ-8 questionnaires between December 2019 and May 2021.", False),
    (P40, "Patient 40 contributed 8 MDS-UPDRS assessments.", True),
    (P40, "Patient 40 contributed 6 MDS-UPDRS assessments.", False),
    (P40, "Patient 40 was followed over 11 visits from December 2019 to May 2021.", True),
    # an instrument label before the count, as the facts text frames each instrument (patient 1:
    # UPDRS visits 1-5, 2020-01-17 to 2020-10-05; PDQ-8 visits 1, 2, 3, 5, 6; 6 visits in all)
    ("patient 1 trajectory", "UPDRS: 5 assessments from 2020-01-17 to 2020-10-05.", True),
    ("patient 1 trajectory", "UPDRS: 6 assessments from 2020-01-17 to 2020-10-05.", False),
    ("patient 1 trajectory", "UPDRS: 5 assessments from 2020-01-17 to 2020-11-10.", False),
    ("patient 1 trajectory", "PDQ-8: 5 assessments from 2020-01-17 to 2020-11-10.", True),
    ("patient 1 trajectory", "PDQ-8: 6 assessments from 2020-01-17 to 2020-11-10.", False),
    (P40, "Patient 40 was followed over 11 visits from December 2019 to March 2021.", False),
    (P40, "Patient 40 was followed over 11 visits from January 2020 to May 2021.", False),
    (
        P40,
        "The PDQ-8 total was at most 4 at all six questionnaires, from December 2019 to March 2021.",
        True,
    ),
    (
        P40,
        "The PDQ-8 total was at most 4 at all six questionnaires, from December 2019 to May 2021.",
        False,
    ),
    # the month or visit a series first reached a value
    (P40, "Daytime sleepiness first reached 4 in May 2021.", True),
    (P40, "Daytime sleepiness first reached 4 in March 2021.", False),
    (P40, "The non-motor score first reached 12 at visit 3.", True),
    (P40, "The non-motor score first reached 12 at visit 11.", False),
    # the MCID named with its direction before its value
    (
        P40,
        "The non-motor score rose by 7 points from visit 6 to visit 11 (4 to 11), beyond the "
        "reference MCID for worsening of 2.45 points.",
        True,
    ),
    (
        P40,
        "The non-motor score rose by 7 points from visit 6 to visit 11 (4 to 11), beyond the "
        "reference MCID for worsening of 2.51 points.",
        False,
    ),
    (
        P40,
        "The motor score fell by 6 points from visit 1 to visit 4, from 12 to 6, exceeding the "
        "reference MCID for improvement of 3.25 points.",
        True,
    ),
    (
        P40,
        "The motor score fell by 6 points from visit 1 to visit 4, from 12 to 6, exceeding the "
        "reference MCID for improvement of 4.63 points.",
        False,
    ),
    # Part I's own name is the non-motor part, not Part II
    (
        P40,
        "Non-motor experiences of daily living (Part I) rose from 4 at visit 6 to 11 at visit 11.",
        True,
    ),
    (
        P40,
        "Non-motor experiences of daily living (Part I) rose from 4 at visit 6 to 12 at visit 11.",
        False,
    ),
    # bounds after an instrument, over the subsequent assessments, and "throughout"
    (P40, "Bradykinesia was scored 1 on the MDS-UPDRS at every assessment.", True),
    (P40, "Hallucinations were scored 1 on the MDS-UPDRS at every assessment.", False),
    (P40, "Bradykinesia was 1 throughout.", True),
    (P40, "The PDQ-8 total was 1 throughout.", False),
    (
        P40,
        "Daytime sleepiness was rated 1 at visit 1 but scored 2 at every subsequent MDS-UPDRS "
        "assessment through visit 10.",
        True,
    ),
    (
        P40,
        "Daytime sleepiness was rated 1 at visit 1 but scored 2 at every subsequent MDS-UPDRS "
        "assessment through visit 11.",
        False,
    ),
    # a superlative within each patient's own series
    (
        P40_12,
        "Both patients had their highest motor score at visit 2: 15 for patient 40 and 10 for "
        "patient 12.",
        True,
    ),
    (
        P40_12,
        "Both patients had their highest non-motor score at visit 3: 12 for patient 40 and 13 "
        "for patient 12.",
        False,
    ),
    (P40, "The PDQ-8 Summary Index reached its highest value of 12.5 at visit 2.", True),
    (P40, "The PDQ-8 Summary Index reached its highest value of 6.25 at visit 7.", False),
]


@pytest.mark.parametrize(("query", "text", "ok"), CASES)
def test_true_passes_and_false_is_contradicted(engine, query, text, ok):
    rec = check_text_against_plan(engine, query, text, coverage_min=0.0)
    reasons = [r for s in rec["sentences"] for r in s["reasons"]]
    assert rec["passed"] is ok, reasons
    if not ok:  # contradicted by the facts, not left unread
        assert not any("cannot tell" in r or "unverifiable" in r for r in reasons), reasons


def test_month_reason_names_the_last_assessment(engine):
    text = "Patient 40 was followed over 11 visits from December 2019 to March 2021."
    rec = check_text_against_plan(engine, P40, text, coverage_min=0.0)
    reasons = [r for s in rec["sentences"] for r in s["reasons"]]
    assert any("visit 11 (2021-05-08)" in r for r in reasons), reasons


def test_first_reached_reason_names_the_visit(engine):
    text = "Daytime sleepiness first reached 4 in March 2021."
    rec = check_text_against_plan(engine, P40, text, coverage_min=0.0)
    reasons = [r for s in rec["sentences"] for r in s["reasons"]]
    assert any("at visit 11 (2021-05-08)" in r for r in reasons), reasons
