"""Sentence verdicts on the hand-written ledger of conftest.py (patients 5 and 8, visits 1-4):
each kind of word assertion, true and false, and the verdict rules."""

from __future__ import annotations

import pytest

from engine.grounding.statements import check_statements


def verdicts(text, ledger, patients=(5, 8)):
    return [(s.status, s.reasons) for s in check_statements(text, ledger, patients).sentences]


@pytest.mark.parametrize(
    ("sentence", "ok"),
    [
        ("Patient 5's motor score worsened from visit 1 to visit 4.", True),  # 9 -> 13
        ("Patient 5's motor score improved from visit 1 to visit 4.", False),
        ("Patient 8's motor score improved from baseline to visit 4.", True),  # 20 -> 15
        ("Patient 8's ADL was stable from visit 3 to visit 4.", True),  # 11 -> 11
        ("Patient 8's ADL was unchanged between visit 1 and visit 2.", True),  # 10 -> 10
        ("Patient 5's ADL was unchanged between visit 1 and visit 2.", False),  # 6 -> 7
        ("Patient 5's motor score peaked at visit 3.", True),  # 14
        ("Patient 5's motor score peaked at visit 2.", False),
        ("Patient 5's motor score did not worsen from visit 3 to visit 4.", True),  # 14 -> 13
    ],
)
def test_direction_words(ledger, sentence, ok):
    ((status, reasons),) = verdicts(sentence, ledger)
    assert (status == "supported") is ok, reasons


@pytest.mark.parametrize(
    ("sentence", "ok"),
    [
        ("Patient 5's gait was moderate at visit 3.", True),  # NP3GAIT 3
        ("Patient 5's gait was slight at visit 3.", False),
        ("Patient 8's gait was mild at visit 2.", True),  # 2
        ("Patient 8's gait was severe at visit 2.", False),
    ],
)
def test_item_severity_words(ledger, sentence, ok):
    ((status, reasons),) = verdicts(sentence, ledger)
    assert (status == "supported") is ok, reasons


def test_presence_and_absence(ledger):
    ((status, reasons),) = verdicts("Patient 5 had no gait problems at visit 1.", ledger)
    assert status == "unsupported" and "rated 1" in reasons[0]
    ((status, _),) = verdicts("Patient 5 showed gait problems at visit 1.", ledger)
    assert status == "supported"
    ((status, reasons),) = verdicts("Patient 5 had dyskinesia at visit 2.", ledger)
    assert status == "unsupported" and "no item" in reasons[0]


def test_comparatives_and_superlatives(ledger):
    ok = "Patient 8 had a higher motor score than patient 5 at visit 1."  # 20 vs 9
    bad = "Patient 5 had a higher motor score than patient 8 at visit 1."
    assert verdicts(ok, ledger)[0][0] == "supported"
    assert verdicts(bad, ledger)[0][0] == "unsupported"
    assert verdicts("Patient 8 has the highest motor score.", ledger)[0][0] == "supported"
    assert verdicts("Patient 5 has the highest motor score.", ledger)[0][0] == "unsupported"


def test_numbers_counts_dates_and_ids(ledger):
    assert verdicts("Patient 5 attended five visits.", ledger)[0][0] == "unsupported"
    assert (
        verdicts("Patient 5's motor score rose by four points from visit 1 to visit 4.", ledger)[0][
            0
        ]
        == "supported"
    )
    assert (
        verdicts("Patient 5's motor score rose by five points from visit 1 to visit 4.", ledger)[0][
            0
        ]
        == "unsupported"
    )
    assert verdicts("Patient 9 had a motor score of 9.", ledger)[0][0] == "unsupported"
    assert verdicts("Patient 5 was followed over 7 months.", ledger)[0][0] == "supported"  # Jan-Jul
    assert verdicts("Patient 5 was followed over 2 years.", ledger)[0][0] == "unsupported"


def test_unsupportable_content_and_no_assertion(ledger):
    out = verdicts(
        "Patient 5's motor score was 13 at visit 4. This rise was due to a missed levodopa dose. "
        "Things look fine overall.",
        ledger,
    )
    assert [s for s, _ in out] == ["supported", "unsupported", "unsupported"]
    assert any("medication" in r or "cause" in r for r in out[1][1]) or out[1][1]
    assert "states nothing" in out[2][1][0]


def test_neutral_sentence_and_facts_matched(ledger):
    rep = check_statements("Summary:\nPatient 5's motor score was 13 at visit 4.", ledger, (5,))
    assert [s.status for s in rep.sentences] == ["neutral", "supported"]
    matched = [v for f in rep.sentences[1].facts for v in f.get("values", [])]
    assert {"kind": "score", "value": 13, "patient": 5, "visit": 4}.items() <= matched[0].items()
    assert rep.passed and rep.unsupported_rate == 0.0


def test_fluctuating_is_the_engine_definition_in_the_checker():
    """The checker reads "fluctuating" as engine.clinical.course.is_fluctuating does: a swing
    both ways of at least max(MCID, swing floor); 30 -> 31 -> 30 is not fluctuating."""
    from engine.clinical.ledger import SWING_MIN
    from engine.grounding.statements import check_statements
    from engine.types import FactValue

    def ledger(values):
        out = [FactValue("threshold", 10.0, item=SWING_MIN)]
        out += [FactValue("threshold", 4.63, domain="motor", item="mcid_worsening")]
        out += [FactValue("threshold", -3.25, domain="motor", item="mcid_improvement")]
        for v, x in enumerate(values, 1):
            out.append(FactValue("visit", v, 5, v, date=f"2021-0{v}-01"))
            out.append(FactValue("score", x, 5, v, "motor", label=f"motor score, visit {v}"))
        return out

    small = "Patient 5's motor score fluctuated between visit 1 and visit 3."
    rep = check_statements(small, ledger([30, 31, 30]), [5])
    assert not rep.passed and "no swing both ways" in " ".join(rep.sentences[0].reasons)
    rep = check_statements(small, ledger([20, 32, 18]), [5])
    assert rep.passed, [(s.text, s.reasons) for s in rep.sentences]


@pytest.mark.parametrize(
    ("sentence", "ok"),
    [
        ("Patient 5's motor score went from 9 at visit 1 to 13 at visit 4.", True),
        # a negated change of no direction denies the numbers it holds: never supported by them
        ("Patient 5's motor score did not go from 9 at visit 1 to 13 at visit 4.", False),
        ("Patient 5's motor score never changed from 9 at visit 1.", False),
        ("Patient 5's motor score hasn't moved from 9 at visit 1 to 13 at visit 4.", False),
        # negated direction words and thresholds keep their own reading
        ("Patient 5's motor score did not worsen from visit 3 to visit 4.", True),  # 14 -> 13
    ],
)
def test_negated_changes(ledger, sentence, ok):
    ((status, reasons),) = verdicts(sentence, ledger)
    assert (status == "supported") is ok, reasons
    if not ok:
        assert any("negated change" in r or "denies a change" in r for r in reasons), reasons


def test_another_instruments_item_name_reads_the_item_the_facts_hold(ledger):
    """The MDS-UPDRS name "cognitive impairment" (NP1COG) names the MA-RAG UPDRS item Cognition
    (COGNITION) when the facts hold that one; the value is still checked."""
    from engine.types import FactValue

    facts = [*ledger, FactValue("item", 3, 5, 2, "nonmotor", "COGNITION", label="item COGNITION")]
    ((status, reasons),) = verdicts("Patient 5 had cognitive impairment rated 3 at visit 2.", facts)
    assert status == "supported", reasons
    ((status, reasons),) = verdicts("Patient 5 had cognitive impairment rated 1 at visit 2.", facts)
    assert status == "unsupported" and "does not match" in " ".join(reasons)


@pytest.mark.parametrize(
    ("sentence", "ok"),
    [
        ("Patient 5's PDQ-8 total was 9 at visit 1.", True),  # the PDQ-8 score, not the UPDRS
        ("Patient 5's PDQ-8 total score was 8 at visit 1.", False),
    ],
)
def test_pdq8_total_is_the_pdq8_score(ledger, sentence, ok):
    from engine.types import FactValue

    facts = [*ledger, FactValue("score", 9, 5, 1, "qol", label="qol score, visit 1")]
    ((status, reasons),) = verdicts(sentence, facts)
    assert (status == "supported") is ok, reasons


@pytest.mark.parametrize(
    "sentence",
    [
        "Der motorische Wert von Patient 5 stieg von 9 bei Besuch 1 auf 13 bei Besuch 4.",
        "El puntaje motor del paciente 5 subió de 9 en la visita 1 a 13 en la visita 4.",
        "Le score moteur du patient 5 est passé de 9 à la visite 1 à 13 à la visite 4.",
    ],
)
def test_a_sentence_in_another_language_is_unverifiable(ledger, sentence):
    ((status, reasons),) = verdicts(sentence, ledger)
    assert status == "unsupported"
    assert any("another language" in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("sentence", "ok"),
    [
        # ADL: patient 5 6 -> 9, patient 8 10 -> 11 (both higher = worse)
        ("Both patients worsened in ADL: patient 5 from 6 to 9 and patient 8 from 10 to 11.", True),
        (
            "Both patients improved in ADL: patient 5 from 6 to 9 and patient 8 from 10 to 11.",
            False,
        ),
    ],
)
def test_a_claim_about_several_patients_is_read_for_each(ledger, sentence, ok):
    ((status, reasons),) = verdicts(sentence, ledger)
    assert (status == "supported") is ok, reasons
    if not ok:
        assert len([r for r in reasons if "improved" in r]) == 2, reasons  # one per patient


@pytest.mark.parametrize(
    ("sentence", "ok"),
    [
        (
            "Patient 5's motor score increased by 4 points, from 9 at visit 1 to 13 at visit 4.",
            True,
        ),
        # the stated size is not the distance between the stated ends
        (
            "Patient 5's motor score increased by 5 points, from 9 at visit 1 to 13 at visit 4.",
            False,
        ),
    ],
)
def test_a_change_size_is_checked_against_its_ends(ledger, sentence, ok):
    ((status, reasons),) = verdicts(sentence, ledger)
    assert (status == "supported") is ok, reasons
    if not ok:
        assert any("does not take 9 to 13" in r for r in reasons), reasons
