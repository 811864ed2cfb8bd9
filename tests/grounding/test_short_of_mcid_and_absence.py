"""Constructions read since held-out v5 (docs/grounding.md), each on patients other than v5's:
the size of a change written before its noun ("a 5-point rise") and an MCID named with its
direction before it ("the reference worsening MCID", "the 2.64-point improvement MCID"); absence
of a symptom named in another instrument's words, at one visit and "at any assessment"; the
months of an instrument's first or last assessment and of its span ("the MDS-UPDRS assessments
span ..."); one value said of several patients; the kind of a change's first end carried to its
second; "and was unchanged at V" over its own visits; a bare "total" after the PDQ-8 items."""

from __future__ import annotations

import pytest

from engine.check_command import check_text_against_plan


def passed(engine, query: str, text: str) -> bool:
    return check_text_against_plan(engine, query, text, coverage_min=0.0)["passed"]


P13 = "patient 13 trajectory"
CASES = [
    # a change's size before its noun, and the MCID named with its direction before it
    (
        P13,
        "The motor score rose from 4 at visit 2 to 9 at visit 4, a 5-point rise beyond the "
        "reference worsening MCID of 4.63 points.",
        True,
    ),
    (
        P13,
        "The motor score rose from 4 at visit 2 to 8 at visit 3, a 4-point rise beyond the "
        "reference worsening MCID of 4.63 points.",
        False,
    ),
    (
        P13,
        "The motor score rose from 4 at visit 2 to 9 at visit 4; this 4-point worsening exceeds "
        "the reference MCID of 4.63 points.",
        False,
    ),
    (
        P13,
        "The non-motor score moved from 6 at visit 6 to 4 at visit 7; a 2-point fall is short of "
        "the 2.64-point improvement MCID.",
        True,
    ),
    (
        P13,
        "The motor score moved from 15 at visit 7 to 11 at visit 8; a 4-point fall is short of "
        "the 3.25-point improvement MCID.",
        False,
    ),
    (
        P13,
        "The non-motor score moved from 6 at visit 6 to 4 at visit 7; a 2-point fall is short of "
        "the 2.45-point improvement MCID.",
        False,
    ),
    # absence, in the MDS-UPDRS item's words, of the facts' MA-RAG items
    (P13, "Hallucinations and psychosis were not recorded at any MDS-UPDRS assessment.", True),
    ("patient 4 trajectory", "Hallucinations and psychosis were absent throughout.", False),
    ("patient 4 trajectory", "Hallucinations and psychosis were absent at visit 1.", True),
    (P13, "Saliva and drooling was absent at visit 7.", True),
    (P13, "Saliva and drooling was absent at visit 2.", False),
    # the months of an instrument's span and of its first or last assessment
    (P13, "Patient 13's MDS-UPDRS assessments span January 2020 to May 2021.", True),
    (P13, "Patient 13's MDS-UPDRS assessments span November 2019 to May 2021.", False),
    (P13, "Patient 13's PDQ-8 questionnaires span November 2019 to January 2021.", True),
    (P13, "The last MDS-UPDRS assessment, in May 2021, gave a UPDRS total of 23.", True),
    (P13, "The last MDS-UPDRS assessment, in March 2021, gave a UPDRS total of 23.", False),
    (P13, "The first MDS-UPDRS assessment, in November 2019, gave a motor score of 4.", False),
    # one value said of several patients
    (
        "compare patients 10 and 59",
        "At visit 2 the ADL score was 2 in both patient 10 and patient 59.",
        True,
    ),
    (
        "compare patients 10 and 59",
        "At visit 2 the motor score was 4 in both patient 59 and patient 10.",
        False,
    ),
    (
        "compare patients 10 and 59",
        "At visit 2 the motor score was 4 in patients 59 and 10.",
        False,
    ),
    (
        "compare patients 10 and 59",
        "At visit 2 the motor score was 4 in patient 59 and 3 in patient 10.",
        True,
    ),
    (
        "compare patients 10 and 59",
        "At visit 2 patients 59 and 10 both scored 4 on the motor examination.",
        False,
    ),
    ("compare patients 10 and 59", "At visit 2 both patients scored 2 on ADL.", True),
    (
        "compare patients 10 and 59",
        "At visit 2 both patients scored 4 on the motor examination.",
        False,
    ),
    # "endorsed none of the PDQ-8 items": its total is 0 at that visit
    ("patient 24 trajectory", "At visit 2 patient 24 endorsed none of the PDQ-8 items.", True),
    (P13, "At visit 2 patient 13 endorsed none of the PDQ-8 items.", False),
    (P13, "At visit 2 patient 13 endorsed none of the items.", False),
    # the Summary Index kind carried from a change's first end to its second
    (
        "patient 10 trajectory",
        "The PDQ-8 Summary Index fell from 25.0 at visit 1 to 21.9 at visit 2.",
        True,
    ),
    (
        "patient 10 trajectory",
        "The PDQ-8 Summary Index fell from 25.0 at visit 1 to 18.8 at visit 2.",
        False,
    ),
    # "and was unchanged at V": from the previous visit to V
    (
        P13,
        "The ADL score fell from 4 at visit 6 to 2 at visit 7 and was unchanged at 2 at visit 8.",
        True,
    ),
    (
        P13,
        "The non-motor score fell from 6 at visit 6 to 4 at visit 7 and was unchanged at visit 8.",
        False,
    ),
    # a bare "total" after the PDQ-8 items is the PDQ-8 total
    (
        "patient 24 trajectory",
        "At visit 3 patient 24 endorsed none of the eight PDQ-8 items, giving a total of 0.",
        True,
    ),
    (
        P13,
        "At visit 2 patient 13 endorsed none of the eight PDQ-8 items, giving a total of 0.",
        False,
    ),
]


@pytest.mark.parametrize(("query", "text", "true"), CASES)
def test_sentence_verdicts(engine, query, text, true):
    assert passed(engine, query, text) is true
