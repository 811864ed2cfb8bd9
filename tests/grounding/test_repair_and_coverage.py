"""Repair before fallback and key-fact coverage, on the hand-written
ledger of conftest.py."""

from __future__ import annotations

from engine.grounding.coverage import coverage, key_facts
from engine.grounding.guard import StatementSpec, guard_text
from engine.grounding.statements import check_statements

GOOD_MOTOR_5 = "Patient 5's motor score was 9 at visit 1 and 13 at visit 4, +4 from baseline."
FACTS_TEXT = (
    "Patient 5, visit 1 (2021-01-10): motor 9. Patient 5, visit 4 (2021-07-30): motor 13, "
    "+4 from baseline.\n\nPatient 8, visit 1 (2021-01-10): motor 20. Patient 8, visit 4 "
    "(2021-07-30): motor 15, -5 from baseline."
)


def test_domain_key_facts_and_coverage(ledger):
    kf = key_facts("motor", ledger)
    assert {(k.kind, k.patient) for k in kf} == {
        (kind, p) for kind in ("baseline", "latest", "label") for p in (5, 8)
    }
    rep = check_statements(GOOD_MOTOR_5, ledger, (5, 8))
    cov = coverage(rep, kf, (5, 8), single_domain="motor")
    assert cov.value == 0.5 and {k.patient for k in cov.missing} == {8}
    # a text that says nothing true states no key fact
    rep = check_statements("Motor function is a key domain.", ledger, (5, 8))
    assert coverage(rep, key_facts("motor", ledger), (5, 8), single_domain="motor").value == 0.0


def test_unsupported_sentence_is_repaired_not_regenerated(ledger):
    draft = (
        FACTS_TEXT.split("\n\n")[0]
        + " Patient 5 was started on levodopa.\n\n"
        + FACTS_TEXT.split("\n\n")[1]
    )
    calls = []
    res = guard_text(
        draft,
        ledger,
        lambda c: calls.append(c) or "never",
        lambda: FACTS_TEXT,
        plan_patients=(5, 8),
        statements=StatementSpec(agent="motor"),
    )
    rec = res.record
    assert rec["released"] == "repaired" and calls == [] and not rec["fallback_used"]
    assert "levodopa" not in res.text and "motor 13" in res.text
    (removed,) = rec["repairs"][0]["removed"]
    assert removed["text"] == "Patient 5 was started on levodopa."
    assert any("medication" in r for r in removed["reasons"])


def test_repair_that_loses_coverage_goes_to_regeneration_then_facts(ledger):
    draft = "Patient 5's motor score improved from visit 1 to visit 4. Motor matters."
    crit = []
    res = guard_text(
        draft,
        ledger,
        lambda c: crit.append(c) or "Patient 5 is doing fine.",
        lambda: FACTS_TEXT,
        max_rounds=1,
        plan_patients=(5, 8),
        statements=StatementSpec(agent="motor"),
    )
    assert res.record["released"] == "replaced" and res.text == FACTS_TEXT
    assert "'improved'" in crit[0] and "State these key facts" in crit[0]
    rej = res.record["rejected"]
    assert rej["unsupported_sentences"] and rej["coverage"]["value"] < 1


def test_text_as_written(ledger):
    res = guard_text(
        FACTS_TEXT,
        ledger,
        None,
        lambda: "unused",
        plan_patients=(5, 8),
        statements=StatementSpec(agent="motor"),
    )
    assert res.record["released"] == "as_written" and res.record["coverage"] == 1.0
    assert res.record["unsupported_sentences"] == 0
