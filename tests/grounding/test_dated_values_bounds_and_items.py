"""Constructions read since held-out v7 (docs/grounding.md), each on study patients other than
v7's (2, 3, 8, 20, 31), true and false: a bound whose quantifier names the patient ("at every one of
patient 8's MDS-UPDRS assessments"), read on the item the phrase names (Walking, not also Gait);
"rest tremor", the MDS-UPDRS name of the MA-RAG Resting tremor item; a value dated by the day
after it ("23 on 8 May 2021", "rated 1 at patient 3's assessment on 7 March 2020"), and the size
of a change whose first end is so dated; a list of days with the year at its end only ("(1
February and 4 April 2020)"); the ends of "from 3 to 7" at the one visit span stated before them; "baseline" as the
instrument's first session (DESIGN.md), for values and for "the baseline assessment on <day>";
bounds after a verb ("never rose above 2", "never fell below 3"), on every step ("never moved
more than 2 points from one assessment to the next") and on every change from baseline ("never
changed by a clinically meaningful amount from baseline"); "N for <item>" ("scored 2 for
handwriting and 3 for night-time sleep problems"); a part's score after its items ("giving a motor
examination score of 6") is the part's, not the running item's; the patients named right after a
bound ("... at every MDS-UPDRS assessment in both patient 3 and patient 8")."""

from __future__ import annotations

import pytest

from engine.check_command import check_text_against_plan


def passed(engine, query: str, text: str) -> bool:
    return check_text_against_plan(engine, query, text, coverage_min=0.0)["passed"]


P3, P8, P20 = "patient 3 trajectory", "patient 8 trajectory", "patient 20 trajectory"
P2, P31 = "patient 2 trajectory", "patient 31 trajectory"
CASES = [
    # walking (WALKING_PROB) 0, 0, 0 for patient 8; 0, 0, 1 for patient 3, whose gait is 0, 0, 0
    (P8, "Walking was scored 0 at every one of patient 8's MDS-UPDRS assessments.", True),
    (P3, "Walking was scored 0 at every one of patient 3's MDS-UPDRS assessments.", False),
    (P3, "Gait was rated 0 at each of patient 3's assessments.", True),
    (P20, "Gait was rated 1 at every one of patient 20's assessments.", False),
    # rest tremor = Resting tremor: patient 3 on 7 March 2020 resting 1, postural 0; patient 8 on
    # 16 November 2019 resting 0, postural 1
    (P3, "Rest tremor was rated 1 at patient 3's assessment on 7 March 2020.", True),
    (P3, "Rest tremor was rated 0 at patient 3's assessment on 7 March 2020.", False),
    (P8, "Rest tremor was rated 1 at patient 8's assessment on 16 November 2019.", False),
    (P8, "Rest tremor was rated 0 at patient 8's assessment on 16 November 2019.", True),
    # patient 20's totals 32, 44, 54 on 6 December 2019, 29 February 2020, 7 June 2020
    (
        P20,
        "Patient 20's MDS-UPDRS total went up by 22 points, from 32 on 6 December 2019 to 54 on "
        "7 June 2020.",
        True,
    ),
    (
        P20,
        "Patient 20's MDS-UPDRS total went up by 12 points, from 32 on 6 December 2019 to 44 on "
        "29 February 2020.",
        True,
    ),
    (
        P20,
        "Patient 20's MDS-UPDRS total went up by 22 points, from 32 on 6 December 2019 to 44 on "
        "7 June 2020.",
        False,
    ),
    (
        P20,
        "Patient 20's MDS-UPDRS total went up by 20 points, from 32 on 6 December 2019 to 54 on "
        "7 June 2020.",
        False,
    ),
    # patient 3's motor 2, 6, 6; patient 8's non-motor 17, 5, 4 (29 February 2020: visit 3)
    (
        P3,
        "Patient 3's motor score rose by 4 points, from 2 at baseline to 6 on 7 March 2020.",
        True,
    ),
    (
        P3,
        "Patient 3's motor score rose by 3 points, from 2 at baseline to 6 on 7 March 2020.",
        False,
    ),
    (P8, "Patient 8's non-motor score eased from 17 at baseline to 4 on 29 February 2020.", True),
    (
        P8,
        "Patient 8's non-motor score worsened from 17 at baseline to 4 on 29 February 2020.",
        False,
    ),
    (P8, "Patient 8's non-motor score eased from 17 at baseline to 5 on 29 February 2020.", False),
    # days listed with one year; patient 3's Part II 3, 2 and patient 8's 3, 5 at visits 2 and 3
    (
        P3,
        "Between visits 2 and 3 (31 January and 7 March 2020), patient 3's Part II fell from 3 to 2.",
        True,
    ),
    (
        P3,
        "Between visits 2 and 3 (31 January and 7 March 2020), patient 3's Part II fell from 3 to 1.",
        False,
    ),
    (
        P3,
        "Between visits 2 and 3 (30 January and 7 March 2020), patient 3's Part II fell from 3 to 2.",
        False,
    ),
    (
        P8,
        "Between visits 2 and 3 (11 January and 29 February 2020), patient 8's Part II rose from 3 to 5.",
        True,
    ),
    (P8, "Between visits 2 and 3, patient 8's Part II rose from 3 to 4.", False),
    # patient 31: visit 1 (16 November 2019) is PDQ-8 only (6); the MDS-UPDRS starts at visit 2
    # (11 January 2020: total 10, Parts I-III 3, 3, 4; constipation 0), motor 12 at visit 3;
    # patient 2's PDQ-8 starts at visit 2 (2), the MDS-UPDRS at visit 1
    (
        P31,
        "Patient 31's baseline MDS-UPDRS total was 10, made up of 3 on Part I, 3 on Part II "
        "and 4 on Part III.",
        True,
    ),
    (P31, "Patient 31's baseline MDS-UPDRS total was 19.", False),
    (P31, "Patient 31's baseline PDQ-8 total was 6.", True),
    (P2, "Patient 2's baseline PDQ-8 total was 2.", True),
    (P2, "Patient 2's baseline PDQ-8 total was 3.", False),
    (
        P31,
        "At the baseline assessment on 11 January 2020, patient 31 had constipation rated 0.",
        True,
    ),
    (
        P31,
        "At the baseline assessment on 16 November 2019, patient 31 had constipation rated 0.",
        False,
    ),
    (
        P31,
        "At the baseline assessment on 11 January 2020, patient 31 had constipation rated 1.",
        False,
    ),
    (P31, "Patient 31's motor score rose from 4 at baseline to 12 at visit 3.", True),
    (P31, "Patient 31's motor score rose from 3 at baseline to 12 at visit 3.", False),
    # patient 3's Part II 5, 3, 2 and PDQ-8 12, 6, 1; patient 8's Part II 3, 3, 5 (MCID 2.51:
    # stable), non-motor 17, 5, 4 (improved), PDQ-8 9, 2, 4
    (
        P3,
        "Patient 3's Part II score never moved more than 2 points from one assessment to the next.",
        True,
    ),
    (
        P3,
        "Patient 3's Part II score never moved more than 1 point from one assessment to the next.",
        False,
    ),
    (
        P8,
        "Patient 8's Part II score never changed by a clinically meaningful amount from baseline.",
        True,
    ),
    (
        P8,
        "Patient 8's non-motor score never changed by a clinically meaningful amount from baseline.",
        False,
    ),
    (P8, "Patient 8's PDQ-8 total never rose above 9.", True),
    (P8, "Patient 8's PDQ-8 total never rose above 8.", False),
    (P8, "Patient 8's PDQ-8 total never fell below 2.", True),
    (P8, "Patient 8's PDQ-8 total never fell below 3.", False),
    (P3, "Patient 3's PDQ-8 total never rose above 12 during follow-up.", True),
    (P3, "Patient 3's PDQ-8 total never rose above 11 during follow-up.", False),
    # patient 20 on 29 February 2020: handwriting 2, sleep problems 3; patient 3 on 7 March 2020:
    # handwriting 1, sleep problems 0 (the MDS-UPDRS name "night-time sleep problems")
    (
        P20,
        "On 29 February 2020 patient 20 scored 2 for handwriting and 3 for night-time sleep problems.",
        True,
    ),
    (
        P20,
        "On 29 February 2020 patient 20 scored 2 for handwriting and 2 for night-time sleep problems.",
        False,
    ),
    (
        P3,
        "On 7 March 2020 patient 3 scored 1 for handwriting and 0 for night-time sleep problems.",
        True,
    ),
    (
        P3,
        "On 7 March 2020 patient 3 scored 1 for handwriting and 1 for night-time sleep problems.",
        False,
    ),
    # patient 3 on 7 March 2020: resting tremor 1, postural 0, motor 6; patient 20 on 29 February
    # 2020: resting 1, postural 0, motor 10
    (
        P3,
        "On 7 March 2020 patient 3 had rest tremor rated 1 and postural tremor 0, giving a motor examination score of 6.",
        True,
    ),
    (
        P3,
        "On 7 March 2020 patient 3 had rest tremor rated 1 and postural tremor 0, giving a motor examination score of 0.",
        False,
    ),
    (
        P20,
        "On 29 February 2020 patient 20 had rest tremor rated 1 and postural tremor 0, giving a motor score of 10.",
        True,
    ),
    (
        P20,
        "On 29 February 2020 patient 20 had rest tremor rated 1 and postural tremor 0, giving a motor score of 0.",
        False,
    ),
    # hallucinations 0, 0, 0 for patients 3 and 8; 1, 1, 1 for patient 20
    (
        "compare patients 3 and 8",
        "Hallucinations and psychosis were scored 0 at every MDS-UPDRS assessment in both patient 3 and patient 8.",
        True,
    ),
    (
        "compare patients 3 and 20",
        "Hallucinations and psychosis were scored 0 at every MDS-UPDRS assessment in both patient 3 and patient 20.",
        False,
    ),
]


@pytest.mark.parametrize(("query", "text", "true"), CASES)
def test_reading(engine, query, text, true):
    assert passed(engine, query, text) is true
