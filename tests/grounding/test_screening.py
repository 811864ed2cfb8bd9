"""Output screening: prescriptive advice, unsupported diagnoses, out-of-plan patients, the note."""

from __future__ import annotations

import pytest

from engine.grounding.screening import DECISION_SUPPORT_NOTE, screen, screen_and_annotate, with_note
from engine.types import Plan

PLAN = Plan(patients=(5,))


@pytest.mark.parametrize(
    "text",
    [
        "Patient 5 should start levodopa.",
        "Consider increasing the dopamine agonist dose.",
        "Levodopa should be stopped before the next visit.",
        "The dose of rasagiline needs to be increased.",
        "Take carbidopa/levodopa 100 mg three times a day.",
        "Patient 5 is a candidate for deep brain stimulation.",
    ],
)
def test_prescriptive_advice_is_flagged(text):
    assert [f["rule"] for f in screen(text, PLAN, [5])] == ["prescriptive_treatment"]


@pytest.mark.parametrize(
    "text",
    [
        "These scores are consistent with Parkinson's disease dementia.",
        "Patient 5 has multiple system atrophy.",
        "Patient 5 was diagnosed with major depressive disorder.",
    ],
)
def test_unsupported_diagnosis_is_flagged(text):
    assert "unsupported_diagnosis" in [f["rule"] for f in screen(text, PLAN, [5])]


def test_out_of_plan_patient_is_flagged():
    found = screen("Patient 5 improved; patient 9 worsened.", PLAN, [5, 9])
    assert [(f["rule"], "9" in f["message"]) for f in found] == [("out_of_plan_patient", True)]
    # an empty plan means every patient: only unknown ids are flagged
    assert screen("Patient 9 worsened.", Plan(patients=()), [5, 9]) == []
    assert (
        screen("Patient 77 worsened.", Plan(patients=()), [5, 9])[0]["rule"]
        == "out_of_plan_patient"
    )


def test_score_language_is_not_advice():
    text = (
        "Patient 5's motor score increased by 5 points from baseline (worsened); the treatment "
        "context is not recorded. Cognitive impairment item 2 (mild) at visit 3."
    )
    assert screen(text, PLAN, [5]) == []


def test_note_is_added_once_and_flags_are_visible():
    assert with_note(with_note("x")).count(DECISION_SUPPORT_NOTE) == 1
    text, found = screen_and_annotate("Patient 5 should start levodopa.", PLAN, [5])
    assert found and DECISION_SUPPORT_NOTE in text and "Screening flags" in text
