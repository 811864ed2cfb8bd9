"""The guard on scripted fake-LLM outputs: planted errors are caught, critiqued, regenerated at most
`max_rounds` times, and replaced by the facts text when the model keeps getting them wrong."""

from __future__ import annotations

from fakes import FakeLLM

from engine.grounding.guard import check_numbers, guard_text
from engine.llm.base import LLMRequest

FACTS_TEXT = (
    "Patient 5, visit 2 (2021-03-15): motor 12, +3 from baseline (worsened). "
    "Patient 5, visit 3 (2021-05-20): motor 14, +2 from visit 2, +5 from baseline (worsened)."
)
GOOD = "Patient 5's motor score rose from 9 at baseline to 14 at visit 3, a worsening of 5 points."
WRONG_NUMBER = "Patient 5's motor score rose from 9 at baseline to 15 at visit 3."
WRONG_ORDER = "Patient 5, visit 3: motor 14. Patient 5, visit 2: motor 12."
OTHER_PATIENT = "Patient 5, visit 3: motor 14. Patient 8, visit 3: motor 17."


def run(llm: FakeLLM, first: str, ledger, max_rounds=2, plan=(5,)):
    def regenerate(critique: str) -> str:
        return llm.generate([LLMRequest(system="s", user="facts\n" + critique, agent="final")])[0]

    return guard_text(
        first, ledger, regenerate, lambda: FACTS_TEXT, max_rounds=max_rounds, plan_patients=plan
    )


def test_facts_text_passes(ledger):
    rec = check_numbers(FACTS_TEXT, ledger, (5,))
    assert rec["unsupported"] == [] and rec["claim_accuracy"] == 1.0
    assert rec["hallucination_rate"] == 0.0 and rec["fact_precision"] == 1.0


def test_clean_text_passes_without_llm_calls(ledger):
    llm = FakeLLM(script=[])
    res = run(llm, GOOD, ledger)
    assert res.text == GOOD and res.record["passed"] and res.record["rounds"] == 0
    assert not res.record["fallback_used"] and llm.calls == []


def test_planted_wrong_number_is_critiqued_and_fixed(ledger):
    llm = FakeLLM(script=[GOOD])
    res = run(llm, WRONG_NUMBER, ledger)
    assert res.text == GOOD and res.record["rounds"] == 1 and not res.record["fallback_used"]
    critique = llm.calls[0].user
    assert "'15'" in critique and "14" in critique  # names the number and the fact
    assert res.record["history"][0]["unsupported"] == ["15"]


def test_loop_stops_after_its_bound_and_falls_back(ledger):
    llm = FakeLLM(script=lambda r: WRONG_NUMBER)
    res = run(llm, WRONG_NUMBER, ledger, max_rounds=2)
    assert len(llm.calls) == 2 and res.record["rounds"] == 2
    assert res.record["fallback_used"] and res.text == FACTS_TEXT and res.record["passed"]
    assert res.record["rejected"]["unsupported"][0]["text"] == "15"
    assert res.record["hallucination_rate"] == 0.0 and res.record["claim_accuracy"] == 1.0
    res0 = run(FakeLLM(script=lambda r: GOOD), WRONG_NUMBER, ledger, max_rounds=0)
    assert res0.record["fallback_used"] and res0.record["rounds"] == 0


def test_wrong_visit_order_is_caught(ledger):
    rec = check_numbers(WRONG_ORDER, ledger, (5,))
    assert any(u["context"] == "visit order" for u in rec["unsupported"])
    assert rec["temporal_fidelity"] == 0.0
    res = run(FakeLLM(script=lambda r: WRONG_ORDER), WRONG_ORDER, ledger)
    assert res.record["fallback_used"]


def test_out_of_plan_patient_is_caught(ledger):
    rec = check_numbers(OTHER_PATIENT, ledger, (5,))
    reasons = [u["reason"] for u in rec["unsupported"]]
    assert any("outside the plan" in r for r in reasons)
    llm = FakeLLM(script=[GOOD])
    res = run(llm, OTHER_PATIENT, ledger)
    assert res.text == GOOD and "'8'" in llm.calls[0].user


def test_no_regenerate_means_direct_fallback(ledger):
    res = guard_text(WRONG_NUMBER, ledger, None, lambda: FACTS_TEXT, plan_patients=(5,))
    assert res.record["fallback_used"] and res.record["rounds"] == 0 and res.text == FACTS_TEXT


def test_empty_model_text_is_not_released() -> None:
    from engine.grounding.guard import guard_text
    from engine.types import FactValue

    ledger = [FactValue("score", 14, patient=1, visit=1, domain="motor")]
    res = guard_text(
        "   ", ledger, None, lambda: "Patient 1, visit 1: motor 14.", plan_patients=[1]
    )
    assert res.record["fallback_used"] is True
    assert res.record["rejected"]["unsupported"][0]["reason"] == "the model returned an empty text"
    assert res.text == "Patient 1, visit 1: motor 14."
