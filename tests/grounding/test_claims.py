"""Claim-level grounding: a number is correct only for the context the text gives it."""

from __future__ import annotations

import pytest

from engine.grounding.claim_report import check_text, extract_claims
from engine.grounding.numbers import extract_numbers, paper_tokens
from engine.types import Plan

GOOD = (
    "Patient 5, visit 3 (2021-05-20): motor 14, +2 from visit 2, +5 from baseline (worsened). "
    "ADL 8 at visit 3, +2 from baseline."
)


def values(text, ledger, plan=(5,)):
    return [
        (c.text, c.status)
        for c in extract_claims(text, ledger, Plan(patients=plan))
        if c.role == "value"
    ]


def wrong(text, ledger, plan=(5, 8)):
    return [c for c in extract_claims(text, ledger, Plan(patients=plan)) if c.status == "wrong"]


def test_numbers_tokenise_dates_signs_and_instrument_names():
    toks = extract_numbers("PDQ-8 on 2021-05-20: motor 14, -2.5 per visit, 28.13%, in March 2021.")
    assert [(t.text, t.kind) for t in toks] == [
        ("2021-05-20", "date"),
        ("14", "number"),
        ("-2.5", "number"),
        ("28.13%", "percent"),
        ("March 2021", "date"),
    ]
    assert toks[2].signed and toks[2].value == -2.5
    assert paper_tokens("motor 14.0, +2, on 2021-05-20") == ["14", "2", "2021", "5", "20"]


def test_correct_text_is_fully_supported(ledger):
    rep = check_text(GOOD, ledger, Plan(patients=(5,)))
    assert all(c.status == "correct" for c in rep.claims), [
        c.to_dict() for c in rep.claims if not c.supported
    ]
    assert rep.claim_accuracy == 1.0
    assert rep.temporal_fidelity == 1.0
    kinds = [(c.text, c.kind, c.visit, c.ref_visit) for c in rep.claims if c.role == "value"]
    assert ("+2", "pair", 3, 2) in kinds and ("+5", "pair", 3, 1) in kinds


def test_right_number_on_the_wrong_visit_is_caught(ledger):
    # 12 is patient 5's motor score at visit 2, not visit 3
    bad = wrong("Patient 5, visit 3: motor 12.", ledger)
    assert [c.text for c in bad] == ["12"]
    assert "motor" in bad[0].reason and any("14" in e for e in bad[0].expected)
    assert wrong("Patient 5's motor score was 12 at visit 3.", ledger)[0].text == "12"


def test_right_number_in_the_wrong_domain_is_caught(ledger):
    # 8 is patient 5's ADL score at visit 3; the text calls it motor
    assert [c.text for c in wrong("Patient 5, visit 3: motor 8.", ledger)] == ["8"]
    assert [c.text for c in wrong("At visit 3 patient 5 scored 8 on Part III.", ledger)] == ["8"]


def test_another_patients_value_is_caught(ledger):
    # 17 is patient 8's motor score at visit 3
    bad = wrong("Patient 5, visit 3: motor 17.", ledger)
    assert [c.text for c in bad] == ["17"]
    assert not wrong("Patient 8, visit 3: motor 17.", ledger)


def test_wrong_direction_word_is_caught(ledger):
    # motor went from 9 to 14: an increase, i.e. a worsening
    bad = wrong("Patient 5's motor score improved by 5 points from baseline to visit 3.", ledger)
    assert [c.text for c in bad] == ["5"] and "improved" in bad[0].reason
    assert not wrong(
        "Patient 5's motor score worsened by 5 points from baseline to visit 3.", ledger
    )
    assert wrong("Patient 5, visit 3: motor +5 from baseline (improved).", ledger)
    assert not wrong("Patient 8, visit 4: motor -5 from baseline (improved).", ledger)


def test_made_up_item_is_caught(ledger):
    bad = wrong("Patient 5, visit 3: dyskinesia 3.", ledger)
    assert len(bad) == 1 and "dyskinesia" in bad[0].reason.lower()
    # a real item of the profiles that the facts do not contain
    bad = wrong("Patient 5, visit 3: hallucinations 3.", ledger)
    assert len(bad) == 1 and "no item" in bad[0].reason
    assert not wrong("Patient 5, visit 3: gait 3.", ledger)
    assert wrong("Patient 5, visit 2: gait 3.", ledger)


def test_out_of_plan_patient_and_unknown_visit(ledger):
    bad = wrong("Patient 8 had motor 17 at visit 3.", ledger, plan=(5,))
    assert bad[0].role == "patient" and "outside the plan" in bad[0].reason
    assert wrong("Patient 5, visit 7: motor 14.", ledger)[0].role == "visit"


def test_date_must_belong_to_the_visit(ledger):
    assert not wrong("Patient 5, visit 3 (2021-05-20): motor 14.", ledger)
    bad = wrong("Patient 5, visit 3 (2021-03-15): motor 14.", ledger)
    assert [c.role for c in bad] == ["date"]


def test_slope_rounding_tolerance_and_thresholds(ledger):
    ok = (
        "Patient 5's motor slope was 1.4 points per visit (2.65 per year), against an MCID of 4.63."
    )
    assert not wrong(ok, ledger)
    assert wrong("Patient 5's motor slope was 1.6 points per visit.", ledger)
    assert not wrong("Improvement needs at least the MCID of 3.25 on the motor scale.", ledger)


def test_scoping_patient_carries_in_paragraph_visit_and_domain_in_sentence(ledger):
    text = "Patient 8 was assessed four times.\n\nPatient 5 is followed here. At visit 2, motor was 12."
    claims = [c for c in extract_claims(text, ledger, Plan(patients=(5, 8))) if c.role == "value"]
    assert [(c.text, c.patient, c.visit, c.domain) for c in claims] == [("12", 5, 2, "motor")]
    # the domain does not carry into the next sentence: 12 has no domain there and no visit
    rep = check_text("Motor rose over time. The value 12 appears.", ledger)
    assert [c.context for c in rep.claims] == [False]
    # parentheses scope their cues
    claims = extract_claims("Patient 5, visit 3: motor 14 (ADL 8), +5 from baseline.", ledger, (5,))
    assert [(c.text, c.domain, c.status) for c in claims if c.role == "value"] == [
        ("14", "motor", "correct"),
        ("8", "adl", "correct"),
        ("+5", "motor", "correct"),
    ]


def test_numbers_without_context_fall_back_to_the_lenient_check(ledger):
    rep = check_text("Overall 14 and 99 were noted.", ledger)
    assert [(c.text, c.context, c.status) for c in rep.claims] == [
        ("14", False, "lenient_supported"),
        ("99", False, "lenient_unsupported"),
    ]
    assert rep.claim_accuracy == 1.0  # no claims with context


@pytest.mark.parametrize(
    "text",
    [
        "Patient 5 motor: 14 at visit 3, 12 at visit 2, 9 at visit 1.",
        "Patient 5, visit 3: motor 14. Patient 5, visit 2: motor 12.",
    ],
)
def test_visit_order_violations(ledger, text):
    rep = check_text(text, ledger, (5,))
    assert rep.order_violations and rep.temporal_fidelity == 0.0


def test_visits_in_order_within_each_domain_are_fine(ledger):
    text = (
        "Patient 5's motor score went from 9 at visit 1 to 14 at visit 3, while ADL went from "
        "6 at visit 1 to 8 at visit 3."
    )
    rep = check_text(text, ledger, (5,))
    assert not rep.order_violations and rep.claim_accuracy == 1.0
