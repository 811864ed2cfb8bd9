"""The constructions of held-out v3 (docs/grounding.md), on other MA-RAG patients and measures
than that set's: value lists across visit ranges, a value at the first N visits, the ends of a
change in parentheses, a carried Summary Index, stated and worded MCID claims about one change
(judged by the engine's one MCID rule), negated directions, bounds over a whole series, "did not
change ..., remaining at", and a comparison whose parts each name their patient after them. Each
true sentence passes and its false version is contradicted."""

from __future__ import annotations

import pytest

from engine.check_command import check_text_against_plan

# patient 23 (visits 1-5): motor 4 5 9 9 11, ADL 2 6 8 14 17, non-motor 5 8 11 11 11, PDQ-8 4 5 8
# (Summary Index 12.5 15.62 25.0, visits 1-3); items: daytime sleepiness 2 2 2 2 3, finger
# tapping 1 1 1 0 0, constipation 1 1 2 1 1, falling 0 0 0 0 4, pain 0 1 4 1 0, apathy and
# hallucinations 0 throughout, anxious mood 1 2 1 1 4. MCIDs: motor +4.63 / -3.25, ADL +2.51 /
# -3.05, non-motor +2.45 / -2.64.
# patients 3 and 8 (visits 1-3): ADL 5 3 2 and 3 3 5
P23, P38 = "patient 23 trajectory", "compare patients 3 and 8"

CASES = [
    # a list of values at a range or list of visits: each value at its visit in turn
    (P23, "The ADL score was 2, 6, 8, 14 and 17 at visits 1 to 5.", True),
    (P23, "The ADL score was 2, 6, 9, 14 and 17 at visits 1 to 5.", False),
    (P23, "The motor score was 5 and 9 at visits 2 and 3.", True),
    (P23, "The motor score was 5 and 8 at visits 2 and 3.", False),
    # one value at a range of visits, then another value at its own visit
    (P23, "Daytime sleepiness was rated 2 at visits 1 to 4 and 3 at visit 5.", True),
    (P23, "Daytime sleepiness was rated 2 at visits 1 to 4 and 4 at visit 5.", False),
    # a value at each of the first N visits
    (P23, "Finger tapping was rated 1 at each of the first three visits and 0 at visit 4.", True),
    (P23, "Finger tapping was rated 1 at each of the first four visits and 0 at visit 5.", False),
    # "again" between a value and its visit
    (
        P23,
        "Constipation was rated 1 at visits 1 and 2, 2 at visit 3, and 1 again at visit 4.",
        True,
    ),
    (
        P23,
        "Constipation was rated 1 at visits 1 and 2, 2 at visit 3, and 2 again at visit 4.",
        False,
    ),
    # the plural noun of a one-word gerund item ("Falling": falls)
    (P23, "Falls were rated 0 at visits 1 to 4 and 4 at visit 5.", True),
    (P23, "Falls were rated 0 at visits 1 to 4 and 3 at visit 5.", False),
    # the ends of a change in parentheses after its span; a stated MCID value
    (
        P23,
        "The ADL score worsened by 6 points from visit 3 to visit 4 (8 to 14), beyond the "
        "2.51-point MCID for worsening.",
        True,
    ),
    (
        P23,
        "The ADL score worsened by 6 points from visit 3 to visit 4 (8 to 15), beyond the "
        "2.51-point MCID for worsening.",
        False,
    ),
    (P23, "The motor score rose from 4 at visit 1 to 9 at visit 3, beyond the MCID of 4.63.", True),
    (
        P23,
        "The motor score rose from 5 at visit 2 to 9 at visit 3, larger than the 4.63-point MCID "
        "for worsening.",
        False,
    ),
    # MCID claims in words: the engine's one MCID rule decides
    (
        P23,
        "The non-motor score rose from 5 at visit 1 to 8 at visit 2, a worsening that exceeded "
        "the minimal clinically important difference.",
        True,
    ),
    (
        P23,
        "The motor score rose from 9 at visit 4 to 11 at visit 5, a worsening that exceeded the "
        "minimal clinically important difference.",
        False,
    ),
    (
        P23,
        "The motor score rose from 9 at visit 4 to 11 at visit 5, a change that did not reach "
        "the MCID for worsening.",
        True,
    ),
    (
        P23,
        "The ADL score rose from 8 at visit 3 to 14 at visit 4, a change that did not reach the "
        "MCID for worsening.",
        False,
    ),
    # negated direction words
    (P23, "The motor score did not fall between visit 3 and visit 4.", True),
    (P23, "The ADL score did not rise between visit 1 and visit 2.", False),
    # "did not change ..., remaining at"
    (P23, "The non-motor score did not change between visit 4 and visit 5, remaining at 11.", True),
    (P23, "The ADL score did not change between visit 4 and visit 5, remaining at 14.", False),
    # bounds over a whole series
    (P23, "Apathy was never rated above 0.", True),
    (P23, "Pain was never rated above 1.", False),
    (P23, "Hallucinations were rated 0 at every visit.", True),
    (P23, "Anxious mood was rated 1 at every visit.", False),
    (P23, "Daytime sleepiness was never rated below 2.", True),
    (P23, "Constipation was never rated below 1 and never above 1.", False),
    # a Summary Index carried to the second value of a pair
    (P23, "The PDQ-8 Summary Index was 15.62 at visit 2 and 25.0 at visit 3.", True),
    (P23, "The PDQ-8 Summary Index was 15.62 at visit 2 and 18.75 at visit 3.", False),
    # parts that each name their patient after them
    (
        P38,
        "Between visit 1 and visit 2 the ADL score was unchanged at 3 in patient 8 and fell from "
        "5 to 3 in patient 3.",
        True,
    ),
    (
        P38,
        "Between visit 1 and visit 2 the ADL score was unchanged at 3 in patient 8 and rose from "
        "5 to 3 in patient 3.",
        False,
    ),
]


@pytest.mark.parametrize(("query", "text", "ok"), CASES)
def test_true_passes_and_false_is_contradicted(engine, query, text, ok):
    rec = check_text_against_plan(engine, query, text, coverage_min=0.0)
    reasons = [r for s in rec["sentences"] for r in s["reasons"]]
    assert rec["passed"] is ok, reasons
    if not ok:  # contradicted by the facts, not left unread
        assert reasons and not any("cannot tell" in r for r in reasons), reasons


def test_mcid_reason_names_the_label(engine):
    rec = check_text_against_plan(
        engine,
        P23,
        "The motor score rose from 9 at visit 4 to 11 at visit 5, a worsening that exceeded the "
        "MCID.",
        coverage_min=0.0,
    )
    reasons = [r for s in rec["sentences"] for r in s["reasons"]]
    assert any("'stable' by its MCID" in r for r in reasons), reasons


def test_bound_reason_names_the_breaking_visit(engine):
    rec = check_text_against_plan(engine, P23, "Pain was never rated above 1.", coverage_min=0.0)
    reasons = [r for s in rec["sentences"] for r in s["reasons"]]
    assert any("4 at visit 3" in r for r in reasons), reasons
