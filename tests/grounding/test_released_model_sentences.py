"""Sentences the bundled model wrote in the full local evaluation (docs/eval/local-full, mr-cp-01
and mr-ss-09) that the repair kept and released before these checks existed. Each must now be
unsupported, for the stated reason; the true sentence beside it still passes."""

from __future__ import annotations

import pytest

from engine.check_command import check_against_result
from engine.config import Config
from engine.eval.harness import default_marag_dir, open_dataset
from engine.pipeline import Engine
from engine.types import Plan


@pytest.fixture(scope="module")
def engine():
    if not default_marag_dir().exists():
        pytest.skip(f"MA-RAG study data not found at {default_marag_dir()}")
    return Engine(Config.load({}, env={}), open_dataset("marag").kb, None)


def _verdicts(engine, plan, text):
    rec = check_against_result(engine.run(plan), text, engine.contexts)
    return [(s["status"], " ".join(s["reasons"])) for s in rec["sentences"]]


def test_a_decimal_in_a_patient_list_and_comparisons_with_other_people(engine):
    text = (
        "Patients 3, 8, and 3.25 demonstrated improvements over those who met the criteria "
        "but still did not meet the criteria for PDQ-8."
    )
    ((status, why),) = _verdicts(engine, Plan((3, 8), "comparison"), text)
    assert status == "unsupported"
    assert "'3.25' in a list of patient ids is not a patient id" in why
    assert "'those who'" in why and "criteria" in why


def test_a_change_word_over_one_assessment(engine):
    plan = Plan((1,), "single_session", visit_filter="baseline")
    false = (
        "Patient 1 had a baseline non-motor score of 13, which indicated no significant "
        "changes prior to the evaluation."
    )
    ((status, why),) = _verdicts(engine, plan, false)
    assert status == "unsupported" and "a change needs two assessments" in why
    ((status, why),) = _verdicts(engine, plan, "Patient 1 had a baseline non-motor score of 13.")
    assert status == "supported", why
