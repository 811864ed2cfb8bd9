"""'No red flag is current' (the final agent's given facts, the facts text) is verified against the
run's current red flags (a flag at the patient's latest visit), not accepted as a safe form."""

from __future__ import annotations

from engine.grounding.verify import verify_text
from engine.types import FactValue

LEDGER = [
    FactValue("score", s, p, v, "motor", label=f"motor score, visit {v}")
    for p, series in {5: {1: 9, 2: 12}, 8: {1: 20, 2: 18}}.items()
    for v, s in series.items()
]


def flags_at(patient: int, visit: int) -> dict:
    row = {"patient": patient, "visit": visit, "value": 3, "item": "NP1HALL", "domain": "nonmotor"}
    return {"red_flags": [row], "incongruence": []}


def status(text: str, flags: dict, patients=(5,)) -> list[str]:
    rec = verify_text(text, LEDGER, patients, flags=flags)
    return [s["status"] for s in rec["sentences"]]


def test_holds_without_a_current_flag():
    assert status("No red flag is current.", {"red_flags": []}) == ["neutral"]
    # a flag of an earlier visit is history, not current
    assert status("No red flag is current.", flags_at(5, 1)) == ["neutral"]


def test_fails_with_a_current_flag_of_that_patient():
    rec = verify_text("No red flag is current.", LEDGER, (5,), flags=flags_at(5, 2))
    (s,) = rec["sentences"]
    assert s["status"] == "unsupported" and "NP1HALL" in s["reasons"][0]
    assert not rec["passed"]


def test_scoped_to_the_patient_named_before_it():
    text = "Patient 5.\n\nNo red flag is current.\n\nPatient 8.\n\nNo red flag is current."
    assert status(text, flags_at(8, 2), (5, 8)) == ["neutral", "neutral", "neutral", "unsupported"]
